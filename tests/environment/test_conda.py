"""conda prefixes installed for real with py-rattler (fixtures/conda.py), read by
``driftscan.environment.managers.conda`` and checked by ``driftscan.environment.managers.placeholders``.

Every prefix here was linked by rattler's installer from packages built in the test and indexed
into a local ``file://`` channel; hostile records are planted on top of such a prefix.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import os
import shutil
import threading
from pathlib import Path

import pytest
import rattler  # noqa: F401 - the real installer (the test extra): missing, these tests must fail, not skip

from driftscan.environment.managers import conda as discover_conda
from driftscan.environment.managers.conda import (
    INSTALLER,
    PixiEnvironment,
    is_conda_prefix,
    read_conda_prefix,
    tool_from_history,
)
from driftscan.environment.dists import find_distributions
from driftscan.fs.containment import Containment
from driftscan.environment.files import MISSING, MODIFIED, OK, TYPE_CHANGED, check_entry
from driftscan.environment.managers.placeholders import PRESENCE_ONLY, check_placeholder
from fixtures import conda as fx
from fixtures.harness import replace_by_rename

PACKAGES = {p.name: p for p in fx.demo_packages()}
RECORDS = sorted(p.record_name for p in PACKAGES.values())


@pytest.fixture(scope="module")
def channel(tmp_path_factory) -> Path:
    return fx.build_channel(tmp_path_factory.mktemp("conda-channel"))


def install(channel: Path, prefix: Path, cache: Path | None = None) -> Path:
    # Each prefix that a test edits gets its own package cache: rattler hard-links files from it,
    # so an edit in place would change the cache copy the other prefixes link.
    installed = fx.install(channel, prefix, ["demo-tools", "demo-py"], cache or prefix.parent / "pkgs")
    assert installed == RECORDS
    return prefix


@pytest.fixture(scope="module")
def pristine(channel, tmp_path_factory) -> Path:
    """A prefix nobody edits (read-only tests share it)."""
    return install(channel, tmp_path_factory.mktemp("pristine") / "env")


@pytest.fixture
def fresh(channel, tmp_path) -> Path:
    """A prefix of this test's own, to edit."""
    return install(channel, tmp_path / "env")


def read(prefix: Path):
    return read_conda_prefix(str(prefix), Containment([str(prefix)]))


def entries_by_path(parsed) -> dict[str, tuple]:
    return {os.path.join(parsed.prefix, e.path): (d, e) for d in parsed.distributions for e in d.entries}


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


# -- the records rattler writes ----------------------------------------------------------------


def test_records_of_a_rattler_prefix(pristine):
    assert is_conda_prefix(str(pristine))
    parsed = read(pristine)
    assert parsed.problems == ()
    assert parsed.tool == "conda"  # rattler leaves an empty history: nothing names another tool
    assert {(d.name, d.version, d.build) for d in parsed.distributions} == {
        ("python", "3.11.9", "h1234567_0_cpython"), ("demo-tools", "2.0.1", "h0a1b2c3_3"),
        ("demo-py", "1.4", "pyhd8ed1ab_0")}
    for dist in parsed.distributions:
        pkg = PACKAGES[dist.name]
        assert dist.metadata_dir == str(pristine / "conda-meta" / pkg.record_name)
        assert dist.site_packages == str(pristine) and dist.installer == INSTALLER == "conda"
        record = parsed.records[dist.metadata_dir]
        assert (record.name, record.version, record.build) == (dist.name, dist.version, dist.build)
        assert record.link_type == "hardlink" and not record.presence_only
        assert record.subdir == pkg.subdir and record.channel.startswith("file://")
    tools = next(d for d in parsed.distributions if d.name == "demo-tools")
    assert sorted(e.path for e in tools.entries) == sorted([*PACKAGES["demo-tools"].files,
                                                            *PACKAGES["demo-tools"].softlinks])


