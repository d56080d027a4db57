"""driftscan procs on real processes: which run the environment, and the evidence of old code."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from driftscan import api
from driftscan.procs import Source, Strength, Tie
from driftscan.procs.proc import Gone, read_entry
from driftscan.environment.target import resolve_target
from driftscan.procs.model import EvidenceOut
from driftscan.procs.scan import Environment, environment_of, scan
from driftscan.render.registry import OutputFormat, render
from driftscan.cli.output import for_text
from fixtures.harness import replace_by_rename, run_cli
from fixtures.venvs import site_packages_of

from fixtures.processes import importer, python


def of(report, proc):
    found = [p for p in report.processes if p.pid == proc.pid]
    assert len(found) == 1, [p.pid for p in report.processes]
    return found[0]


def pause():
    """Past the scan's margin of two clock ticks, so a file written now is later than a start before."""
    time.sleep(0.05)


def test_processes_of_the_venv_are_listed_and_not_stale(venv, spawn):
    c = spawn(importer(venv))
    m = spawn([python(venv), "-m", "pkgx.mod"])
    report = api.procs(venv=str(venv))
    assert of(report, c).tie is Tie.EXECUTABLE and of(report, m).tie is Tie.MODULE
    assert not of(report, c).stale and not of(report, m).stale and report.restart == []
    assert of(report, m).argv == [python(venv), "-m", "pkgx.mod"] and of(report, m).module == "pkgx.mod"
    assert of(report, c).user and of(report, c).started_at <= time.time()


def test_a_module_edited_in_place_makes_every_process_likely_stale(venv, spawn):
    c = spawn(importer(venv))
    m = spawn([python(venv), "-m", "pkgx.mod"])
    pause()
    mod = site_packages_of(venv) / "pkgx" / "mod.py"
    with open(mod, "a") as f:
        f.write("VALUE = 2\n")
    pause()
    after = spawn(importer(venv))
    report = api.procs(venv=str(venv))
    for proc in (c, m):
        p = of(report, proc)
        assert p.stale and p.evidence[0].strength is Strength.LIKELY and p.evidence[0].source is Source.CTIME
        assert p.evidence[0].files == [str(mod)] and p.evidence[0].count == 1
        assert p.remedy == f"restart PID {proc.pid} ({p.remedy.split('(', 1)[1]}"
        assert p.remedy in report.restart
    assert not of(report, after).stale  # started after the edit: runs what is on disk
    assert report.summary.stale == 2


def test_a_module_replaced_by_rename_is_likely_stale(venv, spawn):
    m = spawn([python(venv), "-m", "pkgx.mod"])
    pause()
    mod = site_packages_of(venv) / "pkgx" / "mod.py"
    replace_by_rename(mod, mod.read_text() + "VALUE = 3\n")
    p = of(api.procs(venv=str(venv)), m)
    assert p.stale and [e.files for e in p.evidence] == [[str(mod)]]


def test_a_loaded_shared_library_replaced_then_deleted_is_exact(venv, spawn):
    native = site_packages_of(venv) / "pkgx" / "_native.so"
    proc = spawn(importer(venv, f"import ctypes; lib = ctypes.CDLL({str(native)!r})"))
    p = of(api.procs(venv=str(venv)), proc)
    assert not p.stale
    pause()
    replacement = native.with_name("_native.so.new")
    replacement.write_bytes(native.read_bytes())
    os.replace(replacement, native)
    p = of(api.procs(venv=str(venv)), proc)
    exact = [e for e in p.evidence if e.strength is Strength.EXACT]
    assert [(e.source, e.reason, e.files) for e in exact] == [(Source.MAPS, "replaced", [str(native)])]
    assert p.evidence[0].strength is Strength.EXACT  # strongest first
    native.unlink()
    p = of(api.procs(venv=str(venv)), proc)
    assert [(e.reason, e.files) for e in p.evidence if e.strength is Strength.EXACT] == [("deleted", [str(native)])]


