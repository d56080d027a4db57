"""snapshot / diff fast paths (issue #16): one walk, one lstat per file, signatures trusted, the
manifest loaded fast — and none of it changing what diff reports."""

from __future__ import annotations

import enum
import json
import os
import shutil
import stat
import subprocess
import time

import pytest

from driftscan import manifest as M
from driftscan.api import diff, snapshot
from driftscan.fileio import walk_relative
from driftscan.verify import snapshot as S
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
    (9,000 files: the walk and the hashing are shared with a child, driftscan.verify.snapshot)."""
    root = tmp_path / "m"
    for d in range(300):  # directories enough to share the walk out
        (root / f"d{d:03d}").mkdir(parents=True)
        for f in range(30):
            (root / f"d{d:03d}" / f"f{f}.txt").write_text(f"{d} {f}\n")
    for path in root.rglob("*"):
        os.utime(path, ns=(OLD, OLD))
    snap = tmp_path / "snap.json"
    assert run_cli("snapshot", "--model-dir", str(root), "-o", str(snap)).returncode == 0
    files = 9000
    log = tmp_path / "strace.log"
    for extra in ((), ("--no-cache",)):
        proc = subprocess.run(["strace", "-f", "-qq", "-e", "trace=stat,lstat,newfstatat,statx", "-o", str(log),
                               *run_cli_args("diff", str(snap), "-q", *extra)], check=False, capture_output=True,
                              text=True)
        assert proc.returncode == 0, proc.stderr[-2000:]
        lines = log.read_text().splitlines()
        under = [line for line in lines if f'"{root}/' in line and "AT_EMPTY_PATH" not in line]
        assert len({line.split()[0] for line in under}) == 2  # the walk was shared with a forked child
        assert files <= len(under) <= files + 2, "\n".join(under[:20])  # + the root's own checks


def run_cli_args(*args: str) -> list[str]:
    import sys
    return [sys.executable, "-m", "driftscan", *args]


# ---- the manifest's fast paths change nothing --------------------------------------------------

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
            assert M._member(name, entry) == f"{json.dumps(name)}: {json.dumps(entry.to_json(), sort_keys=True)}"


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
    monkeypatch.setattr(S, "RACY_NS", -10**12)  # a snapshot written just now may be remembered
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
