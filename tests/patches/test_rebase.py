"""driftscan.patches.rebase: a patch for toy 1.0 carried onto toy 2.0, with the releases given as small
in-memory wheels (the interface of pristine/release.py's ReleaseWheel); the work directory and
--continue / --abort, hostile work directories refused in one line."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from fixtures.patchfiles import patch_text
from fixtures.wheels import record_hash

from driftscan.core.errors import DriftscanError
from driftscan.patches.manifest import Entry, from_directory
from driftscan.patches.patchfile import file_patches, parse
from driftscan.patches.rebase import (FileState, HunkState, PatchRebase, RebaseError, RebaseState, abort_rebase,
                                      continue_rebase, exit_status, find_workdir, rebase)
from driftscan.pristine.kept import keep
from fixtures.releases import FakeRelease, releases_of, write_patch


def numbered(prefix: str, count: int = 40) -> list[str]:
    return [f"{prefix}{i} = {i}\n" for i in range(1, count + 1)]


# toy 1.0's core.py; the patch changes lines 3 (clean), 20 (2.0 makes the same fix) and 35 (2.0 changes it too)
V1 = numbered("a")
OURS = list(V1)
OURS[2] = "a3 = 'fixed'\n"
OURS[19] = "a20 = 'same fix'\n"
V2 = list(V1)
V2[19] = "a20 = 'same fix'\n"
V2[30] = "a31 = 'upstream'\n"
CONFLICTING = list(OURS)
CONFLICTING[34] = "a35 = 'ours'\n"
V2_CONFLICT = list(V2)
V2_CONFLICT[34] = "a35 = 'theirs'\n"
j = "".join


def setup(tmp_path, ours=OURS, v2=V2, extra1=None, extra2=None, patch_files=None):
    v1_files = {"toy/core.py": j(V1), **(extra1 or {})}
    v2_files = {"toy/core.py": j(v2), **(extra2 or {})}
    files = patch_files if patch_files is not None else {"toy/core.py": (j(V1), j(ours))}
    write_patch(tmp_path / "patches", files)
    return (from_directory(str(tmp_path / "patches")),
            releases_of(FakeRelease("toy", "1.0", v1_files), FakeRelease("toy", "2.0", v2_files)))


def test_a_clean_rebase_writes_the_new_patch_with_the_new_record_hashes(tmp_path):
    entries, releases = setup(tmp_path)
    result = rebase(entries, "toy", "2.0", releases)
    assert result.state is RebaseState.WRITTEN and exit_status(result) == 0
    (f,) = result.files
    assert f.state is FileState.CARRIED and f.base_from == "release"
    assert [h.state for h in f.hunks] == [HunkState.APPLIED, HunkState.ALREADY]
    out = tmp_path / "patches" / "toy@2.0.patch"
    assert result.output == str(out)
    text = out.read_text()
    patch = parse(text)
    assert patch.header.version == "2.0"
    assert patch.header.description.endswith("\nRebased from 1.0 by driftscan patch rebase")
    assert patch.header.files[0].original == record_hash(j(V2).encode())
    (fp,) = file_patches(patch)
    from driftscan.formats.patch import apply_hunks
    expected = list(V2)
    expected[2] = "a3 = 'fixed'\n"
    assert apply_hunks(j(V2), fp.hunks, allow_offset=False) == j(expected)
    assert (tmp_path / "patches" / "toy@1.0.patch").exists()  # the old patch stays
    assert result.manifest_line and result.sha256 in result.manifest_line and '"==2.0"' in result.manifest_line
    # The same rebase again: the same patch is there.
    again = rebase(from_directory(str(tmp_path / "patches")), "toy", "2.0", releases)
    assert again.state is RebaseState.UNCHANGED and exit_status(again) == 0


def test_every_change_already_upstream_writes_nothing(tmp_path):
    entries, releases = setup(tmp_path, v2=OURS)
    result = rebase(entries, "toy", "2.0", releases)
    assert result.state is RebaseState.OBSOLETE and exit_status(result) == 0
    assert result.files[0].state is FileState.OBSOLETE
    assert not (tmp_path / "patches" / "toy@2.0.patch").exists()


def test_a_conflict_makes_a_work_directory_with_markers_and_state(tmp_path):
    entries, releases = setup(tmp_path, ours=CONFLICTING, v2=V2_CONFLICT,
                              extra1={"toy/util.py": "u = 1\nw = 0\nx = 0\n"},
                              extra2={"toy/util.py": "u = 1\nw = 0\nx = 0\nv = 2\n"})
    # a second file, clean: it is in files/ merged, without markers
    write_patch(tmp_path / "patches", {"toy/core.py": (j(V1), j(CONFLICTING)), "toy/util.py": ("u = 1\nw = 0\nx = 0\n",
                                                                                 "u = 0\nw = 0\nx = 0\n")})
    result = rebase(from_directory(str(tmp_path / "patches")), "toy", "2.0", releases)
    assert result.state is RebaseState.CONFLICT and exit_status(result) == 1
    work = tmp_path / "patches" / "toy@2.0.rebase"
    assert result.workdir == str(work)
    core = next(f for f in result.files if f.path == "toy/core.py")
    assert core.state is FileState.CONFLICT
    states = [h.state for h in core.hunks]
    assert HunkState.CONFLICT in states and HunkState.ALREADY in states
    conflict = next(h for h in core.hunks if h.state is HunkState.CONFLICT)
    assert "a35 = 'ours'" in conflict.ours and "a35 = 'theirs'" in conflict.theirs and conflict.reason
    merged = (work / "files" / "toy" / "core.py").read_text()
    assert "<<<<<<< toy 1.0 + patch\na35 = 'ours'\n||||||| toy 1.0\na35 = 35\n=======\na35 = 'theirs'\n>>>>>>> toy 2.0\n" in merged
    assert "a3 = 'fixed'" in merged and "a31 = 'upstream'" in merged
    assert (work / "files" / "toy" / "util.py").read_text() == "u = 0\nw = 0\nx = 0\nv = 2\n"
    assert (work / "upstream" / "toy" / "core.py").read_text() == j(V2_CONFLICT)
    state = json.loads((work / "state.json").read_text())
    assert state["format"] == 1 and (state["distribution"], state["from"], state["to"]) == ("toy", "1.0", "2.0")
    assert {f["rel"]: f["conflicted"] for f in state["files"]} == {"toy/core.py": True, "toy/util.py": False}
    assert not (tmp_path / "patches" / "toy@2.0.patch").exists()

    # --continue refuses while a marker is left, naming the file and line
    refused = continue_rebase(str(work))
    assert refused.state is RebaseState.MARKERS and exit_status(refused) == 1
    left = next(f for f in refused.files if f.path == "toy/core.py")
    assert left.marker_line == merged.split("\n").index("<<<<<<< toy 1.0 + patch") + 1
    assert work.exists()

    # resolved: ours and theirs together
    resolved = merged.replace("<<<<<<< toy 1.0 + patch\na35 = 'ours'\n||||||| toy 1.0\na35 = 35\n=======\n"
                              "a35 = 'theirs'\n>>>>>>> toy 2.0\n", "a35 = 'ours and theirs'\n")
    (work / "files" / "toy" / "core.py").write_text(resolved)
    done = continue_rebase(str(work))
    assert done.state is RebaseState.WRITTEN and exit_status(done) == 0 and done.workdir_removed
    assert not work.exists()
    patch = parse((tmp_path / "patches" / "toy@2.0.patch").read_text())
    assert {f.path: f.original for f in patch.header.files} == {
        "toy/core.py": record_hash(j(V2_CONFLICT).encode()), "toy/util.py": record_hash(b"u = 1\nw = 0\nx = 0\nv = 2\n")}
    from driftscan.formats.patch import apply_hunks
    core_patch = next(fp for fp in file_patches(patch) if fp.path == "toy/core.py")
    assert apply_hunks(j(V2_CONFLICT), core_patch.hunks, allow_offset=False) == resolved
    assert done.manifest_line and done.sha256


def test_abort_removes_the_work_directory_and_an_existing_one_is_refused(tmp_path):
    entries, releases = setup(tmp_path, ours=CONFLICTING, v2=V2_CONFLICT)
    assert rebase(entries, "toy", "2.0", releases).state is RebaseState.CONFLICT
    again = rebase(entries, "toy", "2.0", releases)
    assert again.state is RebaseState.REFUSED and exit_status(again) == 2
    assert "--continue" in again.message and "--abort" in again.message
    work = tmp_path / "patches" / "toy@2.0.rebase"
    assert find_workdir(str(tmp_path / "patches")) == str(work)
    aborted = abort_rebase(str(work))
    assert aborted.state is RebaseState.ABORTED and exit_status(aborted) == 0 and not work.exists()
    with pytest.raises(RebaseError, match="no rebase under way"):
        find_workdir(str(tmp_path / "patches"))
    assert (tmp_path / "patches" / "toy@1.0.patch").exists()


def test_two_work_directories_need_a_name(tmp_path):
    (tmp_path / "a@1.rebase").mkdir()
    (tmp_path / "b@1.rebase").mkdir()
    with pytest.raises(RebaseError, match="2 rebases under way.*name one"):
        find_workdir(str(tmp_path))


def test_from_chooses_among_two_patches_else_the_highest_below_to(tmp_path):
    v15 = list(V1)
    v15[0] = "a1 = 'one five'\n"
    write_patch(tmp_path / "patches", {"toy/core.py": (j(V1), j(OURS))}, "1.0")
    write_patch(tmp_path / "patches", {"toy/core.py": (j(V1), j(v15))}, "1.5")
    write_patch(tmp_path / "patches", {"toy/core.py": (j(V1), j(v15))}, "3.0")
    entries = from_directory(str(tmp_path / "patches"))
    asked: list = []
    releases = releases_of(FakeRelease("toy", "1.0", {"toy/core.py": j(V1)}),
                           FakeRelease("toy", "1.5", {"toy/core.py": j(V1)}),
                           FakeRelease("toy", "2.0", {"toy/core.py": j(V2)}), asked=asked)
    chosen = rebase(entries, "toy", "2.0", releases)
    assert chosen.from_version == "1.5" and chosen.patch.endswith("toy@1.5.patch")
    assert ("toy", "1.5") in asked
    os.unlink(chosen.output)
    picked = rebase(entries, "toy", "2.0", releases, from_version="1.0")
    assert picked.state is RebaseState.WRITTEN and picked.from_version == "1.0"
    missing = rebase(entries, "toy", "2.0", releases, from_version="0.9")
    assert missing.state is RebaseState.REFUSED and "no patch for toy 0.9" in missing.message


def test_no_wheel_for_the_new_version_says_how_to_get_one(tmp_path):
    entries, _ = setup(tmp_path)
    result = rebase(entries, "toy", "2.0", releases_of(FakeRelease("toy", "1.0", {"toy/core.py": j(V1)})))
    assert result.state is RebaseState.REFUSED and exit_status(result) == 2
    assert result.message == "no wheel of toy 2.0 found"
    assert result.notes[-1] == "pip download --no-deps --only-binary :all: toy==2.0 -d DIR, then --wheels DIR"


def test_no_verified_original_is_refused(tmp_path):
    entries, _ = setup(tmp_path)
    releases = releases_of(FakeRelease("toy", "1.0", {"toy/core.py": "something else\n"}),
                           FakeRelease("toy", "2.0", {"toy/core.py": j(V2)}))
    result = rebase(entries, "toy", "2.0", releases)
    assert result.state is RebaseState.REFUSED and "toy/core.py: no original of toy 1.0" in result.message


def test_the_kept_original_is_used_before_the_old_wheel(tmp_path):
    entries, _ = setup(tmp_path)
    assert keep(record_hash(j(V1).encode()), j(V1).encode())
    asked: list = []
    result = rebase(entries, "toy", "2.0", releases_of(FakeRelease("toy", "2.0", {"toy/core.py": j(V2)}), asked=asked))
    assert result.state is RebaseState.WRITTEN and result.files[0].base_from == "kept"
    assert asked == [("toy", "2.0")]  # the old version's wheel was not needed


def test_a_patch_that_does_not_apply_to_its_own_base_conflicts(tmp_path):
    body = patch_text("toy", "1.0", {"toy/core.py": ("x = 1\ny = 2\n", "x = 1\ny = 3\n")})
    # The header names V1's hash: the hunks were made on another text.
    body = body.replace(record_hash(b"x = 1\ny = 2\n"), record_hash(j(V1).encode()))
    os.makedirs(tmp_path / "patches")
    (tmp_path / "patches" / "toy@1.0.patch").write_text(body)
    releases = releases_of(FakeRelease("toy", "1.0", {"toy/core.py": j(V1)}),
                           FakeRelease("toy", "2.0", {"toy/core.py": j(V2)}))
    result = rebase(from_directory(str(tmp_path / "patches")), "toy", "2.0", releases)
    assert result.state is RebaseState.CONFLICT
    (f,) = result.files
    assert f.state is FileState.CONFLICT and f.message.startswith("the patch does not apply to its own base")
    assert f.hunks[0].state is HunkState.CONFLICT


def test_new_and_deleted_files(tmp_path):
    files = {"toy/new.py": (None, "n = 1\n"), "toy/gone.py": ("g = 1\n", None), "toy/old.py": ("o = 1\n", None),
             "toy/same.py": (None, "s = 1\n")}
    write_patch(tmp_path / "patches", files)
    releases = releases_of(FakeRelease("toy", "1.0", {"toy/gone.py": "g = 1\n", "toy/old.py": "o = 1\n"}),
                           FakeRelease("toy", "2.0", {"toy/gone.py": "g = 1\n", "toy/same.py": "s = 1\n"}))
    result = rebase(from_directory(str(tmp_path / "patches")), "toy", "2.0", releases)
    assert result.state is RebaseState.WRITTEN
    assert {f.path: f.state for f in result.files} == {"toy/new.py": FileState.CARRIED, "toy/gone.py": FileState.CARRIED,
                                                       "toy/old.py": FileState.OBSOLETE, "toy/same.py": FileState.OBSOLETE}
    patch = parse((tmp_path / "patches" / "toy@2.0.patch").read_text())
    assert {f.path: f.original for f in patch.header.files} == {"toy/gone.py": record_hash(b"g = 1\n"), "toy/new.py": None}


def test_a_modified_file_the_new_version_does_not_have_conflicts(tmp_path):
    entries, _ = setup(tmp_path)
    releases = releases_of(FakeRelease("toy", "1.0", {"toy/core.py": j(V1)}), FakeRelease("toy", "2.0", {}))
    result = rebase(entries, "toy", "2.0", releases)
    assert result.state is RebaseState.CONFLICT
    assert result.files[0].message == "2.0 has no such file"
    assert not (tmp_path / "patches" / "toy@2.0.rebase" / "upstream").exists()


def test_a_different_file_at_the_new_name_is_kept_unless_force(tmp_path):
    entries, releases = setup(tmp_path)
    (tmp_path / "patches" / "toy@2.0.patch").write_text("mine\n")
    kept = rebase(from_directory(str(tmp_path / "patches")), "toy", "2.0", releases)
    assert kept.state is RebaseState.REFUSED and "kept (--force replaces it)" in kept.message
    assert (tmp_path / "patches" / "toy@2.0.patch").read_text() == "mine\n"
    forced = rebase(from_directory(str(tmp_path / "patches")), "toy", "2.0", releases, force=True)
    assert forced.state is RebaseState.WRITTEN


def test_a_pinned_sha256_that_does_not_match_is_refused(tmp_path):
    entries, releases = setup(tmp_path)
    (entry,) = entries
    pinned = Entry(path=entry.path, shown=entry.shown, distribution="toy", specifier="==1.0", sha256="0" * 64)
    result = rebase([pinned], "toy", "2.0", releases)
    assert result.state is RebaseState.REFUSED and "sha256" in result.message


def test_bad_names_and_versions_are_refused(tmp_path):
    entries, releases = setup(tmp_path)
    assert "not a version" in rebase(entries, "toy", "../x", releases).message
    assert "no patch for other" in rebase(entries, "other", "2.0", releases).message


def test_the_result_is_the_published_model():
    result = PatchRebase(state=RebaseState.REFUSED, message="x")
    assert PatchRebase.model_validate_json(result.model_dump_json()) == result


# ------------------------------------------------------------------------------------- hostile work dirs


@pytest.fixture
def work(tmp_path):
    entries, releases = setup(tmp_path, ours=CONFLICTING, v2=V2_CONFLICT)
    assert rebase(entries, "toy", "2.0", releases).state is RebaseState.CONFLICT
    return tmp_path / "patches" / "toy@2.0.rebase"


def _edit_state(work, change):
    state = json.loads((work / "state.json").read_text())
    change(state)
    (work / "state.json").write_text(json.dumps(state))


def _outside_untouched(tmp_path):
    return sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if "toy@2.0.rebase" not in str(p))


@pytest.mark.parametrize("rel, why", [("../x", "not plainly below the install root"),
                                      ("/etc/passwd", "an absolute path"),
                                      ("toy.dist-info/RECORD", "dist-info")])
def test_a_hostile_path_in_state_json_is_refused(work, tmp_path, rel, why):
    _edit_state(work, lambda s: s["files"][0].update(rel=rel))
    before = _outside_untouched(tmp_path)
    result = continue_rebase(str(work))
    assert result.state is RebaseState.REFUSED and exit_status(result) == 2
    assert why in result.message and "\n" not in result.message
    assert _outside_untouched(tmp_path) == before and work.exists()


def test_a_symlinked_files_entry_is_refused(work, tmp_path):
    secret = tmp_path / "secret.py"
    secret.write_text("secret = 1\n")
    target = work / "files" / "toy" / "core.py"
    target.unlink()
    target.symlink_to(secret)
    result = continue_rebase(str(work))
    assert result.state is RebaseState.REFUSED and "symlink" in result.message and "\n" not in result.message
    assert not (tmp_path / "patches" / "toy@2.0.patch").exists()


def test_a_symlinked_files_directory_is_refused(work, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    shutil.move(str(work / "files"), elsewhere)
    (work / "files").symlink_to(elsewhere)
    result = continue_rebase(str(work))
    assert result.state is RebaseState.REFUSED and "symlink" in result.message


def test_an_edited_upstream_copy_is_refused(work, tmp_path):
    up = work / "upstream" / "toy" / "core.py"
    up.write_text(up.read_text() + "planted = 1\n")
    (work / "files" / "toy" / "core.py").write_text(j(V2_CONFLICT))
    result = continue_rebase(str(work))
    assert result.state is RebaseState.REFUSED and "edited" in result.message and "\n" not in result.message
    assert not (tmp_path / "patches" / "toy@2.0.patch").exists()


def test_a_huge_state_json_is_refused(work):
    with open(work / "state.json", "w") as f:
        f.write('{"format": 1, "pad": "' + "x" * (2 << 20) + '"}')
    result = continue_rebase(str(work))
    assert result.state is RebaseState.REFUSED and "larger than" in result.message and "\n" not in result.message


@pytest.mark.parametrize("change, why", [
    (lambda s: s.update(format=2), "format"),
    (lambda s: s.update(output="/tmp/elsewhere/toy@2.0.patch"), "'output'"),
    (lambda s: s.update(to="3.0"), "the directory toy@2.0"),
    (lambda s: s.update(files="x"), "'files'"),
    (lambda s: s["files"][0].update(upstream="md5=abc"), "RECORD hash"),
    (lambda s: s["files"][0].update(conflicted="yes"), "'conflicted'"),
    (lambda s: s.update(patch_sha256="z"), "sha256"),
    (lambda s: s.clear(), "format"),
])
def test_a_malformed_state_is_refused(work, change, why):
    _edit_state(work, change)
    result = continue_rebase(str(work))
    assert result.state is RebaseState.REFUSED and why in result.message and "\n" not in result.message


def test_not_a_work_directory_is_refused_by_continue_and_abort(tmp_path):
    (tmp_path / "plain").mkdir()
    assert "not a rebase work directory" in continue_rebase(str(tmp_path / "plain")).message
    assert "not a rebase work directory" in abort_rebase(str(tmp_path / "plain")).message
    (tmp_path / "real@1.rebase").mkdir()
    (tmp_path / "link@1.rebase").symlink_to(tmp_path / "real@1.rebase")
    assert "not a directory" in abort_rebase(str(tmp_path / "link@1.rebase")).message
    assert (tmp_path / "real@1.rebase").exists()


def test_rebase_error_is_a_driftscan_error():
    assert issubclass(RebaseError, DriftscanError)


# ------------------------------------------------------------------------------------- text output

from driftscan.render.registry import OutputFormat, RenderOptions, render  # noqa: E402


def test_the_text_of_a_conflict_names_each_hunk_and_the_two_commands(tmp_path):
    entries, releases = setup(tmp_path, ours=CONFLICTING, v2=V2_CONFLICT)
    result = rebase(entries, "toy", "2.0", releases)
    text = render(result, OutputFormat.TEXT)
    work = tmp_path / "patches" / "toy@2.0.rebase"
    assert "  conflict  toy/core.py (modify: " in text
    assert "    conflict @@ " in text and "a35 = 'theirs'" in text
    assert f"driftscan patch rebase --continue {work}" in text and f"driftscan patch rebase --abort {work}" in text
    assert "toy@1.0.patch left in place" in text


def test_the_text_of_a_written_patch_gives_its_manifest_line_and_of_a_refusal_the_notes(tmp_path):
    entries, releases = setup(tmp_path)
    written = render(rebase(entries, "toy", "2.0", releases), OutputFormat.TEXT, RenderOptions(verbose=True))
    assert f"wrote {tmp_path / 'patches' / 'toy@2.0.patch'}" in written
    assert 'distribution = "toy", version = "==2.0", sha256 = ' in written
    assert "original from release" in written
    refused = render(rebase(entries, "toy", "3.0", releases), OutputFormat.TEXT)
    assert refused.startswith("refused   toy 1.0 -> 3.0: no wheel of toy 3.0 found\n")
    assert "  pip download --no-deps --only-binary :all: toy==3.0 -d DIR, then --wheels DIR\n" in refused
    assert refused.endswith("nothing written\n")
    assert json.loads(render(rebase(entries, "toy", "3.0", releases), OutputFormat.JSON))["state"] == "refused"


def test_continue_runs_from_another_directory_with_a_relative_output(tmp_path, monkeypatch):
    entries, releases = setup(tmp_path, ours=CONFLICTING, v2=V2_CONFLICT)
    monkeypatch.chdir(tmp_path)
    result = rebase(entries, "toy", "2.0", releases, output_dir="out")
    assert result.state is RebaseState.CONFLICT and result.workdir == str(tmp_path / "out" / "toy@2.0.rebase")
    work = tmp_path / "out" / "toy@2.0.rebase"
    (work / "files" / "toy" / "core.py").write_text(j(V2_CONFLICT))  # resolved: take 2.0's side everywhere
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    done = continue_rebase(str(work))
    assert done.state is RebaseState.OBSOLETE and not work.exists()
    assert not (tmp_path / "out" / "toy@2.0.patch").exists()


def test_an_output_inside_the_environment_named_is_refused(tmp_path):
    from fixtures.envtree import make_venv

    from driftscan.api import patch_rebase
    from driftscan.core.errors import ConfigError

    venv, site = make_venv(tmp_path / "venv")
    entries, _ = setup(tmp_path)
    with pytest.raises(ConfigError, match="inside the environment named"):
        patch_rebase("toy", "2.0", entries, output=str(site / "patches"), venv=str(venv))
    assert not (site / "patches").exists()
