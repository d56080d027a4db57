"""snapshot/sharedwalk.py: files handed out in fixed-size messages, and a tree hashed (or settled)
by two processes giving the entries one process gives."""

from __future__ import annotations

import os

import pytest

from driftscan.formats.manifest import EMBED_LIMIT, build_manifest, format_member
from driftscan.modeldir.provenance.manifestdir import MATCHED
from driftscan.snapshot import sharedwalk as W
from fixtures.modeldirs import build_local_dir, seed_files


def test_fits_refuses_a_prefix_too_long_for_a_message():
    assert W.fits("a/b/")
    assert not W.fits("d" * (W.MESSAGE - 10) + "/")


def _sent(adds) -> list[bytes]:
    """The messages ``_Messages`` produces for directories added in turn, then the last one flushed."""
    messages = W._Messages()
    out = []
    for prefix, regular, other in adds:
        big, ready = messages.add(prefix, regular, other)
        out += big + ready
    if messages.files:
        out.append(messages.flush())
    return out


def test_messages_carry_every_file_with_its_directory_and_kind():
    adds = [("", ["config.json", "README.md"], ["link"]),
            ("sub/", [f"f{n:03d}.txt" for n in range(100)], []),
            ("ünï/", [os.fsdecode(b"bad-\xff.txt")], ["fifo"])]
    sent = _sent(adds)
    assert all(len(m) == W.MESSAGE for m in sent)  # one atomic pipe write, one whole read
    got = [f for m in sent for f in W.unpack(m)]
    want = [(prefix, name, True) for prefix, regular, _ in adds for name in regular] + \
           [(prefix, name, False) for prefix, _, other in adds for name in other]
    assert sorted(got) == sorted(want)
    assert all(len(W.unpack(m)) <= W.MAX_FILES for m in sent)


def test_likely_large_files_each_get_a_message_of_their_own():
    shards = [f"model-{n:05d}-of-00003.safetensors" for n in range(3)]
    messages = W._Messages()
    big, ready = messages.add("weights/", shards + ["config.json"], [])
    assert [W.unpack(m) for m in big] == [[("weights/", s, True)] for s in shards]
    assert ready == [] and messages.files == 1  # the small one waits for more company
    assert W.unpack(messages.flush()) == [("weights/", "config.json", True)]


def test_long_names_split_over_several_messages():
    names = [f"{n:03d}" + "x" * 250 for n in range(40)]
    sent = _sent([("deep/", names, [])])
    assert len(sent) > 1 and sorted(name for m in sent for _, name, _ in W.unpack(m)) == names


def model_tree(tmp_path):
    root = build_local_dir(tmp_path / "m", seed_files())
    (root / "sub").mkdir()
    for n in range(150):  # enough files for many messages
        (root / "sub" / f"f{n:03d}.json").write_text(f'{{"n": {n}}}\n')
    (root / "modeling.py").write_text("import torch\n")
    (root / "link.json").symlink_to("config.json")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")  # bookkeeping: left out
    os.mkfifo(root / "fifo")
    return root


def test_hash_shared_is_none_where_forking_is_not_allowed(tmp_path, monkeypatch):
    monkeypatch.setenv("DRIFTSCAN_FORK", "inline")
    root = model_tree(tmp_path)
    assert W.hash_shared(str(root), embed_limit=EMBED_LIMIT, embed_code=True, contain=str(root)) is None
    assert W.settle_shared(str(root), lambda rel, path: None) is None


@pytest.mark.parametrize("embed_code", [True, False])
def test_hash_shared_gives_the_members_one_process_gives(tmp_path, monkeypatch, embed_code):
    monkeypatch.setenv("DRIFTSCAN_FORK", "fork")
    root = model_tree(tmp_path)
    problems = []
    one = {rel: format_member(rel, entry)
           for rel, entry in build_manifest(str(root), embed_code=embed_code, on_error=problems.append,
                                            contain=str(root))}
    progress = []
    shared = W.hash_shared(str(root), embed_limit=EMBED_LIMIT, embed_code=embed_code, contain=str(root),
                           progress=lambda done, total: progress.append((done, total)))
    assert shared is not None
    members, trouble = shared
    assert members == one
    assert ".git/HEAD" not in members and "fifo" not in members and "sub/f149.json" in members
    assert ('"text"' in members["modeling.py"]) is embed_code  # a model's code is embedded as its config
    assert [p.path for p in trouble] == [p.path for p in problems] == [str(root / "fifo")]
    assert progress and progress[-1][0] == progress[-1][1]  # the last call: all done


class Settle:
    """A stand-in for ``manifestdir.SettleOpened``: regular files named ``*.json`` under sub/ match."""

    def __init__(self):
        self.hashed = 0
        self.asked = []

    def __call__(self, rel, path):
        self.asked.append(rel)
        if rel.startswith("sub/") and rel.endswith(".json"):
            self.hashed += os.path.getsize(path)
            return MATCHED
        return None


def test_settle_shared_settles_or_stats_every_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("DRIFTSCAN_FORK", "fork")
    root = model_tree(tmp_path)
    settle = Settle()
    walked, problems, hashed = W.settle_shared(str(root), settle)
    assert problems == []
    files = {f"sub/f{n:03d}.json" for n in range(150)}
    assert {rel for rel, v in walked.items() if v is MATCHED} == files
    expected_hashed = sum(os.path.getsize(root / rel) for rel in files)
    assert hashed == expected_hashed  # the child's bytes and this process's
    others = {rel: st for rel, st in walked.items() if st is not MATCHED}
    assert {"config.json", "modeling.py", "link.json", "fifo"} <= set(others)
    assert ".git/HEAD" not in walked
    for rel, st in others.items():
        real = os.lstat(root / rel)
        assert (st.st_mode, st.st_size, st.st_mtime_ns) == (real.st_mode, real.st_size, real.st_mtime_ns), rel


def test_a_child_that_fails_leaves_its_files_here(tmp_path, monkeypatch):
    monkeypatch.setenv("DRIFTSCAN_FORK", "fork")
    root = model_tree(tmp_path)
    real = W._Settler.files

    def dies_in_the_child(self, files, parent=os.getpid()):
        if os.getpid() != parent:
            os._exit(3)
        return real(self, files)

    monkeypatch.setattr(W._Settler, "files", dies_in_the_child)
    walked, problems, _ = W.settle_shared(str(root), Settle())
    assert sum(v is MATCHED for v in walked.values()) == 150 and "config.json" in walked


def test_valid_chunks_are_exactly_what_take_makes():
    hasher = W._Hasher("/nowhere", EMBED_LIMIT, True, "/nowhere")
    hasher.members["a"] = '"a": {}'
    assert W._valid_chunk(hasher.take()) and hasher.pending() == 0
    assert not W._valid_chunk(({"a": 1}, {})) and not W._valid_chunk("garbage")
    assert W._valid_settled((["a"], [("b", (0o100644, 1, 2, 3.0, 4)), ("c", None)]))
    assert not W._valid_settled((["a"], [("b", (0o100644, 1, 2, 3, 4))]))  # an mtime is a float
    assert not W._valid_settled(([1], []))