def test_hashes_and_sizes_are_the_installed_files(pristine):
    """Every hashed entry is the sha256 and size of the file rattler put there; the package's
    own files keep the package's hash, the generated entry point is hashed as written."""
    parsed = read(pristine)
    checked = 0
    for full, (dist, entry) in entries_by_path(parsed).items():
        if full in parsed.special:
            continue
        data = Path(full).read_bytes()
        assert entry.hash is not None and entry.hash.encoding == "hex", entry
        assert entry.hash.digest == sha256(data), entry.path
        if full not in parsed.placeholders:
            assert entry.size == len(data), entry.path
        checked += 1
    assert checked == 14
    demo_py = next(d for d in parsed.distributions if d.name == "demo-py")
    by_path = {e.path: e for e in demo_py.entries}
    # noarch: python files moved under the python record's site-packages
    init = by_path[f"{fx.SITE_PACKAGES}/demo_py/__init__.py"]
    assert init.hash.digest == sha256(fx.DEMO_PY_INIT) and init.size == len(fx.DEMO_PY_INIT)
    assert "bin/demo-py" in by_path  # the entry point rattler generated (unix_python_entry_point)


def test_placeholders_and_links_as_recorded(pristine):
    parsed = read(pristine)
    tools = PACKAGES["demo-tools"]
    assert set(parsed.placeholders) == {str(pristine / p) for p in tools.placeholders}
    for rel, mode in tools.placeholders.items():
        ph = parsed.placeholders[str(pristine / rel)]
        assert ph.placeholder == fx.PLACEHOLDER and ph.file_mode == mode
        assert ph.original_sha256 == sha256(tools.files[rel])  # the package's file, before linking
        assert ph.original_size == (len(tools.files[rel]) if mode == "binary" else None)
        installed = (pristine / rel).read_bytes()
        assert fx.PLACEHOLDER.encode() not in installed and str(pristine).encode() in installed
    links = {p: s for p, s in parsed.special.items()}
    assert set(links) == {str(pristine / "lib/libdemo.so"), str(pristine / "bin/python"), str(pristine / "bin/python3")}
    for path, special in links.items():
        assert special.path_type == "softlink" and os.path.islink(path)
        # rattler's sha256_in_prefix of a softlink is the sha256 of its target text
        assert special.link_sha256 == sha256(os.readlink(path).encode())
    entry = entries_by_path(parsed)[str(pristine / "lib/libdemo.so")][1]
    assert entry.hash is None and entry.size is None


def test_python_metadata_dirs_owned_by_conda_records(pristine):
    parsed = read(pristine)
    site = str(pristine / fx.SITE_PACKAGES)
    dist_info = os.path.join(site, "demo_py-1.4.dist-info")
    assert parsed.python_metadata_dirs == frozenset({dist_info})
    record = parsed.records[str(pristine / "conda-meta" / PACKAGES["demo-py"].record_name)]
    assert record.python_metadata_dirs == (dist_info,)
    # the dist-info the Python side finds is the one the conda record owns
    found = [m.path for m in find_distributions((site,), containment=Containment([str(pristine)]))]
    assert found == [dist_info]


def test_pristine_prefix_verifies_clean(pristine):
    """What a verifier does with these entries: every file ok, every placeholder file ok by
    sha256_in_prefix and by substituting the placeholder back."""
    parsed = read(pristine)
    links = Containment([str(pristine)])
    for full, (_, entry) in entries_by_path(parsed).items():
        if full in parsed.placeholders:
            ph = parsed.placeholders[full]
            assert check_placeholder(full, entry, ph, parsed.prefix).detail == "matches the record's sha256_in_prefix"
            result = check_placeholder(full, entry._replace(hash=None), ph, parsed.prefix)
            assert result.status == OK and result.content_checked, (full, result)
            assert "substituted back" in result.detail and f"{ph.file_mode} mode" in result.detail
        else:
            assert check_entry(full, entry, links=links).status == OK, full


# -- planted edits -------------------------------------------------------------------------------


def placeholder_of(parsed, rel: str):
    full = os.path.join(parsed.prefix, rel)
    return full, entries_by_path(parsed)[full][1]._replace(hash=None), parsed.placeholders[full]


@pytest.mark.parametrize("rel", ["etc/demo/config.ini", "bin/demo-script"])
def test_text_placeholder_edit_is_modified(fresh, rel):
    parsed = read(fresh)
    full, entry, ph = placeholder_of(parsed, rel)
    text = Path(full).read_text()
    replace_by_rename(Path(full), text.replace("\n", "\nimport pdb; pdb.set_trace()\n", 1))
    result = check_placeholder(full, entry, ph, parsed.prefix)
    assert result.status == MODIFIED and "text mode" in result.detail
    # with the record's sha256_in_prefix the verdict is the same
    assert check_placeholder(full, entries_by_path(parsed)[full][1], ph, parsed.prefix).status == MODIFIED


