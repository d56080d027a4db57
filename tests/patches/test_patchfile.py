"""driftscan.patches.patchfile: the patch file format `driftscan patch` writes and reads — a DEP-3-style
header that real `git apply` and GNU `patch -p1` skip, a body they apply, and hostile files refused in one line."""

from __future__ import annotations

import base64
import hashlib
import subprocess
from pathlib import Path

import pytest

from fixtures.tools import need_tool

from driftscan.core.errors import DriftscanError
from driftscan.patches.patchfile import (
    MAX_HUNKS,
    PatchedFile,
    PatchFile,
    PatchFormatError,
    PatchHeader,
    file_diff,
    file_patches,
    parse,
    render,
)




def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


# The original tree (as an unpacked wheel lays it out) and what the patch should make of it.
ORIGINAL = {
    "pkg/mod.py": "import os\n\ndef f(x):\n    return x + 1\n",
    "pkg/gone.py": "print('old')\n",
    "pkg/café x.py": "VALUE = 1\n",
    "pkg/nonl.py": "a = 1\nb = 2",
}
PATCHED = {
    "pkg/mod.py": "import os\n\ndef f(x):\n    return x + 2\n",
    "pkg/new.py": "def helper():\n    return 42\n",
    "pkg/empty/__init__.py": "",
    "pkg/café x.py": "VALUE = 2\n",
    "pkg/nonl.py": "a = 1\nb = 3",
}


def _patch_file(description: str = "Fixes kept from /root/env (driftscan patch export)") -> PatchFile:
    files, body = [], []
    for path in sorted(set(ORIGINAL) | set(PATCHED)):
        old, new = ORIGINAL.get(path), PATCHED.get(path)
        files.append(PatchedFile(path, None if old is None else _record_hash(old.encode())))
        body.append(file_diff(path, old, new))
    header = PatchHeader(description, "my-dist", "1.0.post1", "0.1.0", tuple(files))
    return PatchFile(header, "".join(body))


def test_render_then_parse_gives_the_same_patch_file() -> None:
    patch = _patch_file("First line\nsecond line\n\n  indented after an empty line")
    text = render(patch)
    assert text.startswith("Description: First line\n second line\n .\n   indented after an empty line\n")
    assert "\n---\ndiff --git " in text
    assert parse(text) == patch
    assert render(parse(text)) == text


def test_file_patches_name_each_file_with_what_it_does() -> None:
    found = {patch.path: patch for patch in file_patches(_patch_file())}
    assert set(found) == set(ORIGINAL) | set(PATCHED)
    assert found["pkg/new.py"].created and found["pkg/empty/__init__.py"].created
    assert found["pkg/empty/__init__.py"].hunks == ()
    assert found["pkg/gone.py"].deleted
    assert not found["pkg/mod.py"].created and not found["pkg/mod.py"].deleted


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())


