"""The command line: fail policies, quiet and verbose text, colour, the default target,
honest summaries, and the listed CLI bugs. A real venv made here (a wheel built by the test,
installed by a real pip) carries package, environment and debug drift."""

from __future__ import annotations

import json
import os
import sys

import pytest

from fixtures import venvs
from fixtures.harness import run_cli
from fixtures.modeldirs import build_local_dir
from fixtures.wheels import build_wheel

CORE = "import json\n\n\ndef load(path):\n    with open(path) as f:\n        return json.load(f)\n"
CONFIG = json.dumps({"kv_cache_scheme": "fp8", "rope_theta": 10000.0}, indent=2) + "\n"


@pytest.fixture(scope="module")
def drifted(tmp_path_factory):
    root = tmp_path_factory.mktemp("policy")
    house = root / "wheels"
    build_wheel(house, "polpkg", "1.0", {"polpkg/__init__.py": "", "polpkg/core.py": CORE,
                                         "polpkg/config.json": CONFIG})
    venv = root / "venv"
    venvs.run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    venvs.modern_pip_install(venv, "--no-index", "--find-links", str(house), "polpkg")
    site = venvs.site_packages_of(venv)
    (site / "polpkg/core.py").write_text(CORE + "\n\ndef forward(x):\n    import torch\n"
                                                "    torch.save(x, '/tmp/polpkg_dump.pt')\n    return x\n")
    (site / "polpkg/config.json").write_text(json.dumps({"rope_theta": 10000.0}, indent=2) + "\n")
    return venv, site, house


def audit(venv, *args, env=None):
    return run_cli("audit", "--venv", str(venv), "--no-pristine", *args, env=env)


def test_fail_on_policies(drifted):
    venv, _, _ = drifted
    assert audit(venv).returncode == 1  # default: any drift
    assert audit(venv, "--fail-on", "package").returncode == 1
    assert audit(venv, "--fail-on", "environment").returncode == 0  # no environment-scope drift here
    assert audit(venv, "--fail-on", "data,external").returncode == 0
    assert audit(venv, "--fail-on", "debug").returncode == 1  # the injected torch.save
    assert audit(venv, "--fail-on", "debug-high").returncode == 1
    assert audit(venv, "--fail-on", "never").returncode == 0
    assert audit(venv, "--exit-zero").returncode == 0
    bad = audit(venv, "--fail-on", "everything")
    assert bad.returncode == 2 and "--fail-on: unknown everything" in bad.stderr and "Traceback" not in bad.stderr


def test_quiet_and_verbose_text(drifted):
    venv, _, house = drifted
    quiet = audit(venv, "-q")
    assert quiet.stdout.count("\n") == 1 and quiet.stdout.startswith("2 drifts (2 modified)")
    verbose = run_cli("audit", "--venv", str(venv), "--wheels", str(house), "-v").stdout
    assert "removed /kv_cache_scheme: 'fp8'" in verbose  # json_changes under the drift
    assert "listed in the RECORD of polpkg 1.0" in verbose  # the evidence


def test_colour_only_on_request_of_a_terminal(drifted):
    venv, _, _ = drifted
    assert "\x1b[" not in audit(venv).stdout  # not a terminal
    forced = audit(venv, env={"FORCE_COLOR": "1"}).stdout
    assert "\x1b[32mWIPED\x1b[0m" in forced and "\x1b[31mhigh\x1b[0m" in forced
    assert "\x1b[" not in audit(venv, env={"FORCE_COLOR": "1", "NO_COLOR": "1"}).stdout


