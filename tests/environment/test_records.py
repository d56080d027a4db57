"""environment/records.py: every RECORD row of an environment against the disk."""

from __future__ import annotations

import os
import shutil

import pytest

from driftscan.core.values import DriftKind
from driftscan.environment.dists import find_distributions, trusted_installer
from driftscan.environment.ownership import build_ownership
from driftscan.environment.records import presence_only, verify_records
from driftscan.environment.target import containment_for, venv_target
from fixtures.envtree import install, make_venv

CACHE_TAG = "cpython-311"


def run(venv):
    target = venv_target(str(venv))
    containment = containment_for(target)
    metadirs = list(find_distributions(target.site_packages, containment=containment))
    own = build_ownership(metadirs, containment)
    return verify_records(target, metadirs, own, jobs=1, containment=containment)


def by_rel(outcome, site):
    return {os.path.relpath(c.path, site): c for c in outcome.checks}


@pytest.fixture
def venv(tmp_path):
    venv, site = make_venv(tmp_path / "v")
    install(site, "demo", "1.0", {"demo/__init__.py": "", "demo/core.py": "def f():\n    return 1\n",
                                  "demo/data.bin": b"\0\1\2", "../../../bin/demo": "#!/bin/sh\necho demo\n"})
    return venv, site


def test_an_untouched_install_is_clean(venv):
    outcome = run(venv[0])
    assert outcome.checks == [] and outcome.errors == [] and outcome.unverifiable == []
    assert outcome.files_checked == 7  # 4 files, METADATA, INSTALLER, RECORD


def test_edited_missing_and_retyped_rows(venv):
    root, site = venv
    (site / "demo/core.py").write_text("def f():\n    return 2\n")  # same size: the hash tells
    (site / "demo/__init__.py").unlink()
    (site / "demo/data.bin").unlink()
    (site / "demo/data.bin").mkdir()
    (root / "bin/demo").write_text("#!/bin/sh\necho hijacked\n")
    checks = by_rel(run(root), site)
    assert checks["demo/core.py"].kind is DriftKind.MODIFIED
    assert checks["demo/core.py"].distribution.name == "demo"
    assert checks["demo/__init__.py"].kind is DriftKind.MISSING
    assert checks["demo/data.bin"].kind is DriftKind.TYPE_CHANGED
    script = checks["../../../bin/demo"]
    assert script.kind is DriftKind.MODIFIED and script.root == str(root)  # relative to the venv, not site-packages
    assert len(checks) == 4


def test_symlink_leaving_the_environment_is_not_followed(venv, tmp_path):
    root, site = venv
    outside = tmp_path / "outside.py"
    outside.write_text("def f():\n    return 1\n")  # the very content RECORD names
    (site / "demo/core.py").unlink()
    (site / "demo/core.py").symlink_to(outside)
    checks = run(root).checks
    assert [(c.kind, c.actual["type"]) for c in checks] == [(DriftKind.TYPE_CHANGED, "symlink")]
    assert "not followed" in checks[0].evidence


def test_missing_bytecode_is_not_drift_but_a_listed_source_is(tmp_path):
    root, site = make_venv(tmp_path / "v")
    pyc = f"demo/__pycache__/core.{CACHE_TAG}.pyc"
    install(site, "demo", "1.0", {"demo/core.py": "X = 1\n", pyc: b"bytecode"})
    (site / pyc).unlink()
    assert run(root).checks == []  # regenerated on import
    (site / "demo/core.py").unlink()
    assert [c.kind for c in run(root).checks] == [DriftKind.MISSING]


def test_bytecode_of_an_owned_source_is_checked_by_presence_only(tmp_path):
    root, site = make_venv(tmp_path / "v")
    pyc = f"demo/__pycache__/core.{CACHE_TAG}.pyc"
    install(site, "demo", "1.0", {"demo/core.py": "X = 1\n", pyc: b"bytecode"})
    (site / pyc).write_bytes(b"recompiled by a newer Python")
    assert run(root).checks == []
    target = venv_target(str(root))
    containment = containment_for(target)
    own = build_ownership(list(find_distributions(target.site_packages, containment=containment)), containment)
    flags = dict(zip((row[2] for row in own.rows), presence_only(own.rows, own.owners)))
    assert flags[str(site / pyc)] is True
    assert flags[str(site / "demo/core.py")] is False
    assert flags[str(site / "demo-1.0.dist-info/RECORD")] is True  # hashless row


def test_a_file_two_distributions_install_is_clobbered_for_the_loser(tmp_path):
    root, site = make_venv(tmp_path / "v")
    install(site, "first", "1.0", {"shared/common.py": "WHO = 'first'\n"})
    (site / "shared/common.py").unlink()
    install(site, "second", "1.0", {"shared/common.py": "WHO = 'second'\n"})
    checks = run(root).checks
    assert [(c.kind, c.distribution.name) for c in checks] == [(DriftKind.CLOBBERED, "first")]
    assert "also installed by second 1.0" in checks[0].evidence


