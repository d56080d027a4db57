"""driftscan's own cache is written below its root without following a symlink: a cache
subdirectory swapped for a link into the audited tree after the one-time check (or before an
audit, which makes no check) fails that write, and nothing lands in the tree. The same for the
``.rej`` files of ``reapply --partial`` beside the checkpoint, for the cleanup of a killed run's
temporary files, and for the roots ``restore``/``reapply`` check before they audit anything.

Real venvs (pip, toypkg wheels built by fixtures/upgrades.py), real files and symlinks made here;
a swap "mid-run" is a hook run between the check and the write.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from driftscan import api
from fixtures.copiedvenv import base_venv, env, house, listing, venv  # noqa: F401 (fixtures)
from fixtures.upgrades import MODEL, NAME, cli, site_of


def added_file_checkpoint(dest: Path, venv: Path, data: bytes) -> Path:
    """A checkpoint (written as reapply reads one) recording an added file in toypkg/."""
    site = site_of(venv)
    dest.mkdir()
    (dest / "files").mkdir()
    (dest / "files" / "extra.txt").write_bytes(data)
    row = {"path": str(site / NAME / "extra.txt"), "relpath": os.path.relpath(site / NAME / "extra.txt", venv),
           "area": "env", "scope": "package", "kind": "added", "content": "files/extra.txt",
           "hash_after": "sha256=" + hashlib.sha256(data).hexdigest()}
    (dest / "checkpoint.json").write_text(json.dumps({"format": "1", "root": str(venv), "venv": str(venv),
                                                      "files": [row]}))
    return dest


def swap_for_link(path: Path, target: Path) -> None:
    """``path`` (a cache subdirectory) becomes a symlink to ``target`` (a directory in the tree)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    path.symlink_to(target, target_is_directory=True)


# ---- an audit never writes into the tree it audits ----------------------------------------


def test_an_audit_writes_nothing_through_cache_subdirectories_linked_into_the_tree(tmp_path, venv, env,
                                                                                 monkeypatch):
    """Every subdirectory a cold audit writes, found by a first audit with a cache of its own, is
    then a link into the audited package directory: the second audit's caches are not written
    through any of them (it reports the same drift), and the tree is as it was."""
    from driftscan.caches import racy

    monkeypatch.setattr(racy, "RACY_NS", 0)  # every file settled: the audit keeps its stat cache
    site = site_of(venv)
    (site / MODEL).write_bytes((site / MODEL).read_bytes() + b"# edited\n")
    first = api.audit(str(venv))
    cache = Path(env["DRIFTSCAN_CACHE_DIR"])
    subs = sorted(p.name for p in cache.iterdir() if p.is_dir())
    assert "statcache" in subs, subs  # the premise: an audit writes its stat cache
    fresh = tmp_path / "fresh-cache"
    fresh.mkdir()
    traps = site / NAME / "traps"
    traps.mkdir()
    for sub in subs:
        (traps / sub).mkdir()
        (fresh / sub).symlink_to(traps / sub, target_is_directory=True)
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(fresh))
    before = listing(site)
    second = api.audit(str(venv))
    assert listing(site) == before
    assert all(not os.listdir(traps / sub) for sub in subs)
    drifted = lambda report: sorted(d.relpath for d in report.drifts if not d.relpath.startswith(f"{NAME}/traps"))  # noqa: E731
    assert MODEL in drifted(first) and drifted(second) == drifted(first)


def test_a_dump_list_is_not_written_through_a_linked_dumps_directory(tmp_path, venv, env):
    from driftscan.caches.statcache import dump_list_path, write_dump_list

    target = site_of(venv) / NAME
    dumps = [str(tmp_path / "dump.pt")]
    swap_for_link(Path(env["DRIFTSCAN_CACHE_DIR"]) / "dumps", target)
    before = listing(target)
    assert write_dump_list(dumps) is None  # the remedy then names each file
    assert listing(target) == before
    os.unlink(Path(env["DRIFTSCAN_CACHE_DIR"]) / "dumps")
    assert write_dump_list(dumps) == dump_list_path(dumps)
    assert Path(dump_list_path(dumps)).read_bytes() == os.fsencode(dumps[0]) + b"\0"


