"""Originals once found are not forgotten: a checkpoint taken with ``--wheels`` keeps each verified
original in driftscan's user cache, and a later audit of the environment without ``--wheels``
takes them from there (source ``kept``), so upstream findings stay ``upstream`` and ``--fail-on
debug`` fails only on the injected ones. A kept file edited in the cache is rejected, with why.

A real pip venv, a real wheel built here, the real command line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fixtures.upgrades import cli, install, own_env, pip_venv, site_of
from fixtures.wheels import build_wheel

pytestmark = pytest.mark.slow

# The original ships its own debug-like code (as transformers' safe_save_file call does).
ORIGINAL = '''"""Saving."""

import torch


def save(state):
    torch.save(state, "/tmp/upstream_state.pt")
    return state


def helper(x):
    return x + 1
'''
# The user's edit: a fix, and debug code of its own.
EDITED = ORIGINAL.replace("return x + 1", 'torch.save(x, "/tmp/injected_x.pt")\n    return x + 2')


def _audit(venv: Path, env: dict[str, str], *extra: str):
    proc = cli("audit", "--venv", str(venv), "--format", "json", "--no-cache", "--fail-on", "debug", *extra, env=env)
    assert proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def _findings(report: dict) -> list[tuple[str, int, str | None]]:
    drift = next(d for d in report["drifts"] if d["path"].endswith("keptpkg/saving.py"))
    return sorted((f["code"], f["line"], f["origin"]) for f in drift["findings"])


def _pristine(report: dict) -> dict:
    return next(p for p in report["pristine"] if p["distribution"] == "keptpkg")


def test_a_checkpoint_keeps_the_originals_a_later_audit_without_wheels_uses(tmp_path_factory, tmp_path):
    house = tmp_path / "house"
    wheel = build_wheel(house, "keptpkg", "1.0", {"keptpkg/__init__.py": "", "keptpkg/saving.py": ORIGINAL})
    venv = pip_venv(tmp_path_factory, "kept")
    install(venv, house, "keptpkg==1.0")
    (site_of(venv) / "keptpkg" / "saving.py").write_text(EDITED)
    env = own_env(tmp_path)

    # Without any original: nothing can say which finding is upstream.
    code_none, none = _audit(venv, env)
    assert {origin for _, _, origin in _findings(none)} == {None}
    assert _pristine(none)["source"] is None

    # With the wheel at hand: one upstream finding, one injected.
    code_wheels, with_wheels = _audit(venv, env, "--wheels", str(house))
    found = _findings(with_wheels)
    assert {origin for _, _, origin in found} == {"upstream", "injected"}, found
    assert _pristine(with_wheels)["source"] == "wheels"

    # A checkpoint with --wheels keeps the verified original in the user cache ...
    cp = tmp_path / "cp"
    proc = cli("checkpoint", "--venv", str(venv), "--wheels", str(house), "-o", str(cp), env=env)
    assert proc.returncode == 0, proc.stderr
    store = Path(env["DRIFTSCAN_CACHE_DIR"]) / "originals"
    assert f"kept 1 verified original in {store}" in proc.stdout, proc.stdout
    kept_files = [p for p in store.iterdir() if not p.name.endswith(".from")]
    assert [p.read_text() for p in kept_files] == [ORIGINAL]

    # ... and an audit without --wheels, in the same user cache, finds it there.
    code_kept, kept = _audit(venv, env)
    assert _findings(kept) == found
    assert code_kept == code_wheels
    pristine = _pristine(kept)
    assert pristine["source"] == "kept" and pristine["path"] == str(store)
    assert f"first found in --wheels {wheel}" in pristine["reason"], pristine
    drift = next(d for d in kept["drifts"] if d["path"].endswith("keptpkg/saving.py"))
    assert drift["pristine"] == {"source": "kept", "path": str(store)}

    # The injected finding alone decides --fail-on debug: without it, the same audit passes.
    (site_of(venv) / "keptpkg" / "saving.py").write_text(EDITED.replace('torch.save(x, "/tmp/injected_x.pt")\n    ', ""))
    code_upstream_only, upstream_only = _audit(venv, env)
    assert {origin for _, _, origin in _findings(upstream_only)} == {"upstream"}
    assert code_upstream_only == 0 and code_kept == 1 and code_none == 1
    (site_of(venv) / "keptpkg" / "saving.py").write_text(EDITED)

    # A kept file edited in the cache is not used, and the report says why.
    for p in kept_files:
        os.chmod(p, 0o600)
        p.write_text(ORIGINAL.replace("upstream_state", "forged_state"))
    code_forged, forged = _audit(venv, env)
    assert {origin for _, _, origin in _findings(forged)} == {None}
    pristine = _pristine(forged)
    assert pristine["source"] is None
    rejected = [r for r in pristine["rejected"] if r["source"] == "kept"]
    assert len(rejected) == 1 and "keptpkg/saving.py: the kept copy" in rejected[0]["reason"]
    assert "is edited or damaged (its size differs from RECORD's): not used" in rejected[0]["reason"], rejected
