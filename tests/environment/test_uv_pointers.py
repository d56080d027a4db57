"""environment/uv/pointers.py against real uv: the digest a pointer holds is the sha256 of the
wheel uv installed, and the archive it leads to holds that wheel's own RECORD."""

from __future__ import annotations

import hashlib
import sys
import zipfile
from pathlib import Path

import pytest

from driftscan.environment.uv.pointers import archive_record, scan_pointers, wheel_pointers
from driftscan.formats.record import parse_record
from fixtures import venvs
from fixtures.network import skip_or_fail_without_network
from fixtures.wheels import build_wheel


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def wheel_record(wheel: Path) -> dict:
    with zipfile.ZipFile(wheel) as zf:
        [name] = [n for n in zf.namelist() if n.endswith(".dist-info/RECORD")]
        return {e.path: e for e in parse_record(zf.read(name).decode()).entries}


@pytest.fixture
def uv(tmp_path):
    """(a uv venv, its private cache)."""
    cache = tmp_path / "uv-cache"
    return venvs.make_uv_venv(tmp_path / "venv", cache), cache


def test_a_local_wheel_installed_with_hashes(tmp_path, uv):
    venv, cache = uv
    wheel = build_wheel(tmp_path / "house", "localpkg", "1.0", {"localpkg/__init__.py": "X = 1\n"})
    reqs = tmp_path / "reqs.txt"
    reqs.write_text(f"localpkg @ {wheel.as_uri()} --hash=sha256:{sha256(wheel)}\n")
    venvs.uv_install(venv, cache, "--no-index", "--require-hashes", "-r", str(reqs))
    scan = scan_pointers(str(cache), "localpkg", "1.0")
    [pointer] = scan.pointers
    assert scan.rejected == ()
    assert pointer.pointer.endswith(".rev") and pointer.filename_stem == "1.0-py3-none-any"
    assert pointer.digests == {"sha256": sha256(wheel)}
    assert pointer.archive.startswith(str(cache / "archive-v")) and pointer.wheel_filename == wheel.name
    assert archive_record(pointer.archive, "localpkg", "1.0") == wheel_record(wheel)


def test_a_local_wheel_without_hashes_and_find_links(tmp_path, uv):
    venv, cache = uv
    wheel = build_wheel(tmp_path / "house", "localpkg", "1.0", {"localpkg/__init__.py": "X = 1\n"})
    flat = build_wheel(tmp_path / "flat", "flat-pkg", "2.0", {"flat_pkg/__init__.py": "Y = 2\n"})
    venvs.uv_install(venv, cache, "--no-index", str(wheel))
    venvs.uv_install(venv, cache, "--no-index", "--find-links", str(flat.parent), "flat-pkg")
    [plain] = wheel_pointers(str(cache), "localpkg", "1.0")
    assert plain.digests == {}  # uv hashes a wheel file only when asked to
    assert archive_record(plain.archive, "localpkg", "1.0") == wheel_record(wheel)
    [found] = wheel_pointers(str(cache), "Flat_Pkg", None)
    assert "/index/" in found.entry and found.pointer.endswith(".rev")
    assert archive_record(found.archive, "flat-pkg", "2.0") == wheel_record(flat)
    assert wheel_pointers(str(cache), "localpkg", "2.0") == []


def test_uv_sync_of_a_locked_wheel_file_points_at_the_locks_hash(tmp_path):
    """What ``audit --lock uv.lock`` follows: uv.lock's wheel hash is the pointer's digest, and
    the archive holds that wheel's RECORD (a path source: no network)."""
    tomllib = pytest.importorskip("tomllib")
    cache, project = tmp_path / "uv-cache", tmp_path / "proj"
    wheel = build_wheel(project, "localpkg", "1.0", {"localpkg/__init__.py": "X = 1\n"})
    (project / "pyproject.toml").write_text(
        '[project]\nname = "proj"\nversion = "0.1"\nrequires-python = ">=3.8"\n'
        f'dependencies = ["localpkg @ {wheel.as_uri()}"]\n')
    venvs.run([venvs.uv_bin(), "--directory", str(project), "sync", "--quiet", "--offline", "--python",
               sys.executable], env=venvs.uv_env(cache))
    [locked] = [p for p in tomllib.loads((project / "uv.lock").read_text())["package"] if p["name"] == "localpkg"]
    [locked_wheel] = locked["wheels"]
    [pointer] = wheel_pointers(str(cache), "localpkg", "1.0")
    assert locked_wheel["hash"] == f"sha256:{pointer.digests['sha256']}" == f"sha256:{sha256(wheel)}"
    assert archive_record(pointer.archive, "localpkg", "1.0") == wheel_record(wheel)


@pytest.mark.network
def test_registry_wheels_point_at_their_downloaded_digest(tmp_path, uv):
    venv, cache = uv
    try:
        venvs.uv_install(venv, cache, "six==1.17.0", "jmespath==1.1.0")
        venvs.run([sys.executable, "-m", "pip", "download", "--isolated", "--quiet", "--no-deps", "--only-binary",
                   ":all:", "--dest", str(tmp_path / "dl"), "six==1.17.0", "jmespath==1.1.0"])
    except venvs.InstallError as exc:
        skip_or_fail_without_network(f"package index unreachable: {exc}")
    for name, version in (("six", "1.17.0"), ("jmespath", "1.1.0")):
        [wheel] = (tmp_path / "dl").glob(f"{name}-{version}-*.whl")
        scan = scan_pointers(str(cache), name, version)
        [pointer] = scan.pointers
        assert scan.rejected == ()
        assert pointer.pointer.endswith(".http") and "/pypi/" in pointer.entry
        assert pointer.digests == {"sha256": sha256(wheel)} and pointer.size == wheel.stat().st_size
        assert archive_record(pointer.archive, name, version) == wheel_record(wheel)
