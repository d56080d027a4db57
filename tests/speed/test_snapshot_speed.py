"""snapshot / diff fast paths: one walk, one lstat per file, signatures trusted, the
manifest loaded fast — and none of it changing what diff reports."""

from __future__ import annotations

import enum
import json
import os
import shutil
import stat
import subprocess
import time
from collections.abc import Callable

import pytest

from driftscan.caches import racy

from driftscan.formats import manifest as M
from driftscan.api import diff, snapshot
from driftscan.core.values import Problem
from driftscan.fs.reader import walk
from driftscan.snapshot import run as S
from driftscan.snapshot import treeindex as T
from fixtures.harness import settle, run_cli

OLD = time.time_ns() - 3600 * 10**9  # an hour ago: far outside the racy window of any snapshot


def make_tree(root, n: int = 60):
    """A model directory of small files, every mtime an hour old, with a symlink and a subdirectory."""
    root.mkdir()
    (root / "config.json").write_text(json.dumps({"hidden_size": 64, "layers": 2}))
    (root / "sub").mkdir()
    for i in range(n):
        (root / ("sub" if i % 2 else ".") / f"f{i:03d}.bin").write_bytes(os.urandom(100 + i))
    (root / "script.py").write_text("print('hi')\n")
    (root / "link.json").symlink_to("config.json")
    for path in root.rglob("*"):
        if not path.is_symlink():
            os.utime(path, ns=(OLD, OLD))
    settle(root)  # the ctimes (which no utime sets back) outside the racy window too
    return root


def drifts(report) -> set[tuple[str, str]]:
    return {(d.relpath, d.kind.value) for d in report.drifts}


def same_size_edit_mtime_restored(path) -> None:
    st = os.stat(path)
    data = bytearray(path.read_bytes())
    data[0] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # what `touch -d` does
    assert os.stat(path).st_size == st.st_size and os.stat(path).st_mtime_ns == st.st_mtime_ns


def test_trusted_diff_reports_the_drift_a_full_hash_diff_reports(tmp_path):
    root = make_tree(tmp_path / "m")
    snap = tmp_path / "snap.json"
    assert snapshot(str(snap), model_dirs=[str(root)]) == []
    assert isinstance(json.loads(snap.read_text())["started_ns"], int)
    (root / "f000.bin").write_bytes(b"changed and longer than before" * 10)  # modified (size)
    (root / "sub" / "f001.bin").unlink()  # missing
    (root / "added.txt").write_text("new\n")  # added
    os.chmod(root / "script.py", 0o755)  # mode
    (root / "link.json").unlink()
    (root / "link.json").symlink_to("f002.bin")  # a changed symlink
    (root / "config.json").write_text(json.dumps({"hidden_size": 128, "layers": 2}))  # modified, new mtime
    trusted = diff(str(snap))
    full = diff(str(snap), use_cache=False)
    assert drifts(trusted) == drifts(full) == {
        ("f000.bin", "modified"), ("sub/f001.bin", "missing"), ("added.txt", "added"),
        ("script.py", "modified"), ("link.json", "modified"), ("config.json", "modified")}
    assert [d.model_dump() for d in trusted.drifts] == [d.model_dump() for d in full.drifts]
    assert trusted.summary.files_checked == full.summary.files_checked
    assert full.summary.trusted_by_signature == 0
    unchanged = 60 - 2  # f000 and f001 changed; every other .bin matches its signature
    assert trusted.summary.trusted_by_signature == unchanged


def test_an_edit_with_size_and_mtime_restored_is_caught_by_its_ctime(tmp_path):
    # `touch -d` restores the mtime, never the ctime: the signature recorded with it is not fooled.
    root = make_tree(tmp_path / "m")
    snap = tmp_path / "snap.json"
    assert run_cli("snapshot", "--model-dir", str(root), "-o", str(snap)).returncode == 0
    clean = json.loads(run_cli("diff", str(snap), "--format", "json").stdout)["summary"]
    files = 60 + 3  # the .bin files, config.json, script.py and the symlink
    assert clean["drifts"] == 0 and clean["files_checked"] == files
    assert clean["trusted_by_signature"] == 60 + 2  # all but the symlink (compared by target, not hashed)
    text = run_cli("diff", str(snap))
    assert text.returncode == 0
    assert "62 of 63 files trusted by signature" in text.stderr and "--no-cache" in text.stderr
    same_size_edit_mtime_restored(root / "sub" / "f003.bin")
    for extra in ((), ("--no-cache",)):
        done = run_cli("diff", str(snap), "--format", "json", *extra)
        assert done.returncode == 1, done.stderr
        report = json.loads(done.stdout)
        assert [(d["relpath"], d["kind"]) for d in report["drifts"]] == [("sub/f003.bin", "modified")]
        assert report["summary"]["trusted_by_signature"] == (0 if extra else 60 + 1)


