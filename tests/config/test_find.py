"""config.find: where a configuration file is looked for (nearest directory upward, a
driftscan.toml before a pyproject.toml with [tool.driftscan]), and the defaults when none applies."""

from __future__ import annotations

import os

import pytest

from driftscan.config.find import (NoConfig, discover, is_pyproject, nothing_to_read, user_config_path)
from driftscan.config.settings import load_config
from driftscan.core.errors import ConfigError


def test_discovery_precedence(tmp_path, monkeypatch):
    root = tmp_path / "a"
    sub = root / "b"
    sub.mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.driftscan]\nselect = ['DBG1']\n")
    assert discover(str(sub)) == (str(root / "pyproject.toml"), {"select": ["DBG1"]})
    (root / "driftscan.toml").write_text("select = ['DBG10']\n")  # same directory: driftscan.toml wins
    assert discover(str(sub)) == (str(root / "driftscan.toml"), None)
    (sub / "pyproject.toml").write_text("[tool.driftscan]\nignore = ['DBG108']\n")  # nearer directory wins
    assert discover(str(sub))[0] == str(sub / "pyproject.toml")
    monkeypatch.chdir(sub)
    config = load_config()
    assert config.ignore == ["DBG108"] and config.table == "tool.driftscan" and config.source == str(sub / "pyproject.toml")



def test_no_config_has_the_defaults_of_config(tmp_path, monkeypatch):
    """Where no configuration applies the CLI uses configfind.NoConfig, not the pydantic model:
    the two must agree on every setting."""
    import dataclasses

    from driftscan.config.settings import Config
    from driftscan.config.find import NoConfig, nothing_to_read

    empty, light = Config(), NoConfig()
    assert sorted(f.name for f in dataclasses.fields(light)) == sorted(Config.model_fields)
    for f in dataclasses.fields(light):
        assert getattr(light, f.name) == getattr(empty, f.name), f.name
    assert light.hf_cache_arg == empty.hf_cache_arg
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert nothing_to_read(None) is (load_config(None).source is None)
    (tmp_path / "driftscan.toml").write_text('select = ["DBG1"]\n')
    assert not nothing_to_read(None) and load_config(None).select == ["DBG1"]
    assert not nothing_to_read(str(tmp_path / "driftscan.toml"))



def test_a_pyproject_without_the_table_is_passed_over(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.driftscan]\nselect = ["DBG1"]\n')
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert discover(str(sub)) == (str(tmp_path / "pyproject.toml"), {"select": ["DBG1"]})
    # mentions driftscan, but not as its table: passed over too
    (sub / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["driftscan"]\n')
    assert discover(str(sub))[0] == str(tmp_path / "pyproject.toml")


def test_a_found_pyproject_whose_tool_driftscan_is_not_a_table(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool]\ndriftscan = 3\n')
    with pytest.raises(ConfigError, match="tool.driftscan is not a table"):
        discover(str(tmp_path))


def test_an_unreadable_pyproject_on_the_way_is_a_config_error(tmp_path):
    os.mkfifo(tmp_path / "pyproject.toml")  # is_file is False for a FIFO: passed over, never opened
    assert discover(str(tmp_path))[0] != str(tmp_path / "pyproject.toml")
    big = tmp_path / "big"
    big.mkdir()
    with open(big / "pyproject.toml", "wb") as f:
        f.truncate((16 << 20) + 1)  # larger than any configuration file
    with pytest.raises(ConfigError, match="pyproject.toml"):
        discover(str(big))


def test_a_driftscan_toml_is_found_whatever_it_says(tmp_path):
    (tmp_path / "driftscan.toml").write_text("")
    assert discover(str(tmp_path / "a" / "b")) == (str(tmp_path / "driftscan.toml"), None)


def test_user_config_path_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert user_config_path() == str(tmp_path / "driftscan" / "config.toml")
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert user_config_path() == str(tmp_path / "home" / ".config" / "driftscan" / "config.toml")


def test_nothing_to_read_sees_the_user_config(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    if discover()[0] is not None:
        pytest.skip("a configuration above the temporary directory")
    assert nothing_to_read(None)
    assert not nothing_to_read("named.toml")
    user = tmp_path / "xdg" / "driftscan" / "config.toml"
    user.parent.mkdir(parents=True)
    user.symlink_to(tmp_path / "absent")  # even a dangling link is something to look at
    assert not nothing_to_read(None)


def test_is_pyproject_by_basename():
    assert is_pyproject("/x/pyproject.toml") and is_pyproject("pyproject.toml")
    assert not is_pyproject("/x/pyproject.toml.bak") and not is_pyproject("/pyproject.toml/driftscan.toml")
    assert NoConfig().hf_cache_arg is None
