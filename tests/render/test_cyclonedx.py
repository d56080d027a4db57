"""``--format cyclonedx``: a CycloneDX 1.6 SBOM the official schema accepts (cyclonedx-python-lib's
strict validator), with a library component per distribution, a file component per drift carrying
driftscan's state, and the same bytes for the same report."""

from __future__ import annotations

import base64
import hashlib
import json
import re

import pytest
from packageurl import PackageURL
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator

from driftscan.core.errors import DriftscanError
from driftscan.render import OutputFormat, render
from driftscan.render.cyclonedx import record_hash_hex
from driftscan.report.contract import DistributionRef, PristineOut
from fixtures.reports import rich_report

VALIDATOR = JsonStrictValidator(SchemaVersion.V1_6)


def sbom(report) -> dict:
    text = render(report, OutputFormat.CYCLONEDX)
    errors = VALIDATOR.validate_str(text)
    assert errors is None, errors
    return json.loads(text)


def props(component: dict) -> dict[str, str]:
    return {p["name"]: p["value"] for p in component.get("properties", [])}


def files_of(doc: dict) -> list[tuple[str | None, dict]]:
    """Each file component, with the name of the library it is nested under (None: top level)."""
    out = []
    for c in doc["components"]:
        if c["type"] == "file":
            out.append((None, c))
        for nested in c.get("components", []):
            assert nested["type"] == "file"
            out.append((c["name"], nested))
    return out


@pytest.fixture(scope="module")
def report():
    return rich_report()


def test_the_rich_report_is_a_valid_cyclonedx_1_6_bom(report):
    doc = sbom(report)
    assert (doc["bomFormat"], doc["specVersion"]) == ("CycloneDX", "1.6")
    assert re.fullmatch(r"urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
                        doc["serialNumber"])
    meta = doc["metadata"]
    assert meta["timestamp"].startswith(report.generated_at[:19])
    assert [(t["name"], t["version"]) for t in meta["tools"]["components"]] == [("driftscan", report.tool.version)]
    root = meta["component"]
    assert root["name"] == report.target.venv.rsplit("/", 1)[-1]
    assert props(root)["driftscan:target:path"] == report.target.venv


def test_every_drift_is_a_file_component_with_its_state_under_its_distribution(report):
    found = {props(c)["driftscan:drift:path"]: (owner, c) for owner, c in files_of(sbom(report))}
    assert len(found) == len(report.drifts)
    for d in report.drifts:
        owner, component = found[d.path]
        assert owner == (d.distribution.name if d.distribution else None), d.path
        assert component["name"] == d.relpath
        p = props(component)
        assert (p["driftscan:drift:kind"], p["driftscan:drift:scope"], p["driftscan:drift:prediction"]) == \
            (d.kind.value, d.scope.value, d.prediction.value)
        assert p["driftscan:provenance:verified"] == ("true" if d.pristine is not None else "false")


def test_one_library_per_distribution_with_its_purl(report):
    libraries = {c["name"]: c for c in sbom(report)["components"] if c["type"] == "library"}
    assert set(libraries) == {d.name for d in report.distributions}
    for d in report.distributions:
        assert libraries[d.name]["version"] == d.version
        assert libraries[d.name]["purl"] == f"pkg:pypi/{d.name}@{d.version}"
    root_ref = sbom(report)["metadata"]["component"]["bom-ref"]
    depends = next(x["dependsOn"] for x in sbom(report)["dependencies"] if x["ref"] == root_ref)
    assert sorted(depends) == sorted(c["bom-ref"] for c in libraries.values())


def test_verified_when_an_original_was_found_for_the_distribution(report):
    verified = report.model_copy(update={"pristine": [
        PristineOut(distribution="proj", version="0.1", source="wheels", path="/w/proj-0.1-py3-none-any.whl"),
        PristineOut(distribution="other", version="2.0", reason="no wheel found")]})
    states = {(owner, props(c)["driftscan:provenance:verified"], props(c).get("driftscan:provenance:source"))
              for owner, c in files_of(sbom(verified)) if owner in ("proj", "other")}
    assert states == {("proj", "true", "wheels"), ("other", "false", None)}


def test_the_actual_hash_is_the_component_hash_in_hex(report):
    content = b"X = 3\n"
    digest = hashlib.sha256(content).digest()
    record = "sha256=" + base64.urlsafe_b64encode(digest).decode().rstrip("=")
    assert record_hash_hex(record) == ("sha256", digest.hex())
    old = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(b"X = 1\n").digest()).decode().rstrip("=")
    drifts = [d.model_copy(update={"actual": {"hash": record}, "expected": {"hash": old}}) if i == 0 else d
              for i, d in enumerate(report.drifts)]
    doc = sbom(report.model_copy(update={"drifts": drifts}))
    component = next(c for _, c in files_of(doc) if props(c)["driftscan:drift:path"] == report.drifts[0].path)
    assert component["hashes"] == [{"alg": "SHA-256", "content": digest.hex()}]
    assert props(component)["driftscan:record:sha256"] == hashlib.sha256(b"X = 1\n").hexdigest()


