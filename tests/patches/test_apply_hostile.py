"""``patch apply`` against hostile patch files and trees: paths out of the install root, ``..``,
absolute, through a symlink in the environment, a file created outside the distribution, a huge
hunk. Each is refused in one line and nothing is written (the file system is checked)."""

from __future__ import annotations

import os

import pytest

from fixtures.envtree import install, make_venv
from fixtures.patchfiles import file_diff, header, patch_text
from fixtures.wheels import record_hash

from driftscan.patches.apply import FileState, PatchState, Source, apply_patches
from driftscan.patches.manifest import from_directory

CORE = "def alpha():\n    return 1\n\n\ndef beta():\n    return 2\n"
SUB = "VALUE = 1\n"


@pytest.fixture
def env(tmp_path):
    venv, site = make_venv(tmp_path / "venv")
    install(site, "toy-fix", "1.0", {"toyfix/__init__.py": "", "toyfix/core.py": CORE, "toyfix/sub/mod.py": SUB})
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "mod.py").write_text(SUB)
    return site, tmp_path / "patches", outside


def _snapshot(*roots):
    seen = {}
    for root in roots:
        for dirpath, dirs, files in os.walk(root):
            for name in files + dirs:
                path = os.path.join(dirpath, name)
                st = os.lstat(path)
                seen[path] = (st.st_mode, st.st_size, st.st_mtime_ns,
                              open(path, "rb").read() if os.path.isfile(path) and not os.path.islink(path) else None)
    return seen


def _apply(site, patches, text, yes=True):
    patches.mkdir(exist_ok=True)
    (patches / "toy-fix@1.0.patch").write_text(text)
    return apply_patches([str(site)], Source(tuple(from_directory(str(patches))), directory=str(patches)), yes=yes)


def _refused(report):
    (patch,) = report.patches
    assert patch.state is PatchState.REFUSED, patch
    assert patch.message and "\n" not in patch.message
    assert not report.written and report.record is None
    return patch.message


@pytest.mark.parametrize("path", ["../evil.py", "/etc/evil.py", "toyfix/../../evil.py", "toyfix/./core.py",
                                  "toy_fix-1.0.dist-info/RECORD"])
def test_a_path_out_of_the_root_is_refused_and_nothing_written(env, path):
    site, patches, outside = env
    before = _snapshot(site, outside)
    text = header("toy-fix", "1.0", [(path, None)]) + file_diff(path, None, "import os\n")
    _refused(_apply(site, patches, text))
    assert _snapshot(site, outside) == before
    assert not os.path.exists("/etc/evil.py")


def test_a_body_that_names_other_files_than_the_header_is_refused(env):
    site, patches, outside = env
    before = _snapshot(site, outside)
    good = patch_text("toy-fix", "1.0", {"toyfix/core.py": (CORE, CORE.replace("1", "10"))})
    sneaky = good + file_diff("toyfix/sub/mod.py", SUB, "VALUE = 'pwned'\n")
    _refused(_apply(site, patches, sneaky))
    assert _snapshot(site, outside) == before


def test_a_symlink_on_the_way_is_not_followed(env):
    site, patches, outside = env
    (site / "toyfix/sub/mod.py").unlink()
    (site / "toyfix/sub").rmdir()
    (site / "toyfix/sub").symlink_to(outside, target_is_directory=True)
    before = _snapshot(site, outside)
    text = patch_text("toy-fix", "1.0", {"toyfix/sub/mod.py": (SUB, "VALUE = 'pwned'\n")})
    message = _refused(_apply(site, patches, text))
    assert "symlink" in message
    assert (outside / "mod.py").read_text() == SUB
    assert _snapshot(site, outside) == before


def test_a_symlinked_file_is_not_written_through(env):
    site, patches, outside = env
    (site / "toyfix/sub/mod.py").unlink()
    (site / "toyfix/sub/mod.py").symlink_to(outside / "mod.py")
    text = patch_text("toy-fix", "1.0", {"toyfix/sub/mod.py": (SUB, "VALUE = 'pwned'\n")})
    _refused(_apply(site, patches, text))
    assert (outside / "mod.py").read_text() == SUB
    assert os.path.islink(site / "toyfix/sub/mod.py")


def test_a_new_file_through_a_symlinked_directory_is_not_created(env):
    site, patches, outside = env
    (site / "toyfix/link").symlink_to(outside, target_is_directory=True)
    before = _snapshot(site, outside)
    text = patch_text("toy-fix", "1.0", {"toyfix/link/new.py": (None, "import os\n")})
    message = _refused(_apply(site, patches, text))
    assert "symlink" in message
    assert not (outside / "new.py").exists()
    assert _snapshot(site, outside) == before


def test_a_dangling_symlink_or_a_file_on_the_way_of_a_new_file_is_refused(env):
    site, patches, outside = env
    (site / "toyfix/dangling").symlink_to(outside / "later", target_is_directory=True)
    for path in ("toyfix/dangling/new.py", "toyfix/core.py/new.py"):
        before = _snapshot(site, outside)
        _refused(_apply(site, patches, patch_text("toy-fix", "1.0", {path: (None, "import os\n")})))
        assert _snapshot(site, outside) == before and not (outside / "later").exists()


@pytest.mark.parametrize("path", ["evil.pth", "sitecustomize.py", "otherpkg/__init__.py"])
def test_a_new_file_outside_the_distributions_directories_is_refused(env, path):
    site, patches, outside = env
    before = _snapshot(site, outside)
    text = patch_text("toy-fix", "1.0", {path: (None, "import os; os.system('id')\n")})
    message = _refused(_apply(site, patches, text))
    assert "toyfix" in message
    assert not (site / path).exists()
    assert _snapshot(site, outside) == before


def test_a_file_the_record_does_not_list_is_not_edited(env):
    site, patches, outside = env
    (site / "toyfix/local.py").write_text(SUB)
    text = patch_text("toy-fix", "1.0", {"toyfix/local.py": (SUB, "VALUE = 2\n")})
    assert "RECORD does not list it" in _refused(_apply(site, patches, text))
    assert (site / "toyfix/local.py").read_text() == SUB


def test_a_huge_hunk_is_refused(env):
    site, patches, outside = env
    before = _snapshot(site, outside)
    body = "".join(f" line {n}\n" for n in range(150_000))
    big = header("toy-fix", "1.0", [("toyfix/core.py", record_hash(CORE.encode()))]) + \
        "diff --git a/toyfix/core.py b/toyfix/core.py\n--- a/toyfix/core.py\n+++ b/toyfix/core.py\n" + \
        "@@ -1,150001 +1,150001 @@\n-def alpha():\n+def omega():\n" + body
    message = _refused(_apply(site, patches, big))
    assert "150,002 lines" in message
    assert _snapshot(site, outside) == before


def test_a_conflicting_file_is_written_not_at_all(env):
    site, patches, outside = env
    edited = CORE.replace("return 1", "return 10").replace("return 2", "return 20")
    (site / "toyfix/core.py").write_text(CORE.replace("return 2", "return 99"))
    before = _snapshot(site, outside)
    report = _apply(site, patches, patch_text("toy-fix", "1.0", {"toyfix/core.py": (CORE, edited)}))
    (patch,) = report.patches
    (f,) = patch.files
    assert patch.state is PatchState.CONFLICT and f.state is FileState.CONFLICT
    assert [h.state.value for h in f.hunks] == ["conflict"]  # one hunk: both changes are within its context
    assert any("return 99" in line for line in f.hunks[0].found)
    assert not report.written and _snapshot(site, outside) == before
