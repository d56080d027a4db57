"""`driftscan audit` on environments a system package manager owns: a conda prefix installed by
a real conda-ecosystem installer (py-rattler, from packages the test builds), and Debian's own
dist-packages (dpkg's database, compared with debsums). Pristine: no drift; a planted edit:
found, with the package, its installer and the package manager's reinstall command."""

from __future__ import annotations

import os
import shutil
import sys
import subprocess
from pathlib import Path

import pytest

from driftscan import audit
from fixtures import conda as fx

RECORDS = ["demo-py", "demo-tools", "python"]


@pytest.fixture(scope="module")
def channel(tmp_path_factory) -> Path:
    return fx.build_channel(tmp_path_factory.mktemp("conda-channel"))


def _prefix(channel: Path, where: Path) -> Path:
    prefix = where / "env"
    fx.install(channel, prefix, ["demo-tools", "demo-py"], where / "pkgs")
    return prefix


def _drifts(report):
    return sorted((d.relpath, d.kind.value, d.distribution.name if d.distribution else None) for d in report.drifts)


def _unlink_edit(path: Path, data: bytes) -> None:
    """Edit without touching rattler's package cache (its files are hard links)."""
    path.unlink()
    path.write_bytes(data)


def test_pristine_conda_prefix_has_no_drift(channel, tmp_path):
    prefix = _prefix(channel, tmp_path)
    report = audit(venv=str(prefix))
    assert _drifts(report) == [] and report.errors == [] and report.unverifiable == []
    assert report.target.kind == "prefix"
    assert report.summary.distributions == 3  # the conda records, not demo-py's dist-info
    assert report.summary.files_checked >= 15


def test_edits_in_a_conda_prefix(channel, tmp_path):
    prefix = _prefix(channel, tmp_path)
    data = prefix / "share/demo/data.txt"
    _unlink_edit(data, data.read_bytes() + b"patched\n")
    config = prefix / "etc/demo/config.ini"  # rewritten at link time (text-mode placeholder)
    _unlink_edit(config, config.read_bytes().replace(b"plugins", b"plugins_debug"))
    module = prefix / fx.SITE_PACKAGES / "demo_py" / "__init__.py"  # a noarch: python module
    _unlink_edit(module, module.read_bytes() + b"import pdb\n")
    (prefix / "bin" / "zz-debug").write_text("#!/bin/sh\n")
    report = audit(venv=str(prefix))
    assert _drifts(report) == [
        ("bin/zz-debug", "added", None),
        ("demo_py/__init__.py", "modified", "demo-py"),  # relative to site-packages
        ("etc/demo/config.ini", "modified", "demo-tools"),
        ("share/demo/data.txt", "modified", "demo-tools"),
    ]
    by_path = {d.relpath: d for d in report.drifts}
    tools = by_path["share/demo/data.txt"]
    assert tools.distribution.installer == "conda"
    assert tools.remedy == f"conda install -p {prefix} --force-reinstall --no-deps demo-tools=2.0.1=h0a1b2c3_3"
    assert "conda record" in tools.evidence
    assert "placeholder" in by_path["etc/demo/config.ini"].evidence
    assert by_path["demo_py/__init__.py"].remedy.endswith("demo-py=1.4=pyhd8ed1ab_0")

    from driftscan.api import plan

    planned = plan(["demo-tools"], venv=str(prefix))
    assert planned.installer == "conda"
    status = {i.relpath: i.status for i in planned.items}
    assert status["share/demo/data.txt"] == "WIPED" and status["demo_py/__init__.py"] == "SURVIVES"
    assert planned.steps[-1].command == tools.remedy


def test_a_pip_install_inside_a_conda_prefix_is_judged_by_its_record(channel, tmp_path, wheelhouse):
    from fixtures.harness import offline
    from fixtures import venvs

    prefix = _prefix(channel, tmp_path)
    site = prefix / fx.SITE_PACKAGES
    venvs.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-compile", *offline(wheelhouse),
               "--target", str(site), "six"])
    assert _drifts(audit(venv=str(prefix))) == []
    (site / "six.py").write_text("patched = 1\n")
    report = audit(venv=str(prefix))
    assert _drifts(report) == [("six.py", "modified", "six")]
    assert "pip install" in report.drifts[0].remedy