def test_an_entry_without_ctime_is_never_trusted(tmp_path):
    root = make_tree(tmp_path / "m")
    snap = tmp_path / "snap.json"
    assert snapshot(str(snap), model_dirs=[str(root)]) == []
    doc = json.loads(snap.read_text())
    for entry in doc["files"].values():
        entry.pop("ctime_ns", None)
    snap.write_text(json.dumps(doc))
    report = diff(str(snap))
    assert report.summary.trusted_by_signature == 0 and drifts(report) == set()


def test_a_file_changed_within_the_racy_window_is_hashed(tmp_path):
    root = make_tree(tmp_path / "m")
    fresh = root / "fresh.bin"
    fresh.write_bytes(b"x" * 500)  # mtime: now, as the snapshot starts
    snap = tmp_path / "snap.json"
    assert snapshot(str(snap), model_dirs=[str(root)]) == []
    same_size_edit_mtime_restored(fresh)  # same size, same mtime: only its age says "do not trust"
    report = diff(str(snap))
    assert drifts(report) == {("fresh.bin", "modified")}


def test_a_manifest_without_started_ns_trusts_nothing(tmp_path):
    root = make_tree(tmp_path / "m")
    snap = tmp_path / "snap.json"
    assert snapshot(str(snap), model_dirs=[str(root)]) == []
    doc = json.loads(snap.read_text())
    del doc["started_ns"]  # as written before signatures were recorded for trust
    snap.write_text(json.dumps(doc))
    same_size_edit_mtime_restored(root / "f002.bin")
    report = diff(str(snap))
    assert report.summary.trusted_by_signature == 0
    assert drifts(report) == {("f002.bin", "modified")}


def _count_stats(monkeypatch, root: str) -> dict[str, int]:
    counts = {"lstat": 0, "stat": 0}
    real_lstat, real_stat = os.lstat, os.stat

    def counting(name, real):
        def call(path, *args, **kwargs):
            text = os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else ""
            if text.startswith(root + os.sep):
                counts[name] += 1
            return real(path, *args, **kwargs)
        return call

    monkeypatch.setattr(os, "lstat", counting("lstat", real_lstat))
    monkeypatch.setattr(os, "stat", counting("stat", real_stat))
    return counts


@pytest.mark.parametrize("use_cache", [True, False])
def test_diff_takes_one_lstat_per_file(tmp_path, monkeypatch, use_cache):
    root = make_tree(tmp_path / "m", n=200)
    (root / "link.json").unlink()  # regular files only: each costs the walk's lstat and nothing more
    snap = tmp_path / "snap.json"
    assert snapshot(str(snap), model_dirs=[str(root)]) == []
    files = sum(1 for p in root.rglob("*") if p.is_file())
    counts = _count_stats(monkeypatch, str(root))
    report = diff(str(snap), use_cache=use_cache)
    monkeypatch.undo()
    assert report.summary.drifts == 0 and report.summary.files_checked == files
    assert counts["lstat"] == files  # one each (the old diff made four stat calls per file)
    assert counts["stat"] <= 2  # the tree's own pyvenv.cfg test, nothing per file


