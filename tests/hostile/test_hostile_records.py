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