DIST = Path("/usr/lib/python3/dist-packages")


def _debian() -> bool:
    return os.path.isfile("/var/lib/dpkg/status") and DIST.is_dir() and shutil.which("debsums") is not None


def _compare_with_debsums():
    report = audit(site_packages=[str(DIST)])
    # debsums on every package owning a file here (all of the system's would take minutes)
    owners = sorted({d.distribution.name for d in report.drifts if d.distribution}
                    | {line.split(":")[0] for line in subprocess.run(
                        ["dpkg-query", "-S", str(DIST)], capture_output=True, text=True).stdout.split(", ")
                       if line.strip()})
    changed = subprocess.run(["debsums", "-c", *owners], capture_output=True, text=True).stdout.split()
    expected = sorted(os.path.relpath(p, DIST) for p in changed if p.startswith(str(DIST) + "/"))
    modified = sorted(d.relpath for d in report.drifts if d.kind.value == "modified")
    assert modified == expected
    for d in report.drifts:
        if d.kind.value == "modified":
            assert d.distribution.installer == "dpkg"
            assert d.remedy.startswith("apt-get install --reinstall ")
            assert "md5, as Debian records it" in d.evidence
    return report


@pytest.mark.skipif(not _debian(), reason="needs a Debian system with debsums (tests/environment/test_dpkg.py installs it)")
def test_debian_dist_packages_agree_with_debsums():
    """As installed here, then with blinker/base.py edited (restored afterwards: the real system)."""
    from fixtures.dpkg import real_system_lock

    target = DIST / "blinker" / "base.py"
    if not target.is_file():
        pytest.skip("python3-blinker is not installed (tests/environment/test_dpkg.py installs it)")
    with real_system_lock():
        before = _compare_with_debsums()
        assert not any(d.relpath == "blinker/base.py" for d in before.drifts)
        original = target.read_bytes()
        try:
            target.write_bytes(original + b"\n_driftscan_managed_test = 1\n")
            after = _compare_with_debsums()
            edited = next(d for d in after.drifts if d.relpath == "blinker/base.py")
            assert (edited.distribution.name, edited.remedy) == ("python3-blinker",
                                                                 "apt-get install --reinstall python3-blinker")
        finally:
            target.write_bytes(original)


@pytest.mark.parametrize("tool, expected", [
    ("conda", "conda install -p /opt/env --force-reinstall --no-deps numpy=1.26.4=py311h64a7726_0"),
    ("mamba", "mamba install -p /opt/env --force-reinstall --no-deps numpy=1.26.4=py311h64a7726_0"),
    ("micromamba", "micromamba install -p /opt/env --force-reinstall --no-deps numpy=1.26.4=py311h64a7726_0"),
    ("pixi", "pixi reinstall numpy"),
])
def test_conda_remedy_follows_the_tool_the_history_names(tool, expected):
    from driftscan.pipeline.classify import reinstall_parts
    from driftscan.core.values import Distribution, MetadataKind, Target, TargetKind

    dist = Distribution("numpy", "1.26.4", "/opt/env/conda-meta/numpy-1.26.4-py311h64a7726_0.json", "/opt/env",
                        kind=MetadataKind.CONDA, installer=tool, build="py311h64a7726_0")
    target = Target(TargetKind.PREFIX, "/opt/env", ("/opt/env/lib/python3.11/site-packages",))
    assert reinstall_parts(target, [dist]) == (None, expected)


@pytest.mark.parametrize("info, expected", [
    ("/var/lib/dpkg/info/python3-requests.list", "apt-get install --reinstall python3-requests"),
    ("/srv/image root/var/lib/dpkg/info/python3-requests.list",
     "chroot '/srv/image root' apt-get install --reinstall python3-requests"),
])
def test_dpkg_remedy_runs_inside_the_system_it_audits(info, expected):
    from driftscan.pipeline.classify import reinstall_parts
    from driftscan.core.values import Distribution, MetadataKind, Target, TargetKind

    dist = Distribution("python3-requests", "2.28.1+dfsg-1", info, "/usr/lib/python3/dist-packages",
                        kind=MetadataKind.DPKG, installer="dpkg", build="all")
    target = Target(TargetKind.SITE_PACKAGES, None, ("/usr/lib/python3/dist-packages",))
    assert reinstall_parts(target, [dist]) == (None, expected)
