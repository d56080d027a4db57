"""Expectation files: validation with clear errors, JSON pointers and dotted paths, patterns."""

from __future__ import annotations

import pytest

from driftscan.core.errors import ConfigError
from driftscan.reinstall.expect import Expectation, evaluate, load_expectations, split_pointer


def write(tmp_path, text):
    path = tmp_path / "e.toml"
    path.write_text(text)
    return str(path)


def test_relative_files_and_placeholders(tmp_path):
    exps = load_expectations(write(tmp_path, '[[expect]]\nfile = "cfg/a.json"\njson_has = "a.b"\n'
                                             '[[expect]]\nfile = "{venv}/x"\nunchanged = true\n'),
                             {"venv": "/opt/env"})
    assert exps[0].file == str(tmp_path / "cfg/a.json") and exps[1].file == "/opt/env/x"


@pytest.mark.parametrize(("text", "message"), [
    ('[[expect]]\nfile = "a"\n', "exactly one of"),
    ('[[expect]]\nfile = "a"\ncontains = "x"\nlacks = "y"\n', "exactly one of"),
    ('[[expect]]\nfile = "a"\ncontains = "("\n', "invalid regular expression"),
    ('[[expect]]\nfile = "a"\nunknown = 1\njson_has = "x"\n', "expect.0.unknown"),
    ("[[expect]\n", "not valid TOML"),
])
def test_bad_files_give_one_clear_error(tmp_path, text, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        load_expectations(write(tmp_path, text))


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError):
        load_expectations(str(tmp_path / "nope.toml"))


def test_pointers():
    assert split_pointer("/a~1b/c~0d/0") == ["a/b", "c~d", "0"]
    assert split_pointer("quantization_config.kv_cache_scheme") == ["quantization_config", "kv_cache_scheme"]


def test_evaluate_json_and_patterns():
    doc = b'{"quantization_config": {"layers": [{"kv_cache_scheme": 1}]}}'
    has = Expectation(file="f", json_has="/quantization_config/layers/0/kv_cache_scheme")
    lacks = Expectation(file="f", json_lacks="quantization_config.kv_cache_scheme")
    assert evaluate(has, doc, None)[0] is True
    assert evaluate(lacks, doc, None)[0] is True
    assert evaluate(has, b"not json", None) == (False, "not valid JSON: Expecting value: line 1 column 1 (char 0)")
    assert evaluate(has, None, None) == (False, "the file does not exist")
    assert evaluate(Expectation(file="f", contains=r"^kv_cache"), b"x\nkv_cache=1\n", None)[0] is True
    assert evaluate(Expectation(file="f", lacks="torch.save"), b"torch.save(x)", None)[0] is False
    assert evaluate(Expectation(file="f", unchanged=True), b"", None)[0] is None