def test_record_of_an_unknown_installer_that_mostly_does_not_match_is_unverifiable(tmp_path):
    root, site = make_venv(tmp_path / "v")
    files = {f"odd/m{i}.py": f"X = {i}\n" for i in range(4)}
    install(site, "odd", "1.0", files, installer="weird-tool")
    for rel in files:  # 4 of its 6 hashed rows (METADATA and INSTALLER match): not this install's RECORD
        (site / rel).write_text("rebuilt\n")
    outcome = run(root)
    assert outcome.checks == []
    assert len(outcome.unverifiable) == 1 and outcome.unverifiable[0].distribution == "odd 1.0"
    assert "installer 'weird-tool'" in outcome.unverifiable[0].reason and "4 modified" in outcome.unverifiable[0].reason


def test_unknown_installer_whose_record_mostly_matches_reports_drift_with_why(tmp_path):
    root, site = make_venv(tmp_path / "v")
    install(site, "odd", "1.0", {f"odd/m{i}.py": f"X = {i}\n" for i in range(4)}, installer="weird-tool")
    (site / "odd/m0.py").write_text("edited\n")
    outcome = run(root)
    assert outcome.unverifiable == []
    assert [c.kind for c in outcome.checks] == [DriftKind.MODIFIED]
    assert "not an installer driftscan knows" in outcome.checks[0].evidence


def test_trusted_installers():
    from driftscan.core.values import Distribution

    assert trusted_installer(Distribution("a", "1", "/x", "/s", installer="UV"))
    assert not trusted_installer(Distribution("a", "1", "/x", "/s", installer="conda"))
    assert not trusted_installer(Distribution("a", "1", "/x", "/s"))


def _many(prefix: str, n: int) -> dict[str, str]:
    return {f"{prefix}/m{i:03d}.py": f"X = {i}\n" for i in range(n)}


def test_a_deleted_directory_of_many_files_is_one_drift_with_its_count_and_first_files(tmp_path):
    venv, site = make_venv(tmp_path / "v")
    files = {"big/__init__.py": "", **_many("big/kernels/cuda", 120), **_many("big/kernels/cpu", 30),
             **_many("big/small", 5)}
    install(site, "big", "1.0", files)
    shutil.rmtree(site / "big/kernels")  # 150 files under a directory that is gone
    shutil.rmtree(site / "big/small")  # 5: too few to group, each reported
    checks = run(venv).checks
    [gone] = [c for c in checks if c.kind is DriftKind.MISSING_DIRECTORY]
    assert gone.path == str(site / "big/kernels"), "the topmost directory that is gone"
    assert gone.expected["files"] == 150 and gone.distribution.name == "big"
    assert gone.expected["listed"] == sorted(f for f in files if f.startswith("big/kernels/"))[:100]
    singles = sorted(os.path.relpath(c.path, site) for c in checks if c.kind is DriftKind.MISSING)
    assert singles == sorted(f for f in files if f.startswith("big/small/"))
    assert len(checks) == 6


def test_many_files_missing_from_a_directory_that_is_there_are_one_drift(tmp_path):
    venv, site = make_venv(tmp_path / "v")
    files = {"big/__init__.py": "", **_many("big", 150)}
    install(site, "big", "1.0", files)
    for name in files:
        if name != "big/__init__.py":
            (site / name).unlink()
    (site / "big/m007.py").write_text("edited = True\n")  # one edited among them stays its own drift
    checks = {c.kind: c for c in run(venv).checks}
    assert set(checks) == {DriftKind.MISSING_FILES, DriftKind.MODIFIED}
    group = checks[DriftKind.MISSING_FILES]
    assert group.path == str(site / "big") and group.expected["files"] == 149
    assert "big/m007.py" not in group.expected["listed"]


def test_missing_bytecode_never_makes_a_group(tmp_path):
    venv, site = make_venv(tmp_path / "v")
    install(site, "big", "1.0", {"big/__init__.py": "",
                                 **{f"big/__pycache__/m{i}.{CACHE_TAG}.pyc": b"\0" for i in range(150)}})
    shutil.rmtree(site / "big/__pycache__")
    assert run(venv).checks == []


def test_a_long_record_under_a_symlink_out_of_the_environment_is_refused_not_called_missing(tmp_path):
    """The directory-by-directory pass of long RECORDs looks at no directory the checks refuse:
    rows under a link that leaves the environment stay unread and are reported as such."""
    from driftscan.environment.ownership import ABSENT_PASS_MIN

    venv, site = make_venv(tmp_path / "v")
    outside = tmp_path / "outside"
    outside.mkdir()
    (site / "pkg").symlink_to(outside)
    info = site / "pkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n")
    (info / "INSTALLER").write_text("pip\n")
    digest = "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
    with open(info / "RECORD", "w") as f:
        f.writelines(f"pkg/sub{i // 1000}/f{i}.py,{digest},0\n" for i in range(ABSENT_PASS_MIN))
        f.write("pkg-1.0.dist-info/METADATA,,\npkg-1.0.dist-info/INSTALLER,,\npkg-1.0.dist-info/RECORD,,\n")
    outcome = run(venv)
    assert [c for c in outcome.checks if c.path.startswith(str(site / "pkg") + os.sep)] == []
    assert any(f"{ABSENT_PASS_MIN} RECORD rows not checked" in e.message for e in outcome.errors), outcome.errors