def test_snapshot_takes_one_lstat_per_file(tmp_path, monkeypatch):
    root = make_tree(tmp_path / "m", n=200)
    (root / "link.json").unlink()
    files = sum(1 for p in root.rglob("*") if p.is_file())
    counts = _count_stats(monkeypatch, str(root))
    assert snapshot(str(tmp_path / "snap.json"), model_dirs=[str(root)]) == []
    monkeypatch.undo()
    assert counts["lstat"] == files and counts["stat"] <= 2  # the root's own checks, nothing per file


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_diff_cli_stat_system_calls_strace(tmp_path):
    """The same, counted by the kernel: the CLI stats each file once, with its forked helpers
    (9,000 files: the walk and the hashing are shared with a child, driftscan.snapshot.run)."""
    root = tmp_path / "m"
    for d in range(300):  # directories enough to share the walk out
        (root / f"d{d:03d}").mkdir(parents=True)
        for f in range(30):
            (root / f"d{d:03d}" / f"f{f}.txt").write_text(f"{d} {f}\n")
    for path in root.rglob("*"):
        os.utime(path, ns=(OLD, OLD))
    settle(root)  # every file trusted by its signature in the diffs below
    snap = tmp_path / "snap.json"
    assert run_cli("snapshot", "--model-dir", str(root), "-o", str(snap)).returncode == 0
    files, dirs = 9000, 300
    log = tmp_path / "strace.log"

    def traced(*extra: str, calls: str = "stat,lstat,newfstatat,statx") -> list[str]:
        proc = subprocess.run(["strace", "-f", "-qq", "-e", f"trace={calls}", "-o", str(log),
                               *run_cli_args("diff", str(snap), "-q", *extra)], check=False, capture_output=True,
                              text=True, env={**os.environ, "DRIFTSCAN_CACHE_DIR": str(tmp_path / "cache")})
        assert proc.returncode == 0, proc.stderr[-2000:]
        lines = log.read_text().splitlines()
        under = [line for line in lines if f'"{root}/' in line and "AT_EMPTY_PATH" not in line]
        assert len({line.split()[0] for line in under}) == 2, (extra, len(under), under[:3])  # shared with a child
        return under

    # A snapshot written just now: no diff index.
    under = traced()
    assert files <= len(under) <= files + 2, "\n".join(under[:20])  # + the root's own checks
    # Without trust every file is read: its open (no symlink followed) and fstat stand for the lstat.
    under = traced("--no-cache", calls="stat,lstat,newfstatat,statx,openat")
    stats = [line for line in under if "openat(" not in line]
    opened = [line for line in under if "openat(" in line and "O_DIRECTORY" not in line]
    assert len(stats) <= 2, "\n".join(stats[:20])  # the root's own checks
    assert len(opened) == files and all("O_NOFOLLOW" in line and "O_NONBLOCK" in line for line in opened)
    # Older than the racy window: the full walk also takes each directory's stat (for the diff
    # index), and the next diff takes those and the files' lstats, listing no directory.
    time.sleep(max(0.0, (os.stat(snap).st_ctime_ns + 2_100_000_000) / 1e9 - time.time()))
    for run in ("writes the index", "uses it"):
        under = traced()
        assert files + dirs <= len(under) <= files + dirs + 2, (run, len(under))
        assert not (tmp_path / "cache" / "diffindex").is_dir() or run == "uses it" or \
            len(list((tmp_path / "cache" / "diffindex").iterdir())) == 1
    assert len(list((tmp_path / "cache" / "diffindex").iterdir())) == 1


def run_cli_args(*args: str) -> list[str]:
    import sys
    return [sys.executable, "-m", "driftscan", *args]


# ---- the manifest's fast paths change nothing --------------------------------------------------

def walk_relative(root: str, skip: Callable[[str], bool] = lambda rel: False) -> tuple[list[str], list[Problem]]:
    """The reference listing ``scan_tree`` must agree with: every non-directory entry under ``root`` as a "/"-separated relative path, sorted; symlinks
    (to directories too) are entries, never followed; ``skip(rel)`` leaves a file or a whole
    directory out. A directory that cannot be listed is a Problem; the walk goes on."""
    found: list[str] = []
    problems: list[Problem] = []

    def onerror(exc: OSError) -> None:
        problems.append(Problem(exc.filename or root, f"cannot list directory: {exc.strerror or exc}"))

    for dirpath, dirnames, filenames in walk(root, onerror=onerror):
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        prefix = "" if rel_dir == "." else rel_dir + "/"
        kept = []
        for name in dirnames:
            rel = prefix + name
            if skip(rel):
                continue
            if os.path.islink(os.path.join(dirpath, name)):
                found.append(rel)  # a symlink to a directory is an entry, not a place to descend
            else:
                kept.append(name)
        dirnames[:] = kept
        found.extend(prefix + name for name in filenames if not skip(prefix + name))
    return sorted(found), problems