def test_binary_placeholder_edits_are_modified(fresh):
    parsed = read(fresh)
    full, entry, ph = placeholder_of(parsed, "lib/libdemo.so.2")
    original = Path(full).read_bytes()
    # one byte of code changed, same length
    edited = bytearray(original)
    edited[20] ^= 0xFF
    Path(full).write_bytes(bytes(edited))
    assert check_placeholder(full, entry, ph, parsed.prefix).status == MODIFIED
    # the rpath's padding overwritten: the C string is longer than the linker left it
    start = original.index(b"RPATH=") + len(b"RPATH=") + len(parsed.prefix) + len(b"/lib")
    assert original[start:start + 4] == b"\0\0\0\0"
    edited = bytearray(original)
    edited[start:start + 4] = b"/x:y"
    Path(full).write_bytes(bytes(edited))
    assert check_placeholder(full, entry, ph, parsed.prefix).status == MODIFIED
    # a byte appended: binary-mode linking keeps the length, decided without substituting
    Path(full).write_bytes(original + b"\0")
    result = check_placeholder(full, entry, ph, parsed.prefix)
    assert result.status == MODIFIED and "keeps its length" in result.detail
    Path(full).write_bytes(original)
    assert check_placeholder(full, entry, ph, parsed.prefix).status == OK


def test_placeholder_file_missing_or_replaced(fresh):
    parsed = read(fresh)
    full, entry, ph = placeholder_of(parsed, "etc/demo/config.ini")
    os.unlink(full)
    assert check_placeholder(full, entry, ph, parsed.prefix).status == MISSING
    os.symlink("/etc/hostname", full)  # never followed
    assert check_placeholder(full, entry, ph, parsed.prefix).status == TYPE_CHANGED


def test_hardlinked_file_edit_and_deletion(fresh):
    parsed = read(fresh)
    links = Containment([str(fresh)])
    by_path = entries_by_path(parsed)
    data = fresh / "share/demo/data.txt"
    replace_by_rename(data, "plain data, edited\n")
    assert check_entry(str(data), by_path[str(data)][1], links=links).status == MODIFIED
    init = fresh / fx.SITE_PACKAGES / "demo_py/__init__.py"
    init.unlink()
    assert check_entry(str(init), by_path[str(init)][1], links=links).status == MISSING


def test_long_prefix_shebangs_rattler_rewrites(channel, tmp_path):
    """A prefix so long that ``#!<prefix>/bin/python3.11`` passes Linux's 127 bytes: rattler
    writes a ``/bin/sh`` exec line for Python and ``/usr/bin/env`` for the rest; both are
    substituted back."""
    prefix = install(channel, tmp_path / ("p" * 120) / "env")
    parsed = read(prefix)
    assert (prefix / "bin/demo-script").read_bytes().startswith(b"#!/bin/sh\n'''exec' \"")
    assert (prefix / "bin/demo-sh").read_bytes().startswith(b"#!/usr/bin/env bash -e\n")
    for rel, how in (("bin/demo-script", "/bin/sh exec"), ("bin/demo-sh", "/usr/bin/env")):
        full, entry, ph = placeholder_of(parsed, rel)
        result = check_placeholder(full, entry, ph, parsed.prefix)
        assert result.status == OK and how in result.detail, result
        replace_by_rename(Path(full), Path(full).read_text() + "echo debug\n")
        assert check_placeholder(full, entry, ph, parsed.prefix).status == MODIFIED


def test_moved_prefix_is_presence_only_unless_the_old_prefix_is_known(channel, tmp_path):
    old = install(channel, tmp_path / "old" / "env")
    new = tmp_path / "new"
    os.rename(old, new)
    parsed = read(new)
    full, entry, ph = placeholder_of(parsed, "etc/demo/config.ini")
    result = check_placeholder(full, entry, ph, parsed.prefix)
    assert result.status == OK and not result.content_checked and result.detail.startswith(PRESENCE_ONLY)
    assert "moved" in result.detail
    result = check_placeholder(full, entry, ph, parsed.prefix, also=(str(old),))
    assert result.status == OK and result.content_checked
    # the file still is what was linked at the old prefix: sha256_in_prefix says so
    recorded = entries_by_path(parsed)[full][1]
    assert check_placeholder(full, recorded, ph, parsed.prefix).detail == "matches the record's sha256_in_prefix"


