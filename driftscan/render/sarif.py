"""SARIF 2.1.0 for code-scanning services: debug-code findings at their lines, drifts as results.

Locations are relative to one ``uriBaseId`` per root, declared in ``run.originalUriBaseIds``
with its ``file://`` URI: ``VENV``, ``SITE_PACKAGES`` (``SITE_PACKAGES_0``, ``_1``… when there
are several), ``MODEL_DIR_0``…, ``SOURCE_0``… (editable source trees), ``EXTERNAL_0``… (the
directories dumps were written to) and, for ``scan``, ``SRCROOT`` (the working directory
relative paths were given from). A code-scanning service that knows where the tree lives can
map them; the same drift gets the same location on every machine.

Rules: every DBG code that produced a finding, described by the rule catalogue (the rule
class's ``MESSAGE`` and docstring, as in docs/rules.md — never a finding's message), plus one
``drift/<kind>`` rule per drift kind. ``helpUri`` points into the published docs on GitHub
(``DOCS_BASE``): ``docs/rules.md#dbg104-one-shot-flag`` for a DBG rule,
``docs/scopes-and-plan.md#drift-kinds`` for a drift rule.

Levels: high → error, medium → warning, low → note; a drift is a warning when a reinstall
wipes it and a note otherwise. A finding the original file has too (``origin: upstream``) is a
note with an ``accepted`` suppression: listed (every finding the JSON report has is here), never
an alert. A debug-artifacts drift is a glob (``/tmp/nomla_*.pt``): the
glob is in the message, the dump files found are the locations — a glob is never a URI.

Each result has ``partialFingerprints["driftscan/v1"]``: a hash of the rule, the root's kind,
the path relative to it and (for findings) the normalised source line and its occurrence —
no line numbers and no absolute paths, so it survives an edit above the finding and a move of
the venv.
"""

from __future__ import annotations

import hashlib
import inspect as pyinspect
import json
import os
import posixpath
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .._version import __version__
from ..core.values import Origin
from ..core.errors import DriftscanError
from ..fs.paths import printable

if TYPE_CHECKING:
    from ..lint import ScanResult
    from ..report.contract import DriftOut, Report

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
LEVEL = {"high": "error", "medium": "warning", "low": "note"}

#: Where helpUri links point: the docs of the driftscan repository's main branch.
DOCS_BASE = "https://github.com/driftscan/driftscan/blob/main/docs/"
RULES_DOC = DOCS_BASE + "rules.md"
DRIFT_KINDS_DOC = DOCS_BASE + "scopes-and-plan.md#drift-kinds"
FINGERPRINT = "driftscan/v1"

