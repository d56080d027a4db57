"""Names, versions and tags: which wheel file is a distribution's, by its file name alone."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ..fs.reader import read_regular
from ..core.values import Distribution

WHEEL_FILE_LIMIT = 64 << 10  # an installed dist-info's WHEEL file: a few hundred bytes

_RUNS = re.compile(r"[-_.]+")
# PEP 440, as the spec's appendix writes it (case-insensitive), to compare two spellings of one version
_PEP440 = re.compile(
    r"v?(?:(?P<epoch>[0-9]+)!)?(?P<release>[0-9]+(?:\.[0-9]+)*)"
    r"(?:[-_.]?(?P<pre_l>a|b|c|rc|alpha|beta|pre|preview)[-_.]?(?P<pre_n>[0-9]+)?)?"
    r"(?:-(?P<post_n1>[0-9]+)|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>[0-9]+)?)?"
    r"(?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>[0-9]+)?)?"
    r"(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?", re.IGNORECASE)
_PRE = {"a": "a", "alpha": "a", "b": "b", "beta": "b", "c": "rc", "rc": "rc", "pre": "rc", "preview": "rc"}
_TAG_PART = re.compile(r"[A-Za-z0-9_]{1,100}")
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,200}[A-Za-z0-9])?")
_BUILD = re.compile(r"[0-9][A-Za-z0-9_]*")


def normalize_name(name: str) -> str:
    """PEP 503: runs of ``-_.`` become one ``-``, lower case (wheel file names spell it with ``_``)."""
    return _RUNS.sub("-", name).lower()


def canonical_version(version: str) -> str:
    """One spelling per PEP 440 version ("1.0" and "1.0.0", "1.0RC1" and "1.0rc1" agree); a
    version that is not PEP 440 is compared as it is written, lower case."""
    match = _PEP440.fullmatch(version.strip())
    if match is None:
        return version.strip().lower()
    release = [int(part) for part in match["release"].split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    text = (f"{int(match['epoch'])}!" if match["epoch"] and int(match["epoch"]) else "") + ".".join(map(str, release))
    if match["pre_l"]:
        text += _PRE[match["pre_l"].lower()] + str(int(match["pre_n"] or 0))
    if match["post_n1"] or match["post_l"]:
        text += ".post" + str(int(match["post_n1"] or match["post_n2"] or 0))
    if match["dev_l"]:
        text += ".dev" + str(int(match["dev_n"] or 0))
    if match["local"]:
        text += "+" + _RUNS.sub(".", match["local"].lower())
    return text


def is_version(version: str) -> bool:
    """``version`` is a PEP 440 version (any of its spellings)."""
    return _PEP440.fullmatch(version.strip()) is not None


def is_name(name: str) -> bool:
    """``name`` is a valid project name (PEP 508: letters, digits and ``-_.`` inside)."""
    return _NAME.fullmatch(name) is not None


def same_release(dist: Distribution, name: str, version: str) -> bool:
    return normalize_name(name) == normalize_name(dist.name) and \
        canonical_version(version) == canonical_version(dist.version)


@dataclass(frozen=True)
class WheelName:
    name: str
    version: str
    build: str | None
    tags: frozenset[str]  # the expanded tag set: "py2.py3-none-any" → {"py2-none-any", "py3-none-any"}


def expand_tags(tag: str) -> frozenset[str]:
    """A compressed tag set (``py2.py3-none-any``) as its tags, lower case; empty if malformed."""
    parts = tag.strip().lower().split("-")
    if len(parts) != 3:
        return frozenset()
    pieces = [part.split(".") for part in parts]
    if any(not _TAG_PART.fullmatch(p) for group in pieces for p in group):
        return frozenset()
    return frozenset(f"{a}-{b}-{c}" for a in pieces[0] for b in pieces[1] for c in pieces[2])


def parse_wheel_filename(filename: str) -> WheelName | None:
    """``{name}-{ver}(-{build})?-{py}-{abi}-{plat}.whl``; None for any other name."""
    if not filename.endswith(".whl"):
        return None
    parts = filename[:-len(".whl")].split("-")
    if len(parts) not in (5, 6) or not all(parts):
        return None
    build = parts[2] if len(parts) == 6 else None
    if build is not None and not _BUILD.fullmatch(build):
        return None
    tags = expand_tags("-".join(parts[-3:]))
    if not tags:
        return None
    return WheelName(parts[0], parts[1], build, tags)


def installed_tags(dist: Distribution) -> frozenset[str] | None:
    """The ``Tag:`` lines of the installed dist-info's WHEEL file, expanded; None when the file
    cannot be read or names no tag (then a wheel is matched on name and version alone)."""
    return wheel_file_tags(dist.metadata_dir)


def wheel_file_tags(dist_info: str, root: str | None = None) -> frozenset[str] | None:
    """The expanded ``Tag:`` lines of the WHEEL file in the dist-info directory ``dist_info`` (an
    installed one, or an unpacked wheel's; ``root``: the tree it must stay inside); None when
    the file cannot be read or names no tag."""
    try:
        text = read_regular(os.path.join(dist_info, "WHEEL"), WHEEL_FILE_LIMIT, what="WHEEL",
                            follow=False, root=root).decode("utf-8", "replace")
    except OSError:
        return None
    tags: set[str] = set()
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == "tag":
            tags |= expand_tags(value)
    return frozenset(tags) or None
