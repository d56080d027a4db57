"""Reading one machine's audit report or snapshot into what ``compare`` groups: a ``Machine``
(who it is, which distributions at which versions, which roots) and its ``Fact``s (one per path
with something to say).

Reports and snapshots come from other machines, often ones nobody trusts: they are data. Every
value is type-checked before use, nothing in them is opened or run, and a malformed entry is
counted and skipped, never a traceback.

Paths are grouped by where they are *relative to*: ``site-packages`` (whatever the Python
version in its path), ``venv``, ``model:NAME`` (a model directory by its name), or ``external``
(an absolute path), so one fleet's venvs may live at different places.
"""

from __future__ import annotations

import enum
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..core.errors import DriftscanError
from ..formats.prefixfree import usable_prefix
from ..fs.reader import read_regular

MAX_INPUT = 1 << 30  # a report or snapshot bigger than this is not one of ours
SITE_PACKAGES = "site-packages"
VENV = "venv"
EXTERNAL = "external"
# The versions this driftscan writes (report/contract.py, formats/manifest.py, snapshot/run.py; a
# test holds them equal), not imported: compare needs none of those modules' work.
SCHEMA_VERSION = "1"
MANIFEST_VERSION = "1"
BUNDLE_VERSION = "1"


class InputKind(str, enum.Enum):
    """What one ``compare`` input is (``MachineOut.source`` in the result)."""

    REPORT = "report"  # a driftscan audit report (--format json)
    SNAPSHOT = "snapshot"  # a snapshot: a manifest or a bundle of them


# A site-packages directory inside a venv snapshot: lib/python3.12/site-packages, lib/python3.13t/…,
# Lib/site-packages on Windows.
_SITE_RE = re.compile(r"^(?:lib|lib64)/python\d+\.\d+t?/site-packages/|^Lib/site-packages/")
_DIST_INFO_RE = re.compile(r"^([^/]+?)-([^/-]+)\.(dist-info|egg-info)/(?:METADATA|PKG-INFO|top_level\.txt)$")
# Drift kinds that describe something the reference lacks: where no report lists the path, it is absent.
EXTRA_KINDS = frozenset({"added", "orphaned-bytecode", "orphaned-metadata", "debug-artifacts", "startup-code"})
ABSENT: tuple[str, ...] = ("absent",)
AS_REFERENCE: tuple[str, ...] = ("recorded",)


class InputError(DriftscanError):
    """One input that cannot be compared (the others still are)."""


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class Machine:
    index: int
    name: str
    source: InputKind
    hostname: str | None = None
    python_version: str | None = None
    files: int | None = None
    # canonical name -> version (interned: a thousand machines share the strings); None: the input
    # does not say (an older report)
    versions: dict[str, str] | None = None
    display: dict[str, str] = field(default_factory=dict)  # canonical -> name as written; shared
    roots: dict[str, str] = field(default_factory=dict)  # root class -> directory on that machine
    skipped_entries: int = 0
    path: str = ""  # the file it was read from (``name`` unless the caller names machines otherwise)
    generated_at: str | None = None  # when the report was written (a snapshot's ``created``), as it says
    # canonical name -> its RECORD's state on this machine (``RecordState``): what ``records.py``
    # finds a rewritten RECORD by; only distributions the input gives one for
    records: dict[str, RecordState] = field(default_factory=dict)
    # Filled as its facts are read, emptied by the reader: (key, state, the same file's state with
    # the environment's own path taken out) for each file whose input gives both and whose prefix
    # is one that may be taken out (``formats/prefixfree.py``). At most ``MAX_OWN_PATH`` a read.
    own_path: list[tuple[Key, State, State]] = field(default_factory=list)


class RecordState(NamedTuple):
    """One distribution's RECORD on one machine, as ``compare`` weighs it against the fleet's."""

    version: str
    state: str  # what is compared: a report's record_digest, a snapshot's RECORD digest (prefix-free if given)
    shown: dict[str, str]  # how the output shows it: {"hash": …} or {"xxh3_128": …}
    relpath: str | None = None  # relative to site-packages (snapshots: the entry's own path)
    # what else must match for two RECORDs to be compared: a snapshot's INSTALLER digest (pip and uv
    # write different rows); "" for a report's record_digest, which leaves installer rows out
    installer: str = ""


