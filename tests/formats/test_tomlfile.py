"""driftscan.formats.tomlfile: TOML files read safely, validated by a pydantic model, every failure
one ConfigError line naming the file."""

from __future__ import annotations

import os

import pytest
from pydantic import BaseModel, ConfigDict

from driftscan.core.errors import ConfigError
from driftscan.formats.tomlfile import load_toml_model, read_toml


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    limit: int = 3


def test_read_toml(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('name = "x"\n[table]\nlist = [1, 2]\n')
    assert read_toml(str(path)) == {"name": "x", "table": {"list": [1, 2]}}


def test_every_failure_is_one_config_error_naming_the_file(tmp_path):
    path = tmp_path / "c.toml"
    with pytest.raises(ConfigError, match=f"^{path}: No such file or directory$"):
        read_toml(str(path))
    path.write_bytes(b'name = "\xff"\n')
    with pytest.raises(ConfigError, match=rf"^{path}: not UTF-8 \(byte 8\): TOML files are UTF-8$"):
        read_toml(str(path))
    path.write_text("name = \n")
    with pytest.raises(ConfigError, match=f"^{path}: not valid TOML: "):
        read_toml(str(path))
    path.write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(ConfigError, match=f"^{path}: not usable TOML: nested too deeply$"):
        read_toml(str(path))


def test_a_fifo_or_directory_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "fifo.toml")
    with pytest.raises(ConfigError, match="fifo.toml: .*not a regular file"):
        read_toml(str(tmp_path / "fifo.toml"))
    with pytest.raises(ConfigError, match="not a regular file"):
        read_toml(str(tmp_path))


def test_a_file_bigger_than_the_cap_is_refused(tmp_path, monkeypatch):
    from driftscan.formats import tomlfile

    monkeypatch.setattr(tomlfile, "TOML_MAX", 10)
    path = tmp_path / "c.toml"
    path.write_text('name = "a long value"\n')
    with pytest.raises(ConfigError, match="more than the 10 bytes a configuration file may have"):
        read_toml(str(path))


def test_load_toml_model(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('name = "x"\nlimit = 7\n')
    assert load_toml_model(str(path), Settings) == Settings(name="x", limit=7)
    path.write_text('name = "x"\nlimit = "many"\n')
    with pytest.raises(ConfigError, match=f"^{path}: limit: Input should be a valid integer"):
        load_toml_model(str(path), Settings)
    path.write_text('name = "x"\nlimt = 7\n')
    with pytest.raises(ConfigError, match=f"^{path}: limt: Extra inputs are not permitted$"):
        load_toml_model(str(path), Settings)
