"""``driftscan checkpoint`` then ``driftscan reapply`` across real reinstalls and upgrades.

Real wheels (toypkg 1.0 to 1.3: fixtures/upgrades.py), real pip (in venvs copied from one made
by venvs.make_pip_venv) and real uv with a private cache; the real CLI where the exit status or
the output is the point, api.reapply / api.checkpoint in-process elsewhere (the same code, cheaper).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from driftscan import api
from fixtures import venvs
from fixtures.harness import replace_by_rename
from fixtures.upgrades import (
    MODEL,
    UTIL,
    VERSIONS,
    WEIGHTS,
    WEIGHTS_DATA,
    build_toypkg,
    cli,
    edit_kept,
    edit_model,
    edit_util,
    edit_weights,
    install,
    no_caches,
    pip_venv,
    relpath_in,
    site_of,
)

EXIT_DRIFT, EXIT_INCOMPLETE = 1, 2


@pytest.fixture(scope="module")
def house(tmp_path_factory) -> Path:
    return build_toypkg(tmp_path_factory.mktemp("reapply-wheels") / "house")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """For the CLI and the in-process API alike: empty uv/pip caches (never the user's), and the
    checkpoints --yes writes first in a directory of this module."""
    root = tmp_path_factory.mktemp("reapply-env")
    values = {**no_caches(root), "DRIFTSCAN_CHECKPOINT_DIR": str(root / "auto-checkpoints")}
    with pytest.MonkeyPatch.context() as mp:
        for key, value in values.items():
            mp.setenv(key, value)
        yield values


def reapply(*args: str, env: dict[str, str]) -> tuple[int, dict]:
    """The real command line, JSON out: (exit status, report)."""
    proc = cli("reapply", *args, "--format", "json", env=env)
    return proc.returncode, json.loads(proc.stdout)


def reapply_api(checkpoint: Path, venv: Path | None = None, **kw) -> dict:
    """``api.reapply`` in this process (cheaper than a CLI run), as the JSON the CLI would print."""
    report = api.reapply(str(checkpoint), str(venv) if venv else None, **kw)
    return json.loads(report.model_dump_json())


def by_relpath(report: dict) -> dict[str, dict]:
    return {f["relpath"]: f for f in report["files"]}


PROBE = "toypkg/probe.py"  # an added file with debug code
NOTES = "toypkg/notes.txt"  # an added file without
PROBE_SOURCE = 'import torch\n\ntorch.save(torch.zeros(1), "/tmp/toy_probe.pt")\n'
NOTES_SOURCE = "local notes\n"


def edit_and_checkpoint(venv: Path, house: Path, dest: Path, env: dict[str, str], others: bool = True) -> Path:
    """The user's edits (in place, as an editor writes pip's files): model.py, two added files, and
    with ``others`` util.py and the binary weights.bin too; then a checkpoint (--wheels)."""
    site = site_of(venv)
    (site / MODEL).write_text(edit_model((site / MODEL).read_text()))
    if others:
        (site / UTIL).write_text(edit_util((site / UTIL).read_text()))
        (site / WEIGHTS).write_bytes(edit_weights(WEIGHTS_DATA))
    (site / PROBE).write_text(PROBE_SOURCE)
    (site / NOTES).write_text(NOTES_SOURCE)
    os.chmod(site / NOTES, 0o600)
    written = api.checkpoint(str(dest), str(venv), wheels=[str(house)])
    assert written.problems == [], written.problems
    return dest


@pytest.fixture(scope="module")
def shared_checkpoint(tmp_path_factory, house, env) -> tuple[Path, dict[str, str]]:
    """A checkpoint of toypkg 1.0 with model.py, util.py and weights.bin edited and two files added, taken of a
    venv nothing touches after (originals from --wheels);
    tests re-apply it onto venvs of their own (``--venv``). Returns it and the relpaths."""
    venv = pip_venv(tmp_path_factory, "reapply-source")
    install(venv, house, "toypkg==1.0")
    cp = edit_and_checkpoint(venv, house, tmp_path_factory.mktemp("reapply-cp") / "cp", env)
    site = site_of(venv)
    return cp, {name: relpath_in(venv, site / path) for name, path in
                (("model", MODEL), ("util", UTIL), ("probe", PROBE), ("notes", NOTES), ("weights", WEIGHTS))}


def fresh(tmp_path_factory, house, version: str, name: str) -> tuple[Path, Path]:
    venv = pip_venv(tmp_path_factory, name)
    install(venv, house, f"toypkg=={version}")
    site = site_of(venv)
    assert (site / MODEL).read_text() == VERSIONS[version][MODEL]
    return venv, site


def snapshot(path: Path) -> tuple[bytes, int, int]:
    st = os.stat(path)
    return path.read_bytes(), st.st_ino, st.st_mtime_ns


def test_upgrade_merge_then_exclude_findings_on_a_fresh_install(tmp_path, tmp_path_factory, house, env):
    venv, site = fresh(tmp_path_factory, house, "1.0", "reapply-upgrade")
    model = site / MODEL
    cp = edit_and_checkpoint(venv, house, tmp_path / "cp", env, others=False)
    index = json.loads((cp / "checkpoint.json").read_text())
    entry = next(f for f in index["files"] if f["relpath"].endswith(MODEL))
    assert entry["patch"] and entry["original"]
    assert {f["code"]: f["origin"] for f in entry["findings"]} == {"DBG101": "injected", "DBG104": "injected"}

    install(venv, house, "--upgrade", "toypkg==1.1")
    assert model.read_text() == VERSIONS["1.1"][MODEL]  # the upgrade wiped the edit
    auto = Path(env["DRIFTSCAN_CHECKPOINT_DIR"])
    listing = lambda: set(os.listdir(auto)) if auto.exists() else set()
    before_auto = listing()

    # Dry run: says what it would do, writes nothing (neither the file nor a checkpoint).
    untouched = snapshot(model)
    proc = cli("reapply", str(cp), env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if MODEL in ln)
    assert "would merge" in line and "1.0 → 1.1" in line, proc.stdout
    assert "dry run" in proc.stdout
    assert snapshot(model) == untouched
    assert listing() == before_auto

    # --yes --keep-findings: a checkpoint of the current state first, then v1.1 with all of the user's hunks.
    report = reapply_api(cp, yes=True, keep_findings=True)
    assert report["dry_run"] is False
    assert report["checkpoint"] and Path(report["checkpoint"]).parent == auto
    assert (Path(report["checkpoint"]) / "checkpoint.json").is_file()
    item = next(f for f in report["files"] if f["relpath"].endswith(MODEL))
    assert (item["action"], item["status"], item["version_then"], item["version_now"]) == \
        ("merge", "applied", "1.0", "1.1")
    assert model.read_text() == edit_model(VERSIONS["1.1"][MODEL])
    assert 'return "tail 1.1"' in model.read_text()  # the upgrade's own change is kept
    # Every finding written back is listed.
    assert {x["code"] for x in item["written_findings"]} == {"DBG101", "DBG104"}, item

    # A fresh install of 1.0 (the checkpoint's own version), then the default: debug code left out.
    install(venv, house, "--force-reinstall", "--no-deps", "toypkg==1.0")
    assert model.read_text() == VERSIONS["1.0"][MODEL]
    code, report = reapply(str(cp), "--yes", env=env)
    assert code == 0, report
    item = next(f for f in report["files"] if f["relpath"].endswith(MODEL))
    assert (item["action"], item["status"]) == ("apply", "applied")
    assert item["hunks"] == 4 and item["dropped"] == 2  # the debug block and the flag only it used
    text = model.read_text()
    assert text == edit_kept(VERSIONS["1.0"][MODEL])
    assert "_finite" in text and "int(v)" in text
    assert "torch.save" not in text and "_dumped_once" not in text

    proc = cli("audit", "--venv", str(venv), "--wheels", str(house), "--format", "json", env=env)
    assert proc.returncode == EXIT_DRIFT, proc.stderr
    audit = json.loads(proc.stdout)
    # The added files were never removed (no reinstall removes a file RECORD does not list).
    assert sorted((d["relpath"], d["kind"]) for d in audit["drifts"]) == \
        sorted([(NOTES, "added"), (PROBE, "added"), (MODEL, "modified")])
    drift = next(d for d in audit["drifts"] if d["relpath"] == MODEL)
    assert drift["pristine"] is not None  # compared with the original: origins are known
    assert [f for f in drift["findings"] if f["origin"] != "upstream"] == []


def test_conflict_is_reported_and_nothing_is_written(tmp_path_factory, house, env, shared_checkpoint):
    cp, rel = shared_checkpoint
    venv, site = fresh(tmp_path_factory, house, "1.2", "reapply-conflict")
    model = site / MODEL
    before = snapshot(model)

    code, report = reapply(str(cp), "--venv", str(venv), env=env)
    assert code & EXIT_DRIFT, report
    assert not code & EXIT_INCOMPLETE, report
    item = by_relpath(report)[rel["model"]]
    assert (item["action"], item["status"]) == ("merge", "conflict")
    assert item["version_then"] == "1.0" and item["version_now"] == "1.2"
    assert len(item["conflicts"]) == 1, item
    conflict = item["conflicts"][0]
    assert conflict["hunk"] == 1  # the helper hunk, the first of the patch
    patch = (cp / "patches" / (rel["model"] + ".patch")).read_text()
    first_hunk = next(ln for ln in patch.splitlines() if ln.startswith("@@"))
    assert first_hunk.startswith(f"@@ -{conflict['base_start']},")
    assert "changed line" in conflict["reason"]
    assert model.read_bytes() == before[0]

    report = reapply_api(cp, venv, yes=True)
    assert by_relpath(report)[rel["model"]]["status"] == "conflict"
    assert snapshot(model) == before  # byte for byte, and not even rewritten
    # The file without a conflict (util.py is the same in 1.2) is still re-applied.
    assert by_relpath(report)[rel["util"]]["status"] == "applied"
    assert (site / UTIL).read_text() == edit_util(VERSIONS["1.2"][UTIL])


def test_conflict_hunk_numbers_are_the_patch_s_with_exclude_findings(tmp_path_factory, house, env,
                                                                    shared_checkpoint):
    """1.3 changes the line of the checksum hunk, the 4th of the patch (after the two debug hunks)."""
    cp, rel = shared_checkpoint
    venv, site = fresh(tmp_path_factory, house, "1.3", "reapply-numbering")
    patch = (cp / "patches" / (rel["model"] + ".patch")).read_text()
    headers = [ln for ln in patch.splitlines() if ln.startswith("@@")]
    assert len(headers) == 4
    for args in ({"keep_findings": True}, {}):
        item = by_relpath(reapply_api(cp, venv, **args))[rel["model"]]
        assert item["status"] == "conflict", (args, item)
        assert [(c["hunk"], c["base_start"]) for c in item["conflicts"]] == \
            [(4, int(headers[3].split()[1].split(",")[0][1:]))], (args, item["conflicts"])
    assert (site / MODEL).read_text() == VERSIONS["1.3"][MODEL]


def test_added_files_are_recreated_and_debug_ones_left_out(tmp_path_factory, house, env, shared_checkpoint):
    cp, rel = shared_checkpoint
    venv, site = fresh(tmp_path_factory, house, "1.0", "reapply-added")
    report = reapply_api(cp, venv, yes=True)
    files = by_relpath(report)
    assert (files[rel["notes"]]["action"], files[rel["notes"]]["status"]) == ("recreate", "applied")
    assert (site / NOTES).read_text() == NOTES_SOURCE
    assert os.stat(site / NOTES).st_mode & 0o777 == 0o600  # the mode it had
    assert (files[rel["probe"]]["action"], files[rel["probe"]]["status"]) == ("recreate", "skipped")
    assert files[rel["probe"]]["excluded_debug"] is True  # left out on purpose: not counted as undone
    assert not (site / PROBE).exists()
    assert (site / MODEL).read_text() == edit_kept(VERSIONS["1.0"][MODEL])

    # Again with --keep-findings: the probe comes back, the notes are already there, and
    # model.py is no longer the original (it has the kept hunks): not touched.
    report = reapply_api(cp, venv, keep_findings=True, yes=True)
    files = by_relpath(report)
    assert files[rel["probe"]]["status"] == "applied" and (site / PROBE).read_text() == PROBE_SOURCE
    assert [x["code"] for x in files[rel["probe"]]["written_findings"]] == ["DBG101"]
    assert files[rel["notes"]]["status"] == "already"
    assert files[rel["util"]]["status"] == "already"
    assert files[rel["model"]]["status"] == "conflict" and "not the original" in files[rel["model"]]["reason"]
    assert (site / MODEL).read_text() == edit_kept(VERSIONS["1.0"][MODEL])


def test_only_limits_to_that_file(tmp_path_factory, house, env, shared_checkpoint):
    cp, rel = shared_checkpoint
    venv, site = fresh(tmp_path_factory, house, "1.0", "reapply-only")
    report = reapply_api(cp, venv, only=[rel["util"]], yes=True)
    assert [f["relpath"] for f in report["files"]] == [rel["util"]]
    assert report["files"][0]["status"] == "applied"
    assert (site / UTIL).read_text() == edit_util(VERSIONS["1.0"][UTIL])
    assert (site / MODEL).read_text() == VERSIONS["1.0"][MODEL]


def test_hostile_relpaths_fail_and_nothing_is_written_outside(tmp_path, tmp_path_factory, house, env,
                                                             shared_checkpoint):
    cp, rel = shared_checkpoint
    venv, site = fresh(tmp_path_factory, house, "1.0", "reapply-hostile")
    outside = tmp_path / "outside"
    outside.mkdir()
    (site / "toypkg" / "out").symlink_to(outside)  # a directory link leading out of the venv
    crafted = tmp_path / "cp"
    shutil.copytree(cp, crafted)
    index = json.loads((crafted / "checkpoint.json").read_text())
    model_entry = next(f for f in index["files"] if f["relpath"] == rel["model"])
    climbing = os.path.relpath(outside / "evil.py", venv).replace(os.sep, "/")  # ../../…/outside/evil.py
    assert climbing.startswith("../")
    linked = rel["model"].rsplit("/", 1)[0] + "/out/linked.py"
    hostile = {"../../../../tmp/evil": "patch", climbing: "patch", str(outside / "absolute.py"): "patch",
               linked: "added"}
    for relpath, how in hostile.items():
        evil = {**model_entry, "relpath": relpath}
        if how == "added":
            evil.update(kind="added", patch=None, original=None, findings=[])
        index["files"].append(evil)
    # A harmless relpath whose relpath_hex (the real bytes of a non-UTF-8 name) climbs out, or is not hex.
    by_hex = {"toypkg/hex-climbs.py": os.fsencode(climbing.replace("evil.py", "hex.py")).hex(),
              "toypkg/hex-malformed.py": "zz"}
    for relpath, value in by_hex.items():
        index["files"].append({**model_entry, "relpath": relpath, "relpath_hex": value})
    (crafted / "checkpoint.json").write_text(json.dumps(index))
    existed = os.path.lexists("/tmp/evil")
    before = Path("/tmp/evil").read_bytes() if existed and os.path.isfile("/tmp/evil") else None

    code, report = reapply(str(crafted), "--venv", str(venv), "--keep-findings", "--yes", env=env)
    assert code & EXIT_INCOMPLETE, report
    files = by_relpath(report)
    for relpath in hostile:
        assert files[relpath]["status"] == "failed", files[relpath]
        assert files[relpath]["reason"], files[relpath]
    for relpath in by_hex:
        assert files[relpath]["status"] in ("failed", "skipped"), files[relpath]
    assert "not a path inside the environment" in files["../../../../tmp/evil"]["reason"]
    assert "outside the environment" in files[linked]["reason"]
    assert list(outside.iterdir()) == []
    assert os.path.lexists("/tmp/evil") == existed
    if before is not None:
        assert Path("/tmp/evil").read_bytes() == before
    # The genuine entries are still re-applied.
    assert files[rel["model"]]["status"] == "applied"
    assert (site / MODEL).read_text() == edit_model(VERSIONS["1.0"][MODEL])


def test_hostile_saved_paths_read_nothing_outside_the_checkpoint(tmp_path, tmp_path_factory, house, env,
                                                                 shared_checkpoint):
    """An index whose files/ or originals/ name climbs out of the checkpoint: refused (the entry,
    or the whole run with one error line), and nothing is written."""
    cp, rel = shared_checkpoint
    venv, site = fresh(tmp_path_factory, house, "1.0", "reapply-hostile-saved")
    secret = tmp_path / "secret.py"
    secret.write_text(edit_model(VERSIONS["1.0"][MODEL]) + "SECRET = 1\n")
    crafted = tmp_path / "cp"
    shutil.copytree(cp, crafted)
    index = json.loads((crafted / "checkpoint.json").read_text())
    entry = next(f for f in index["files"] if f["relpath"] == rel["model"])
    entry["content"] = "files/../" + os.path.relpath(secret, crafted).replace(os.sep, "/")
    (crafted / "checkpoint.json").write_text(json.dumps(index))
    before = {p: snapshot(site / p) for p in (MODEL, UTIL)}
    proc = cli("reapply", str(crafted), "--venv", str(venv), "--yes", "--format", "json", env=env)
    assert proc.returncode & EXIT_INCOMPLETE, proc.stdout + proc.stderr
    if proc.stdout:
        item = by_relpath(json.loads(proc.stdout))[rel["model"]]
        assert item["status"] == "failed" and item["reason"], item
    else:
        assert "outside the checkpoint" in proc.stderr, proc.stderr
        assert {p: snapshot(site / p) for p in (MODEL, UTIL)} == before
    assert "SECRET" not in (site / MODEL).read_text()

    # The saved copy itself a symlink to a file outside the checkpoint: not followed.
    linked = tmp_path / "cp-linked"
    shutil.copytree(cp, linked)
    index = json.loads((linked / "checkpoint.json").read_text())
    entry = next(f for f in index["files"] if f["relpath"] == rel["model"])
    (linked / entry["content"]).unlink()
    (linked / entry["content"]).symlink_to(secret)
    item = by_relpath(reapply_api(linked, venv, yes=True))[rel["model"]]
    assert item["status"] == "failed" and item["reason"], item
    assert "SECRET" not in (site / MODEL).read_text()


def test_a_file_changed_since_the_reinstall_is_not_touched(tmp_path_factory, house, env, shared_checkpoint):
    cp, rel = shared_checkpoint
    venv, site = fresh(tmp_path_factory, house, "1.1", "reapply-changed")
    model = site / MODEL
    model.write_text(model.read_text() + "# a new local change\n")
    before = snapshot(model)
    report = reapply_api(cp, venv, yes=True)
    item = by_relpath(report)[rel["model"]]
    assert item["status"] in ("conflict", "failed", "skipped"), item
    assert "not the original" in item["reason"] and "not touched" in item["reason"], item
    assert snapshot(model) == before
    assert by_relpath(report)[rel["util"]]["status"] == "applied"


def test_a_modified_file_saved_without_its_original_is_not_passed_over(tmp_path, tmp_path_factory, house, env):
    """No source of originals when the checkpoint was taken (no --wheels, empty caches, no
    direct_url.json): the file has no patch, only its copy. reapply must still account for it
    (re-apply it, or say why not), never answer "nothing to write" with exit 0."""
    venv, site = fresh(tmp_path_factory, house, "1.0", "reapply-no-original")
    (site / MODEL).write_text(edit_model(VERSIONS["1.0"][MODEL]))
    written = api.checkpoint(str(tmp_path / "cp"), str(venv))
    [entry] = [f for f in written.index.files if f.relpath.endswith(MODEL)]
    assert entry.content and entry.patch is None and entry.original is None
    install(venv, house, "--force-reinstall", "--no-deps", "toypkg==1.0")
    assert (site / MODEL).read_text() == VERSIONS["1.0"][MODEL]

    code, report = reapply(str(tmp_path / "cp"), env=env)
    listed = [f for f in report["files"] if f["relpath"] == entry.relpath]
    assert listed, f"reapply does not mention {entry.relpath} at all (exit {code}): {report}"
    item = listed[0]
    if item["status"] != "planned":
        assert item["reason"] and code != 0, (code, item)


def test_a_binary_file_comes_back_from_its_saved_copy(tmp_path_factory, house, env, shared_checkpoint):
    """docs/checkpoint.md: binary files come back from their saved copy over the very original
    they were changed from (1.1 ships the same weights.bin as 1.0)."""
    cp, rel = shared_checkpoint
    index = json.loads((cp / "checkpoint.json").read_text())
    entry = next(f for f in index["files"] if f["relpath"] == rel["weights"])
    assert entry["content"] and entry["original"] and entry["patch"] is None  # binary: a copy, no patch
    venv, site = fresh(tmp_path_factory, house, "1.1", "reapply-binary")
    code, report = reapply(str(cp), "--venv", str(venv), "--yes", env=env)
    listed = by_relpath(report).get(rel["weights"])
    assert listed is not None, f"reapply passes over {rel['weights']} in silence (exit {code}): {report['files']}"
    assert listed["status"] == "applied", listed
    assert (site / WEIGHTS).read_bytes() == edit_weights(WEIGHTS_DATA)


def test_uv_reinstall_then_reapply(tmp_path, house, env, monkeypatch):
    cache = tmp_path / "uv-cache"  # private, on the venv's filesystem: hard links
    monkeypatch.setenv("UV_CACHE_DIR", str(cache))
    venv = venvs.make_uv_venv(tmp_path / "vuv", cache)
    venvs.uv_install(venv, cache, "--no-index", "--find-links", str(house), "toypkg==1.0")
    model = site_of(venv) / MODEL
    assert os.stat(model).st_nlink >= 2  # linked from uv's cache
    original = model.read_text()
    edited = edit_model(original)
    replace_by_rename(model, edited)  # a new inode: uv's cache copy stays clean
    written = api.checkpoint(str(tmp_path / "cp"), str(venv), uv_cache=str(cache))
    assert written.problems == []
    assert [d.pristine["source"] for d in written.index.distributions if d.pristine] == ["uv-cache"]

    venvs.uv_install(venv, cache, "--no-index", "--find-links", str(house), "--reinstall", "toypkg==1.0")
    assert model.read_text() == original  # relinked from the clean cache: the edit is gone
    cached = list((cache / "archive-v0").glob(f"*/{MODEL}"))
    assert cached and all(p.read_text() == original for p in cached)

    report = reapply_api(tmp_path / "cp", keep_findings=True, yes=True)
    item = next(f for f in report["files"] if f["relpath"].endswith(MODEL))
    assert (item["action"], item["status"]) == ("apply", "applied"), item
    assert model.read_text() == edited
    assert os.stat(model).st_nlink == 1  # written as a new file, not through the link
    assert all(p.read_text() == original for p in cached)  # the reapply did not poison the cache


def test_a_merge_that_would_not_parse_is_failed_and_not_written(tmp_path, tmp_path_factory, house, env,
                                                                shared_checkpoint):
    cp, rel = shared_checkpoint
    crafted = tmp_path / "cp"
    shutil.copytree(cp, crafted)
    index = json.loads((crafted / "checkpoint.json").read_text())
    entry = next(f for f in index["files"] if f["relpath"] == rel["model"])
    saved = crafted / entry["content"]
    # The saved content parses no more: its helper hunk leaves a bracket open.
    saved.write_text(saved.read_text().replace("for v in _finite(values)]", "for v in _finite(values)"))
    entry["hash_after"] = "sha256=" + hashlib.sha256(saved.read_bytes()).hexdigest()  # consistent, as written
    (crafted / "checkpoint.json").write_text(json.dumps(index))
    venv, site = fresh(tmp_path_factory, house, "1.1", "reapply-noparse")
    model = site / MODEL
    before = snapshot(model)

    # By default the rules cannot inspect it: refused; with --keep-findings the merge does not parse.
    item = by_relpath(reapply_api(crafted, venv))[rel["model"]]
    assert item["status"] == "refused" and "cannot inspect" in item["reason"], item
    report = reapply_api(crafted, venv, keep_findings=True)
    item = by_relpath(report)[rel["model"]]
    assert (item["action"], item["status"]) == ("merge", "failed"), item
    assert "does not parse" in item["reason"]

    code, report = reapply(str(crafted), "--venv", str(venv), "--keep-findings", "--yes", env=env)
    assert by_relpath(report)[rel["model"]]["status"] == "failed"
    assert code & EXIT_INCOMPLETE
    assert snapshot(model) == before
    assert by_relpath(report)[rel["util"]]["status"] == "applied"