# A report's record_digest: "algorithm=urlsafe base64"; anything else is not one of ours.
_RECORD_DIGEST = re.compile(r"[a-z0-9_]{1,16}=[A-Za-z0-9_-]{16,128}")
MAX_OWN_PATH = 1 << 16
_HEX32 = re.compile(r"[0-9a-f]{32}")
PREFIX_FREE = "prefix-free:"  # what marks a state made of a prefix-free digest


def target_of(m: Machine) -> tuple[str, tuple[tuple[str, str], ...]] | None:
    """What makes two inputs one environment of one machine at two times: the hostname and every
    root (the venv, its site-packages, the model directories) by path. None: the input names no
    host, so it cannot be told to be the same machine as another."""
    if not m.hostname or not m.roots:
        return None
    return m.hostname, tuple(sorted(m.roots.items()))


# One path on one machine, as a plain tuple (a snapshot yields 40,000 of them per machine, twice):
# (key, dist, state, scope, implicit, path)
#   key: (root, relpath) — what machines are grouped by
#   dist: canonical name of the owning distribution, or None
#   state: hashable — a snapshot's xxh3-128 digest (a str), "link:TARGET", ABSENT, AS_REFERENCE,
#          or (drift kind, content token) from a report
#   scope: the drift's scope, implicit: the state of a machine whose input does not list the path,
#   path: the path on this machine, or None (then it is the root's directory joined with relpath)
State = str | tuple[str, ...] | tuple[str, str | None]
Key = tuple[str, str]
Fact = tuple[Key, str | None, State, str | None, State, str | None]


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class LazyArray:
    """A top-level JSON array kept as its text and decoded one element at a time on each
    iteration: a report's ``drifts`` parsed whole costs about 5 times its size in objects, so only
    the text (and one element) is held. Already checked to be valid JSON when made."""

    __slots__ = ("_text", "_start")

    def __init__(self, text: str, start: int):
        self._text, self._start = text, start  # start: just after the "["

    def __iter__(self) -> Iterator[Any]:
        text, decode = self._text, _DECODER.raw_decode
        pos = _skip(text, self._start)
        if text.startswith("]", pos):
            return
        while True:
            item, pos = decode(text, pos)
            yield item
            pos = _skip(text, pos)
            if text.startswith("]", pos):
                return
            pos = _skip(text, pos + 1)  # the ","


_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\n\r]*")
# Top-level arrays read lazily (LazyArray): the ones that grow with the audited tree.
LAZY_KEYS = frozenset({"drifts"})


def _skip(text: str, pos: int) -> int:
    end = _WS.match(text, pos)
    return end.end() if end else pos


def _expect(text: str, pos: int, char: str) -> int:
    pos = _skip(text, pos)
    if not text.startswith(char, pos):
        raise ValueError(f"Expecting {char!r}: char {pos}")
    return pos + 1


def _lazy_object(text: str) -> dict[str, Any] | None:
    """The top-level object of ``text`` with the arrays of ``LAZY_KEYS`` as ``LazyArray``s (every
    element decoded once here, to check it, and dropped); None when the top level is no object.
    ValueError as ``json.loads`` gives for invalid JSON."""
    decode = _DECODER.raw_decode
    pos = _skip(text, 0)
    if not text.startswith("{", pos):
        return None
    doc: dict[str, Any] = {}
    pos = _skip(text, pos + 1)
    if text.startswith("}", pos):
        pos += 1
    else:
        while True:
            key, pos = decode(text, pos)
            if not isinstance(key, str):
                raise ValueError(f"Expecting property name enclosed in double quotes: char {pos}")
            pos = _skip(text, _expect(text, pos, ":"))
            if key in LAZY_KEYS and text.startswith("[", pos):
                lazy = LazyArray(text, pos + 1)
                pos = _skip(text, pos + 1)
                if text.startswith("]", pos):
                    pos += 1
                else:
                    while True:
                        _, pos = decode(text, pos)
                        pos = _skip(text, pos)
                        if text.startswith("]", pos):
                            pos += 1
                            break
                        pos = _skip(text, _expect(text, pos, ","))
                doc[key] = lazy
            else:
                doc[key], pos = decode(text, pos)
            pos = _skip(text, pos)
            if text.startswith("}", pos):
                pos += 1
                break
            pos = _skip(text, _expect(text, pos, ","))
    if _skip(text, pos) != len(text):
        raise ValueError(f"Extra data: char {pos}")
    return doc


