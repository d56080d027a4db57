"""fs.containment: only paths under the environment's roots are read, by their real location;
symlinks are followed only to the roots or to the known link roots (caches)."""

from __future__ import annotations

import errno
import os

import pytest

from driftscan.fs.containment import Containment


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "venv"
    (root / "lib" / "pkg").mkdir(parents=True)
    (root / "lib" / "pkg" / "mod.py").write_text("x = 1\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("secret")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "shared.py").write_text("shared\n")
    return root, outside, cache


def test_row_inside_is_readable(tree):
    root, _, _ = tree
    c = Containment([str(root)])
    path = str(root / "lib" / "pkg" / "mod.py")
    assert c.row_problem(path) is None
    assert c.readable(path) == path


def test_rows_outside_the_roots_are_refused(tree, tmp_path):
    root, outside, _ = tree
    c = Containment([str(root)])
    assert "outside the environment" in c.row_problem("/etc/shadow")
    traversal = os.path.normpath(str(root / "lib" / ".." / ".." / "outside" / "secret"))
    assert c.row_problem(traversal) is not None
    with pytest.raises(OSError) as info:
        c.readable(str(outside / "secret"))
    assert info.value.errno == errno.EXDEV
    sibling = tmp_path / "venv2"
    sibling.mkdir()
    assert c.row_problem(str(sibling / "f")) is not None, "a shared name prefix is not inside"


def test_symlinked_directory_leaving_the_roots_is_refused(tree):
    root, outside, _ = tree
    (root / "lib" / "escape").symlink_to(outside)
    c = Containment([str(root)])
    problem = c.row_problem(str(root / "lib" / "escape" / "secret"))
    assert problem is not None and "symlink" in problem and str(outside) in problem
    with pytest.raises(OSError, match="not followed"):
        c.readable(str(root / "lib" / "escape" / "secret"))


def test_symlinked_directory_staying_inside_is_fine(tree):
    root, _, _ = tree
    (root / "alias").symlink_to(root / "lib")
    c = Containment([str(root)])
    assert c.row_problem(str(root / "alias" / "pkg" / "mod.py")) is None


def test_file_symlink_followed_only_to_roots_or_link_roots(tree):
    root, outside, cache = tree
    (root / "lib" / "to_secret.py").symlink_to(outside / "secret")
    (root / "lib" / "to_cache.py").symlink_to(cache / "shared.py")
    (root / "lib" / "to_inside.py").symlink_to("pkg/mod.py")
    plain = Containment([str(root)])
    with pytest.raises(OSError) as info:
        plain.readable(str(root / "lib" / "to_secret.py"))
    assert info.value.errno == errno.EXDEV and str(outside / "secret") in str(info.value)
    with pytest.raises(OSError):
        plain.readable(str(root / "lib" / "to_cache.py"))
    assert plain.readable(str(root / "lib" / "to_inside.py")) == str(root / "lib" / "pkg" / "mod.py")

    with_cache = Containment([str(root)], link_roots=[str(cache)])
    assert with_cache.readable(str(root / "lib" / "to_cache.py")) == str(cache / "shared.py")
    with pytest.raises(OSError):
        with_cache.readable(str(root / "lib" / "to_secret.py"))
    # a link root is a place links may lead, not a root whose rows are read
    assert with_cache.row_problem(str(cache / "shared.py")) is not None


def test_relative_link_with_dotdot_is_resolved_fully(tree):
    root, outside, _ = tree
    (root / "lib" / "up").symlink_to("../../outside/secret")
    c = Containment([str(root)])
    assert c.follow(str(root / "lib" / "up"), "../../outside/secret") is None
    (root / "lib" / "up_ok").symlink_to("../lib/pkg/mod.py")
    assert c.follow(str(root / "lib" / "up_ok"), "../lib/pkg/mod.py") == os.path.realpath(root / "lib" / "pkg" / "mod.py")


def test_chained_link_resolved_to_its_end(tree):
    root, outside, _ = tree
    (root / "lib" / "hop").symlink_to(outside / "secret")
    (root / "lib" / "first").symlink_to("hop")  # inside, but pointing at a link that leaves
    c = Containment([str(root)])
    with pytest.raises(OSError, match="outside the environment"):
        c.readable(str(root / "lib" / "first"))


def test_absent_file_is_file_not_found(tree):
    root, _, _ = tree
    c = Containment([str(root)])
    with pytest.raises(FileNotFoundError):
        c.readable(str(root / "lib" / "missing.py"))


def test_roots_given_through_a_symlink(tree, tmp_path):
    root, _, _ = tree
    alias = tmp_path / "alias"
    alias.symlink_to(root)
    c = Containment([str(alias)])
    assert c.row_problem(str(alias / "lib" / "pkg" / "mod.py")) is None
    assert c.row_problem(str(root / "lib" / "pkg" / "mod.py")) is None, "the real location is a root too"
    assert c.resolve(str(alias / "lib" / "pkg" / "mod.py")) == str(root / "lib" / "pkg" / "mod.py")
    assert c.real_inside(str(root)) and not c.real_inside(str(tmp_path))