def test_scan_tree_lists_what_walk_relative_lists(tmp_path):
    root = make_tree(tmp_path / "m")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("x")
    (root / "sub" / ".git").write_text("gitdir: elsewhere")
    (root / ".cache" / "huggingface" / "download").mkdir(parents=True)
    (root / ".cache" / "other").write_text("kept")
    (root / M.MANIFEST_NAME).write_text("{}")
    (root / "sub" / M.MANIFEST_NAME).write_text("{}")  # only the top one is bookkeeping
    (root / "dirlink").symlink_to("sub")
    (root / "dangling").symlink_to("nowhere")
    os.mkfifo(root / "fifo")
    locked = root / "locked"
    locked.mkdir()
    (locked / "x").write_text("x")
    os.chmod(locked, 0)
    try:
        found, problems = M.scan_tree(str(root))
        want, want_problems = walk_relative(str(root), skip=M.is_bookkeeping)
        assert sorted(found) == want
        assert M.walk_tree(str(root)) == (want, want_problems)
        assert sorted((p.path, p.message) for p in problems) == sorted((p.path, p.message) for p in want_problems)
        assert all(st is not None and st.st_mode == os.lstat(root / rel).st_mode for rel, st in found.items())
    finally:
        os.chmod(locked, 0o755)


def test_member_lines_are_what_json_dumps_writes():
    names = ["a", "dir/file.py", 'q"uote', "back\\slash", "tab\tname", "del\x7f", "é", "\udcff", "sp ace", "~{}[]"]
    entries = [M.ManifestEntry("0" * 32, 1, 0o100644, 2), M.ManifestEntry("f" * 32, 0, 0o120777, 3, None, "t"),
               M.ManifestEntry("a" * 32, 5, 0o100755, 4, "text\n\"é", None)]
    for name in names:
        for entry in entries:
            assert M.format_member(name, entry) == f"{json.dumps(name)}: {json.dumps(entry.to_json(), sort_keys=True)}"


class Small(enum.IntEnum):
    ONE = 1


def _hostile_docs():
    good = {"xxh3_128": "0" * 32, "size": 1, "mode": 0o100644, "mtime_ns": 5}
    base = {"manifest_version": "1", "tool": "driftscan", "created": "2026-01-01T00:00:00+00:00", "root": "/r"}
    files_variants = [
        {"a": good}, {"": good}, {"/abs": good}, {"a//b": good}, {"a/./b": good}, {"a/../b": good}, {"a/": good},
        {"a\\b": good}, {"a\0b": good}, {"\ud800x": good}, {"\udcffx/y": good}, {"é/ü": good}, {"x/\ud800": good},
        {"a": []}, {"a": None}, {"a": {**good, "xxh3_128": "A" * 32}}, {"a": {**good, "xxh3_128": "0" * 31}},
        {"a": {**good, "xxh3_128": "0" * 33}}, {"a": {**good, "xxh3_128": 5}}, {"a": {**good, "xxh3_128": "g" * 32}},
        {"a": {**good, "size": True}}, {"a": {**good, "size": -1}}, {"a": {**good, "size": 1 << 63}},
        {"a": {**good, "size": 1.0}}, {"a": {**good, "mode": 1 << 32}}, {"a": {**good, "mtime_ns": "5"}},
        {"a": {**good, "size": Small.ONE}}, {"a": {k: v for k, v in good.items() if k != "mode"}},
        {"a": {**good, "text": None}}, {"a": {**good, "text": 5}}, {"a": {**good, "text": "\ud800"}},
        {"a": {**good, "text": "ok é"}}, {"a": {**good, "link": None}}, {"a": {**good, "link": "x\0"}},
        {"a": {**good, "link": "\udcff"}}, {"a": {**good, "link": "\ud800"}}, {"a": {**good, "extra": 1}},
        {"a": good, "b/c": {**good, "xxh3_128": "Z" * 32}, "b/d": good},
        {f"d{i}/f": {**good, "size": -i} for i in range(30)},
    ]
    for files in files_variants:
        yield {**base, "files": files}
    yield {**base, "files": {"a": good}, "started_ns": "soon"}
    yield {**base, "files": {"a": good}, "started_ns": -5}
    yield {**base, "files": {"a": good}, "started_ns": 12}
    yield {**base, "tool": "other", "files": {"a": {**good, "size": -1}}}
    yield {**base, "root": "relative", "files": {"a": good}}
    yield {**base, "files": []}


