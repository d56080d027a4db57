"""reinstall.guard.command: what an install command's argv reinstalls, and from where, read from
its words and the requirements files it names; the command is never run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from driftscan.reinstall.guard import pipoptions
from driftscan.reinstall.guard.command import Change, Requested, Tool, normalize, recognise, wheel_name


@pytest.fixture
def venv(tmp_path):
    """A venv-shaped directory whose pip and python would leave a marker if anything ran them."""
    root = tmp_path / "venv"
    (root / "bin").mkdir(parents=True)
    (root / "pyvenv.cfg").write_text("home = /usr/bin\n")
    python = root / "bin" / "python"
    python.write_text(f"#!/bin/sh\ntouch {tmp_path}/RAN\n")
    python.chmod(0o755)
    for name in ("pip", "pip3"):  # a console script as pip writes it: its shebang names the venv's python
        script = root / "bin" / name
        script.write_text(f"#!{python}\nimport os\nopen('{tmp_path}/RAN', 'w')\n")
        script.chmod(0o755)
    return root


@pytest.fixture(autouse=True)
def nothing_runs(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError(f"recognise ran something: {args}")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(os, "execv", refuse)
    monkeypatch.setattr(os, "execve", refuse)
    monkeypatch.setattr(os, "system", refuse)


@pytest.fixture(autouse=True)
def no_machine_config(monkeypatch, tmp_path_factory):
    """pip's and uv's configuration files are this test's own: none unless it writes them."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setattr(pipoptions, "SYSTEM_CONFIG", str(home / "etc-pip.conf"))
    for name in ("HOME", "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS"):
        monkeypatch.setenv(name, str(home))
    for name in [n for n in os.environ if n.startswith(("PIP_", "UV_"))] + ["VIRTUAL_ENV", "CONDA_PREFIX"]:
        monkeypatch.delenv(name, raising=False)
    return home


def _env(venv, **more: str) -> dict[str, str]:
    home = os.environ["HOME"]
    return {"PATH": str(venv / "bin"), "HOME": home, "XDG_CONFIG_DIRS": home, **more}


def test_pip_force_reinstall_of_pinned_names(venv, tmp_path):
    r = recognise(["pip", "install", "--force-reinstall", "--no-deps", "Torch_Utils==2.1.0", "vllm"],
                  env=_env(venv), cwd=str(tmp_path))
    assert r.tool is Tool.PIP and r.recognised
    assert r.requested == (Requested("torch-utils", "2.1.0"), Requested("vllm"))
    assert r.forced and r.no_deps and not r.upgrade
    assert r.environment == str(venv), "pip on PATH belongs to this venv"
    assert r.source == "index"
    assert r.change("vllm", "0.6") is Change.REINSTALL
    assert r.change("numpy", "1.0") is Change.NONE, "not named: left as it is"
    assert not (tmp_path / "RAN").exists()


def test_pip_without_force_only_reinstalls_another_version(venv, tmp_path):
    r = recognise([str(venv / "bin" / "python"), "-m", "pip", "install", "demo==2.0", "other==1.0", "plain"],
                  cwd=str(tmp_path))
    assert r.tool is Tool.PIP and r.environment == str(venv)
    assert not r.forced
    assert r.change("demo", "1.0") is Change.REINSTALL
    assert r.change("other", "1.0") is Change.NONE, "already satisfied"
    assert r.change("plain", "3.0") is Change.NONE


def test_upgrade_is_maybe(venv, tmp_path):
    r = recognise(["pip", "install", "-Uq", "demo"], env=_env(venv), cwd=str(tmp_path))
    assert r.upgrade, "bundled short flags are read one by one"
    assert r.change("demo", "1.0") is Change.MAYBE


