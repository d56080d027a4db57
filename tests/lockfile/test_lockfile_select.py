"""Which packages a lock gives one environment: uv.lock's graph walk, the flat formats' markers,
and the locked wheel an installed distribution's tags match."""

from __future__ import annotations

import hashlib
import platform
import sys

import pytest

from driftscan.lockfile.markers import marker_environment, marker_holds
from driftscan.lockfile.model import LockError, LockedFile, LockedPackage, SourceKind
from driftscan.lockfile.read import read_lock
from driftscan.lockfile.select import select, wheel_for

OTHER_PLATFORM = "win32" if sys.platform != "win32" else "linux"

UV_GRAPH = f'''
version = 1
revision = 3
requires-python = ">=3.8"

[[package]]
name = "app"
version = "0.1.0"
source = {{ virtual = "." }}
dependencies = [
    {{ name = "lib", extra = ["fast"] }},
    {{ name = "winonly", marker = "sys_platform == '{OTHER_PLATFORM}'" }},
    {{ name = "old", version = "1.0", source = {{ registry = "https://pypi.org/simple" }}, marker = "python_full_version < '3.10'" }},
    {{ name = "old", version = "2.0", source = {{ registry = "https://pypi.org/simple" }}, marker = "python_full_version >= '3.10'" }},
]

[package.optional-dependencies]
cli = [{{ name = "click" }}]

[package.dev-dependencies]
dev = [{{ name = "pytest" }}]
docs = [{{ name = "sphinx" }}]

[[package]]
name = "lib"
version = "1.0"
source = {{ registry = "https://pypi.org/simple" }}
dependencies = [{{ name = "lib" }}]

[package.optional-dependencies]
fast = [{{ name = "speedup" }}]
slow = [{{ name = "never" }}]

[[package]]
name = "old"
version = "1.0"
source = {{ registry = "https://pypi.org/simple" }}

[[package]]
name = "old"
version = "2.0"
source = {{ registry = "https://pypi.org/simple" }}

[[package]]
name = "member"
version = "0.2"
source = {{ editable = "packages/member" }}
dependencies = [{{ name = "memberdep" }}]

[manifest]
members = ["app", "member"]
'''
NAMES = ["speedup", "never", "winonly", "click", "pytest", "sphinx", "memberdep"]
UV_GRAPH += "".join(f'\n[[package]]\nname = "{n}"\nversion = "1"\nsource = {{ registry = "https://pypi.org/simple" }}\n'
                    for n in NAMES)


def test_uv_graph_walk(tmp_path):
    path = tmp_path / "uv.lock"
    path.write_text(UV_GRAPH)
    selection = select(read_lock(str(path)), marker_environment("3.11.4"))
    # the virtual root itself is never installed; lib's cycle back to itself ends the walk
    assert set(selection.required) == {"lib", "speedup", "old", "pytest"}
    assert selection.required["old"].version == "2.0"
    assert set(selection.optional) == {"click", "sphinx", "member", "memberdep"}
    assert set(selection.excluded) == {"winonly"}
    assert OTHER_PLATFORM in selection.excluded["winonly"]
    older = select(read_lock(str(path)), marker_environment("3.9"))
    assert older.required["old"].version == "1.0"


def test_requires_python_excludes_everything(tmp_path):
    path = tmp_path / "uv.lock"
    path.write_text(UV_GRAPH)
    selection = select(read_lock(str(path)), marker_environment("3.7.9"))
    assert selection.required == {} and selection.optional == {}
    assert "requires-python >=3.8" in selection.excluded["lib"]


def test_flat_markers_and_unevaluable_marker_kept(tmp_path):
    path = tmp_path / "pylock.toml"
    path.write_text(f'''lock-version = "1.0"
[[packages]]
name = "here"
marker = "sys_platform == '{sys.platform}'"
[[packages]]
name = "elsewhere"
marker = "sys_platform == '{OTHER_PLATFORM}'"
[[packages]]
name = "strange"
marker = "no_such_variable == '1'"
[[packages]]
name = "newpython"
requires-python = ">=3.99"
''')
    selection = select(read_lock(str(path)), marker_environment("3.11.0"))
    assert set(selection.required) == {"here", "strange"}
    assert set(selection.excluded) == {"elsewhere", "newpython"}
    assert any("strange" in note and "could not be evaluated" in note for note in selection.lock.notes)


