"""driftscan manifests: build, atomic write, strict read."""

from __future__ import annotations

import json
import os
import stat

import pytest
import xxhash

from driftscan.formats.manifest import (
    MANIFEST_NAME, ManifestError, build_manifest, is_bookkeeping, read_manifest, walk_tree, write_manifest,
)
from fixtures.modeldirs import build_local_dir, seed_files


@pytest.fixture
def model(tmp_path):
    root = build_local_dir(tmp_path / "m", seed_files())
    (root / "sub").mkdir()
    (root / "sub" / "notes.md").write_text("# notes\n")
    (root / "link.json").symlink_to("config.json")
    return root


def test_build_hashes_every_file_and_embeds_small_text(model):
    entries = dict(build_manifest(str(model), jobs=2))
    assert sorted(entries) == sorted([*seed_files(), "sub/notes.md", "link.json"])
    config = (model / "config.json").read_bytes()
    st = os.stat(model / "config.json")
    entry = entries["config.json"]
    assert entry.xxh3_128 == xxhash.xxh3_128(config).hexdigest()
    assert (entry.size, entry.mode, entry.mtime_ns) == (len(config), st.st_mode, st.st_mtime_ns)
    assert entry.text == config.decode()
    assert entries["tiktoken.model"].text is None  # binary: not embedded
    assert entries["model-00001-of-00002.safetensors"].text is None
    assert entries["link.json"].link == "config.json" and entries["link.json"].xxh3_128 == entry.xxh3_128


def test_bookkeeping_is_never_part_of_the_tree(model):
    (model / MANIFEST_NAME).write_text("{}")
    (model / ".git").mkdir()
    (model / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    relpaths, problems = walk_tree(str(model))
    assert problems == []
    assert not any(is_bookkeeping(r) for r in relpaths)
    assert ".cache/huggingface/download/config.json.metadata" not in relpaths
    assert is_bookkeeping(".cache/huggingface/.gitignore") and not is_bookkeeping(".cache/other")


def test_write_is_atomic_and_round_trips(model, tmp_path):
    out = tmp_path / "out.json"
    written = write_manifest(str(model), build_manifest(str(model), embed_limit=16), str(out))
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".driftscan-manifest.")] == []
    doc = json.loads(out.read_text())
    assert doc["manifest_version"] == "1" and doc["tool"] == "driftscan" and doc["root"] == str(model)
    back = read_manifest(str(out))
    assert back.files == written.files
    assert back.files["README.md"].text is None  # above the 16-byte embed limit
    assert stat.S_IMODE(out.stat().st_mode) == 0o644


def test_failed_write_leaves_the_old_manifest(model, tmp_path):
    out = tmp_path / "out.json"
    out.write_text("previous")

    def broken():
        yield from build_manifest(str(model))
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_manifest(str(model), broken(), str(out))
    assert out.read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m", "out.json"]


def test_unreadable_files_are_errors_unless_collected(model):
    os.mkfifo(model / "pipe.json")  # not a regular file: a manifest cannot describe it
    with pytest.raises(ManifestError) as info:
        list(build_manifest(str(model)))
    assert "pipe.json" in str(info.value) and "not a regular file" in str(info.value)
    seen = []
    entries = dict(build_manifest(str(model), on_error=seen.append))
    assert "pipe.json" not in entries and [p.path for p in seen] == [str(model / "pipe.json")]


def test_progress_reaches_the_total(model):
    calls = []
    list(build_manifest(str(model), progress=lambda done, total: calls.append((done, total))))
    total = sum(os.path.getsize(model / r) for r in walk_tree(str(model))[0])
    assert calls[-1] == (total, total)


@pytest.mark.parametrize("content, message", [
    (b"not json", "not valid JSON"),
    (b"[]", "not a JSON object"),
    (json.dumps({"manifest_version": "9", "tool": "driftscan", "created": "x", "root": "/", "files": {}}).encode(),
     "manifest_version is '9'"),
    (json.dumps({"manifest_version": "1", "tool": "other", "created": "x", "root": "/", "files": []}).encode(),
     "tool is 'other'"),
])
def test_read_rejects_bad_documents(tmp_path, content, message):
    path = tmp_path / "m.json"
    path.write_bytes(content)
    with pytest.raises(ManifestError) as info:
        read_manifest(str(path))
    assert message in str(info.value)


def test_read_collects_every_bad_entry(tmp_path):
    good = {"xxh3_128": "0" * 32, "size": 1, "mode": 33188, "mtime_ns": 1}
    doc = {"manifest_version": "1", "tool": "driftscan", "created": "x", "root": "/",
           "files": {"ok.json": good, "../escape": good, "a.json": {**good, "size": -1},
                     "b.json": {**good, "xxh3_128": "XYZ"}, "c.json": {**good, "text": 3}, "d.json": "nope"}}
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ManifestError) as info:
        read_manifest(str(path))
    issues = info.value.issues
    assert len(issues) == 5
    assert any("'../escape'" in i for i in issues) and any("a.json']" in i and "size" in i for i in issues)


def test_read_reports_a_missing_file(tmp_path):
    with pytest.raises(ManifestError, match="cannot read"):
        read_manifest(str(tmp_path / "absent.json"))


def test_a_manifest_rewritten_since_it_was_read_is_read_again(model, tmp_path):
    out = str(tmp_path / "m.json")
    write_manifest(str(model), build_manifest(str(model)), out)
    first = read_manifest(out)
    assert read_manifest(out) is first  # kept while the file is the same
    (model / "config.json").write_text('{"changed": true}\n')
    write_manifest(str(model), build_manifest(str(model)), out)  # a new file, renamed over the old
    second = read_manifest(out)
    assert second is not first
    assert second.files["config.json"].xxh3_128 != first.files["config.json"].xxh3_128


def test_what_a_snapshot_could_not_read_is_kept_and_checked_when_read(tmp_path):
    good = {"xxh3_128": "0" * 32, "size": 1, "mode": 33188, "mtime_ns": 1}
    doc = {"manifest_version": "1", "tool": "driftscan", "created": "x", "root": "/", "files": {"ok.json": good},
           "unreadable": {"pagemap": "cannot read: Invalid argument", "task": "cannot list directory"}}
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    assert read_manifest(str(path)).unreadable == doc["unreadable"]
    for bad, message in (([], "unreadable is not an object"), ({"../x": "why"}, "'../x'"),
                         ({"x": 3}, "not a string")):
        path.write_text(json.dumps({**doc, "unreadable": bad}))
        with pytest.raises(ManifestError) as info:
            read_manifest(str(path))
        assert message in str(info.value), info.value
