"""``driftscan scan`` of untouched upstream code reports only real debug code at medium or above.

vLLM 0.33.0 and torch 2.13.0 are downloaded from the package index (once: the wheels stay in
pytest's cache directory), every ``.py`` file of each wheel is unpacked, and both trees are
scanned at the default selection. The findings at medium or above must be exactly ``KEPT``:
upstream's own debug code, each justified here and in docs/rules.md ("Pristine upstream code").
A new one is a rule's false positive (a pristine tree would fail ``--fail-on medium``); one gone
is a rule that stopped catching real debug code. A failed download fails the test: it never
skips.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from fixtures.bounded import driftscan_bounded

RELEASES = {"vllm": "0.33.0", "torch": "2.13.0"}
AT_LEAST_MEDIUM = {"medium", "high"}

# path:line:code, relative to the unpacked wheels' root. Each is debug code torch ships on purpose.
KEPT = {
    # _breakpoint_for_c_dynamo() calls breakpoint(): C Dynamo's hook for inspecting values in pdb.
    "torch/_dynamo/utils.py:5509:DBG106",
    # graph_saver_helper() torch.save()s example inputs behind its dump_example_input switch.
    "torch/_functorch/compilers.py:448:DBG101",
    # debug_fail_counter tallies CUDA graph re-recordings; nothing in the wheel reads it.
    "torch/_inductor/cudagraph_trees.py:2364:DBG103",
    # import pdb for torch.distributed.breakpoint()'s debugger.
    "torch/distributed/__init__.py:86:DBG107",
    # torch.distributed.breakpoint() stops one rank in pdb: what it is for.
    "torch/distributed/__init__.py:131:DBG106",
}


def _wheel(cache: Path, name: str, version: str) -> Path:
    """The release's wheel in ``cache``, downloaded when it is not there whole."""
    for found in sorted(cache.glob(f"{name}-{version}-*.whl")) + sorted(cache.glob(f"{name}-{version}+*.whl")):
        if zipfile.is_zipfile(found):
            return found
        found.unlink()  # an interrupted download: fetch it again
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
               f"{name}=={version}", "-d", str(cache)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    except subprocess.TimeoutExpired:
        pytest.fail(f"downloading {name}=={version} took over 30 minutes", pytrace=False)
    wheels = [w for w in cache.glob(f"{name}-{version}*.whl") if zipfile.is_zipfile(w)]
    if done.returncode != 0 or not wheels:
        pytest.fail(f"could not download {name}=={version} (exit {done.returncode}):\n{done.stderr[-2000:]}",
                    pytrace=False)
    return wheels[0]


@pytest.fixture(scope="module")
def upstream(request, tmp_path_factory) -> Path:
    """Every ``.py`` file of both wheels under one root (the scan looks at nothing else)."""
    cache = Path(request.config.cache.mkdir("upstream-wheels"))
    root = tmp_path_factory.mktemp("upstream")
    for name, version in RELEASES.items():
        with zipfile.ZipFile(_wheel(cache, name, version)) as wheel:
            wheel.extractall(root, members=[m for m in wheel.namelist() if m.endswith(".py")])
        assert (root / name / "__init__.py").is_file(), f"{name}'s wheel holds no {name} package"
    return root


@pytest.mark.network
@pytest.mark.slow
def test_pristine_vllm_and_torch_report_only_their_own_debug_code(upstream):
    # Two workers, each bounded (RLIMIT_AS is per process); a cold scan of both takes under 30 s here.
    done = driftscan_bounded("scan", "--format", "json", "--no-cache", "-j", "2", str(upstream),
                             seconds=900, memory_mb=2048)
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    assert report["errors"] == []
    assert report["summary"]["files_scanned"] > 5000  # both trees, not an empty directory
    found = {f"{Path(f['path']).relative_to(upstream).as_posix()}:{f['line']}:{f['code']}"
             for f in report["findings"] if f["severity"] in AT_LEAST_MEDIUM}
    assert found == KEPT, (f"new (a false positive?): {sorted(found - KEPT)}; "
                           f"gone (a rule stopped catching them?): {sorted(KEPT - found)}")
    assert done.returncode == (1 if KEPT else 0)  # the default --fail-on medium
    assert not any(path.startswith("vllm/") for path in found)