@pytest.mark.parametrize("value", ["sha256=bb", "md5=AAAA", "sha256", "sha256=!!!!", "", 7, None])
def test_a_hash_that_is_not_a_full_record_digest_is_left_out(value):
    assert record_hash_hex(value) is None


def test_the_same_report_gives_the_same_bytes_and_another_another_serial(report):
    assert render(report, OutputFormat.CYCLONEDX) == render(report, OutputFormat.CYCLONEDX)
    later = report.model_copy(update={"generated_at": "2030-01-01T00:00:00+00:00"})
    assert sbom(later)["serialNumber"] != sbom(report)["serialNumber"]
    assert sbom(later)["metadata"]["timestamp"].startswith("2030-01-01T00:00:00")


def test_hostile_names_paths_and_versions_stay_valid(report):
    huge = "1." + "9" * 5000 + "+local.build/../@x"
    dists = [DistributionRef(name="evil name@1/../x", version=huge), DistributionRef(name="novers", version=""),
             DistributionRef(name="dup", version="1"), DistributionRef(name="dup", version="1")]
    drifts = [d.model_copy(update={"path": d.path + "\nline\t\x1b[31m\u202e", "relpath": d.relpath + "\n\x00",
                                   "distribution": dists[i % 3] if d.distribution else None})
              for i, d in enumerate(report.drifts)]
    hostile = report.model_copy(update={
        "drifts": drifts, "distributions": dists,
        "target": report.target.model_copy(update={"venv": "/srv/\nvenv\u202e/"})})
    doc = sbom(hostile)
    assert len(files_of(doc)) == len(drifts)
    assert {c["name"] for c in doc["components"] if c["type"] == "library"} == {"evil name@1/../x", "novers", "dup"}
    assert doc["metadata"]["component"]["name"] == "\nvenv\u202e"
    evil = next(c for c in doc["components"] if c["name"] == "evil name@1/../x")
    assert "version" not in evil and props(evil)["driftscan:version"] == huge  # longer than the schema allows
    assert PackageURL.from_string(evil["purl"]).version == huge


def test_a_timestamp_that_is_not_iso_8601_is_a_clear_error(report):
    with pytest.raises(DriftscanError, match="generated_at is not an ISO 8601 time"):
        render(report.model_copy(update={"generated_at": "yesterday"}), OutputFormat.CYCLONEDX)


def test_a_wheel_proven_by_its_lock_is_the_librarys_hash_and_its_verdict_its_properties(report):
    from driftscan.report.contract import ProvenanceOut, RowChangeOut

    digest = hashlib.sha256(b"the demo wheel").hexdigest()
    proven = report.model_copy(update={"provenance": [
        ProvenanceOut(distribution="demo", version="1.0", lock="/srv/proj/uv.lock", wheel_sha256=digest,
                      wheel="demo-1.0-py3-none-any.whl", source="uv-cache", verified=True, rows_compared=4,
                      rows=[RowChangeOut(path="demo/auth.py", kind="changed", installed_hash="sha256=" + "R" * 43,
                                         wheel_hash="sha256=" + "W" * 43, file_state="matches-installed-row")]),
        ProvenanceOut(distribution="other", version="2.0", lock="/srv/proj/uv.lock", wheel_sha256=digest,
                      verified=False, reason="no wheel with sha256 … found")]})
    doc = sbom(proven)
    libraries = {c["name"]: c for c in doc["components"] if c["type"] == "library"}
    demo, other = libraries["demo"], libraries["other"]
    assert demo["hashes"] == [{"alg": "SHA-256", "content": digest}]
    assert PackageURL.from_string(demo["purl"]).qualifiers == {"file_name": "demo-1.0-py3-none-any.whl"}
    assert props(demo)["driftscan:provenance:verified"] == "true"
    assert props(demo)["driftscan:provenance:rows-rewritten"] == "1"
    assert props(demo)["driftscan:provenance:lock"] == "/srv/proj/uv.lock"
    assert props(other)["driftscan:provenance:verified"] == "false" and "driftscan:provenance:reason" in props(other)
    [rewritten] = [c for owner, c in files_of(doc) if owner == "demo" and c["name"] == "demo/auth.py"]
    state = props(rewritten)
    assert state["driftscan:drift:kind"] == "record-rewritten" and state["driftscan:provenance:verified"] == "true"
    assert state["driftscan:wheel-record:sha256"] != state["driftscan:record:sha256"]