def test_relocated_prefix_with_rewritten_files(channel, tmp_path):
    """A prefix moved and its files rewritten for the new path, as conda-unpack does: the
    record's sha256_in_prefix is the old one's, substituting back at the new prefix decides."""
    old = install(channel, tmp_path / "old" / "env")
    new = tmp_path / "relocated"
    os.rename(old, new)
    config = new / "etc/demo/config.ini"
    replace_by_rename(config, config.read_text().replace(str(old), str(new)))
    parsed = read(new)
    full, _, ph = placeholder_of(parsed, "etc/demo/config.ini")
    result = check_placeholder(full, entries_by_path(parsed)[full][1], ph, parsed.prefix)
    assert result.status == OK and "relocated" in result.detail


def test_symlinked_prefix_substitutes_its_real_path(pristine, tmp_path):
    alias = tmp_path / "alias"
    alias.symlink_to(pristine)
    parsed = read(alias)
    full, entry, ph = placeholder_of(parsed, "etc/demo/config.ini")
    result = check_placeholder(full, entry, ph, str(alias))
    assert result.status == OK and os.path.realpath(pristine) in result.detail


# -- records older or other installers write ------------------------------------------------------


def rewrite_record(prefix: Path, name: str, change) -> Path:
    path = prefix / "conda-meta" / PACKAGES[name].record_name
    record = json.loads(path.read_text())
    change(record)
    path.write_text(json.dumps(record))
    return path


def test_record_without_sha256_in_prefix(fresh):
    """conda before sha256_in_prefix (and a rattler record edited so): the placeholder files
    have no installed hash, and substituting back is what decides."""
    def drop(record):
        for p in record["paths_data"]["paths"]:
            p.pop("sha256_in_prefix", None)

    rewrite_record(fresh, "demo-tools", drop)
    parsed = read(fresh)
    assert parsed.problems == ()
    for full, ph in parsed.placeholders.items():
        entry = entries_by_path(parsed)[full][1]
        assert entry.hash is None and entry.size is None
        assert check_placeholder(full, entry, ph, parsed.prefix).content_checked
    assert parsed.special[str(fresh / "lib/libdemo.so")].link_sha256 is None


def test_record_with_files_only_and_a_directory_entry(fresh):
    record = rewrite_record(fresh, "python", lambda r: r.pop("paths_data"))

    def add_directory(r):
        r["paths_data"]["paths"].append({"_path": "share/demo/empty", "path_type": "directory"})

    rewrite_record(fresh, "demo-tools", add_directory)
    parsed = read(fresh)
    assert parsed.problems == ()
    python = next(d for d in parsed.distributions if d.name == "python")
    assert parsed.records[str(record)].presence_only
    assert sorted(e.path for e in python.entries) == sorted(json.loads(record.read_text())["files"])
    assert all(e.hash is None and e.size is None for e in python.entries)
    assert parsed.special[str(fresh / "share/demo/empty")].path_type == "directory"


# -- hostile records ---------------------------------------------------------------------------------


@pytest.fixture
def outside(tmp_path) -> Path:
    """A valid record outside the prefix: if anything followed a path there, "stolen" would
    become a distribution."""
    path = tmp_path / "outside" / "stolen-1.0-0.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"name": "stolen", "version": "1.0", "build": "0", "files": ["bin/x"]}))
    return path


class Opened:
    """Every path opened, listed or scanned while it is active."""

    def __init__(self, monkeypatch):
        self.paths: list[str] = []
        self.lock = threading.Lock()
        for module, name in ((os, "open"), (os, "scandir"), (os, "listdir"), (builtins, "open")):
            real = getattr(module, name)
            monkeypatch.setattr(module, name, self.wrap(real))

    def wrap(self, real):
        def call(path=".", *args, **kwargs):
            if isinstance(path, (str, bytes, os.PathLike)):
                with self.lock:
                    self.paths.append(os.fsdecode(path))
            return real(path, *args, **kwargs)
        return call

    def outside(self, root: Path) -> list[str]:
        real_root = os.path.realpath(root)
        return [p for p in self.paths if not (os.path.realpath(p) + os.sep).startswith(real_root + os.sep)]


