"""provenance/verdicts.py on a real pip install: a clean verdict is remembered while the installed
RECORD and the wheel are unchanged (a warm audit compares nothing again), and made afresh — with
the row that differs — once the RECORD is rewritten."""

from __future__ import annotations

import base64
import hashlib

import pytest

import driftscan.provenance.check as check
from driftscan.api import audit
from driftscan.core.values import DriftKind
from fixtures import venvs
from fixtures.harness import replace_by_rename, settle
from fixtures.wheels import build_wheel

pytestmark = pytest.mark.slow


def test_a_clean_verdict_is_remembered_until_the_record_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(tmp_path / "cache"))
    wheel = build_wheel(tmp_path / "house", "vdpkg", "1.0", {"vdpkg/__init__.py": "X = 1\n"})
    venv = venvs.make_pip_venv(tmp_path / "venv")
    venvs.pip_install(venv, "--no-index", str(wheel))
    settle(tmp_path)
    compared: list[str] = []
    real = check.compare

    def counted(dist, rows):
        compared.append(dist.name)
        return real(dist, rows)

    monkeypatch.setattr(check, "compare", counted)
    first = audit(str(venv))
    second = audit(str(venv))
    assert compared == ["vdpkg"], "the second audit takes the remembered verdict"
    [before], [after] = first.provenance, second.provenance
    assert (after.verified, after.rows_compared, after.wheel, after.source) == \
        (before.verified, before.rows_compared, before.wheel, before.source)
    assert before.verified and before.wheel == wheel.name and before.rows_compared > 0
    site = venvs.site_packages_of(venv)
    target = site / "vdpkg" / "__init__.py"
    replace_by_rename(target, "X = 2\n")
    digest = base64.urlsafe_b64encode(hashlib.sha256(target.read_bytes()).digest()).rstrip(b"=").decode()
    record = site / "vdpkg-1.0.dist-info" / "RECORD"
    record.write_text("\n".join(f"vdpkg/__init__.py,sha256={digest},{len(b'X = 2')+1}"
                                if line.startswith("vdpkg/__init__.py,") else line
                                for line in record.read_text().splitlines()) + "\n")
    third = audit(str(venv))
    assert compared == ["vdpkg", "vdpkg"], "a rewritten RECORD is compared again"
    assert [d.relpath for d in third.drifts if d.kind is DriftKind.RECORD_REWRITTEN] == ["vdpkg/__init__.py"]
