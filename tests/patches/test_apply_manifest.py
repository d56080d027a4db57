"""The patch manifest: read as data, the patch directory's names, and which patch an installed
distribution gets (exact version > range > name alone; a tie is an error; a pinned sha256)."""

from __future__ import annotations

import hashlib

import pytest

from driftscan.core.errors import ConfigError
from driftscan.patches.manifest import (Entry, Level, ManifestError, digest_mismatch, from_directory, from_table,
                                        match, read_manifest)


def _entries(tmp_path, table):
    return from_table(table, str(tmp_path / "driftscan.toml"))


def test_exact_beats_range_beats_name(tmp_path):
    entries = _entries(tmp_path, {
        "patches/any.patch": {"distribution": "Toy_Fix"},
        "patches/range.patch": {"distribution": "toy-fix", "version": ">=1.0,<2"},
        "patches/exact.patch": {"distribution": "toy.fix", "version": "==1.0"},
    })
    assert [e.level for e in entries] == [Level.NAME, Level.RANGE, Level.EXACT]
    assert match(entries, "toy-fix", "1.0").shown == "patches/exact.patch"
    assert match(entries, "TOY_FIX", "1.5").shown == "patches/range.patch"
    assert match(entries, "toy-fix", "3.0").shown == "patches/any.patch"
    assert match(entries, "other", "1.0") is None
    assert match(entries[1:], "toy-fix", "2.0") is None


def test_patch_paths_are_relative_to_the_manifest(tmp_path):
    (entry,) = _entries(tmp_path, {"patches/a@1.0.patch": {"distribution": "a", "version": "1.0"}})
    assert entry.path == str(tmp_path / "patches" / "a@1.0.patch")
    assert entry.specifier == "==1.0" and entry.exact_version == "1.0"


def test_a_tie_at_the_best_level_is_one_line_error(tmp_path):
    entries = _entries(tmp_path, {
        "one.patch": {"distribution": "toy-fix", "version": ">=1"},
        "two.patch": {"distribution": "toy-fix", "version": "<2"},
        "name.patch": {"distribution": "toy-fix"},
    })
    with pytest.raises(ManifestError) as caught:
        match(entries, "toy-fix", "1.0")
    message = str(caught.value)
    assert "one.patch" in message and "two.patch" in message and "\n" not in message
    assert match(entries, "toy-fix", "2.5").shown == "one.patch"  # only one range admits 2.5


@pytest.mark.parametrize("spec, words", [
    ("not a table", "expected"),
    ({"version": "==1"}, "distribution"),
    ({"distribution": "../x"}, "distribution"),
    ({"distribution": "a", "version": "==not a version!"}, "specifier"),
    ({"distribution": "a", "version": 3}, "version"),
    ({"distribution": "a", "sha256": "abc"}, "64 hex"),
    ({"distribution": "a", "run": "rm -rf /"}, "unknown key 'run'"),
])
def test_a_bad_entry_is_one_line_error(tmp_path, spec, words):
    with pytest.raises(ManifestError) as caught:
        _entries(tmp_path, {"p.patch": spec})
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_pyproject_and_driftscan_toml_tables(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n[tool.driftscan.patches]\n"p/a.patch" = { distribution = "a", version = ">=1" }\n')
    (entry,) = read_manifest(str(tmp_path / "pyproject.toml"))
    assert (entry.distribution, entry.specifier, entry.level) == ("a", ">=1", Level.RANGE)
    (tmp_path / "driftscan.toml").write_text('[patches]\n"p/b.patch" = { distribution = "B" }\n')
    (entry,) = read_manifest(str(tmp_path / "driftscan.toml"))
    assert (entry.distribution, entry.level) == ("b", Level.NAME)
    (tmp_path / "empty.toml").write_text('select = ["DBG1"]\n')
    with pytest.raises(ManifestError, match="no \\[patches\\] table"):
        read_manifest(str(tmp_path / "empty.toml"))
    (tmp_path / "bad.toml").write_text('[patches\n')
    with pytest.raises(ConfigError, match="not valid TOML"):
        read_manifest(str(tmp_path / "bad.toml"))


def test_a_directory_gives_exact_entries_for_its_patch_names(tmp_path):
    (tmp_path / "Toy_Fix@1.0.patch").write_text("x")
    (tmp_path / "other@2.0rc1.patch").write_text("x")
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "noversion.patch").write_text("x")
    entries = from_directory(str(tmp_path))
    assert sorted((e.distribution, e.exact_version) for e in entries) == [("other", "2.0rc1"), ("toy-fix", "1.0")]
    assert match(entries, "toy-fix", "1.0") is not None and match(entries, "toy-fix", "1.1") is None
    with pytest.raises(ManifestError, match="no such directory"):
        from_directory(str(tmp_path / "absent"))


def test_a_pinned_digest_refuses_an_edited_patch(tmp_path):
    data = b"the patch as reviewed\n"
    pinned = hashlib.sha256(data).hexdigest()
    entry = Entry(path="p", shown="patches/p.patch", distribution="a", sha256=pinned)
    assert digest_mismatch(entry, data) is None
    edited = data + b"+import os; os.system('curl evil')\n"
    why = digest_mismatch(entry, edited)
    assert pinned in why and hashlib.sha256(edited).hexdigest() in why and "refused" in why
    assert digest_mismatch(Entry(path="p", shown="p", distribution="a"), edited) is None


def test_the_configuration_accepts_a_manifest_table(tmp_path, monkeypatch):
    """A project with a manifest still audits: the configuration keeps the table aside for patch apply."""
    from driftscan.config.settings import load_config

    (tmp_path / "pyproject.toml").write_text(
        '[tool.driftscan]\nselect = ["DBG1"]\n[tool.driftscan.patches]\n"p/a.patch" = { distribution = "a" }\n')
    monkeypatch.chdir(tmp_path)
    config = load_config(None)
    assert config.select == ["DBG1"] and config.patches == {"p/a.patch": {"distribution": "a"}}
