"""config.settings: which configuration is in effect, what a found (not named) file may set, one
clear error for a malformed key, and accept entries appended without changing anything else."""

from __future__ import annotations

import datetime
import os
import stat
import sys

import pytest

from driftscan.config.settings import (Config, append_entries, default_accept_file, load_config,
                                       parse_config)
from driftscan.core.errors import ConfigError
from driftscan.report.accept import AcceptEntry

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """A working directory with no configuration above it and no user configuration."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


def test_no_config_means_defaults(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert load_config().model_dirs == [] and load_config().source is None


def test_every_key_works_from_a_pyproject_named_with_config(tmp_path):
    (tmp_path / "models" / "kimi").mkdir(parents=True)
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\n\n[tool.driftscan]\nmodel_dirs = ["models/kimi"]\nhf_cache = "hub"\n'
                         'uv_cache = "/srv/uv"\nrules_modules = ["acme.rules"]\nselect = ["DBG1"]\nignore = ["DBG109"]\n'
                         '[[tool.driftscan.accept]]\npath = "a.py"\nreason = "kept"\n')
    config = load_config(str(pyproject))
    assert config.model_dirs == [str(tmp_path / "models" / "kimi")]  # relative to the file's directory
    assert (config.hf_cache, config.uv_cache, config.rules_modules) == ("hub", "/srv/uv", ["acme.rules"])
    assert (config.select, config.ignore, [e.path for e in config.accept]) == (["DBG1"], ["DBG109"], ["a.py"])
    assert config.source == str(pyproject) and config.table == "tool.driftscan" and config.notes == []
    empty = tmp_path / "other" / "pyproject.toml"
    empty.parent.mkdir()
    empty.write_text('[project]\nname = "y"\n')
    assert load_config(str(empty)).select == []  # named, but no [tool.driftscan]: the defaults


def test_the_user_config_is_the_fallback_and_a_found_file_wins(tmp_path, monkeypatch):
    user = tmp_path / "xdg" / "driftscan" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('select = ["DBG10"]\nrules_modules = ["mine"]\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    config = load_config()
    assert config.source == str(user) and config.rules_modules == ["mine"]  # the user's own: trusted
    (tmp_path / "pyproject.toml").write_text("[tool.driftscan]\nselect = ['DBG106']\n")  # upward from work/
    config = load_config()
    assert config.source == str(tmp_path / "pyproject.toml") and config.select == ["DBG106"]
    assert config.rules_modules == []  # files are not merged



def test_a_found_pyproject_is_treated_like_a_found_driftscan_toml(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[tool.driftscan]\nrules_modules = ['canary']\nmodel_dirs = ['/etc']\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    monkeypatch.chdir(sub)
    config = load_config()
    assert config.rules_modules == [] and config.model_dirs == []
    assert any("rules_modules not imported" in n for n in config.notes)


def test_a_found_config_another_user_owns_is_not_read(tmp_path, monkeypatch):
    if os.getuid() != 0:
        pytest.skip("needs root to give the file away")
    (tmp_path / "driftscan.toml").write_text(f'[[accept]]\npath = "**"\nreason = "planted"\n')
    os.chown(tmp_path / "driftscan.toml", 65534, 65534)
    monkeypatch.chdir(tmp_path)
    config = load_config()
    assert config.accept == [] and config.source is None
    assert any("not read (owned by uid 65534" in n for n in config.notes)



def test_found_config_paths_outside_its_directory_are_set_aside(isolated):
    (isolated / "models").mkdir()
    (isolated / "driftscan.toml").write_text('model_dirs = ["models", "../elsewhere", "/etc"]\nhf_cache = true\n'
                                             'uv_cache = "/root/.cache/uv"\nselect = ["DBG1"]\n')
    config = load_config()
    assert config.model_dirs == [str(isolated / "models")]
    assert config.hf_cache is False and config.uv_cache is None
    assert config.select == ["DBG1"], "settings that name no path are kept"
    assert any("model_dirs outside" in n for n in config.notes)
    assert any("hf_cache = true set aside" in n for n in config.notes)
    assert any("uv_cache outside" in n for n in config.notes)


def test_found_config_path_through_a_symlink_out_is_set_aside(isolated, tmp_path):
    (tmp_path / "outside").mkdir()
    (isolated / "link").symlink_to(tmp_path / "outside")
    (isolated / "driftscan.toml").write_text('model_dirs = ["link"]\n')
    assert load_config().model_dirs == []


def test_named_config_is_trusted(isolated, tmp_path):
    named = tmp_path / "team.toml"
    named.write_text('model_dirs = ["/srv/models"]\nrules_modules = ["acme.rules"]\nhf_cache = true\n')
    config = load_config(str(named))
    assert config.model_dirs == ["/srv/models"] and config.rules_modules == ["acme.rules"]
    assert config.hf_cache is True and config.notes == []


def test_tilde_expanded_only_in_a_trusted_file(isolated, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    named = tmp_path / "named.toml"
    named.write_text('model_dirs = ["~/models"]\n')
    assert load_config(str(named)).model_dirs == [str(tmp_path / "home" / "models")]
    (isolated / "driftscan.toml").write_text('model_dirs = ["~/models"]\n')
    assert load_config().model_dirs == [str(isolated / "~" / "models")], "a found file's ~ is a directory name"


def test_world_writable_found_config_is_not_read(isolated):
    found = isolated / "driftscan.toml"
    found.write_text('select = ["DBG1"]\n')
    os.chmod(found, 0o666)
    config = load_config()
    assert config.source is None and config.select == []
    assert any("not read (writable by every user)" in n for n in config.notes)


def test_found_config_in_a_world_writable_directory_is_not_read_unless_sticky(isolated):
    (isolated / "driftscan.toml").write_text('select = ["DBG1"]\n')
    os.chmod(isolated, 0o777)
    try:
        config = load_config()
        assert config.source is None
        assert any("in a directory every user may write" in n for n in config.notes)
        os.chmod(isolated, 0o777 | stat.S_ISVTX)  # as /tmp is
        assert load_config().select == ["DBG1"]
    finally:
        os.chmod(isolated, 0o755)


@pytest.mark.parametrize(("data", "table", "where"), [
    ({"select": "DBG1"}, "", "select"),
    ({"accept": [{"path": "a", "reason": "r"}, {"path": "b"}]}, "", "accept[1].reason"),
    ({"accept": [{"reason": "r"}]}, "tool.driftscan", "tool.driftscan.accept[0].path"),
    ({"nope": 1}, "tool.driftscan", "tool.driftscan.nope"),
])
def test_parse_config_error_names_file_and_place(data, table, where):
    with pytest.raises(ConfigError) as info:
        parse_config(data, "/p/conf.toml", table)
    message = str(info.value)
    assert message.startswith(f"/p/conf.toml: {where}: ")
    assert "\n" not in message
    if "accept" in where and ("reason" in where or "path" in where):
        assert "an accept entry needs path and reason" in message


def test_default_accept_file(tmp_path):
    assert default_accept_file("/x/named.toml", str(tmp_path)) == "/x/named.toml"
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    found = tmp_path / "a" / "pyproject.toml"
    found.write_text("[tool.driftscan]\n")
    assert default_accept_file(None, str(sub)) == str(found)
    found.unlink()
    assert default_accept_file(None, str(sub)).endswith("driftscan.toml")


ENTRY = AcceptEntry(path="pkg/loader.py", reason="kept on purpose", sha256="ab" * 32,
                    expires=datetime.date(2027, 3, 1))


def test_append_entries_to_a_new_driftscan_toml(tmp_path):
    target = tmp_path / "driftscan.toml"
    new = append_entries(str(target), [ENTRY])
    assert target.read_text() == new
    data = tomllib.loads(new)
    assert data == {"accept": [{"path": "pkg/loader.py", "sha256": "ab" * 32, "reason": "kept on purpose",
                                "expires": datetime.date(2027, 3, 1)}]}
    assert load_config(str(target)).accept == [ENTRY]


def test_append_entries_keeps_every_other_byte_of_a_pyproject(tmp_path):
    before = ('[project]\nname = "x"  # the name\n\n[tool.driftscan]\nselect = ["DBG1"]\n\n'
              '# ruff below\n[tool.ruff]\nline-length = 100\n')
    target = tmp_path / "pyproject.toml"
    target.write_text(before)
    os.chmod(target, 0o640)
    new = append_entries(str(target), [AcceptEntry(path="a.py", reason="r")])
    head, _, rest = new.partition("[[tool.driftscan.accept]]")
    assert before.startswith(head.rstrip("\n"))
    assert rest.rstrip().endswith("line-length = 100")
    assert new.index("[[tool.driftscan.accept]]") < new.index("# ruff below"), "after driftscan's table"
    data = tomllib.loads(new)
    assert data["tool"]["driftscan"]["accept"] == [{"path": "a.py", "reason": "r"}]
    assert data["tool"]["ruff"] == {"line-length": 100} and data["project"]["name"] == "x"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640


def test_append_entries_keeps_crlf_line_ends(tmp_path):
    target = tmp_path / "driftscan.toml"
    target.write_bytes(b'select = ["DBG1"]\r\n')
    append_entries(str(target), [AcceptEntry(path="a.py", reason="r")])
    raw = target.read_bytes()
    assert raw.startswith(b'select = ["DBG1"]\r\n')
    assert b"\n" not in raw.replace(b"\r\n", b""), "every new line ends as the file's lines do"


def test_append_entries_refuses_a_broken_file_and_leaves_it(tmp_path):
    target = tmp_path / "driftscan.toml"
    target.write_text('select = 3\n')
    with pytest.raises(ConfigError, match="select"):
        append_entries(str(target), [AcceptEntry(path="a.py", reason="r")])
    assert target.read_text() == 'select = 3\n'
    target.write_bytes(b'select = ["\xff"]\n')
    with pytest.raises(ConfigError, match="not UTF-8"):
        append_entries(str(target), [AcceptEntry(path="a.py", reason="r")])


def test_append_entries_to_an_inline_accept_array(tmp_path):
    target = tmp_path / "driftscan.toml"
    target.write_text('accept = [{path = "old.py", reason = "old"}]\n')
    append_entries(str(target), [AcceptEntry(path="new.py", reason="new")])
    assert [e.path for e in load_config(str(target)).accept] == ["old.py", "new.py"]


def test_config_defaults():
    config = Config()
    assert config.model_dirs == [] and config.hf_cache is False and config.hf_cache_arg is None
    assert config.accept == [] and config.notes == [] and config.source is None
