"""Bytecode that does not match its source, in a real venv with the real interpreter: a .py
edited within the second its pyc records, keeping its size, runs the old code; the audit names
that exact pyc as stale-bytecode; its remedy makes Python run the new code."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from driftscan import audit
from driftscan.core.values import DriftKind, Prediction
from fixtures import venvs
from fixtures.wheels import build_wheel

pytestmark = pytest.mark.slow

OLD = "VALUE = 111\n"
NEW = "VALUE = 222\n"  # the same size: a timestamp pyc's header cannot tell them apart
TAG = sys.implementation.cache_tag


@pytest.fixture
def house(tmp_path, monkeypatch):
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(tmp_path / "cache"))
    house = tmp_path / "house"
    build_wheel(house, "staler", "1.0", {"staler/__init__.py": "", "staler/value.py": OLD})
    return house


def _value(venv) -> str:
    return venvs.run([str(venvs.python_of(venv)), "-c", "from staler.value import VALUE; print(VALUE)"]).strip()


def _edit_keeping_mtime(source) -> None:
    """The edit a same-second save makes, as the header sees it: new bytes, same size, same mtime."""
    st = os.stat(source)
    source.write_text(NEW)
    os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns))


def _stale(venv):
    return [d for d in audit(venv=str(venv)).drifts if d.kind is DriftKind.STALE_BYTECODE]


def test_a_pip_compiled_pyc_of_an_edited_source_is_reported_and_its_remedy_runs_the_new_code(tmp_path, house):
    venv = venvs.make_pip_venv(tmp_path / "v")
    venvs.pip_install(venv, "--no-index", "--find-links", str(house), "staler")  # pip compiles the pyc
    site = venvs.site_packages_of(venv)
    source, pyc = site / "staler" / "value.py", site / "staler" / "__pycache__" / f"value.{TAG}.pyc"
    assert pyc.is_file() and _value(venv) == "111"

    _edit_keeping_mtime(source)
    assert _value(venv) == "111"  # the real interpreter runs the OLD code

    (drift,) = _stale(venv)
    assert drift.path == str(pyc)
    assert drift.expected["source"] == str(source)
    assert drift.actual["basis"] == "install-time" and drift.actual["bytecode"] == "timestamp"
    assert drift.remedy == f"rm {pyc}" and f"-m compileall -f {source}" in drift.evidence
    assert drift.prediction is Prediction.WIPED
    # the edited source is its own drift too, and the CLI's short listing names the pyc with its letter
    assert any(d.kind is DriftKind.MODIFIED and d.path == str(source) for d in audit(venv=str(venv)).drifts)
    short = subprocess.run([sys.executable, "-m", "driftscan", "audit", "--venv", str(venv), "--format", "short"],
                           capture_output=True, text=True, cwd=tmp_path)
    assert f"Y  {pyc.relative_to(tmp_path)}" in short.stdout.splitlines()

    subprocess.run(["sh", "-c", drift.remedy], check=True)
    assert not pyc.exists()
    assert _value(venv) == "222"  # compiled again from the source as it is
    assert _stale(venv) == []


def test_an_import_made_pyc_rewritten_over_in_the_same_second_is_reported(tmp_path, house):
    """No RECORD row (pip --no-compile; Python compiled it at import): the race itself, the
    source written after the pyc within the second the header records, is the evidence."""
    venv = venvs.make_pip_venv(tmp_path / "v")
    venvs.pip_install(venv, "--no-compile", "--no-index", "--find-links", str(house), "staler")
    site = venvs.site_packages_of(venv)
    source, pyc = site / "staler" / "value.py", site / "staler" / "__pycache__" / f"value.{TAG}.pyc"
    second = 1_700_000_000 * 10**9
    os.utime(source, ns=(second, second + 100))  # written at .0000001
    assert _value(venv) == "111" and pyc.is_file()  # compiled at import
    os.utime(pyc, ns=(second, second + 200_000_000))  # the pyc written at .2 of the same second
    source.write_text(NEW)
    os.utime(source, ns=(second, second + 700_000_000))  # saved again at .7
    assert _value(venv) == "111"

    (drift,) = _stale(venv)
    assert drift.path == str(pyc) and drift.actual["basis"] == "same-second"
    os.remove(pyc)
    assert _value(venv) == "222" and _stale(venv) == []


def test_a_pyc_python_recompiles_is_not_reported(tmp_path, house):
    """An ordinary edit (a new mtime): the header no longer matches, Python compiles it again."""
    venv = venvs.make_pip_venv(tmp_path / "v")
    venvs.pip_install(venv, "--no-index", "--find-links", str(house), "staler")
    source = venvs.site_packages_of(venv) / "staler" / "value.py"
    source.write_text(NEW)
    st = os.stat(source)
    os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns + 5 * 10**9))
    assert _stale(venv) == []
    assert _value(venv) == "222"
    assert _stale(venv) == []


def _pyc_of(content: str, source, st) -> bytes:
    """What the interpreter writes for ``content`` compiled as ``source`` with stat ``st`` (the
    venv runs this same interpreter): a timestamp pyc whose header matches ``st``."""
    from importlib._bootstrap_external import _code_to_timestamp_pyc

    return bytes(_code_to_timestamp_pyc(compile(content, str(source), "exec"), int(st.st_mtime), st.st_size))


@pytest.fixture
def same_second_import(monkeypatch):
    """Each .py a restore or reapply writes gets, right after the rename and before the write is
    over, a pyc compiled from ``planted[0]`` whose header matches the new file: the state an
    import of the old content within the same second leaves (the timing made certain)."""
    from driftscan.reinstall import restore as restoring

    planted: list[str] = []
    real = restoring.replace_below

    def write(base, rel, *args, **kwargs):
        why = real(base, rel, *args, **kwargs)
        if why is None and rel.endswith("value.py") and planted:
            source = os.path.join(base, rel)
            pyc = os.path.join(os.path.dirname(source), "__pycache__", f"value.{TAG}.pyc")
            with open(pyc, "wb") as f:
                f.write(_pyc_of(planted[0], source, os.stat(source)))
        return why

    monkeypatch.setattr(restoring, "replace_below", write)
    return planted


def test_restore_and_reapply_leave_no_stale_pair(tmp_path, house, same_second_import):
    from driftscan import api

    venv = venvs.make_pip_venv(tmp_path / "v")
    venvs.pip_install(venv, "--no-index", "--find-links", str(house), "staler")
    site = venvs.site_packages_of(venv)
    source, pyc = site / "staler" / "value.py", site / "staler" / "__pycache__" / f"value.{TAG}.pyc"
    source.write_text(NEW)
    st = os.stat(source)
    os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns + 2 * 10**9))  # an ordinary edit, a later second
    assert _value(venv) == "222"

    # The premise: such a pair makes the real interpreter run the other content.
    pyc.write_bytes(_pyc_of(OLD, source, os.stat(source)))
    assert _value(venv) == "111"
    pyc.unlink()

    same_second_import.append(NEW)  # restore writes OLD; an import of NEW in that second
    report = api.restore(venv=str(venv), dists=["staler"], yes=True, wheels=[str(house)],
                         checkpoint_path=str(tmp_path / "cp"))
    assert f"removed 1 stale bytecode file Python would have run instead of the file written (its header still " \
           f"matched it): {pyc}" in report.notes
    assert source.read_text() == OLD and not pyc.exists()
    assert _value(venv) == "111"

    same_second_import[0] = OLD  # reapply writes NEW back; an import of OLD in that second
    again = api.reapply(str(tmp_path / "cp"), venv=str(venv), yes=True, checkpoint_path=str(tmp_path / "cp2"))
    assert any(n.startswith("removed 1 stale bytecode file") and str(pyc) in n for n in again.notes), again.notes
    assert source.read_text() == NEW and not pyc.exists()
    assert _value(venv) == "222"


def test_restore_of_the_source_settles_the_stale_pyc_it_leaves_for_python(tmp_path, house):
    from driftscan import api

    venv = venvs.make_pip_venv(tmp_path / "v")
    venvs.pip_install(venv, "--no-index", "--find-links", str(house), "staler")
    site = venvs.site_packages_of(venv)
    source, pyc = site / "staler" / "value.py", site / "staler" / "__pycache__" / f"value.{TAG}.pyc"
    _edit_keeping_mtime(source)
    assert [d.path for d in _stale(venv)] == [str(pyc)]

    report = api.restore(venv=str(venv), dists=["staler"], yes=True, wheels=[str(house)],
                         checkpoint_path=str(tmp_path / "cp"))
    (left,) = [r for r in report.remaining if r.kind == "stale-bytecode"]
    assert left.path == str(pyc) and left.reason.startswith("its source is restored")
    assert [a.status for a in report.actions] == ["restored"]
    assert source.read_text() == OLD and _value(venv) == "111" and _stale(venv) == []


def test_a_pyc_restore_cannot_check_is_said_and_sets_bit_2(tmp_path, house):
    """A FIFO where the written file's pyc would be: never opened, so never known harmless; the
    restore says so in ``bytecode_not_removed`` and its exit status has bit 2."""
    from fixtures.harness import run_cli

    venv = venvs.make_pip_venv(tmp_path / "v")
    venvs.pip_install(venv, "--no-index", "--find-links", str(house), "staler")
    site = venvs.site_packages_of(venv)
    source = site / "staler" / "value.py"
    source.write_text(NEW)
    st = os.stat(source)
    os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns + 2 * 10**9))
    fifo = site / "staler" / "__pycache__" / f"value.{TAG}.opt-1.pyc"
    os.mkfifo(fifo)
    proc = run_cli("restore", "--venv", str(venv), "--wheels", str(house), "--yes", "--format", "json",
                   "--checkpoint", str(tmp_path / "cp"))
    assert source.read_text() == OLD, proc.stdout + proc.stderr  # the restore itself was done
    assert proc.returncode & 2, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert len(report["bytecode_not_removed"]) == 1 and str(fifo) in report["bytecode_not_removed"][0]
    assert fifo.exists()  # never opened, never removed
