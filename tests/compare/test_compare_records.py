"""``driftscan compare`` finds a RECORD rewritten to match an edit: invisible to an audit of that
machine alone, not to the fleet. Real venvs at three paths (the runner's pip, and uv), a real
wheel built here with a console script (its RECORD row holds each venv's path), real audits and
snapshots, the command line as a user runs it."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from fixtures import venvs
from fixtures.harness import replace_by_rename, run_cli
from fixtures.wheels import build_wheel

from driftscan.api import audit
from driftscan.compare import compare_files

RECORD = "recpkg-1.0.dist-info/RECORD"
EDITED = "recpkg/m2.py"


@pytest.fixture(scope="module")
def house(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("recordwheels")
    files: dict[str, bytes | str] = {f"recpkg/m{i}.py": f"X{i} = {i}\n" for i in range(4)}
    files["recpkg/__init__.py"] = "def main():\n    print('rec')\n"
    build_wheel(where, "recpkg", "1.0", files, console_scripts={"rec": "recpkg:main"})
    return where


@pytest.fixture(scope="module")
def nodes(tmp_path_factory, house) -> list[Path]:
    """Three venvs at three paths, the same wheel installed by pip (bytecode compiled: pip lists
    each .pyc in RECORD)."""
    return venvs.pip_venvs_at(tmp_path_factory.mktemp("recordfleet"),
                              ("node0/venv", "srv/ray/runtime_env/abc/venv", "home/user/venv"), house, "recpkg")


@pytest.fixture(scope="module")
def uv_node(tmp_path_factory, house, uv_cache) -> Path:
    venv = venvs.make_uv_venv(tmp_path_factory.mktemp("recorduv") / "venv", uv_cache)
    venvs.uv_install(venv, uv_cache, "--no-index", "--find-links", str(house), "--link-mode", "copy", "recpkg")
    return venv


def record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


@contextmanager
def rewritten(venv: Path, extra: str) -> Iterator[Path]:
    """``recpkg/m2.py`` edited and its RECORD row rewritten to match (the real sha256 and size), its
    bytecode recompiled, as someone covering their tracks would; everything put back after."""
    site = venvs.site_packages_of(venv)
    module, record = site / EDITED, site / RECORD
    old_module, old_record = module.read_text(), record.read_bytes()
    new = (old_module + extra).encode()
    rows = old_record.decode().splitlines(keepends=True)
    hit = [n for n, row in enumerate(rows) if row.startswith(EDITED + ",")]
    assert len(hit) == 1
    ending = "\r\n" if rows[hit[0]].endswith("\r\n") else "\n"
    rows[hit[0]] = f"{EDITED},{record_hash(new)},{len(new)}{ending}"
    replace_by_rename(module, new.decode())
    record.write_bytes("".join(rows).encode())
    subprocess.run([str(venvs.python_of(venv)), "-m", "compileall", "-q", "-f", str(module)], check=True)
    try:
        yield module
    finally:
        replace_by_rename(module, old_module)
        record.write_bytes(old_record)
        subprocess.run([str(venvs.python_of(venv)), "-m", "compileall", "-q", "-f", str(module)], check=True)


def snapshot(venv: Path, out: Path) -> Path:
    done = run_cli("snapshot", "--venv", str(venv), "-o", str(out))
    assert done.returncode == 0, done.stderr
    return out


def audit_json(venv: Path, out: Path) -> Path:
    done = run_cli("audit", "--venv", str(venv), "--format", "json", "-o", str(out), "--no-pristine")
    assert done.returncode in (0, 1), done.stderr
    return out


def digest_of(report: Path) -> str:
    [dist] = [d for d in json.loads(report.read_text())["distributions"] if d["name"] == "recpkg"]
    return dist["record_digest"]


def rewritten_outliers(result):
    return [o for o in result.outliers if o.kind == "record-rewritten"]


def test_an_untouched_fleet_has_no_rewritten_record(tmp_path, nodes):
    snaps = [snapshot(v, tmp_path / f"s{n}.json") for n, v in enumerate(nodes)]
    assert compare_files([str(s) for s in snaps]).outliers == []
    reports = [audit_json(v, tmp_path / f"r{n}.json") for n, v in enumerate(nodes)]
    assert len({digest_of(r) for r in reports}) == 1  # three paths, one digest
    result = compare_files([str(r) for r in reports], before_after=False)
    assert result.outliers == [] and not result.differs


def test_a_rewritten_record_is_the_outlier_by_snapshots_and_by_reports(tmp_path, nodes):
    with rewritten(nodes[1], "import pdb; pdb.set_trace()\n"):
        alone = audit(str(nodes[1]))
        assert alone.drifts == []  # the machine alone: clean, RECORD vouches for the edit

        snaps = [snapshot(v, tmp_path / f"s{n}.json") for n, v in enumerate(nodes)]
        result = compare_files([str(s) for s in snaps])
        [found] = rewritten_outliers(result)
        assert (found.machine, found.relpath, found.root, found.scope) == (str(snaps[1]), RECORD, "site-packages",
                                                                              "package")
        assert found.distribution == {"name": "recpkg", "version": "1.0"}
        assert found.files == [EDITED]
        assert found.majority["machines"] == 2 and found.majority["of"] == 3
        assert found.this["xxh3_128"] == json.loads(snaps[1].read_text())["files"][
            str(Path(found.path).relative_to(nodes[1]))]["xxh3_128"]
        assert Path(found.path).is_file()
        # The edited file is an outlier of its own; RECORD is not listed twice.
        assert sorted((o.relpath, o.kind) for o in result.outliers) == [(RECORD, "record-rewritten"),
                                                                        (EDITED, "modified")]

        reports = [audit_json(v, tmp_path / f"r{n}.json") for n, v in enumerate(nodes)]
        assert json.loads(reports[1].read_text())["drifts"] == []
        result = compare_files([str(r) for r in reports], before_after=False)
        [found] = result.outliers
        assert (found.machine, found.kind, found.relpath) == (str(reports[1]), "record-rewritten", RECORD)
        assert Path(found.path).is_file()  # the RECORD's path on that machine
        assert found.this == {"state": "record", "hash": digest_of(reports[1])}
        assert found.majority == {"state": "record", "hash": digest_of(reports[0]), "machines": 2, "of": 3}
        assert found.files is None and result.differs

        done = run_cli("compare", *map(str, reports))
        assert done.returncode == 1, done.stderr
        assert "record-rewritten" in done.stdout and RECORD in done.stdout
        done = run_cli("compare", *map(str, snaps))
        assert done.returncode == 1, done.stderr
        print(done.stdout)
        assert f"files unlike the majority's: {EDITED}" in done.stdout
        done = run_cli("compare", *map(str, snaps), "--format", "markdown")
        assert done.returncode == 1, done.stderr
        assert "record-rewritten" in done.stdout and EDITED in done.stdout


def test_pip_and_uv_installs_of_one_wheel_are_no_rewrite(tmp_path, nodes, uv_node):
    fleet = [*nodes, uv_node]
    reports = [audit_json(v, tmp_path / f"r{n}.json") for n, v in enumerate(fleet)]
    assert len({digest_of(r) for r in reports}) == 1  # pip's RECORD (CRLF, .pyc rows) and uv's: one digest
    result = compare_files([str(r) for r in reports], before_after=False)
    assert rewritten_outliers(result) == []
    snaps = [snapshot(v, tmp_path / f"s{n}.json") for n, v in enumerate(fleet)]
    result = compare_files([str(s) for s in snaps])
    assert rewritten_outliers(result) == []  # pip's RECORDs compared among themselves only
    assert any("different installers" in note for note in result.notes), result.notes


def test_two_of_three_rewritten_differently_is_a_tie(tmp_path, nodes):
    with rewritten(nodes[0], "A = 1\n"), rewritten(nodes[1], "B = 2\n"):
        reports = [audit_json(v, tmp_path / f"r{n}.json") for n, v in enumerate(nodes)]
        result = compare_files([str(r) for r in reports], before_after=False)
        assert rewritten_outliers(result) == []
        assert any("no majority" in note and "recpkg 1.0" in note for note in result.notes), result.notes
        snaps = [snapshot(v, tmp_path / f"s{n}.json") for n, v in enumerate(nodes)]
        result = compare_files([str(s) for s in snaps])
        assert rewritten_outliers(result) == []
        assert any("no majority" in note for note in result.notes), result.notes


def test_two_machines_give_no_verdict(tmp_path, nodes):
    with rewritten(nodes[0], "A = 1\n"):
        reports = [audit_json(v, tmp_path / f"r{n}.json") for n, v in enumerate(nodes[:2])]
        result = compare_files([str(r) for r in reports], before_after=False)
        assert rewritten_outliers(result) == []
        assert any("fewer than 3" in note for note in result.notes), result.notes
