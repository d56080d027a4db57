"""A package manager's records and a wheel taken as an original are data the audited tree wrote:
each hostile case below is built for real (a conda prefix linked by py-rattler, a dpkg database
in dpkg's format, a wheel installed by pip) and audited by the command line under a time and
memory bound of the test's own (fixtures/bounded.py). A bad record is one Problem for what it
names; the rest of the audit goes on and says it could not check everything (exit bit 2).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import sys
import zipfile
import zlib
from pathlib import Path

import pytest

from fixtures import conda as fx
from fixtures import venvs
from fixtures.bounded import driftscan_bounded
from fixtures.dpkg import DIST_PACKAGES, FakeSystem
from fixtures.wheels import build_wheel

pytestmark = pytest.mark.slow


# --- conda: prefix_placeholder ------------------------------------------------------------------

@pytest.fixture(scope="module")
def channel(tmp_path_factory) -> Path:
    return fx.build_channel(tmp_path_factory.mktemp("conda-channel"))


def _prefix(channel: Path, tmp_path: Path) -> Path:
    prefix = tmp_path / "env"
    fx.install(channel, prefix, ["demo-tools", "demo-py"], tmp_path / "pkgs")
    return prefix


def _plant(prefix: Path, rel: str, placeholder: str, content: bytes) -> None:
    """Write ``content`` over ``rel`` (a copy, not the package cache's hard link) and make its
    record's placeholder ``placeholder``, with the package's sha256 and size left as they were
    except the size a binary-mode file keeps."""
    [record] = prefix.glob("conda-meta/demo-tools-*.json")
    data = json.loads(record.read_text())
    [item] = [p for p in data["paths_data"]["paths"] if p["_path"] == rel]
    item["prefix_placeholder"] = placeholder
    if item.get("file_mode") == "binary":
        item["size_in_bytes"] = len(content)
    record.write_text(json.dumps(data))
    target = prefix / rel
    target.unlink()
    target.write_bytes(content)


def _audit_prefix(prefix: Path, *, seconds: float, memory_mb: int):
    return driftscan_bounded("audit", "--no-cache", "--venv", str(prefix), "--format", "json",
                             seconds=seconds, memory_mb=memory_mb)


def test_conda_text_placeholder_bomb_is_one_problem(channel, tmp_path):
    """A 40 KB text-mode placeholder over an 8 MiB file full of the prefix: substituted back it
    would be gigabytes; the file is one problem, the audit ends within its bound."""
    prefix = _prefix(channel, tmp_path)
    unit = str(prefix).encode() + b"/"
    _plant(prefix, "etc/demo/config.ini", "/" + "p" * 40_000, unit * ((8 << 20) // len(unit)))
    proc = _audit_prefix(prefix, seconds=30, memory_mb=256)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    [error] = report["errors"]
    assert error["path"] == str(prefix / "etc/demo/config.ini")
    assert "prefix_placeholder has 40001 bytes" in error["message"]
    assert report["summary"]["files_checked"] > 10  # the rest of the prefix was audited


def test_conda_binary_placeholder_one_byte_longer_is_linear(channel, tmp_path):
    """A binary-mode placeholder one byte longer than the prefix over a 2 MiB file of the prefix
    and no NUL: every occurrence is one C string's, whose end is found once, not once each."""
    prefix = _prefix(channel, tmp_path)
    unit = str(prefix).encode()
    _plant(prefix, "lib/libdemo.so.2", str(prefix) + "x", unit * ((2 << 20) // len(unit)))
    proc = _audit_prefix(prefix, seconds=20, memory_mb=256)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    [drift] = report["drifts"]
    assert drift["path"].endswith("lib/libdemo.so.2") and drift["kind"] == "modified"
    assert report["errors"] == []


# --- dpkg: one .list named by many paragraphs -----------------------------------------------------

def test_dpkg_list_named_by_fifty_paragraphs_is_read_once(tmp_path):
    """4 KB of status naming one package in 50 architectures (no Multi-Arch: same), all of them
    its one 20,000-path .list: read, scanned and checked once, the other 49 one problem."""
    system = FakeSystem(tmp_path / "root")
    system.add("python3-bomb", {f"bomb/m{i}.py": b"" for i in range(20_000)})
    system.paragraphs = [f"Package: python3-bomb\nStatus: install ok installed\nArchitecture: a{i}\nVersion: 1\n"
                         for i in range(50)]
    system.write_status()
    assert len((system.database / "status").read_bytes()) < 4 << 10
    proc = driftscan_bounded("audit", "--no-cache", "--site-packages", str(system.root / DIST_PACKAGES),
                             "--format", "json", seconds=12, memory_mb=256)
    assert proc.returncode == 2, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    [error] = report["errors"]
    assert error["path"] == str(system.info / "python3-bomb.list")
    assert error["message"].startswith("status names 50 packages for this one file list: read once, as "
                                       "python3-bomb:a0's, not for python3-bomb:a1, ")
    assert report["summary"]["files_checked"] == 20_000 and report["summary"]["distributions"] == 1


# --- a wheel as an original ---------------------------------------------------------------------

_MiB = 1 << 20


class _RepeatingDeflate:
    """A raw deflate compressor for a stream of 1 MiB zero chunks: each chunk is compressed once
    and flushed so the next starts afresh, so the same bytes stand for every later chunk (a real
    deflate stream, built in a blink instead of deflating hundreds of megabytes)."""

    def __init__(self) -> None:
        self._real = zlib.compressobj(9, zlib.DEFLATED, -15)
        self._block = self._real.compress(b"\0" * _MiB) + self._real.flush(zlib.Z_FULL_FLUSH)

    def compress(self, data: bytes) -> bytes:
        assert data == b"\0" * _MiB
        return self._block

    def flush(self) -> bytes:
        return self._real.flush(zlib.Z_FINISH)


def _bomb_wheel(house: Path, name: str, member: str, size: int) -> Path:
    """``build_wheel``'s wheel with ``member`` replaced by ``size`` zero bytes, deflated (honestly
    declared: a deflate bomb is a valid member)."""
    small = build_wheel(house, name, "1.0", {f"{name}/__init__.py": "X = 1\n", member: b"the original\n"})
    bomb = small.with_suffix(".tmp")
    with zipfile.ZipFile(small) as src, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if info.filename != member:
                dst.writestr(info, src.read(info))
                continue
            big = zipfile.ZipInfo(member, date_time=(2024, 1, 1, 0, 0, 0))
            big.compress_type = zipfile.ZIP_DEFLATED
            real = zipfile._get_compressor
            zipfile._get_compressor = lambda *a: _RepeatingDeflate()  # type: ignore[assignment]
            try:
                with dst.open(big, "w", force_zip64=size >= 1 << 32) as out:
                    for _ in range(size // _MiB):
                        out.write(b"\0" * _MiB)
            finally:
                zipfile._get_compressor = real
    bomb.replace(small)
    return small


def test_wheel_member_bomb_is_inflated_once_per_run(tmp_path):
    """A deflate bomb (512 MiB of zeros in half a megabyte) whose hash the tree's RECORD gets
    wrong, in a wheel four --wheels directories hold (hard links: one file): inflated once, the
    other three take its verdict; each source is still named with its reason."""
    size = 512 * _MiB
    installed = build_wheel(tmp_path / "install", "bombpkg", "1.0", {"bombpkg/__init__.py": "X = 1\n",
                                                                     "bombpkg/big.bin": b"the original\n"})
    venv = tmp_path / "venv"
    venvs.run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    # by name from a find-links directory: no direct_url.json naming the wheel's digest, whose own
    # RECORD would otherwise prove the row rewritten before any --wheels copy is looked at
    venvs.modern_pip_install(venv, "--no-index", "--no-deps", "--find-links", str(installed.parent), "bombpkg")
    house = tmp_path / "house"
    wheel = _bomb_wheel(house, "bombpkg", "bombpkg/big.bin", size)
    assert wheel.stat().st_size < _MiB
    houses = [house]
    for i in range(2, 5):
        (tmp_path / f"house{i}").mkdir()
        (tmp_path / f"house{i}" / wheel.name).hardlink_to(wheel)
        houses.append(tmp_path / f"house{i}")
    record = venvs.site_packages_of(venv) / "bombpkg-1.0.dist-info/RECORD"
    wrong = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(b"not the bomb").digest()).rstrip(b"=").decode()
    record.write_text(re.sub(r"bombpkg/big.bin,[^\n]*", f"bombpkg/big.bin,{wrong},{size}", record.read_text()))
    proc = driftscan_bounded("audit", "--no-cache", "--venv", str(venv), *(f"--wheels={h}" for h in houses),
                             "--format", "json", seconds=6.5, memory_mb=256)
    assert proc.returncode == 1, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    [drift] = report["drifts"]
    assert drift["path"].endswith("bombpkg/big.bin")
    text = json.dumps(report)
    for h in houses:
        assert f"--wheels {h / wheel.name} (rejected: bombpkg/big.bin: its content does not match RECORD's sha256)" \
            in text
