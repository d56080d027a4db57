"""The dumps a checkpoint saves in its list (definite and possible ones, marked), and the dumps it
recorded staying named after a real reinstall removed the code that named them. A real venv (real
uv, a wheel built here); the dump files are written by the test where the edited code would."""

from __future__ import annotations

import json
import os
import time

import pytest

from driftscan import audit
from driftscan.api import checkpoint
from driftscan.reinstall.checkpoint import load_index
from driftscan.reinstall.dumpledger import ledger_path
from fixtures import venvs
from fixtures.harness import run_cli
from fixtures.wheels import build_wheel

MODULE = "dumper2/model.py"
PRISTINE = "def forward(x):\n    return x\n"


def _writer(definite, possible) -> str:
    return ("import torch\n\n\ndef forward(x, step):\n"
            f"    torch.save(x, f\"{definite}/nomla_act_{{step}}.pt\")\n"
            f"    torch.save(x, f\"{possible}/nomla_old_{{step}}.pt\")\n    return x\n")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    return build_wheel(tmp_path_factory.mktemp("dumper2-wheel"), "dumper2", "1.0",
                       {"dumper2/__init__.py": "", MODULE: PRISTINE})


def _files(directory, stem, n):
    directory.mkdir(exist_ok=True)
    out = []
    for i in range(n):
        path = directory / f"{stem}_{i}.pt"
        path.write_bytes(b"\0" * 64)
        out.append(str(path))
    return out


@pytest.fixture
def dumped(tmp_path, wheel, monkeypatch):
    """A venv whose edited module writes two dump patterns: files of one written before the code's
    last edit (possible dumps), of the other after it (dumps)."""
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(tmp_path / "driftscan-cache"))
    cache = tmp_path / "uv-cache"
    venv = venvs.make_uv_venv(tmp_path / "venv", cache)
    install = ("--link-mode", "copy", "--no-index", "--find-links", str(wheel.parent), "dumper2")
    venvs.uv_install(venv, cache, *install)
    target = venvs.site_packages_of(venv) / MODULE
    definite_dir, possible_dir = tmp_path / "acts", tmp_path / "old"
    time.sleep(0.02)
    target.write_text(_writer(definite_dir, possible_dir))
    time.sleep(0.02)
    possible = _files(possible_dir, "nomla_old", 2)
    time.sleep(0.02)
    target.write_text(_writer(definite_dir, possible_dir) + "# edited again\n")  # now newer than those
    time.sleep(0.02)
    definite = _files(definite_dir, "nomla_act", 2)
    return venv, cache, install, definite, possible


def _kind(report, kind):
    return [d for d in report.drifts if d.kind.value == kind]


def test_checkpoint_saves_possible_dumps_too_marked(dumped, tmp_path):
    venv, _, _, definite, possible = dumped
    written = checkpoint(str(tmp_path / "cp"), venv=str(venv), use_cache=False)
    marks = {d.path: d.possible for d in load_index(written.path).dumps}
    assert marks == {**{p: False for p in definite}, **{p: True for p in possible}}
    assert all(d.writer is not None and d.writer.path.endswith(MODULE) for d in written.index.dumps)
    from driftscan.render.restoreview import render_checkpoint_text

    assert "4 dump files listed (2 possible)" in render_checkpoint_text(written, True)


def test_recorded_dumps_stay_named_after_a_real_reinstall(dumped, tmp_path):
    venv, cache, install, definite, possible = dumped
    cp = checkpoint(str(tmp_path / "cp"), venv=str(venv), use_cache=False).path
    # While the code still names them, each dump is reported once, by the code's own drift.
    before = audit(venv=str(venv), use_cache=False)
    assert [d.artifacts for d in _kind(before, "debug-artifacts")] == [definite]
    assert [d.actual["possible_artifacts"] for d in _kind(before, "possible-debug-artifacts")] == [possible]
    assert not any("recorded_by" in d.actual for d in before.drifts)
    venvs.uv_install(venv, cache, "--reinstall", *install)  # the code that named the dumps is gone
    report = audit(venv=str(venv), use_cache=False)
    (named,) = _kind(report, "debug-artifacts")
    assert named.artifacts == definite and named.actual["recorded_by"] == cp
    assert f"the checkpoint {cp} recorded" in named.evidence and named.remedy.startswith("rm -- ")
    (maybe,) = _kind(report, "possible-debug-artifacts")
    assert maybe.actual["possible_artifacts"] == possible and maybe.actual["recorded_by"] == cp
    assert "rm" not in maybe.remedy.replace("remove them yourself", "")  # never offered for deletion
    assert report.summary.drifts == 2  # nothing else: the package is pristine again
    # The JSON report still validates against the published schema.
    proc = run_cli("audit", "--venv", str(venv), "--format", "json", "--no-cache",
                   env={"DRIFTSCAN_CACHE_DIR": os.environ["DRIFTSCAN_CACHE_DIR"]})
    assert json.loads(proc.stdout)["drifts"][0]["actual"]["recorded_by"] == cp
    # Removed: no longer named.
    for p in [*definite, *possible]:
        os.unlink(p)
    report = audit(venv=str(venv), use_cache=False)
    assert report.clean


def test_a_tampered_dump_list_is_ignored_with_a_note_and_never_reaches_outside(dumped, tmp_path):
    venv, cache, install, definite, _ = dumped
    checkpoint(str(tmp_path / "cp"), venv=str(venv), use_cache=False)
    venvs.uv_install(venv, cache, "--reinstall", *install)
    ledger = ledger_path(str(venv))
    doc = json.loads(open(ledger).read())
    # Paths it names are held to the dump rules: no system file, no code, no directory, no relative path.
    secret = tmp_path / "key.pem"
    secret.write_text("k")
    doc["checkpoints"][0]["dumps"] += [{"path": p, "pattern": "", "possible": False, "writer": None}
                                       for p in ("/etc/passwd", str(secret), str(tmp_path), "rel.pt")]
    with open(ledger, "w") as f:
        json.dump(doc, f)
    report = audit(venv=str(venv), use_cache=False)
    assert [d.artifacts for d in _kind(report, "debug-artifacts")] == [definite]
    for bad in ("[1, 2]", '{"format": 1, "root": "/elsewhere", "checkpoints": []}', "{",
                json.dumps({**doc, "checkpoints": [{"checkpoint": 3, "dumps": []}]})):
        with open(ledger, "w") as f:
            f.write(bad)
        report = audit(venv=str(venv), use_cache=False)
        assert report.clean
        assert any("the dumps recorded by checkpoints ignored" in s.message for s in report.skipped), bad
