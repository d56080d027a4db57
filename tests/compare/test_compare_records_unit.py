"""compare.records on reports written here: which machine's RECORD stands out, and where there is
no verdict. The reports are data from other machines: a record_digest that is not one is that
report's input error, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

from driftscan.compare import compare_files
from driftscan.render.compare import render_compare_markdown, render_compare_text

SP = "/srv/venv/lib/python3.12/site-packages"
A, B, C = ("sha256=" + ch * 43 for ch in "ABC")


def report(tmp_path: Path, host: str, dists: list[dict]) -> str:
    doc = {"schema_version": "1", "tool": {"name": "driftscan", "version": "0"}, "hostname": host,
           "target": {"venv": "/srv/venv", "site_packages": [SP], "python_version": "3.12.3"},
           "summary": {"files_checked": 10}, "distributions": dists, "drifts": []}
    path = tmp_path / f"{host}.json"
    path.write_text(json.dumps(doc))
    return str(path)


def fleet(tmp_path: Path, *digests, version: str = "1.0", name: str = "Rec.Pkg") -> list[str]:
    return [report(tmp_path, f"h{n}", [{"name": name, "version": version, "record_digest": d},
                                       {"name": "other", "version": "2", "record_digest": C}])
            for n, d in enumerate(digests)]


def test_the_odd_record_of_three_is_rewritten(tmp_path):
    paths = fleet(tmp_path, A, A, B)
    result = compare_files(paths, before_after=False)
    [o] = result.outliers
    assert (o.machine, o.kind, o.scope, o.root) == (paths[2], "record-rewritten", "package", "site-packages")
    assert o.relpath == "rec_pkg-1.0.dist-info/RECORD" and o.path == f"{SP}/rec_pkg-1.0.dist-info/RECORD"
    assert o.this == {"state": "record", "hash": B}
    assert o.majority == {"state": "record", "hash": A, "machines": 2, "of": 3}
    assert o.distribution == {"name": "Rec.Pkg", "version": "1.0"} and not o.tie and o.files is None
    assert result.differs
    text = render_compare_text(result)
    assert "record-rewritten" in text and "majority 2 of 3" in text and "snapshots of each machine name them" in text
    assert "record-rewritten" in render_compare_markdown(result)


def test_a_version_skew_is_not_a_rewrite(tmp_path):
    paths = fleet(tmp_path, A, A, A) + [report(tmp_path, "h9", [{"name": "Rec.Pkg", "version": "1.1",
                                                                 "record_digest": B}])]
    result = compare_files(paths, before_after=False)
    assert [o.kind for o in result.outliers] == []
    assert {s.distribution for s in result.version_skew} == {"Rec.Pkg", "other"}


def test_a_tie_and_two_machines_give_no_verdict_and_say_why(tmp_path):
    (tmp_path / "x").mkdir()
    result = compare_files(fleet(tmp_path / "x", A, B, C), before_after=False)
    assert result.outliers == []
    assert any("no majority" in n and "Rec.Pkg 1.0 (3 RECORDs among 3 machines)" in n for n in result.notes)
    (tmp_path / "y").mkdir()
    result = compare_files(fleet(tmp_path / "y", A, B), before_after=False)
    assert result.outliers == []
    assert any("fewer than 3" in n and "Rec.Pkg 1.0" in n for n in result.notes)
    # Two against two of four: no strict majority either.
    (tmp_path / "z").mkdir()
    result = compare_files(fleet(tmp_path / "z", A, A, B, B), before_after=False)
    assert result.outliers == [] and any("no majority" in n for n in result.notes)


def test_reports_without_record_digest_are_not_weighed(tmp_path):
    paths = fleet(tmp_path, A, A, None)
    result = compare_files(paths, before_after=False)
    assert result.outliers == []
    paths.append(report(tmp_path, "old", [{"name": "Rec.Pkg", "version": "1.0"}, {"name": "other", "version": "2"}]))
    result = compare_files(paths, before_after=False)
    assert result.outliers == [] and any("no record_digest" in n and paths[3] in n for n in result.notes)


def test_a_record_digest_that_is_not_one_is_that_reports_error(tmp_path):
    good = fleet(tmp_path, A, A, A)
    for n, bad in enumerate((17, {"sha256": A}, ["x"], True, "sha256=" + "A" * 10_000_000, "", "md5",
                             "sha256=AAAA\nAAAAAAAAAAAAAAAAAAAAA", "\u202esha256=" + "A" * 43)):
        hostile = report(tmp_path, f"bad{n}", [{"name": "Rec.Pkg", "version": "1.0", "record_digest": bad}])
        result = compare_files([*good, hostile], before_after=False)
        [error] = result.errors
        assert error.path == hostile and "record_digest is not a digest" in error.message
        assert len(error.message) < 200
        assert len(result.machines) == 3 and result.outliers == []


def test_two_metadata_directories_of_one_name_are_not_weighed(tmp_path):
    twice = [{"name": "Rec.Pkg", "version": "1.0", "record_digest": A},
             {"name": "rec-pkg", "version": "1.0", "record_digest": B}]
    paths = fleet(tmp_path, A, A) + [report(tmp_path, "dup", twice)]
    result = compare_files(paths, before_after=False)
    assert [o.kind for o in result.outliers] == []


def test_a_reports_own_record_rewritten_drift_is_a_file_outlier(tmp_path):
    """An audit with a lockfile names a file whose RECORD row was rewritten (drift kind
    record-rewritten): compare shows it as that file, not as a RECORD weighed across machines."""
    paths = fleet(tmp_path, A, A, A)
    doc = json.loads(Path(paths[2]).read_text())
    doc["drifts"] = [{"path": f"{SP}/rec_pkg/m2.py", "relpath": "rec_pkg/m2.py", "kind": "record-rewritten",
                      "scope": "package", "distribution": {"name": "Rec.Pkg", "version": "1.0"},
                      "actual": {"hash": B}}]
    Path(paths[2]).write_text(json.dumps(doc))
    result = compare_files(paths, before_after=False)
    [o] = result.outliers
    assert (o.relpath, o.kind, o.files) == ("rec_pkg/m2.py", "record-rewritten", None)
    assert "which files" not in render_compare_text(result)
