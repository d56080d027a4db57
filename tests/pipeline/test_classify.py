"""pipeline.classify: a FileCheck becomes a Drift: its scope, what a reinstall with the
environment's installer does to it, and a remedy whose words from the tree are validated and
quoted so that none becomes an option or a second command."""

from __future__ import annotations

import shlex

import pytest

from driftscan.core.values import (Area, Distribution, DriftKind, FileCheck, MetadataKind, Prediction, Scope,
                                   Target, TargetKind, UvCacheLink)
from driftscan.pipeline.classify import (UNSAFE, classify, effective_installer, installer_of, reinstall_parts,
                                         requirement, safe_url, uv_cache_clean)
from fixtures.reports import every_kind_checks


@pytest.fixture
def venv(tmp_path):
    """A venv layout with pip installed in it (a pip-*.dist-info), nothing run."""
    site = tmp_path / "venv" / "lib" / "python3.12" / "site-packages"
    (site / "pip-24.0.dist-info").mkdir(parents=True)
    (tmp_path / "venv" / "bin").mkdir()
    (tmp_path / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    target = Target(TargetKind.VENV, str(tmp_path / "venv"), (str(site),))
    return target, str(site)


def _dist(site: str, name="demo", version="1.0", installer="pip", **extra) -> Distribution:
    return Distribution(name, version, f"{site}/{name}-{version}.dist-info", site, installer=installer, **extra)


def _modified(site: str, dist: Distribution, **extra) -> FileCheck:
    return FileCheck(DriftKind.MODIFIED, f"{site}/demo/core.py", site, dist, **extra)


def test_pip_venv_package_file_is_wiped_by_pip(venv):
    target, site = venv
    drift = classify(_modified(site, _dist(site)), target)
    assert drift.scope is Scope.PACKAGE and drift.prediction is Prediction.WIPED and not drift.survives_reinstall
    python = f"{target.venv}/bin/python"
    assert shlex.split(drift.remedy) == [python, "-m", "pip", "install", "--force-reinstall", "--no-deps",
                                         "demo==1.0"]
    assert "listed in the RECORD of demo 1.0" in drift.evidence


def test_uv_installed_package_uses_uv(venv):
    target, site = venv
    drift = classify(_modified(site, _dist(site, installer="uv")), target)
    assert drift.remedy.startswith("uv pip install --python ") and "--reinstall --no-deps demo==1.0" in drift.remedy
    assert installer_of([_dist(site, installer="uv")]) == "uv"
    assert installer_of([_dist(site, installer="uv"), _dist(site, "b")]) == "pip", "mixed: pip"
    assert installer_of([_dist(site, installer="uv")], override="pip") == "pip"


def test_pipless_venv_gets_uv(tmp_path):
    site = tmp_path / "v" / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    target = Target(TargetKind.VENV, str(tmp_path / "v"), (str(site),))
    who, why = effective_installer(target, [_dist(str(site))])
    assert who == "uv" and "has no pip installed" in why
    drift = classify(_modified(str(site), _dist(str(site))), target)
    assert "uv pip install --python" in drift.remedy and drift.remedy.startswith(str(tmp_path / "v"))


def test_uv_cache_link_survives_a_uv_reinstall(venv):
    target, site = venv
    link = UvCacheLink("/cache/uv", "/cache/uv/archive-v0/x/demo/core.py", 2, False)
    drift = classify(_modified(site, _dist(site, installer="uv"), uv_cache=link), target)
    assert drift.prediction is Prediction.SURVIVES and drift.survives_reinstall
    assert drift.remedy.startswith("uv cache clean --cache-dir /cache/uv demo && uv pip install")
    assert "shares its inode (2 links)" in drift.evidence
    unknown = classify(_modified(site, _dist(site, installer="uv"), uv_cache=UvCacheLink(None, None, 2, False)),
                       target)
    assert unknown.prediction is Prediction.MAY_SURVIVE and "not located; pass --uv-cache" in unknown.evidence
    with_pip = classify(_modified(site, _dist(site, installer="uv"), uv_cache=link), target, installer="pip")
    assert with_pip.prediction is Prediction.WIPED and "carries the same edit" in with_pip.evidence


@pytest.mark.parametrize("kind,prediction,remedy_start", [
    (DriftKind.ADDED, Prediction.SURVIVES, "no reinstall removes it; if it is not needed: rm "),
    (DriftKind.ORPHANED_BYTECODE, Prediction.SURVIVES, "rm "),
    (DriftKind.ORPHANED_METADATA, Prediction.SURVIVES, "rm -r "),
])
def test_unowned_files_survive(venv, kind, prediction, remedy_start):
    target, site = venv
    drift = classify(FileCheck(kind, f"{site}/x; rm -rf ~", site), target)
    assert drift.scope is Scope.ENVIRONMENT and drift.prediction is prediction
    assert drift.remedy.startswith(remedy_start)
    assert shlex.split(drift.remedy)[-1] == f"{site}/x; rm -rf ~", "the path is one quoted word"


def test_junk_in_a_uv_packages_pycache_is_wiped_by_uv(venv):
    target, site = venv
    check = FileCheck(DriftKind.ADDED, f"{site}/demo/__pycache__/stray.pyc", site, _dist(site, installer="uv"))
    drift = classify(check, target)
    assert drift.prediction is Prediction.WIPED and "uv deletes every file" in drift.evidence


@pytest.mark.parametrize("area,scope", [(Area.MODEL, Scope.DATA), (Area.SOURCE, Scope.SOURCE),
                                        (Area.EXTERNAL, Scope.EXTERNAL)])
def test_areas_outside_packages_survive(venv, area, scope):
    target, site = venv
    drift = classify(FileCheck(DriftKind.MODIFIED, "/somewhere/f", "/somewhere", _dist(site), area=area), target)
    assert drift.scope is scope and drift.prediction is Prediction.SURVIVES
    assert drift.remedy == "restore it from its source"


def test_a_dump_drift_deletes_only_by_its_hint(venv):
    target, _ = venv
    checks = every_kind_checks()
    dumps = classify(checks[DriftKind.DEBUG_ARTIFACTS], target)
    assert dumps.remedy == "rm -- /tmp/dbg_1.pt /tmp/dbg_2.pt"
    no_hint = classify(FileCheck(DriftKind.DEBUG_ARTIFACTS, "/tmp/*", "/tmp", area=Area.EXTERNAL), target)
    assert no_hint.remedy == "review the files, then delete them", "a pattern from code never becomes an rm"


def test_clobbered_names_both_ways(venv):
    target, site = venv
    drift = classify(FileCheck(DriftKind.CLOBBERED, f"{site}/shared.py", site, _dist(site)), target)
    assert drift.remedy.startswith("two distributions install this path; uninstall one of them, or ")


@pytest.mark.parametrize("name,version", [("--index-url=http://evil", "1.0"), ("demo", "1.0; rm -rf /"),
                                          ("demo\nrm", "1.0"), ("demo", "")])
def test_hostile_metadata_never_reaches_the_command(name, version):
    dist = Distribution(name, version, "/m", "/s")
    assert requirement(dist) == UNSAFE


def test_requirement_from_direct_url():
    editable = Distribution("demo", "1.0", "/m", "/s",
                            direct_url={"url": "file:///home/dev/proj", "dir_info": {"editable": True}})
    assert requirement(editable) == "-e file:///home/dev/proj"
    spaced = Distribution("demo", "1.0", "/m", "/s",
                          direct_url={"url": "file:///home/dev/my proj", "dir_info": {"editable": True}})
    assert requirement(spaced) == "demo==1.0", "a URL with whitespace is never an argument: the pin instead"
    vcs = Distribution("demo", "1.0", "/m", "/s", direct_url={"url": "git+https://x/y", "vcs_info": {}})
    assert requirement(vcs) == "demo==1.0", "a VCS install is reinstalled by its version"
    assert safe_url("--index-url=http://x") is None and safe_url("https://x/a b") is None
    assert safe_url("https://files.example/demo-1.0.whl") == "https://files.example/demo-1.0.whl"


def test_conda_and_dpkg_go_back_through_their_manager(tmp_path):
    target = Target(TargetKind.PREFIX, None, ("/opt/env/lib/python3.12/site-packages",))
    conda = [Distribution("numpy", "1.26.4", "/opt/env/conda-meta/numpy.json", "/s", kind=MetadataKind.CONDA,
                          installer="mamba", build="py312h_0")]
    note, command = reinstall_parts(target, conda)
    assert note is None and command == "mamba install --force-reinstall --no-deps numpy=1.26.4=py312h_0"
    assert installer_of(conda, override="pip") == "mamba", "a conda record is never reinstalled by pip"
    pixi = [Distribution("numpy", "1.26.4", "/m", "/s", kind=MetadataKind.CONDA, installer="pixi")]
    assert reinstall_parts(target, pixi)[1] == "pixi reinstall numpy"


def test_uv_cache_clean_quotes_the_name(monkeypatch):
    monkeypatch.delenv("UV_CACHE_DIR", raising=False)
    assert uv_cache_clean(Distribution("demo", "1", "/m", "/s"), "/srv/uv cache") == \
        "uv cache clean --cache-dir '/srv/uv cache' demo"
    assert uv_cache_clean(Distribution("-x", "1", "/m", "/s"), "/c").endswith(shlex.quote(UNSAFE))


def test_a_patched_file_is_wiped_but_one_the_patch_added_survives(venv):
    target, site = venv
    dist = _dist(site)
    written = FileCheck(DriftKind.PATCHED, f"{site}/demo/core.py", site, dist,
                        expected={"hash": "sha256=abc", "patch": "/t/patches/demo@1.0.patch"})
    drift = classify(written, target)
    assert drift.prediction is Prediction.WIPED and "driftscan patch apply --yes" in drift.remedy
    added = FileCheck(DriftKind.PATCHED, f"{site}/demo/extra.py", site, dist,
                      expected={"patch": "/t/patches/demo@1.0.patch"})
    drift = classify(added, target)
    assert drift.prediction is Prediction.SURVIVES and drift.scope is Scope.PACKAGE, "no RECORD lists it"
