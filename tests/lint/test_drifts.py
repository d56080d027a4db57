"""The inspect stage of an audit on hand-made drifts: which files are inspected, the findings
they get, and the dumps their code left (definite, possible, or too old)."""

from __future__ import annotations

import os
import time

import pytest

from driftscan.core.values import Area, DriftKind, FileCheck
from driftscan.lint.drifts import INLINE_DUMPS, inspect_drifts


@pytest.fixture
def env(tmp_path):
    site = tmp_path / "env" / "site-packages"
    (site / "pkg").mkdir(parents=True)
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    return site, dumps


def writer(site, dumps, name="model.py"):
    path = site / "pkg" / name
    path.write_text("import torch\n\n\ndef forward(x, step):\n"
                    f"    torch.save(x, f\"{dumps}/dbg_hidden_{{step}}.pt\")\n    return x\n")
    return path


def drift(path, site, kind=DriftKind.MODIFIED, **kw):
    return FileCheck(kind, str(path), str(site), **kw)


def make_dumps(dumps, n, mtime=None):
    paths = []
    for i in range(n):
        p = dumps / f"dbg_hidden_{i}.pt"
        p.write_bytes(b"x" * 10)
        if mtime is not None:
            os.utime(p, (mtime, mtime))
        paths.append(str(p))
    return paths


def test_only_modified_added_or_clobbered_python_files_are_inspected(env):
    site, dumps = env
    code = writer(site, dumps)
    other = site / "pkg" / "data.txt"
    other.write_text("breakpoint()\n")
    checks = [
        drift(code, site, kind=DriftKind.MISSING),
        drift(other, site),
        drift(code, site, area=Area.MODEL),
        drift(code, site, actual={"type": "symlink"}),
    ]
    outcome = inspect_drifts(checks, jobs=1)
    assert outcome.checks == checks
    assert outcome.artifacts == [] and outcome.errors == []


def test_a_modified_file_gets_its_findings_and_its_dumps_are_one_drift(env):
    site, dumps = env
    code = writer(site, dumps)
    found = make_dumps(dumps, 2)
    outcome = inspect_drifts([drift(code, site)], jobs=1)
    (checked,) = outcome.checks
    assert [(f.code, f.line) for f in checked.findings] == [("DBG101", 5)]
    (artifacts,) = outcome.artifacts
    assert artifacts.kind is DriftKind.DEBUG_ARTIFACTS and artifacts.area is Area.EXTERNAL
    assert artifacts.path == f"{dumps}/dbg_hidden_*.pt"
    assert sorted(artifacts.dumps.paths) == found
    assert artifacts.dumps.total_bytes == 20
    assert artifacts.remedy_hint.startswith("rm -- ") and all(p in artifacts.remedy_hint for p in found)
    assert [(w.path, w.line, w.code) for w in artifacts.dumps.writers] == [(str(code), 5, "DBG101")]


def test_no_files_on_disk_means_no_artifact_drift(env):
    site, dumps = env
    outcome = inspect_drifts([drift(writer(site, dumps), site)], jobs=1)
    assert outcome.artifacts == []
    assert [f.code for f in outcome.checks[0].findings] == ["DBG101"]


def test_the_selection_picks_the_findings_shown_not_the_dumps_searched(env):
    site, dumps = env
    code = writer(site, dumps)
    make_dumps(dumps, 1)
    outcome = inspect_drifts([drift(code, site)], jobs=1, ignore=["DBG101"])
    assert outcome.checks[0].findings == ()
    assert len(outcome.artifacts) == 1


def test_a_file_a_distribution_owns_is_never_a_dump(env):
    site, dumps = env
    code = writer(site, dumps)
    found = make_dumps(dumps, 2)
    outcome = inspect_drifts([drift(code, site)], jobs=1, owned=lambda p: p == found[0])
    (artifacts,) = outcome.artifacts
    assert list(artifacts.dumps.paths) == [found[1]]


def test_many_dumps_go_to_a_list_file_when_a_lister_is_given(env, tmp_path):
    site, dumps = env
    code = writer(site, dumps)
    found = make_dumps(dumps, INLINE_DUMPS + 1)
    listed = []

    def lister(paths, audited):
        listed.append((sorted(paths), audited))
        return str(tmp_path / "list.0")

    (artifacts,) = inspect_drifts([drift(code, site)], jobs=1, dump_list=lister).artifacts
    assert listed and listed[0][0] == found
    assert str(site) in listed[0][1]  # the lister is told what the audit reads
    assert artifacts.dumps.list_file == str(tmp_path / "list.0")
    assert "xargs -0 rm" in artifacts.remedy_hint and found[0] not in artifacts.remedy_hint


def test_dumps_older_than_the_last_change_are_only_possible_and_older_still_are_counted(env):
    site, dumps = env
    code = writer(site, dumps)
    now = time.time()
    os.utime(code, (now - 1000, now - 1000))  # the code claims an old mtime; its ctime stays now
    possible = make_dumps(dumps, 1, mtime=now - 500)
    too_old = dumps / "dbg_hidden_old.pt"
    too_old.write_bytes(b"x")
    os.utime(too_old, (now - 5000, now - 5000))
    outcome = inspect_drifts([drift(code, site)], jobs=1)
    (check,) = outcome.artifacts
    assert check.kind is DriftKind.POSSIBLE_DEBUG_ARTIFACTS
    assert check.actual["possible_artifacts"] == possible
    assert "rm" not in check.remedy_hint.split()  # never offered for deletion
    assert any("1 file matching it not counted" in p.message for p in outcome.skipped)


def test_an_edited_file_that_no_longer_parses_is_a_finding_even_without_debug_code(env):
    site, _ = env
    broken = site / "pkg" / "broken.py"
    broken.write_text("def f(:\n    return 1\n")
    outcome = inspect_drifts([drift(broken, site)], jobs=1)
    assert [f.code for f in outcome.checks[0].findings] == ["DBG001"]


def test_a_dump_to_an_unspecific_tmp_path_is_reported_but_not_searched(env):
    site, _ = env
    code = site / "pkg" / "wide.py"
    code.write_text('import torch\n\n\ndef forward(x, name):\n    torch.save(x, f"/tmp/{name}")\n')
    outcome = inspect_drifts([drift(code, site)], jobs=1)
    # /tmp/* names every file in /tmp: no pattern worth looking for is carried at all.
    assert outcome.artifacts == []
    assert [f.code for f in outcome.checks[0].findings] == ["DBG101"]
