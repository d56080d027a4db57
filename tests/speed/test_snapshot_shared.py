"""The snapshot hashed on two cores from the first directory listed (snapshot/sharedwalk.py),
the snapshot load cache in columns, and the cold diff that opens files instead of lstat'ing
them: each must write and report exactly what the one-process paths did."""

from __future__ import annotations

import json
import os
import re
import time

import pytest

from driftscan.caches import racy
from driftscan.formats import manifest as M
from driftscan.api import diff, snapshot
from driftscan.snapshot import run as S
from driftscan.snapshot import sharedwalk as W

from test_snapshot_speed import OLD, drifts, make_tree


def _without_clock(text: str) -> str:
    return re.sub(r'"(created|started_ns|hostname)": [^\n]*\n', "", text)


def hostile_tree(root):
    """Every kind of entry a snapshot meets: text to embed (code too), binary, large, empty,
    symlinks in, out, to a directory and dangling, a FIFO, undecodable and non-ASCII names,
    bookkeeping, and directories enough for many messages."""
    root.mkdir()
    (root / "config.json").write_text(json.dumps({"a": 1}))
    (root / "modeling.py").write_text("import torch\n")
    (root / "README").write_text("readme\n")
    (root / "empty.txt").write_bytes(b"")
    (root / "big.bin").write_bytes(os.urandom(300 << 10))  # through the hashing buffer
    (root / "weights.safetensors").write_bytes(os.urandom(200 << 10))  # a message of its own
    (root / "notes.md").write_bytes(b"\xff\xfe not utf-8")  # text by name, not embedded
    (root / "grown.txt").write_text("x" * (70 << 10))  # text by name, over the embedding limit
    (root / "link.json").symlink_to("config.json")
    (root / "dirlink").symlink_to("sub")
    (root / "outside").symlink_to("/etc/hostname")
    (root / "dangling").symlink_to("nowhere")
    os.mkfifo(root / "fifo")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / M.MANIFEST_NAME).write_text("{}")
    (root / "sub").mkdir()
    (root / "sub" / ".git").write_text("gitdir: elsewhere\n")
    (root / "sub" / "ünïcode.txt").write_text("u\n")
    (root / os.fsdecode(b"sub/bad-\xff-name.txt")).write_text("b\n")
    deep = root / "a" / ("d" * 200) / ("e" * 200)
    deep.mkdir(parents=True)
    (deep / ("f" * 250)).write_text("long\n")
    for d in range(40):
        folder = root / "many" / f"d{d:02d}"
        folder.mkdir(parents=True)
        for f in range(d * 3):
            (root / many_name(d, f)).write_text(f"{d} {f}\n")
    return root


def many_name(d: int, f: int) -> str:
    return f"many/d{d:02d}/file-{f:03d}-{'x' * (d % 7) * 10}.py"


def one_process_snapshot(tmp_path, monkeypatch, tree=None):
    """The hostile tree (or ``tree``) snapshotted by one process into one.json; forking on after."""
    root = tree or hostile_tree(tmp_path / "t")
    monkeypatch.setenv("DRIFTSCAN_FORK", "inline")
    snapshot(str(tmp_path / "one.json"), model_dirs=[str(root)])
    monkeypatch.setenv("DRIFTSCAN_FORK", "fork")
    return root


def assert_shared_snapshot_is_the_same(tmp_path, root):
    snapshot(str(tmp_path / "two.json"), model_dirs=[str(root)])
    assert _without_clock((tmp_path / "one.json").read_text()) == _without_clock((tmp_path / "two.json").read_text())


@pytest.fixture
def forking(monkeypatch):
    monkeypatch.setenv("DRIFTSCAN_FORK", "fork")


