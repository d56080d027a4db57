"""modeldir/layout.py: huggingface_hub's download metadata read as data, and where a git work tree begins."""

from __future__ import annotations

import os

import pytest

from driftscan.modeldir.layout import (
    METADATA_DIR, etag_algorithm, find_git_top, has_metadata, parse_download_metadata, read_download_metadata,
)
from fixtures.modeldirs import COMMIT, build_local_dir, etag_of, seed_files, write_download_metadata


def test_etag_algorithm_by_length_of_lowercase_hex():
    assert etag_algorithm("a" * 40) == "git-sha1"
    assert etag_algorithm("0" * 64) == "sha256"
    assert etag_algorithm("a" * 39) is None and etag_algorithm("A" * 40) is None
    assert etag_algorithm('"' + "a" * 38 + '"') is None  # a quoted HTTP etag is not one huggingface_hub keeps


def test_parse_what_huggingface_hub_writes():
    meta = parse_download_metadata("config.json", "/m/x.metadata", f"{COMMIT}\n{'a' * 40}\n1700000000.5\n")
    assert (meta.relpath, meta.commit, meta.etag, meta.timestamp, meta.metadata_path) == (
        "config.json", COMMIT, "a" * 40, 1700000000.5, "/m/x.metadata")


@pytest.mark.parametrize("text, why", [
    (f"{COMMIT}\n{'a' * 40}\n", "has 2 lines, expected 3"),
    (f"{COMMIT}\n\n1.0\n", "empty commit or etag line"),
    (f"{COMMIT}\nan etag\n1.0\n", "the etag line 'an etag' is not a etag"),
    (f"{COMMIT}\n{'a' * 200}\n1.0\n", "the etag line"),
    (f"{COMMIT}\x1b[2J\n{'a' * 40}\n1.0\n", "the commit line"),
    (f"{COMMIT}\n{'a' * 40}\nyesterday\n", "timestamp 'yesterday' is not a number"),
    (f"{COMMIT}\n{'a' * 40}\nnan\n", "is not a Unix time"),
    (f"{COMMIT}\n{'a' * 40}\n-1\n", "is not a Unix time"),
    (f"{COMMIT}\n{'a' * 40}\n1e20\n", "is not a Unix time"),  # past the year 9999: no date can show it
])
def test_anything_huggingface_hub_would_not_write_is_refused(text, why):
    with pytest.raises(ValueError) as info:
        parse_download_metadata("f", "/m/f.metadata", text)
    assert why in str(info.value)


def test_read_download_metadata_of_a_local_dir(tmp_path):
    files = seed_files()
    root = build_local_dir(tmp_path / "m", files)
    parsed, broken, problems = read_download_metadata(str(root))
    assert set(parsed) == set(files) and broken == set() and problems == []
    assert parsed["config.json"].etag == etag_of("config.json", files["config.json"])
    assert parsed["model-00001-of-00002.safetensors"].etag == etag_of(
        "model-00001-of-00002.safetensors", files["model-00001-of-00002.safetensors"])  # the LFS sha256


def test_subfolder_paths_and_working_files(tmp_path):
    root = tmp_path / "m"
    write_download_metadata(root, "sub/dir/tok.json", "b" * 40, 1.0)  # leaves sub/dir/tok.json.lock
    base = root / METADATA_DIR
    (base / "sub" / "dir" / f"tok.json.{'b' * 40}.incomplete").write_text("partial")
    parsed, broken, problems = read_download_metadata(str(root))
    assert list(parsed) == ["sub/dir/tok.json"] and broken == set() and problems == []


def test_each_broken_metadata_file_fails_alone(tmp_path):
    root = build_local_dir(tmp_path / "m", {"a.json": b"{}", "b.json": b"[]"})
    meta = root / METADATA_DIR / "b.json.metadata"
    meta.write_text("garbage\n")
    parsed, broken, problems = read_download_metadata(str(root))
    assert list(parsed) == ["a.json"] and broken == {"b.json"}
    [problem] = problems
    assert problem.path == str(meta) and problem.message.startswith("unreadable download metadata for b.json: has 1 lines")


def test_a_metadata_file_that_is_a_symlink_is_not_followed(tmp_path):
    root = build_local_dir(tmp_path / "m", {"a.json": b"{}"})
    meta = root / METADATA_DIR / "a.json.metadata"
    real = tmp_path / "real.metadata"
    real.write_text(meta.read_text())
    meta.unlink()
    meta.symlink_to(real)
    parsed, broken, problems = read_download_metadata(str(root))
    assert parsed == {} and broken == {"a.json"} and len(problems) == 1


def test_metadata_directory_leading_out_of_the_tree_is_not_read(tmp_path):
    elsewhere = build_local_dir(tmp_path / "elsewhere", {"a.json": b"{}"})
    root = tmp_path / "m"
    (root / ".cache").mkdir(parents=True)
    (root / ".cache" / "huggingface").symlink_to(elsewhere / ".cache" / "huggingface")
    parsed, broken, problems = read_download_metadata(str(root))
    assert parsed == {} and broken == set()
    [problem] = problems
    assert "resolves outside the model directory" in problem.message
    assert has_metadata(str(root))  # recognised, so the audit reports it rather than calling the tree unknown


def test_has_metadata(tmp_path):
    root = tmp_path / "m"
    assert not has_metadata(str(root))
    (root / METADATA_DIR).mkdir(parents=True)
    (root / METADATA_DIR / "x.lock").touch()
    assert not has_metadata(str(root))  # only lock files: nothing was downloaded
    write_download_metadata(root, "deep/x.json", "c" * 40, 1.0)
    assert has_metadata(str(root))


def test_find_git_top_walks_up_to_a_git_directory_or_file(tmp_path):
    top = tmp_path / "repo"
    (top / ".git").mkdir(parents=True)
    (top / "a" / "b").mkdir(parents=True)
    assert find_git_top(str(top / "a" / "b")) == str(top)
    worktree = tmp_path / "wt"
    worktree.mkdir()
    (worktree / ".git").write_text("gitdir: /elsewhere\n")
    assert find_git_top(str(worktree)) == str(worktree)
    lone = tmp_path / "lone"
    lone.mkdir()
    found = find_git_top(str(lone))
    assert found is None or not found.startswith(str(tmp_path))  # nothing at or above tmp_path's own tree
    assert find_git_top(os.path.relpath(top / "a")) == str(top)  # a relative path: the top, absolute