def test_a_wheel_file_is_the_source(venv, tmp_path):
    wheel = tmp_path / "dist" / "demo_pkg-1.0-py3-none-any.whl"
    r = recognise(["pip", "install", "dist/demo_pkg-1.0-py3-none-any.whl"], env=_env(venv), cwd=str(tmp_path))
    assert r.requested == (Requested("demo-pkg", "1.0", str(wheel)),)
    assert r.source == str(wheel) and r.source_why == "the command installs this wheel file"
    assert r.wheel_dirs == (str(tmp_path / "dist"),)
    assert r.change("demo-pkg", "1.0") is Change.MAYBE, "the same version from a file"
    assert r.change("demo-pkg", "0.9") is Change.REINSTALL


def test_find_links_with_no_index(venv, tmp_path):
    (tmp_path / "house").mkdir()
    r = recognise(["pip", "install", "--no-index", "--find-links", "house", "demo"], env=_env(venv),
                  cwd=str(tmp_path))
    assert r.source == str(tmp_path / "house") and r.source_why == "--find-links with --no-index"
    r = recognise(["pip", "install", "-fhouse", "demo"], env=_env(venv), cwd=str(tmp_path))
    assert r.source == str(tmp_path / "house") and any("the index" in n for n in r.notes)
    r = recognise(["pip", "install", "--no-index", "demo"], env=_env(venv), cwd=str(tmp_path))
    assert r.source is None


def test_requirements_file_names_and_options(venv, tmp_path):
    (tmp_path / "house").mkdir()
    (tmp_path / "base.txt").write_text("numpy==1.26.4\n")
    (tmp_path / "reqs.txt").write_text("# pinned\n-r base.txt\n--find-links house\n--no-index\n"
                                       "demo == 2.0 ; python_version > '3'\nextra[gpu]>=1 \\\n  # cont\n"
                                       "./local/project\n-e ./editable\nfoo @ https://x/foo-1.0-py3-none-any.whl\n")
    r = recognise(["pip", "install", "-r", "reqs.txt"], env=_env(venv), cwd=str(tmp_path))
    assert {q.name: q.version for q in r.requested} == {"numpy": "1.26.4", "demo": "2.0", "extra": None, "foo": "1.0"}
    assert "./local/project" in r.unnamed and "-e ./editable" in r.unnamed
    assert r.source == str(tmp_path / "house")