def plant(prefix: Path, name: str, content) -> Path:
    path = prefix / "conda-meta" / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def good(name: str, **extra) -> dict:
    return {"name": name, "version": "1.0", "build": "h0_0", **extra}


def problems_of(parsed, path: Path) -> list[str]:
    return [p.message for p in parsed.problems if p.path == str(path)]


def assert_rest_intact(parsed):
    assert {d.name for d in parsed.distributions} >= {"python", "demo-tools", "demo-py"}
    assert "stolen" not in {d.name for d in parsed.distributions}


def test_hostile_paths_each_fail_alone(fresh, outside, monkeypatch):
    paths = [
        {"_path": "../outside/stolen-1.0-0.json", "path_type": "hardlink", "sha256": "0" * 64},
        {"_path": str(outside), "path_type": "hardlink"},
        {"_path": "bin/a\0b", "path_type": "hardlink"},
        {"_path": "bin/../../outside/x", "path_type": "hardlink"},
        {"_path": "C:/Windows/win.ini"},
        {"_path": 7},
        "not an object",
        {"_path": "bin/bad-hash", "sha256": 12},
        {"_path": "bin/bad-size", "sha256": "ab" * 32, "size_in_bytes": "12"},
        {"_path": "bin/negative", "size_in_bytes": -1},
        {"_path": "bin/bool-size", "size_in_bytes": True},
        {"_path": "bin/bad-mode", "prefix_placeholder": "/x", "file_mode": "octal"},
        {"_path": "bin/ok", "path_type": "hardlink", "sha256": "ab" * 32, "size_in_bytes": 3},
    ]
    record = plant(fresh, "evil-1.0-h0_0.json",
                   good("evil", files=["../../etc/passwd", "/etc/shadow", None, "bin/ok"],
                        paths_data={"paths_version": 1, "paths": paths}))
    opened = Opened(monkeypatch)
    parsed = read(fresh)
    monkeypatch.undo()
    assert opened.outside(fresh) == []
    evil = next(d for d in parsed.distributions if d.name == "evil")
    assert sorted(e.path for e in evil.entries) == ["bin/bad-hash", "bin/bad-mode", "bin/bad-size", "bin/bool-size",
                                                     "bin/negative", "bin/ok"]
    kept = {e.path: e for e in evil.entries}
    assert kept["bin/ok"].hash.digest == bytes.fromhex("ab" * 32) and kept["bin/ok"].size == 3
    assert all(kept[p].hash is None and kept[p].size is None for p in kept if p != "bin/ok")
    messages = problems_of(parsed, record)
    assert len(messages) == 15, messages
    for needle in ("'..' part", "an absolute path", "NUL byte", "not a string but int", "not an object but str",
                   "not a hex sha256", "not a size", "cannot be substituted back", "not a string but null"):
        assert any(needle in m for m in messages), needle
    assert_rest_intact(parsed)


@pytest.mark.parametrize("content, needle", [
    ("{not json", "not valid JSON"),
    ("[" * 100_000 + "]" * 100_000, "nested too deep"),
    ([1, 2, 3], "not a JSON object but list"),
    ({"name": 3, "version": "1", "build": "0"}, "its name is not a conda name (int)"),
    ({"name": "x", "version": "1 ; rm -rf /", "build": "0"}, "its version is not a conda version"),
    ({"name": "x", "version": "1", "build": None}, "its build is not a conda build (null)"),
    ({"name": "numpy\n", "version": "1", "build": "0"}, "its name is not a conda name"),  # no newline into a remedy
    (good("x", paths_data=[]), "paths_data is not an object but list"),
    (good("x", paths_data={"paths_version": 2, "paths": []}), "paths_version 2"),
    (good("x", paths_data={"paths": {"a": 1}}), "paths_data.paths is not a list"),
    (good("x", files={"a": 1}), "files is not a list but dict"),
    ('{"name": "x", "version": "1", "build": "0", "size": 1' + "0" * 5000 + "}", "not valid JSON"),
])
def test_malformed_records_each_fail_alone(fresh, content, needle):
    record = plant(fresh, "bad-1-0.json", content)
    parsed = read(fresh)
    messages = problems_of(parsed, record)
    assert any(needle in m for m in messages), messages
    assert_rest_intact(parsed)


