"""environment/target.py: venvs, prefixes and bare site-packages resolved from the layout alone."""

from __future__ import annotations

import os

import pytest

from driftscan.core.errors import TargetError
from driftscan.core.values import Target, TargetKind
from driftscan.environment import target as t
from fixtures.envtree import make_venv


def test_venv_is_resolved_from_its_layout(tmp_path):
    venv, site = make_venv(tmp_path / "v", cfg="home = /usr/bin\nversion_info = 3.12.7.final.0\n")
    (venv / "include").mkdir()
    target = t.venv_target(str(venv))
    assert target.kind is TargetKind.VENV
    assert target.venv == str(venv)
    assert target.site_packages == (str(site),)
    assert target.bin_dir == str(venv / "bin")
    assert target.python_version == "3.12"  # version_info wins over the directory name (3.11 here)
    assert target.extra_roots == (str(venv / "include"),)


def test_version_from_the_site_packages_name_when_pyvenv_cfg_says_none(tmp_path):
    venv, site = make_venv(tmp_path / "v", version="3.10", cfg="home = /usr/bin\n")
    target = t.venv_target(str(venv))
    assert target.python_version == "3.10" and target.site_packages == (str(site),)


@pytest.mark.parametrize("shape, message", [
    ("missing", "no such file or directory"),
    ("file", "not a directory"),
    ("plain", "not a virtual environment (no pyvenv.cfg)"),
    ("no-site", "no lib/python3.*/site-packages"),
])
def test_what_is_not_a_venv_is_refused(tmp_path, shape, message):
    path = tmp_path / "x"
    if shape == "file":
        path.write_text("")
    elif shape == "plain":
        path.mkdir()
    elif shape == "no-site":
        path.mkdir()
        (path / "pyvenv.cfg").write_text("version = 3.11.1\n")
    with pytest.raises(TargetError) as err:
        t.venv_target(str(path))
    assert message in str(err.value)


def test_site_packages_linked_out_of_the_venv_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    venv = tmp_path / "v"
    (venv / "lib/python3.11").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("version = 3.11.1\n")
    (venv / "lib/python3.11/site-packages").symlink_to(elsewhere)
    with pytest.raises(TargetError, match="resolves outside the environment"):
        t.venv_target(str(venv))


def test_parts_linked_out_and_an_unreadable_pyvenv_cfg_are_problems(tmp_path):
    venv, _ = make_venv(tmp_path / "v")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "cfg").write_text("version = 3.11.1\n")
    (venv / "pyvenv.cfg").unlink()
    (venv / "pyvenv.cfg").symlink_to(outside / "cfg")  # read only inside the venv
    (venv / "bin").rmdir()
    (venv / "bin").symlink_to(outside)
    target = t.venv_target(str(venv))
    assert target.kind is TargetKind.VENV and target.bin_dir is None  # a bin/ leading out is not walked
    assert target.python_version == "3.11"  # from lib/python3.11
    problems = {p.path: p.message for p in t.target_problems(target)}
    assert problems[str(venv / "pyvenv.cfg")].startswith("cannot read:")
    assert "resolves outside the environment" in problems[str(venv / "bin")]


def test_conda_prefix_without_pyvenv_cfg(tmp_path):
    prefix = tmp_path / "env"
    (prefix / "lib/python3.12/site-packages").mkdir(parents=True)
    (prefix / "bin").mkdir()
    (prefix / "etc").mkdir()
    (prefix / "conda-meta").mkdir()
    bare = t.venv_target(str(prefix))  # conda-meta with no records yet: a prefix, its bin/ not walked
    assert bare.kind is TargetKind.PREFIX and bare.bin_dir is None and bare.extra_roots == ()
    assert not t.is_conda_prefix(str(prefix))
    (prefix / "conda-meta/history").write_text("")
    conda = t.venv_target(str(prefix))
    assert t.is_conda_prefix(str(prefix))
    assert conda.bin_dir == str(prefix / "bin") and conda.extra_roots == (str(prefix / "etc"),)
    assert conda.python_version == "3.12"


def test_is_conda_prefix_looks_at_names_only(tmp_path):
    (tmp_path / "a/conda-meta").mkdir(parents=True)
    (tmp_path / "a/conda-meta/pkg-1.0-0.json").write_text("not even json")
    (tmp_path / "b").mkdir()
    (tmp_path / "b/conda-meta").write_text("a file")
    assert t.is_conda_prefix(str(tmp_path / "a"))
    assert not t.is_conda_prefix(str(tmp_path / "b"))
    assert not t.is_conda_prefix(str(tmp_path / "c"))