@pytest.mark.parametrize("kind", ["model", "venv"])
def test_the_shared_snapshot_writes_what_one_process_wrote(tmp_path, monkeypatch, kind):
    root = hostile_tree(tmp_path / "t")
    if kind == "venv":
        (root / "pyvenv.cfg").write_text("home = /usr/bin\n")
        (root / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
        (root / "lib" / "python3.11" / "site-packages" / "mod.py").write_text("x = 1\n")
    named = {"venv": str(root)} if kind == "venv" else {"model_dirs": [str(root)]}
    monkeypatch.setenv("DRIFTSCAN_FORK", "inline")
    one = snapshot(str(tmp_path / "one.json"), **named)
    monkeypatch.setenv("DRIFTSCAN_FORK", "fork")
    used = []
    real = W.hash_shared
    monkeypatch.setattr(S, "hash_shared", lambda *a, **k: used.append(1) or real(*a, **k))
    two = snapshot(str(tmp_path / "two.json"), **named)
    assert used and one == two and [p.path for p in two] == [str(root / "fifo")]
    assert _without_clock((tmp_path / "one.json").read_text()) == _without_clock((tmp_path / "two.json").read_text())
    files = json.loads((tmp_path / "two.json").read_text())["files"]
    assert "fifo" not in files and ".git/HEAD" not in files and "sub/.git" not in files
    assert files["config.json"]["text"] and ("text" in files["modeling.py"]) == (kind == "model")


def test_a_child_that_fails_leaves_its_files_to_this_process(tmp_path, monkeypatch, forking):
    root = one_process_snapshot(tmp_path, monkeypatch)
    real = W._Hasher.files

    def dies_in_the_child(self, files, parent=os.getpid()):
        if os.getpid() != parent:
            os._exit(3)  # after taking a message from the pipe
        return real(self, files)

    monkeypatch.setattr(W._Hasher, "files", dies_in_the_child)
    assert_shared_snapshot_is_the_same(tmp_path, root)


def test_a_full_pipe_is_hashed_by_the_walker(tmp_path, monkeypatch, forking):
    root = one_process_snapshot(tmp_path, monkeypatch)
    sent = []
    real = W._Walk._hand_out

    def every_other_full(self, message, backlog):
        sent.append(message)
        if len(sent) % 2:
            return self.worker.files(W.unpack(message))  # as when the backlog is too long
        return real(self, message, backlog)

    monkeypatch.setattr(W._Walk, "_hand_out", every_other_full)
    assert_shared_snapshot_is_the_same(tmp_path, root)
    assert len(sent) > 4


def test_the_childs_answer_spooled_in_many_chunks_is_whole(tmp_path, monkeypatch, forking):
    """A chunk every few files: the child's answer arrives in many pieces, written as it went."""
    root = one_process_snapshot(tmp_path, monkeypatch)
    monkeypatch.setattr(W, "SPOOL_FILES", 3)
    read = []
    real = W._read_spool
    monkeypatch.setattr(W, "_read_spool", lambda fd, note: read.append(real(fd, note)) or read[-1])
    assert_shared_snapshot_is_the_same(tmp_path, root)
    assert read and read[0] is not None and len(read[0]) > 3  # several chunks came back


def test_a_chunk_that_is_not_an_answer_is_done_here(tmp_path, monkeypatch, forking):
    root = one_process_snapshot(tmp_path, monkeypatch)
    monkeypatch.setattr(W, "SPOOL_FILES", 5)
    real = W._read_spool

    def forged(fd, note):
        chunks = real(fd, note)
        assert chunks and all(W._valid_chunk(c) for c in chunks)
        chunks[0] = ({"config.json": 1}, {})  # not a member: the whole chunk is refused
        chunks[-1] = "garbage"
        return chunks

    monkeypatch.setattr(W, "_read_spool", forged)
    assert_shared_snapshot_is_the_same(tmp_path, root)


@pytest.mark.parametrize("spool", ["temporary file", "none"])
def test_without_memfd_the_answer_goes_elsewhere_or_the_walk_is_one_process(tmp_path, monkeypatch, forking, spool):
    root = one_process_snapshot(tmp_path, monkeypatch)

    def no_memfd(*args):
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(W.os, "memfd_create", no_memfd)
    if spool == "none":
        monkeypatch.setattr(W.tempfile, "TemporaryFile", no_memfd)
    got = []
    real = W._spool_file
    monkeypatch.setattr(W, "_spool_file", lambda: got.append(real()) or got[-1])
    assert_shared_snapshot_is_the_same(tmp_path, root)
    assert len(got) == 1 and (got[0] is None) == (spool == "none")  # None: build_manifest did it


def test_a_spool_cut_short_or_missing_is_not_read(tmp_path):
    fd = W._spool_file()
    try:
        written = W._write_chunk(fd, ({"a": "b"}, {})) + W._write_chunk(fd, ({"c": "d"}, {}))
        assert W._read_spool(fd, W.SPOOL_CHUNK.pack(written)) == [({"a": "b"}, {}), ({"c": "d"}, {})]
        assert W._read_spool(fd, W.SPOOL_CHUNK.pack(written + 1)) is None  # longer than what is there
        assert W._read_spool(fd, W.SPOOL_CHUNK.pack(written - 1)) is None  # a chunk cut short
        assert W._read_spool(fd, None) is None and W._read_spool(fd, b"123") is None  # the child failed
    finally:
        os.close(fd)


def test_the_backlog_hands_large_files_out_first(tmp_path, monkeypatch, forking):
    """While the pipe is full the walk goes on into the backlog; once it is done, likely-large
    files are handed out before the small ones, and a backlog too long is hashed as it grows."""
    tree = hostile_tree(tmp_path / "t")
    for k in range(3):
        (tree / "many" / "d20" / f"shard-{k}.safetensors").write_bytes(os.urandom(1000))
    root = one_process_snapshot(tmp_path, monkeypatch, tree)
    monkeypatch.setattr(W, "MAX_BACKLOG", 12)
    handed: list[bytes] = []
    real_run, real_finish = W._Walk.run, W._Walk.finish

    def run_with_a_full_pipe(self):
        send = self.send
        self.send = lambda message: False  # the pipe is full for the whole walk
        try:
            real_run(self)
        finally:
            self.send = send

    def finish(self, tick):
        send = self.send
        self.send = lambda message: handed.append(message) or send(message)
        assert self.large and len(self.large) + len(self.small) <= 12
        real_finish(self, tick)

    monkeypatch.setattr(W._Walk, "run", run_with_a_full_pipe)
    monkeypatch.setattr(W._Walk, "finish", finish)
    assert_shared_snapshot_is_the_same(tmp_path, root)
    large = [any(name.endswith(W.LIKELY_LARGE) for _, name, _ in W.unpack(m)) for m in handed]
    assert True in large and False in large
    assert large == sorted(large, reverse=True)  # every large one before every small one


def test_messages_carry_every_file_whole():
    names = [f"n{k}" for k in range(100)] + ["ü" * 100, os.fsdecode(b"\xff\xfe"), "w.safetensors", "x" * 255]
    packer = W._Messages()
    messages = []
    large = []
    for prefix, regular, other in (("", names[:50], ["link"]), ("a/b/", names[50:], []), ("c/", ["one"], ["two"])):
        big, ready = packer.add(prefix, regular, other)
        large += big
        messages += big + ready
    messages.append(packer.flush())
    assert all(len(m) == W.MESSAGE for m in messages)
    got = [f for m in messages for f in W.unpack(m)]
    want = [("", n, True) for n in names[:50]] + [("", "link", False)] + [("a/b/", n, True) for n in names[50:]] + \
        [("c/", "one", True), ("c/", "two", False)]
    assert sorted(got) == sorted(want)
    assert all(len(W.unpack(m)) <= W.MAX_FILES for m in messages)
    assert [W.unpack(m) for m in large] == [[("a/b/", "w.safetensors", True)]]  # alone, and said to be large
    assert not W.fits("p" * 4000 + "/") and W.fits("p" * 3000 + "/")


def test_the_load_cache_in_columns_is_the_manifest(tmp_path, monkeypatch):
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(S, "settled_stat", lambda st, started_ns: True)
    root = hostile_tree(tmp_path / "t")
    snap = tmp_path / "snap.json"
    snapshot(str(snap), model_dirs=[str(root)])
    first = S.load_snapshot(str(snap), str(tmp_path), use_cache=True)
    again = S.load_snapshot(str(snap), str(tmp_path), use_cache=True)
    files, cached = first[0][2].files, again[0][2].files
    assert isinstance(cached, S.ColumnEntries) and not isinstance(files, S.ColumnEntries)
    assert cached == files and files == cached and len(cached) == len(files)
    assert all(cached[rel] == entry and cached.get(rel) == entry for rel, entry in files.items())
    assert list(cached) == list(files) and cached.keys() == files.keys() and cached.get("nope") is None
    assert dict(cached.items()) == files and cached[next(iter(files))] is not None
    with pytest.raises(KeyError):
        cached["nope"]


@pytest.mark.parametrize("spool_files", [W.SPOOL_FILES, 4])
def test_a_cold_diff_that_opens_files_reports_what_the_lstat_walk_did(tmp_path, monkeypatch, spool_files):
    """Without trust each file's open and fstat stand for its lstat (``SettleOpened``): the
    report is the one-process walk's, for a tree with every kind of change (the child's answer
    in one chunk, and in many)."""
    monkeypatch.setattr(W, "SPOOL_FILES", spool_files)
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(S, "SPLIT_MIN_ENTRIES", 10)
    monkeypatch.setattr(S, "SPLIT_DIRS", 4)  # the walk shared out after the first few directories
    root = hostile_tree(tmp_path / "t")
    os.unlink(root / "fifo")
    snap = tmp_path / "snap.json"
    snapshot(str(snap), model_dirs=[str(root)])
    (root / "config.json").write_text(json.dumps({"a": 2}))  # modified, text
    (root / many_name(5, 0)).unlink()  # missing
    (root / "many" / "d06" / "new.py").write_text("new\n")  # added
    os.chmod(root / "README", 0o700)  # mode
    os.chmod(root / many_name(10, 1), 0o700)  # mode, in the shared part of the walk
    (root / many_name(11, 2)).write_text("same len\n"[:len(f"{11} {2}\n")])  # content, same size
    (root / "big.bin").write_bytes(os.urandom(300 << 10))  # modified, same size
    (root / many_name(7, 1)).unlink()
    (root / many_name(7, 1)).symlink_to(os.path.basename(many_name(7, 2)))  # a file become a symlink
    os.mkfifo(root / "many" / "d08" / "file-000-.py.fifo")  # an added FIFO
    os.unlink(root / many_name(9, 0))
    os.mkfifo(root / many_name(9, 0))  # a file become a FIFO: never opened to be read
    monkeypatch.setenv("DRIFTSCAN_FORK", "inline")
    alone = diff(str(snap), use_cache=False)
    monkeypatch.setenv("DRIFTSCAN_FORK", "fork")
    opened = []
    real = S.SettleOpened.__call__
    monkeypatch.setattr(S.SettleOpened, "__call__", lambda self, *a: opened.append(a[0]) or real(self, *a))
    shared = diff(str(snap), use_cache=False)
    assert opened  # this process's share went through the open-first path
    dump = [d.model_dump() for d in alone.drifts]
    assert [d.model_dump() for d in shared.drifts] == dump and len(dump) >= 7
    assert shared.summary.files_checked == alone.summary.files_checked
    assert [e.model_dump() for e in shared.errors] == [e.model_dump() for e in alone.errors]
    assert {many_name(9, 0), many_name(7, 1), many_name(5, 0), "many/d06/new.py", many_name(10, 1),
            many_name(11, 2)} <= {rel for rel, _ in drifts(shared)}


def one_process_cold_diff(tmp_path, monkeypatch):
    """A snapshot of the hostile tree (no FIFO), a mode change and a deletion, and the one-process
    ``diff --no-cache`` of it; forking on after."""
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(S, "SPLIT_MIN_ENTRIES", 10)
    root = hostile_tree(tmp_path / "t")
    os.unlink(root / "fifo")
    snap = tmp_path / "snap.json"
    snapshot(str(snap), model_dirs=[str(root)])
    os.chmod(root / many_name(12, 3), 0o700)
    (root / many_name(13, 0)).unlink()
    monkeypatch.setenv("DRIFTSCAN_FORK", "inline")
    alone = diff(str(snap), use_cache=False)
    monkeypatch.setenv("DRIFTSCAN_FORK", "fork")
    return snap, alone


def test_a_cold_diff_refuses_a_chunk_that_is_not_an_answer(tmp_path, monkeypatch):
    monkeypatch.setattr(W, "SPOOL_FILES", 4)
    snap, alone = one_process_cold_diff(tmp_path, monkeypatch)
    real = W._read_spool
    forged_at = []

    def forged(fd, note):
        chunks = real(fd, note)
        assert len(chunks) > 3 and all(W._valid_settled(c) for c in chunks)
        forged_at.append(len(chunks))
        chunks[0] = (chunks[0][0], [("x", (1, 2, 3))])  # a stat of three fields: the chunk is refused
        chunks[1] = ([1, 2], [])  # paths that are not strings
        chunks[-1] = "garbage"
        return chunks

    monkeypatch.setattr(W, "_read_spool", forged)
    shared = diff(str(snap), use_cache=False)
    assert forged_at
    assert [d.model_dump() for d in shared.drifts] == [d.model_dump() for d in alone.drifts]
    assert {many_name(12, 3), many_name(13, 0)} <= {rel for rel, _ in drifts(shared)}
    assert shared.summary.files_checked == alone.summary.files_checked


def test_tokens_are_each_taken_by_one_process():
    from driftscan.fs.helpers import Child, Tokens

    tokens = Tokens(500)

    def child(fd: int) -> None:
        took = []
        while (k := tokens.take()) is not None:
            took.append(k)
        os.write(fd, json.dumps(took).encode())

    helper = Child(child)
    mine = []
    while (k := tokens.take()) is not None:
        mine.append(k)
    theirs = json.loads(helper.wait())
    tokens.close()
    assert sorted(mine + theirs) == list(range(500)) and mine == tokens.taken
    with pytest.raises(ValueError):
        Tokens(Tokens.MAX + 1)


def test_an_index_served_diff_shared_in_pieces_reports_what_the_walk_does(tmp_path, monkeypatch):
    """The warm diff from the index with a forked child taking pieces (a stat a directory, an
    lstat a file): edits in many pieces, and a file gone, as the full walk reports them."""
    from driftscan.snapshot import treeindex as T
    from test_snapshot_speed import _full, _index_files, _report_json, same_size_edit_mtime_restored
    from fixtures.harness import settle

    monkeypatch.setenv("DRIFTSCAN_FORK", "fork")
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(S, "settled_stat", lambda st, started_ns: True)
    monkeypatch.setattr(T, "SPLIT_MIN_FILES", 10)
    monkeypatch.setattr(T, "CHUNK_FILES", 7)
    monkeypatch.setattr(T, "CHUNK_DIRS", 3)
    root = make_tree(tmp_path / "m", n=200)
    for d in range(12):
        (root / f"d{d}").mkdir()
        for f in range(9):
            (root / f"d{d}" / f"f{f}.txt").write_text(f"{d} {f}\n")
    for path in [root, *root.rglob("*")]:
        if not path.is_symlink():
            os.utime(path, ns=(OLD, OLD))
    settle(root)
    snap = tmp_path / "snap.json"
    assert snapshot(str(snap), model_dirs=[str(root)]) == []
    assert diff(str(snap)).summary.drifts == 0 and len(_index_files(tmp_path / "cache")) == 1
    edited = {f"d{d}/f{d % 9}.txt" for d in range(0, 12, 2)} | {"sub/f011.bin", "f100.bin"}
    for rel in edited:
        same_size_edit_mtime_restored(root / rel)
    served = []
    real, mismatches = T.walk, T._mismatches
    parent, pids = os.getpid(), tmp_path / "pids"

    def slowly(*a):  # a piece takes a while: the child, started after this process began, takes some
        with open(pids, "a") as f:
            f.write(f"{os.getpid()}\n")
        time.sleep(0.02)
        return mismatches(*a)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(T, "walk", lambda *a: served.append(real(*a)) or served[-1])
        patch.setattr(T, "_mismatches", slowly)
        indexed = _report_json(diff(str(snap)))
    assert [w is not None for w in served] == [True]
    assert len(set(pids.read_text().split())) == 2 and str(parent) in pids.read_text().split()
    assert {d["relpath"] for d in indexed["drifts"]} == edited
    assert indexed == _full(snap, tmp_path / "cache")


def test_a_cold_diff_whose_child_fails_reports_every_file(tmp_path, monkeypatch):
    snap, alone = one_process_cold_diff(tmp_path, monkeypatch)
    real = W._Settler.files

    def dies_in_the_child(self, files, parent=os.getpid()):
        if os.getpid() != parent:
            os._exit(3)  # after taking a message from the pipe
        return real(self, files)

    monkeypatch.setattr(W._Settler, "files", dies_in_the_child)
    shared = diff(str(snap), use_cache=False)
    assert [d.model_dump() for d in shared.drifts] == [d.model_dump() for d in alone.drifts]
    assert {(many_name(12, 3), "modified"), (many_name(13, 0), "missing")} <= drifts(shared)
    assert shared.summary.files_checked == alone.summary.files_checked