def test_a_process_of_another_environment_is_not_listed_but_all_shows_it(venv, tmp_path, spawn):
    other = tmp_path / "other"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(other)], check=True)
    proc = spawn([str(other / "bin" / "python"), "-c", "import sys; print('ready', flush=True); sys.stdin.read()"])
    assert proc.pid not in {p.pid for p in api.procs(venv=str(venv)).processes}
    p = of(api.procs(venv=str(venv), all_python=True), proc)
    assert p.tie is Tie.NONE and not p.stale and p.remedy is None


def test_a_process_that_exits_while_read_is_skipped(tmp_path):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    with pytest.raises(Gone):
        read_entry(gone.pid)
    # /proc listed it, then it went: its files are gone between the listing and the reads
    fake = tmp_path / "proc"
    (fake / "4242").mkdir(parents=True)
    (fake / "self").mkdir()
    report = scan(_env(tmp_path), proc=str(fake))
    assert report.summary.exited == 1 and report.processes == []


def _env(tmp_path: Path) -> Environment:
    return Environment(prefixes=(str(tmp_path / "env"),), programs=(str(tmp_path / "env" / "bin"),), site_packages=())


def test_a_hostile_command_line_is_inert_in_text_and_exact_in_json(venv, spawn):
    hostile = "\x1b]0;owned\x07\x1b[2J\nSTALE PID 1 fake line\r\u202e"
    proc = spawn([python(venv), "-c", "import sys, pkgx.mod; print('ready', flush=True); sys.stdin.read()",
                  hostile])
    report = api.procs(venv=str(venv))
    text = render(for_text(report, "text"), OutputFormat.TEXT)
    block = text.split(f"PID {proc.pid}", 1)[1].split("\n\n", 1)[0]
    assert "\x1b" not in text and "\u202e" not in text and "\r" not in text
    assert "\nSTALE PID 1 fake line" not in text and "\\x0aSTALE PID 1 fake line" in block
    assert json.loads(render(report, OutputFormat.JSON))["processes"][[p.pid for p in report.processes].index(
        proc.pid)]["argv"][-1] == hostile


