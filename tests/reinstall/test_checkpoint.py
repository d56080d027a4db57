"""A checkpoint holds every edited byte and says what it lacks; originals are per file, honestly.

Real venvs: uv in hard-link mode with a private cache (files edited in place through the link, so
the cache copy is edited too; one file replaced by rename, whose cache copy stays the original)
and real pip, both from toy wheels built here, no --wheels; a real hub-cache layout with a blob
edited through a snapshot link that two snapshots share. What restore says is then checked
against the files, against a real uv reinstall and against the audit that follows."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from driftscan.reinstall.checkpoint import load_index
from fixtures import venvs
from fixtures.modeldirs import COMMIT, COMMIT_2, build_cache_repo, git_blob_sha1, seed_files
from fixtures.restoring import TOY_FILES, build_toy_wheels, cli, private_env, site_of

POISONED = ["toypkg/core.py", "toypkg/util.py"]  # edited in place through uv's hard link
RENAMED = "toypkg/nonl.py"  # written to a temporary file and renamed over: uv's cache copy intact
EDITS = {"toypkg/core.py": b"\nprint('f12 hit')  # debug\n", "toypkg/util.py": b"C = 4  # debug\n",
         RENAMED: b"\nDEBUG = 1"}


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> Path:
    return build_toy_wheels(tmp_path_factory.mktemp("toy-wheels"))


def _edit(site: Path, in_place: list[str], renamed: list[str]) -> dict[str, bytes]:
    edited = {}
    for rel in in_place:
        with open(site / rel, "ab") as f:  # the inode stays: through uv's hard link
            f.write(EDITS[rel])
        edited[rel] = TOY_FILES[rel] + EDITS[rel]
    for rel in renamed:
        tmp = site / (rel + ".tmp")
        tmp.write_bytes(TOY_FILES[rel] + EDITS[rel])
        os.replace(tmp, site / rel)
        edited[rel] = TOY_FILES[rel] + EDITS[rel]
    return edited


@pytest.fixture
def uv_venv(tmp_path, wheels):
    """toypkg installed by real uv, hard-linked from a private cache; two files edited through the
    link (the cache copies with them), one replaced by rename. No pip cache, no --wheels."""
    cache = tmp_path / "uv-cache"
    venv = venvs.make_uv_venv(tmp_path / "vuv", cache)
    venvs.uv_install(venv, cache, "--no-index", "--find-links", str(wheels), "toypkg")
    site = site_of(venv)
    edited = _edit(site, POISONED, [RENAMED])
    for rel in POISONED:
        [cached] = cache.glob(f"archive-v0/*/{rel}")
        assert cached.read_bytes() == edited[rel], f"the premise: uv's cache copy of {rel} is edited too"
    [intact] = cache.glob(f"archive-v0/*/{RENAMED}")
    assert intact.read_bytes() == TOY_FILES[RENAMED]
    env = {**private_env(tmp_path), "UV_CACHE_DIR": str(cache), "DRIFTSCAN_CHECKPOINT_DIR": str(tmp_path / "cps")}
    return venv, site, cache, edited, env


def _json(proc: subprocess.CompletedProcess) -> dict:
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout)


def _restore_lines(report: dict) -> dict[str, tuple[str, str]]:
    return {a["relpath"]: (a["action"], a["status"]) for a in report["actions"]}


def test_originals_are_per_file_in_audit_plan_and_checkpoint(uv_venv, tmp_path, wheels):
    venv, site, cache, edited, env = uv_venv
    report = _json(cli("audit", "--venv", str(venv), "--format", "json", env=env))
    pristine = {d["relpath"]: d["pristine"] for d in report["drifts"] if d["scope"] == "package"}
    assert set(pristine) == {*POISONED, RENAMED}
    # Only the renamed file's bytes verify in uv's cache; the edited cache copies are no originals.
    assert pristine[RENAMED] is not None and pristine[RENAMED]["source"] == "uv-cache"
    assert [pristine[rel] for rel in POISONED] == [None, None], pristine

    plan = _json(cli("plan", "--reinstall", "toypkg", "--venv", str(venv), "--format", "json", env=env))
    assert not any((s["command"] or "").startswith("driftscan restore") for s in plan["steps"]), plan["steps"]
    assert "verified originals" not in json.dumps(plan["steps"])

    cp = tmp_path / "cp"
    proc = cli("checkpoint", "--venv", str(venv), "-o", str(cp), env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # partial: bit 1, and still written whole
    index = load_index(str(cp))
    sp = os.path.relpath(site, venv)
    files = {f.record_path: f for f in index.files if f.record_path}
    for rel in POISONED:
        f = files[rel]
        assert (f.has_patch, f.has_original, f.patch, f.original) == (False, False, None, None), rel
        assert "edited" in str(f.no_original) and "hard link" in str(f.no_original), f.no_original
        assert (cp / f.content).read_bytes() == edited[rel]
        assert f"  modified          {sp}/{rel}: content, no patch, NO ORIGINAL" in proc.stdout
    assert (files[RENAMED].has_patch, files[RENAMED].has_original) == (True, True)
    assert (cp / files[RENAMED].original).read_bytes() == TOY_FILES[RENAMED]
    assert f"  modified          {sp}/{RENAMED}: content, patch, original" in proc.stdout
    assert index.partial and sorted(index.incomplete) == sorted(f"{sp}/{rel}" for rel in POISONED)
    [download] = [line for line in index.complete_with if line.startswith("pip download --no-deps ")]
    assert "toypkg==1.0 -d " in download
    again = [line for line in index.complete_with if line.startswith("driftscan checkpoint ")]
    assert len(again) == 2 and again[1].endswith(" --fetch") and " --wheels " in again[0]
    assert again[0].startswith(f"driftscan checkpoint --venv {venv} -o {cp}-whole --wheels ")
    assert "PARTIAL: 2 modified package files with no original and no patch" in proc.stdout
    for line in index.complete_with:
        assert f"  {line}" in proc.stdout

    allowed = cli("checkpoint", "--venv", str(venv), "-o", str(tmp_path / "cp-allowed"), "--allow-partial", env=env)
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "partial (--allow-partial)" in allowed.stdout and load_index(str(tmp_path / "cp-allowed")).partial

    # The completing lines work: fill the directory pip download would (the toy wheel is on no
    # index), then run the printed checkpoint line itself.
    wheels_dir = Path(shlex.split(download)[-1])
    wheels_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(next(wheels.glob("toypkg-1.0-*.whl")), wheels_dir)
    [with_wheels] = [line for line in again if " --wheels " in line]
    done = subprocess.run([sys.executable, "-m", "driftscan", *shlex.split(with_wheels)[1:]], capture_output=True,
                          text=True, env={**os.environ, **env})
    assert done.returncode == 0, done.stdout + done.stderr
    whole = load_index(str(cp) + "-whole")
    assert not whole.partial and whole.complete_with == []
    assert all(f.has_original and f.has_patch for f in whole.files if f.kind == "modified")

    # The originals the whole checkpoint verified are kept: a checkpoint without --wheels is whole now.
    later = cli("checkpoint", "--venv", str(venv), "-o", str(tmp_path / "cp-later"), env=env)
    assert later.returncode == 0, later.stdout + later.stderr
    assert not load_index(str(tmp_path / "cp-later")).partial


def test_restore_dry_run_and_yes_agree_and_never_touch_a_file_without_an_original(uv_venv, wheels):
    venv, site, cache, edited, env = uv_venv
    inodes = {rel: os.lstat(site / rel).st_ino for rel in edited}
    dry = cli("restore", "--venv", str(venv), "--dist", "toypkg", "--format", "json", env=env)
    assert dry.returncode == 2, dry.stdout + dry.stderr  # asked for, and two files cannot be done
    planned = _json(dry)
    assert _restore_lines(planned) == {RENAMED: ("rewrite", "planned"),
                                       **{rel: ("rewrite", "no-original") for rel in POISONED}}
    for a in planned["actions"]:
        if a["status"] == "no-original":
            assert a["source"] is None and "--wheels" in a["get_original"] and "--fetch" in a["get_original"]
            assert "pip download --no-deps" in a["get_original"] and "toypkg==1.0" in a["get_original"]
            assert "no longer matches" not in a["error"]
    text = cli("restore", "--venv", str(venv), "--dist", "toypkg", env=env).stdout
    assert f"  would rewrite    {RENAMED}" in text and "  NO ORIGINAL      toypkg/core.py" in text
    assert "1 file would be restored; 2 not touched: no verified original" in text

    yes = cli("restore", "--venv", str(venv), "--dist", "toypkg", "--yes", "--format", "json", env=env)
    assert yes.returncode == 2, yes.stdout + yes.stderr
    done = _json(yes)
    assert _restore_lines(done) == {RENAMED: ("rewrite", "restored"),
                                    **{rel: ("rewrite", "no-original") for rel in POISONED}}
    assert "no longer matches" not in yes.stdout
    # File by file, what --yes wrote is what the dry run said it would, and nothing else.
    assert {r for r, (_, s) in _restore_lines(done).items() if s == "restored"} == \
        {r for r, (_, s) in _restore_lines(planned).items() if s == "planned"}
    assert (site / RENAMED).read_bytes() == TOY_FILES[RENAMED]
    for rel in POISONED:
        assert (site / rel).read_bytes() == edited[rel] and os.lstat(site / rel).st_ino == inodes[rel], rel
    assert (Path(done["checkpoint"]) / "checkpoint.json").is_file()

    after = _json(cli("audit", "--venv", str(venv), "--format", "json", env=env))
    assert sorted(d["relpath"] for d in after["drifts"] if d["scope"] == "package") == POISONED

    # The real uv reinstall from the same source: whatever restore said stays edited in uv's cache
    # is all a drift the audit can still find afterwards (the link brings the edit back).
    venvs.uv_install(venv, cache, "--reinstall", "--no-deps", "--no-index", "--find-links", str(wheels), "toypkg")
    reinstalled = _json(cli("audit", "--venv", str(venv), "--format", "json", env=env))
    left = {d["relpath"] for d in reinstalled["drifts"] if d["scope"] == "package"}
    assert left <= set(POISONED) and RENAMED not in left
    for rel in left:
        [cached] = cache.glob(f"archive-v0/*/{rel}")
        assert cached.read_bytes() == edited[rel]  # restore never wrote into uv's cache

    # With the original at hand, the rest is restored, and the audit confirms it.
    final = cli("restore", "--venv", str(venv), "--dist", "toypkg", "--wheels", str(wheels), "--yes",
                "--format", "json", env=env)
    assert final.returncode == 0, final.stdout + final.stderr
    assert {s for _, s in _restore_lines(_json(final)).values()} <= {"restored"}
    clean = _json(cli("audit", "--venv", str(venv), "--format", "json", env=env))
    assert [d for d in clean["drifts"] if d["scope"] == "package"] == []


def test_pip_venv_without_any_original(tmp_path, wheels):
    """Real pip, no caches, no --wheels: nothing has an original. The checkpoint says so for every
    modified file; restore touches nothing and says how to get them; with --wheels both are whole."""
    venv = tmp_path / "vpip"
    venvs.run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    venvs.modern_pip_install(venv, "--no-index", "--find-links", str(wheels), "toypkg")
    site = site_of(venv)
    edited = _edit(site, ["toypkg/core.py"], [RENAMED])
    env = {**private_env(tmp_path), "DRIFTSCAN_CHECKPOINT_DIR": str(tmp_path / "cps")}
    proc = cli("checkpoint", "--venv", str(venv), "-o", str(tmp_path / "cp"), env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    index = load_index(str(tmp_path / "cp"))
    assert len(index.incomplete) == 2 and all("no original of toypkg 1.0 found" in str(f.no_original)
                                              for f in index.files if f.kind == "modified")
    before = {rel: (site / rel).read_bytes() for rel in edited}
    proc = cli("restore", "--venv", str(venv), "--yes", "--format", "json", env=env)
    assert proc.returncode == 2
    assert {s for _, s in _restore_lines(_json(proc)).values()} == {"no-original"}
    assert _json(proc)["checkpoint"] is None  # nothing to write, nothing written
    assert {rel: (site / rel).read_bytes() for rel in edited} == before

    whole = cli("checkpoint", "--venv", str(venv), "-o", str(tmp_path / "cp2"), "--wheels", str(wheels), env=env)
    assert whole.returncode == 0, whole.stdout + whole.stderr
    assert not load_index(str(tmp_path / "cp2")).partial and "PARTIAL" not in whole.stdout
    proc = cli("restore", "--venv", str(venv), "--yes", "--wheels", str(wheels), env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = _json(cli("audit", "--venv", str(venv), "--format", "json", env=env))
    assert [d for d in report["drifts"] if d["scope"] == "package"] == []


# ---- the hub cache: a blob edited through a snapshot link ------------------------------------------


@pytest.fixture
def hub(tmp_path):
    """Two snapshots sharing config.json's blob; config.json edited through main's link."""
    cache = tmp_path / "hub"
    build_cache_repo(cache, seed_files(), commit=COMMIT_2, ref=None)
    repo = build_cache_repo(cache, seed_files())
    link = repo / "snapshots" / COMMIT / "config.json"
    edited = b'{"edited": "through the link"}\n'
    with open(link, "wb") as f:  # follows the link: the blob itself changes
        f.write(edited)
    blob = repo / "blobs" / git_blob_sha1(seed_files()["config.json"])
    assert blob.read_bytes() == edited and os.path.islink(link)
    env = {**private_env(tmp_path), "DRIFTSCAN_CHECKPOINT_DIR": str(tmp_path / "state" / "checkpoints")}
    return repo, link, blob, edited, env


def test_checkpoint_holds_the_edited_blob_behind_the_snapshot_link(hub, tmp_path):
    repo, link, blob, edited, env = hub
    cp = tmp_path / "cp"
    proc = cli("checkpoint", "--model-dir", str(repo), "-o", str(cp), env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [saved] = [f for f in load_index(str(cp)).files if f.relpath == "config.json"]
    assert (saved.type, saved.symlink_target) == ("symlink", os.readlink(link))  # the link, as it is ...
    assert saved.content and (cp / saved.content).read_bytes() == edited  # ... and the edited bytes behind it
    assert saved.link_resolves_to == f"blobs/{blob.name}"
    assert saved.hash_after == "sha256=" + __import__("hashlib").sha256(edited).hexdigest()
    assert f"symlink to {os.readlink(link)}, its edited content (blobs/{blob.name})" in proc.stdout


def test_the_remedy_checkpoints_first_and_its_checkpoint_keeps_the_edit(hub):
    repo, link, blob, edited, env = hub
    report = _json(cli("audit", "--model-dir", str(repo), "--format", "json", env=env))
    [drift] = [d for d in report["drifts"] if d["relpath"] == "config.json"]
    remedy = drift["remedy"]
    assert remedy.startswith("checkpoint first: driftscan checkpoint --model-dir ")
    first, rest = remedy[len("checkpoint first: "):].split(" && ", 1)
    assert rest.startswith(f"rm {blob}")  # the destructive part comes after the checkpoint
    args = shlex.split(first)
    dest = Path(args[args.index("-o") + 1])
    assert dest.parent == Path(env["DRIFTSCAN_CHECKPOINT_DIR"]) and not dest.parent.exists()
    proc = subprocess.run([sys.executable, "-m", "driftscan", *args[1:]], capture_output=True, text=True,
                          env={**os.environ, **env})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # Now the rm of the remedy (hf download needs the Hub): the edit exists only in the checkpoint.
    rm = shlex.split(rest.split(" && ")[0])
    assert rm[0] == "rm"
    subprocess.run(rm, check=True)
    assert not blob.exists()
    [saved] = [f for f in load_index(str(dest)).files if f.relpath == "config.json"]
    assert (dest / saved.content).read_bytes() == edited
    # The same line again refuses to replace that checkpoint.
    again = subprocess.run([sys.executable, "-m", "driftscan", *args[1:]], capture_output=True, text=True,
                           env={**os.environ, **env})
    assert again.returncode == 2 and "already exists" in again.stderr


def test_a_blob_that_links_out_of_the_repository_is_never_read(hub, tmp_path):
    repo, link, blob, edited, env = hub
    outside = tmp_path / "secret.txt"
    outside.write_bytes(b"not the repository's\n")
    blob.unlink()
    blob.symlink_to(outside)
    cp = tmp_path / "cp"
    proc = cli("checkpoint", "--model-dir", str(repo), "-o", str(cp), env=env)
    assert proc.returncode in (0, 2), proc.stdout + proc.stderr
    index = load_index(str(cp))
    assert not any(f.content and (cp / f.content).read_bytes() == outside.read_bytes() for f in index.files)
    assert not list(cp.rglob("*secret*"))


# ---- dumps ---------------------------------------------------------------------------------------


def test_the_dump_list_is_saved_in_the_checkpoint(tmp_path, wheels):
    venv = tmp_path / "v"
    venvs.run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    venvs.modern_pip_install(venv, "--no-index", "--find-links", str(wheels), "toypkg")
    site = site_of(venv)
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    (site / "toypkg/core.py").write_text(
        "import torch\n\n\nclass M:\n    def forward(self, x):\n        self._n += 1\n"
        f"        torch.save(x, f\"{dumps}/nomla_{{self._n}}.pt\")\n        return x\n")
    written = os.stat(site / "toypkg/core.py").st_mtime
    for i in range(3):
        (dumps / f"nomla_{i}.pt").write_bytes(b"\0" * (100 + i))
        os.utime(dumps / f"nomla_{i}.pt", (written + 5, written + 5))
    env = {**private_env(tmp_path), "DRIFTSCAN_CHECKPOINT_DIR": str(tmp_path / "cps")}
    cp = tmp_path / "cp"
    proc = cli("checkpoint", "--venv", str(venv), "-o", str(cp), "--wheels", str(wheels), env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    raw = json.loads((cp / "checkpoint.json").read_text())
    got = sorted((d["path"], d["size"], d["mtime_ns"], d["pattern"]) for d in raw["dumps"])
    assert got == [(str(dumps / f"nomla_{i}.pt"), 100 + i, os.stat(dumps / f"nomla_{i}.pt").st_mtime_ns,
                    f"{dumps}/nomla_*.pt") for i in range(3)]
    writer = raw["dumps"][0]["writer"]
    assert (writer["path"], writer["line"], writer["code"]) == (str(site / "toypkg/core.py"), 7, "DBG101")
    assert "3 dump files listed" in proc.stdout

    # After the reinstall the code that wrote them is gone; reapply re-checks the saved list.
    venvs.modern_pip_install(venv, "--force-reinstall", "--no-deps", "--no-index", "--find-links", str(wheels),
                             "toypkg")
    (dumps / "nomla_0.pt").unlink()
    os.chmod(dumps / "nomla_1.pt", 0o755)  # executable now: not a dump by the file rules
    notes = json.loads(cli("reapply", str(cp), "--venv", str(venv), "--format", "json", env=env).stdout)["notes"]
    [note] = [n for n in notes if "dump files" in n]
    assert note.startswith("1 of the 3 dump files the checkpoint lists is still on disk") and "nomla_2.pt" in note


def test_the_dry_run_lists_exactly_what_yes_writes(tmp_path, wheels):
    """A file the checkpoint cannot save (over --max-copy) is not restored, and the dry run says so
    before; a file recreated in a deleted directory names the directory it creates."""
    from fixtures.restoring import EXEC_FILES, snapshot_tree

    venv = tmp_path / "v"
    venvs.run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    venvs.modern_pip_install(venv, "--no-index", "--find-links", str(wheels), "toypkg", "execpkg")
    site = site_of(venv)
    weights = site / "execpkg/data/weights.bin"
    with open(weights, "r+b") as f:
        f.write(b"\xff" * 8)
    shutil.rmtree(site / "toypkg/data")
    _edit(site, ["toypkg/core.py"], [])
    env = {**private_env(tmp_path), "DRIFTSCAN_CHECKPOINT_DIR": str(tmp_path / "cps")}
    args = ["restore", "--venv", str(venv), "--wheels", str(wheels), "--max-copy", "1000", "--format", "json"]
    before = snapshot_tree(venv)
    dry = cli(*args, env=env)
    assert dry.returncode == 2, dry.stdout + dry.stderr
    assert snapshot_tree(venv) == before
    planned = _json(dry)
    assert _restore_lines(planned) == {"toypkg/core.py": ("rewrite", "planned"),
                                       "toypkg/data/notes.txt": ("recreate", "planned"),
                                       "execpkg/data/weights.bin": ("rewrite", "unsaved")}
    [notes] = [a for a in planned["actions"] if a["relpath"] == "toypkg/data/notes.txt"]
    assert notes["creates"] == [str(site / "toypkg/data")]
    assert planned["checkpoint_in"] == env["DRIFTSCAN_CHECKPOINT_DIR"]

    yes = cli(*args, "--yes", env=env)
    assert yes.returncode == 2, yes.stdout + yes.stderr
    done = _json(yes)
    assert {r: s for r, (_, s) in _restore_lines(done).items()} == {
        "toypkg/core.py": "restored", "toypkg/data/notes.txt": "restored", "execpkg/data/weights.bin": "unsaved"}
    assert Path(done["checkpoint"]).parent == Path(planned["checkpoint_in"])
    after = snapshot_tree(venv)
    changed = {rel for rel in set(before) | set(after) if before.get(rel) != after.get(rel)}
    sp = os.path.relpath(site, venv)
    assert changed == {f"{sp}/toypkg/core.py", f"{sp}/toypkg/data", f"{sp}/toypkg/data/notes.txt", f"{sp}/toypkg"}
    assert weights.read_bytes() != EXEC_FILES["execpkg/data/weights.bin"]  # the unsaved edit is still there


def test_an_edit_behind_a_link_out_of_the_venv_is_said_not_saved(tmp_path, wheels):
    """uv --link-mode symlink: an edit through the link is in uv's cache, outside the venv. The
    checkpoint never follows the link out; it records the link and says the edit is not saved."""
    cache = tmp_path / "uv-cache"
    venv = venvs.make_uv_venv(tmp_path / "vsym", cache)
    venvs.uv_install(venv, cache, "--link-mode", "symlink", "--no-index", "--find-links", str(wheels), "toypkg")
    core = site_of(venv) / "toypkg/core.py"
    assert os.path.islink(core)
    with open(core, "ab") as f:
        f.write(b"# edited through the symlink\n")
    env = {**private_env(tmp_path), "UV_CACHE_DIR": str(cache), "DRIFTSCAN_CHECKPOINT_DIR": str(tmp_path / "cps")}
    cp = tmp_path / "cp"
    proc = cli("checkpoint", "--venv", str(venv), "-o", str(cp), "--wheels", str(wheels), env=env)
    assert proc.returncode & 2, proc.stdout + proc.stderr
    [saved] = [f for f in load_index(str(cp)).files if f.record_path == "toypkg/core.py"]
    assert (saved.type, saved.symlink_target, saved.content) == ("symlink", os.readlink(core), None)
    assert "resolves outside the audited tree" in str(saved.not_copied)
    assert "NOT SAVED" in proc.stdout and "not copied" in proc.stderr


def test_checkpoint_of_a_whole_hub_cache_holds_the_blob_and_no_environment(hub, tmp_path):
    repo, link, blob, edited, env = hub
    cp = tmp_path / "cp"
    proc = cli("checkpoint", "--hf-cache", str(repo.parent), "-o", str(cp), env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    index = load_index(str(cp))
    assert (index.venv, index.site_packages) == (None, [])  # a hub cache alone names no environment
    [saved] = [f for f in index.files if f.relpath == "config.json"]
    assert (cp / saved.content).read_bytes() == edited and saved.type == "symlink"


@pytest.mark.parametrize("name, version", [("toypkg; rm -rf ~", "1.0"), ("-rtoypkg", "1.0"), ("toypkg", "1.0 && id"),
                                           ("toypkg", "$(id)")])
def test_a_name_or_version_pip_could_not_be_asked_for_gets_no_download_line(tmp_path, name, version):
    """The name and version come from the tree's METADATA: never a line a shell would run otherwise."""
    import dataclasses

    from driftscan.core.values import Distribution, MetadataKind
    from driftscan.pristine.howto import download_line, ways_to_original

    dist = Distribution(name=name, version=version, metadata_dir=str(tmp_path / "x.dist-info"),
                        kind=MetadataKind.DIST_INFO, site_packages=str(tmp_path), entries=())
    assert download_line(dist, "3.11", None, str(tmp_path / "w")) is None
    assert "pip download" not in ways_to_original(dist, "3.11", None).text()
    fine = dataclasses.replace(dist, name="toypkg", version="1.0")
    assert download_line(fine, "3.11", None, str(tmp_path / "w d")) == \
        f"pip download --no-deps --only-binary :all: toypkg==1.0 -d '{tmp_path / 'w d'}'"


