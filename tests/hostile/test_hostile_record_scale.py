"""A RECORD of a million rows naming files that are not there: audited in bounded time and
memory, with one drift per directory and a correct count of files checked."""

from __future__ import annotations

import json
import os

import pytest

from fixtures.bounded import driftscan_bounded
from fixtures.envtree import make_venv

ROWS = 1_000_000
pytestmark = pytest.mark.slow


def _huge_record(tmp_path, layout) -> tuple:
    """A venv whose one distribution's RECORD lists ``ROWS`` files ``layout(i)`` names, none on disk."""
    venv, site = make_venv(tmp_path / "v")
    (site / "big").mkdir()
    (site / "big/__init__.py").write_text("")
    info = site / "big-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: big\nVersion: 1.0\n")
    (info / "INSTALLER").write_text("pip\n")
    digest = "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"  # of b"", size 0
    with open(info / "RECORD", "w") as f:
        f.write(f"big/__init__.py,{digest},0\n")
        f.writelines(f"{layout(i)},{digest},0\n" for i in range(ROWS))
        f.write("big-1.0.dist-info/METADATA,,\nbig-1.0.dist-info/INSTALLER,,\nbig-1.0.dist-info/RECORD,,\n")
    return venv, site


@pytest.mark.parametrize("layout, kind, where", [
    (lambda i: f"torch/lib{i // 1000}/part{(i // 50) % 20}/f{i}.py", "missing-directory", "torch"),
    (lambda i: f"big/f{i}.py", "missing-files", "big"),
], ids=["a deleted tree", "one directory that is there"])
def test_a_million_absent_rows_are_one_drift_in_bounded_time_and_memory(tmp_path, layout, kind, where):
    venv, site = _huge_record(tmp_path, layout)
    env = {**os.environ, "DRIFTSCAN_CACHE_DIR": str(tmp_path / "cache")}
    proc = driftscan_bounded("audit", "--venv", str(venv), "--format", "json", seconds=150, memory_mb=600, env=env)
    assert proc.returncode == 1, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report["summary"]["files_checked"] == ROWS + 4
    [drift] = report["drifts"]
    assert (drift["kind"], drift["relpath"]) == (kind, where)
    assert drift["expected"]["files"] == ROWS and len(drift["expected"]["listed"]) == 100
