"""``driftscan audit --format cyclonedx`` on a real venv (a wheel built here, installed by a real
pip, one file edited and one added): a CycloneDX 1.6 SBOM the official schema accepts, the edited
file under its distribution with its actual hash, the added one at the top level."""

from __future__ import annotations

import hashlib
import json
import sys

import pytest
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator

from fixtures import venvs
from fixtures.harness import run_cli
from fixtures.wheels import build_wheel

@pytest.fixture(scope="module")
def drifted(tmp_path_factory):
    root = tmp_path_factory.mktemp("cyclonedx")
    build_wheel(root / "wheels", "sbompkg", "1.0", {"sbompkg/__init__.py": "", "sbompkg/core.py": "X = 1\n"})
    venv = root / "venv"
    venvs.run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    venvs.modern_pip_install(venv, "--no-index", "--no-compile", "--find-links", str(root / "wheels"), "sbompkg")
    site = venvs.site_packages_of(venv)
    (site / "sbompkg/core.py").write_text("X = 3\n")
    (site / "stray.py").write_text("Z = 1\n")
    return venv, site

def test_a_real_venv_audited_as_a_valid_cyclonedx_sbom(drifted, tmp_path):
    venv, site = drifted
    proc = run_cli("audit", "--venv", str(venv), "--no-pristine", "--format", "cyclonedx", cwd=str(tmp_path))
    assert proc.returncode == 1, proc.stderr  # drift, as with any format
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(proc.stdout) is None
    doc = json.loads(proc.stdout)
    assert doc["metadata"]["component"]["name"] == venv.name
    lib = next(c for c in doc["components"] if c["type"] == "library" and c["name"] == "sbompkg")
    assert (lib["version"], lib["purl"]) == ("1.0", "pkg:pypi/sbompkg@1.0")
    [edited] = lib["components"]
    state = {p["name"]: p["value"] for p in edited["properties"]}
    assert (edited["name"], state["driftscan:drift:kind"], state["driftscan:provenance:verified"]) == \
        ("sbompkg/core.py", "modified", "false")  # --no-pristine: no original looked for
    assert edited["hashes"] == [{"alg": "SHA-256", "content": hashlib.sha256(b"X = 3\n").hexdigest()}]
    assert state["driftscan:record:sha256"] == hashlib.sha256(b"X = 1\n").hexdigest()
    added = [c for c in doc["components"] if c["type"] == "file" and c["name"] == "stray.py"]
    assert [{p["name"]: p["value"] for p in c["properties"]}["driftscan:drift:kind"] for c in added] == ["added"]

def test_written_with_output_and_listed_in_help(drifted, tmp_path):
    venv, _ = drifted
    out = tmp_path / "sbom.cdx.json"
    proc = run_cli("audit", "--venv", str(venv), "--no-pristine", "--format", "cyclonedx", "-o", str(out))
    assert proc.returncode == 1, proc.stderr
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(out.read_text()) is None
    assert "cyclonedx" in run_cli("audit", "--help").stdout