#: Each drift kind's rule: (short description, full description).
DRIFT_KINDS: dict[str, tuple[str, str]] = {
    "modified": ("An installed or recorded file's content changed",
                 "The file no longer matches what records it: its RECORD row's size or hash (package scope), the "
                 "model directory's download metadata, git or manifest, or the snapshot it is compared with."),
    "missing": ("A recorded file is gone",
                "A file that a RECORD, a model directory's provenance or the snapshot lists does not exist."),
    "added": ("A file no record lists",
              "A file inside the environment or a model directory that no RECORD, provenance or snapshot lists: "
              "no reinstall removes it."),
    "type-changed": ("A file was replaced by a symlink, a directory or a special file",
                     "The path exists, but is no longer the regular file (or symlink) that was recorded."),
    "orphaned-metadata": ("A dist-info directory without METADATA or RECORD",
                          "pip and uv then think the distribution is installed but cannot reinstall or uninstall "
                          "it."),
    "clobbered": ("A path two distributions install, holding the other one's copy",
                  "Two distributions' RECORDs list the same path; the file on disk is the other one's, so "
                  "reinstalling one of them changes what the other sees."),
    "orphaned-bytecode": ("Bytecode whose source is gone",
                          "A .pyc (or another file derived from a module) whose module no longer exists: Python "
                          "can still import it."),
    "stale-bytecode": ("Bytecode Python runs instead of its modified source",
                       "A __pycache__ .pyc whose header still matches its .py (a timestamp pyc: the same "
                       "modification second and size; an unchecked hash pyc: always) while it was compiled from "
                       "other content, so Python runs the old code. The message says how that is known. `rm` "
                       "the .pyc (Python compiles the source again) or `python -m compileall -f` the source."),
    "debug-artifacts": ("Files debug code wrote, left on disk",
                        "Files matching the target of a dump call in a drifted file (a torch.save to /tmp, ...), "
                        "newer than that code and owned by no distribution. The glob they match is in the message; "
                        "no reinstall removes them."),
    "stale-metadata": ("A model file changed after it was recorded, content not checked",
                       "A large file's mtime is newer than its download metadata (or snapshot) while its size "
                       "matches; it was not hashed (--deep hashes it)."),
    "corrupt": ("A file unreadable as what it claims to be",
                "A safetensors header, a weight index or another structured file that does not parse or "
                "contradicts the files it names."),
    "head-moved": ("An editable install's repository moved from the recorded commit",
                   "The source tree's HEAD is no longer the commit recorded when it was installed."),
    "cache-modified": ("An archive of uv's cache differs from its own RECORD",
                       "An unpacked wheel in uv's cache (archive-v*/<id>/) whose files no longer match the RECORD "
                       "inside it, usually edited in place through a venv's hard link: every new venv installed "
                       "from that source gets the edit. `uv cache clean NAME` removes it."),
    "possible-debug-artifacts": ("Files that may be left by debug code, older than the code",
                                 "Files matching the target of a dump call in a drifted file, owned by no "
                                 "distribution, older than that code's last change but newer than its own "
                                 "modification time or its distribution's install (the code was edited again, "
                                 "copied or chmod-ed since). Listed for review; driftscan does not offer to delete "
                                 "them."),
    "upstream-record-mismatch": ("A file exactly as its wheel ships it, whose wheel's RECORD row is wrong",
                                 "The installed bytes equal the wheel's member for this path while the wheel's own "
                                 "RECORD row (copied into the installed RECORD) does not describe them: upstream's "
                                 "mistake, not an edit. Informational: only --fail-on unverifiable counts it; a "
                                 "reinstall from that wheel reinstates the same bytes."),
    "startup-code": ("A file no record lists that Python runs at every interpreter start",
                     "A .pth file in site-packages with a line Python executes (one starting with `import` and a "
                     "space or tab), or a sitecustomize or usercustomize module, that no RECORD lists: it runs at "
                     "every start of the environment's interpreter, whatever the program, and no reinstall removes "
                     "it. The message quotes what it runs."),
    "record-rewritten": ("A file whose RECORD row was changed to match an edit",
                         "The installed RECORD row differs from the row of the wheel the distribution was installed "
                         "from (the wheel proven by a digest the tree cannot change: a lockfile's hash or "
                         "direct_url.json's), or a row was added or removed: the file and its record were both "
                         "changed, so a check against RECORD alone says clean. Reinstall the distribution from its "
                         "wheel."),
    "lock-mismatch": ("A distribution not as the lockfile pins it",
                      "The installed version or source differs from the lockfile's entry for this environment, the "
                      "lock has no such distribution, or the lock requires one that is not installed."),
    "patched": ("A file as the team's patch wrote it",
                "The file holds exactly what `driftscan patch apply` wrote from a patch of the team's (named in "
                "the message, with its sha256): the drift chosen, informational. A reinstall wipes it and "
                "`driftscan patch apply --yes` writes it again; an edit since makes it drift again."),
    "restored": ("A file back to what RECORD lists since the snapshot",
                 "diff: the file differs from the snapshot and matches its RECORD again (a reinstall or a restore "
                 "since the snapshot): nothing to undo."),
}

#: Drift kinds of high importance whatever the reinstall does: code that runs on its own.
_KIND_LEVEL = {"startup-code": "error", "record-rewritten": "error", "patched": "note"}

