"""A published wheel whose own RECORD row is wrong about one of its files (torch 0.2.0's
``libTHCS.so.1``): pip and uv install it and copy the wrong row into the installed RECORD. With
the wheel at hand (``--wheels``) the audit reports the file as ``upstream-record-mismatch`` —
the wheel's bytes, not the user's drift — and the default ``--fail-on drift`` passes; without it
the file is ``modified`` (nothing tells the two apart); a file the user edited stays ``modified``.

Real wheels built here, real pip and real uv, the real command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixtures import venvs
from fixtures.upgrades import cli, install, own_env, pip_venv, site_of
from fixtures.wheelfiles import WRONG_DIGEST, wheel_with_wrong_row

pytestmark = pytest.mark.slow

FILES = {"wrongpkg/__init__.py": "", "wrongpkg/core.py": "X = 1\n", "wrongpkg/libwrong.so.1": b"\x7fELF shipped bytes"}
WRONG = "wrongpkg/libwrong.so.1"


def _audit(venv: Path, env: dict[str, str], *extra: str) -> tuple[int, dict]:
    proc = cli("audit", "--venv", str(venv), "--format", "json", "--no-cache", *extra, env=env)
    assert proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def _drift(report: dict) -> dict:
    (drift,) = [d for d in report["drifts"] if d["relpath"] == WRONG]
    return drift


@pytest.fixture(scope="module")
def house(tmp_path_factory) -> tuple[Path, Path]:
    house = tmp_path_factory.mktemp("wrongrow-house")
    return house, wheel_with_wrong_row(house, "wrongpkg", "1.0", FILES, WRONG)


def _installed_row(venv: Path) -> str:
    record = (site_of(venv) / "wrongpkg-1.0.dist-info" / "RECORD").read_text()
    (row,) = [r for r in record.splitlines() if r.startswith(f"{WRONG},")]
    return row


def test_pip_copies_the_wrong_row_and_the_wheel_resolves_it(tmp_path_factory, tmp_path, house):
    where, wheel = house
    venv = pip_venv(tmp_path_factory, "wrongrow-pip")
    install(venv, where, "wrongpkg==1.0")  # pip does not check the wheel's RECORD hashes
    assert _installed_row(venv).split(",")[1] == WRONG_DIGEST
    env = own_env(tmp_path)

    status, report = _audit(venv, env)
    assert (status, _drift(report)["kind"]) == (1, "modified")  # no wheel at hand: cannot tell

    status, report = _audit(venv, env, "--wheels", str(where))
    drift = _drift(report)
    assert drift["kind"] == "upstream-record-mismatch"
    assert f"the wheel {wheel.name} ships this file with these bytes" in drift["evidence"]
    assert f"its own RECORD row says {WRONG_DIGEST}: the row is wrong upstream" in drift["evidence"]
    assert drift["pristine"]["path"] == str(wheel)
    assert [d["kind"] for d in report["drifts"]] == ["upstream-record-mismatch"]
    assert status == 0  # informational under the default --fail-on drift
    status, _ = _audit(venv, env, "--wheels", str(where), "--fail-on", "unverifiable")
    assert status == 1  # the policy that counts it

    text = cli("audit", "--venv", str(venv), "--no-cache", "--wheels", str(where), env=env).stdout
    assert "upstream-record-mismatch" in text and "the row is wrong upstream" in text

    # The prediction, against the real reinstall: the same bytes come back, the drift stays.
    assert drift["prediction"] == "survives"
    before = (site_of(venv) / WRONG).read_bytes()
    install(venv, where, "--force-reinstall", "--no-deps", "wrongpkg==1.0")
    assert (site_of(venv) / WRONG).read_bytes() == before
    status, report = _audit(venv, env, "--wheels", str(where))
    assert (status, _drift(report)["kind"]) == (0, "upstream-record-mismatch")


def test_a_recent_pip_copies_the_wrong_row_too(tmp_path_factory, tmp_path, house):
    where, wheel = house
    venv = pip_venv(tmp_path_factory, "wrongrow-pip26")
    venvs.modern_pip_install(venv, "--no-cache-dir", "--no-index", "--find-links", str(where), "wrongpkg==1.0")
    assert _installed_row(venv).split(",")[1] == WRONG_DIGEST
    status, report = _audit(venv, own_env(tmp_path), "--wheels", str(where))
    assert (status, _drift(report)["kind"]) == (0, "upstream-record-mismatch")


def test_the_users_edit_of_such_a_file_is_modified(tmp_path_factory, tmp_path, house):
    where, _ = house
    venv = pip_venv(tmp_path_factory, "wrongrow-edit")
    install(venv, where, "wrongpkg==1.0")
    (site_of(venv) / WRONG).write_bytes(b"\x7fELF patched bytes")
    status, report = _audit(venv, own_env(tmp_path), "--wheels", str(where))
    assert (status, _drift(report)["kind"]) == (1, "modified")


def test_uv_copies_the_wrong_row_and_the_wheel_resolves_it(tmp_path, house):
    where, wheel = house
    cache = tmp_path / "uv-cache"
    venv = venvs.make_uv_venv(tmp_path / "venv", cache)
    venvs.uv_install(venv, cache, "--no-index", "--find-links", str(where), "wrongpkg==1.0")
    assert _installed_row(venv).split(",")[1] == WRONG_DIGEST  # uv neither refuses nor rewrites it
    env = {**own_env(tmp_path), "UV_CACHE_DIR": str(cache)}

    # uv's cache archive keeps the wheel's RECORD too: without the wheel, both look edited.
    status, report = _audit(venv, env)
    assert (status, sorted(d["kind"] for d in report["drifts"])) == (1, ["cache-modified", "modified"])

    # With it, the archive's copy is the wheel's member under the same row: no edit either.
    status, report = _audit(venv, env, "--wheels", str(where))
    drift = _drift(report)
    assert drift["kind"] == "upstream-record-mismatch" and wheel.name in drift["evidence"]
    assert "uv cache clean" not in drift["remedy"]
    assert (status, [d["kind"] for d in report["drifts"]]) == (0, ["upstream-record-mismatch"])

    # The plan: the reinstall writes the wheel's bytes again; nothing to clean from uv's cache.
    proc = cli("plan", "--venv", str(venv), "--no-cache", "--wheels", str(where), "--reinstall", "wrongpkg",
               "--format", "json", env=env)
    plan = json.loads(proc.stdout)
    assert [(i["kind"], i["status"]) for i in plan["items"]] == [("upstream-record-mismatch", "SURVIVES")]
    assert not any("uv cache clean" in s["command"] for s in plan["steps"]) and proc.returncode == 0


def test_an_archive_edit_beside_the_wrong_row_is_still_cache_modified(tmp_path, house):
    where, _ = house
    cache = tmp_path / "uv-cache"
    venv = venvs.make_uv_venv(tmp_path / "venv", cache)
    venvs.uv_install(venv, cache, "--no-index", "--find-links", str(where), "wrongpkg==1.0")
    core = site_of(venv) / "wrongpkg" / "core.py"
    with open(core, "a") as f:  # in place: the edit reaches the cache through the hard link
        f.write("Y = 2\n")
    status, report = _audit(venv, {**own_env(tmp_path), "UV_CACHE_DIR": str(cache)}, "--wheels", str(where))
    (archive,) = [d for d in report["drifts"] if d["kind"] == "cache-modified"]
    assert [m["path"] for m in archive["actual"]["edited"]] == ["wrongpkg/core.py"]
    assert f"{WRONG}: as the wheel ships it" in archive["evidence"]
    assert _drift(report)["kind"] == "upstream-record-mismatch" and status == 1
