"""Predictions checked against reality: plant drift, predict, run the real reinstall, audit again."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from driftscan import audit
from fixtures import venvs
from fixtures.harness import offline, replace_by_rename


def by_path(report):
    return {d.relpath: d for d in report.drifts}


def test_uv_hardlinked_in_place_edit_survives_reinstall_and_spreads(tmp_path, wheelhouse):
    cache = tmp_path / "uv-cache"  # private: this test poisons it on purpose
    one = venvs.make_uv_venv(tmp_path / "one", cache)
    two = venvs.make_uv_venv(tmp_path / "two", cache)
    for venv in (one, two):
        venvs.uv_install(venv, cache, *offline(wheelhouse), "six==1.17.0", "click==8.1.8")
    site = venvs.site_packages_of(one)
    assert (site / "six.py").stat().st_nlink >= 3  # the cache plus two venvs
    with open(site / "six.py", "a") as f:  # in place: the cache copy is edited too
        f.write("_nomla_debug = 0\n")
    replace_by_rename(site / "click/core.py", (site / "click/core.py").read_text() + "# sed -i style\n")

    report = audit(venv=str(one), uv_cache=str(cache))
    six, core = by_path(report)["six.py"], by_path(report)["click/core.py"]
    assert six.prediction.value == "survives" and six.survives_reinstall is True
    assert six.actual["uv_cache"]["copy"].startswith(str(cache / "archive-v0"))
    assert six.remedy.startswith(f"uv cache clean --cache-dir {cache} six && uv pip install")  # not uv's default cache
    assert "every venv sharing this cache" in six.evidence
    assert core.prediction.value == "wiped" and core.survives_reinstall is False
    # The cache's archive is edited: the audit of the cache itself names it (one cache-modified drift).
    assert [d.actual["edited"][0]["path"] for d in report.drifts if d.kind.value == "cache-modified"] == ["six.py"]
    # The other venv never touched six.py, yet has the edit: it shares the inode.
    assert {d.relpath for d in audit(venv=str(two), uv_cache=str(cache)).drifts
            if d.kind.value != "cache-modified"} == {"six.py"}

    # Reality: uv --reinstall relinks the edited cache copy; the rename-edit is restored.
    venvs.uv_install(one, cache, *offline(wheelhouse), "--reinstall", "--no-deps", "six==1.17.0", "click==8.1.8")
    assert {d.relpath for d in audit(venv=str(one), uv_cache=str(cache)).drifts
            if d.kind.value != "cache-modified"} == {"six.py"}

    # The remedy driftscan gave, run as given (with the test's offline index), clears it.
    command = six.remedy.replace("--no-deps", "--no-deps " + " ".join(offline(wheelhouse)))
    subprocess.run(command, shell=True, check=True, capture_output=True,
                   env={**venvs.uv_env(cache), "PATH": f"{venvs.uv_bin().rsplit('/', 1)[0]}:/usr/bin:/bin"})
    assert audit(venv=str(one), uv_cache=str(cache)).drifts == []


def test_uv_link_without_locatable_cache_may_survive(tmp_path, wheelhouse):
    cache = tmp_path / "uv-cache"
    venv = venvs.make_uv_venv(tmp_path / "v", cache)
    venvs.uv_install(venv, cache, *offline(wheelhouse), "six==1.17.0")
    with open(venvs.site_packages_of(venv) / "six.py", "a") as f:
        f.write("# edit\n")
    report = audit(venv=str(venv), uv_cache=str(tmp_path / "elsewhere"))
    six = by_path(report)["six.py"]
    assert six.prediction.value == "may-survive" and six.survives_reinstall is True
    assert "no copy found" in six.evidence


def test_pip_force_reinstall_wipes_what_was_predicted_and_keeps_the_rest(tmp_path, wheelhouse):
    venv = venvs.make_pip_venv(tmp_path / "v")
    venvs.pip_install(venv, *offline(wheelhouse), "six==1.17.0", "requests==2.32.3")
    site = venvs.site_packages_of(venv)
    with open(site / "six.py", "a") as f:
        f.write("# edit\n")
    (site / "requests/help.py").unlink()
    (site / "requests/debug_dump.pt").write_bytes(b"dump")
    (site / "requests/__pycache__/ghost.cpython-311.pyc").write_bytes(b"ghost")
    report = audit(venv=str(venv))
    predicted = {d.relpath: d.prediction.value for d in report.drifts}
    assert predicted == {"six.py": "wiped", "requests/help.py": "wiped", "requests/debug_dump.pt": "survives",
                         "requests/__pycache__/ghost.cpython-311.pyc": "survives"}
    for remedy in {d.remedy for d in report.drifts if d.scope.value == "package"}:
        argv = shlex.split(remedy)
        subprocess.run(argv[:argv.index("--no-deps") + 1] + offline(wheelhouse) + argv[argv.index("--no-deps") + 1:],
                       check=True, capture_output=True)
    survivors = {d.relpath for d in audit(venv=str(venv)).drifts}
    assert survivors == {p for p, v in predicted.items() if v == "survives"}


def test_uv_reinstall_wipes_junk_in_its_pycache(tmp_path, wheelhouse):
    cache = tmp_path / "uv-cache"
    venv = venvs.make_uv_venv(tmp_path / "v", cache)
    venvs.uv_install(venv, cache, *offline(wheelhouse), "requests==2.32.3")
    site = venvs.site_packages_of(venv)
    (site / "requests/__pycache__").mkdir(exist_ok=True)
    (site / "requests/__pycache__/ghost.cpython-311.pyc").write_bytes(b"ghost")
    (site / "requests/extra.py").write_text("X = 1\n")
    report = audit(venv=str(venv), uv_cache=str(cache))
    predicted = {d.relpath: d.prediction.value for d in report.drifts}
    assert predicted == {"requests/__pycache__/ghost.cpython-311.pyc": "wiped", "requests/extra.py": "survives"}
    venvs.uv_install(venv, cache, *offline(wheelhouse), "--reinstall", "--no-deps", "requests==2.32.3")
    assert {d.relpath for d in audit(venv=str(venv), uv_cache=str(cache)).drifts} == {"requests/extra.py"}


def test_uv_edit_whose_source_cannot_be_told_may_survive_with_both_cases(tmp_path):
    """Installed from a wheel file that is gone since: whether a reinstall relinks the edited archive
    cannot be told, and the plan spells out both outcomes."""
    from driftscan.api import plan
    from fixtures.wheels import build_wheel

    wheel = build_wheel(tmp_path / "w", "gonepkg", "1.0", {"gonepkg/__init__.py": "X = 1\n"})
    cache = tmp_path / "uv-cache"
    venv = venvs.make_uv_venv(tmp_path / "v", cache)
    venvs.uv_install(venv, cache, "--no-deps", str(wheel))
    wheel.unlink()
    with open(venvs.site_packages_of(venv) / "gonepkg/__init__.py", "a") as f:
        f.write("# edit\n")
    result = plan(["gonepkg"], venv=str(venv), uv_cache=str(cache))
    (item,) = [i for i in result.items if i.kind != "cache-modified"]  # the edited archive is its own drift
    assert item.status_without_steps == "MAY SURVIVE"
    assert "uv links the edited archive back" in item.reason and "otherwise it unpacks afresh" in item.reason
    assert [(s.kind, s.told_by) for s in result.sources] == [("wheel", ["direct_url.json"])]


@pytest.mark.network
def test_uv_registry_wheel_edited_in_place_is_wiped_by_the_reinstall_from_the_index(tmp_path):
    """A wheel from the package registry: ``--reinstall`` fetches it again and unpacks it afresh, so
    the in-place edit (which is in uv's archive too) is wiped, as the plan predicts."""
    from driftscan.api import plan
    from fixtures.network import skip_or_fail_without_network

    cache = tmp_path / "uv-cache"  # private: poisoned on purpose
    venv = venvs.make_uv_venv(tmp_path / "v", cache)
    try:
        venvs.uv_install(venv, cache, "--no-deps", "six==1.17.0")
    except venvs.InstallError as exc:
        skip_or_fail_without_network(f"package index unreachable: {exc}")
    six = venvs.site_packages_of(venv) / "six.py"
    with open(six, "a") as f:
        f.write("# edit\n")
    assert six.stat().st_nlink > 1
    result = plan(["six"], venv=str(venv), uv_cache=str(cache), source="index")
    (item,) = [i for i in result.items if i.kind != "cache-modified"]  # the edited archive is its own drift
    assert item.status_without_steps == "WIPED" and "package registry" in item.reason, item.reason
    reinstall = next(s.command for s in result.steps if s.command and "--reinstall" in s.command)
    venvs.run([venvs.uv_bin(), *shlex.split(reinstall)[1:]], env=venvs.uv_env(cache))
    assert "# edit" not in six.read_text()
