"""driftscan on real uv projects: a pyproject.toml, ``uv lock`` and ``uv sync`` against a local flat
index of wheels built here (``--offline``, a private uv cache per test), edits made through uv's
hard links into its cache. Each test checks what uv really did on disk, then what driftscan said."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from fixtures import venvs
from fixtures.restoring import audit_json, cli
from fixtures.wheels import build_wheel

pytestmark = pytest.mark.slow

V1 = {"toypkg/__init__.py": "X = 1\n", "toypkg/core.py": "def f():\n    return 1\n"}
V2 = {"toypkg/__init__.py": "X = 2\n", "toypkg/core.py": "def f():\n    return 2\n"}
EDIT = "import pdb; pdb.set_trace()  # EDIT\n"


@pytest.fixture(scope="module")
def house(tmp_path_factory) -> Path:
    house = tmp_path_factory.mktemp("uv-project-wheels")
    build_wheel(house, "toypkg", "1.0", V1)
    build_wheel(house, "toypkg", "2.0", V2)
    build_wheel(house, "otherpkg", "2.0", {"otherpkg/__init__.py": "Y = 1\n"})
    return house


def env_for(tmp: Path, cache: Path) -> dict[str, str]:
    (tmp / "no-pip-cache").mkdir(exist_ok=True)
    return {**venvs.uv_env(cache), "PIP_CACHE_DIR": str(tmp / "no-pip-cache"), "UV_OFFLINE": "1",
            "DRIFTSCAN_CHECKPOINT_DIR": str(tmp / "checkpoints"), "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "XDG_CACHE_HOME": str(tmp / "xdg")}


def simple_index(house: Path, dest: Path) -> str:
    """A ``file://`` simple index (PEP 503 pages) of the wheels in ``house``."""
    for wheel in sorted(house.glob("*.whl")):
        page = dest / wheel.name.split("-")[0]
        page.mkdir(parents=True, exist_ok=True)
        (page / wheel.name).write_bytes(wheel.read_bytes())
        with open(page / "index.html", "a") as f:
            f.write(f'<a href="{wheel.name}">{wheel.name}</a>\n')
    return dest.as_uri()


def project(root: Path, house: Path, toypkg: str = "==1.0", index: str | None = None) -> Path:
    """``index``: a simple index's URL; None: ``house`` as a flat index."""
    root.mkdir(parents=True, exist_ok=True)
    source = f'url = "{index}"\n' if index else f'url = "{house}"\nformat = "flat"\n'
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "{root.name}"\nversion = "0.1"\nrequires-python = ">=3.8"\n'
        f'dependencies = ["toypkg{toypkg}", "otherpkg"]\n\n[tool.uv]\npackage = false\n\n'
        f'[[tool.uv.index]]\nname = "local"\n{source}default = true\n')
    return root


def uv(root: Path, env: dict[str, str], *args: str) -> str:
    proc = subprocess.run([venvs.uv_bin(), *args], cwd=root, capture_output=True, text=True,
                          env={**os.environ, **env})
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def synced(root: Path, house: Path, env: dict[str, str], toypkg: str = "==1.0", index: str | None = None) -> Path:
    project(root, house, toypkg, index)
    uv(root, env, "lock", "--offline", "--python", os.path.realpath(venvs.sys.executable))
    uv(root, env, "sync", "--offline", "--python", os.path.realpath(venvs.sys.executable))
    return root / ".venv"


def core(venv: Path) -> Path:
    return venvs.site_packages_of(venv) / "toypkg/core.py"


def edit_through_link(venv: Path) -> None:
    with open(core(venv), "a") as f:  # in place: the cache's archive shares the inode
        f.write(EDIT)
    assert os.stat(core(venv)).st_nlink > 1


def test_default_audit_names_an_old_versions_edited_archive_after_an_upgrade(tmp_path, house):
    cache = tmp_path / "uv-cache"
    env = env_for(tmp_path, cache)
    venv = synced(tmp_path / "proj", house, env)
    edit_through_link(venv)
    project(tmp_path / "proj", house, "==2.0")
    uv(tmp_path / "proj", env, "lock", "--offline")
    uv(tmp_path / "proj", env, "sync", "--offline")
    assert "EDIT" not in core(venv).read_text()
    # What uv does with the old archive: a second project synced from this cache gets the edit.
    other = synced(tmp_path / "proj-b", house, env)
    assert EDIT in core(other).read_text()
    report = audit_json(venv, env=env)  # no --uv-cache: uv's cache as UV_CACHE_DIR names it
    archives = [d for d in report["drifts"] if d["kind"] == "cache-modified"]
    assert [(d["distribution"]["name"], d["distribution"]["version"]) for d in archives] == [("toypkg", "1.0")]
    assert archives[0]["remedy"].startswith("uv cache clean") and "toypkg" in archives[0]["remedy"]