def test_huge_record_is_refused_unread(fresh, monkeypatch):
    record = fresh / "conda-meta" / "huge-1-0.json"
    with open(record, "wb") as f:
        f.write(b'{"name": "huge", "version": "1", "build": "0", "files": ["' + b"a" * (50 << 20) + b'"]}')
    reads: list[int] = []
    real_read = os.read

    def counted(fd, n):
        data = real_read(fd, n)
        reads.append(len(data))
        return data

    monkeypatch.setattr(os, "read", counted)
    parsed = read(fresh)
    monkeypatch.undo()
    assert any("more than the" in m and "conda record" in m for m in problems_of(parsed, record))
    assert sum(reads) < 1 << 20  # the other records only: the 50 MB one is refused before any read
    assert_rest_intact(parsed)


def test_symlinked_and_special_records_are_not_followed(fresh, outside, monkeypatch):
    meta = fresh / "conda-meta"
    (meta / "stolen-1.0-0.json").symlink_to(outside)  # out of the prefix
    (meta / "alias-2.0.1-h0a1b2c3_3.json").symlink_to(meta / PACKAGES["demo-tools"].record_name)  # inside
    os.mkfifo(meta / "fifo-1-0.json")  # would block an open without O_NONBLOCK
    (meta / "dir-1-0.json").mkdir()
    opened = Opened(monkeypatch)
    parsed = read(fresh)
    monkeypatch.undo()
    assert opened.outside(fresh) == []
    for name, needle in (("stolen-1.0-0.json", "not followed"), ("alias-2.0.1-h0a1b2c3_3.json", "a symlink"),
                         ("fifo-1-0.json", "not a regular file"), ("dir-1-0.json", "not a regular file")):
        assert any(needle in m for m in problems_of(parsed, meta / name)), name
    assert_rest_intact(parsed)
    assert len(parsed.distributions) == 3


def test_conda_meta_linked_out_of_the_prefix(fresh, outside, monkeypatch):
    shutil.rmtree(fresh / "conda-meta")
    (fresh / "conda-meta").symlink_to(outside.parent)
    assert is_conda_prefix(str(fresh))
    opened = Opened(monkeypatch)
    parsed = read(fresh)
    monkeypatch.undo()
    assert opened.outside(fresh) == []
    assert parsed.distributions == () and len(parsed.problems) == 1
    assert "outside" in parsed.problems[0].message


def test_duplicate_paths_with_different_hashes(fresh):
    record = plant(fresh, "dup-1.0-h0_0.json", good("dup", paths_data={"paths": [
        {"_path": "bin/d", "sha256": "ab" * 32, "size_in_bytes": 3},
        {"_path": "bin/d", "sha256": "cd" * 32, "size_in_bytes": 3}]}))
    parsed = read(fresh)
    dup = next(d for d in parsed.distributions if d.name == "dup")
    assert [(e.path, e.hash) for e in dup.entries] == [("bin/d", None)]
    assert any("listed twice" in m for m in problems_of(parsed, record))


def test_too_many_problems_are_counted_not_listed(fresh):
    record = plant(fresh, "many-1.0-h0_0.json", good("many", paths_data={"paths": [{"_path": "/abs"}] * 500}))
    messages = problems_of(read(fresh), record)
    assert len(messages) == discover_conda.MAX_ISSUES + 1 and "400 more problems" in messages[-1]


# -- which tool made the prefix ----------------------------------------------------------------------


CONDA_HISTORY = """==> 2024-05-31 10:00:00 <==
# cmd: /opt/conda/bin/conda create -y -p /opt/conda/envs/x python=3.11
# conda version: 24.5.0
+conda-forge/linux-64::python-3.11.9-hb806964_0_cpython
# update specs: ['python=3.11']
"""


