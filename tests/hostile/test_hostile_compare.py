"""``compare`` and ``diff`` on inputs from machines nobody vouches for: a big report is read in
memory a small multiple of its size, and an input of a version this driftscan does not read is
that input's error, never the run's."""

from __future__ import annotations

import json

import pytest

from fixtures.bounded import driftscan_bounded

pytestmark = pytest.mark.slow  # the command line in a fresh interpreter

SP = "/srv/venv/lib/python3.12/site-packages"


def report(n: int, host: str, salt: str = "") -> dict:
    """A report the schema accepts with ``n`` small drifts (many objects per byte: the costly shape)."""
    drifts = [{"path": f"{SP}/p{i % 300}/m{i}.py", "relpath": f"p{i % 300}/m{i}.py", "kind": "modified",
               "scope": "package", "distribution": {"name": f"p{i % 300}", "version": "1"},
               "expected": {"size": i}, "actual": {"size": i + 1, "hash": f"sha256={salt if i < 10 else ''}{i}"},
               "evidence": ["a", "b", "c", "d"]} for i in range(n)]
    return {"schema_version": "1", "tool": {"name": "driftscan", "version": "0"}, "hostname": host,
            "target": {"venv": "/srv/venv", "site_packages": [SP], "python_version": "3.12.3"},
            "summary": {"files_checked": n}, "distributions": [{"name": f"p{i}", "version": "1"} for i in range(300)],
            "drifts": drifts}


def snapshot(host: str, digest: str = "aa") -> dict:
    return {"manifest_version": "1", "tool": "driftscan", "created": "2026-01-01T00:00:00+00:00", "root": "/srv/venv",
            "hostname": host, "files": {"pyvenv.cfg": {"xxh3_128": "c0"}, "bin/tool": {"xxh3_128": digest}}}


def test_compare_of_32_mib_reports_stays_a_small_multiple_of_one(tmp_path):
    """Three 34 MiB reports (130,000 drifts each). Parsed whole, each cost about 6 times its size in
    objects (the run needed ~400 MiB of address space); read a drift at a time it needs under
    272 MiB, the interpreter's 256 included."""
    paths = []
    for k, host in enumerate("abc"):
        path = tmp_path / f"r{k}.json"
        path.write_text(json.dumps(report(130_000, host, "x" if k < 2 else "y")))
        paths.append(str(path))
    assert (tmp_path / "r0.json").stat().st_size > 32 << 20
    proc = driftscan_bounded("compare", *paths, "--format", "json", "-o", str(tmp_path / "out.json"),
                             seconds=90, memory_mb=64)
    assert proc.returncode == 1, proc.stderr  # machine c differs
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["compared"] == 130_000 and len(out["machines"]) == 3 and not out["errors"]
    assert {o["machine"] for o in out["outliers"]} == {str(tmp_path / "r2.json")} and len(out["outliers"]) == 10


def test_compare_lists_an_input_of_an_unknown_version_and_compares_the_rest(tmp_path):
    inputs = {"a.json": snapshot("a"), "b.json": snapshot("b"), "c.json": snapshot("c", "bb"),
              "bundle2.json": {"bundle_version": "2", "roots": []},
              "manifest2.json": {**snapshot("d"), "manifest_version": "2"}}
    for name, doc in inputs.items():
        (tmp_path / name).write_text(json.dumps(doc))
    proc = driftscan_bounded("compare", *(str(tmp_path / n) for n in inputs), "--format", "json", seconds=30,
                             memory_mb=128)
    assert "Traceback" not in proc.stderr and proc.returncode == 1 | 2, (proc.returncode, proc.stderr)
    out = json.loads(proc.stdout)
    assert [m["name"] for m in out["machines"]] == [str(tmp_path / n) for n in ("a.json", "b.json", "c.json")]
    errors = {e["path"].rsplit("/", 1)[1]: e["message"] for e in out["errors"]}
    assert errors == {"bundle2.json": "a snapshot bundle of bundle_version \"2\"; this driftscan reads '1'",
                      "manifest2.json": "a snapshot of manifest_version \"2\"; this driftscan reads '1'"}
    assert [o["machine"] for o in out["outliers"]] == [str(tmp_path / "c.json")]


def test_compare_lists_a_report_of_an_unknown_schema_version(tmp_path):
    docs = {"a.json": report(3, "a"), "b.json": report(3, "b"), "new.json": {**report(3, "n"), "schema_version": "2"}}
    for name, doc in docs.items():
        (tmp_path / name).write_text(json.dumps(doc))
    proc = driftscan_bounded("compare", *(str(tmp_path / n) for n in docs), "--format", "json", seconds=30,
                             memory_mb=128)
    assert "Traceback" not in proc.stderr and proc.returncode == 2, (proc.returncode, proc.stderr)
    out = json.loads(proc.stdout)
    assert len(out["machines"]) == 2 and out["compared"] == 3
    [error] = out["errors"]
    assert error["path"].endswith("new.json") and "schema_version \"2\"" in error["message"]


def test_diff_against_a_bundle_of_an_unknown_version_is_a_clear_error(tmp_path):
    for version in ("2", 2, None, ["1"]):
        bundle = tmp_path / "bundle.json"
        bundle.write_text(json.dumps({"bundle_version": version, "roots": [{"kind": "venv", "manifest": {}}]}))
        proc = driftscan_bounded("diff", str(bundle), seconds=30, memory_mb=128)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, (version, proc.stderr)
        assert proc.stderr.startswith(f"driftscan: error: {bundle}: a snapshot bundle of bundle_version")
        assert "this driftscan reads '1'" in proc.stderr


def test_compare_lists_a_report_whose_record_digest_is_not_one(tmp_path):
    """A record_digest of another type, or 64 MiB of it: that report's error (exit bit 2), one
    line, the others compared."""
    paths = []
    for k, host in enumerate("abc"):
        doc = report(0, host)
        doc["distributions"][0]["record_digest"] = "sha256=" + "A" * 43
        paths.append(tmp_path / f"r{k}.json")
        paths[-1].write_text(json.dumps(doc))
    for n, bad in enumerate(({"nested": ["sha256=x"]}, "sha256=" + "A" * (64 << 20))):
        doc = report(0, "evil")
        doc["distributions"][0]["record_digest"] = bad
        evil = tmp_path / f"evil{n}.json"
        evil.write_text(json.dumps(doc))
        proc = driftscan_bounded("compare", *map(str, paths), str(evil), "--format", "json", seconds=60,
                                 memory_mb=512)
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr
        out = json.loads(proc.stdout)
        assert [e["path"] for e in out["errors"]] == [str(evil)] and len(out["machines"]) == 3
        assert "record_digest is not a digest" in out["errors"][0]["message"]
