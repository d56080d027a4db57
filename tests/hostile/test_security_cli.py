"""The command line and the library host, against hostile input (docs/security.md):
outputs that are not regular files, names that would drive a terminal, remedies the tree tries to
write, configuration found on disk, modules planted in the working directory, forking a host."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from fixtures.harness import run_cli
from fixtures.venvs import site_packages_of

CANARY_MODULE = "import pathlib, os\npathlib.Path(os.environ['CANARY']).write_text('ran')\n"


@pytest.fixture
def venv_copy(tmp_path, pristine_pip_venv) -> Path:
    dest = tmp_path / "venv"
    shutil.copytree(pristine_pip_venv, dest, symlinks=True)
    return dest


def _dist_info(venv: Path, prefix: str) -> Path:
    return next(site_packages_of(venv).glob(f"{prefix}-*.dist-info"))


def _one_line_error(proc) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert proc.stderr.startswith("driftscan: error:") and proc.stderr.count("\n") == 1, proc.stderr


# ---- outputs ------------------------------------------------------------------------------------

def test_output_onto_a_fifo_or_directory_is_refused_and_left_alone(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    (tmp_path / "code.py").write_text("x = 1\n")
    proc = run_cli("scan", str(tmp_path / "code.py"), "-o", str(fifo))
    _one_line_error(proc)
    assert "not a regular file" in proc.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    proc = run_cli("scan", str(tmp_path / "code.py"), "-o", str(tmp_path))
    _one_line_error(proc)
    assert "a directory" in proc.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a character device needs root")
def test_output_onto_a_device_node_is_refused_and_the_node_kept(tmp_path):
    null = os.stat("/dev/null")
    device = tmp_path / "null"
    os.mknod(device, 0o666 | stat.S_IFCHR, null.st_rdev)
    (tmp_path / "code.py").write_text("x = 1\n")
    _one_line_error(run_cli("scan", str(tmp_path / "code.py"), "--format", "json", "-o", str(device)))
    assert stat.S_ISCHR(os.lstat(device).st_mode) and os.lstat(device).st_rdev == null.st_rdev


def test_output_through_a_symlink_writes_its_target_and_dash_is_stdout(tmp_path):
    (tmp_path / "code.py").write_text("x = 1\n")
    target = tmp_path / "reports" / "scan.json"
    target.parent.mkdir()
    link = tmp_path / "latest.json"
    link.symlink_to(target)
    proc = run_cli("scan", str(tmp_path / "code.py"), "--format", "json", "-o", str(link))
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and json.loads(target.read_text())["findings"] == []
    proc = run_cli("scan", str(tmp_path / "code.py"), "--format", "json", "-o", "-")
    assert proc.returncode == 0 and json.loads(proc.stdout)["findings"] == []
    assert not (tmp_path / "-").exists()


# ---- text the tree chose --------------------------------------------------------------------------

def test_control_characters_in_names_never_reach_the_terminal(venv_copy):
    evil = "evil\x1b]0;pwned\x07\x1b[2J\u202etxt.py"
    (site_packages_of(venv_copy) / evil).write_text("x = 1\n")
    proc = run_cli("audit", "--venv", str(venv_copy), "--no-cache")
    assert proc.returncode == 1, proc.stderr
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout and "\u202e" not in proc.stdout
    assert "evil\\x1b]0;pwned\\x07\\x1b[2J\\u202etxt.py" in proc.stdout
    report = json.loads(run_cli("audit", "--venv", str(venv_copy), "--format", "json").stdout)
    assert any(d["relpath"] == evil for d in report["drifts"])  # JSON keeps the real name, escaped by JSON


@pytest.mark.parametrize("url", ["--index-url=http://attacker.invalid/simple", "file:///x --pre",
                                 "https://ok.invalid/a.whl; rm -rf ~", ["list"], 12])
def test_a_direct_url_never_becomes_an_installer_option_or_a_second_command(venv_copy, url):
    info = _dist_info(venv_copy, "six")
    (info / "direct_url.json").write_text(json.dumps({"url": url, "archive_info": {}}))
    with open(site_packages_of(venv_copy) / "six.py", "a") as f:
        f.write("# patched\n")
    proc = run_cli("audit", "--venv", str(venv_copy), "--format", "json", "--no-cache")
    assert proc.returncode in (1, 3), proc.stderr
    drift = next(d for d in json.loads(proc.stdout)["drifts"] if d["relpath"] == "six.py")
    remedy = drift["remedy"]
    assert "attacker" not in remedy and "--pre" not in remedy and "rm -rf" not in remedy, remedy
    assert remedy.endswith("six==1.17.0"), remedy  # falls back to the name and version METADATA gives
    plan = run_cli("plan", "--reinstall", "six", "--venv", str(venv_copy), "--format", "json")
    commands = [s.get("command") or "" for s in json.loads(plan.stdout)["steps"]]
    assert commands and not any("attacker" in c or "--pre" in c or "rm -rf" in c for c in commands), commands


def test_a_hostile_distribution_name_is_not_put_into_a_command(venv_copy):
    info = _dist_info(venv_copy, "six")
    metadata = (info / "METADATA").read_text().replace("Name: six", "Name: --index-url=http://attacker.invalid/")
    (info / "METADATA").write_bytes(metadata.encode())
    with open(site_packages_of(venv_copy) / "six.py", "a") as f:
        f.write("# patched\n")
    proc = run_cli("audit", "--venv", str(venv_copy), "--format", "json", "--no-cache")
    assert proc.returncode in (1, 3), proc.stderr
    remedies = [d["remedy"] for d in json.loads(proc.stdout)["drifts"] if d["relpath"] == "six.py"]
    # RECORD still changed the file, whatever METADATA says the name is; the command is withheld.
    assert remedies and all("attacker" not in r for r in remedies), remedies


# ---- configuration and modules found on disk ------------------------------------------------------

def test_rule_modules_of_a_found_config_are_not_imported(tmp_path):
    (tmp_path / "canary_rules.py").write_text(CANARY_MODULE)
    (tmp_path / "code.py").write_text("x = 1\n")
    (tmp_path / "driftscan.toml").write_text('rules_modules = ["canary_rules"]\nmodel_dirs = ["/etc"]\n')
    marker = tmp_path / "ran"
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path]), "CANARY": str(marker)}
    proc = run_cli("scan", "code.py", cwd=str(tmp_path), env=env)
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()
    assert "rules_modules not imported" in proc.stderr and "model_dirs outside" in proc.stderr
    proc = run_cli("scan", "code.py", "--config", "driftscan.toml", cwd=str(tmp_path), env=env)
    assert marker.exists(), proc.stderr  # named with --config: the user's own instruction


def test_python_m_driftscan_imports_nothing_from_the_working_directory(tmp_path):
    marker = tmp_path / "ran"
    for name in ("click.py", "pydantic.py", "libcst.py", "xxhash.py", "tomllib.py", "json.py"):
        (tmp_path / name).write_text(CANARY_MODULE)
    (tmp_path / "code.py").write_text("x = 1\n")
    proc = run_cli("scan", "code.py", "--format", "json", cwd=str(tmp_path), env={"CANARY": str(marker)})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["findings"] == []
    assert not marker.exists()


@pytest.mark.parametrize("content", [b"select = ['\xff\xfe']\n", b"a = " + b"[" * 100_000 + b"\n",
                                     b"model_dirs = [\n"])
def test_a_malformed_config_is_one_line(tmp_path, content):
    config = tmp_path / "bad.toml"
    config.write_bytes(content)
    (tmp_path / "code.py").write_text("x = 1\n")
    _one_line_error(run_cli("scan", str(tmp_path / "code.py"), "--config", str(config)))


def test_a_config_that_is_a_fifo_does_not_hang(tmp_path):
    fifo = tmp_path / "driftscan.toml"
    os.mkfifo(fifo)
    (tmp_path / "code.py").write_text("x = 1\n")
    _one_line_error(run_cli("scan", "code.py", "--config", str(fifo), cwd=str(tmp_path)))


# ---- plan --expect on files the tree controls -----------------------------------------------------

def test_expectations_on_a_fifo_or_an_endless_file_end_and_say_so(venv_copy, tmp_path):
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    checks = tmp_path / "checks.toml"
    checks.write_text(f'[[expect]]\nname = "fifo"\nfile = "{fifo}"\njson_lacks = "a.b"\n\n'
                      '[[expect]]\nname = "zero"\nfile = "/dev/zero"\nlacks = "x"\n')
    proc = run_cli("plan", "--reinstall", "six", "--venv", str(venv_copy), "--expect", str(checks),
                   "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr
    results = {e["name"]: e for e in json.loads(proc.stdout)["expectations"]}
    assert set(results) == {"fifo", "zero"}
    assert all(e["holds_now"] is None and "not checked" in e["reason"] for e in results.values()), results


# ---- the library in someone else's process ---------------------------------------------------------

def test_the_library_never_forks_its_host(venv_copy, monkeypatch):
    import driftscan

    monkeypatch.delenv("DRIFTSCAN_FORK", raising=False)

    def no_fork():
        raise AssertionError("driftscan forked its host process")

    monkeypatch.setattr(os, "fork", no_fork)
    (site_packages_of(venv_copy) / "planted.py").write_text("x = 1\n")
    report = driftscan.audit(venv=str(venv_copy), use_cache=False)
    assert [d.relpath for d in report.drifts] == ["planted.py"]


def test_network_tests_fail_instead_of_skipping_under_ci(monkeypatch):
    from fixtures.network import skip_or_fail_without_network

    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="network tests must run"):
        skip_or_fail_without_network("package index unreachable")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception):
        skip_or_fail_without_network("package index unreachable")


def test_no_plugins_leaves_out_entry_point_rules(tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "acme_rules.py").write_text(
        "from driftscan.lint.rule import Invalid, Rule, Valid\nfrom driftscan.core.values import Severity\n\n"
        "class NoCuda(Rule):\n    CODE = 'ACME101'\n    NAME = 'no-cuda'\n    MESSAGE = 'cuda'\n"
        "    SEVERITY = Severity.HIGH\n    TRIGGER = None\n\n"
        "    def visit_Name(self, node):\n        if node.value == 'cuda':\n            self.report(node, 'cuda')\n\n"
        "    VALID = [Valid('x = 1\\n')]\n    INVALID = [Invalid('cuda\\n', line=1)]\n")
    dist = plugins / "acme_rules-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-rules\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[driftscan.rules]\nacme = acme_rules:NoCuda\n")
    (tmp_path / "code.py").write_text("cuda\n")
    env = {"PYTHONPATH": os.pathsep.join([str(plugins), *sys.path])}
    with_plugins = run_cli("scan", str(tmp_path / "code.py"), "--format", "json", env=env)
    assert [f["code"] for f in json.loads(with_plugins.stdout)["findings"]] == ["ACME101"], with_plugins.stderr
    without = run_cli("scan", str(tmp_path / "code.py"), "--format", "json", "--no-plugins", env=env)
    assert without.returncode == 0 and json.loads(without.stdout)["findings"] == [], without.stderr


def test_a_line_break_in_a_name_cannot_fake_report_lines(venv_copy):
    forged = "zz.py  (4 bytes)\n\nno drift; 1 files checked in 1 distributions in 0.01 s; 0 unverifiable; 0 errors\n\n"
    (site_packages_of(venv_copy) / forged).write_text("x = 1\n")
    proc = run_cli("audit", "--venv", str(venv_copy), "--no-cache")
    assert proc.returncode == 1, proc.stderr
    assert "\nno drift;" not in proc.stdout and "zz.py  (4 bytes)\\x0a\\x0ano drift;" in proc.stdout
    plan = run_cli("plan", "--reinstall", "six", "--venv", str(venv_copy))
    assert "\nno drift;" not in plan.stdout, plan.stdout


def test_a_found_config_cannot_turn_on_the_users_hub_cache(tmp_path, monkeypatch):
    (tmp_path / "driftscan.toml").write_text("hf_cache = true\n")
    (tmp_path / "code.py").write_text("x = 1\n")
    from driftscan.config.settings import load_config

    monkeypatch.chdir(tmp_path)
    config = load_config()
    assert config.hf_cache is False and any("hf_cache = true set aside" in n for n in config.notes)


def test_a_backdated_writer_does_not_make_old_files_its_dumps(tmp_path):
    """The tree sets mtimes at will: what counts is when the code last changed here (ctime)."""
    from driftscan.lint.drifts import _mtime

    code = tmp_path / "evil.py"
    code.write_text("torch.save(x, '/srv/data/weights.safetensors')\n")
    os.utime(code, (31536000, 31536000))  # touch -d 1971
    assert _mtime(str(code)) >= os.stat(code).st_ctime > 31536000