def test_a_kept_original_is_not_written_through_originals_swapped_after_the_check(venv, env):
    from driftscan.caches.location import refuse_inside
    from driftscan.pristine.kept import keep, kept

    site = site_of(venv)
    data = (site / MODEL).read_bytes()
    digest = "sha256=" + hashlib.sha256(data).hexdigest()
    refuse_inside([str(venv)])  # the one-time check passes...
    swap_for_link(Path(env["DRIFTSCAN_CACHE_DIR"]) / "originals", site / NAME)  # ...then originals/ is a link
    before = listing(site)
    assert keep(digest, data) is False
    assert listing(site) == before
    os.unlink(Path(env["DRIFTSCAN_CACHE_DIR"]) / "originals")
    assert keep(digest, data) is True and kept(digest) == data


def test_the_reapply_ledger_is_not_written_through_reapply_swapped_mid_run(tmp_path, venv, env, monkeypatch):
    """reapply's own write is done; its ledger is then not saved, and the report says so."""
    from driftscan.reinstall import reapply as reapply_mod

    site = site_of(venv)
    data = b"notes\n"
    cp = added_file_checkpoint(tmp_path / "cp", venv, data)
    trap = site / NAME / "trap"
    trap.mkdir()
    real_open_journal = reapply_mod.open_journal

    def swap_then_open(root, notes, *roots):
        swap_for_link(Path(env["DRIFTSCAN_CACHE_DIR"]) / "reapply", trap)
        return real_open_journal(root, notes, *roots)

    monkeypatch.setattr(reapply_mod, "open_journal", swap_then_open)
    report = api.reapply(str(cp), str(venv), yes=True, checkpoint_path=str(tmp_path / "new-cp"))
    (item,) = report.files
    assert item.status == "applied", item
    assert (site / NAME / "extra.txt").read_bytes() == data
    assert os.listdir(trap) == []
    (note,) = [n for n in report.notes if "ledger" in n]
    assert "not saved" in note and "symlink" in note, note


def test_restore_writes_nothing_when_its_journal_directory_is_swapped_mid_run(tmp_path, venv, house, env,
                                                                            monkeypatch):
    """The journal is written before each file: a restore/ that became a link into the package
    directory fails each write (said, file by file); no journal and no file land there."""
    from driftscan.reinstall import restore as restore_mod

    site = site_of(venv)
    edited = (site / MODEL).read_bytes() + b"# edited\n"
    (site / MODEL).write_bytes(edited)
    real_open_journal = restore_mod.open_journal

    def swap_then_open(root, notes, *roots):
        swap_for_link(Path(env["DRIFTSCAN_CACHE_DIR"]) / "restore", site / NAME)
        return real_open_journal(root, notes, *roots)

    monkeypatch.setattr(restore_mod, "open_journal", swap_then_open)
    before = listing(site)
    report = api.restore(str(venv), wheels=[str(house)], dists=[NAME], yes=True, checkpoint_path=str(tmp_path / "cp"))
    (action,) = [a for a in report.actions if a.relpath == MODEL]
    assert action.status == "failed" and "symlink" in (action.error or ""), action
    assert listing(site) == before
    assert (site / MODEL).read_bytes() == edited


# ---- .rej files beside the checkpoint --------------------------------------------------------


@pytest.mark.parametrize("linked", ["cp.rej", "cp.rej/lib"])
def test_a_rej_is_not_written_through_a_link_below_the_checkpoints_directory(tmp_path, venv, linked):
    from driftscan.reinstall.reapply import _write_rej, rej_path

    site = site_of(venv)
    cp = tmp_path / "cp"
    cp.mkdir()
    rel = os.path.relpath(site / MODEL, venv).replace(os.sep, "/")
    path = rej_path(str(cp), rel)
    (tmp_path / linked).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / linked).symlink_to(site if linked == "cp.rej/lib" else venv, target_is_directory=True)
    before = listing(venv)
    why = _write_rej(path, "@@ -1 +1 @@\n-a\n+b\n", str(cp))
    assert why is not None and "symlink" in why, why
    assert listing(venv) == before
    os.unlink(tmp_path / linked)
    assert _write_rej(path, "@@ -1 +1 @@\n-a\n+b\n", str(cp)) is None
    assert Path(path).read_text() == "@@ -1 +1 @@\n-a\n+b\n"
    assert Path(path).is_relative_to(tmp_path / "cp.rej")


# ---- a killed run's temporary files -----------------------------------------------------------


