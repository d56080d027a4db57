"""The Python environment: what is installed where, and its verification against RECORD.

Discovery (``target``, ``default``, ``dists``, ``editable``) reads layouts and metadata, no file
content; ``verify.verify`` checks every installed file (``records``, ``files``, ``unowned``,
``sourcetree``), with package managers' own records (``managers/``) and uv's cache (``uv/``) as
further authorities. ``fast/`` makes it fast without changing a verdict.
"""

from .dists import find_distributions
from .target import current_target, resolve_target

__all__ = ["current_target", "find_distributions", "resolve_target"]
