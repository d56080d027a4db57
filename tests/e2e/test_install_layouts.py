"""Environments beyond a venv's site-packages, installed for real: pip and uv ``--target``, pip
``--user`` (PYTHONUSERBASE) and ``--prefix``, a venv's etc/ and other top-level directories
RECORDs write into. Pristine: no drift. One planted edit each: found, with a remedy that
reinstalls into the same place."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from driftscan import audit
from fixtures import venvs
from fixtures.harness import offline, run_cli
from fixtures.wheels import build_wheel, record_hash

PY = f"{sys.version_info.major}.{sys.version_info.minor}"


def _drifts(report):
    return sorted((d.relpath, d.kind.value) for d in report.drifts)


def _edit(path: Path) -> None:
    path.write_text(path.read_text() + "\nimport os  # debugging\n")


def test_pip_target_directory(tmp_path, wheelhouse):
    target = tmp_path / "T"
    venvs.run([sys.executable, "-m", "pip", "install", "--quiet", *offline(wheelhouse), "--target", str(target),
               "requests", "six"])
    # pip wrote RECORD rows relative to its temporary prefix: the script row is ../../bin/normalizer.
    record = next(target.glob("charset_normalizer-*.dist-info")) / "RECORD"
    assert "../../bin/normalizer," in record.read_text()
    assert (target / "bin" / "normalizer").exists()

    pristine = audit(site_packages=[str(target)])
    assert _drifts(pristine) == [] and pristine.errors == [] and pristine.unverifiable == []

    _edit(target / "six.py")
    (target / "bin" / "normalizer").write_text("#!/bin/sh\necho patched\n")
    report = audit(site_packages=[str(target)])
    assert _drifts(report) == [("bin/normalizer", "modified"), ("six.py", "modified")]
    six = next(d for d in report.drifts if d.relpath == "six.py")
    # pip --target replaces nothing without --upgrade ("Target directory ... already exists").
    assert f"python{PY} -m pip install --target {target} --upgrade --force-reinstall --no-deps six==" in six.remedy


def test_pip_target_plan_says_whole_directories_are_replaced(tmp_path, wheelhouse):
    """pip install --target --upgrade replaces each top-level directory of the wheel whole, files
    no RECORD lists included; the plan says so, and the real reinstall agrees."""
    from driftscan.api import plan

    target = tmp_path / "T"
    install = [sys.executable, "-m", "pip", "install", "--quiet", *offline(wheelhouse), "--target", str(target)]
    venvs.run([*install, "charset-normalizer", "six"])
    (target / "charset_normalizer" / "zz_debug.py").write_text("x = 1\n")
    (target / "bin" / "zz_tool").write_text("#!/bin/sh\n")
    (target / "zz_top.py").write_text("y = 2\n")
    status = {i.relpath: i.status for i in plan(["charset-normalizer"], site_packages=[str(target)]).items}
    assert status == {"charset_normalizer/zz_debug.py": "WIPED", "bin/zz_tool": "WIPED", "zz_top.py": "SURVIVES"}
    version = next(target.glob("charset_normalizer-*.dist-info")).name[len("charset_normalizer-"):-len(".dist-info")]
    venvs.run([*install, "--upgrade", "--force-reinstall", "--no-deps", f"charset-normalizer=={version}"])
    assert [p for p in ("charset_normalizer/zz_debug.py", "bin/zz_tool", "zz_top.py") if (target / p).exists()] \
        == ["zz_top.py"]


def test_uv_target_directory(tmp_path, wheelhouse, uv_cache):
    target = tmp_path / "U"
    venvs.run([venvs.uv_bin(), "pip", "install", "--quiet", "--python", sys.executable, *offline(wheelhouse),
               "--target", str(target), "six", "click"], env=venvs.uv_env(uv_cache))
    assert (target / ".lock").is_file()  # uv's lock: installer bookkeeping, not an added file

    assert _drifts(audit(site_packages=[str(target)])) == []

    (target / ".lock").write_text("not empty: not uv's")
    six = target / "six.py"
    six.unlink()  # break uv's hard link to its cache before editing (the cache is shared by the session)
    six.write_text("patched = True\n")
    report = audit(site_packages=[str(target)], uv_cache=str(uv_cache))
    assert _drifts(report) == [(".lock", "added"), ("six.py", "modified")]
    remedy = next(d for d in report.drifts if d.relpath == "six.py").remedy
    # uv compiles no bytecode and six and click are pure Python: nothing in the directory tells its
    # Python version, so the remedy says so and leaves the interpreter to name (never a bare "python").
    assert remedy.startswith(f"no interpreter belongs to the --target directory {target}, and nothing in it names its "
                             "Python version; name the Python it belongs to: ")
    assert f"uv pip install --target {target} --python /path/to/python --reinstall --no-deps six==" in remedy


def test_pip_user_install_remedy_says_user(tmp_path, wheelhouse, monkeypatch):
    base = tmp_path / "userbase"
    env = {**os.environ, "PYTHONUSERBASE": str(base), "PIP_USER": "1"}
    base_python = os.path.join(sys.base_prefix, "bin", f"python{PY}")  # --user is refused inside a venv
    venvs.run([base_python, "-m", "pip", "install", "--quiet", "--user", "--ignore-installed", *offline(wheelhouse),
               "six"], env=env)
    site = base / "lib" / f"python{PY}" / "site-packages"
    monkeypatch.setenv("PYTHONUSERBASE", str(base))
    assert _drifts(audit(site_packages=[str(site)])) == []
    _edit(site / "six.py")
    report = audit(site_packages=[str(site)])
    assert _drifts(report) == [("six.py", "modified")]
    assert report.drifts[0].remedy.startswith(f"python{PY} -m pip install --user --force-reinstall --no-deps six==")
    # Audited by someone whose user base is elsewhere: the same tree is a --prefix tree to them.
    monkeypatch.setenv("PYTHONUSERBASE", str(tmp_path / "another"))
    other = audit(site_packages=[str(site)]).drifts[0].remedy
    assert f": python{PY} -m pip install --prefix {base} --force-reinstall" in other


def test_pip_prefix_install_remedy_names_the_prefix(tmp_path, wheelhouse):
    prefix = tmp_path / "pfx"
    venvs.run([sys.executable, "-m", "pip", "install", "--quiet", "--ignore-installed", *offline(wheelhouse),
               "--prefix", str(prefix), "six"])
    site = prefix / "lib" / f"python{PY}" / "site-packages"
    assert _drifts(audit(site_packages=[str(site)])) == []
    _edit(site / "six.py")
    report = audit(site_packages=[str(site)])
    # No interpreter in the prefix: the remedy says so, and any Python of that version installs there.
    assert report.drifts[0].remedy.startswith(f"no interpreter found in {prefix}/bin; any Python {PY} installs there "
                                              f"with --prefix: python{PY} -m pip install --prefix {prefix} --force-reinstall")


def test_an_interpreter_in_the_prefix_runs_the_reinstall(tmp_path, wheelhouse):
    """--site-packages of a venv named directly: the prefix's own interpreter, never a bare python."""
    venv = venvs.make_pip_venv(tmp_path / "v")
    venvs.pip_install(venv, *offline(wheelhouse), "six")
    site = venvs.site_packages_of(venv)
    _edit(site / "six.py")
    remedy = audit(site_packages=[str(site)]).drifts[0].remedy
    assert remedy.startswith(f"{venv}/bin/python{PY} -m pip install --force-reinstall --no-deps six==")


