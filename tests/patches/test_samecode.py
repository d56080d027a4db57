"""A patch's change that a new release makes in other words (reformatted, a trailing comma) is the
same code: patch rebase takes the release's text instead of leaving a conflict; a real difference,
a lost comment or a file that does not parse stays a conflict."""

from __future__ import annotations

import shutil

import pytest

from fixtures.releases import FakeRelease, releases_of, write_patch

from driftscan.formats.patch import Block, blocks, merge3_marked, merge3_parts, resolve
from driftscan.patches.manifest import from_directory
from driftscan.patches.rebase import FileState, HunkState, RebaseState, exit_status, rebase
from driftscan.patches.samecode import MAX_SOURCE, same_code

HEAD = "import errors\n\n\ndef fetch(retry):\n    return retry(\n        get,\n"
TAIL = "    )\n\n\ndef other():\n    return 1\n"
BASE = HEAD + "        fatal=(errors.NotFound,),\n" + TAIL
OURS = HEAD + "        fatal=(errors.NotFound, errors.Offline),\n" + TAIL
REFORMATTED = HEAD + "        fatal=(\n            errors.NotFound,\n            errors.Offline,\n        ),\n" + TAIL


def _parts(base: str, ours: str, theirs: str):
    parts = merge3_parts(base, ours, theirs)
    assert len(blocks(parts)) >= 1
    return parts


def test_the_same_fix_reformatted_is_the_same_code():
    parts = _parts(BASE, OURS, REFORMATTED)
    assert same_code(parts) == {0}
    assert resolve(parts, lambda i: False) == REFORMATTED


@pytest.mark.parametrize("theirs", [
    HEAD + "        fatal=(\n            errors.NotFound,\n            errors.Timeout,\n        ),\n" + TAIL,  # another fix
    HEAD + "        fatal=(\n            errors.NotFound,\n        ),\n" + TAIL,  # only reformatted
    HEAD + "        fatal=(errors.NotFound, errors.Offline\n" + TAIL,  # does not parse
])
def test_a_different_change_or_a_broken_file_stays_a_conflict(theirs):
    assert same_code(_parts(BASE, OURS, theirs)) == set()


def test_a_comment_the_patch_adds_is_not_lost_to_the_release_text():
    ours = HEAD + "        fatal=(errors.NotFound, errors.Offline),  # offline is fatal: keep\n" + TAIL
    assert same_code(_parts(BASE, ours, REFORMATTED)) == set()


def test_only_the_blocks_that_are_the_same_code_are_settled():
    base = BASE + "\n\nLIMIT = 1\n"
    ours = OURS + "\n\nLIMIT = 2\n"
    theirs = REFORMATTED + "\n\nLIMIT = 3\n"
    parts = _parts(base, ours, theirs)
    assert len(blocks(parts)) == 2 and same_code(parts) == {0}
    marked = merge3_marked(base, ours, theirs, ("ours", "base", "theirs"), settled={0})
    assert marked.conflicts == 1
    assert "errors.Offline,\n        ),\n" in marked.text and "<<<<<<< ours\nLIMIT = 2\n" in marked.text