@pytest.mark.slow
def test_the_command_line_exits_by_the_stale_process_policy(venv, spawn):
    proc = spawn([python(venv), "-m", "pkgx.mod"])
    args = ("procs", "--venv", str(venv), "--format", "json")
    clean = run_cli(*args)
    assert clean.returncode & 1 == 0, clean.stderr
    pause()
    mod = site_packages_of(venv) / "pkgx" / "mod.py"
    mod.write_text(mod.read_text() + "\n")
    stale = run_cli(*args)
    assert stale.returncode & 1 == 1, stale.stderr
    assert proc.pid in {p["pid"] for p in json.loads(stale.stdout)["processes"] if p["stale"]}
    assert run_cli(*args, "--fail-on", "stale-process").returncode & 1 == 1
    assert run_cli(*args, "--fail-on", "never").returncode & 1 == 0
    assert run_cli(*args, "--exit-zero").returncode & 1 == 0
    bad = run_cli(*args, "--fail-on", "stale-processes")
    assert bad.returncode == 2 and "stale-process" in bad.stderr
    text = run_cli("procs", "--venv", str(venv))
    assert f"restart PID {proc.pid}" in text.stdout


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run the scan as another user")
def test_what_another_user_cannot_see_is_said_and_sets_bit_2(spawn):
    """Run as nobody: a root process started from the venv is listed by its command line, its
    mapped files said not visible (exit bit 2); root's other Python processes are counted hidden."""
    import shutil
    import sysconfig
    import tempfile

    from fixtures.paths import REPO

    root = Path(tempfile.mkdtemp(prefix="driftscan-procs-"))
    try:
        os.chmod(root, 0o755)
        venv = root / "v"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        proc = spawn([python(venv), "-c", "import sys; print('ready', flush=True); sys.stdin.read()"])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), sysconfig.get_paths()["purelib"]]),
               "PYTHONDONTWRITEBYTECODE": "1"}
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        for interpreter in dict.fromkeys([sys.executable, os.path.realpath(sys.executable),
                                          f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"]):
            try:
                out = subprocess.run([interpreter, "-m", "driftscan", "procs", "--venv", str(venv), "--format",
                                      "json"], user="nobody", env=env, capture_output=True, text=True, cwd=str(root))
            except OSError:
                continue
            if "No module named" not in out.stderr and "Permission denied" not in out.stderr:
                break
        else:
            pytest.skip("no interpreter and checkout an unprivileged user can run here")
        assert out.returncode & 2, out.stderr
        report = json.loads(out.stdout)
        mine = [p for p in report["processes"] if p["pid"] == proc.pid]
        assert mine and mine[0]["user"] == "root" and mine[0]["tie"] == "executable"
        assert any("not visible to this user (run as root or as its owner)" in n for n in mine[0]["not_checked"])
        assert report["summary"]["hidden"] == len(report["hidden"]) and report["summary"]["hidden"] >= 1
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_bare_site_packages_finds_the_processes_of_its_prefix(venv, spawn):
    proc = spawn([python(venv), "-m", "pkgx.mod"])
    report = api.procs(site_packages=[str(site_packages_of(venv))])
    assert of(report, proc).tie is Tie.MODULE


def test_a_recorder_s_evidence_comes_first(venv, spawn):
    """The seam a runtime recorder plugs into: its exact evidence leads the list."""
    proc = spawn([python(venv), "-m", "pkgx.mod"])
    pause()
    mod = site_packages_of(venv) / "pkgx" / "mod.py"
    mod.write_text(mod.read_text() + "\n")

    class Recorded:
        def evidence(self, entry, started_at, env):
            return [EvidenceOut(strength=Strength.EXACT, source=Source.RECORDER, reason="recorded",
                                files=[str(mod)], count=1)] if entry.pid == proc.pid else []

    env = environment_of(resolve_target(str(venv)))
    p = of(scan(env, recorder=Recorded()), proc)
    assert [(e.strength, e.source) for e in p.evidence] == [(Strength.EXACT, Source.RECORDER),
                                                            (Strength.LIKELY, Source.CTIME)]


def _unshare_works() -> bool:
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "true"], capture_output=True).returncode == 0


needs_unshare = pytest.mark.skipif(not _unshare_works(), reason="needs root and unshare --mount")


@needs_unshare
def test_a_process_in_another_mount_namespace_is_read_through_its_root(venv, spawn):
    native = site_packages_of(venv) / "pkgx" / "_native.so"
    proc = spawn(["unshare", "--mount", "--propagation", "private", *importer(
        venv, f"import ctypes; lib = ctypes.CDLL({str(native)!r})")])
    p = of(api.procs(venv=str(venv)), proc)
    assert p.where.other_mount_namespace and p.tie is Tie.EXECUTABLE and not p.stale
    pause()
    replacement = native.with_name("_native.so.new")
    replacement.write_bytes(native.read_bytes())
    os.replace(replacement, native)
    p = of(api.procs(venv=str(venv)), proc)
    assert [(e.strength, e.reason, e.files) for e in p.evidence if e.source is Source.MAPS] == [
        (Strength.EXACT, "replaced", [str(native)])]


@needs_unshare
def test_the_same_path_naming_another_environment_in_its_namespace_is_not_ours(venv, tmp_path, spawn):
    other = tmp_path / "other"
    shutil.copytree(venv, other, symlinks=True)
    argv = importer(venv)
    script = f"mount --bind {shlex.quote(str(other))} {shlex.quote(str(venv))} && exec {shlex.join(argv)}"
    proc = spawn(["unshare", "--mount", "--propagation", "private", "sh", "-c", script])
    assert proc.pid not in {p.pid for p in api.procs(venv=str(venv)).processes}
    p = of(api.procs(venv=str(venv), all_python=True), proc)
    assert p.tie is Tie.NONE and p.where.other_mount_namespace