@pytest.fixture(scope="module")
def etc_wheels(tmp_path_factory):
    house = tmp_path_factory.mktemp("etc-wheels")
    build_wheel(house, "jupyterish", "1.0", {"jupyterish/__init__.py": "X = 1\n"},
                data={"data": {"etc/jupyter/jupyter_server_config.d/jupyterish.json": '{"a": 1}\n',
                               "man/man1/jupyterish.1": ".TH jupyterish 1\n"}})
    return house


def test_venv_etc_and_record_written_top_level_dirs_are_walked(tmp_path, etc_wheels):
    venv = venvs.make_pip_venv(tmp_path / "v")
    venvs.pip_install(venv, "--no-index", "--find-links", str(etc_wheels), "jupyterish")
    assert (venv / "etc/jupyter/jupyter_server_config.d/jupyterish.json").is_file()
    assert _drifts(audit(venv=str(venv))) == []

    # Jupyter loads every file in this directory; man/ is written only because a RECORD says so.
    (venv / "etc/jupyter/jupyter_server_config.d/zz_debug.json").write_text('{"ServerApp": {"token": ""}}\n')
    (venv / "man/man1/zz_notes.1").write_text("notes\n")
    report = audit(venv=str(venv))
    assert _drifts(report) == [("etc/jupyter/jupyter_server_config.d/zz_debug.json", "added"),
                               ("man/man1/zz_notes.1", "added")]