def load(path: str) -> Any:
    """The input's JSON; a top-level object's growing arrays (``LAZY_KEYS``) as ``LazyArray``s, so
    that memory stays a small multiple of the file's size."""
    try:
        data = read_regular(path, MAX_INPUT, what="report or snapshot")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}") from None
    try:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return json.loads(data)  # another encoding json detects, or its own error message
        del data
        doc = _lazy_object(text)
        return doc if doc is not None else json.loads(text)
    except RecursionError:
        raise InputError("not valid JSON: nested too deeply") from None
    except ValueError as exc:
        raise InputError(f"not valid JSON: {exc}") from None


def _array(value: Any) -> list[Any] | LazyArray | None:
    return value if isinstance(value, list | LazyArray) else None


def _is_snapshot(doc: dict[str, Any]) -> bool:
    return "manifest_version" in doc or "bundle_version" in doc


def _is_report(doc: dict[str, Any]) -> bool:
    tool = doc.get("tool")
    return "schema_version" in doc and isinstance(tool, dict) and tool.get("name") == "driftscan" \
        and _array(doc.get("drifts")) is not None


def kind_of(doc: Any) -> InputKind:
    """The name of the input format ``doc`` is (``FORMATS``, first match), else InputError; one of
    a version this driftscan does not read is an InputError too (that input's, before any of it
    is counted)."""
    if isinstance(doc, dict):
        for fmt in FORMATS:
            if fmt.recognise(doc):
                _known_version(fmt.name, doc)
                return fmt.name
    raise InputError("neither a driftscan audit report (--format json) nor a snapshot")


def _known_version(kind: InputKind, doc: dict[str, Any]) -> None:
    if kind is InputKind.REPORT:
        fields = (("schema_version", SCHEMA_VERSION, "an audit report"),)
    elif "manifest_version" in doc:
        fields = (("manifest_version", MANIFEST_VERSION, "a snapshot"),)
    else:
        fields = (("bundle_version", BUNDLE_VERSION, "a snapshot bundle"),)
    for key, known, what in fields:
        value = doc.get(key)
        if value != known:
            shown = json.dumps(value)[:40] if isinstance(value, str | int | float | bool) or value is None \
                else type(value).__name__
            raise InputError(f"{what} of {key} {shown}; this driftscan reads {known!r}")


# ---- reports --------------------------------------------------------------------------------------

def _report_roots(target: Any) -> dict[str, str]:
    roots: dict[str, str] = {}
    if not isinstance(target, dict):
        return roots
    venv = _str(target.get("venv"))
    if venv:
        roots[VENV] = venv
    sites = target.get("site_packages")
    if isinstance(sites, list) and sites and isinstance(sites[0], str):
        roots[SITE_PACKAGES] = sites[0]
    models = target.get("model_dirs")
    for model in models if isinstance(models, list) else []:
        if isinstance(model, str) and model:
            roots[_model_root(model, roots)] = model
    return roots


def _model_root(directory: str, taken: dict[str, str]) -> str:
    name = "model:" + (os.path.basename(directory.rstrip("/")) or directory)
    root, n = name, 2
    while root in taken:
        root, n = f"{name}#{n}", n + 1
    return root


def _under(path: str, directory: str) -> bool:
    return path.startswith(directory.rstrip("/") + "/")


def _root_of(path: str, roots: dict[str, str]) -> str:
    best, best_len = EXTERNAL, -1
    for root, directory in roots.items():
        if _under(path, directory) and len(directory) > best_len:
            best, best_len = root, len(directory)
    return best


def _content_token(drift: dict[str, Any]) -> str | None:
    actual: dict[str, Any] = drift["actual"] if isinstance(drift.get("actual"), dict) else {}
    for key in ("hash", "sha256", "xxh3_128", "git_blob_sha1"):
        if isinstance(actual.get(key), str):
            return f"{key}:{actual[key]}" if key != "hash" else actual[key]
    size = actual.get("size")
    if isinstance(size, int) and not isinstance(size, bool):
        return f"size={size}"  # an older report: same size is taken as the same content
    return None


def _prefix_free_token(machine: Machine, drift: dict[str, Any]) -> str | None:
    """A drift's ``actual.hash_prefix_free``, when its report's environment has a path that may be
    taken out of files (a report that names ``/`` or no venv has none to trust) and it comes with
    the plain ``hash`` it stands beside."""
    actual = drift.get("actual")
    if not isinstance(actual, dict) or not usable_prefix(machine.roots.get(VENV)):
        return None
    free, plain = actual.get("hash_prefix_free"), actual.get("hash")
    if isinstance(free, str) and isinstance(plain, str) and 0 < len(free) <= 200:
        return free
    return None


