"""Annotate drifted files that share their inode with uv's cache (or link into it), or that are
virtualenv app-data links (the one driftscan knows, or one it does not: a hint to name it)."""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import replace

from .cache import find_cache_copy
from ...core.units import plural
from ...core.values import DriftKind, FileCheck, Problem, UvCacheLink

_EDITABLE_KINDS = {DriftKind.MODIFIED, DriftKind.CLOBBERED, DriftKind.RECORD_REWRITTEN}


def annotate_uv_cache(checks: list[FileCheck], cache_dir: str | None) -> list[FileCheck]:
    """Set ``uv_cache`` on each modified file that is linked: where its cache copy is."""
    out = []
    for check in checks:
        dist = check.distribution
        nlink = check.actual.get("nlink", 1)
        link = check.actual.get("symlink_target")
        if dist is None or check.kind not in _EDITABLE_KINDS or (nlink <= 1 and not link):
            out.append(check)
            continue
        copy_path = None
        if link:
            # Only a link into the cache driftscan was told about (never one the tree merely says
            # is a cache) names a cache copy; records.py followed it no further than that.
            resolved = os.path.realpath(os.path.join(os.path.dirname(check.path), link))
            archives = [os.path.join(r, "archive-v0") + os.sep
                        for r in dict.fromkeys([cache_dir, os.path.realpath(cache_dir)])] if cache_dir else []
            if archives and resolved.startswith(tuple(archives)):
                copy_path = resolved
        else:
            record_path = os.path.relpath(check.path, dist.site_packages).replace(os.sep, "/")
            found = find_cache_copy(cache_dir, check.path, record_path)
            copy_path = found.path if found else None
        out.append(replace(check, uv_cache=UvCacheLink(cache_dir, copy_path, nlink, bool(link))))
    return out


def annotate_app_data(checks: list[FileCheck], app_data: str | None) -> list[FileCheck]:
    """Say so on drifts of a distribution linked from virtualenv's app-data (--symlink-app-data):
    the edit is in the shared image, not only in this venv."""
    if not app_data:
        return checks
    images = tuple(dict.fromkeys(os.path.join(r, "wheel") + os.sep for r in (app_data, os.path.realpath(app_data))))
    out = []
    for check in checks:
        dist = check.distribution
        if dist is not None and check.kind in _EDITABLE_KINDS and os.path.islink(dist.metadata_dir) \
                and os.path.realpath(dist.metadata_dir).startswith(images):
            image = os.path.dirname(os.path.realpath(dist.metadata_dir))
            note = (f"linked from virtualenv's app-data image {image}: the edit is in that shared image, which "
                    "every --symlink-app-data venv links; a reinstall gives this venv copies and leaves the image "
                    "edited (virtualenv --reset-app-data rebuilds it)")
            check = replace(check, evidence=f"{check.evidence}; {note}" if check.evidence else note)
        out.append(check)
    return out


# A path inside virtualenv's app-data image of a wheel: <app-data>/wheel/<py>/image/<n>/<how>/<stem>/...
_APP_DATA_IMAGE = re.compile(r"^(?P<app>/.*?)/wheel/\d+\.\d+/image/\d+/(?:CopyPipInstall|SymlinkPipInstall)/[^/]+(?:/|$)")


def unknown_app_data(added: list[FileCheck], app_data: str | None) -> tuple[list[FileCheck], list[Problem]]:
    """Added symlinks that lead into what looks like virtualenv's app-data (--symlink-app-data) other
    than the one driftscan knows: each says so in its evidence, and one note per such directory
    says how to name it. The links are read as text, never followed: the tree names the directory,
    only the user can make it trusted (--app-data, VIRTUALENV_OVERRIDE_APP_DATA)."""
    known = {os.path.normpath(r) for r in (app_data, os.path.realpath(app_data)) if r} if app_data else set()
    out: list[FileCheck] = []
    linked: dict[str, list[str]] = {}
    for check in added:
        target = check.actual.get("target") if check.kind is DriftKind.ADDED else None
        match = _APP_DATA_IMAGE.match(os.path.normpath(os.path.join(os.path.dirname(check.path), target))) \
            if isinstance(target, str) else None
        if match is None or match.group("app") in known:
            out.append(check)
            continue
        app = match.group("app")
        linked.setdefault(app, []).append(os.path.basename(check.path))
        why = (f"a symlink into {app}, which looks like virtualenv's app-data (--symlink-app-data) but is not the "
               f"one driftscan knows; not followed (--app-data {shlex.quote(app)} names it)")
        out.append(replace(check, evidence=f"{check.evidence}; {why}" if check.evidence else why))
    notes = []
    for app, names in sorted(linked.items()):
        infos = [n for n in names if n.endswith(".dist-info")]
        what = (f"the distributions they link ({', '.join(sorted(infos))}) are not checked and"
                if infos else "")
        notes.append(Problem(app, f"{len(names)} {plural(len(names), 'symlink')} of this environment lead into "
                                  "this directory, which looks like virtualenv's app-data (virtualenv "
                                  f"--symlink-app-data) but is not the one driftscan knows "
                                  f"({app_data or 'none'}): not followed, so {what} the links are listed as "
                                  f"added. If it is virtualenv's app-data, name it: --app-data {shlex.quote(app)} "
                                  f"(or VIRTUALENV_OVERRIDE_APP_DATA={shlex.quote(app)} in the environment)"))
    return out, notes
