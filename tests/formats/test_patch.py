"""driftscan.formats.patch: patches that real `git apply` and GNU `patch` apply byte for byte, strict parsing,
exact application, the three-way merge `reapply` uses, and dropping the hunks that carry debug code."""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest

from fixtures.tools import need_tool

from driftscan.core.errors import DriftscanError
from driftscan.formats.patch import (
    NO_NEWLINE_MARKER,
    FilePatch,
    Hunk,
    MergeResult,
    PatchError,
    apply_hunks,
    diff_hunks,
    format_hunks,
    make_patch,
    merge3,
    parse_patch,
    quote_path,
    reverse_hunks,
    split_lines,
    without_hunks,
)




def _env(ceiling: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_CEILING_DIRECTORIES=str(ceiling),
               LC_ALL="C")
    return env


def _write(root: Path, path: str, text: str | None) -> None:
    target = root / path
    if text is None:
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(text.encode("utf-8", "surrogateescape"))


def _read(root: Path, path: str) -> str:
    return (root / path).read_bytes().decode("utf-8", "surrogateescape")


class Tools:
    """Apply a patch text with the real tools, each in its own fresh directory."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.count = 0
        need_tool("git")
        need_tool("patch")

    def _dir(self, kind: str) -> Path:
        self.count += 1
        root = self.tmp / f"{kind}{self.count}"
        root.mkdir()
        return root

    def _patchfile(self, text: str) -> Path:
        self.count += 1
        path = self.tmp / f"change{self.count}.diff"
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
        return path

    def git(self, path: str, old: str | None, patch: str, *extra: str, repo: bool) -> tuple[subprocess.CompletedProcess, Path]:
        root = self._dir("repo" if repo else "plain")
        env = _env(self.tmp)
        if repo:
            subprocess.run(["git", "init", "-q"], cwd=root, env=env, check=True)
        else:  # really outside any repository: `git apply` then works like patch(1)
            probe = subprocess.run(["git", "rev-parse", "--git-dir"], cwd=root, env=env, capture_output=True)
            assert probe.returncode != 0
        _write(root, path, old)
        proc = subprocess.run(["git", "apply", "-p0", *extra, str(self._patchfile(patch))],
                              cwd=root, env=env, capture_output=True, text=True)
        return proc, root

    def gnu(self, path: str, old: str | None, patch: str, *extra: str) -> tuple[subprocess.CompletedProcess, Path]:
        root = self._dir("gnu")
        _write(root, path, old)
        proc = subprocess.run(["patch", "-p0", "--batch", "--forward", "--no-backup-if-mismatch", *extra,
                               "-i", str(self._patchfile(patch))],
                              cwd=root, env=_env(self.tmp), capture_output=True, text=True)
        return proc, root

    def all_turn(self, path: str, old: str | None, patch: str, new: str) -> None:
        """git apply in a repository, git apply outside one, and GNU patch all give ``new`` exactly."""
        for repo in (True, False):
            proc, root = self.git(path, old, patch, repo=repo)
            assert proc.returncode == 0, (repo, proc.stderr, patch)
            assert _read(root, path) == new, ("git", repo)
        proc, root = self.gnu(path, old, patch)
        assert proc.returncode == 0, (proc.stdout, proc.stderr, patch)
        assert "fuzz" not in proc.stdout and "offset" not in proc.stdout, proc.stdout
        assert _read(root, path) == new, "patch"
        assert sorted(p.name for p in root.rglob("*") if p.suffix in (".rej", ".orig")) == []


@pytest.fixture
def tools(tmp_path):
    return Tools(tmp_path)


def _module(n: int, tag: str = "v", eol: str = "\n") -> str:
    return "".join(f"def f{i}(x):{eol}    return x + {i}  # {tag}{eol}{eol}" for i in range(n))


BASE = _module(12)
HELPER = "def helper(y):\n    return y * 2\n\n"
MIDDLE = BASE.replace("def f6(x):", HELPER + "def f6(x):")
LINES = BASE.splitlines(keepends=True)

CASES = {
    "added_function_in_the_middle": ("model.py", BASE, MIDDLE),
    "edits_at_very_start_and_end": ("model.py", BASE, "# header\n" + BASE.replace("return x + 0", "return x - 0")
                                     + "def tail():\n    pass\n"),
    "old_has_no_final_newline": ("m.py", BASE.rstrip("\n"), BASE),
    "new_has_no_final_newline": ("m.py", BASE, BASE.rstrip("\n")),
    "neither_has_final_newline_last_line_changed": ("m.py", BASE.rstrip("\n"),
                                                    BASE.rstrip("\n").replace("x + 11  # v", "x + 11  # w")),
    "neither_has_final_newline_change_near_end": ("m.py", BASE.rstrip("\n"),
                                                  BASE.rstrip("\n").replace("def f11(x)", "def f11(x, y=0)")),
    "one_line_without_newline_each": ("one.txt", "old", "new"),
    "crlf_text": ("win.py", _module(8, eol="\r\n"), _module(8, eol="\r\n").replace("x + 4", "x + 40")
                  .replace("def f5(x):\r\n", "def f5(x):\r\n    print('hi')\r\n")),
    "crlf_without_final_newline": ("win.py", _module(4, eol="\r\n").rstrip("\r\n"),
                                   _module(4, eol="\r\n").rstrip("\r\n") + "\r\n# end\r\n"),
    "mixed_line_endings": ("mix.txt", "a\r\nb\nc\r\n", "a\r\nb\r\nc\r\n"),
    "file_created_from_empty": ("new.py", "", HELPER),
    "file_created_without_final_newline": ("new.py", "", "x = 1\ny = 2"),
    "file_emptied": ("gone.py", HELPER, ""),
    "several_hunks": ("model.py", BASE, BASE.replace("x + 1 ", "x + 100 ").replace("x + 6 ", "x + 600 ")
                      .replace("# v\n\ndef f10", "# v\n\n\ndef f10")),
    "nested_directories": ("pkg/sub/deep/layer.py", BASE, MIDDLE),
    "lines_that_look_like_patch_syntax": ("odd.txt", "--- a\n+++ b\n@@ -1 +1 @@\n\\ x\nkeep\n",
                                          "--- a\n+++ c\n@@ -2 +2 @@\n\\ y\nkeep\n-- \n"),
    "characters_str_splitlines_would_split_at": ("odd.txt", "a\x0cb\nc\u2028d\ne\rf\ng\x1ch\n",
                                                 "a\x0cb\nc\u2028D\ne\rf\ng\x1ch\n\x85\n"),
    "non_ascii_and_whitespace": ("u.py", "naïve = 'café'\n\tindent\ntrailing   \n",
                                 "naïve = 'café ☕'\n\tindent\ntrailing \n   \n"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_real_tools_turn_old_into_new_byte_for_byte(name, tools):
    path, old, new = CASES[name]
    patch = make_patch(old, new, path)
    assert patch.startswith(f"--- {path}\n+++ {path}\n@@ ")
    tools.all_turn(path, old, patch, new)
    # and our reverse patch takes the new text back, with the real tools too
    back = format_hunks(path, reverse_hunks(diff_hunks(old, new)))
    tools.all_turn(path, new, back, old)


@pytest.mark.parametrize("name", sorted(CASES))
def test_round_trip_parse_apply_reverse(name):
    path, old, new = CASES[name]
    hunks = diff_hunks(old, new)
    assert parse_patch(make_patch(old, new, path)) == [FilePatch(path, tuple(hunks))]
    assert apply_hunks(old, hunks) == new
    assert apply_hunks(old, hunks, allow_offset=False) == new
    assert apply_hunks(new, reverse_hunks(hunks)) == old
    assert reverse_hunks(reverse_hunks(hunks)) == hunks
    for hunk in hunks:
        assert "".join(hunk.old_lines()) in old and "".join(hunk.new_lines()) in new


def test_empty_old_uses_the_creation_header_and_tools_create_a_missing_file(tools):
    patch = make_patch("", "a\nb\n", "pkg/new.py")
    assert patch == "--- pkg/new.py\n+++ pkg/new.py\n@@ -0,0 +1,2 @@\n+a\n+b\n"
    tools.all_turn("pkg/new.py", None, patch, "a\nb\n")  # the file (and its directory) did not exist


def test_no_newline_marker_is_written_where_the_tools_expect_it():
    patch = make_patch("a\nb", "a\nc", "f")
    assert patch.endswith("@@ -1,2 +1,2 @@\n a\n-b\n" + NO_NEWLINE_MARKER + "+c\n" + NO_NEWLINE_MARKER)
    assert make_patch("same", "same", "f") == ""


def test_git_apply_refuses_a_file_whose_content_differs(tools):
    path, old, new = CASES["added_function_in_the_middle"]
    patch = make_patch(old, new, path)
    # one context line (two lines above the insertion) differs: no fuzz, in git or in patch --fuzz=0
    drifted = old.replace("return x + 5  # v", "return x + 5  # V")
    assert drifted != old
    for repo in (True, False):
        proc, root = tools.git(path, drifted, patch, "--check", repo=repo)
        assert proc.returncode != 0 and "patch does not apply" in proc.stderr
    proc, _ = tools.gnu(path, drifted, patch, "--dry-run", "--fuzz=0")
    assert proc.returncode != 0
    with pytest.raises(PatchError, match=r"hunk 1 .*does not apply: line 17 is"):
        apply_hunks(drifted, diff_hunks(old, new))
    # a missing final newline is a difference too
    patch = make_patch("a\nb\n", "a\nc\n", "f")
    proc, _ = tools.git("f", "a\nb", patch, "--check", repo=False)
    assert proc.returncode != 0
    with pytest.raises(PatchError, match="hunk 1"):
        apply_hunks("a\nb", diff_hunks("a\nb\n", "a\nc\n"))


PATHS = ["my dir/my file.py", "sp ace.py", " leading.py", "trailing .py", 'q"uote.py', "back\\slash.py",
         "tab\tname.py", "café/ü.py", "dir with  two  spaces/x.py"]


@pytest.mark.parametrize("path", PATHS)
def test_awkward_paths_are_quoted_so_both_tools_find_the_file(path, tools):
    patch = make_patch("a\nb\n", "a\nc\n", path)
    assert parse_patch(patch)[0].path == path
    tools.all_turn(path, "a\nb\n", patch, "a\nc\n")


def test_quoting_follows_git():
    assert quote_path("a/b.py") == "a/b.py"
    assert quote_path("my dir/f.py") == "my dir/f.py\t"  # what git writes for names with spaces
    assert quote_path('a"b') == '"a\\"b"'
    assert quote_path("tab\tx") == '"tab\\tx"'
    assert quote_path("é") == '"\\303\\251"'
    assert quote_path(" x") == '" x"'
    for bad in ("", "a\0b"):
        with pytest.raises(PatchError):
            make_patch("a", "b", bad)


def test_parse_accepts_timestamps_crlf_patches_several_files_and_gnu_diff_output(tmp_path):
    one = make_patch(BASE, MIDDLE, "a.py")
    two = make_patch("x\n", "y\n", "b/c.py")
    files = parse_patch(one + two)
    assert [f.path for f in files] == ["a.py", "b/c.py"]
    stamped = one.replace("--- a.py\n", "--- a.py\t2024-01-01 00:00:00.000000000 +0000\n", 1)
    assert parse_patch(stamped) == parse_patch(one)
    created = parse_patch("--- /dev/null\n+++ n.py\n@@ -0,0 +1 @@\n+x\n")[0]
    assert created.path == "n.py" and created.created and apply_hunks("", created.hunks) == "x\n"
    # an editor that stripped the space off empty context lines
    stripped = make_patch(BASE, MIDDLE, "a.py").replace("\n \n", "\n\n")
    assert parse_patch(stripped) == parse_patch(one)
    # GNU diff's own output (with its own "No newline" markers) reads back and applies
    need_tool("diff")
    (tmp_path / "old").write_text("a\nb\nc")
    (tmp_path / "new").write_text("a\nB\nc\nd")
    out = subprocess.run(["diff", "-u", "--label", "f", "--label", "f", "old", "new"], cwd=tmp_path,
                         capture_output=True, text=True).stdout
    (patch,) = parse_patch(out)
    assert apply_hunks("a\nb\nc", patch.hunks) == "a\nB\nc\nd"


MALFORMED = {
    "garbage header": "hello\n",
    "diff --git preamble": "diff --git a/x b/x\n--- x\n+++ x\n@@ -1 +1 @@\n-a\n+b\n",
    "missing +++": "--- x\n@@ -1 +1 @@\n-a\n+b\n",
    "no hunks": "--- x\n+++ x\n",
    "bad hunk header": "--- x\n+++ x\n@@ -1,a +1 @@\n-a\n+b\n",
    "header without @@ end": "--- x\n+++ x\n@@ -1 +1\n-a\n+b\n",
    "old count too big": "--- x\n+++ x\n@@ -1,3 +1,2 @@\n a\n-b\n+c\n",
    "old count too small": "--- x\n+++ x\n@@ -1,1 +1,2 @@\n a\n-b\n+c\n+d\n",
    "new count too big": "--- x\n+++ x\n@@ -1,2 +1,4 @@\n a\n-b\n+c\n",
    "truncated in a hunk": "--- x\n+++ x\n@@ -1,3 +1,3 @@\n a\n-b\n",
    "truncated mid line": "--- x\n+++ x\n@@ -1,2 +1,2 @@\n a\n-b\n+c",
    "truncated after ---": "--- x\n",
    "line outside a hunk": "--- x\n+++ x\n@@ -1 +1 @@\n-a\n+b\nstray\n",
    "unknown body tag": "--- x\n+++ x\n@@ -1,2 +1,2 @@\n a\n*b\n",
    "marker first": "--- x\n+++ x\n@@ -1 +1 @@\n\\ No newline at end of file\n-a\n+b\n",
    "two markers": "--- x\n+++ x\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n\\ No newline at end of file\n+b\n",
    "line after no-newline line": "--- x\n+++ x\n@@ -1,2 +1,2 @@\n a\n\\ No newline at end of file\n-b\n+c\n",
    "hunks out of order": "--- x\n+++ x\n@@ -5 +5 @@\n-a\n+b\n@@ -1 +1 @@\n-a\n+b\n",
    "hunks overlapping": "--- x\n+++ x\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n@@ -2 +2 @@\n-b\n+c\n",
    "context only": "--- x\n+++ x\n@@ -1 +1 @@\n a\n",
    "rename": "--- x\n+++ y\n@@ -1 +1 @@\n-a\n+b\n",
    "start 0 with lines": "--- x\n+++ x\n@@ -0,1 +0,1 @@\n-a\n+b\n",
    "unclosed quote": '--- "x\n+++ "x\n@@ -1 +1 @@\n-a\n+b\n',
    "bad escape": '--- "x\\q"\n+++ "x\\q"\n@@ -1 +1 @@\n-a\n+b\n',
    "empty path": "--- \n+++ \n@@ -1 +1 @@\n-a\n+b\n",
    "dev null both": "--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+a\n",
    "creation with old lines": "--- /dev/null\n+++ x\n@@ -1 +1 @@\n-a\n+b\n",
    "empty line without newline": "--- x\n+++ x\n@@ -1 +1 @@\n-\n\\ No newline at end of file\n+b\n",
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_patches_raise_patch_error_with_a_line_number(name):
    with pytest.raises(PatchError, match=r"^line \d+: ") as info:
        parse_patch(MALFORMED[name])
    assert isinstance(info.value, DriftscanError) and "\n" not in str(info.value)


def test_counts_are_checked_against_the_body():
    with pytest.raises(PatchError, match=r"line 5: hunk 1 of 'x' has more removed lines than its header counts"):
        parse_patch(MALFORMED["old count too small"])
    with pytest.raises(PatchError, match=r"line 7: the patch ends inside hunk 1 .*truncated"):
        parse_patch(MALFORMED["new count too big"])


def test_mangled_patches_never_raise_anything_but_patch_error():
    rng = random.Random(7)
    good = [make_patch(old, new, path) for path, old, new in CASES.values() if old != new]
    good.append(make_patch(BASE, MIDDLE, "a b/c.py") + make_patch("x", "y", 'q"'))
    seen_ok = seen_error = 0
    for _ in range(600):
        lines = rng.choice(good).split("\n")
        for _ in range(rng.randint(1, 3)):
            if not lines:
                lines = [""]
            at = rng.randrange(len(lines))
            action = rng.randrange(6)
            if action == 0:
                del lines[at]
            elif action == 1:
                lines.insert(at, lines[rng.randrange(len(lines))])
            elif action == 2:
                lines[at] = lines[at][: rng.randint(0, len(lines[at]))]
            elif action == 3:
                lines[at] = lines[at].replace(str(rng.randint(0, 9)), str(rng.randint(0, 99)), 1)
            elif action == 4:
                lines[at] = rng.choice(" -+\\@\"") + lines[at]
            else:
                lines = lines[:at]
        text = "\n".join(lines)
        try:
            parsed = parse_patch(text)
        except PatchError:
            seen_error += 1
            continue
        seen_ok += 1
        for file in parsed:  # whatever parses is a consistent set of hunks
            for hunk in file.hunks:
                assert len(hunk.old_lines()) == hunk.old_len and len(hunk.new_lines()) == hunk.new_len
    assert seen_error > 300 and seen_ok > 10


def test_hunks_are_validated_on_construction():
    assert Hunk(1, 1, 1, 1, ("-a\n", "+b\n")).new_lines() == ["b\n"]
    bad = [
        (1, 2, 1, 1, ("-a\n", "+b\n")),  # counts
        (1, 1, 1, 1, ("-a", "+b\n")),  # body line without newline
        (1, 1, 1, 1, ("?a\n", "+b\n")),
        (0, 1, 1, 1, ("-a\n", "+b\n")),
        (1, 1, 1, 1, (" a\n",)),
        (-1, 0, 1, 1, ("+b\n",)),
    ]
    for args in bad:
        with pytest.raises(PatchError):
            Hunk(*args)


def test_added_range_is_in_new_line_numbers():
    hunks = diff_hunks(BASE, MIDDLE)
    (hunk,) = hunks
    start = split_lines(MIDDLE).index("def helper(y):\n") + 1
    assert hunk.added_range() == range(start, start + 3)
    assert hunk.added_lines() == split_lines(HELPER)
    deletion = diff_hunks(MIDDLE, BASE)[0]
    assert len(deletion.added_range()) == 0 and [line[1:] for line in deletion.lines if line.startswith("-")] == split_lines(HELPER)
    two = diff_hunks("a\nb\nc\nd\n", "A\nb\nc\nD\n")[0]  # one hunk, two changes: first to last
    assert two.added_range() == range(1, 5)
    assert diff_hunks("", "x\ny")[0].added_range() == range(1, 3)


# ----------------------------------------------------------------------------------- apply_hunks


def test_apply_finds_a_moved_hunk_by_offset_but_never_fuzzes():
    hunks = diff_hunks(BASE, MIDDLE)
    moved = "# a new licence header\n" * 5 + BASE
    assert apply_hunks(moved, hunks) == "# a new licence header\n" * 5 + MIDDLE
    with pytest.raises(PatchError, match="hunk 1"):
        apply_hunks(moved, hunks, allow_offset=False)
    fuzzed = moved.replace("def f6(x):", "def f6(x) :")  # a context line below the insertion
    with pytest.raises(PatchError, match=r"hunk 1 \(@@ -16,6 \+16,9 @@\) does not apply: line \d+ is"):
        apply_hunks(fuzzed, hunks)


def test_apply_names_the_hunk_that_fails_and_keeps_order():
    new = BASE.replace("x + 1 ", "x + 100 ").replace("x + 9 ", "x + 900 ")
    hunks = diff_hunks(BASE, new)
    assert len(hunks) == 2
    with pytest.raises(PatchError, match="^hunk 2 "):
        apply_hunks(BASE.replace("x + 9 ", "x + 9.0 "), hunks)
    with pytest.raises(PatchError, match="order"):
        apply_hunks(BASE, list(reversed(hunks)))
    with pytest.raises(PatchError, match="hunk 1"):
        apply_hunks("", hunks)
    assert apply_hunks(BASE, []) == BASE


def test_apply_refuses_to_glue_a_line_without_newline_into_the_middle():
    with pytest.raises(PatchError, match="no newline"):
        apply_hunks("a", [Hunk(1, 0, 2, 1, ("+b\n",))])  # would give "ab\n"
    with pytest.raises(PatchError, match="without a newline"):
        apply_hunks("a\nb\nc\n", [Hunk(1, 1, 1, 1, ("-a\n", "+x\n", NO_NEWLINE_MARKER))])


# ----------------------------------------------------------------------------------- merge3


def test_merge_carries_non_overlapping_changes_onto_the_new_version():
    ours = BASE.replace("x + 2 ", "x + 2 + debug ")  # near the top
    theirs = BASE.replace("x + 10 ", "x + 10.5 ") + "def added_upstream():\n    pass\n"
    result = merge3(BASE, ours, theirs)
    assert result.conflicts == () and result.applied == 1 and result.hunks == 1
    assert result.text == theirs.replace("x + 2 ", "x + 2 + debug ")


def test_merge_maps_through_lines_the_new_version_inserted_and_removed_above():
    ours = BASE.replace("def f9(x):\n", "def f9(x):\n    print('here', x)\n")
    theirs = "import os\n" * 40 + BASE.replace("def f1(x):\n    return x + 1  # v\n\n", "")
    result = merge3(BASE, ours, theirs)
    assert result.text == theirs.replace("def f9(x):\n", "def f9(x):\n    print('here', x)\n")


def test_overlapping_changes_conflict_per_hunk_and_nothing_is_applied():
    ours = (BASE.replace("x + 1 ", "x + 100 ").replace("x + 5 ", "x + 500 ").replace("x + 10 ", "x + 1000 "))
    assert len(diff_hunks(BASE, ours)) == 3
    theirs = BASE.replace("return x + 5  # v", "return x + 5  # upstream fix")
    result = merge3(BASE, ours, theirs)
    assert result.text is None and result.applied == 0
    (conflict,) = result.conflicts
    assert conflict.hunk == 2
    assert conflict.base_start == diff_hunks(BASE, ours)[1].old_start
    assert conflict.reason.startswith("the new version changed line 17 ") and "that this hunk also changes" in conflict.reason
    assert conflict.ours == ("    return x + 500  # v\n",)
    assert conflict.theirs == ("    return x + 5  # upstream fix\n",)
    assert conflict.base == ("    return x + 5  # v\n",)


def test_adjacent_changes_conflict_too():
    ours = BASE.replace("def f4(x):", "def f4(x, y):")
    theirs = BASE.replace("return x + 4 ", "return x + 44 ")  # the very next line
    result = merge3(BASE, ours, theirs)
    assert result.text is None and [c.hunk for c in result.conflicts] == [1]
    assert "next to" in result.conflicts[0].reason
    # an insertion right at the edge of the line the other side changed
    ours = BASE.replace("def f4(x):\n", "def f4(x):\n    pass\n")
    assert merge3(BASE, ours, theirs).conflicts
    # with one unchanged line in between there is no conflict
    theirs = BASE.replace("# v\n\ndef f5", "# v\n\ndef f5_renamed")
    assert merge3(BASE, BASE.replace("def f4(x):", "def f4(x, y):"), theirs).text == \
        theirs.replace("def f4(x):", "def f4(x, y):")


def test_identical_change_on_both_sides_is_already_there():
    ours = BASE.replace("x + 3 ", "x + 33 ").replace("x + 8 ", "x + 88 ")
    theirs = BASE.replace("x + 3 ", "x + 33 ") + "# more\n"
    result = merge3(BASE, ours, theirs)
    assert result.conflicts == () and result.applied == 1 and result.already == 1
    assert result.text == theirs.replace("x + 8 ", "x + 88 ")
    assert merge3(BASE, ours, ours).text == ours  # nothing applied twice


def test_trivial_merges_are_exact():
    ours = BASE.replace("x + 2", "x+2").rstrip("\n")
    assert merge3(BASE, ours, BASE).text == ours
    assert merge3(BASE, ours, BASE).applied == len(diff_hunks(BASE, ours))
    theirs = "\r\n".join(BASE.split("\n"))
    assert merge3(BASE, BASE, theirs) == MergeResult(theirs, (), 0, 0, 0)
    assert merge3("", "x\n", "").text == "x\n"
    assert merge3("", "x\n", "y\n").text is None  # both created the file with different content


def test_merge_keeps_crlf_and_a_missing_final_newline():
    base = _module(6, eol="\r\n").rstrip("\r\n")
    ours = base.replace("def f1(x):", "def f1(x, *a):")
    theirs = base.replace("x + 5  # v", "x + 5  # v2")
    assert merge3(base, ours, theirs).text == base.replace("def f1(x):", "def f1(x, *a):").replace(
        "x + 5  # v", "x + 5  # v2")


def _edit_plan(rng: random.Random, n: int, no_final_newline: bool) -> list[tuple[int, int, int]]:
    """Non-touching edits (start, end, how many new lines) over n base lines, in order."""
    edits: list[tuple[int, int, int]] = []
    pos = 0
    while True:
        gap = rng.randint(0, 3) if not edits else rng.randint(1, 4)
        start = pos + gap
        if start > n:
            break
        end = min(n, start + rng.choice([0, 0, 1, 1, 2, 3]))
        added = rng.choice([0, 1, 1, 2, 3]) if end > start else rng.randint(1, 3)
        if end == n and no_final_newline and edits and gap < 2 and not (end > start and added):
            break  # at the end of a file without final newline the line before changes too
        edits.append((start, end, added))
        pos = end
        if rng.random() < 0.3:
            break
    return edits


def _apply_plan(base: list[str], edits, label: str) -> list[str]:
    out: list[str] = []
    pos = 0
    for k, (start, end, added) in enumerate(edits):
        out += base[pos:start]
        out += [f"{label} {k}.{j}\n" for j in range(added)]
        pos = end
    return out + base[pos:]


def test_randomized_merges_of_separate_edits_carry_both_sets():
    rng = random.Random(20240601)
    for case in range(400):
        n = rng.randint(0, 30)
        eol = "\r\n" if rng.random() < 0.2 else "\n"
        no_final_newline = rng.random() < 0.25
        base_lines = [f"line {i}\n" for i in range(n)]
        edits = _edit_plan(rng, n, no_final_newline)
        ours_edits, theirs_edits = [], []
        for edit in edits:
            (ours_edits if rng.random() < 0.5 else theirs_edits).append(edit)

        def text(lines: list[str]) -> str:
            joined = "".join(lines).replace("\n", eol)
            return joined[: -len(eol)] if no_final_newline and joined.endswith(eol) else joined

        base = text(base_lines)
        ours = text(_apply_plan(base_lines, ours_edits, "ours"))
        theirs = text(_apply_plan(base_lines, theirs_edits, "theirs"))
        merged_lines: list[str] = []
        pos = 0
        tagged = sorted([(s, e, a, "ours", i) for i, (s, e, a) in enumerate(ours_edits)]
                        + [(s, e, a, "theirs", i) for i, (s, e, a) in enumerate(theirs_edits)])
        for start, end, added, label, k in tagged:
            merged_lines += base_lines[pos:start] + [f"{label} {k}.{j}\n" for j in range(added)]
            pos = end
        both = text(merged_lines + base_lines[pos:])
        context = rng.choice([0, 1, 3])
        result = merge3(base, ours, theirs, context)
        assert result.conflicts == (), (case, base, ours, theirs)
        assert result.text == both, (case, edits)
        assert merge3(base, theirs, ours, context).text == both
        hunks = diff_hunks(base, ours, context)
        assert result.applied == len(hunks)
        assert apply_hunks(base, hunks) == ours and apply_hunks(ours, reverse_hunks(hunks)) == base
        assert parse_patch(format_hunks("f.py", hunks)) == ([FilePatch("f.py", tuple(hunks))] if hunks else [])


def test_randomized_overlapping_edits_conflict():
    rng = random.Random(99)
    conflicts = 0
    for _ in range(200):
        n = rng.randint(3, 25)
        base_lines = [f"line {i}\n" for i in range(n)]
        start = rng.randrange(n)
        end = min(n, start + rng.randint(1, 3))
        other = rng.randint(max(0, start - 1), min(n - 1, end))  # overlaps or touches
        ours = base_lines[:start] + ["ours\n"] + base_lines[end:]
        theirs = base_lines[:other] + ["theirs\n"] + base_lines[other + 1:]
        result = merge3("".join(base_lines), "".join(ours), "".join(theirs))
        assert result.text is None and len(result.conflicts) == 1 and result.conflicts[0].hunk == 1
        conflicts += 1
    assert conflicts == 200


def test_randomized_diffs_of_repetitive_text_round_trip_and_real_tools_agree(tools):
    rng = random.Random(5)
    checked_with_tools = 0
    for case in range(300):
        alphabet = ["a\n", "b\n", "\n", "    pass\n", "a\r\n", "}\n"]
        old_lines = [rng.choice(alphabet) for _ in range(rng.randint(0, 25))]
        new_lines = list(old_lines)
        for _ in range(rng.randint(1, 4)):
            at = rng.randint(0, len(new_lines))
            op = rng.randrange(3)
            if op == 0:
                new_lines.insert(at, rng.choice(alphabet + ["x\n"]))
            elif new_lines and at < len(new_lines):
                if op == 1:
                    del new_lines[at]
                else:
                    new_lines[at] = "y\n"
        old, new = "".join(old_lines), "".join(new_lines)
        if rng.random() < 0.2:
            old = old.rstrip("\n")
        if rng.random() < 0.2:
            new = new.rstrip("\n")
        context = rng.choice([0, 1, 2, 3])
        hunks = diff_hunks(old, new, context)
        assert apply_hunks(old, hunks) == new, case
        assert apply_hunks(new, reverse_hunks(hunks)) == old, case
        patch = make_patch(old, new, "f.txt", context)
        assert parse_patch(patch) == ([FilePatch("f.txt", tuple(hunks))] if old != new else [])
        if old != new and context == 3 and checked_with_tools < 12:
            checked_with_tools += 1
            tools.all_turn("f.txt", old, patch, new)
    assert checked_with_tools == 12


# ----------------------------------------------------------------------------------- without_hunks

PRISTINE = '''\
import torch


class Attention(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, q, k, v):
        scores = q @ k.transpose(-1, -2)
        probs = scores.softmax(-1)
        out = probs @ v
        return out


class MLP(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.up = torch.nn.Linear(dim, 4 * dim)
        self.down = torch.nn.Linear(4 * dim, dim)

    def forward(self, x):
        return self.down(self.up(x).relu())
'''

EDITED = PRISTINE.replace(
    "        out = probs @ v\n",
    "        out = probs @ v\n        torch.save(probs, '/tmp/probs.pt')  # debug\n",
).replace(
    "import torch\n",
    "import torch\n\n\ndef _scale(x, factor):\n    return x * factor\n",
)


def test_without_hunks_drops_the_debug_hunk_and_keeps_the_helper():
    hunks = diff_hunks(PRISTINE, EDITED)
    assert len(hunks) == 2

    def is_debug(hunk: Hunk) -> bool:
        return any("torch.save(" in line for line in hunk.added_lines())

    kept = without_hunks(PRISTINE, EDITED, is_debug)
    assert "torch.save" not in kept and "def _scale(x, factor):" in kept
    assert kept == PRISTINE.replace("import torch\n", "import torch\n\n\ndef _scale(x, factor):\n    return x * factor\n")
    assert without_hunks(PRISTINE, EDITED, lambda h: True) == PRISTINE
    assert without_hunks(PRISTINE, EDITED, lambda h: False) == EDITED
    assert without_hunks(PRISTINE, PRISTINE, lambda h: True) == PRISTINE


def test_without_hunks_with_zero_context_separates_nearby_changes():
    edited = PRISTINE.replace("        probs = scores.softmax(-1)\n",
                              "        probs = scores.softmax(-1)  # was softmax(dim)\n").replace(
        "        out = probs @ v\n", "        out = probs @ v\n        torch.save(out, 'o.pt')\n")
    assert len(diff_hunks(PRISTINE, edited)) == 1  # 1 line apart: one hunk at context 3

    def is_debug(hunk: Hunk) -> bool:
        return any("torch.save(" in line for line in hunk.added_lines())

    assert without_hunks(PRISTINE, edited, is_debug) == PRISTINE
    assert without_hunks(PRISTINE, edited, is_debug, context=0) == PRISTINE.replace(
        "        probs = scores.softmax(-1)\n", "        probs = scores.softmax(-1)  # was softmax(dim)\n")


def test_large_file_with_many_repeated_lines_diffs_and_merges_quickly():
    rng = random.Random(3)
    base_lines = [rng.choice(["\n", "    pass\n", "        return x\n"]) if rng.random() < 0.5 else f"x{i} = {i}\n"
                  for i in range(20000)]
    changed = sorted(rng.sample(range(0, 20000, 10), 40))
    ours_lines = list(base_lines)
    for at in changed:
        ours_lines[at] = f"changed {at}\n"
    base, ours = "".join(base_lines), "".join(ours_lines)
    hunks = diff_hunks(base, ours, context=0)
    assert [h.old_start for h in hunks] == [at + 1 for at in changed]
    theirs = "# upstream header\n" * 3 + base
    result = merge3(base, ours, theirs)
    assert result.text == "# upstream header\n" * 3 + ours and result.applied == len(diff_hunks(base, ours))


def _scan_find(lines, wanted, expected, lowest):
    """The offset search as a scan of every position: nearest ``expected``, the later one on a tie."""
    highest = len(lines) - len(wanted)
    if highest < lowest:
        return None
    expected = min(max(expected, lowest), highest)
    for distance in range(max(expected - lowest, highest - expected) + 1):
        for at in (expected + distance, expected - distance):
            if lowest <= at <= highest and lines[at:at + len(wanted)] == wanted:
                return at
    return None


def test_the_offset_search_finds_what_a_scan_of_every_position_finds():
    from driftscan.formats.patch import _find, _Search

    draw = random.Random(5)
    for _ in range(2000):
        alphabet = [f"{i}\n" for i in range(draw.choice([1, 2, 3, 6]))]
        lines = [draw.choice(alphabet) for _ in range(draw.randrange(1, 40))]
        wanted = [draw.choice(alphabet) for _ in range(draw.randrange(1, 5))]
        expected, lowest = draw.randrange(0, 45), draw.randrange(0, 10)
        assert _find(_Search(lines), wanted, expected, lowest) == _scan_find(lines, wanted, expected, lowest)


# ------------------------------------------------------------------------------ marked merges

from driftscan.formats.patch import marker_line, merge3_marked  # noqa: E402

LABELS = ("toy 1.0 + patch", "toy 1.0", "toy 2.0")


def _numbered(count: int) -> list[str]:
    return [f"line {i}\n" for i in range(1, count + 1)]


def test_marked_merge_without_conflict_is_merge3_s_text():
    base = "".join(_numbered(30))
    ours = base.replace("line 3\n", "line 3 fixed\n")
    theirs = base.replace("line 25\n", "line 25 upstream\n")
    marked = merge3_marked(base, ours, theirs, LABELS)
    assert marked.conflicts == 0
    assert marked.text == merge3(base, ours, theirs).text
    assert marker_line(marked.text) is None


def test_marked_merge_writes_diff3_blocks_for_each_conflict_and_merges_the_rest():
    base = "".join(_numbered(40))
    ours = base.replace("line 3\n", "line 3 fixed\n").replace("line 20\n", "line 20 ours\n")
    theirs = base.replace("line 20\n", "line 20 theirs\n").replace("line 35\n", "line 35 upstream\n")
    assert merge3(base, ours, theirs).text is None  # merge3 gives up on this file
    marked = merge3_marked(base, ours, theirs, LABELS)
    assert marked.conflicts == 1
    lines = marked.text.split("\n")
    start = lines.index("<<<<<<< toy 1.0 + patch")
    assert lines[start:start + 7] == ["<<<<<<< toy 1.0 + patch", "line 20 ours", "||||||| toy 1.0", "line 20",
                                      "=======", "line 20 theirs", ">>>>>>> toy 2.0"]
    assert "line 3 fixed" in lines and "line 35 upstream" in lines  # the clean changes of both sides
    assert marker_line(marked.text) == start + 1
    # Taking either side of the block gives back that side's merge.
    resolved = marked.text.replace("<<<<<<< toy 1.0 + patch\nline 20 ours\n||||||| toy 1.0\nline 20\n=======\n"
                                   "line 20 theirs\n>>>>>>> toy 2.0\n", "line 20 theirs\n")
    assert resolved == theirs.replace("line 3\n", "line 3 fixed\n")


def test_marked_merge_gives_a_last_line_without_newline_its_own_line_inside_the_block():
    base = "a\nb\nc"
    marked = merge3_marked(base, "a\nb\nmine", "a\nb\ntheirs", LABELS)
    assert marked.conflicts == 1
    assert marked.text == ("a\nb\n<<<<<<< toy 1.0 + patch\nmine\n||||||| toy 1.0\nc\n=======\ntheirs\n"
                           ">>>>>>> toy 2.0\n")


def test_marked_merge_of_a_deleted_file_against_an_edited_one_marks_the_whole_text():
    base = "x = 1\ny = 2\n"
    marked = merge3_marked(base, "", "x = 1\ny = 3\n", LABELS)
    assert marked.conflicts == 1
    assert marked.text == ("<<<<<<< toy 1.0 + patch\n||||||| toy 1.0\nx = 1\ny = 2\n=======\nx = 1\ny = 3\n"
                           ">>>>>>> toy 2.0\n")


def test_same_change_on_both_sides_is_no_conflict_in_a_marked_merge():
    base = "".join(_numbered(10))
    both = base.replace("line 5\n", "line 5 fixed\n")
    marked = merge3_marked(base, both, both, LABELS)
    assert (marked.conflicts, marked.text) == (0, both)


@pytest.mark.parametrize("label", ["two\nlines", "cr\r"])
def test_a_marker_label_is_one_line(label):
    with pytest.raises(PatchError, match="one line"):
        merge3_marked("a\n", "b\n", "c\n", (label, "base", "theirs"))


@pytest.mark.parametrize("text, line", [("a\n<<<<<<< x\n", 2), ("=======\n", 1), ("a\n||||||| b\n", 2),
                                        ("a\n>>>>>>> b", 2), ("a\n======= not alone\n<<<<<<<no space\n", None),
                                        ("", None)])
def test_marker_line_finds_only_whole_marker_lines(text, line):
    assert marker_line(text) == line
