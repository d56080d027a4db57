"""driftscan.git.process: git's command line, an environment built from nothing, and a timeout that
kills the whole process group."""

from __future__ import annotations

import os
import shutil
import stat
import time

import pytest

from driftscan.git.errors import GitFailed, GitTimeout
from driftscan.git.process import TIMEOUT, environment, git_executable, run, timeout

SWITCHES = ["core.fsmonitor=false", f"core.hooksPath={os.devnull}", f"core.attributesFile={os.devnull}",
            f"core.excludesFile={os.devnull}", "core.pager=cat", "credential.helper=", "protocol.allow=never"]


def script(path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_timeout_setting(monkeypatch):
    monkeypatch.delenv("DRIFTSCAN_GIT_TIMEOUT", raising=False)
    assert timeout() == TIMEOUT == 30.0
    for value, expected in (("2.5", 2.5), ("0", TIMEOUT), ("-1", TIMEOUT), ("soon", TIMEOUT)):
        monkeypatch.setenv("DRIFTSCAN_GIT_TIMEOUT", value)
        assert timeout() == expected


def test_git_executable_is_the_user_s_from_path():
    assert git_executable() == shutil.which("git")


def test_the_environment_inherits_nothing_but_path_and_temp(monkeypatch, tmp_path):
    for name, value in (("GIT_DIR", "/evil"), ("GIT_CONFIG_COUNT", "1"), ("GIT_EXTERNAL_DIFF", "/evil/diff"),
                        ("GIT_SSH_COMMAND", "/evil/ssh"), ("PYTHONPATH", "/evil"), ("TMPDIR", str(tmp_path))):
        monkeypatch.setenv(name, value)
    env = environment("/priv", "/priv/git", "/tree", "/tree/.git/index")
    assert env["GIT_DIR"] == "/priv/git" and env["GIT_WORK_TREE"] == "/tree"
    assert env["GIT_INDEX_FILE"] == "/tree/.git/index"
    assert env["HOME"] == env["XDG_CONFIG_HOME"] == os.path.join("/priv", "home")
    assert env["GIT_CONFIG_GLOBAL"] == env["GIT_CONFIG_SYSTEM"] == os.devnull and env["GIT_CONFIG_NOSYSTEM"] == "1"
    assert env["GIT_TERMINAL_PROMPT"] == "0" and env["GIT_NO_REPLACE_OBJECTS"] == "1"
    assert env["GIT_ALLOW_PROTOCOL"] == "" and env["GIT_NO_LAZY_FETCH"] == "1"
    assert env["PATH"] == os.environ["PATH"] and env["TMPDIR"] == str(tmp_path)
    for name in ("GIT_CONFIG_COUNT", "GIT_EXTERNAL_DIFF", "GIT_SSH_COMMAND", "PYTHONPATH"):
        assert name not in env


def test_run_passes_the_switches_and_exactly_the_environment(tmp_path):
    fake = script(tmp_path / "git", 'printf "%s\\n" "$@"; printf "HOME=%s\\n" "$HOME"; pwd\n')
    out = run(fake, str(tmp_path), {"HOME": "/private/home", "PATH": "/usr/bin:/bin"}, ("status", "--porcelain"))
    lines = out.decode().splitlines()
    args = lines[:-2]
    assert args[-2:] == ["status", "--porcelain"]
    assert all(f"-c\n{switch}" in "\n".join(args) for switch in SWITCHES)
    assert lines[-2:] == ["HOME=/private/home", str(tmp_path)]


def test_run_feeds_input_and_gives_stdout(tmp_path):
    fake = script(tmp_path / "git", "cat\n")
    assert run(fake, str(tmp_path), {"PATH": "/usr/bin:/bin"}, ("cat-file", "--batch"), input=b"abc\n") == b"abc\n"
    # stdin is /dev/null without input: a command that reads it ends at once
    assert run(fake, str(tmp_path), {"PATH": "/usr/bin:/bin"}, ("x",)) == b""


def test_a_failure_is_git_failed_with_git_s_last_line(tmp_path):
    fake = script(tmp_path / "git", 'echo "hint: something" >&2; echo "fatal: bad revision" >&2; exit 128\n')
    with pytest.raises(GitFailed, match="^fatal: bad revision$"):
        run(fake, str(tmp_path), {"PATH": "/usr/bin:/bin"}, ("rev-parse",))
    silent = script(tmp_path / "quiet", "exit 3\n")
    with pytest.raises(GitFailed, match="^git diff exited 3$"):
        run(silent, str(tmp_path), {"PATH": "/usr/bin:/bin"}, ("diff",))
    with pytest.raises(GitFailed, match="cannot run git"):
        run(str(tmp_path / "no-such-git"), str(tmp_path), {}, ("status",))


def test_a_hanging_git_is_killed_with_its_children(tmp_path, monkeypatch):
    monkeypatch.setenv("DRIFTSCAN_GIT_TIMEOUT", "0.5")
    pidfile = tmp_path / "child"
    fake = script(tmp_path / "git", f'sleep 60 & echo $! > "{pidfile}"; wait\n')
    started = time.monotonic()
    with pytest.raises(GitTimeout, match=r"git did not answer within 0.5 s \(reading .gitignore\)"):
        run(fake, str(tmp_path), {"PATH": "/usr/bin:/bin"}, ("status",), what="reading .gitignore")
    assert time.monotonic() - started < 10
    child = int(pidfile.read_text())
    for _ in range(100):  # the whole group was sent SIGKILL: the grandchild goes too
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the hanging git's child survived")


def test_run_with_the_real_git(tmp_path):
    env = environment(str(tmp_path), str(tmp_path / "git"), str(tmp_path), str(tmp_path / "index"))
    assert run(git_executable(), str(tmp_path), env, ("--version",)).startswith(b"git version ")