_PHRASE = {"wiped": "wiped by a reinstall", "survives": "survives a reinstall",
           "may-survive": "may survive a reinstall"}


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a markdown heading: lower case, punctuation but ``-`` and ``_``
    dropped, spaces to hyphens (``DBG104 `one-shot-flag` `` → ``dbg104-one-shot-flag``)."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def rule_help_uri(code: str, name: str) -> str:
    """Where a catalogue rule is described (docs/rules.md headings are ``CODE `name```)."""
    return f"{RULES_DOC}#{github_anchor(f'{code} `{name}`')}"


@lru_cache(maxsize=1)
def _catalogue() -> dict[str, Any]:
    """Every rule class driftscan can load here (built-ins and plugins), by code. Imported only
    when a report has findings: the rule engine is not loaded for a clean audit."""
    from ..lint.registry import builtin_rules, load_rules

    try:
        rules = load_rules()
    except DriftscanError:  # a broken plugin: the built-ins still describe themselves
        rules = builtin_rules()
    builtin = {r.CODE for r in builtin_rules()}
    return {r.CODE: (r, r.CODE in builtin) for r in rules}


def _paragraphs(doc: str) -> str:
    """A docstring as text: lines of a paragraph joined, paragraphs kept apart."""
    paragraphs = [" ".join(line.strip() for line in block.splitlines())
                  for block in pyinspect.cleandoc(doc).split("\n\n") if block.strip()]
    return "\n\n".join(paragraphs)


class _Rules:
    def __init__(self) -> None:
        self.rules: dict[str, dict[str, Any]] = {}

    def finding_rule(self, code: str, name: str, severity: str) -> str:
        if code in self.rules:
            return code
        known = _catalogue().get(code)
        if known is not None:
            rule, builtin = known
            short = rule.MESSAGE or rule.NAME
            full = _paragraphs(rule.__doc__ or "") or short
            entry: dict[str, Any] = {
                "id": code, "name": rule.NAME, "shortDescription": {"text": short},
                "fullDescription": {"text": full},
                "defaultConfiguration": {"level": LEVEL[rule.SEVERITY.value]},
                "properties": {"tags": ["debug-code"], "severity": rule.SEVERITY.value}}
            if builtin:
                uri = rule_help_uri(code, rule.NAME)
                entry["helpUri"] = uri
                entry["help"] = {"text": f"{full}\n\nSee {uri}", "markdown": f"{full}\n\n[{code} in the rule "
                                                                             f"catalogue]({uri})"}
        else:  # a rule from a module this process did not load: what the finding says of itself
            entry = {"id": code, "name": name, "shortDescription": {"text": name},
                     "fullDescription": {"text": f"{code} {name}: a rule from a plugin or rules module, not in "
                                                 "driftscan's catalogue"},
                     "defaultConfiguration": {"level": LEVEL[severity]},
                     "properties": {"tags": ["debug-code"]}}
        self.rules[code] = entry
        return code

    def drift_rule(self, kind: str) -> str:
        rule_id = f"drift/{kind}"
        if rule_id not in self.rules:
            short, full = DRIFT_KINDS.get(kind, (f"{kind} drift", f"{kind} drift"))
            self.rules[rule_id] = {
                "id": rule_id, "name": kind, "shortDescription": {"text": short},
                "fullDescription": {"text": full}, "helpUri": DRIFT_KINDS_DOC,
                "help": {"text": f"{full}\n\nSee {DRIFT_KINDS_DOC}",
                         "markdown": f"{full}\n\n[Drift kinds, scopes and reinstall predictions]({DRIFT_KINDS_DOC})"},
                "defaultConfiguration": {"level": _KIND_LEVEL.get(kind, "warning")},
                "properties": {"tags": ["drift", *(["security"] if kind in _KIND_LEVEL else [])]}}
        return rule_id

    def list(self) -> list[dict[str, Any]]:
        return [self.rules[k] for k in sorted(self.rules)]


def _file_uri(directory: str) -> str:
    """A directory as an absolute ``file://`` URI ending in ``/`` (SARIF §3.14.14)."""
    return "file://" + quote(directory.rstrip("/") + "/", safe="/")


def _relative_uri(rel: str) -> str:
    rel = rel.strip("/")
    return quote(rel, safe="/") if rel and rel != "." else "./"