@pytest.mark.parametrize("history, tool", [
    (CONDA_HISTORY, "conda"),
    (CONDA_HISTORY + "==> 2024-06-01 <==\n# cmd: /opt/conda/bin/mamba install -y numpy\n# conda version: 24.5.0\n",
     "mamba"),  # mamba 1.x: conda's History, mamba's argv; the last command counts
    ("==> 2021-11-29 11:06:19 <==\n# cmd: mamba\n# conda version: 3.8.0\n+https://conda.anaconda.org/x::y-1-0\n",
     "mamba"),  # libmamba's own
    ("==> 2025-01-01 <==\n# cmd: /usr/local/bin/micromamba create -n x -c conda-forge python\n"
     "# conda version: 3.8.0\n", "micromamba"),
    ("==> 2025-01-01 <==\n# cmd: C:\\ProgramData\\miniconda3\\Scripts\\conda-script.py install x\n", "conda"),
    ("==> 2025-01-01 <==\n# cmd: /opt/conda/lib/python3.11/site-packages/conda/__main__.py install x\n", "conda"),
    ("==> 2025-01-01 <==\n# cmd: /opt/conda/bin/python -m conda install x\n", "conda"),
    ("// not relevant for pixi but for `conda run -p`", "pixi"),
    ("==> 2025-01-01 <==\n# cmd: constructor --output-dir x\n", None),
    ("", None),
])
def test_tool_from_history(history, tool):
    assert tool_from_history(history) == tool


def test_history_names_the_tool_of_a_real_prefix(fresh):
    history = fresh / "conda-meta" / "history"
    assert history.read_text() == ""  # what rattler writes
    history.write_text(CONDA_HISTORY + "==> 2024-06-01 <==\n# cmd: micromamba install -y numpy\n")
    assert read(fresh).tool == "micromamba"
    # a long history: only its tail is read, and the last command is there
    history.write_text(CONDA_HISTORY * 40_000 + "==> 2024-06-02 <==\n# cmd: /opt/conda/bin/mamba update x\n")
    assert history.stat().st_size > 2 * discover_conda.HISTORY_TAIL
    assert read(fresh).tool == "mamba"


def test_pixi_markers(fresh):
    meta = fresh / "conda-meta"
    (meta / "history").write_text("// not relevant for pixi but for `conda run -p`")
    (meta / "pixi").write_text(json.dumps({"manifest_path": "/work/pixi.toml", "environment_name": "default",
                                           "pixi_version": "0.50.0", "environment_lock_file_hash": "abc"}))
    (meta / "pixi_env_prefix").write_text("/work/.pixi/envs/default")
    parsed = read(fresh)
    assert parsed.tool == "pixi" and parsed.problems == ()
    assert parsed.pixi == PixiEnvironment("default", "/work/pixi.toml", "0.50.0")
    assert parsed.recorded_prefix == "/work/.pixi/envs/default"
    # pixi's files are not package records
    assert {d.name for d in parsed.distributions} == {"python", "demo-tools", "demo-py"}


def test_hostile_history_and_markers(fresh, outside):
    meta = fresh / "conda-meta"
    (meta / "history").unlink()
    os.mkfifo(meta / "history")
    (meta / "pixi").symlink_to(outside)
    (meta / "pixi_env_prefix").write_text("relative\0path")
    parsed = read(fresh)
    assert parsed.tool == "pixi" and parsed.pixi is None and parsed.recorded_prefix is None
    assert any("not a regular file" in m for m in problems_of(parsed, meta / "history"))
    assert any("not followed" in m for m in problems_of(parsed, meta / "pixi"))
    assert_rest_intact(parsed)


def test_is_conda_prefix(tmp_path, pristine):
    assert is_conda_prefix(str(pristine))
    assert not is_conda_prefix(str(tmp_path))
    (tmp_path / "conda-meta").mkdir()
    assert not is_conda_prefix(str(tmp_path))  # an empty conda-meta is not a prefix's
    (tmp_path / "conda-meta" / "history").write_text("")
    assert is_conda_prefix(str(tmp_path))
    other = tmp_path / "other"
    (other / "conda-meta").mkdir(parents=True)
    (other / "conda-meta" / "x-1-0.json").write_text("{}")
    assert is_conda_prefix(str(other))
    (tmp_path / "file").mkdir()
    (tmp_path / "file" / "conda-meta").write_text("")
    assert not is_conda_prefix(str(tmp_path / "file"))
