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