def report_machine(index: int, name: str, doc: dict[str, Any], display: dict[str, str] | None = None) -> Machine:
    target = doc.get("target")
    summary: dict[str, Any] = doc["summary"] if isinstance(doc.get("summary"), dict) else {}
    files = summary.get("files_checked")
    machine = Machine(index, name, InputKind.REPORT, hostname=_str(doc.get("hostname")),
                      python_version=_str(target.get("python_version")) if isinstance(target, dict) else None,
                      files=files if isinstance(files, int) and not isinstance(files, bool) else None,
                      roots=_report_roots(target), display=display if display is not None else {},
                      generated_at=_str(doc.get("generated_at")))
    dists = doc.get("distributions")
    if isinstance(dists, list):
        machine.versions = {}
        for n, d in enumerate(dists):
            if isinstance(d, dict) and isinstance(d.get("name"), str) and isinstance(d.get("version"), str):
                _add_version(machine, d["name"], d["version"])
                _add_record_digest(machine, n, d)
            else:
                machine.skipped_entries += 1
    return machine


def _add_record_digest(machine: Machine, n: int, d: dict[str, Any]) -> None:
    """A distribution's ``record_digest`` (null or absent: none to compare). One that is not a
    digest makes the whole report an input error: a report that lies about it cannot be weighed."""
    digest = d.get("record_digest")
    if digest is None:
        return
    if not isinstance(digest, str) or len(digest) > 200 or not _RECORD_DIGEST.fullmatch(digest):
        shown = type(digest).__name__ if not isinstance(digest, str) else f"a string of {len(digest)} characters"
        raise InputError(f"distributions[{n}].record_digest is not a digest (algorithm=base64): {shown}")
    key = canonical(d["name"])
    if key in machine.records:  # two metadata directories of one name: no one RECORD to compare
        machine.records[key] = machine.records[key]._replace(state="")
        return
    machine.records[key] = RecordState(sys.intern(d["version"]), digest, {"hash": digest})


def _add_version(machine: Machine, name: str, version: str) -> None:
    versions = machine.versions
    if versions is None:
        return
    key = sys.intern(canonical(name))
    if key in versions and versions[key] != version:  # two metadata directories of one name
        version = "+".join(sorted({*versions[key].split("+"), version}))
    versions[key] = sys.intern(version)
    machine.display.setdefault(key, name)


def report_facts(machine: Machine, doc: dict[str, Any]) -> Iterator[Fact]:
    for drift in _array(doc.get("drifts")) or ():
        path = _str(drift.get("path")) if isinstance(drift, dict) else None
        kind = _str(drift.get("kind")) if isinstance(drift, dict) else None
        if not path or not kind:
            machine.skipped_entries += 1
            continue
        root = _root_of(path, machine.roots)
        rel = path if root == EXTERNAL else _str(drift.get("relpath")) or path[len(machine.roots[root].rstrip("/")) + 1:]
        if root != EXTERNAL and not _under(path, machine.roots[root]):
            rel = path
        dist = drift.get("distribution")
        owner = canonical(dist["name"]) if isinstance(dist, dict) and isinstance(dist.get("name"), str) else None
        if owner is not None and machine.versions is not None and owner not in machine.versions \
                and isinstance(dist.get("version"), str):
            _add_version(machine, dist["name"], dist["version"])
        if kind == "missing":
            state: State = ("missing",)
        else:
            state = (kind, _content_token(drift))
            free = _prefix_free_token(machine, drift)
            if free is not None and len(machine.own_path) < MAX_OWN_PATH:
                key = (root, rel)
                machine.own_path.append((key, state, (kind, PREFIX_FREE + free)))
        implicit = ABSENT if kind in EXTRA_KINDS else AS_REFERENCE
        yield ((root, rel), owner, state, _str(drift.get("scope")), implicit, path)


# ---- snapshots ------------------------------------------------------------------------------------

def _manifests(doc: dict[str, Any]) -> Iterator[tuple[str | None, dict[str, Any]]]:
    if "manifest_version" in doc:
        yield None, doc
        return
    roots = doc.get("roots")
    if doc.get("bundle_version") != BUNDLE_VERSION or not isinstance(roots, list):
        raise InputError("a snapshot bundle of an unknown version")
    for item in roots:
        if isinstance(item, dict) and isinstance(item.get("manifest"), dict):
            yield _str(item.get("kind")), item["manifest"]


