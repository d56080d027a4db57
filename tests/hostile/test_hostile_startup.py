"""Startup files built to hang or exhaust an audit: a 50 MB one-line .pth, a .pth that is a FIFO,
one that is a symlink to /dev/zero, a 50 MB sitecustomize.py. The audit finishes within a time
and memory bound of the test's own and reports each, never reading past its cap."""

from __future__ import annotations

import json
import os

import pytest

from fixtures.bounded import driftscan_bounded
from fixtures.envtree import make_venv

BIG = 50 << 20


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_hostile_startup_files_are_reported_within_bounds(tmp_path):
    venv, site = make_venv(tmp_path / "v")
    line = b"import os; os.environ['X'] = '" + b"x" * BIG + b"'\n"
    (site / "huge.pth").write_bytes(line)
    with open(site / "padded.pth", "wb") as f:  # paths past the read cap, then code
        f.write(b"/opt/lib\n" * (BIG // 9))
        f.write(b"import os\n")
    os.mkfifo(site / "fifo.pth")
    os.symlink("/dev/zero", site / "zero.pth")
    (site / "sitecustomize.py").write_bytes(b"x = 1\n" + b"#" * BIG + b"\n")

    proc = driftscan_bounded("audit", "--venv", str(venv), "--no-pristine", "--format", "json", "--no-cache",
                             seconds=120, memory_mb=256, env={**os.environ,
                                                              "DRIFTSCAN_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 1, proc.stderr[-2000:]
    drifts = {d["relpath"]: d for d in json.loads(proc.stdout)["drifts"]}
    assert {k: d["kind"] for k, d in drifts.items()} == {
        "huge.pth": "startup-code", "padded.pth": "startup-code", "fifo.pth": "startup-code",
        "zero.pth": "startup-code", "sitecustomize.py": "startup-code"}
    huge = drifts["huge.pth"]
    assert "line 1: import os; os.environ['X'] = 'xxx" in huge["evidence"] and "read)" in huge["evidence"]
    assert len(huge["evidence"]) < 1000 and len(huge["content_preview"]) < 5000
    assert huge["content_preview"].splitlines()[-1].startswith("… (cut:")
    assert "the rest is unchecked" in drifts["padded.pth"]["evidence"]
    assert "not read (" in drifts["fifo.pth"]["evidence"] and drifts["fifo.pth"]["content_preview"] is None
    assert "/dev/zero" in drifts["zero.pth"]["evidence"] and drifts["zero.pth"]["content_preview"] is None
    assert len(drifts["sitecustomize.py"]["content_preview"]) < 5000