def _under(path: str, root: str) -> bool:
    root = root.rstrip("/") or "/"
    return path == root or path.startswith(root if root.endswith("/") else root + "/")


def _inside(path: str, root: str) -> str:
    """``path`` relative to ``root``, which contains it (``_under``): "." for the root itself."""
    root = root.rstrip("/")
    return path[len(root) + 1:] if path != root else "."


def _static_dir(pattern: str) -> str:
    """The directory part of a glob that holds no wildcard (``/tmp`` for ``/tmp/x_*/y.pt``)."""
    parts = pattern.split("/")
    kept = []
    for part in parts[:-1]:
        if any(c in part for c in "*?["):
            break
        kept.append(part)
    return "/".join(kept) or "/"


class _Bases:
    """The roots locations are relative to, named as the module docstring says."""

    def __init__(self, report: Report | None = None) -> None:
        self.bases: dict[str, tuple[str, str]] = {}  # id -> (absolute directory, description)
        self.known: list[tuple[str, str]] = []  # (root, id) of the target's own roots, longest first
        self._counters: dict[str, int] = {}
        if report is None:
            return
        t = report.target
        if t.venv:
            self._declare("VENV", t.venv, "the virtual environment")
        several = len(t.site_packages) > 1
        for n, sp in enumerate(t.site_packages):
            self._declare(f"SITE_PACKAGES_{n}" if several else "SITE_PACKAGES", sp, "a site-packages directory")
        for n, md in enumerate(t.model_dirs):
            self._declare(f"MODEL_DIR_{n}", md, "a model directory")
        self._counters["MODEL_DIR"] = len(t.model_dirs)
        self.known.sort(key=lambda rb: len(rb[0]), reverse=True)

    def _declare(self, base_id: str, root: str, description: str) -> None:
        self.bases[base_id] = (root, description)
        self.known.append((root, base_id))

    def _new(self, prefix: str, root: str, description: str) -> str:
        for base_id, (existing, _) in self.bases.items():
            if existing == root and base_id.startswith(prefix):
                return base_id
        n = self._counters.get(prefix, 0)
        self._counters[prefix] = n + 1
        base_id = f"{prefix}_{n}"
        self.bases[base_id] = (root, description)
        return base_id

    def locate(self, path: str, fallback_root: str | None = None, prefix: str = "ROOT",
               description: str = "a directory") -> tuple[str, str] | None:
        """(uriBaseId, relative URI) for ``path``, or None when it has no root (then absolute)."""
        for root, base_id in self.known:
            if _under(path, root):
                return base_id, _relative_uri(_inside(path, root))
        if fallback_root and _under(path, fallback_root):
            base_id = self._new(prefix, fallback_root, description)
            return base_id, _relative_uri(_inside(path, fallback_root))
        return None

    def category(self, base_id: str) -> str:
        """The base's kind without its number, plus the root's own name where that tells roots
        apart on any machine (a model directory's name): part of the fingerprint."""
        kind = re.sub(r"_\d+$", "", base_id)
        if kind in ("VENV", "SITE_PACKAGES"):
            return kind
        return f"{kind}:{os.path.basename(self.bases[base_id][0].rstrip('/'))}"

    def original_uri_base_ids(self) -> dict[str, Any]:
        return {base_id: {"uri": _file_uri(root), "description": {"text": description}}
                for base_id, (root, description) in self.bases.items()}


def _artifact_location(bases: _Bases, path: str, **fallback: Any) -> tuple[dict[str, Any], str]:
    """The artifactLocation of ``path`` and the fingerprint's view of it."""
    found = bases.locate(path, **fallback)
    if found is None:
        return {"uri": "file://" + quote(path, safe="/") if path.startswith("/") else _relative_uri(path)}, path
    base_id, uri = found
    return {"uri": uri, "uriBaseId": base_id}, f"{bases.category(base_id)}/{uri}"


def _location(artifact: dict[str, Any], line: int | None = None, column: int | None = None,
              snippet: str = "") -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": artifact}
    if line:
        region: dict[str, Any] = {"startLine": line, **({"startColumn": column} if column else {})}
        if snippet:
            region["snippet"] = {"text": snippet}
        physical["region"] = region
    return {"physicalLocation": physical}


