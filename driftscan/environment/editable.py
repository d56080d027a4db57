"""Locate the source trees of editable installs (PEP 660 and legacy ``setup.py develop``).

No RECORD lists an editable project's sources (docs/installers.md §3); they are found from
``direct_url.json``, the ``.pth`` files and setuptools' finder ``MAPPING`` (read with ``ast``,
never imported), or a legacy ``.egg-link``.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from urllib.parse import unquote, urlparse

from ..fs.reader import LIMITS, read_regular
from ..core.values import Distribution, MetadataKind, Problem


@dataclass(frozen=True)
class EditableSource:
    name: str
    version: str
    project_dir: str
    how: str  # "direct_url" | "pth" | "finder" | "egg-link"
    distribution: Distribution | None
    installed_at: float | None  # mtime of the install's RECORD / egg-link: when it was installed
    recorded_commit: str | None = None


def file_url_path(url: str) -> str | None:
    parsed = urlparse(url)
    if parsed.scheme != "file":
        return None
    if os.name == "nt":  # drive letters and UNC hosts; it unquotes too
        from urllib.request import url2pathname  # ~65 ms at start-up (http.client, email); Windows only

        return os.path.normpath(url2pathname(parsed.path))
    return os.path.normpath(unquote(parsed.path))  # unquoted once: "%2525" names a file "%25"


def _mtime(path: str) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def finder_mapping(path: str, root: str | None = None) -> dict[str, str]:
    """``MAPPING = {...}`` from setuptools' ``__editable___*_finder.py``, without importing it."""
    try:
        tree = ast.parse(read_regular(path, LIMITS["finder"], what="finder", root=root).decode("utf-8"))
    except (OSError, SyntaxError, ValueError):  # UnicodeDecodeError is a ValueError
        return {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "MAPPING" for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return {}
            return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
    return {}


def _from_record(dist: Distribution) -> tuple[str, str] | None:
    """Where a PEP 660 editable points, read from the .pth / finder files its RECORD lists."""
    for entry in dist.entries:
        path = os.path.normpath(os.path.join(dist.site_packages, entry.path))
        if entry.path.endswith("_finder.py"):
            mapping = finder_mapping(path, dist.site_packages)
            if mapping:
                return os.path.dirname(sorted(mapping.values())[0]), "finder"
        elif entry.path.endswith(".pth"):
            try:
                text = read_regular(path, LIMITS[".pth"], what=".pth", root=dist.site_packages).decode("utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            lines = [line.strip() for line in text.splitlines()
                     if line.strip() and not line.startswith(("#", "import"))]
            if lines and os.path.isabs(lines[0]):
                return lines[0], "pth"
    return None


def find_editable_sources(dists: tuple[Distribution, ...], site_packages: tuple[str, ...]) -> tuple[
        list[EditableSource], list[Problem]]:
    sources: list[EditableSource] = []
    problems: list[Problem] = []
    for dist in dists:
        if not dist.editable:
            continue
        record = os.path.join(dist.metadata_dir, "RECORD")
        project = file_url_path((dist.direct_url or {}).get("url", ""))
        how = "direct_url"
        if project is None:
            found = _from_record(dist)
            if found is None:
                problems.append(Problem(dist.metadata_dir, "editable install whose source tree cannot be located"))
                continue
            project, how = found
        commit = ((dist.direct_url or {}).get("vcs_info") or {}).get("commit_id")
        sources.append(EditableSource(dist.name, dist.version, project, how, dist, _mtime(record), commit))
    for site in site_packages:
        try:
            names = sorted(n for n in os.listdir(site) if n.endswith(".egg-link"))
        except OSError:
            continue
        for name in names:
            path = os.path.join(site, name)
            try:
                text = read_regular(path, LIMITS[".egg-link"], what=".egg-link", root=site).decode("utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                problems.append(Problem(path, f"cannot read: {reason}"))
                continue
            first = (text.splitlines() or [""])[0].strip()
            if first:
                project = name[: -len(".egg-link")]
                # Legacy develop installs keep their metadata in the project; the link stands in for it.
                dist = Distribution(name=project, version="unknown", metadata_dir=path, site_packages=site,
                                    kind=MetadataKind.EGG_LINK)
                sources.append(EditableSource(project, "unknown", os.path.normpath(first), "egg-link", dist,
                                              _mtime(path)))
    return sources, problems