def test_site_packages_target_and_its_version(tmp_path):
    named = tmp_path / "lib/python3.9/site-packages"
    named.mkdir(parents=True)
    assert t.site_packages_target([str(named)]).python_version == "3.9"
    plain = tmp_path / "target-dir"
    (plain / "__pycache__").mkdir(parents=True)
    (plain / "__pycache__/six.cpython-312.pyc").write_bytes(b"")
    target = t.site_packages_target([str(plain), str(plain)])
    assert target.kind is TargetKind.SITE_PACKAGES and target.venv is None
    assert target.site_packages == (str(plain),)  # named twice, listed once
    assert target.python_version == "3.12"  # from the bytecode's tag
    with pytest.raises(TargetError, match="no such file"):
        t.site_packages_target([str(tmp_path / "nope")])


def test_resolve_target_adds_site_packages_to_a_venv(tmp_path):
    venv, site = make_venv(tmp_path / "v")
    extra = tmp_path / "extra"
    extra.mkdir()
    merged = t.resolve_target(str(venv), [str(extra)])
    assert merged.kind is TargetKind.VENV and merged.site_packages == (str(site), str(extra))
    alone = t.resolve_target(None, [str(extra)])
    assert alone.kind is TargetKind.SITE_PACKAGES and alone.site_packages == (str(extra),)


def test_prefix_layouts_and_roots(tmp_path):
    site = f"{tmp_path}/usr/lib/python3/dist-packages"
    assert t.is_prefix_site_packages(f"{tmp_path}/pfx/lib/python3.11/site-packages")
    assert t.site_packages_prefix(f"{tmp_path}/pfx/lib64/python3.11/site-packages") == (f"{tmp_path}/pfx", "3.11")
    assert t.site_packages_prefix(site) == (f"{tmp_path}/usr", None)
    assert t.site_packages_prefix(f"{tmp_path}/target-dir") is None
    assert t.site_packages_root(site) == f"{tmp_path}/usr"  # RECORD rows reach ../../../bin
    assert t.site_packages_root(f"{tmp_path}/target-dir") == f"{tmp_path}/target-dir"
    venv = f"{tmp_path}/v"
    target = Target(TargetKind.VENV, venv, (f"{venv}/lib/python3.11/site-packages", site))
    assert t.environment_roots(target) == (venv, f"{tmp_path}/usr")
    containment = t.containment_for(target, (f"{tmp_path}/uvcache",))
    assert tuple(containment.roots) == (venv, f"{tmp_path}/usr")


def test_install_location_of_each_kind(tmp_path):
    venv = Target(TargetKind.VENV, "/v", ("/v/lib/python3.11/site-packages",))
    assert t.install_location(venv, "/v/lib/python3.11/site-packages") == \
        t.InstallLocation("/v/bin/python", (), ("--python", "/v"))
    prefix = tmp_path / "pfx"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin/python3.11").write_text("")
    site = str(prefix / "lib/python3.11/site-packages")
    bare = Target(TargetKind.SITE_PACKAGES, None, (site,))
    found = t.install_location(bare, site)
    assert found.python == str(prefix / "bin/python3.11") and found.note is None  # looked up, not run
    target_dir = Target(TargetKind.SITE_PACKAGES, None, ("/srv/deps",), python_version=None)
    unknown = t.install_location(target_dir, "/srv/deps")
    assert unknown.pip == ("--target", "/srv/deps", "--upgrade")
    assert t.PYTHON_PLACEHOLDER in unknown.uv and "name the Python" in unknown.note
    versioned = t.install_location(Target(TargetKind.SITE_PACKAGES, None, ("/srv/deps",), python_version="3.12"),
                                   "/srv/deps")
    assert versioned.python == "python3.12" and versioned.uv[-2:] == ("--python", "python3.12")


def test_interpreter_in_takes_a_regular_file_or_a_link_to_one(tmp_path):
    (tmp_path / "bin").mkdir()
    assert t.interpreter_in(str(tmp_path), "3.11") is None
    (tmp_path / "bin/python3").symlink_to(tmp_path / "nowhere")  # dangling: not an interpreter
    assert t.interpreter_in(str(tmp_path), "3.11") is None
    (tmp_path / "real").write_text("")
    (tmp_path / "bin/python").symlink_to(tmp_path / "real")
    assert t.interpreter_in(str(tmp_path), "3.11") == os.path.join(tmp_path, "bin", "python")


def test_read_pyvenv_cfg_parses_and_refuses(tmp_path):
    cfg = tmp_path / "pyvenv.cfg"
    cfg.write_text("Home = /usr/bin\ninclude-system-site-packages = false\nno equals here\n")
    assert t.read_pyvenv_cfg(str(cfg)) == {"home": "/usr/bin", "include-system-site-packages": "false"}
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(TargetError, match="cannot read"):
        t.read_pyvenv_cfg(str(tmp_path / "fifo"))  # never opened for reading: no hang