def test_virtualenv_symlink_app_data(tmp_path, monkeypatch):
    """virtualenv --symlink-app-data: pip and setuptools are directory symlinks into the app-data
    image, whose RECORD lists only the links; the files are checked against the wheel's own
    RECORD (kept in the app-data's wheel house), through the links."""
    app_data = tmp_path / "app-data"
    monkeypatch.setenv("VIRTUALENV_OVERRIDE_APP_DATA", str(app_data))
    venv = tmp_path / "v"
    venvs.run([sys.executable, "-m", "virtualenv", "--quiet", "--no-download", "--symlink-app-data", str(venv)],
              env={"VIRTUALENV_OVERRIDE_APP_DATA": str(app_data)})
    site = venvs.site_packages_of(venv)
    pip_dir = site / "pip"
    assert pip_dir.is_symlink() and os.path.realpath(pip_dir).startswith(str(app_data))
    # virtualenv 21.15.13 names an image by its wheel's sha256 and keeps the wheel as
    # house/<index>/<file>.whl, written by a background process after virtualenv itself exits.
    seeded = [d.name[: -len(".dist-info")] for d in site.glob("*.dist-info")]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not all(
            list((app_data / "wheel/house").glob(f"{s}-*.whl")) or list((app_data / "wheel/house").glob(f"*/{s}-*.whl"))
            for s in seeded):
        time.sleep(0.2)

    pristine = audit(venv=str(venv))
    assert _drifts(pristine) == [] and pristine.errors == []
    assert pristine.summary.files_checked > 500  # pip's files, read through the links
    assert any("wheel/house/" in n.message for n in pristine.notes)

    init = pip_dir / "__init__.py"
    _edit(init)
    report = audit(venv=str(venv))
    assert _drifts(report) == [("pip/__init__.py", "modified")]
    assert "app-data image" in report.drifts[0].evidence and report.drifts[0].distribution.name == "pip"

    # Without the app-data named by driftscan's own environment, the links lead outside: refused,
    # never followed (the tree cannot pick a directory to be trusted).
    monkeypatch.setenv("VIRTUALENV_OVERRIDE_APP_DATA", str(tmp_path / "elsewhere"))
    refused = audit(venv=str(venv))
    assert all("app-data image" not in d.evidence for d in refused.drifts)
    assert not any(d.relpath == "pip/__init__.py" and d.kind.value == "modified" for d in refused.drifts)


def test_virtualenv_symlink_app_data_before_its_periodic_update(tmp_path, monkeypatch):
    """virtualenv --symlink-app-data before its periodic update (--no-periodic-update): the image
    is unpacked from the wheel virtualenv embeds and the app-data's wheel/house/ holds none. The
    files are checked against that embedded wheel (its sha256 is the image's name): a clean venv
    audits clean, an edit in the image is drift."""
    app_data = tmp_path / "app-data"
    monkeypatch.setenv("VIRTUALENV_OVERRIDE_APP_DATA", str(app_data))
    venv = tmp_path / "v"
    venvs.run([sys.executable, "-m", "virtualenv", "--quiet", "--no-download", "--no-periodic-update",
               "--symlink-app-data", "--app-data", str(app_data), str(venv)])
    site = venvs.site_packages_of(venv)
    pip_dir = site / "pip"
    assert pip_dir.is_symlink() and os.path.realpath(pip_dir).startswith(str(app_data))
    assert not list((app_data / "wheel").glob("house/**/*.whl"))

    pristine = audit(venv=str(venv))
    assert pristine.errors == [] and _drifts(pristine) == []
    assert pristine.summary.files_checked > 500  # pip's files, read through the links
    # The report says what the image was checked against: not its own RECORD (links only).
    notes = {os.path.basename(n.path): n.message for n in pristine.notes}
    pip_info = next(site.glob("pip-*.dist-info")).name
    assert "the wheel virtualenv embeds" in notes[pip_info]
    assert "/virtualenv/seed/wheels/embed/pip-" in notes[pip_info]

    # No virtualenv to be found that embeds it: an error naming both places, not a clean audit.
    from driftscan.environment import dists
    with monkeypatch.context() as m:
        m.setattr(dists, "_embed_dirs", lambda: iter(()))
        unfound = audit(venv=str(venv))
    messages = [e.message for e in unfound.errors if os.path.basename(e.path) == pip_info]
    assert len(messages) == 1 and "only the links are checked" in messages[0]
    assert "wheel/house" in messages[0] and "lists only the links, without hashes" in messages[0]

    init = Path(os.path.realpath(pip_dir)) / "__init__.py"  # the shared image's own file
    _edit(init)
    report = audit(venv=str(venv))
    assert _drifts(report) == [("pip/__init__.py", "modified")]
    assert "app-data image" in report.drifts[0].evidence and report.errors == []