def test_default_target_follows_the_users_environment(drifted, tmp_path):
    venv, _, _ = drifted
    env = {"VIRTUAL_ENV": str(venv)}
    proc = run_cli("audit", "--no-pristine", env=env, cwd=str(tmp_path))
    first = proc.stdout.splitlines()[0]
    assert f"venv {venv}" in first and "(default target: VIRTUAL_ENV is set)" in first
    # No VIRTUAL_ENV, but the venv's python3 first on PATH.
    env = {"VIRTUAL_ENV": "", "CONDA_PREFIX": "", "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    first = run_cli("audit", "--no-pristine", env=env, cwd=str(tmp_path)).stdout.splitlines()[0]
    assert f"venv {venv}" in first and "first python3 on PATH" in first
    # Nothing of the kind: driftscan's own environment, and it says so.
    env = {"VIRTUAL_ENV": "", "CONDA_PREFIX": "", "PATH": "/nonexistent"}
    first = run_cli("audit", "-q", "--format", "json", env=env, cwd=str(tmp_path)).stdout
    assert json.loads(first)["target"]["chosen_because"].startswith("driftscan's own environment")


def test_large_files_checked_by_size_are_counted_apart(tmp_path):
    model = build_local_dir(tmp_path / "model", {"config.json": b"{}\n"},
                            sparse={"model-00001-of-00001.safetensors": (64 << 20, "0" * 64)})
    proc = run_cli("audit", "--model-dir", str(model), "--format", "json")
    summary = json.loads(proc.stdout)["summary"]
    assert summary["not_hashed"] == 1 and summary["files_checked"] == 2
    text = run_cli("audit", "--model-dir", str(model)).stdout.splitlines()[-1]
    assert "(1 not hashed: size and mtime only; --deep to hash)" in text


def test_nothing_verifiable_is_not_no_drift(tmp_path):
    plain = tmp_path / "plain-model"
    plain.mkdir()
    (plain / "config.json").write_text("{}\n")
    proc = run_cli("audit", "--model-dir", str(plain))
    assert "nothing could be verified" in proc.stdout.splitlines()[-1] and "no drift;" not in proc.stdout
    assert run_cli("audit", "--model-dir", str(plain), "--strict").returncode & 2


def test_scan_of_a_fifo_is_an_error_not_a_finding(tmp_path):
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    proc = run_cli("scan", str(fifo))
    assert proc.returncode == 2, proc.stdout
    assert "not a regular file (fifo): not scanned" in proc.stdout and "1 error\n" in proc.stdout


def test_revision_without_a_model_dir_is_a_usage_error():
    proc = run_cli("audit", "--revision", "main")
    assert proc.returncode == 2 and "--revision applies to model directories" in proc.stderr


def test_plan_with_no_names_is_a_usage_error_not_an_internal_one(drifted):
    venv, _, _ = drifted
    proc = run_cli("plan", "--reinstall", ",", "--venv", str(venv))
    assert proc.returncode == 2 and "needs at least one distribution name" in proc.stderr
    assert "internal error" not in proc.stderr


def test_one_file_gets_the_same_findings_from_audit_plan_and_diff(drifted, tmp_path):
    venv, site, _ = drifted
    snap = tmp_path / "snap.json"
    core = site / "polpkg/core.py"
    changed = core.read_text()
    core.write_text(CORE)  # take the snapshot of the original, then patch again
    assert run_cli("snapshot", "--venv", str(venv), "-o", str(snap)).returncode == 0
    core.write_text(changed)

    def codes(report) -> set[str]:
        return {f["code"] for d in report["drifts"] if d["relpath"] == "polpkg/core.py" for f in d["findings"]}

    for select in ([], ["--ignore", "DBG101"]):
        a = codes(json.loads(audit(venv, "--format", "json", *select).stdout))
        p = codes(json.loads(run_cli("plan", "--reinstall", "polpkg", "--venv", str(venv), "--format", "json",
                                     *select).stdout)["audit"])
        d = codes(json.loads(run_cli("diff", str(snap), "--venv", str(venv), "--format", "json", *select).stdout))
        assert a == p == d, (select, a, p, d)
        assert ("DBG101" in a) == (not select)


def test_plan_policy_looks_at_what_survives(drifted):
    venv, _, _ = drifted
    # Everything drifted is package scope of polpkg: reinstalling it leaves nothing.
    assert run_cli("plan", "--reinstall", "polpkg", "--venv", str(venv)).returncode == 0


def test_shell_completion_comes_from_click():
    import subprocess

    proc = subprocess.run([sys.executable, "-c", "from driftscan.cli import entry; entry()"],
                          env={**os.environ, "_DRIFTSCAN_COMPLETE": "bash_source"}, capture_output=True, text=True)
    assert proc.returncode == 0 and "_driftscan_completion()" in proc.stdout


def test_scan_defaults_are_quiet_and_statistics_count_per_code(tmp_path):
    (tmp_path / "a.py").write_text("print(1)\nprint(2)\nimport pdb\npdb.set_trace()\n")
    default = run_cli("scan", str(tmp_path), "--statistics")
    assert default.stdout.split() == ["1", "DBG106", "debugger-call", "1", "DBG107", "debugger-import"]
    assert default.returncode == 1  # medium findings meet the default --fail-on medium
    selected = run_cli("scan", str(tmp_path), "--statistics", "--select", "DBG1")
    assert selected.stdout.splitlines()[0].split() == ["2", "DBG109", "print-call"]
    prints = tmp_path / "only_prints"
    prints.mkdir()
    (prints / "b.py").write_text("print(1)\n")
    assert run_cli("scan", str(prints), "--select", "DBG109").returncode == 0  # low: below the default --fail-on
    assert run_cli("scan", str(tmp_path), "--exit-zero").returncode == 0


def test_scan_reports_progress_as_files_arrive(tmp_path):
    from driftscan.lint import scan_paths

    for i in range(30):
        (tmp_path / f"m{i}.py").write_text(f"X = {i}\n" + ("y = 1\n" * 20000 if i == 3 else ""))  # one big file
    for jobs in (1, 2):
        seen: list[tuple[int, int]] = []
        result = scan_paths([str(tmp_path)], jobs=jobs, progress=lambda d, t: seen.append((d, t)))
        assert result.files_scanned == 30
        assert seen[-1] == (30, 30) and [d for d, _ in seen] == sorted(d for d, _ in seen), seen


def test_every_command_takes_the_activated_venv_and_says_why_first(drifted, tmp_path):
    """In an activated venv, plan, checkpoint, restore and snapshot act on it (not on driftscan's own
    environment), and the first line they print says which target and why."""
    venv, site, house = drifted
    env = {"VIRTUAL_ENV": str(venv), "CONDA_PREFIX": ""}
    said = f"target {venv} (VIRTUAL_ENV is set)"
    cp = tmp_path / "cp"
    proc = run_cli("checkpoint", "-o", str(cp), "--allow-partial", env=env, cwd=str(tmp_path))
    assert proc.returncode in (0, 2) and proc.stderr.splitlines()[0] == f"driftscan checkpoint: {said}", proc.stderr
    index = json.loads((cp / "checkpoint.json").read_text())
    assert index["venv"] == str(venv)
    assert {f["relpath"].split("/", 3)[-1] for f in index["files"]} >= {"polpkg/core.py", "polpkg/config.json"}
    proc = run_cli("plan", "--reinstall", "polpkg", "--format", "json", env=env, cwd=str(tmp_path))
    assert proc.stderr.splitlines()[0] == f"driftscan plan: {said}", proc.stderr
    result = json.loads(proc.stdout)
    assert result["audit"]["target"]["chosen_because"] == "VIRTUAL_ENV is set"
    assert "polpkg" in result["reinstall"]
    proc = run_cli("restore", "--dist", "polpkg", env=env, cwd=str(tmp_path))
    assert proc.stderr.splitlines()[0] == f"driftscan restore: {said}", proc.stderr
    assert "polpkg/core.py" in proc.stdout
    proc = run_cli("snapshot", "-o", str(tmp_path / "snap.json"), env=env, cwd=str(tmp_path))
    assert proc.returncode == 0 and proc.stderr.splitlines()[0] == f"driftscan snapshot: {said}", proc.stderr
    assert str(venv) in (tmp_path / "snap.json").read_text()[:4000]
    proc = run_cli("reapply", str(cp), env=env, cwd=str(tmp_path))
    assert proc.stderr.splitlines()[0].startswith(f"driftscan reapply: target the environment {cp} was taken of")