def test_the_fast_loader_accepts_and_rejects_exactly_what_the_full_check_does(monkeypatch):
    def outcome(doc):
        try:
            return M.manifest_from("m.json", doc)
        except M.ManifestError as exc:
            return exc.issues

    docs = list(_hostile_docs())
    fast = [outcome(doc) for doc in docs]
    monkeypatch.setattr(M, "_plain_files", lambda raw: None)  # the full, entry-by-entry check only
    full = [outcome(doc) for doc in docs]
    assert fast == full
    assert any(isinstance(f, M.Manifest) for f in full) and any(isinstance(f, list) for f in full)


def test_a_bundle_loads_as_it_did_when_each_part_was_written_out(tmp_path, monkeypatch):
    one, two = make_tree(tmp_path / "one"), make_tree(tmp_path / "two", n=5)
    snap = tmp_path / "bundle.json"
    assert snapshot(str(snap), model_dirs=[str(one), str(two)]) == []
    work = tmp_path / "work"
    work.mkdir()
    fast = S.load_snapshot(str(snap), str(work))
    monkeypatch.setattr(S, "MAX_MANIFEST", 0)  # every part written out and read back, as before
    slow = S.load_snapshot(str(snap), str(work))
    assert [(r, p, m.files, m.root, m.created, m.started_ns) for r, p, m in fast] == \
        [(r, p, m.files, m.root, m.created, m.started_ns) for r, p, m in slow]