def test_requirements_file_outside_its_directory_is_not_read(venv, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("should-not-be-read\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "reqs.txt").write_text("-r ../secret.txt\ndemo\n")
    r = recognise(["pip", "install", "-r", "project/reqs.txt"], env=_env(venv), cwd=str(tmp_path))
    assert [q.name for q in r.requested] == ["demo"]
    assert str(secret) in r.unnamed and any("outside its directory" in n for n in r.notes)


def test_unreadable_requirements_are_a_note(venv, tmp_path):
    os.mkfifo(tmp_path / "fifo.txt")
    r = recognise(["pip", "install", "-r", "fifo.txt", "-r", "https://example.invalid/r.txt"], env=_env(venv),
                  cwd=str(tmp_path))
    assert r.requested == ()
    assert any("cannot read the requirements file" in n for n in r.notes)
    assert any("at a URL is not read" in n for n in r.notes)


def test_uv_pip_install_command(venv, tmp_path):
    r = recognise(["uv", "pip", "install", "--python", str(venv / "bin" / "python"), "--reinstall-package", "Demo",
                   "-P", "other", "--no-cache", "x==1"], env={}, cwd=str(tmp_path))
    assert r.tool is Tool.UV_PIP and r.environment == str(venv) and r.no_cache
    assert r.names() == {"demo", "other", "x"}
    assert r.change("demo", "1.0") is Change.REINSTALL
    assert r.change("other", "1.0") is Change.MAYBE
    r = recognise(["uv", "pip", "install", "--reinstall", "demo"], env={"VIRTUAL_ENV": str(venv)}, cwd=str(tmp_path))
    assert r.forced and r.environment == str(venv) and r.environment_why == "uv uses VIRTUAL_ENV"


def test_uv_finds_the_dot_venv_upward(tmp_path):
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("")
    sub = tmp_path / "src"
    sub.mkdir()
    r = recognise(["uv", "pip", "install", "demo"], env={}, cwd=str(sub))
    assert r.environment == str(tmp_path / ".venv")


def test_uv_sync_reinstall_all(tmp_path):
    r = recognise(["uv", "sync", "--reinstall"], env={}, cwd=str(tmp_path))
    assert r.tool is Tool.UV_SYNC and r.reinstall_all
    assert r.change("anything", "1") is Change.REINSTALL
    assert r.environment == str(tmp_path / ".venv")
    plain = recognise(["uv", "sync"], env={"UV_PROJECT_ENVIRONMENT": "/envs/p"}, cwd=str(tmp_path))
    assert plain.environment == "/envs/p" and not plain.reinstall_all
    assert plain.change("anything", "1") is Change.NONE


def test_conda_and_pixi(tmp_path):
    r = recognise(["mamba", "install", "-p", "/opt/env", "--force-reinstall", "conda-forge::numpy=1.26.4=py312h_0",
                   "scipy"], cwd=str(tmp_path))
    assert r.tool is Tool.CONDA and r.environment == "/opt/env" and r.forced
    assert r.requested == (Requested("numpy", "1.26.4"), Requested("scipy"))
    assert recognise(["conda", "update", "numpy"], cwd=str(tmp_path)).upgrade
    assert recognise(["conda", "list"], cwd=str(tmp_path)).tool is Tool.OTHER
    all_ = recognise(["pixi", "reinstall"], cwd=str(tmp_path))
    assert all_.tool is Tool.PIXI and all_.reinstall_all
    some = recognise(["pixi", "reinstall", "numpy"], cwd=str(tmp_path))
    assert some.change("numpy", "1") is Change.REINSTALL and some.change("scipy", "1") is Change.NONE


@pytest.mark.parametrize("argv,note", [
    ([], "no command"),
    (["FOO=1", "pip", "install", "x"], "without a shell"),
    (["make", "install"], "not an installer"),
    (["pip", "uninstall", "x"], "not an install"),
    (["uv", "tool", "install", "x"], "not an install"),
])
def test_anything_else_is_other(argv, note, tmp_path):
    r = recognise(argv, env={}, cwd=str(tmp_path))
    assert r.tool is Tool.OTHER and not r.recognised
    assert any(note in n for n in r.notes)
    assert r.change("x", "1") is Change.NONE


def test_wheel_name_and_normalize():
    assert wheel_name("/w/Foo_Bar-1.0.post1-py3-none-any.whl") == ("foo-bar", "1.0.post1")
    assert wheel_name("foo-1.0-1-cp312-cp312-linux_x86_64.whl") == ("foo", "1.0")
    assert wheel_name("foo-1.0.tar.gz") is None and wheel_name("notawheel.whl") is None
    assert normalize("A.b__C") == "a-b-c"


# ------------------------------------------------------------------ the environment a command changes

@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """(V, V2): a real venv (stdlib venv, its own pip) and a ``cp -a`` copy of it, whose bin/pip
    still names V's interpreter in its shebang."""
    from fixtures.upgrades import pip_venv

    copy = pip_venv(tmp_path_factory, "guard-copy")  # itself a cp -a copy of a venv made once per run
    shebang = (copy / "bin/pip").read_text().splitlines()[0]
    original = Path(shebang[2:]).parent.parent
    assert original != copy and (original / "pyvenv.cfg").is_file(), shebang  # the situation
    return original, copy


@pytest.fixture(scope="module")
def linked_python(real, tmp_path_factory):
    """(a link outside any venv to V's python, the sys.prefix that python reports when run through it)."""
    link = tmp_path_factory.mktemp("elsewhere") / "python3"
    link.symlink_to(real[0] / "bin/python")
    prefix = subprocess.run([str(link), "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True,
                            check=True).stdout.strip()  # python's own word (the test runs it; recognise never does)
    return link, prefix


@pytest.fixture(scope="module")
def long_venv(real, tmp_path_factory):
    """A real venv at a path too long for a shebang, its pip reinstalled there: pip writes its
    ``#!/bin/sh`` + ``exec`` launcher."""
    import ensurepip

    long_dir = tmp_path_factory.mktemp("long") / ("d" * 60) / ("e" * 60)
    long_dir.parent.mkdir()
    subprocess.run(["cp", "-a", str(real[1]), str(long_dir)], check=True)
    bundled = Path(ensurepip.__file__).parent / "_bundled"
    subprocess.run([str(long_dir / "bin/python"), "-m", "pip", "install", "-q", "--no-cache-dir", "--no-index",
                    "--find-links", str(bundled), "--force-reinstall", "--no-deps", "pip"], check=True)
    return long_dir


def test_pips_launcher_for_a_long_path(long_venv, tmp_path):
    head = (long_venv / "bin/pip").read_text().splitlines()[:2]
    assert head[0] == "#!/bin/sh" and head[1].startswith("\'\'\'exec' "), head  # the situation
    r = recognise([str(long_venv / "bin/pip"), "install", "six"], env=_env(long_venv), cwd=str(tmp_path))
    assert r.environment == str(long_venv) and not r.environment_unsure
    assert "/bin/sh launcher" in r.environment_why


def test_a_copied_venvs_pip_changes_the_venv_its_shebang_names(real, tmp_path):
    original, copy = real
    r = recognise([str(copy / "bin/pip"), "install", "six"], env=_env(copy), cwd=str(tmp_path))
    assert r.environment == str(original) and not r.environment_unsure
    assert f"runs {original}/bin/python" in r.environment_why
    r = recognise(["pip", "install", "six"], env=_env(copy), cwd=str(tmp_path))
    assert r.environment == str(original), "pip found on PATH in the copy: the same script"
    r = recognise([str(copy / "bin/python"), "-m", "pip", "install", "six"], env=_env(copy), cwd=str(tmp_path))
    assert r.environment == str(copy), "the copy's own interpreter: its pyvenv.cfg"


def test_python_m_pip_follows_symlinks_the_way_python_finds_its_prefix(real, linked_python, tmp_path):
    original, _ = real
    link, prefix = linked_python  # no pyvenv.cfg next to the link: python runs as its base installation
    r = recognise([str(link), "-m", "pip", "install", "six"], env=_env(original), cwd=str(tmp_path))
    assert r.environment == os.path.realpath(prefix) != str(original)
    r = recognise(["python", "-m", "pip", "install", "six"], env=_env(original), cwd=str(tmp_path))
    assert r.environment == str(original)


def test_shebangs_env_and_the_long_path_launcher(real, tmp_path):
    original, _ = real
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    env_pip = bin_ / "pip"
    env_pip.write_text("#!/usr/bin/env python\nimport sys\n")
    r = recognise([str(env_pip), "install", "six"], env=_env(original), cwd=str(tmp_path))
    assert r.environment == str(original) and "from PATH" in r.environment_why
    long_pip = bin_ / "pip3"  # what pip writes when the interpreter path is too long for a shebang
    long_pip.write_text(f"#!/bin/sh\n'''exec' \"{original}/bin/python\" \"$0\" \"$@\"\n' '''\nimport sys\n")
    r = recognise([str(long_pip), "install", "six"], env={}, cwd=str(tmp_path))
    assert r.environment == str(original) and "/bin/sh launcher" in r.environment_why


@pytest.mark.parametrize("content", [b"\x7fELF\x02\x01binary launcher", b"#!/usr/bin/env\n",
                                     b"#!/bin/sh\nexec python \"$@\"\n",
                                     b"#!/usr/bin/env bash\nexec pyenv exec pip \"$@\"\n"])  # a pyenv shim
def test_a_pip_guard_cannot_resolve_is_unsure(content, tmp_path):
    pip = tmp_path / "pip"
    pip.write_bytes(content)
    r = recognise([str(pip), "install", "six"], env={"PATH": "/usr/bin:/bin"}, cwd=str(tmp_path))
    assert r.tool is Tool.PIP and r.environment_unsure and r.environment is None
    assert recognise(["pip", "install", "six"], env={"PATH": str(tmp_path / "none")}).environment_unsure


def test_uv_directory_and_project_choose_another_dot_venv(tmp_path):
    for root in ("here", "other"):
        (tmp_path / root / ".venv").mkdir(parents=True)
        (tmp_path / root / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    here = str(tmp_path / "here")
    assert recognise(["uv", "pip", "install", "x"], env={}, cwd=here).environment == str(tmp_path / "here/.venv")
    for flag in ("--directory", "--project"):
        r = recognise(["uv", flag, "../other", "pip", "install", "--reinstall", "x"], env={}, cwd=here)
        assert r.environment == str(tmp_path / "other/.venv") and r.forced, flag
    r = recognise(["uv", "--directory", str(tmp_path / "other"), "sync"], env={}, cwd=here)
    assert r.environment == str(tmp_path / "other/.venv")
    r = recognise(["uv", "pip", "install", "x"], env={"UV_PYTHON": str(tmp_path / "other/.venv")}, cwd=here)
    assert r.environment == str(tmp_path / "other/.venv")
    r = recognise(["uv", "pip", "install", "x"], env={"UV_PYTHON": "3.11"}, cwd=here)
    assert r.environment_unsure and "interpreter request" in r.environment_unsure
    r = recognise(["uv", "sync"], env={"UV_PROJECT_ENVIRONMENT": "envs/p"}, cwd=here)
    assert r.environment == str(tmp_path / "here/envs/p")


def test_pip_target_prefix_user_and_python(venv, tmp_path):
    r = recognise(["pip", "install", "--targ", "out", "six"], env=_env(venv), cwd=str(tmp_path))
    assert r.environment == str(tmp_path / "out") and r.environment_why == "pip --target out"
    r = recognise(["pip", "install", "six"], env=_env(venv, PIP_PREFIX=str(tmp_path / "pre")), cwd=str(tmp_path))
    assert r.environment == str(tmp_path / "pre")
    r = recognise(["pip", "install", "--user", "six"], env=_env(venv, PYTHONUSERBASE=str(tmp_path / "ub")),
                  cwd=str(tmp_path))
    assert r.environment == str(tmp_path / "ub")
    r = recognise(["pip", "--python", str(tmp_path), "install", "six"], env=_env(venv), cwd=str(tmp_path))
    assert r.environment_unsure, "a directory without pyvenv.cfg"


# ------------------------------------------------------------------ options as pip and uv read them

@pytest.mark.parametrize("argv,forced", [
    (["--force-rein", "demo"], True),  # optparse: an unambiguous prefix
    (["--force-reinstall=", "demo"], True),
    (["-I", "demo"], True),
    (["--ignore-inst", "demo"], True),
    (["--upgrade", "demo"], False),
])
def test_pip_abbreviations(venv, tmp_path, argv, forced):
    r = recognise(["pip", "install", *argv], env=_env(venv), cwd=str(tmp_path))
    assert r.forced is forced and [q.name for q in r.requested] == ["demo"]


@pytest.mark.parametrize("option,why", [("--no-dep", "ambiguous abbreviation"), ("--bogus", "not a pip install"),
                                        ("-Z", "not a pip install")])
def test_what_pip_guard_cannot_read_is_a_forced_reinstall(venv, tmp_path, option, why):
    r = recognise(["pip", "install", option, "demo"], env=_env(venv), cwd=str(tmp_path))
    assert r.forced and any(why in n and "forced reinstall" in n for n in r.notes)
    assert r.change("demo", "1.0") is Change.REINSTALL


def test_combined_short_flags_take_their_value(venv, tmp_path):
    (tmp_path / "reqs.txt").write_text("demo==1.0\n")
    (tmp_path / "house").mkdir()
    r = recognise(["pip", "install", "-Ir", "reqs.txt"], env=_env(venv), cwd=str(tmp_path))
    assert r.forced and r.requested == (Requested("demo", "1.0"),), "reqs.txt is the -r file, not a package"
    r = recognise(["pip", "install", "-UIrreqs.txt", "-qf", "house", "--no-ind"], env=_env(venv), cwd=str(tmp_path))
    assert r.forced and r.upgrade and r.requested == (Requested("demo", "1.0"),)
    assert r.source == str(tmp_path / "house") and r.source_why == "--find-links with --no-index"
    r = recognise(["pip", "install", "--requirement=reqs.txt"], env=_env(venv), cwd=str(tmp_path))
    assert r.requested == (Requested("demo", "1.0"),) and not r.forced


def test_uv_takes_no_abbreviation(tmp_path):
    """uv (clap) refuses ``--reinst`` ('unexpected argument'): it is not a forced reinstall there."""
    r = recognise(["uv", "pip", "install", "--reinst", "demo"], env={"VIRTUAL_ENV": str(tmp_path)}, cwd=str(tmp_path))
    assert not r.forced
    r = recognise(["uv", "pip", "install", "-nr", "reqs.txt"], env={"VIRTUAL_ENV": str(tmp_path)}, cwd=str(tmp_path))
    assert r.no_cache and not r.requested and any("cannot read the requirements file" in n for n in r.notes)


@pytest.mark.parametrize("conf,forced", [
    ("[install]\nforce-reinstall = true\n", True),
    ("[global]\nforce_reinstall = yes\n", True),
    ("[global]\nignore-installed = on\n", True),
    ("[install]\nforce-reinstall = 1\n[global]\nforce-reinstall = false\n", True),  # [install] wins
    ("[install]\nforce-reinstall = false\n", False),
    ("[install]\nforce-reinstall = maybe\n", True),  # not a yes or no: read protectively
    ("[install\nforce-reinstall = false\n", True),  # not a config file pip can read
])
def test_the_venvs_own_pip_conf(venv, tmp_path, conf, forced):
    (venv / "pip.conf").write_text(conf)
    r = recognise(["pip", "install", "demo"], env=_env(venv), cwd=str(tmp_path))
    assert r.forced is forced
    assert (not forced) or any(str(venv / "pip.conf") in n for n in r.notes)


def test_the_venvs_pip_conf_does_not_steer_what_guard_opens(venv, tmp_path):
    """The venv's own pip.conf is tree content: its find-links and requirements are not opened, and a
    link out of the venv is not followed (read as a forced reinstall)."""
    (tmp_path / "wheels").mkdir()
    (tmp_path / "reqs.txt").write_text("numpy\n")
    (venv / "pip.conf").write_text(f"[global]\nfind-links = {tmp_path / 'wheels'} https://example.invalid/w\n"
                                   f"[install]\nrequirement = {tmp_path / 'reqs.txt'}\n")
    r = recognise(["pip", "install", "demo"], env=_env(venv), cwd=str(tmp_path))
    assert [q.name for q in r.requested] == ["demo"] and r.wheel_dirs == ()
    assert f"--find-links {tmp_path / 'wheels'}" in r.unnamed and f"--requirement {tmp_path / 'reqs.txt'}" in r.unnamed
    assert sum("named by the environment's own pip.conf" in n for n in r.notes) == 2
    (venv / "pip.conf").unlink()
    (tmp_path / "elsewhere.conf").write_text("[install]\nforce-reinstall = false\n")
    (venv / "pip.conf").symlink_to(tmp_path / "elsewhere.conf")
    r = recognise(["pip", "install", "demo"], env=_env(venv), cwd=str(tmp_path))
    assert r.forced and any("cannot read it" in n and "not followed" in n for n in r.notes), r.notes


def test_pip_conf_of_each_level_and_pip_config_file(venv, tmp_path, no_machine_config):
    home = no_machine_config
    (home / ".config" / "pip").mkdir(parents=True)
    (home / ".config" / "pip" / "pip.conf").write_text("[install]\nno-deps = true\n")
    r = recognise(["pip", "install", "demo"], env=_env(venv), cwd=str(tmp_path))
    assert r.no_deps and not r.forced, "the user's pip.conf"
    (home / "pip" ).mkdir()
    (home / "pip" / "pip.conf").write_text("[global]\nupgrade = true\n")  # XDG_CONFIG_DIRS=home: the global one
    assert recognise(["pip", "install", "demo"], env=_env(venv), cwd=str(tmp_path)).upgrade
    (tmp_path / "mine.conf").write_text("[global]\nforce-reinstall = true\n")
    r = recognise(["pip", "install", "demo"], env=_env(venv, PIP_CONFIG_FILE="mine.conf"), cwd=str(tmp_path))
    assert r.forced and not r.no_deps, "PIP_CONFIG_FILE, and the user's file is not read beside it"
    r = recognise(["pip", "install", "--isolated", "demo"], env=_env(venv), cwd=str(tmp_path))
    assert not r.no_deps, "--isolated: no user configuration"
    (home / "pip" / "pip.conf").unlink()
    (home / "pip" / "pip.conf").mkdir()  # unreadable as a file
    r = recognise(["pip", "install", "demo"], env=_env(venv), cwd=str(tmp_path))
    assert r.forced and any("cannot read it" in n for n in r.notes)


def test_pip_environment_variables(venv, tmp_path):
    (tmp_path / "house").mkdir()
    (tmp_path / "reqs.txt").write_text("demo==2.0\n")
    env = _env(venv, PIP_FORCE_REINSTALL="1", PIP_NO_DEPS="yes", PIP_REQUIREMENT="reqs.txt",
               PIP_FIND_LINKS="house", PIP_NO_INDEX="true", PIP_UPGRADE="off")
    r = recognise(["pip", "install"], env=env, cwd=str(tmp_path))
    assert r.forced and r.no_deps and not r.upgrade
    assert r.requested == (Requested("demo", "2.0"),)
    assert r.source == str(tmp_path / "house") and r.source_why == "--find-links with --no-index"
    assert any("PIP_FORCE_REINSTALL" in n for n in r.notes)
    assert not recognise(["pip", "install", "--isolated", "demo"], env=env, cwd=str(tmp_path)).forced
    assert recognise(["pip", "install", "demo"], env=_env(venv, PIP_IGNORE_INSTALLED="1"), cwd=str(tmp_path)).forced
    r = recognise(["pip", "install", "demo"], env=_env(venv, PIP_TARGET=str(tmp_path / "t")), cwd=str(tmp_path))
    assert r.environment == str(tmp_path / "t")
    other = tmp_path / "other"
    (other / "bin").mkdir(parents=True)
    (other / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (other / "pip.conf").write_text("[install]\nforce-reinstall = true\n")
    r = recognise(["pip", "install", "demo"], env=_env(venv, PIP_PYTHON=str(other / "bin/python")),
                  cwd=str(tmp_path))
    assert r.environment == str(other) and r.forced, "PIP_PYTHON's environment, and its own pip.conf"
    r = recognise(["pip", "install", "demo"], env=_env(venv, PIP_CONFIG_FILE=os.devnull), cwd=str(tmp_path))
    assert not r.forced and not r.notes, "PIP_CONFIG_FILE=/dev/null: no configuration"


def test_uv_environment_variables_and_configuration(tmp_path):
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("")
    env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_DIRS": str(tmp_path / "home")}
    cwd = str(tmp_path)
    assert not recognise(["uv", "pip", "install", "demo"], env=env, cwd=cwd).forced
    r = recognise(["uv", "pip", "install", "demo"], env={**env, "UV_REINSTALL": "1", "UV_NO_CACHE": "true"}, cwd=cwd)
    assert r.forced and r.no_cache
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n[tool.uv]\nreinstall-package = ['Demo']\n")
    r = recognise(["uv", "pip", "install", "demo"], env=env, cwd=cwd)
    assert r.change("demo", "1.0") is Change.REINSTALL and not r.forced
    (tmp_path / "uv.toml").write_text("[pip]\nreinstall = true\n")  # uv.toml wins over pyproject.toml
    assert recognise(["uv", "pip", "install", "demo"], env=env, cwd=cwd).forced
    assert not recognise(["uv", "pip", "install", "--no-config", "demo"], env=env, cwd=cwd).forced
    assert not recognise(["uv", "sync"], env=env, cwd=cwd).forced, "[pip] is for uv pip only"
    (tmp_path / "uv.toml").write_text("reinstall = [")
    r = recognise(["uv", "sync"], env=env, cwd=cwd)
    assert r.forced and r.reinstall_all and any("cannot read this uv configuration" in n for n in r.notes)


def test_uv_source_variables_and_configuration_in_uvs_precedence(tmp_path):
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("")
    for d in ("cli", "env1", "env2", "conf", "flat"):
        (tmp_path / d).mkdir()
    env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_DIRS": str(tmp_path / "home")}
    cwd = str(tmp_path)

    def uvpip(*words: str, **more: str):
        return recognise(["uv", "pip", "install", *words, "demo"], env={**env, **more}, cwd=cwd)

    r = uvpip(UV_FIND_LINKS="env1,env2")  # comma-separated, relative to uv's working directory
    assert r.wheel_dirs == (str(tmp_path / "env1"), str(tmp_path / "env2")) and r.source == str(tmp_path / "env1")
    assert "index" in r.source_why and any("UV_FIND_LINKS" in n for n in r.notes)
    r = uvpip("-f", "cli", UV_FIND_LINKS="env1")  # the command line replaces the variable
    assert r.wheel_dirs == (str(tmp_path / "cli"),)
    assert uvpip(UV_NO_INDEX="1", UV_FIND_LINKS="env1").source_why.startswith("--find-links (the index")
    assert uvpip(UV_INDEX="mine=https://example.invalid/simple").source_why == \
        "the index (https://example.invalid/simple)"
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "uv.toml").write_text('find-links = ["../conf"]\nno-index = true\n')
    r = recognise(["uv", "pip", "install", "demo"], env={**env, "UV_FIND_LINKS": "../env1"}, cwd=str(tmp_path / "sub"))
    # the variable relative to uv's working directory, the configuration's to its file; both searched
    assert r.wheel_dirs == (str(tmp_path / "env1"), str(tmp_path / "conf"))
    assert r.source == str(tmp_path / "env1") and r.source_why == "--find-links with --no-index"
    (tmp_path / "sub" / "uv.toml").unlink()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n[[tool.uv.index]]\nname = "l"\n'
                                             'url = "flat"\nformat = "flat"\n')
    r = recognise(["uv", "sync"], env=env, cwd=cwd)
    assert r.tool is Tool.UV_SYNC
    r = uvpip()
    assert r.wheel_dirs == (str(tmp_path / "flat"),) and any("flat index" in n for n in r.notes)
    assert uvpip("--no-config").wheel_dirs == ()


# ------------------------------------------------------------------ requirements files stay in their directory

def test_a_requirements_file_opens_nothing_outside_its_directory(venv, tmp_path, monkeypatch):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "six-1.16.0-py3-none-any.whl").write_bytes(b"PK")
    project = tmp_path / "project"
    project.mkdir()
    (project / "reqs.txt").write_text("../outside/six-1.16.0-py3-none-any.whl\n--find-links ../outside\n"
                                      f"-f {outside}\ndemo\n")
    touched: list[str] = []
    for name in ("open", "scandir", "listdir"):  # opened or listed (a stat of a path is no read)
        real_fn = getattr(os, name)

        def spy(path, *args, _real=real_fn, **kwargs):
            touched.append(os.fspath(path) if isinstance(path, (str, os.PathLike)) else "")
            return _real(path, *args, **kwargs)
        monkeypatch.setattr(os, name, spy)
    r = recognise(["pip", "install", "-r", "project/reqs.txt"], env=_env(venv), cwd=str(tmp_path))
    monkeypatch.undo()
    assert [q.name for q in r.requested] == ["demo"]
    assert str(outside / "six-1.16.0-py3-none-any.whl") in r.unnamed and str(outside) in r.unnamed
    assert r.wheel_dirs == () and r.source == "index"
    assert sum("outside its directory" in n for n in r.notes) == 3
    assert not [p for p in touched if p.startswith(str(outside))], touched
    assert r.change("six", "1.16.0") is Change.NONE and r.unnamed, "unnamed: guard predicts protectively"