def test_leftovers_are_not_removed_through_a_package_directory_swapped_for_a_link(tmp_path, venv, env):
    """A killed run left a temporary file in toypkg/ (journaled with its inode); toypkg/ is then
    moved elsewhere and a link put in its place: the very same file, reached through the link, is
    not removed. Without the link it is."""
    from driftscan.reinstall.restore import _journal, clean_leftovers, journal_path

    site = site_of(venv)
    temp = site / NAME / ".driftscan-restore-0123456789abcdef.tmp"
    temp.write_bytes(b"half written")
    st = temp.stat()
    journal = journal_path(str(venv))
    for row in ({"temp": os.fsencode(str(temp)).hex()},
                {"temp": os.fsencode(str(temp)).hex(), "dev": st.st_dev, "ino": st.st_ino}):
        _journal(journal, row)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    shutil.move(str(site / NAME), str(outside / NAME))
    (site / NAME).symlink_to(outside / NAME, target_is_directory=True)
    assert clean_leftovers(journal, dry_run=True, roots=[str(venv)]) == []
    assert clean_leftovers(journal, roots=[str(venv)]) == []
    assert (outside / NAME / temp.name).read_bytes() == b"half written"
    os.unlink(site / NAME)
    shutil.move(str(outside / NAME), str(site / NAME))
    for row in ({"temp": os.fsencode(str(temp)).hex()},
                {"temp": os.fsencode(str(temp)).hex(), "dev": st.st_dev, "ino": st.st_ino}):
        _journal(journal, row)
    assert clean_leftovers(journal, dry_run=True, roots=[str(venv)]) == [str(temp)]
    assert clean_leftovers(journal, roots=[str(venv)]) == [str(temp)]
    assert not temp.exists() and not os.path.exists(journal)


# ---- every root checked before the audit ------------------------------------------------------


def test_a_cache_inside_the_environment_root_of_a_site_packages_is_refused_before_the_audit(tmp_path, venv, env,
                                                                                           monkeypatch):
    """``--site-packages`` names a path narrower than the environment restore writes to (the
    venv): a cache in the venv but outside site-packages is refused before anything is audited,
    so not even the audit's stat cache is written there (every file settled, it would be)."""
    from driftscan.caches import racy
    from driftscan.core.errors import ConfigError

    monkeypatch.setattr(racy, "RACY_NS", 0)
    site = site_of(venv)
    (site / MODEL).write_bytes((site / MODEL).read_bytes() + b"# edited\n")
    cache = venv / "ds-cache"
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(cache))
    before = listing(venv)
    for yes in (False, True):
        with pytest.raises(ConfigError, match="inside the audited tree"):
            api.restore(site_packages=[str(site)], yes=yes, checkpoint_path=str(tmp_path / f"cp-{yes}"))
        assert not cache.exists()
        assert listing(venv) == before
    proc = cli("restore", "--site-packages", str(site), "--yes", env={**env, "DRIFTSCAN_CACHE_DIR": str(cache)})
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and "inside the audited tree" in proc.stderr, proc.stderr
    assert not cache.exists()


def test_a_checkpoint_inside_the_environment_root_is_refused_before_the_audit(tmp_path, venv, env, monkeypatch):
    from driftscan.caches import racy
    from driftscan.core.errors import ConfigError

    monkeypatch.setattr(racy, "RACY_NS", 0)
    site = site_of(venv)
    (site / MODEL).write_bytes((site / MODEL).read_bytes() + b"# edited\n")
    with pytest.raises(ConfigError, match="a checkpoint is written outside it"):
        api.restore(site_packages=[str(site)], yes=True, checkpoint_path=str(venv / "cp"))
    assert not os.listdir(env["DRIFTSCAN_CACHE_DIR"])  # refused before the audit wrote its caches
    assert not (venv / "cp").exists()


def test_a_cache_inside_a_model_directory_is_refused_before_the_audit(tmp_path, venv, env):
    models = tmp_path / "models"
    models.mkdir()
    (models / "config.json").write_text("{}")
    cache = models / "sub" / "ds-cache"
    proc = cli("restore", "--venv", str(venv), "--model-dir", str(models),
               env={**env, "DRIFTSCAN_CACHE_DIR": str(cache)})
    assert proc.returncode == 2 and "inside the audited tree" in proc.stderr, proc.stdout + proc.stderr
    assert not (models / "sub").exists()
