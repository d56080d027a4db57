"""``lock-check`` with the real pdm.lock and poetry.lock of data/ against a production install:
exactly the default group's pinned versions, installed by ``uv pip install`` from the index (the
equivalent of ``pdm sync --prod`` / ``poetry install --only main``, without running either tool,
which are no test dependencies)."""

from __future__ import annotations

import platform
import shutil
from pathlib import Path

import pytest

from driftscan.lockfile.markers import marker_environment
from driftscan.lockfile.read import read_lock
from driftscan.lockfile.select import select
from fixtures import venvs
from fixtures.harness import run_cli
from fixtures.network import skip_or_fail_without_network

pytestmark = [pytest.mark.network, pytest.mark.slow, pytest.mark.xdist_group("lockfile-tools")]

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module", params=["pdm.lock", "poetry.lock"])
def production(request, tmp_path_factory) -> tuple[Path, Path, Path]:
    """(lock, venv, uv cache): a venv holding the lock's default group, as the lock pins it."""
    root = tmp_path_factory.mktemp("prod")
    lock = root / request.param
    shutil.copyfile(DATA / request.param, lock)
    cache = root / "uv-cache"
    venv = venvs.make_uv_venv(root / "venv", cache)
    required = select(read_lock(str(lock)), marker_environment(platform.python_version())).required
    try:
        venvs.uv_install(venv, cache, "--no-deps", *(f"{p.name}=={p.version}" for p in required.values()))
    except venvs.InstallError as exc:
        skip_or_fail_without_network(f"package index unreachable: {exc}")
    return lock, venv, cache


def lock_check(lock: Path, venv: Path, cache: Path, *args: str):
    return run_cli("lock-check", str(lock), "--venv", str(venv), "--uv-cache", str(cache), *args)


def test_a_production_install_matches_its_lock(production):
    lock, venv, cache = production
    proc = lock_check(lock, venv, cache)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{lock.name}: the environment matches (1 distribution, 1 verified" in proc.stdout
    assert "idna" not in proc.stdout


def test_the_dev_group_asked_for_is_reported_missing(production):
    lock, venv, cache = production
    proc = lock_check(lock, venv, cache, "--lock-group", "dev")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"{lock.name} requires idna 3.7 here; it is not installed" in proc.stdout
    assert "six" not in proc.stdout.replace("six-", "")


def test_the_same_lock_without_groups_still_reports_dev_packages_missing(production, tmp_path):
    """What every grouped lock got before groups were told apart, and an older lock still gets."""
    lock, venv, cache = production
    older = tmp_path / lock.name
    older.write_text("\n".join(line for line in lock.read_text().splitlines()
                               if not line.startswith(("groups = ", "markers = {"))) + "\n")
    proc = lock_check(older, venv, cache)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"{lock.name} requires idna 3.7 here; it is not installed" in proc.stdout


def test_audit_takes_the_same_groups(production, monkeypatch):
    from driftscan.api import audit
    from driftscan.core.values import DriftKind

    lock, venv, cache = production
    monkeypatch.setenv("UV_CACHE_DIR", str(cache))

    def missing(**groups) -> list[str]:
        report = audit(str(venv), locks=[str(lock)], **groups)
        return sorted(d.relpath for d in report.drifts if d.kind is DriftKind.LOCK_MISMATCH)

    assert missing() == []
    assert [p for p in missing(lock_groups=["dev"]) if p.startswith("idna")] == ["idna-3.7.dist-info"]