def normalise_snippet(snippet: str) -> str:
    return " ".join(snippet.split())


def fingerprint(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


class _Occurrences:
    """The n-th identical (rule, file, snippet): two identical lines in a file stay apart."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, ...], int] = {}

    def next(self, *key: str) -> str:
        n = self.seen.get(key, 0)
        self.seen[key] = n + 1
        return str(n)


def _finding_result(rules: _Rules, occurrences: _Occurrences, artifact: dict[str, Any], where: str, code: str,
                    name: str, severity: str, line: int, column: int, message: str, snippet: str,
                    origin: str | None = None) -> dict[str, Any]:
    rule_id = rules.finding_rule(code, name, severity)
    snip = normalise_snippet(snippet)
    result: dict[str, Any] = {
        "ruleId": rule_id, "level": LEVEL[severity], "message": {"text": message},
        "locations": [_location(artifact, line, column, snippet)],
        "partialFingerprints": {FINGERPRINT: fingerprint(code, where, snip, occurrences.next(code, where, snip))}}
    if origin:
        result["properties"] = {"origin": origin}
    return result


def _run(rules: _Rules, results: list[dict[str, Any]], notifications: list[dict[str, Any]],
         bases: _Bases) -> str:
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "driftscan", "version": __version__, "semanticVersion": __version__,
                            "informationUri": "https://github.com/driftscan/driftscan", "rules": rules.list()}},
    }
    base_ids = bases.original_uri_base_ids()
    if base_ids:
        run["originalUriBaseIds"] = base_ids
    run["results"] = results
    if notifications:
        run["invocations"] = [{"executionSuccessful": True, "toolExecutionNotifications": notifications}]
    return json.dumps({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2) + "\n"


def _notifications(errors: Iterable[Any]) -> list[dict[str, Any]]:
    return [{"level": "warning", "message": {"text": f"{e.path}: {e.message}"}} for e in errors]


def _drift_root(d: DriftOut) -> str | None:
    """The directory ``relpath`` is relative to, from the drift itself."""
    if d.relpath in ("", "."):
        return d.path
    if d.path.endswith("/" + d.relpath):
        return d.path[: -len(d.relpath) - 1] or "/"
    return None


_SCOPE_BASE = {"source": ("SOURCE", "an editable install's source tree"),
               "external": ("EXTERNAL", "a directory debug code wrote to"),
               "data": ("MODEL_DIR", "a model directory")}


def accepted_reason(d: DriftOut) -> str | None:
    """The reason of the accept entry that accepts ``d`` (docs/configuration.md), or None."""
    accepted = getattr(d, "accepted", None)
    if not accepted:
        return None
    return str(accepted.get("reason") or "accepted")


_DUMP_KINDS = ("debug-artifacts", "possible-debug-artifacts")


def _dump_files(d: DriftOut) -> list[str]:
    """The files a (possible) dump drift lists."""
    if d.kind.value == "debug-artifacts":
        return list(d.artifacts)
    listed = d.actual.get("possible_artifacts")
    return [str(p) for p in listed] if isinstance(listed, list) else []


def drift_message(d: DriftOut) -> str:
    owner = f" ({d.distribution.name} {d.distribution.version})" if d.distribution else ""
    if d.kind.value in _DUMP_KINDS:
        count = len(_dump_files(d))
        what = f"{count} file{'s' if count != 1 else ''} matching {d.path}"
    else:
        what = d.relpath
    evidence = d.evidence.strip()
    if evidence and not evidence.endswith((".", "!", "?")):
        evidence += "."
    accepted = accepted_reason(d)
    phrase = "back to what RECORD lists" if d.kind.value == "restored" else _PHRASE[d.prediction.value]
    parts = [f"{d.kind.value}{owner}: {what}; scope {d.scope.value}, {phrase}.", evidence,
             f"Remedy: {d.remedy}" if d.remedy else "", f"Accepted: {accepted}" if accepted is not None else ""]
    return " ".join(p for p in parts if p)


MAX_ARTIFACT_LOCATIONS = 100


def _drift_locations(bases: _Bases, d: DriftOut) -> tuple[list[dict[str, Any]], str]:
    prefix, description = _SCOPE_BASE.get(d.scope.value, ("ROOT", "a directory"))
    if d.kind.value in _DUMP_KINDS:
        directory = _static_dir(d.path)
        files = _dump_files(d)[:MAX_ARTIFACT_LOCATIONS] or [directory]
        locations = [_location(_artifact_location(bases, f, fallback_root=directory, prefix="EXTERNAL",
                                                  description="a directory debug code wrote to")[0])
                     for f in files]
        # the glob itself (not machine-specific: it is what the code writes) identifies the drift
        return locations, f"EXTERNAL/{d.path}"
    artifact, where = _artifact_location(bases, d.path, fallback_root=_drift_root(d), prefix=prefix,
                                         description=description)
    return [_location(artifact)], where


def render_sarif(report: Report) -> str:
    rules = _Rules()
    bases = _Bases(report)
    occurrences = _Occurrences()
    results = []
    for d in report.drifts:
        level = _KIND_LEVEL.get(d.kind.value) or (
            "warning" if d.prediction.value == "wiped" and d.kind.value != "restored" else "note")
        rule = rules.drift_rule(d.kind.value)
        locations, where = _drift_locations(bases, d)
        owner = d.distribution.name.lower() if d.distribution else ""
        accepted = accepted_reason(d)
        result: dict[str, Any] = {
            "ruleId": rule, "level": level, "message": {"text": drift_message(d)}, "locations": locations,
            "partialFingerprints": {FINGERPRINT: fingerprint(rule, where, owner)},
            "properties": {"scope": d.scope.value, "survives_reinstall": d.survives_reinstall,
                           "prediction": d.prediction.value, "relpath": d.relpath}}
        if accepted is not None:
            result["suppressions"] = [{"kind": "external", "status": "accepted", "justification": accepted}]
        results.append(result)
        if not d.findings:
            continue
        artifact, where = _artifact_location(bases, d.path, fallback_root=_drift_root(d),
                                             prefix=_SCOPE_BASE.get(d.scope.value, ("ROOT", ""))[0],
                                             description=_SCOPE_BASE.get(d.scope.value, ("", "a directory"))[1])
        for f in d.findings:
            found = _finding_result(rules, occurrences, artifact, where, f.code, f.name, f.severity.value,
                                    f.line, f.column, f.message, f.snippet,
                                    f.origin.value if f.origin else None)
            if f.origin is Origin.UPSTREAM:  # the original file has it too: listed, not alerted on
                found["level"] = "note"
                found["suppressions"] = [{"kind": "external", "status": "accepted",
                                          "justification": "also in the original file: not part of what drifted"}]
            elif accepted is not None:  # the accepted content is accepted with the debug code in it
                found["suppressions"] = [{"kind": "external", "status": "accepted",
                                          "justification": f"in an accepted drift: {accepted}"}]
            results.append(found)
    return _run(rules, results, _notifications(report.errors), bases)


def render_scan_sarif(result: ScanResult, cwd: str | None = None) -> str:
    """``scan``'s findings: a relative path is relative to ``SRCROOT``, the working directory
    (``cwd``, default: this process's); an absolute one is an absolute ``file://`` URI."""
    rules = _Rules()
    bases = _Bases()
    occurrences = _Occurrences()
    root = cwd or os.getcwd()
    results = []
    for p, f in result.findings:
        path = printable(p)
        if path.startswith("/"):
            artifact, where = {"uri": "file://" + quote(path, safe="/")}, path
        else:
            if "SRCROOT" not in bases.bases:
                bases.bases["SRCROOT"] = (root, "the directory the scan ran in")
            uri = _relative_uri(posixpath.normpath(path))
            artifact, where = {"uri": uri, "uriBaseId": "SRCROOT"}, f"SRCROOT/{uri}"
        results.append(_finding_result(rules, occurrences, artifact, where, f.code, f.name, f.severity.value,
                                       f.line, f.column, f.message, f.snippet))
    return _run(rules, results, _notifications(result.errors), bases)