def _snapshot_root_class(kind: str | None, manifest: dict[str, Any], taken: dict[str, str]) -> str | None:
    directory = _str(manifest.get("root"))
    files = manifest.get("files")
    if not directory or not isinstance(files, dict):
        return None
    if kind is None:  # a plain manifest: a venv's has pyvenv.cfg, or at least a site-packages
        kind = "venv" if "pyvenv.cfg" in files or _site_prefix(files) is not None else "model-dir"
    if kind == "venv":
        return VENV
    if kind == "site-packages":
        return SITE_PACKAGES
    return _model_root(directory, taken)


def snapshot_machine(index: int, name: str, doc: dict[str, Any], display: dict[str, str] | None = None) -> Machine:
    machine = Machine(index, name, InputKind.SNAPSHOT, hostname=_str(doc.get("hostname")), files=0, versions={},
                      display=display if display is not None else {})
    pythons = set()
    for kind, manifest in _manifests(doc):
        root = _snapshot_root_class(kind, manifest, machine.roots)
        if root is None:
            machine.skipped_entries += 1
            continue
        machine.roots[root] = manifest["root"]
        machine.hostname = machine.hostname or _str(manifest.get("hostname"))
        files = manifest["files"]
        machine.files = (machine.files or 0) + len(files)
        if root not in (VENV, SITE_PACKAGES):
            continue
        site = "" if root == SITE_PACKAGES else _site_prefix(files)
        if site is None:
            continue
        if site:
            machine.roots.setdefault(SITE_PACKAGES, manifest["root"].rstrip("/") + "/" + site.rstrip("/"))
            py = re.match(r"^(?:lib|lib64)/python(\d+\.\d+)", site)
            if py:
                pythons.add(py.group(1))
        own = _own_path(manifest) if root == VENV else {}
        for rel in files:
            if type(rel) is not str or "-info/" not in rel or not rel.startswith(site):
                continue
            m = _DIST_INFO_RE.match(rel[len(site):])
            if m and "/" not in m.group(1):
                _add_version(machine, m.group(1), m.group(2))
            elif rel.endswith("/RECORD"):
                _add_record_entry(machine, files, site, rel, own)
    if len(pythons) == 1:
        machine.python_version = pythons.pop()
    return machine


_RECORD_RE = re.compile(r"^([^/]+?)-([^/-]+)\.dist-info/RECORD$")


def _add_record_entry(machine: Machine, files: dict[str, Any], site: str, rel: str,
                      own: dict[str, tuple[str, str]]) -> None:
    """A snapshot's ``NAME-VERSION.dist-info/RECORD`` entry: its digest (prefix-free when the
    snapshot gives one: a console script's row holds the venv's path), beside its INSTALLER's."""
    inner = rel[len(site):]
    m = _RECORD_RE.match(inner)
    entry = files.get(rel)
    if m is None or type(entry) is not dict or entry.get("link") is not None:
        return
    digest = entry.get("xxh3_128")
    if type(digest) is not str:
        return
    key = canonical(m.group(1))
    free = own.get(rel)
    state = PREFIX_FREE + free[1] if free is not None and free[0] == digest else digest
    installer = files.get(rel[:-len("RECORD")] + "INSTALLER")
    installed_by = installer.get("xxh3_128") if type(installer) is dict else None
    found = RecordState(sys.intern(m.group(2)), state, {"xxh3_128": digest}, inner,
                        installed_by if type(installed_by) is str else "")
    if key in machine.records:  # two metadata directories of one name: no one RECORD to compare
        found = found._replace(state="")
    machine.records[key] = found


def _is_bytecode(rel: str) -> bool:
    # Compiled at install time with the source's mtime inside: never the same bytes on two
    # machines, and derived from the source file that is compared.
    return rel.endswith((".pyc", ".pyo")) and ("/__pycache__/" in rel or rel.startswith("__pycache__/"))


def _heads(files: dict[str, Any]) -> dict[str, str]:
    """The first path component each distribution owns in site-packages, from its metadata
    directory's name and its top_level.txt when the snapshot embedded it."""
    heads: dict[str, str] = {}
    for rel, entry in files.items():
        m = _DIST_INFO_RE.match(rel)
        if not m:
            continue
        owner = canonical(m.group(1))
        heads[rel.split("/", 1)[0]] = owner
        heads.setdefault(m.group(1).lower(), owner)
        heads.setdefault(m.group(1).lower().replace("-", "_"), owner)
        if rel.endswith("top_level.txt") and isinstance(entry, dict) and isinstance(entry.get("text"), str):
            for line in entry["text"].splitlines()[:1000]:
                line = line.strip().replace("\\", "/").split("/", 1)[0]
                if line:
                    heads[line] = owner
    return heads