def test_a_file_past_the_size_bound_is_not_parsed():
    pad = "# x\n" * (MAX_SOURCE // 4 + 1)
    assert same_code(_parts(pad + BASE, pad + OURS, pad + REFORMATTED)) == set()


def test_blocks_hold_each_sides_lines():
    (block,) = blocks(merge3_parts(BASE, OURS, REFORMATTED))
    assert isinstance(block, Block)
    assert block.base == ("        fatal=(errors.NotFound,),\n",)
    assert block.ours == ("        fatal=(errors.NotFound, errors.Offline),\n",)
    assert block.theirs[0] == "        fatal=(\n"


def test_rebase_calls_a_reformatted_upstream_fix_obsolete(tmp_path):
    write_patch(tmp_path / "patches", {"toy/net.py": (BASE, OURS)})
    releases = releases_of(FakeRelease("toy", "1.0", {"toy/net.py": BASE}),
                           FakeRelease("toy", "2.0", {"toy/net.py": REFORMATTED}))
    result = rebase(from_directory(str(tmp_path / "patches")), "toy", "2.0", releases)
    assert result.state is RebaseState.OBSOLETE and exit_status(result) == 0
    (f,) = result.files
    assert f.state is FileState.OBSOLETE and "formatted differently" in f.message
    assert [h.state for h in f.hunks] == [HunkState.ALREADY]
    assert not (tmp_path / "patches" / "toy@2.0.patch").exists()


def test_rebase_carries_the_rest_of_a_file_whose_fix_upstream_reformatted(tmp_path):
    filler = "".join(f"\n\ndef f{i}():\n    return {i}\n" for i in range(5))
    base, theirs = BASE + filler + "LIMIT = 1\n", REFORMATTED + filler + "LIMIT = 1\n"
    write_patch(tmp_path / "patches", {"toy/net.py": (base, OURS + filler + "LIMIT = 2\n")})
    releases = releases_of(FakeRelease("toy", "1.0", {"toy/net.py": base}),
                           FakeRelease("toy", "2.0", {"toy/net.py": theirs}))
    result = rebase(from_directory(str(tmp_path / "patches")), "toy", "2.0", releases)
    assert result.state is RebaseState.WRITTEN, result
    (f,) = result.files
    assert f.state is FileState.CARRIED
    assert sorted(h.state.value for h in f.hunks) == ["already", "applied"]
    text = (tmp_path / "patches" / "toy@2.0.patch").read_text()
    assert "+LIMIT = 2" in text and "Offline" not in text.split("---\n", 1)[1]


def test_a_hunk_that_is_the_same_code_is_already_while_another_conflicts(tmp_path):
    filler = "".join(f"\n\ndef f{i}():\n    return {i}\n" for i in range(5))
    base, theirs = BASE + filler + "LIMIT = 1\n", REFORMATTED + filler + "LIMIT = 3\n"
    write_patch(tmp_path / "patches", {"toy/net.py": (base, OURS + filler + "LIMIT = 2\n")})
    releases = releases_of(FakeRelease("toy", "1.0", {"toy/net.py": base}),
                           FakeRelease("toy", "2.0", {"toy/net.py": theirs}))
    result = rebase(from_directory(str(tmp_path / "patches")), "toy", "2.0", releases)
    assert result.state is RebaseState.CONFLICT and exit_status(result) == 1
    (f,) = result.files
    assert [(h.state, "formatted differently" in h.reason) for h in f.hunks] == [
        (HunkState.ALREADY, True), (HunkState.CONFLICT, False)]
    merged = (tmp_path / "patches" / "toy@2.0.rebase" / "files" / "toy" / "net.py").read_text()
    assert merged.count("<<<<<<< ") == 1 and "errors.Offline,\n        ),\n" in merged


def test_the_parse_budget_bounds_the_work_on_a_large_file(monkeypatch):
    import driftscan.patches.samecode as samecode

    filler = "".join(f"\n\ndef f{i}():\n    return {i}\n" for i in range(10))
    base = BASE + filler + "LIMIT = 1\n"
    parts = _parts(base, OURS + filler + "LIMIT = 2\n", REFORMATTED + filler + "LIMIT = 2\n")
    assert same_code(parts) == {0}
    monkeypatch.setattr(samecode, "PARSE_BUDGET", len(REFORMATTED + filler) + 10)  # theirs only: no block tried
    assert same_code(parts) == set()


def test_one_budget_is_shared_by_every_check_of_a_file(tmp_path, monkeypatch):
    """Two hunks, each the same code as the release reformatted it: with room for one check of
    the whole file, the first hunk is already there and the rest stays a conflict, whatever
    the number of hunks."""
    import driftscan.patches.samecode as samecode

    filler = "".join(f"\n\ndef f{i}():\n    return {i}\n" for i in range(5))
    second = OURS.replace("def fetch", "def fetch2").replace("import errors\n", "")
    theirs2 = REFORMATTED.replace("def fetch", "def fetch2").replace("import errors\n", "")
    base = BASE + filler + BASE.replace("def fetch", "def fetch2").replace("import errors\n", "")
    ours, theirs = OURS + filler + second, REFORMATTED + filler + theirs2
    write_patch(tmp_path / "patches", {"toy/net.py": (base, ours)})
    releases = releases_of(FakeRelease("toy", "1.0", {"toy/net.py": base}),
                           FakeRelease("toy", "2.0", {"toy/net.py": theirs}))
    whole = len(theirs)
    monkeypatch.setattr(samecode, "PARSE_BUDGET", 2 * whole + 200)  # theirs + one variant, once
    result = rebase(from_directory(str(tmp_path / "patches")), "toy", "2.0", releases)
    (f,) = result.files
    assert [h.state for h in f.hunks] == [HunkState.ALREADY, HunkState.CONFLICT]
    assert result.state is RebaseState.CONFLICT
    monkeypatch.setattr(samecode, "PARSE_BUDGET", 1 << 20)
    shutil.rmtree(tmp_path / "patches" / "toy@2.0.rebase")
    result = rebase(from_directory(str(tmp_path / "patches")), "toy", "2.0", releases)
    assert result.state is RebaseState.OBSOLETE, result
