"""Forked helper processes, and when driftscan may fork them.

The helpers: the unowned-file walk, the prehash of large files, a share of the small files, half
of the clean-index check. Each works beside this process (two processes do not share a GIL),
sends its answer through a pipe and leaves with ``os._exit``, so that none of this process's exit
code (atexit handlers, buffered output, a test runner's teardown) runs twice. Every caller has an
in-process way to do the work, used when forking is not allowed or the child fails or falls
silent for ``HELPER_TIMEOUT`` seconds.

When: only on Linux, only in a process that driftscan owns, and only when no other thread runs:
a thread holding a lock at the fork would leave the child a lock nobody releases, and a library
host (a vLLM server) has CUDA and OpenMP threads that Python's thread count does not see. So the
library never forks its host unless asked: the CLI calls ``allow_fork()`` for its own process, a
host may too, ``DRIFTSCAN_FORK=fork`` forces it (tests run beside pytest's threads), ``inline``
forbids it.
"""

from __future__ import annotations

import os
import select
import signal
import struct
import sys
import threading
import warnings
from collections.abc import Callable

__all__ = ["HELPER_TIMEOUT", "Child", "Tokens", "allow_fork", "may_fork", "read_some"]


_allowed = False


def allow_fork(allowed: bool = True) -> None:
    """Let driftscan fork helper processes of this process (the CLI does, for itself)."""
    global _allowed
    _allowed = allowed


def may_fork() -> bool:
    mode = os.environ.get("DRIFTSCAN_FORK", "auto")
    if mode == "inline" or not hasattr(os, "fork") or not sys.platform.startswith("linux"):
        return False
    return mode == "fork" or (_allowed and threading.active_count() == 1)


def fork_quietly() -> int:
    """os.fork(), without Python 3.12's warning about other threads (``may_fork`` decided)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()


HELPER_TIMEOUT = 120.0  # seconds without a byte from a child before it is given up


def read_some(fd: int, size: int, timeout: float = HELPER_TIMEOUT) -> bytes:
    """``os.read`` of a helper's pipe that gives up (TimeoutError) after ``timeout`` silent seconds."""
    ready, _, _ = select.select([fd], [], [], timeout)
    if not ready:
        raise TimeoutError(f"a helper process sent nothing for {timeout:.0f} s")
    return os.read(fd, size)


class Child:
    """A forked process running ``work(fd)``, ``fd`` the write end of a pipe to this process."""

    def __init__(self, work: Callable[[int], None]) -> None:
        self.pid: int | None = None
        self.fd: int | None = None  # the read end
        read_fd, write_fd = os.pipe()
        try:
            pid = fork_quietly()
        except OSError:
            os.close(read_fd)
            os.close(write_fd)
            return
        if pid == 0:  # the child
            status = 1
            try:
                os.close(read_fd)
                work(write_fd)
                status = 0
            finally:
                os._exit(status)
        os.close(write_fd)
        self.pid, self.fd = pid, read_fd

    @property
    def started(self) -> bool:
        return self.pid is not None

    def wait(self, read_rest: Callable[[int], bytes] | None = None) -> bytes | None:
        """Read the pipe to its end and reap the child: what it sent, or None if it failed."""
        if self.pid is None:
            return None
        data = b""
        status: int | None = None
        try:
            data = read_rest(self.fd) if read_rest is not None else _read_all(self.fd)  # type: ignore[arg-type]
        except TimeoutError:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass
            data = None  # type: ignore[assignment]
        finally:
            os.close(self.fd)  # type: ignore[arg-type]
            try:
                _, status = os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass  # reaped by a host program's SIGCHLD handling: the data tells whether it finished
            self.pid = self.fd = None
        if data is None or (status is not None and os.waitstatus_to_exitcode(status) != 0):
            return None
        return data

    def kill(self) -> None:
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                self.wait()
            except OSError:
                pass


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := read_some(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


class Tokens:
    """The numbers ``0 .. n-1`` in a pipe, for this process and the children it forks next to
    share work out as they go: each number is read by exactly one of them (a read of 4 bytes
    from a pipe that holds only whole 4-byte numbers is atomic), so whichever process is free
    takes the next piece, and none waits on a share fixed in advance. At most ``MAX`` numbers
    (they are all written before the fork: the pipe's default 64 KiB)."""

    MAX = 16_000
    _NUMBER = struct.Struct("=I")

    def __init__(self, n: int) -> None:
        if not 0 <= n <= self.MAX:
            raise ValueError(f"{n} tokens: at most {self.MAX}")
        self.fd, write_fd = os.pipe()
        try:
            data = memoryview(b"".join(self._NUMBER.pack(k) for k in range(n)))
            while data:
                data = data[os.write(write_fd, data):]
        finally:
            os.close(write_fd)  # read to the end, the pipe says so
        self.taken: list[int] = []  # the numbers this process took

    def take(self) -> int | None:
        """The next number, or None when all are taken."""
        got = os.read(self.fd, self._NUMBER.size)
        if len(got) != self._NUMBER.size:
            return None
        number: int = self._NUMBER.unpack(got)[0]
        self.taken.append(number)
        return number

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
