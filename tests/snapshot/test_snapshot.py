"""snapshot records every file; diff reports drift against it in the audit's format."""

from __future__ import annotations

import json
import shutil

from driftscan.api import diff
from fixtures import venvs
from fixtures.harness import DEMO_REQS, offline, run_cli
from fixtures.modeldirs import build_local_dir, seed_files, sm120_edit


def test_snapshot_then_diff_venv_and_model_dir(tmp_path, wheelhouse, uv_cache):
    venv = venvs.make_uv_venv(tmp_path / "venv", uv_cache)
    venvs.uv_install(venv, uv_cache, *offline(wheelhouse), *DEMO_REQS)
    site = venvs.site_packages_of(venv)
    model = build_local_dir(tmp_path / "model", seed_files())
    snap = tmp_path / "baseline.json"
    proc = run_cli("snapshot", "--venv", str(venv), "--model-dir", str(model), "--output", str(snap))
    assert proc.returncode == 0, proc.stderr
    bundle = json.loads(snap.read_text())
    assert [r["kind"] for r in bundle["roots"]] == ["venv", "model-dir"]
    assert "bin/python" in bundle["roots"][0]["manifest"]["files"]  # the whole venv, bin/ included
    venv_files = bundle["roots"][0]["manifest"]["files"]
    assert "text" not in next(v for k, v in venv_files.items() if k.endswith("site-packages/six.py"))
    assert "home" in venv_files["pyvenv.cfg"]["text"]  # configs are embedded, a venv's code is not
    (model / "modeling_custom.py").write_text("class Model: pass\n")  # a model's code is its config
    part = tmp_path / "model-only.json"
    assert run_cli("snapshot", "--model-dir", str(model), "--output", str(part)).returncode == 0
    assert json.loads(part.read_text())["files"]["modeling_custom.py"]["text"] == "class Model: pass\n"
    (model / "modeling_custom.py").unlink()

    clean = run_cli("diff", str(snap))
    assert clean.returncode == 0, clean.stdout

    for name in ("six.py", "click/core.py"):  # hard-linked from the test cache: replace, don't edit
        data = (site / name).read_bytes()
        (site / name).unlink()
        (site / name).write_bytes(data + b"# patched\n")
    script = venv / "bin/demo-cli"
    data = script.read_bytes()
    script.unlink()
    script.write_bytes(data.replace(b"main", b"main  # hijacked", 1))
    (venv / "bin/newtool").write_text("#!/bin/sh\n")
    venvs.run([str(venvs.python_of(venv)), "-c", "import six, click"])  # bytecode churn is not drift
    sm120_edit(model)

    report = diff(str(snap))
    got = {(d.relpath, d.kind.value, d.scope.value, d.distribution.name if d.distribution else None)
           for d in report.drifts}
    assert got == {
        ("six.py", "modified", "package", "six"),
        ("click/core.py", "modified", "package", "click"),
        ("bin/demo-cli", "modified", "package", "demo-pkg"),
        ("bin/newtool", "added", "environment", None),
        ("config.json", "modified", "data", None),
        ("hf_quant_config.json", "modified", "data", None),
    }
    config = next(d for d in report.drifts if d.relpath == "config.json")
    assert any(c["pointer"] == "/quantization_config/kv_cache_scheme" and c["op"] == "removed"
               for c in config.json_changes)  # the snapshot embedded the original text

    only_model = diff(str(snap), model_dirs=[str(model)])
    assert {d.relpath for d in only_model.drifts} == {"config.json", "hf_quant_config.json"}
    cli = run_cli("diff", str(snap), "--venv", str(venv), "--format", "json")
    assert cli.returncode == 1 and json.loads(cli.stdout)["summary"]["drifts"] == 4


def test_single_root_snapshot_is_a_plain_manifest(tmp_path):
    model = build_local_dir(tmp_path / "model", seed_files())
    snap = tmp_path / "m.json"
    assert run_cli("snapshot", "--model-dir", str(model), "-o", str(snap)).returncode == 0
    assert json.loads(snap.read_text())["manifest_version"] == "1"
    sm120_edit(model)
    # the same file works as an audit --manifest
    proc = run_cli("audit", "--model-dir", str(model), "--manifest", str(snap), "--format", "json")
    assert sorted(d["relpath"] for d in json.loads(proc.stdout)["drifts"]) == ["config.json", "hf_quant_config.json"]


def test_bad_snapshot_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    proc = run_cli("diff", str(bad))
    assert proc.returncode == 2 and proc.stderr.startswith("driftscan: error:") and "Traceback" not in proc.stderr
    bad.write_text('{"something": 1}')
    assert "neither a driftscan manifest nor a snapshot bundle" in run_cli("diff", str(bad)).stderr
    model = build_local_dir(tmp_path / "model", seed_files())
    snap = tmp_path / "m.json"
    run_cli("snapshot", "--model-dir", str(model), "-o", str(snap))
    shutil.rmtree(model)
    gone = run_cli("diff", str(snap))
    assert gone.returncode == 2 and "not a directory now" in gone.stderr