def _contents(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*") if p.is_file() and ".git" not in p.parts}


def test_git_apply_p1_gives_exactly_the_patched_tree(tmp_path: Path) -> None:
    git = need_tool("git")
    root = tmp_path / "tree"
    _tree(root, ORIGINAL)
    patch_path = tmp_path / "my-dist@1.0.post1.patch"
    patch_path.write_text(render(_patch_file()))
    subprocess.run([git, "apply", "--check", "-p1", str(patch_path)], cwd=root, check=True, capture_output=True)
    subprocess.run([git, "apply", "-p1", str(patch_path)], cwd=root, check=True, capture_output=True)
    assert _contents(root) == PATCHED


def test_gnu_patch_p1_gives_exactly_the_patched_tree(tmp_path: Path) -> None:
    patch_tool = need_tool("patch")
    root = tmp_path / "tree"
    _tree(root, ORIGINAL)
    patch_path = tmp_path / "my-dist@1.0.post1.patch"
    patch_path.write_text(render(_patch_file()))
    subprocess.run([patch_tool, "--dry-run", "-p1", "-i", str(patch_path)], cwd=root, check=True, capture_output=True)
    subprocess.run([patch_tool, "-p1", "-i", str(patch_path)], cwd=root, check=True, capture_output=True)
    assert _contents(root) == PATCHED


def test_the_patch_file_is_a_driftscan_error_subclass() -> None:
    assert issubclass(PatchFormatError, DriftscanError)


def _valid() -> str:
    return render(_patch_file())


def _replace(old: str, new: str) -> str:
    text = _valid()
    assert old in text
    return text.replace(old, new)


def _diff_for(path: str, old: str | None = "x\n", new: str | None = "y\n") -> str:
    # file_diff checks its path, so a hostile one is written by hand, as an attacker would
    return (
        f"diff --git a/{path} b/{path}\n{'new file mode 100644' + chr(10) if old is None else ''}--- {'/dev/null' if old is None else 'a/' + path}\n"
        f"+++ b/{path}\n@@ -{'0,0' if old is None else '1,1'} +1,1 @@\n" + ("" if old is None else f"-{old}") + f"+{new}"
    )


def _hostile(path: str, listed: str | None = None, new: bool = False) -> str:
    listed = path if listed is None else listed
    return (
        "Description: x\nDistribution: my-dist\nVersion: 1.0\nDriftscan-Version: 0.1.0\nFiles:\n"
        f" {listed} {'new' if new else 'sha256=' + 'A' * 43}\n---\n" + _diff_for(path, None if new else "x\n")
    )


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (_hostile("/etc/passwd"), "absolute"),
        (_hostile("../../bin/evil"), "not plainly below"),
        (_hostile("pkg/../../x.py"), "not plainly below"),
        (_hostile("./pkg/x.py"), "not plainly below"),
        (_hostile("pkg//x.py"), "not plainly below"),
        (_hostile("my_dist-1.0.dist-info/RECORD"), ".dist-info"),
        (_hostile("pkg\\..\\..\\x.py"), "backslash"),
        (_hostile("pkg/evil.py", new=True).replace("new file mode 100644", "new file mode 120000"), None),
        (_hostile("pkg/x.py", listed="pkg/other.py"), "does not list"),
        (_hostile("pkg/x.py", new=True).replace(" new\n", " sha256=" + "A" * 43 + "\n"), "Files: says"),
        ("Description: x\nDistribution: x\n", "'---'"),
        ("diff --git a/x b/x\n", "starts with 'Description:'"),
        (_hostile("pkg/x.py").replace("Distribution: my-dist", "Distribution: My_Dist"), "canonical"),
        (_hostile("pkg/x.py").replace("Version: 1.0\n", ""), "no Version:"),
        (_hostile("pkg/x.py").replace("Version: 1.0\n", "Version: 1.0\nVersion: 2.0\n"), "twice"),
        (_hostile("pkg/x.py").replace("sha256=" + "A" * 43, "md5=abc"), "RECORD hash"),
        (_hostile("pkg/x.py").replace("+y\n", "+y\x00\n"), "NUL"),
        (_hostile("pkg/x.py").replace("\n---\n", "\r\n---\n"), None),
        (_hostile("pkg/x.py").replace("@@ -1,1 +1,1 @@", "@@ -1,5 +1,1 @@"), "truncated"),
        (_hostile("pkg/x.py") + "GIT binary patch\n", None),
        (_hostile("pkg/x.py").replace("--- a/pkg/x.py\n", "--- a/pkg/x.py\n").replace("+++ b/pkg/x.py", "+++ b/pkg/y.py"), None),
        (_hostile("pkg/x.py").replace("--- a/pkg/x.py", "--- pkg/x.py"), "'a/'"),
        (_hostile("pkg/x.py").replace("diff --git a/pkg/x.py b/pkg/x.py", "diff --git a/pkg/x.py b/pkg/y.py"), None),
        (_hostile("pkg/x.py").replace("diff --git", "rename from x\ndiff --git"), None),
        (_hostile("pkg/x.py") + _diff_for("pkg/x.py"), "twice"),
        (_hostile("pkg/x.py").replace("---\ndiff", "---\nrename from a\ndiff"), "diff --git"),
        (_hostile("pkg/x.py").replace("diff --git a/pkg/x.py b/pkg/x.py\n", "diff --git a/pkg/x.py b/pkg/x.py\nold mode 100644\nnew mode 100755\n"), "mode changes"),
    ],
)
def test_hostile_or_malformed_patch_files_are_refused_in_one_line(text: str, says: str | None) -> None:
    with pytest.raises(PatchFormatError) as caught:
        parse(text)
    message = str(caught.value)
    assert message and "\n" not in message
    if says is not None:
        assert says in message


def test_too_many_hunks_are_refused_before_they_are_read() -> None:
    hunks = "".join(f"@@ -{n},1 +{n},1 @@\n-x\n+y\n" for n in range(1, MAX_HUNKS + 2))
    text = _hostile("pkg/x.py").split("@@")[0] + hunks
    with pytest.raises(PatchFormatError, match="hunks"):
        parse(text)


def test_a_file_larger_than_the_limit_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import driftscan.patches.patchfile as patchfile

    monkeypatch.setattr(patchfile, "MAX_PATCH_BYTES", 1000)
    with pytest.raises(PatchFormatError, match="larger than"):
        parse(_valid() + "#" * 1000)


def test_other_dep3_fields_are_allowed_and_not_kept() -> None:
    text = _replace("Distribution:", "Author: A Reviewer <a@example.com>\nForwarded: no\nDistribution:")
    assert parse(text) == _patch_file()


def test_render_refuses_a_header_that_would_not_read_back() -> None:
    patch = _patch_file()
    for header in (
        PatchHeader("line\n.", "my-dist", "1.0", "0.1.0", patch.header.files),
        PatchHeader("tab\x1b[31m", "my-dist", "1.0", "0.1.0", patch.header.files),
        PatchHeader("x", "my-dist", "1.0\nEvil: yes", "0.1.0", patch.header.files),
        PatchHeader("x", "my-dist", "1.0", "0.1.0", ()),
    ):
        with pytest.raises(PatchFormatError):
            render(PatchFile(header, patch.body))


def test_file_diff_of_equal_texts_is_empty_and_refuses_bad_paths() -> None:
    assert file_diff("pkg/x.py", "a\n", "a\n") == ""
    with pytest.raises(PatchFormatError, match="absolute"):
        file_diff("/x.py", "a\n", "b\n")
    with pytest.raises(PatchFormatError):
        file_diff("pkg/x.py", None, None)


def test_manifest_line_is_toml_that_reads_back() -> None:
    import tomllib

    from driftscan.patches.export import manifest_line

    line = manifest_line('patches/we"ird\\name@1.0.patch', "my-dist", "1.0", "ab" * 32)
    table = tomllib.loads(line)
    assert table == {'patches/we"ird\\name@1.0.patch': {"distribution": "my-dist", "version": "==1.0",
                                                         "sha256": "ab" * 32}}
