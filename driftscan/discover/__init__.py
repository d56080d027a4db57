"""Discover what to audit: the environment's layout and its installed distributions."""

from .dists import find_distributions
from .target import current_target, resolve_target

__all__ = ["current_target", "find_distributions", "resolve_target"]
