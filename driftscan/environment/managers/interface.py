"""What a package manager module provides: the seam between the RECORD pass and a manager's
own records (conda's ``conda-meta``, dpkg's database).

A manager module (``conda.py``, ``dpkg.py``) is imported only when its registration in
``registry.py`` says the target has its records, so a venv's audit never pays for one. It defines:

- ``read(root, target, containment) -> Owned``: its records at ``root`` (the prefix or the
  site-packages the registration named) as distributions with hashed rows, the dist-infos they
  replace, and what could not be read. Never raises for the tree's sake.
- ``installer(dists) -> str``: the tool a reinstall of ``dists`` goes through (shown in reports).
- ``reinstall_command(dists, prefix) -> str``: that reinstall as a shell command, every word the
  records gave quoted.
- optionally ``settle(checks, owned) -> Settled``: what the records say beyond file hashes
  (conda's files rewritten at link time, softlinks, directories).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ...core.values import Distribution, FileCheck, Problem, Target, Unverifiable
from ...fs.containment import Containment
from ..dists import MetadataDir


@dataclass
class Owned:
    """What one manager's records say at one root of a target."""

    metadirs: list[MetadataDir] = field(default_factory=list)  # one per package record
    replaced: set[str] = field(default_factory=set)  # dist-info dirs whose files a package record owns
    problems: list[Problem] = field(default_factory=list)
    unverifiable: list[Unverifiable] = field(default_factory=list)
    evidence: dict[str, str] = field(default_factory=dict)  # metadata_dir -> how its hashes are recorded
    records: object = None  # the reader's own result, for ``settle``


@dataclass(frozen=True)
class Settled:
    """``settle``'s answer: the checks it judged itself (replacing the RECORD pass's verdict on
    ``judged``), and what it could not read."""

    checks: list[FileCheck]
    judged: set[str]
    problems: list[Problem] = field(default_factory=list)


class ManagerModule(Protocol):
    """The functions a manager module defines (``settle`` is optional)."""

    def read(self, root: str, target: Target, containment: Containment) -> Owned: ...

    def installer(self, dists: list[Distribution]) -> str: ...

    def reinstall_command(self, dists: list[Distribution], prefix: str | None) -> str: ...