def test_virtualenv_symlink_app_data_driftscan_does_not_know_is_named_in_a_note(tmp_path, monkeypatch):
    """A --symlink-app-data venv whose app-data driftscan does not know (not VIRTUALENV_OVERRIDE_APP_DATA,
    not the default): its links are not followed, and the report names the directory they lead into
    and how to name it; named with --app-data, the same venv audits clean through the links."""
    app_data = tmp_path / "app-data"
    venv = tmp_path / "v"
    venvs.run([sys.executable, "-m", "virtualenv", "--quiet", "--no-download", "--no-periodic-update",
               "--symlink-app-data", "--app-data", str(app_data), str(venv)])
    monkeypatch.delenv("VIRTUALENV_OVERRIDE_APP_DATA", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))  # the default app-data: another one
    site = venvs.site_packages_of(venv)
    assert (site / "pip").is_symlink()

    report = audit(venv=str(venv))
    links = [d for d in report.drifts if d.kind.value == "added" and (site / d.relpath).is_symlink()]
    assert links and report.summary.distributions == 0
    assert all(f"--app-data {app_data}" in d.evidence for d in links)
    [note] = [n for n in report.notes if n.path == str(app_data)]
    assert note.message.startswith(f"{len(links)} symlinks of this environment lead into this directory")
    assert f"VIRTUALENV_OVERRIDE_APP_DATA={app_data}" in note.message and "pip-" in note.message

    proc = run_cli("audit", "--venv", str(venv), "--no-pristine", "--format", "json", "--app-data", str(app_data))
    named = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stderr
    assert named["drifts"] == [] and {d["name"] for d in named["distributions"]} >= {"pip"}
    assert not any("looks like virtualenv's app-data" in n["message"] for n in named["notes"])


def test_an_unknown_installer_whose_record_matches_reports_edits(tmp_path, wheelhouse):
    """INSTALLER names a tool driftscan does not know (pixi's PyPI installs write their own name):
    a RECORD whose rows match the files is still a RECORD of this install, so a changed row is
    `modified`, naming the installer; one whose rows mostly do not match is unverifiable."""
    venv = venvs.make_pip_venv(tmp_path / "v")
    venvs.pip_install(venv, *offline(wheelhouse), "click")
    site = venvs.site_packages_of(venv)
    info = next(site.glob("click-*.dist-info"))
    # As that tool writes it: INSTALLER's own RECORD row hashes what it says.
    (info / "INSTALLER").write_text("uv-pixi\n")
    rows = [f"{info.name}/INSTALLER,{record_hash(b'uv-pixi' + bytes([10]))},8" if r.startswith(f"{info.name}/INSTALLER,")
            else r for r in (info / "RECORD").read_text().splitlines()]
    (info / "RECORD").write_text("\n".join(rows) + "\n")
    assert _drifts(audit(venv=str(venv))) == []

    _edit(site / "click" / "core.py")
    report = audit(venv=str(venv))
    assert _drifts(report) == [("click/core.py", "modified")] and report.unverifiable == []
    assert "installed by 'uv-pixi'" in report.drifts[0].evidence

    for module in (site / "click").glob("*.py"):  # every file rewritten: the RECORD is not this install's
        _edit(module)
    rewritten = audit(venv=str(venv))
    version = info.name[len("click-"):-len(".dist-info")]
    assert [u.distribution for u in rewritten.unverifiable] == [f"click {version}"]
    assert "uv-pixi" in rewritten.unverifiable[0].reason
    assert not any(d.relpath.startswith("click/") for d in rewritten.drifts)


def test_a_package_directory_linked_within_the_venv_is_checked_through_the_link(tmp_path, wheelhouse):
    """A package directory moved elsewhere in the venv and linked back (a disk-space shuffle): its
    files are checked where the link leads, and the link is no unowned file."""
    venv = venvs.make_pip_venv(tmp_path / "v")
    venvs.pip_install(venv, *offline(wheelhouse), "click")
    site = venvs.site_packages_of(venv)
    moved = venv / "lib" / "moved-click"  # (not a directory the unowned walk covers)
    moved.parent.mkdir(exist_ok=True)
    (site / "click").rename(moved)
    (site / "click").symlink_to(moved)
    assert _drifts(audit(venv=str(venv))) == []
    _edit(moved / "core.py")
    assert _drifts(audit(venv=str(venv))) == [("click/core.py", "modified")]