def guard(venv: Path, env: dict[str, str], cwd: Path, *command: str, args: tuple[str, ...] = ()) -> tuple[int, dict]:
    proc = cli("guard", "--venv", str(venv), "--format", "json", *args, "--", *command, env=env, cwd=str(cwd))
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_sync_reinstall_package_from_a_local_index_links_the_edited_archive_back(tmp_path, house):
    cache = tmp_path / "uv-cache"
    env = env_for(tmp_path, cache)
    root = tmp_path / "proj"
    venv = synced(root, house, env)
    edit_through_link(venv)
    command = (venvs.uv_bin(), "sync", "--offline", "--reinstall-package", "toypkg")
    code, refused = guard(venv, env, root, *command, args=("--wheels", str(house)))
    assert code == 2 and not refused["ran"]
    assert any("debug code back" in r["reason"] for r in refused["refused"])
    predictions = {p["kind"]: p for p in refused["predictions"]}
    assert predictions["modified"]["prediction"] == "SURVIVES"  # the refusal and the prediction agree
    code, report = guard(venv, env, root, *command, args=("--wheels", str(house), "--force"))
    # What uv did: the venv's file is still the cache's edited one.
    assert EDIT in core(venv).read_text() and os.stat(core(venv)).st_nlink > 1
    by_kind = {p["kind"]: p for p in report["predictions"]}
    assert (by_kind["modified"]["prediction"], by_kind["modified"]["outcome"]) == ("SURVIVES", "survived")
    archive = by_kind["cache-modified"]
    assert (archive["prediction"], archive["outcome"], archive["held"]) == ("SURVIVES", "survived", True)
    assert EDIT in (Path(archive["path"]) / "toypkg/core.py").read_text()
    assert report["summary"]["failed"] == 0 and code == 0


def test_sync_after_a_lock_upgrade_reinstalls_what_the_lock_changed(tmp_path, house):
    cache = tmp_path / "uv-cache"
    env = env_for(tmp_path, cache)
    root = tmp_path / "proj"
    venv = synced(root, house, env)
    site = venvs.site_packages_of(venv)
    os.unlink(site / "otherpkg/__init__.py")  # a drift of a distribution the lock keeps as it is
    project(root, house, "==2.0")
    uv(root, env, "lock", "--offline")  # the lock moves on; the venv does not, yet
    code, report = guard(venv, env, root, venvs.uv_bin(), "sync", "--offline", args=("--force",))
    assert report["command"]["reinstalls"] == ["toypkg"]
    moves = {v["name"]: v for v in report["versions"]}
    assert (moves["toypkg"]["before"], moves["toypkg"]["after"], moves["toypkg"]["asked"]) == ("1.0", "2.0", True)
    other = {p["relpath"]: p for p in report["predictions"]}["otherpkg/__init__.py"]
    assert (other["prediction"], other["outcome"]) == ("SURVIVES", "survived")  # uv sync left otherpkg as it was
    assert not (site / "otherpkg/__init__.py").exists()
    assert report["summary"]["failed"] == 0


@pytest.mark.parametrize("index", ["flat", "file-simple"])
def test_plan_reinstalls_a_uv_projects_environment_with_uv_sync(tmp_path, house, index):
    cache = tmp_path / "uv-cache"
    env = env_for(tmp_path, cache)
    root = tmp_path / "proj"
    venv = synced(root, house, env, index=simple_index(house, tmp_path / "simple") if index == "file-simple" else None)
    assert f'registry = "{tmp_path / "simple" if index == "file-simple" else house}"' in (root / "uv.lock").read_text()
    edit_through_link(venv)
    proc = cli("plan", "--reinstall", "toypkg", "--venv", str(venv), "--format", "json", env=env)
    assert "Traceback" not in proc.stderr, proc.stderr
    plan = json.loads(proc.stdout)
    commands = [s["command"] for s in plan["steps"] if s.get("command")]
    # Without its cache step, the plan predicts what guard predicts for the same uv sync, for the
    # same reason: the lock's source is the local flat index, whose archive uv links back.
    item = {i["relpath"]: i for i in plan["items"]}["toypkg/core.py"]
    online = {**env, "UV_OFFLINE": "0"}  # as the plan's command runs (the index is local: nothing is fetched)
    _, refused = guard(venv, online, root, venvs.uv_bin(), "sync", "--reinstall-package", "toypkg")
    predicted = {p["relpath"]: p for p in refused["predictions"]}["toypkg/core.py"]
    assert not refused["ran"] and predicted["prediction"] == "SURVIVES"
    assert item["status_without_steps"] == predicted["prediction"]
    assert predicted["reason"] in item["reason_without_steps"], (predicted["reason"], item["reason_without_steps"])
    assert item["status"] == "WIPED"  # with the cache step first
    reinstall = f"uv sync --project {root} --reinstall-package toypkg"
    assert reinstall in commands and not any("uv pip install" in c for c in commands)
    clean = next(c for c in commands if c.startswith("uv cache clean"))
    assert commands.index(clean) < commands.index(reinstall)
    # The plan's command, run: with the cache cleaned first, uv sync gives the venv the original.
    uv(root, env, *clean.split()[1:])
    uv(root, env, *reinstall.split()[1:], "--offline")
    assert core(venv).read_text() == V1["toypkg/core.py"]