def test_poetry_optional_is_optional(tmp_path):
    path = tmp_path / "poetry.lock"
    path.write_text('[[package]]\nname = "a"\nversion = "1"\noptional = true\n'
                    '[[package]]\nname = "b"\nversion = "1"\n[metadata]\ncontent-hash = "x"\n')
    selection = select(read_lock(str(path)), marker_environment("3.12.1"))
    assert set(selection.required) == {"b"} and set(selection.optional) == {"a"}


def test_requirements_every_line_required_markers_apply(tmp_path):
    path = tmp_path / "requirements.txt"
    path.write_text(f"six==1.17.0\ncolorama==0.4.6 ; sys_platform == '{OTHER_PLATFORM}'\n")
    selection = select(read_lock(str(path)), marker_environment("3.11.2"))
    assert set(selection.required) == {"six"} and set(selection.excluded) == {"colorama"}


def test_marker_environment_uses_given_python_and_this_platform():
    env = marker_environment("3.9.18", "PyPy")
    assert env["python_version"] == "3.9" and env["python_full_version"] == "3.9.18"
    assert env["implementation_name"] == "pypy" and env["platform_python_implementation"] == "PyPy"
    assert env["sys_platform"] == sys.platform and env["platform_machine"] == platform.machine()
    assert marker_environment("3.12")["python_full_version"] == "3.12.0"
    assert marker_holds("python_version >= '3.9' and python_version < '3.10'", env) is True
    assert marker_holds("extra == 'x'", env) is False
    assert marker_holds("not a marker", env) is None


@pytest.mark.parametrize("bad", ["", "three", "3", "3.x.1"])
def test_marker_environment_refuses_a_bad_version(bad):
    with pytest.raises(LockError, match="not a Python version"):
        marker_environment(bad)


def _wheel(name: str) -> LockedFile:
    return LockedFile(filename=name, url=None, sha256=hashlib.sha256(name.encode()).hexdigest(), size=None,
                      is_wheel=name.endswith(".whl"))


def test_wheel_for_matches_installed_tags():
    files = (_wheel("pkg-1.0.tar.gz"), _wheel("pkg-1.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"),
             _wheel("pkg-1.0-cp312-cp312-win_amd64.whl"), _wheel("pkg-1.0-py3-none-any.whl"))
    package = LockedPackage(name="pkg", version="1.0", source=SourceKind.REGISTRY, location=None, files=files,
                            marker=None)
    assert wheel_for(package, ["cp312-cp312-win_amd64"]) is files[2]
    assert wheel_for(package, ["cp311-cp311-manylinux2014_x86_64"]) is files[1]
    assert wheel_for(package, ["py2.py3-none-any"]) is files[3]
    assert wheel_for(package, ["cp310-cp310-macosx_11_0_arm64", "not a tag"]) is None
    nameless = LockedPackage(name="pkg", version="1.0", source=SourceKind.REGISTRY, location=None,
                             files=(LockedFile(None, None, "0" * 64, None, False),), marker=None)
    assert wheel_for(nameless, ["py3-none-any"]) is None


def test_pylock_markers_naming_extras_and_groups(tmp_path):
    """PEP 751: a package for an extra or a non-default group is optional, one for a default group
    required, one whose marker no selection makes true excluded."""
    path = tmp_path / "pylock.toml"
    path.write_text(f'''lock-version = "1.0"
extras = ["cli"]
dependency-groups = ["dev", "docs"]
default-groups = ["dev"]
[[packages]]
name = "pytest"
marker = "'dev' in dependency_groups"
[[packages]]
name = "sphinx"
marker = "'docs' in dependency_groups"
[[packages]]
name = "click"
marker = "'cli' in extras"
[[packages]]
name = "winclick"
marker = "'cli' in extras and sys_platform == '{OTHER_PLATFORM}'"
[[packages]]
name = "six"
''')
    selection = select(read_lock(str(path)), marker_environment("3.12.3"))
    assert set(selection.required) == {"pytest", "six"}
    assert set(selection.optional) == {"sphinx", "click"}
    assert set(selection.excluded) == {"winclick"}
