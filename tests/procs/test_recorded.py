"""procs with driftscan.runtime's recorder in the process: the module files it imported that are
no longer on disk as imported are exact evidence, first; a forged record file costs only its own
process that evidence and is said."""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path

import pytest

from driftscan import api
from driftscan.procs import Source, Strength
from fixtures.paths import REPO
from fixtures.processes import python
from fixtures.venvs import site_packages_of

pytestmark = pytest.mark.slow

RECORDING = ("import sys, driftscan.runtime as r\nr.start()\nimport pkgx.mod\nr.flush()\n"
             "print('ready', flush=True)\nsys.stdin.read()\n")


@pytest.fixture
def recorded(venv, tmp_path):
    run = tmp_path / "xdg-run"
    run.mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(XDG_RUNTIME_DIR=str(run), PYTHONPATH=str(REPO))
    proc = subprocess.Popen([python(venv), "-c", RECORDING], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        yield proc, run / "driftscan"
    finally:
        proc.kill()
        proc.wait()


def _of(report, pid):
    return next(p for p in report.processes if p.pid == pid)


def test_a_recorded_process_running_an_edited_module_has_exact_evidence_first(venv, recorded):
    proc, records = recorded
    assert any(records.iterdir())  # the recorder wrote its file
    report = api.procs(venv=str(venv), runtime_dirs=[str(records)], compile_caches=False)
    assert not _of(report, proc.pid).stale  # nothing changed yet
    mod = site_packages_of(venv) / "pkgx" / "mod.py"
    tmp = mod.with_suffix(".new")
    tmp.write_text(mod.read_text() + "VALUE = 2\n")
    os.replace(tmp, mod)  # as an installer or restore writes: a new file renamed over the old
    report = api.procs(venv=str(venv), runtime_dirs=[str(records)], compile_caches=False)
    p = _of(report, proc.pid)
    assert p.stale and (p.evidence[0].strength, p.evidence[0].source) == (Strength.EXACT, Source.RECORDER)
    assert p.evidence[0].files == [str(mod)] and p.evidence[0].count == 1
    assert report.errors == []


def test_a_forged_record_file_is_said_and_costs_only_that_process(venv, recorded):
    proc, records = recorded
    [own] = list(records.iterdir())
    own.write_text("not a record file\n" * 10)
    report = api.procs(venv=str(venv), runtime_dirs=[str(records)], compile_caches=False)
    assert not any(e.source is Source.RECORDER for e in _of(report, proc.pid).evidence)
    assert any(f"PID {proc.pid}" in e and "runtime record file not used" in e for e in report.errors), report.errors


def test_a_record_naming_files_outside_the_environment_reads_none_of_them(venv, recorded, monkeypatch, tmp_path):
    """A record names paths of its process's choosing: only the environment's are looked at."""
    import driftscan.procs.recorded as recorded_module
    from driftscan.runtime.records import ModuleRecord

    proc, records = recorded
    outside = tmp_path / "secret.py"
    outside.write_text("SECRET = 1\n")
    link = site_packages_of(venv) / "pkgx" / "link.py"
    link.symlink_to(outside)
    real = recorded_module.changed
    looked_at: list[str] = []

    def spy(recs):
        looked_at.extend(m.path for m in recs.modules)
        return real(recs)

    def forged(*args, **kwargs):
        recs = real_read(*args, **kwargs)
        extra = tuple(ModuleRecord(name, path, 0, 0, 1, 0, None) for name, path in (
            ("a", str(outside)), ("b", str(site_packages_of(venv) / "pkgx" / ".." / ".." / "x.py")), ("c", str(link))))
        return dataclasses.replace(recs, modules=recs.modules + extra) if recs is not None else None

    real_read = recorded_module.read_records
    monkeypatch.setattr(recorded_module, "changed", spy)
    monkeypatch.setattr(recorded_module, "read_records", forged)
    api.procs(venv=str(venv), runtime_dirs=[str(records)], compile_caches=False)
    assert looked_at and all(p.startswith(str(venv)) and ".." not in p and p != str(link) for p in looked_at)
