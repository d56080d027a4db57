"""The configuration file: model directories, rule modules and selections the CLI adds."""

from __future__ import annotations

import json
import os
import sys

import pytest

from driftscan.config.settings import load_config
from driftscan.core.errors import ConfigError
from fixtures.harness import run_cli
from fixtures.modeldirs import build_local_dir, seed_files, sm120_edit

PLUGIN = '''
from driftscan.lint.rule import Invalid, Rule, Valid
from driftscan.core.values import Severity


class NoHelloWorld(Rule):
    """Our team's rule: no 'hello world' strings in production code."""

    CODE = "ACME001"
    NAME = "hello-world"
    MESSAGE = "hello world string"
    SEVERITY = Severity.HIGH
    TRIGGER = None

    def visit_SimpleString(self, node):
        if "hello world" in node.value.lower():
            self.report(node, "hello world string")

    VALID = [Valid("x = 'goodbye'\\n")]
    INVALID = [Invalid("x = 'Hello World'\\n", line=1)]
'''


def test_config_model_dirs_add_to_the_default_environment(tmp_path):
    model = build_local_dir(tmp_path / "kimi", seed_files())
    sm120_edit(model)
    (tmp_path / "driftscan.toml").write_text(f'model_dirs = ["kimi"]\nselect = ["DBG1"]\n')
    proc = run_cli("audit", "--format", "json", cwd=str(tmp_path))  # ./driftscan.toml is found
    assert proc.returncode in (1, 3), proc.stderr
    report = json.loads(proc.stdout)
    assert report["target"]["model_dirs"] == [str(model)]
    assert report["target"]["site_packages"]  # the running environment is still audited
    assert {d["relpath"] for d in report["drifts"] if d["scope"] == "data"} == {"config.json", "hf_quant_config.json"}


def test_rule_module_named_in_config_runs_in_scan(tmp_path):
    (tmp_path / "acme_config_rules.py").write_text(PLUGIN)
    (tmp_path / "code.py").write_text("GREETING = 'hello world'\n")
    config = tmp_path / "team.toml"
    config.write_text('rules_modules = ["acme_config_rules"]\n')
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    proc = run_cli("scan", str(tmp_path / "code.py"), "--config", str(config), "--format", "json", env=env)
    assert proc.returncode == 1, proc.stderr
    assert [f["code"] for f in json.loads(proc.stdout)["findings"]] == ["ACME001"]
    from driftscan.lint.testing import check_rule_examples

    sys.path.insert(0, str(tmp_path))
    try:
        import acme_config_rules

        check_rule_examples(acme_config_rules.NoHelloWorld)  # a user rule is tested from its own examples
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("acme_config_rules", None)  # another test has a module of its own by a similar name


@pytest.mark.parametrize(("text", "message"), [
    ("model_dirs = 3\n", "model_dirs"),
    ("unknown_key = 1\n", "unknown_key"),
    ("model_dirs = [\n", "not valid TOML"),
])
def test_bad_config_is_one_clear_error(tmp_path, text, message):
    config = tmp_path / "bad.toml"
    config.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(str(config))
    proc = run_cli("audit", "--config", str(config))
    assert proc.returncode == 2 and proc.stderr.startswith("driftscan: error:") and "Traceback" not in proc.stderr


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


def test_a_broken_pyproject_on_the_way_up_is_one_line(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.driftscan\nselect = 1\n")
    proc = run_cli("scan", "--help", cwd=str(tmp_path))  # --help reads no configuration
    assert proc.returncode == 0
    (tmp_path / "code.py").write_text("x = 1\n")
    proc = run_cli("scan", "code.py", cwd=str(tmp_path))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "not valid TOML" in proc.stderr, proc.stderr
    (tmp_path / "pyproject.toml").write_text("[tool]\ndriftscan = 3\n")
    proc = run_cli("scan", "code.py", cwd=str(tmp_path))
    assert proc.returncode == 2 and "tool.driftscan is not a table" in proc.stderr, proc.stderr


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
