"""Restore on real PyPI packages (six, click, requests from the session's wheelhouse), installed by
real pip and by real uv in hard-link mode: the audit shows each patch as a diff against the
downloaded wheel, restore puts the wheel's bytes back, and uv's poisoned cache copy is left to
``uv cache clean`` (never written through)."""

from __future__ import annotations

import json
import os

import pytest

from fixtures import venvs
from fixtures.harness import offline, run_cli

PACKAGES = ["six==1.17.0", "click==8.1.8", "requests==2.32.3"]


def _edit(site) -> dict[str, bytes]:
    """An in-place append to six.py (keeps the inode: under uv, the cache copy too) and a patch to
    click/core.py with a debug dump; returns the edited contents."""
    with open(site / "six.py", "a") as f:
        f.write("\n_nomla_debug = 0\n")
    core = site / "click/core.py"
    text = core.read_text()
    core.write_text(text.replace("class Context:", "import torch\n\n\nclass Context:", 1)
                    + "\n\ndef _dump(x):\n    torch.save(x, '/tmp/click_dump.pt')\n")
    return {"six.py": (site / "six.py").read_bytes(), "click/core.py": core.read_bytes()}


@pytest.fixture(params=["pip", "uv"])
def installed(request, tmp_path, wheelhouse):
    cache = tmp_path / "uv-cache"
    if request.param == "pip":
        venv = venvs.make_pip_venv(tmp_path / "venv")
        venvs.pip_install(venv, *offline(wheelhouse), *PACKAGES)
    else:
        venv = venvs.make_uv_venv(tmp_path / "venv", cache)
        venvs.uv_install(venv, cache, *offline(wheelhouse), *PACKAGES)
    site = venvs.site_packages_of(venv)
    edited = _edit(site)
    env = {"UV_CACHE_DIR": str(cache), "PIP_CACHE_DIR": str(tmp_path / "no-pip-cache"),
           "DRIFTSCAN_CHECKPOINT_DIR": str(tmp_path / "checkpoints")}
    return request.param, venv, site, cache, edited, env


def _cache_copy(cache, rel: str):
    found = [p for p in (cache / "archive-v0").glob(f"*/{rel}")]
    return found[0] if found else None


def test_real_packages_diff_and_restore(installed, wheelhouse):
    installer, venv, site, cache, edited, env = installed
    poisoned = _cache_copy(cache, "six.py") if installer == "uv" else None
    if installer == "uv":
        assert poisoned is not None and poisoned.read_bytes() == edited["six.py"]  # the premise: uv's cache edited too
        cache_inode = os.stat(poisoned).st_ino
    proc = run_cli("audit", "--venv", str(venv), "--wheels", str(wheelhouse), "--format", "json", env=env)
    report = json.loads(proc.stdout)
    drifts = {d["relpath"]: d for d in report["drifts"] if d["scope"] == "package"}
    assert set(drifts) == {"six.py", "click/core.py"}, sorted(drifts)
    assert "+_nomla_debug = 0" in drifts["six.py"]["diff"]
    assert "+    torch.save(x, '/tmp/click_dump.pt')" in drifts["click/core.py"]["diff"]
    assert {f["origin"] for f in drifts["click/core.py"]["findings"]} == {"injected"}
    sources = {p["distribution"]: p for p in report["pristine"]}
    assert sources["click"]["source"] == "wheels" and sources["six"]["source"] == "wheels"
    if installer == "uv":
        rejected = [r for r in sources["six"]["rejected"] if r["source"] == "uv-cache"]
        # wheels come before uv's cache, so the poisoned copy is only rejected when it is reached
        assert rejected == [] or "six.py" in rejected[0]["reason"]

    proc = run_cli("restore", "--venv", str(venv), "--wheels", str(wheelhouse), "--dist", "six", "--dist", "click",
                   "--yes", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 files restored and verified against RECORD" in proc.stdout
    after = json.loads(run_cli("audit", "--venv", str(venv), "--format", "json", env=env).stdout)
    assert [d for d in after["drifts"] if d["scope"] == "package"] == []
    if installer == "uv":
        st = os.stat(site / "six.py")
        assert st.st_nlink == 1 and st.st_ino != cache_inode  # the link was broken ...
        assert poisoned.read_bytes() == edited["six.py"] and os.stat(poisoned).st_ino == cache_inode  # ... not written through
        assert f"uv cache clean --cache-dir {cache} six" in proc.stdout
    checkpoint = proc.stdout.split("checkpoint: ", 1)[1].splitlines()[0]
    saved = {f["relpath"]: f for f in json.loads(open(os.path.join(checkpoint, "checkpoint.json")).read())["files"]}
    rel_six = os.path.relpath(site / "six.py", venv)
    with open(os.path.join(checkpoint, saved[rel_six]["content"]), "rb") as f:
        assert f.read() == edited["six.py"]