def _site_prefix(files: dict[str, Any]) -> str | None:
    for rel in files:
        m = _SITE_RE.match(rel) if isinstance(rel, str) else None
        if m:
            return m.group(0)
    return None


def snapshot_facts(machine: Machine, doc: dict[str, Any]) -> Iterator[Fact]:
    taken: dict[str, str] = {}
    for kind, manifest in _manifests(doc):
        root = _snapshot_root_class(kind, manifest, taken)
        if root is None:
            continue
        taken[root] = manifest["root"]
        files = manifest["files"]
        python = root in (VENV, SITE_PACKAGES)
        site = "" if root == SITE_PACKAGES else _site_prefix(files) if python else None
        heads: dict[str, str] = {}
        if site is not None:
            heads = _heads({rel[len(site):]: entry for rel, entry in files.items()
                            if isinstance(rel, str) and rel.startswith(site) and ("-info/" in rel)})
        cut = len(site) if site else 0
        other_scope = "environment" if python else "data"
        own = _own_path(manifest) if root == VENV else {}
        for rel, entry in files.items():
            digest = entry.get("xxh3_128") if type(entry) is dict else None
            if type(digest) is not str or type(rel) is not str:
                machine.skipped_entries += 1
                continue
            link = entry.get("link")
            state = digest if link is None else f"link:{link}"
            free = own.get(rel) if own and link is None else None
            if site is not None and rel.startswith(site):
                inner = rel[cut:]
                if inner.endswith(".pyc") and "__pycache__/" in inner:
                    continue  # bytecode: see _is_bytecode
                head, sep, _ = inner.partition("/")
                owner = heads.get(head if sep else head.partition(".")[0])
                if free is not None and free[0] == digest and len(machine.own_path) < MAX_OWN_PATH:
                    machine.own_path.append(((SITE_PACKAGES, inner), state, PREFIX_FREE + free[1]))
                yield ((SITE_PACKAGES, inner), owner, state, "package" if owner else "environment", ABSENT, None)
            elif python and _is_bytecode(rel):
                continue
            else:
                if free is not None and free[0] == digest and len(machine.own_path) < MAX_OWN_PATH:
                    machine.own_path.append(((root, rel), state, PREFIX_FREE + free[1]))
                yield ((root, rel), None, state, other_scope, ABSENT, None)


def _own_path(manifest: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """A venv manifest's optional ``prefix_free``: relative path → (the digest it was read with,
    the digest without the root's path); nothing when the root is not a path that may be taken
    out (``/``, a short or relative one: a hostile manifest's way to make files look alike)."""
    raw = manifest.get("prefix_free")
    if not isinstance(raw, dict) or not usable_prefix(manifest.get("root")):
        return {}
    out: dict[str, tuple[str, str]] = {}
    for rel, item in raw.items():
        if len(out) >= MAX_OWN_PATH:
            break
        if type(rel) is str and isinstance(item, dict):
            plain, free = item.get("xxh3_128"), item.get("prefix_free_xxh3_128")
            if type(plain) is str and type(free) is str and _HEX32.fullmatch(plain) and _HEX32.fullmatch(free):
                out[rel] = (plain, free)
    return out


# ---- the input formats ----------------------------------------------------------------------


class InputFormat(NamedTuple):
    """One kind of ``compare`` input: how a document is recognised, read into a machine (its name,
    roots, versions) and into facts (one per file or distribution it speaks of)."""

    name: InputKind
    recognise: Callable[[dict[str, Any]], bool]
    machine: Callable[..., Machine]
    facts: Callable[[Machine, dict[str, Any]], Iterator[Fact]]


#: Every input format, tried in this order; a new one is registered here.
FORMATS: tuple[InputFormat, ...] = (
    InputFormat(InputKind.SNAPSHOT, _is_snapshot, snapshot_machine, snapshot_facts),
    InputFormat(InputKind.REPORT, _is_report, report_machine, report_facts),
)
BY_NAME = {fmt.name: fmt for fmt in FORMATS}