@pytest.mark.parametrize("inside", [True, False])
def test_a_moved_archive_directory_is_followed_inside_the_cache_only(tmp_path, house, inside):
    cache = tmp_path / "uv-cache"
    env = env_for(tmp_path, cache)
    first = venvs.make_uv_venv(tmp_path / "a", cache)
    venvs.uv_install(first, cache, "--no-index", "--find-links", str(house), "toypkg==1.0")
    edit_through_link(first)
    moved = (cache / "store") if inside else (tmp_path / "other-disk" / "archive-v0")
    moved.parent.mkdir(exist_ok=True)
    os.rename(cache / "archive-v0", moved)
    os.symlink(moved, cache / "archive-v0")
    second = venvs.make_uv_venv(tmp_path / "b", cache)
    venvs.uv_install(second, cache, "--no-index", "--find-links", str(house), "toypkg==1.0")
    assert EDIT in core(second).read_text()  # uv follows the link: the new venv gets the edit
    proc = cli("audit", "--venv", str(second), "--uv-cache", str(cache), "--format", "json", env=env)
    report = json.loads(proc.stdout)
    archives = [d for d in report["drifts"] if d["kind"] == "cache-modified"]
    not_checked = [e for e in report["errors"] if "not checked" in e["message"]]
    if inside:
        assert [d["distribution"]["name"] for d in archives] == ["toypkg"] and not not_checked
    else:
        assert archives == [] and [e["path"] for e in not_checked] == [str(cache / "archive-v0")]
        assert proc.returncode & 2 and str(moved) in not_checked[0]["message"]  # bit 2: not all checked


@pytest.mark.network
def test_sync_reinstall_package_from_the_registry_fetches_into_a_new_archive(tmp_path):
    """The package registry over HTTP: uv sync --reinstall-package fetches the wheel again, unpacks it
    into a new archive and repoints its index there; the old archive stays, edited."""
    from tests.conftest import skip_or_fail_without_network

    cache = tmp_path / "uv-cache"
    env = {**env_for(tmp_path, cache), "UV_OFFLINE": "0"}
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "proj"\nversion = "0.1"\nrequires-python = ">=3.8"\n'
                                         'dependencies = ["six==1.16.0"]\n\n[tool.uv]\npackage = false\n')
    proc = subprocess.run([venvs.uv_bin(), "sync", "--python", os.path.realpath(venvs.sys.executable)], cwd=root,
                          capture_output=True, text=True, env={**os.environ, **env})
    if proc.returncode != 0:
        skip_or_fail_without_network(f"uv sync from the package registry failed: {proc.stderr[-300:]}")
    six = venvs.site_packages_of(root / ".venv") / "six.py"
    with open(six, "a") as f:
        f.write(EDIT)
    code, report = guard(root / ".venv", env, root, venvs.uv_bin(), "sync", "--reinstall-package", "six",
                         args=("--force",))
    assert EDIT not in six.read_text()  # what uv did: a fresh copy in the venv
    by_kind = {p["kind"]: p for p in report["predictions"]}
    assert (by_kind["modified"]["prediction"], by_kind["modified"]["outcome"]) == ("WIPED", "wiped")
    archive = by_kind["cache-modified"]
    assert EDIT in (Path(archive["path"]) / "six.py").read_text()  # the old archive keeps the edit
    assert (archive["prediction"], archive["outcome"], archive["held"]) == ("SURVIVES", "survived", True)
    assert not any("debug code back" in r["reason"] for r in report["refused"])
    assert report["summary"]["failed"] == 0
    # uv's index no longer names the old archive: `uv cache clean six` would leave it, prune removes it.
    [left] = report["leftovers"]["uv_cache"]
    assert left["command"].startswith("uv cache prune")
    uv(root, env, *left["command"].split()[1:])
    assert not Path(archive["path"]).exists()