def test_the_load_cache_serves_only_the_same_file(tmp_path, monkeypatch):
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(S, "settled_stat", lambda st, started_ns: True)  # a snapshot written just now may be remembered
    root = make_tree(tmp_path / "m")
    snap = tmp_path / "snap.json"
    assert snapshot(str(snap), model_dirs=[str(root)]) == []
    work = str(tmp_path)
    first = S.load_snapshot(str(snap), work, use_cache=True)
    assert os.listdir(tmp_path / "cache" / "snapshots")
    again = S.load_snapshot(str(snap), work, use_cache=True)
    assert [(r, p, m) for r, p, m in again] == [(r, p, m) for r, p, m in first]
    # A hostile edit of the same size, mtime restored: its new ctime makes it a file to check again.
    text = snap.read_text()
    st = os.stat(snap)
    digest = json.loads(text)["files"]["config.json"]["xxh3_128"]
    snap.write_text(text.replace(digest, digest.upper(), 1))
    os.utime(snap, ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(M.ManifestError, match="32 lowercase hex"):
        S.load_snapshot(str(snap), work, use_cache=True)


def test_a_snapshot_records_what_it_did_before(tmp_path):
    """build_manifest's one-walk rewrite: entries as the per-file lstat/stat/open path made them."""
    root = make_tree(tmp_path / "m")
    (root / "dirlink").symlink_to("sub")
    (root / "outside").symlink_to("/etc/hostname")
    entries = dict(M.build_manifest(str(root)))
    assert M.is_link_only(entries["dirlink"]) and entries["dirlink"].link == "sub"
    assert M.is_link_only(entries["outside"])
    cfg = (root / "config.json").read_bytes()
    assert entries["link.json"].link == "config.json" and entries["link.json"].size == len(cfg)
    assert entries["config.json"].text == cfg.decode()
    st = os.lstat(root / "script.py")
    assert entries["script.py"][1:4] == (st.st_size, st.st_mode, st.st_mtime_ns)
    assert stat.S_ISREG(entries["script.py"].mode)


# ---- the diff index (snapshot/treeindex.py) ---------------------------------------------------



def _index_files(cache) -> list:
    folder = cache / "diffindex"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def _report_json(report) -> dict:
    data = report.model_dump(mode="json")
    data.pop("duration_seconds", None)
    for key in ("started", "finished", "generated_at", "timings"):
        data.pop(key, None)
    return data


@pytest.fixture
def indexed(tmp_path, monkeypatch):
    """A settled model directory, its snapshot (which may be indexed at once: no racy wait for
    the snapshot file itself), and a diff that wrote the index."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(cache))
    monkeypatch.setattr(S, "settled_stat", lambda st, started_ns: True)
    root = make_tree(tmp_path / "m")
    (root / "sub" / "deeper").mkdir()
    (root / "sub" / "deeper" / "x.txt").write_text("x\n")
    os.utime(root / "sub" / "deeper" / "x.txt", ns=(OLD, OLD))
    os.utime(root / "sub" / "deeper", ns=(OLD, OLD))
    os.utime(root / "sub", ns=(OLD, OLD))
    settle(root)
    snap = tmp_path / "snap.json"
    assert snapshot(str(snap), model_dirs=[str(root)]) == []
    first = diff(str(snap))
    assert first.summary.drifts == 0 and first.summary.trusted_by_signature == 63
    assert len(_index_files(cache)) == 1
    return root, snap, cache


def _full(snap, cache) -> dict:
    """The same diff without the index (removed first; the full walk writes it again)."""
    for path in _index_files(cache):
        path.unlink()
    return _report_json(diff(str(snap)))


def test_an_unchanged_tree_is_settled_from_the_index_without_listing_a_directory(indexed, monkeypatch):
    root, snap, cache = indexed
    listed = []
    real = os.scandir
    with pytest.MonkeyPatch.context() as patch:  # not the fixture's: its cache directory stays
        patch.setattr(os, "scandir", lambda path=".": listed.append(path) or real(path))
        again = diff(str(snap))
    assert [p for p in listed if str(p).startswith(str(root))] == []
    assert again.summary.drifts == 0 and again.summary.trusted_by_signature == 63
    assert _report_json(again) == _full(snap, cache)


@pytest.mark.parametrize("change", ["added", "removed", "touched-back", "chmod", "new-dir", "removed-dir",
                                    "symlink-swapped", "deep-added", "appended"])
def test_the_index_finds_every_change_the_walk_finds(indexed, change):
    root, snap, cache = indexed
    if change == "added":
        (root / "sub" / "new.bin").write_bytes(b"new")
    elif change == "removed":
        (root / "sub" / "f003.bin").unlink()
    elif change == "touched-back":
        same_size_edit_mtime_restored(root / "sub" / "f005.bin")
    elif change == "chmod":
        os.chmod(root / "f004.bin", 0o600)
    elif change == "new-dir":
        (root / "sub" / "newdir").mkdir()
        (root / "sub" / "newdir" / "a.txt").write_text("a")
    elif change == "removed-dir":
        shutil.rmtree(root / "sub" / "deeper")
    elif change == "symlink-swapped":
        (root / "f006.bin").unlink()
        (root / "f006.bin").symlink_to("f008.bin")
    elif change == "deep-added":  # a file added two levels down: only its own directory changes
        (root / "sub" / "deeper" / "y.txt").write_text("y\n")
    elif change == "appended":
        with open(root / "sub" / "f007.bin", "ab") as f:
            f.write(b"more")
    served = []
    real_walk = T.walk
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(T, "walk", lambda *a: served.append(real_walk(*a)) or served[-1])
        indexed_report = _report_json(diff(str(snap)))
    # A directory changed: the full walk. Only files changed: the index, those files compared.
    assert [w is not None for w in served] == [change in ("touched-back", "chmod", "appended")]
    assert indexed_report["summary"]["drifts"] >= 1
    assert indexed_report == _full(snap, cache)
    cold = _report_json(diff(str(snap), use_cache=False))
    assert cold["drifts"] == indexed_report["drifts"]


def test_the_index_takes_one_lstat_per_file_and_one_stat_per_directory(indexed, monkeypatch):
    root, snap, cache = indexed
    (root / "link.json").unlink()  # regular files only: each costs the walk's lstat and nothing more
    diff(str(snap))  # the full walk (the root changed), which writes the index again
    os.utime(root, ns=(OLD, OLD))
    time.sleep(max(0.0, (os.stat(root).st_ctime_ns + racy.RACY_NS) / 1e9 - time.time() + 0.1))  # the root's ctime too
    files = sum(1 for p in root.rglob("*") if p.is_file())
    dirs = 1 + sum(1 for p in root.rglob("*") if p.is_dir())
    for path in _index_files(cache):
        path.unlink()
    with pytest.MonkeyPatch.context() as patch:  # not the fixture's: its cache directory stays
        full = _count_stats(patch, str(root))
        assert diff(str(snap)).summary.drifts == 1  # link.json missing; the full walk writes the index
    listed = []
    real = os.scandir
    with pytest.MonkeyPatch.context() as patch:
        counts = _count_stats(patch, str(root))
        patch.setattr(os, "scandir", lambda path=".": listed.append(path) or real(path))
        report = diff(str(snap))
    assert report.summary.drifts == 1 and report.summary.trusted_by_signature == files
    assert not [p for p in listed if str(p).startswith(str(root))]
    assert counts == full  # one lstat a file (and the missing link's own checks), one stat a directory
    assert files < counts["lstat"] <= files + 3 and counts["stat"] <= dirs + 2


def test_a_damaged_or_foreign_index_is_a_miss(indexed):
    root, snap, cache = indexed
    (path,) = _index_files(cache)
    data = path.read_bytes()
    edited = set()
    for n, bad in enumerate((data[:-1] + bytes([data[-1] ^ 1]), b"", data[:40],
                             T.FORMAT + b"\0" * 64)):
        path.write_bytes(bad)
        rel = f"sub/f{2 * n + 9:03d}.bin"
        same_size_edit_mtime_restored(root / rel)
        edited.add((rel, "modified"))
        assert drifts(diff(str(snap))) == edited


def test_no_cache_neither_reads_nor_writes_the_index(indexed, monkeypatch):
    root, snap, _ = indexed
    monkeypatch.setattr(T, "load", lambda *a, **k: pytest.fail("the index was read"))
    monkeypatch.setattr(T, "save", lambda *a, **k: pytest.fail("the index was written"))
    same_size_edit_mtime_restored(root / "sub" / "f011.bin")
    assert drifts(diff(str(snap), use_cache=False)) == {("sub/f011.bin", "modified")}


def test_a_rewritten_snapshot_is_not_served_by_the_old_index(indexed):
    root, snap, _ = indexed
    (root / "late.txt").write_text("late\n")
    time.sleep(0.01)
    assert snapshot(str(snap), model_dirs=[str(root)]) == []  # a new file: new inode, new identity
    report = diff(str(snap))
    assert report.summary.drifts == 0


def test_a_recently_changed_directory_is_not_indexed(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(cache))
    monkeypatch.setattr(S, "settled_stat", lambda st, started_ns: True)
    root = make_tree(tmp_path / "m")
    snap = tmp_path / "snap.json"
    assert snapshot(str(snap), model_dirs=[str(root)]) == []
    (root / "sub" / "fresh.txt").write_text("fresh")  # its directory changes now: within the racy window
    assert drifts(diff(str(snap))) == {("sub/fresh.txt", "added")}
    assert _index_files(cache) == []


def test_modified_files_in_the_forked_walkers_share_are_reported(tmp_path, monkeypatch):
    """A small file the forked walker could not settle comes back as its lstat, which the
    comparison asks Manifest.trusted about again: ctime_ns included (it was missing: the diff
    failed with "model directory audit failed: AttributeError")."""
    monkeypatch.setenv("DRIFTSCAN_FORK", "fork")
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "m"
    for d in range(300):
        (root / f"d{d:03d}").mkdir(parents=True)
        for f in range(30):
            (root / f"d{d:03d}" / f"f{f}.txt").write_text(f"{d} {f}\n")
    for path in root.rglob("*"):
        os.utime(path, ns=(OLD, OLD))
    settle(root)
    snap = tmp_path / "snap.json"
    assert snapshot(str(snap), model_dirs=[str(root)]) == []
    changed = {f"d{d:03d}/f3.txt" for d in range(0, 300, 7)}
    for rel in changed:
        (root / rel).write_text("changed!\n")
    for use_cache in (True, False):
        report = diff(str(snap), use_cache=use_cache)
        assert not report.errors, report.errors
        assert drifts(report) == {(rel, "modified") for rel in changed}


def test_the_consistency_checks_run_on_an_indexed_diff(tmp_path, monkeypatch):
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(S, "settled_stat", lambda st, started_ns: True)
    root = tmp_path / "m"
    root.mkdir()
    (root / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {}, "weight_map": {"a.weight": "model-00002-of-00002.safetensors"}}))
    (root / "config.json").write_text("{}")
    for path in (*root.iterdir(), root):
        os.utime(path, ns=(OLD, OLD))
    time.sleep(max(0.0, (os.stat(root).st_ctime_ns + racy.RACY_NS) / 1e9 - time.time() + 0.1))
    snap = tmp_path / "snap.json"
    assert snapshot(str(snap), model_dirs=[str(root)]) == []
    served = []
    real_walk = T.walk
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(T, "walk", lambda *a: served.append(real_walk(*a)) or served[-1])
        full, again = _report_json(diff(str(snap))), _report_json(diff(str(snap)))
    assert [w is not None for w in served] == [True]  # the first diff wrote the index, the second used it
    assert ("model-00002-of-00002.safetensors", "missing") in {(d["relpath"], d["kind"]) for d in full["drifts"]}
    assert again == full