def test_an_index_reads_its_finding_origins_typed_and_refuses_an_unknown_one_in_one_line(tmp_path):
    """The origins a checkpoint saved (by this or an earlier driftscan: always one of these
    strings) read back as the enum; one no driftscan writes makes the index invalid, said in one line."""
    from driftscan.core.errors import ConfigError
    from driftscan.core.values import Origin

    findings = [{"code": "DBG101", "line": 7, "origin": "injected"}, {"code": "DBG101", "line": 9, "origin": "upstream"},
                {"code": "DBG102", "line": 3}]
    entry = {"path": "/v/lib/toypkg/core.py", "relpath": "lib/toypkg/core.py", "area": "env", "kind": "modified",
             "scope": "package", "findings": findings}
    cp = tmp_path / "cp"
    cp.mkdir()
    (cp / "checkpoint.json").write_text(json.dumps({"format": "1", "files": [entry]}))
    assert [f.origin for f in load_index(str(cp)).files[0].findings] == [Origin.INJECTED, Origin.UPSTREAM, None]
    findings[0]["origin"] = "vendored"
    (cp / "checkpoint.json").write_text(json.dumps({"format": "1", "files": [entry]}))
    with pytest.raises(ConfigError) as raised:
        load_index(str(cp))
    assert str(raised.value).startswith(f"{cp / 'checkpoint.json'}: not a valid checkpoint index")
    assert "\n" not in str(raised.value)