def test_a_default_audit_says_uvs_archive_directory_leads_out_of_the_cache(tmp_path, house):
    cache = tmp_path / "uv-cache"
    env = env_for(tmp_path, cache)
    venv = venvs.make_uv_venv(tmp_path / "a", cache)
    venvs.uv_install(venv, cache, "--no-index", "--find-links", str(house), "toypkg==1.0")
    moved = tmp_path / "other-disk" / "archive-v0"
    moved.parent.mkdir()
    os.rename(cache / "archive-v0", moved)
    os.symlink(moved, cache / "archive-v0")
    proc = cli("audit", "--venv", str(venv), "--format", "json", env=env)  # the cache UV_CACHE_DIR names
    report = json.loads(proc.stdout)
    assert [e["path"] for e in report["errors"] if "not checked" in e["message"]] == [str(cache / "archive-v0")]
    assert proc.returncode == 2  # not everything was checked


@pytest.mark.parametrize("edited", [False, True])
def test_a_default_audit_names_one_archive_that_leads_out_of_the_cache(tmp_path, house, edited):
    cache = tmp_path / "uv-cache"
    env = env_for(tmp_path, cache)
    venv = venvs.make_uv_venv(tmp_path / "a", cache)
    venvs.uv_install(venv, cache, "--no-index", "--find-links", str(house), "toypkg==1.0", "otherpkg")
    if edited:
        edit_through_link(venv)
    [archive] = [a for a in (cache / "archive-v0").iterdir() if (a / "toypkg").is_dir()]
    moved = tmp_path / "other-disk" / archive.name
    moved.parent.mkdir()
    os.rename(archive, moved)
    os.symlink(moved, archive)
    second = venv
    proc = cli("audit", "--venv", str(second), "--format", "json", env=env)  # the cache UV_CACHE_DIR names
    report = json.loads(proc.stdout)
    not_checked = [e for e in report["errors"] if "not checked" in e["message"]]
    assert [e["path"] for e in not_checked] == [str(archive)], report["errors"]
    assert "toypkg" in not_checked[0]["message"] and str(moved) in not_checked[0]["message"]
    assert "not followed" in not_checked[0]["message"]
    messages = [e["message"] for e in report["errors"]] + [n if isinstance(n, str) else json.dumps(n)
                                                           for n in report.get("notes", [])]
    assert not any("no archive in its wheel index" in m and "toypkg" in m for m in messages), messages
    assert proc.returncode & 2  # bit 2: not everything was checked
    assert not any(d["kind"] == "cache-modified" for d in report["drifts"])
    text = cli("audit", "--venv", str(second), env=env)
    assert str(archive) in text.stdout + text.stderr


def test_sync_searches_the_locks_local_index_for_originals_and_ignores_uv_find_links(tmp_path, house):
    """uv sync installs from the sources its uv.lock records (UV_FIND_LINKS elsewhere changes
    nothing, measured): guard looks for originals in the lock's local flat index, no --wheels."""
    cache = tmp_path / "uv-cache"
    env = env_for(tmp_path, cache)
    root = tmp_path / "proj"
    venv = synced(root, house, env)
    edited = venvs.site_packages_of(venv) / "toypkg/core.py"
    os.unlink(edited)
    edited.write_text("def f():\n    return 3\n")  # a new inode: the cache's copy stays clean; the original
    uv(root, env, "cache", "clean", "toypkg")  # is in the lock's index, and only there
    (tmp_path / "elsewhere").mkdir()
    env = {**env, "UV_FIND_LINKS": str(tmp_path / "elsewhere")}
    lock = (root / "uv.lock").read_text()
    code, report = guard(venv, env, root, venvs.uv_bin(), "sync", "--offline", "--reinstall-package", "toypkg")
    assert (root / "uv.lock").read_text() == lock  # uv did not re-lock for the variable
    assert report["ran"] and report["checkpoint"]["partial"] is False, (report["refused"], report["checkpoint"])
    assert any("do not change what a locked sync installs" in n for n in report["command"]["notes"])
    core_p = {p["relpath"]: p for p in report["predictions"]}["toypkg/core.py"]
    assert (core_p["prediction"], core_p["outcome"], core_p["held"]) == ("WIPED", "wiped", True)
    assert core(venv).read_text() == V1["toypkg/core.py"] and code == 0
