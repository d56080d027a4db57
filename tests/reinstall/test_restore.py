"""``driftscan restore`` and ``driftscan checkpoint`` on real venvs (pip and uv), real wheels
built here, and the real tools that apply a checkpoint's patches (git apply, GNU patch).

Everything is offline: the wheels are built by the tests and installed with ``--no-index
--find-links``; uv's and pip's caches driftscan may look at are private directories."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from driftscan.reinstall.checkpoint import load_index
from driftscan.formats.manifest import MANIFEST_NAME, build_manifest, write_manifest
from driftscan.reinstall.restore import journal_path
from fixtures import venvs
from fixtures.modeldirs import seed_files, sm120_edit, tree_state
from fixtures.restoring import (
    EXEC_FILES,
    OTHER_FILES,
    TOY_FILES,
    append,
    audit_json,
    big_files,
    build_toy_wheels,
    checkpoint_line,
    cli,
    copy_venv,
    diff_snapshots,
    drifts_by_relpath,
    find_tmp_leftovers,
    package_drift,
    private_env,
    record_hash,
    sha256_text,
    site_of,
    snapshot_tree,
    wait_for,
)
from fixtures.wheels import build_wheel

TOY_RESTORABLE = ["toypkg/core.py", "toypkg/crlf.py", "toypkg/data/notes.txt", "toypkg/nonl.py", "toypkg/util.py"]


# ---- fixtures -----------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _checkpoint_dir(tmp_path, monkeypatch):
    """Where ``restore --yes`` writes its checkpoint when not told: a directory of this test."""
    monkeypatch.setenv("DRIFTSCAN_CHECKPOINT_DIR", str(tmp_path / "checkpoints"))


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> Path:
    return build_toy_wheels(tmp_path_factory.mktemp("toy-wheels"))


@pytest.fixture(scope="module")
def base_venv(tmp_path_factory, wheels) -> Path:
    """A venv with toypkg and otherpkg installed by real pip (the runner's, a recent release)
    from the wheels; no pip of its own, so each test's copy is small and quick to audit."""
    venv = tmp_path_factory.mktemp("base") / "venv"
    venvs.run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    venvs.modern_pip_install(venv, "--no-index", "--find-links", str(wheels), "toypkg", "otherpkg", "execpkg")
    return venv


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    return {**private_env(tmp_path), "DRIFTSCAN_CHECKPOINT_DIR": str(tmp_path / "checkpoints")}


@pytest.fixture
def venv(tmp_path, base_venv) -> Path:
    return copy_venv(base_venv, tmp_path / "v")


def edit_toy(site: Path) -> dict[str, bytes]:
    """The debugging session: five toypkg files edited in place (inodes kept), a module added to
    toypkg, and otherpkg edited. Returns relpath → edited content."""
    edited: dict[str, bytes] = {}

    def write(rel: str, data: bytes) -> None:
        with open(site / rel, "r+b") as f:  # in place: same inode
            f.truncate(0)
            f.write(data)
        edited[rel] = data

    core = TOY_FILES["toypkg/core.py"]
    write("toypkg/core.py", core.replace(b"    return 12\n", b"    print('f12 hit')  # debug\n    return 12\n"))
    write("toypkg/util.py", TOY_FILES["toypkg/util.py"] + b"C = 4  # debug\n")
    write("toypkg/nonl.py", TOY_FILES["toypkg/nonl.py"] + b"\nDEBUG = 1")  # still no final newline
    write("toypkg/crlf.py", TOY_FILES["toypkg/crlf.py"].replace(b"Y = 2\r\n", b"Y = 20\r\n"))
    write("toypkg/data/notes.txt", TOY_FILES["toypkg/data/notes.txt"] + b"line three\n")
    write("otherpkg/mod.py", OTHER_FILES["otherpkg/mod.py"] + b"print('other')\n")
    (site / "toypkg/added.py").write_bytes(b"HELPER = 'added while debugging'\n")
    edited["toypkg/added.py"] = b"HELPER = 'added while debugging'\n"
    assert edited["toypkg/core.py"] != core
    return edited


def ds(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return cli(*args, env=env)


@dataclass
class Restored:
    venv: Path
    site: Path
    proc: subprocess.CompletedProcess
    checkpoint: Path
    checkpoint_base: Path
    edited: dict[str, bytes]
    modes_before: dict[str, int]
    inodes_before: dict[str, int]
    env: dict[str, str]


@pytest.fixture(scope="module")
def restored(tmp_path_factory, base_venv, wheels) -> Restored:
    """One ``restore --dist toypkg --yes`` (the checkpoint at its default place) after edit_toy,
    with core.py made 0755 and util.py 0600 before the edit."""
    root = tmp_path_factory.mktemp("restored")
    venv = copy_venv(base_venv, root / "v")
    site = site_of(venv)
    os.chmod(site / "toypkg/core.py", 0o755)
    os.chmod(site / "toypkg/util.py", 0o600)
    edited = edit_toy(site)
    modes = {rel: stat.S_IMODE(os.lstat(site / rel).st_mode) for rel in edited}
    inodes = {rel: os.lstat(site / rel).st_ino for rel in edited}
    env = {**private_env(root), "DRIFTSCAN_CHECKPOINT_DIR": str(root / "checkpoints")}
    proc = ds("restore", "--venv", str(venv), "--wheels", str(wheels), "--dist", "toypkg", "--yes", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return Restored(venv, site, proc, Path(checkpoint_line(proc.stdout)), root / "checkpoints", edited, modes,
                    inodes, env)


# ---- 1. a dry run ------------------------------------------------------------------------


def test_dry_run_changes_nothing(venv, wheels, env, tmp_path):
    site = site_of(venv)
    edited = edit_toy(site)
    before = snapshot_tree(venv)
    proc = ds("restore", "--venv", str(venv), "--wheels", str(wheels), "--dist", "toypkg", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert diff_snapshots(before, snapshot_tree(venv)) == []
    lines = proc.stdout.splitlines()
    assert lines[0] == "restore (dry run: nothing written)"
    would = sorted(line.split()[2] for line in lines if line.startswith("  would rewrite "))
    assert would == TOY_RESTORABLE
    for rel in TOY_RESTORABLE:
        assert f"  would rewrite    {rel}" in proc.stdout and "(toypkg 1.0, from wheels)" in proc.stdout
    assert "  modified          otherpkg/mod.py: otherpkg 2.0 not selected" in lines
    assert any(line.startswith("  added             toypkg/added.py: ") for line in lines)
    assert lines[-1].startswith("5 files would be restored")
    assert not (tmp_path / "checkpoints").exists(), "a dry run created the checkpoint directory"
    assert not any(line.startswith("checkpoint:") for line in lines)

    as_json = ds("restore", "--venv", str(venv), "--wheels", str(wheels), "--dist", "toypkg", "--format", "json",
                 env=env)
    report = json.loads(as_json.stdout)
    assert (report["dry_run"], report["checkpoint"], report["distributions"]) == (True, None, ["toypkg"])
    assert sorted((a["relpath"], a["action"], a["status"], a["source"]) for a in report["actions"]) == [
        (rel, "rewrite", "planned", "wheels") for rel in TOY_RESTORABLE]
    assert diff_snapshots(before, snapshot_tree(venv)) == []
    assert {rel: (site / rel).read_bytes() for rel in edited} == edited
    assert not (tmp_path / "checkpoints").exists()


# ---- 2. restore --yes --------------------------------------------------------------------


def test_restore_yes_restores_only_the_named_distribution(restored):
    r = restored
    # Named after the environment's whole path (its basename alone, "v", told two projects' .venv not apart).
    slug = str(r.venv).strip("/").replace("/", "-")
    assert r.checkpoint.parent == r.checkpoint_base and r.checkpoint.name.startswith(f"{slug}-")
    for rel in TOY_RESTORABLE:
        assert f"  restored         {rel}" in r.proc.stdout
        assert (r.site / rel).read_bytes() == TOY_FILES[rel], rel
    assert "5 files restored and verified against RECORD" in r.proc.stdout

    report = audit_json(r.venv, env=r.env)
    assert package_drift(report, "toypkg") == []
    found = drifts_by_relpath(report)
    assert (r.site / "toypkg/added.py").read_bytes() == r.edited["toypkg/added.py"]
    assert (found["toypkg/added.py"]["kind"], found["toypkg/added.py"]["scope"]) == ("added", "environment")
    # otherpkg was not selected: its edit is still there, byte for byte, and still reported.
    assert (r.site / "otherpkg/mod.py").read_bytes() == r.edited["otherpkg/mod.py"]
    assert package_drift(report, "otherpkg") == [("otherpkg/mod.py", "modified")]


def test_restore_yes_checkpoint_holds_the_debug_work(restored):
    r = restored
    index = load_index(str(r.checkpoint))
    assert index.root == str(r.venv) and index.venv == str(r.venv)
    sp = os.path.relpath(r.site, r.venv)
    files = {f.relpath: f for f in index.files}
    modified = {f"{sp}/{rel}" for rel in (*TOY_RESTORABLE, "otherpkg/mod.py")}
    assert {rel for rel, f in files.items() if f.kind == "modified"} == modified
    originals = {**TOY_FILES, **OTHER_FILES}
    for rel in (*TOY_RESTORABLE, "otherpkg/mod.py"):
        f = files[f"{sp}/{rel}"]
        assert (f.area, f.scope, f.record_path) == ("env", "package", rel)
        assert f.hash_before == record_hash(originals[rel]), rel
        assert f.hash_after == sha256_text(r.edited[rel]), rel
        assert f.size_after == len(r.edited[rel])
        assert f.content == f"files/env/{sp}/{rel}"
        assert (r.checkpoint / f.content).read_bytes() == r.edited[rel], rel
        assert f.original == f"originals/env/{sp}/{rel}"
        assert (r.checkpoint / f.original).read_bytes() == originals[rel], rel
        assert f.patch == f"patches/{sp}/{rel}.patch", rel
        patch = (r.checkpoint / f.patch).read_text()
        assert patch.startswith(f"--- {sp}/{rel}\n+++ {sp}/{rel}\n@@ "), patch
    added = files[f"{sp}/toypkg/added.py"]
    assert (added.kind, added.scope, added.patch) == ("added", "environment", None)
    assert (r.checkpoint / added.content).read_bytes() == r.edited["toypkg/added.py"]
    assert "+    print('f12 hit')  # debug\n" in (r.checkpoint / files[f"{sp}/toypkg/core.py"].patch).read_text()
    assert {d.name: d.pristine["source"] for d in index.distributions} == {"otherpkg": "wheels", "toypkg": "wheels"}


# ---- 3. the patches apply with the real tools ----------------------------------------------


def _toy_patches(r: Restored):
    index = load_index(str(r.checkpoint))
    chosen = [f for f in index.files if f.distribution == "toypkg" and f.kind == "modified"]
    assert sorted(str(f.record_path) for f in chosen) == TOY_RESTORABLE
    assert all(f.patch for f in chosen)
    return chosen


@pytest.mark.parametrize("tool", ["git", "patch"])
def test_checkpoint_patches_apply_onto_the_restored_venv(restored, tmp_path, tool):
    if shutil.which(tool) is None:
        pytest.fail(f"{tool} is not installed")
    r = restored
    copy = copy_venv(r.venv, tmp_path / f"restored-{tool}")
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path)}  # no repository above the copy
    for f in _toy_patches(r):
        target = copy / f.relpath
        assert target.read_bytes() == TOY_FILES[f.record_path]  # pristine before the patch
        patch = str(r.checkpoint / f.patch)
        cmd = ["git", "apply", "-p0", patch] if tool == "git" else ["patch", "-p0", "--batch", "-i", patch]
        proc = subprocess.run(cmd, check=False, cwd=copy, capture_output=True, text=True, env=env)
        assert proc.returncode == 0, f"{' '.join(cmd)} failed for {f.relpath}:\n{proc.stdout}\n{proc.stderr}"
        assert target.read_bytes() == (r.checkpoint / f.content).read_bytes(), f.relpath
        assert target.read_bytes() == r.edited[f.record_path]
    leftovers = [str(p) for p in copy.rglob("*") if p.suffix in (".orig", ".rej")]
    assert leftovers == []


# ---- 4. mode bits and inodes ---------------------------------------------------------------


def test_restored_files_keep_their_mode_and_get_a_new_inode(restored):
    r = restored
    assert r.modes_before["toypkg/core.py"] == 0o755 and r.modes_before["toypkg/util.py"] == 0o600
    for rel in TOY_RESTORABLE:
        st = os.lstat(r.site / rel)
        assert stat.S_ISREG(st.st_mode)
        assert stat.S_IMODE(st.st_mode) == r.modes_before[rel], (rel, oct(st.st_mode))
        assert st.st_ino != r.inodes_before[rel], f"{rel} was written through, not replaced"
        assert st.st_nlink == 1
    # otherpkg was not restored: same inode.
    assert os.lstat(r.site / "otherpkg/mod.py").st_ino == r.inodes_before["otherpkg/mod.py"]
    index = load_index(str(r.checkpoint))
    modes = {f.record_path: f.mode for f in index.files if f.record_path}
    assert modes["toypkg/core.py"] == 0o755 and modes["toypkg/util.py"] == 0o600


# ---- 5. uv's hard links --------------------------------------------------------------------


def test_uv_hard_link_is_broken_and_the_poisoned_cache_is_left(tmp_path, wheels, env):
    cache = tmp_path / "uv-cache"
    venv = venvs.make_uv_venv(tmp_path / "vuv", cache)
    venvs.uv_install(venv, cache, "--no-index", "--find-links", str(wheels), "toypkg", "otherpkg")
    site = site_of(venv)
    installed = site / "toypkg/core.py"
    [cached] = cache.glob("archive-v0/*/toypkg/core.py")
    before = os.lstat(cached)
    assert (os.lstat(installed).st_ino, before.st_nlink) == (before.st_ino, 2), "uv did not hard-link"
    edit = b"print('debug through the hard link')\n"
    with open(installed, "r+b") as f:  # in place, inode kept
        f.seek(0, os.SEEK_END)
        f.write(edit)
    edited = TOY_FILES["toypkg/core.py"] + edit
    assert cached.read_bytes() == edited, "the in-place edit did not reach uv's cache copy"

    report = audit_json(venv, "--uv-cache", str(cache), env=env)
    [look] = [p for p in report["pristine"] if p["distribution"] == "toypkg"]
    assert look["source"] is None
    rejected = [x for x in look["rejected"] if x["source"] == "uv-cache"]
    assert len(rejected) == 1 and rejected[0]["path"] == str(cached.parent.parent)
    assert "toypkg/core.py does not match RECORD" in rejected[0]["reason"]
    assert "poisoned" in rejected[0]["reason"] and "shares its inode" in rejected[0]["reason"]

    # Without --wheels there is no trusted original: nothing is written, the cache is not used,
    # and exit bit 2 says the restore asked for was not done.
    proc = ds("restore", "--venv", str(venv), "--uv-cache", str(cache), "--dist", "toypkg", "--yes", env=env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "  NO ORIGINAL      toypkg/core.py  (toypkg 1.0, not touched): no verified original" in proc.stdout
    assert "no longer matches" not in proc.stdout
    assert "toypkg==1.0 -d " in proc.stdout and "--fetch" in proc.stdout
    assert installed.read_bytes() == edited and os.lstat(installed).st_ino == before.st_ino
    assert not (tmp_path / "checkpoints").exists()

    proc = ds("restore", "--venv", str(venv), "--uv-cache", str(cache), "--wheels", str(wheels), "--dist", "toypkg",
              "--yes", "--format", "json", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    assert [(a["relpath"], a["status"], a["source"]) for a in out["actions"]] == [
        ("toypkg/core.py", "restored", "wheels")]
    assert any("uv's cache copy" in n and "stays edited" in n for n in out["notes"]), out["notes"]
    now, cache_now = os.lstat(installed), os.lstat(cached)
    assert installed.read_bytes() == TOY_FILES["toypkg/core.py"]
    assert now.st_ino != cache_now.st_ino and now.st_nlink == 1
    assert (cache_now.st_ino, cache_now.st_nlink) == (before.st_ino, 1)
    assert cached.read_bytes() == edited, "restore wrote into uv's cache"
    # The other hard-linked files are still shared with the cache: only the restored one was replaced.
    [cached_util] = cache.glob("archive-v0/*/toypkg/util.py")
    assert os.lstat(site / "toypkg/util.py").st_ino == os.lstat(cached_util).st_ino
    assert package_drift(audit_json(venv, "--uv-cache", str(cache), env=env), "toypkg") == []


# ---- 6. a restore killed half way ------------------------------------------------------------

BIG_COUNT, BIG_SIZE = 160, 200_000  # each restored through fsync: ~1 s of restoring to kill in


@pytest.fixture(scope="module")
def big_wheel(tmp_path_factory) -> tuple[Path, dict[str, bytes]]:
    files = big_files(BIG_COUNT, BIG_SIZE)
    house = tmp_path_factory.mktemp("big-wheel")
    build_wheel(house, "bigpkg", "1.0", dict[str, "bytes | str"](files))
    return house, files


def test_killed_restore_leaves_each_file_whole_and_a_rerun_finishes(tmp_path, base_venv, big_wheel, env):
    house, files = big_wheel
    venv = copy_venv(base_venv, tmp_path / "v")
    venvs.modern_pip_install(venv, "--no-index", "--find-links", str(house), "--no-compile", "bigpkg")
    site = site_of(venv)
    blobs = {rel: data for rel, data in files.items() if rel.endswith(".bin")}
    tail = b"EDITED"
    for rel in blobs:
        append(site / rel, tail)
    edited = {rel: data + tail for rel, data in blobs.items()}
    sizes = {os.path.basename(rel): len(data) for rel, data in blobs.items()}  # restored = original size
    pkg = site / "bigpkg"
    cp = tmp_path / "cp"

    def restored_count() -> int:
        with os.scandir(pkg) as it:
            return sum(1 for e in it if e.name in sizes and e.stat(follow_symlinks=False).st_size == sizes[e.name])

    proc = subprocess.Popen([sys.executable, "-m", "driftscan", "restore", "--venv", str(venv), "--wheels",
                             str(house), "--dist", "bigpkg", "--yes", "--checkpoint", str(cp)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, **env})
    try:
        started = wait_for(lambda: proc.poll() is not None or (cp.exists() and restored_count() > 0), timeout=120)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert started, "restore neither started writing nor ended in 120 s"
    assert proc.returncode == -signal.SIGKILL, (
        f"restore finished before the kill ({proc.returncode}): make the package bigger; "
        f"{proc.stderr.read().decode()}")
    done = restored_count()
    assert 0 < done < len(blobs), f"{done} of {len(blobs)} restored when killed: the kill did not land half way"

    for rel, data in blobs.items():
        now = (site / rel).read_bytes()
        assert now in (data, edited[rel]), f"{rel}: neither the original nor the edit ({len(now)} bytes)"
    index = load_index(str(cp))
    saved = [f for f in index.files if f.distribution == "bigpkg"]
    assert len(saved) == len(blobs)
    for f in saved:
        assert f.content and f.hash_after == sha256_text(edited[f.record_path])
        assert sha256_text((cp / f.content).read_bytes()) == f.hash_after, f.content
    assert not list(tmp_path.glob(".cp.*.partial"))
    leftovers = find_tmp_leftovers(venv)
    journal = journal_path(str(venv))
    if leftovers:  # the file in flight when killed: its temporary name is in the journal
        assert os.path.isfile(journal), f"{leftovers} left, but no journal names them"
        named = {os.fsdecode(bytes.fromhex(json.loads(line)["temp"]))
                 for line in Path(journal).read_text().splitlines()}
        assert set(leftovers) <= named, (
            f"temporary file(s) {sorted(set(leftovers) - named)} left by the killed restore are not in its journal "
            "(the kill came after mkstemp, before the journal line): no later restore will remove them")

    dry = ds("restore", "--venv", str(venv), "--wheels", str(house), "--dist", "bigpkg", env=env)
    assert find_tmp_leftovers(venv) == leftovers  # a dry run removes nothing ...
    if leftovers:  # ... and names what --yes will remove first
        assert f"--yes first removes {len(leftovers)} temporary file{'' if len(leftovers) == 1 else 's'} an interrupted run left: " in dry.stdout
        assert all(p in dry.stdout for p in leftovers)
    again = ds("restore", "--venv", str(venv), "--wheels", str(house), "--dist", "bigpkg", "--yes", env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"{len(blobs) - done} file{'' if len(blobs) - done == 1 else 's'} restored and verified against RECORD" in again.stdout
    assert find_tmp_leftovers(venv) == []
    assert not os.path.exists(journal)
    if leftovers:
        assert f"removed {len(leftovers)} temporary file{'' if len(leftovers) == 1 else 's'} an interrupted run left" in again.stdout
    assert package_drift(audit_json(venv, env=env), "bigpkg") == []
    for rel, data in blobs.items():
        assert (site / rel).read_bytes() == data, rel


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_kill_between_creating_the_temporary_file_and_journaling_it(venv, wheels, env, tmp_path):
    """SIGKILL exactly when restore opens its journal the second time for the first file (strace
    injects it: after the line naming the temporary file, which is journaled before it is
    created; the kill lands after its creation, before its inode is journaled; the first open
    is clean_leftovers' read). The file left must still be removed by the next restore."""
    site = site_of(venv)
    edit_toy(site)
    journal = journal_path(str(venv))
    assert not os.path.exists(journal)
    os.makedirs(os.path.dirname(journal), exist_ok=True)  # its directory there: each open of the journal is seen
    # The journal is opened relative to its directory's descriptor (never followed): strace's -P
    # matches a call by that descriptor's path.
    cmd = ["strace", "-f", "-qq", "-o", str(tmp_path / "strace.log"), "-P", os.path.dirname(journal),
           "-e", "trace=openat",
           "-e", "inject=openat:signal=SIGKILL:when=3",
           sys.executable, "-m", "driftscan", "restore", "--venv", str(venv), "--wheels", str(wheels),
           "--dist", "toypkg", "--yes", "--checkpoint", str(tmp_path / "cp")]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, env={**os.environ, **env})
    log = (tmp_path / "strace.log").read_text()
    assert "O_APPEND" in log and "killed by SIGKILL" in log, f"the kill was not injected ({proc.returncode}):\n{log}"
    stray = find_tmp_leftovers(venv)
    assert len(stray) == 1, stray  # the premise: the file was created, its inode not journaled
    assert load_index(str(tmp_path / "cp")).files  # the checkpoint was whole before anything was written
    dry = ds("restore", "--venv", str(venv), "--wheels", str(wheels), "--dist", "toypkg", env=env)
    assert f"--yes first removes 1 temporary file an interrupted run left: {stray[0]}" in dry.stdout, dry.stdout
    assert find_tmp_leftovers(venv) == stray
    again = ds("restore", "--venv", str(venv), "--wheels", str(wheels), "--dist", "toypkg", "--yes", env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    assert package_drift(audit_json(venv, env=env), "toypkg") == []
    assert find_tmp_leftovers(venv) == [], (
        f"{stray} stays for good: clean_leftovers did not remove it; the rerun said:\n{again.stdout}")


# ---- 7. refusals ----------------------------------------------------------------------------


def test_path_outside_the_environment_is_refused(venv, wheels, env, tmp_path):
    edit_toy(site_of(venv))
    passwd = Path("/etc/passwd").read_bytes()
    before = snapshot_tree(venv)
    proc = ds("restore", "/etc/passwd", "--venv", str(venv), "--wheels", str(wheels), "--yes", env=env)
    assert proc.returncode & 2, proc.stdout + proc.stderr
    assert "refused (1):" in proc.stdout
    assert "  -                 /etc/passwd: outside the environment root: restore never writes there" in proc.stdout
    assert "  nothing to restore" in proc.stdout
    assert diff_snapshots(before, snapshot_tree(venv)) == []
    assert Path("/etc/passwd").read_bytes() == passwd
    assert not (tmp_path / "checkpoints").exists()


def _symlink_package_outside(venv: Path, tmp_path: Path) -> tuple[Path, Path]:
    """toypkg/ replaced by a symlink to an (edited) copy of it outside the venv."""
    site = site_of(venv)
    outside = tmp_path / "outside" / "toypkg"
    shutil.copytree(site / "toypkg", outside)
    append(outside / "core.py", b"# edited outside\n")
    shutil.rmtree(site / "toypkg")
    (site / "toypkg").symlink_to(outside, target_is_directory=True)
    append(site / "otherpkg/mod.py", b"# restorable\n")
    return site, outside


def test_symlinked_package_dir_outside_is_never_written_through(venv, wheels, env, tmp_path):
    site, outside = _symlink_package_outside(venv, tmp_path)
    before = snapshot_tree(outside)
    proc = ds("restore", "--venv", str(venv), "--wheels", str(wheels), "--yes", env=env)
    assert diff_snapshots(before, snapshot_tree(outside)) == []
    assert (outside / "core.py").read_bytes().endswith(b"# edited outside\n")
    assert os.readlink(site / "toypkg") == str(outside)
    # The rest of the restore went ahead.
    assert (site / "otherpkg/mod.py").read_bytes() == OTHER_FILES["otherpkg/mod.py"], proc.stdout + proc.stderr


def test_symlinked_package_dir_outside_is_reported_as_refused(venv, wheels, env, tmp_path):
    """RECORD lists toypkg/*.py, reachable only through a symlink leaving the venv: restore must
    say it does not restore them and why (and set exit bit 2, as for any refusal)."""
    _, outside = _symlink_package_outside(venv, tmp_path)
    proc = ds("restore", "--venv", str(venv), "--wheels", str(wheels), "--dist", "toypkg", "--yes",
              "--format", "json", env=env)
    assert proc.returncode in (0, 2), proc.stderr
    out = json.loads(proc.stdout)
    said = [(i["relpath"], i["reason"]) for i in out["refused"]] + [("note", n) for n in out["notes"]]
    assert any("toypkg" in where + why and "outside" in why for where, why in said), (
        f"restore does not say why toypkg's RECORD files are not restored (symlink to {outside}); it reports "
        f"refused={out['refused']} notes={out['notes']} remaining={[i['relpath'] for i in out['remaining']]}")
    assert proc.returncode & 2, "a refusal sets exit bit 2"


def test_symlinked_file_is_replaced_not_followed(venv, wheels, env, tmp_path):
    """A RECORD file turned into a symlink to a file outside: the symlink goes, the target stays."""
    site = site_of(venv)
    outside = tmp_path / "elsewhere_util.py"
    outside.write_bytes(b"A = 'outside'\n")
    (site / "toypkg/util.py").unlink()
    (site / "toypkg/util.py").symlink_to(outside)
    proc = ds("restore", "--venv", str(venv), "--wheels", str(wheels), "--dist", "toypkg", "--yes", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "  restored         toypkg/util.py" in proc.stdout
    assert outside.read_bytes() == b"A = 'outside'\n"
    assert not os.path.islink(site / "toypkg/util.py")
    assert (site / "toypkg/util.py").read_bytes() == TOY_FILES["toypkg/util.py"]
    index = load_index(checkpoint_line(proc.stdout))
    [saved] = [f for f in index.files if f.record_path == "toypkg/util.py"]
    assert (saved.kind, saved.type, saved.symlink_target) == ("type-changed", "symlink", str(outside))


def test_checkpoint_inside_the_venv_is_refused_before_anything_is_restored(venv, wheels, env):
    edit_toy(site_of(venv))
    before = snapshot_tree(venv)
    proc = ds("restore", "--venv", str(venv), "--wheels", str(wheels), "--dist", "toypkg", "--yes",
              "--checkpoint", str(venv / "cp"), env=env)
    assert proc.returncode == 2
    assert proc.stderr == (f"driftscan: error: {venv / 'cp'}: inside the audited tree {venv}; "
                           "a checkpoint is written outside it\n")
    assert proc.stdout == ""
    assert diff_snapshots(before, snapshot_tree(venv)) == []
    assert not os.path.lexists(venv / "cp")
    assert not [p for p in venv.iterdir() if p.name.startswith(".cp.")]


# ---- 8. --remove-added ------------------------------------------------------------------------


def test_remove_added_only_inside_the_restored_distributions_own_package(venv, wheels, env):
    site = site_of(venv)
    edit_toy(site)
    plants = {
        "toypkg/added.py": b"HELPER = 'added while debugging'\n",  # edit_toy's
        "toypkg/debug/trace.txt": b"trace\n",  # nested inside toypkg/
        "stray.py": b"TOP = 1\n",  # site-packages top level: nobody's package
        "otherpkg/extra.py": b"EXTRA = 1\n",  # another distribution's package directory
        f"toypkg/__pycache__/ghost.{sys.implementation.cache_tag}.pyc": b"ghost",  # bytecode of no source
    }
    (site / "toypkg/debug").mkdir()
    (site / "toypkg/__pycache__").mkdir(exist_ok=True)
    for rel, data in plants.items():
        (site / rel).write_bytes(data)

    proc = ds("restore", "--venv", str(venv), "--wheels", str(wheels), "--dist", "toypkg", "--yes", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {rel: (site / rel).read_bytes() for rel in plants} == plants, "removed without --remove-added"
    assert "removed " not in proc.stdout

    append(site / "toypkg/util.py", b"# again\n")
    proc = ds("restore", "--venv", str(venv), "--wheels", str(wheels), "--dist", "toypkg", "--yes", "--remove-added",
              "--format", "json", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    ghost = f"toypkg/__pycache__/ghost.{sys.implementation.cache_tag}.pyc"
    assert sorted((a["relpath"], a["action"], a["status"]) for a in out["actions"]) == sorted([
        ("toypkg/added.py", "remove", "removed"), ("toypkg/debug/trace.txt", "remove", "removed"),
        (ghost, "remove", "removed"), ("toypkg/util.py", "rewrite", "restored")])
    for rel in ("toypkg/added.py", "toypkg/debug/trace.txt", ghost):
        assert not os.path.lexists(site / rel), rel
    assert (site / "stray.py").read_bytes() == plants["stray.py"]
    assert (site / "otherpkg/extra.py").read_bytes() == plants["otherpkg/extra.py"]
    kept = {i["relpath"] for i in out["remaining"]}
    assert {"stray.py", "otherpkg/extra.py"} <= kept
    # What was removed is in the checkpoint, byte for byte.
    cp = Path(out["checkpoint"])
    index = load_index(str(cp))
    by_rel = {f.relpath.split("site-packages/", 1)[1]: f for f in index.files}
    for rel in ("toypkg/added.py", "toypkg/debug/trace.txt", ghost):
        assert (cp / by_rel[rel].content).read_bytes() == plants[rel]
    report = audit_json(venv, env=env)
    assert package_drift(report, "toypkg") == []
    assert sorted(d["relpath"] for d in report["drifts"] if d["kind"] == "added") == ["otherpkg/extra.py", "stray.py"]


# ---- 9. checkpoint ---------------------------------------------------------------------------


def test_checkpoint_refuses_an_existing_directory(venv, wheels, env, tmp_path):
    edit_toy(site_of(venv))
    empty = tmp_path / "existing"
    empty.mkdir()
    proc = ds("checkpoint", "--venv", str(venv), "--wheels", str(wheels), "-o", str(empty), env=env)
    assert proc.returncode == 2
    assert proc.stderr == (f"driftscan: error: {empty}: already exists; a checkpoint never replaces anything "
                           "(choose a new path)\n")
    assert list(empty.iterdir()) == []
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    proc = ds("checkpoint", "--venv", str(venv), "-o", str(dangling), env=env)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1 and "already exists" in proc.stderr
    assert not (tmp_path / "nowhere").exists()
    assert not list(tmp_path.glob(".existing.*")) and not list(tmp_path.glob(".dangling.*"))


def test_checkpoint_refuses_a_directory_inside_the_venv(venv, wheels, env):
    edit_toy(site_of(venv))
    inside = site_of(venv) / "cp"
    proc = ds("checkpoint", "--venv", str(venv), "--wheels", str(wheels), "-o", str(inside), env=env)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"driftscan: error: {inside}: inside the audited tree ")
    assert len(proc.stderr.splitlines()) == 1
    assert not os.path.lexists(inside)
    assert not [p for p in site_of(venv).iterdir() if p.name.startswith(".cp.")]


@pytest.fixture
def model_dir(tmp_path) -> tuple[Path, bytes]:
    """A plain directory with a saved driftscan manifest, then the SM120 config edit."""
    root = tmp_path / "model"
    root.mkdir()
    for rel, data in seed_files().items():
        (root / rel).write_bytes(data)
    write_manifest(str(root), build_manifest(str(root)), str(root / MANIFEST_NAME))
    sm120_edit(root)
    return root, (root / "config.json").read_bytes()


def test_checkpoint_with_a_model_dir_copies_the_drifted_config(venv, wheels, env, tmp_path, model_dir):
    model, config = model_dir
    edited = edit_toy(site_of(venv))
    assert config != seed_files()["config.json"]
    out = tmp_path / "cp"
    proc = ds("checkpoint", "--venv", str(venv), "--wheels", str(wheels), "--model-dir", str(model), "-o", str(out),
              env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[0] == f"checkpoint: {out}"
    assert (out / "files/model-0/config.json").read_bytes() == config
    assert (out / "files/model-0/hf_quant_config.json").read_bytes() == (model / "hf_quant_config.json").read_bytes()
    index = load_index(str(out))
    assert index.model_dirs == [str(model)]
    models = {f.relpath: f for f in index.files if f.area == "model-0"}
    assert set(models) == {"config.json", "hf_quant_config.json"}
    assert models["config.json"].hash_after == sha256_text(config)
    assert (models["config.json"].kind, models["config.json"].scope) == ("modified", "data")
    sp = os.path.relpath(site_of(venv), venv)
    assert (out / f"files/env/{sp}/toypkg/core.py").read_bytes() == edited["toypkg/core.py"]
    assert (out / f"patches/{sp}/toypkg/core.py.patch").is_file()
    assert f"{len(index.files)} drifted files: 6 patches, 9 copies" in proc.stdout


def test_checkpoint_records_the_model_files_reference_hash(venv, wheels, env, tmp_path, model_dir):
    """hash_before is "the original's hash, as RECORD (or the reference) has it": for a model
    file the reference is the manifest, which records the original's xxh3_128."""
    model, _ = model_dir
    manifest = json.loads((model / MANIFEST_NAME).read_text())
    digest = manifest["files"]["config.json"]["xxh3_128"]
    out = tmp_path / "cp"
    proc = ds("checkpoint", "--venv", str(venv), "--model-dir", str(model), "-o", str(out), env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [config] = [f for f in load_index(str(out)).files if f.area == "model-0" and f.relpath == "config.json"]
    assert config.hash_before is not None and digest in config.hash_before, (
        f"checkpoint.json has hash_before={config.hash_before!r} for the model's config.json; the manifest "
        f"records xxh3_128 {digest}")


def test_restore_with_a_model_dir_saves_it_but_never_changes_it(venv, wheels, env, tmp_path, model_dir):
    model, config = model_dir
    edit_toy(site_of(venv))
    before = tree_state(model)
    proc = ds("restore", "--venv", str(venv), "--wheels", str(wheels), "--model-dir", str(model), "--yes",
              "--format", "json", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    assert tree_state(model) == before
    assert (model / "config.json").read_bytes() == config
    assert sorted(a["relpath"] for a in out["actions"]) == sorted([*TOY_RESTORABLE, "otherpkg/mod.py"])
    left = {i["relpath"]: i for i in out["remaining"]}
    assert left["config.json"]["scope"] == "data" and "restore leaves data alone" in left["config.json"]["reason"]
    assert (Path(out["checkpoint"]) / "files/model-0/config.json").read_bytes() == config


# ---- selection by path ------------------------------------------------------------------------


def test_restore_by_path_restores_only_that_file(venv, wheels, env):
    site = site_of(venv)
    edited = edit_toy(site)
    proc = ds("restore", str(site / "toypkg/core.py"), "--venv", str(venv), "--wheels", str(wheels), "--yes",
              env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (site / "toypkg/core.py").read_bytes() == TOY_FILES["toypkg/core.py"]
    for rel in ("toypkg/util.py", "toypkg/nonl.py", "otherpkg/mod.py"):
        assert (site / rel).read_bytes() == edited[rel], rel
    assert "1 file restored and verified against RECORD" in proc.stdout


def test_restore_by_relative_directory_path(venv, wheels, env):
    """Reports name files relative to site-packages; a directory given that way selects the files
    under it, as the same directory given as an absolute path does."""
    site = site_of(venv)
    edit_toy(site)
    by_abs = json.loads(ds("restore", str(site / "toypkg"), "--venv", str(venv), "--wheels", str(wheels),
                           "--format", "json", env=env).stdout)
    assert sorted(a["relpath"] for a in by_abs["actions"]) == TOY_RESTORABLE
    by_rel = json.loads(ds("restore", "toypkg", "--venv", str(venv), "--wheels", str(wheels), "--format", "json",
                           env=env).stdout)
    assert sorted(a["relpath"] for a in by_rel["actions"]) == TOY_RESTORABLE, (
        f"'restore toypkg' planned {[a['relpath'] for a in by_rel['actions']]}; left "
        f"{[(i['relpath'], i['reason']) for i in by_rel['remaining']]}")


# ---- missing files, modes from the wheel -------------------------------------------------------


def test_missing_file_and_directory_are_recreated(venv, wheels, env):
    site = site_of(venv)
    shutil.rmtree(site / "toypkg/data")
    (site / "execpkg/data/table.txt").unlink()
    proc = ds("restore", "--venv", str(venv), "--wheels", str(wheels), "--yes", "--format", "json", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    assert sorted((a["relpath"], a["action"], a["status"]) for a in out["actions"]) == [
        ("execpkg/data/table.txt", "recreate", "restored"), ("toypkg/data/notes.txt", "recreate", "restored")]
    assert (site / "toypkg/data/notes.txt").read_bytes() == TOY_FILES["toypkg/data/notes.txt"]
    assert (site / "execpkg/data/table.txt").read_bytes() == EXEC_FILES["execpkg/data/table.txt"]
    assert stat.S_IMODE(os.lstat(site / "toypkg/data/notes.txt").st_mode) == 0o644
    assert find_tmp_leftovers(venv) == []
    index = load_index(out["checkpoint"])
    missing = {f.record_path: f for f in index.files if f.kind == "missing"}
    assert set(missing) == {"toypkg/data/notes.txt", "execpkg/data/table.txt"}
    assert all(f.type == "missing" and f.content is None for f in missing.values())


def test_recreated_file_gets_the_mode_the_wheel_gives_it(venv, wheels, env):
    """pip installed execpkg/bin/helper 0755 (from the wheel's external attributes); a restore of
    the deleted file must give it back executable, as a reinstall would."""
    site = site_of(venv)
    helper = site / "execpkg/bin/helper"
    installed_mode = stat.S_IMODE(os.lstat(helper).st_mode)
    assert installed_mode & 0o111, f"pip installed the helper {oct(installed_mode)}: the wheel fixture is wrong"
    helper.unlink()
    proc = ds("restore", "--venv", str(venv), "--wheels", str(wheels), "--dist", "execpkg", "--yes", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "  restored         execpkg/bin/helper" in proc.stdout
    assert helper.read_bytes() == EXEC_FILES["execpkg/bin/helper"]
    mode = stat.S_IMODE(os.lstat(helper).st_mode)
    assert mode == installed_mode, f"recreated {oct(mode)}, pip installed it {oct(installed_mode)}"


# ---- the checkpoint is the only copy of the debug work ---------------------------------------------


def test_restore_never_overwrites_an_edit_its_checkpoint_did_not_save(venv, wheels, monkeypatch, tmp_path):
    """A file bigger than the checkpoint copies (the copy limit, lowered here from 1 GiB to 64
    bytes so that a test reaches it: think of an edited 4 GiB weight shard) is listed there as not
    copied. A binary file has no patch and no diff in report.json either, so once restore
    rewrites it the edit exists nowhere: restore must leave it (refused or failed, saying why)."""
    from driftscan import api

    site = site_of(venv)
    rel = "execpkg/data/weights.bin"
    original = EXEC_FILES[rel]
    edited = original[:100] + b"\xff" * 8 + original[108:]  # a tensor patched in place
    with open(site / rel, "r+b") as f:
        f.write(edited)
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "no-uv"))
    monkeypatch.setenv("PIP_CACHE_DIR", str(tmp_path / "no-pip"))
    cp = tmp_path / "cp"
    report = api.restore(str(venv), wheels=[str(wheels)], dists=["execpkg"], yes=True, checkpoint_path=str(cp),
                         max_copy=64)
    [saved] = [f for f in load_index(str(cp)).files if f.record_path == rel]
    assert saved.content is None and "more than the 64 copied" in str(saved.not_copied)  # the premise
    [drift] = [d for d in json.loads((cp / "report.json").read_text())["drifts"] if d["relpath"] == rel]
    assert drift["diff"] is None  # nothing else holds the edited bytes
    statuses = [(a.relpath, a.status, a.error) for a in report.actions]
    assert (site / rel).read_bytes() == edited, (
        f"restore rewrote {rel}, whose edit its checkpoint did not save (not_copied: {saved.not_copied}): "
        f"the edit is gone. actions: {statuses}; refused: {[r.relpath for r in report.refused]}; "
        f"notes: {report.notes}")
    assert [s[1] for s in statuses if s[0] == rel] != ["restored"]


def test_checkpoint_saves_files_whose_printable_names_collide(venv, wheels, env, tmp_path):
    """toypkg/caf\\xe9.py (a non-UTF-8 byte) and toypkg/caf\\\\xe9.py (a literal backslash) are two files:
    the checkpoint must save both (or at least say which it could not), not fail as a whole."""
    site = site_of(venv)
    edit_toy(site)
    byte_name = site / os.fsdecode(b"toypkg/caf\xe9.py")
    text_name = site / "toypkg/caf\\xe9.py"
    byte_name.write_bytes(b"BYTE = 1\n")
    text_name.write_bytes(b"TEXT = 2\n")
    out = tmp_path / "cp"
    proc = ds("checkpoint", "--venv", str(venv), "--wheels", str(wheels), "-o", str(out), env=env)
    assert out.is_dir(), f"no checkpoint written ({proc.returncode}): {proc.stderr.strip()}"
    index = load_index(str(out))
    contents = sorted((out / f.content).read_bytes() for f in index.files
                      if f.kind == "added" and f.content and "caf" in f.relpath)
    assert contents == [b"BYTE = 1\n", b"TEXT = 2\n"], [f for f in index.files if "caf" in f.relpath]


# ---- found in review: hostile modes, names and write failures ------------------------------


def test_restore_never_writes_a_setuid_or_world_writable_file(venv, wheels, env):
    """The tree's file had 06777; the restored file (maybe root's now) gets none of those bits."""
    core = site_of(venv) / "toypkg/core.py"
    append(core, b"# edited\n")
    os.chmod(core, 0o6777)
    proc = ds("restore", "--venv", str(venv), "--wheels", str(wheels), "--dist", "toypkg", "--yes", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert stat.S_IMODE(os.stat(core).st_mode) == 0o755  # 06777 & 0o755
    assert core.read_bytes() == TOY_FILES["toypkg/core.py"]


def test_a_file_that_cannot_be_written_fails_alone_and_the_rest_is_restored(venv, wheels, env, monkeypatch, tmp_path):
    from driftscan import api

    site = site_of(venv)
    for rel in ("toypkg/core.py", "toypkg/util.py"):
        append(site / rel, b"# edited\n")
    real_open = os.open

    def refuse(path, flags, *args, **kwargs):
        # The temporary file is opened by name in its directory's descriptor (never by a path).
        where = os.readlink(f"/proc/self/fd/{kwargs['dir_fd']}") if kwargs.get("dir_fd") is not None else path
        if isinstance(path, str) and ".driftscan-restore-" in path and str(where).endswith("toypkg") \
                and not getattr(refuse, "done", False):
            refuse.done = True
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setenv("DRIFTSCAN_CHECKPOINT_DIR", env["DRIFTSCAN_CHECKPOINT_DIR"])
    monkeypatch.setattr(os, "open", refuse)
    report = api.restore(str(venv), wheels=[str(wheels)], dists=["toypkg"], yes=True,
                         checkpoint_path=str(tmp_path / "cp"))
    monkeypatch.setattr(os, "open", real_open)
    statuses = sorted((a.relpath, a.status) for a in report.actions)
    assert statuses == [("toypkg/core.py", "failed"), ("toypkg/util.py", "restored")], statuses
    failed = next(a for a in report.actions if a.status == "failed")
    assert "Permission denied" in failed.error
    assert (site / "toypkg/util.py").read_bytes() == TOY_FILES["toypkg/util.py"]


def test_checkpoint_keeps_a_non_utf8_directory_apart_from_a_file_named_like_it(venv, wheels, env, tmp_path):
    site = site_of(venv)
    edit_toy(site)
    odd = site / os.fsdecode(b"toypkg/d\xff")
    odd.mkdir()
    (odd / "f.py").write_bytes(b"ODD = 1\n")
    (site / "toypkg/d\\xff").write_bytes(b"LITERAL = 1\n")  # the printable form of the directory's name
    out = tmp_path / "cp"
    proc = ds("checkpoint", "--venv", str(venv), "--wheels", str(wheels), "-o", str(out), env=env)
    assert proc.returncode == 0, proc.stderr
    index = load_index(str(out))
    saved = {f.relpath: (out / f.content).read_bytes() for f in index.files if f.content and "d\\xff" in f.relpath}
    assert sorted(saved.values()) == [b"LITERAL = 1\n", b"ODD = 1\n"], saved
