"""Layouts that older or other installers leave: Debian, legacy egg-info, virtualenv, bad RECORDs."""

from __future__ import annotations

import os

from driftscan import audit


def kinds(report):
    return {(d.relpath, d.kind.value, d.distribution.name if d.distribution else None) for d in report.drifts}


def test_debian_style_dists_are_unverifiable_not_drift(copy_fixture):
    site = copy_fixture("debian")
    report = audit(site_packages=[str(site)])
    # blinker's hex-digest RECORD matches every file: verified, silent.
    assert {u.distribution for u in report.unverifiable} == {"PyYAML 6.0.1", "python-apt 2.6.0"}
    reasons = {u.distribution: u.reason for u in report.unverifiable}
    assert "no INSTALLER" in reasons["PyYAML 6.0.1"] and "1 modified" in reasons["PyYAML 6.0.1"]
    assert "installed-files.txt" in reasons["python-apt 2.6.0"]
    # Files of the unlisted egg-info (claimed by top_level.txt) are not "added"; a stray one is, and
    # a stray sitecustomize.py is more than that: Python runs it at every start.
    assert kinds(report) == {("sitecustomize.py", "startup-code", None)}


def test_debian_style_passes_when_intact_and_strict_counts_unverifiable(copy_fixture):
    from fixtures.harness import run_cli

    # Laid out as on Debian (/usr/lib/python3/dist-packages): the prefix is the root, so the
    # RECORD rows that reach ../scripts stay inside the environment.
    fixture = copy_fixture("debian")
    site = fixture.parent / "usr" / "lib" / "python3" / "dist-packages"
    site.parent.mkdir(parents=True)
    fixture.rename(site)
    os.unlink(site / "sitecustomize.py")
    proc = run_cli("audit", "--site-packages", str(site))
    assert proc.returncode == 0, proc.stdout
    assert "unverifiable (2)" in proc.stdout
    strict = run_cli("audit", "--site-packages", str(site), "--strict")
    assert strict.returncode == 2


def test_legacy_egg_info_presence_check(copy_fixture):
    site = copy_fixture("egginfo")
    report = audit(site_packages=[str(site)])
    # installed-files.txt paths are relative to the egg-info dir; the .egg-link and easy-install.pth are
    # not added files, but the develop install they point to (/src/projleg2) is gone.
    assert kinds(report) == {("legpkg/util.py", "missing", "legpkg"), ("projleg2", "missing", "legpkg2")}
    gone = next(d for d in report.drifts if d.relpath == "projleg2")
    assert gone.scope.value == "source" and gone.path == "/src/projleg2"
    assert report.summary.files_checked == 4


def test_virtualenv_seeded_record_is_clean(copy_fixture):
    venv = copy_fixture("virtualenv")
    report = audit(venv=str(venv))
    assert report.drifts == [] and report.errors == []
    assert report.target.python_version == "3.11"


def test_virtualenv_seeded_record_still_catches_drift(copy_fixture):
    venv = copy_fixture("virtualenv")
    site = venv / "lib/python3.11/site-packages"
    (site / "pip/__init__.py").write_text("__version__ = 'patched'\n")
    (site / "pip/_internal/__init__.py").unlink()  # a hashless row that is not bytecode: presence matters
    report = audit(venv=str(venv))
    assert kinds(report) == {("pip/__init__.py", "modified", "pip"), ("pip/_internal/__init__.py", "missing", "pip")}


def test_malformed_record_rows_are_errors_and_the_rest_is_verified(copy_fixture):
    site = copy_fixture("malformed")
    report = audit(site_packages=[str(site)])
    assert kinds(report) == {("badrec/d.py", "modified", "badrec")}  # a/b/c/e stay owned, not "added"
    messages = sorted(e.message for e in report.errors)
    assert len(messages) == 4
    assert any("2 columns" in m and "line 2" in m for m in messages)
    assert any("md5" in m for m in messages)
    assert any("'six'" in m for m in messages)
    assert any("base64" in m for m in messages)
    # Every row is at least presence-checked; malformed rows (a, b, c, e) get no hash comparison.
    assert report.summary.files_checked == 10


def test_non_utf8_record_and_names(tmp_path):
    """A RECORD written in latin-1 naming a latin-1 file: an error for the RECORD, the file still verified."""
    site = tmp_path / "site"
    (site / "latin-1.0.dist-info").mkdir(parents=True)
    (site / "latin").mkdir()
    with open(os.path.join(os.fsencode(site), b"latin/caf\xe9.py"), "wb") as f:
        f.write(b"X = 1\n")
    (site / "latin-1.0.dist-info/METADATA").write_text("Name: latin\nVersion: 1.0\n\n")
    (site / "latin-1.0.dist-info/INSTALLER").write_text("pip\n")
    (site / "latin-1.0.dist-info/RECORD").write_bytes(
        b"latin/caf\xe9.py,,\nlatin-1.0.dist-info/METADATA,,\nlatin-1.0.dist-info/INSTALLER,,\n")
    with open(os.path.join(os.fsencode(site), b"latin/na\xefve.py"), "wb") as f:
        f.write(b"Y = 2\n")
    report = audit(site_packages=[str(site)])
    assert [e.message for e in report.errors] == ["not valid UTF-8; undecodable bytes kept as escapes"]
    assert kinds(report) == {("latin/na\\xefve.py", "added", None)}
    report.model_dump_json()  # serialisable despite the undecodable names


def test_conda_prefix_bin_is_not_walked(tmp_path):
    """conda-meta/ marks a conda prefix: its bin/ is the whole distribution, not venv extras."""
    prefix = tmp_path / "conda-env"
    site = prefix / "lib/python3.11/site-packages"
    site.mkdir(parents=True)
    (prefix / "conda-meta").mkdir()
    (prefix / "bin").mkdir()
    (prefix / "bin/openssl").write_text("")
    (site / "stray.py").write_text("")
    report = audit(venv=str(prefix))
    assert report.target.kind == "prefix"
    assert kinds(report) == {("stray.py", "added", None)}
