"""fs.helpers: when driftscan may fork a helper, and the helper's pipe: what it sent, or None
when it failed or fell silent."""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest

from driftscan.fs import helpers
from driftscan.fs.helpers import Child, Tokens, allow_fork, may_fork, read_some

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="helpers fork only on Linux")


@pytest.fixture
def fork_state(monkeypatch):
    monkeypatch.setattr(helpers, "_allowed", False)
    monkeypatch.delenv("DRIFTSCAN_FORK", raising=False)
    yield monkeypatch


@linux_only
def test_environment_variable_decides_first(fork_state):
    fork_state.setenv("DRIFTSCAN_FORK", "inline")
    allow_fork()
    assert may_fork() is False, "inline forbids forking even when allowed"
    fork_state.setenv("DRIFTSCAN_FORK", "fork")
    allow_fork(False)
    assert may_fork() is True, "fork forces it even when not allowed"


@linux_only
def test_library_default_never_forks_its_host(fork_state):
    assert may_fork() is False
    allow_fork()
    assert may_fork() is (threading.active_count() == 1)


@linux_only
def test_allowed_but_another_thread_runs(fork_state):
    allow_fork()
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert may_fork() is False, "a thread may hold a lock at the fork"
    finally:
        stop.set()
        thread.join()


@linux_only
def test_child_sends_its_answer():
    child = Child(lambda fd: os.write(fd, b"hello from the child"))
    assert child.started
    assert child.wait() == b"hello from the child"
    assert not child.started and child.fd is None


@linux_only
def test_failing_child_gives_none():
    def work(fd):
        os.write(fd, b"partial")
        raise RuntimeError("the helper failed")

    child = Child(work)
    assert child.wait() is None, "a child that failed must not pass half an answer for a whole one"


@linux_only
def test_silent_child_is_killed_and_gives_none():
    child = Child(lambda fd: time.sleep(30))
    start = time.monotonic()
    assert child.wait(lambda fd: read_some(fd, 100, timeout=0.2)) is None
    assert time.monotonic() - start < 10


def test_read_some_times_out_on_a_silent_pipe():
    r, w = os.pipe()
    try:
        with pytest.raises(TimeoutError, match="sent nothing"):
            read_some(r, 10, timeout=0.05)
        os.write(w, b"ok")
        assert read_some(r, 10, timeout=1) == b"ok"
    finally:
        os.close(r)
        os.close(w)


def test_tokens_each_number_taken_once():
    tokens = Tokens(50)
    try:
        taken = []
        while (k := tokens.take()) is not None:
            taken.append(k)
    finally:
        tokens.close()
    assert taken == list(range(50))
    assert tokens.taken == taken
    assert tokens.fd == -1


@linux_only
def test_tokens_shared_with_a_child_are_split_without_overlap():
    tokens = Tokens(2000)

    def work(fd):
        mine = []
        while (k := tokens.take()) is not None:
            mine.append(k)
        os.write(fd, ",".join(map(str, mine)).encode())

    child = Child(work)
    while tokens.take() is not None:
        pass
    sent = child.wait()
    tokens.close()
    theirs = [int(k) for k in sent.decode().split(",") if k]
    assert sorted(tokens.taken + theirs) == list(range(2000))


def test_tokens_limit():
    with pytest.raises(ValueError):
        Tokens(Tokens.MAX + 1)
    with pytest.raises(ValueError):
        Tokens(-1)
