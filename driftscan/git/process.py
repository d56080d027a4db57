"""Running git: a command line whose ``-c`` switches close what the private config cannot, an
environment built from nothing, stdin /dev/null, its own process group, and a timeout on every
call (the process group is killed)."""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import time

from .errors import GitFailed, GitTimeout

TIMEOUT = 30.0  # seconds per git call; DRIFTSCAN_GIT_TIMEOUT overrides it
DEVNULL = os.devnull
_CONFIG = ["-c", "core.fsmonitor=false", "-c", f"core.hooksPath={DEVNULL}", "-c", f"core.attributesFile={DEVNULL}",
           "-c", f"core.excludesFile={DEVNULL}", "-c", "core.quotePath=off", "-c", "core.pager=cat",
           "-c", "core.untrackedCache=false", "-c", "core.askPass=", "-c", "credential.helper=",
           "-c", "protocol.allow=never", "-c", "color.ui=false"]
# (Not "-c diff.external=": an empty value makes git try to run "". Diffs pass --no-ext-diff.)


def timeout() -> float:
    try:
        value = float(os.environ.get("DRIFTSCAN_GIT_TIMEOUT", ""))
    except ValueError:
        return TIMEOUT
    return value if value > 0 else TIMEOUT


def git_executable() -> str | None:
    """The auditing user's git (from their PATH, never from the tree)."""
    return shutil.which("git")


def run(executable: str, top: str, env: dict[str, str], args: tuple[str, ...], input: bytes | None = None,
        what: str | None = None) -> bytes:
    """stdout of ``git <args>`` run in the work tree ``top`` with exactly ``env``; GitFailed with
    git's message, GitTimeout when it hangs."""
    limit = timeout()
    command = [executable, *_CONFIG, *args]
    posix = os.name == "posix"
    try:
        proc = subprocess.Popen(command, cwd=top, env=env, close_fds=True,
                                stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=posix)
    except OSError as exc:
        raise GitFailed(f"cannot run git: {exc.strerror or exc}") from None
    try:
        out, err = _communicate(proc, input, limit)
    except subprocess.TimeoutExpired:
        _kill(proc, posix)
        raise GitTimeout(f"git did not answer within {limit:g} s ({what or 'git ' + args[0]}); "
                         "a FIFO in the work tree (.gitignore, .gitattributes) can do that") from None
    except BaseException:
        _kill(proc, posix)
        raise
    if proc.returncode != 0:
        message = err.decode("utf-8", "replace").strip()
        raise GitFailed(message.splitlines()[-1][:300] if message else f"git {args[0]} exited {proc.returncode}")
    return out



def _communicate(proc: subprocess.Popen[bytes], input: bytes | None, limit: float) -> tuple[bytes, bytes]:
    """``proc.communicate(input, timeout=limit)``, without its polling wait for the exit (sleeps
    of 0.5 ms and up: a millisecond per git call): pipes and a pidfd in one selector."""
    if input is not None or not hasattr(os, "pidfd_open") or proc.stdout is None or proc.stderr is None:
        return proc.communicate(input, timeout=limit)
    deadline = time.monotonic() + limit
    try:
        pidfd = os.pidfd_open(proc.pid)
    except OSError:
        return proc.communicate(input, timeout=limit)
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    chunks: dict[int, list[bytes]] = {out_fd: [], err_fd: []}
    try:
        with selectors.DefaultSelector() as selector:
            for fd in chunks:
                selector.register(fd, selectors.EVENT_READ)
            selector.register(pidfd, selectors.EVENT_READ)
            open_pipes, exited = len(chunks), False
            while open_pipes or not exited:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise subprocess.TimeoutExpired(proc.args, limit)
                for key, _ in selector.select(remaining):
                    if key.fd == pidfd:
                        exited = True
                        selector.unregister(pidfd)
                        continue
                    data = os.read(key.fd, 1 << 16)
                    if data:
                        chunks[key.fd].append(data)
                    else:
                        selector.unregister(key.fd)
                        open_pipes -= 1
    finally:
        os.close(pidfd)
    proc.wait()  # it has exited: reaps at once
    proc.stdout.close()
    proc.stderr.close()
    return b"".join(chunks[out_fd]), b"".join(chunks[err_fd])


def _kill(proc: subprocess.Popen[bytes], posix: bool) -> None:
    try:
        if posix:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except OSError:
        pass
    try:
        proc.communicate(timeout=5)
    except (subprocess.TimeoutExpired, ValueError, OSError):
        pass


def environment(private: str, git_dir: str, top: str, index: str) -> dict[str, str]:
    """All git gets: nothing inherited but PATH (and SYSTEMROOT, TMP*); HOME is the private
    directory's empty ``home``."""
    home = os.path.join(private, "home")
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": home, "XDG_CONFIG_HOME": home, "USERPROFILE": home,
        "GIT_DIR": git_dir, "GIT_WORK_TREE": top, "GIT_INDEX_FILE": index,
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": DEVNULL, "GIT_CONFIG_SYSTEM": DEVNULL,
        "GIT_ATTR_NOSYSTEM": "1", "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0",
        "GIT_NO_REPLACE_OBJECTS": "1", "GIT_NO_LAZY_FETCH": "1", "GIT_LITERAL_PATHSPECS": "1",
        "GIT_PAGER": "cat", "PAGER": "cat", "GIT_ASKPASS": "", "SSH_ASKPASS": "", "GIT_ALLOW_PROTOCOL": "",
        "GIT_ADVICE": "0", "LC_ALL": "C",
    }
    for name in ("SYSTEMROOT", "TMPDIR", "TEMP", "TMP"):  # Windows needs SYSTEMROOT to start anything
        if name in os.environ:
            env[name] = os.environ[name]
    return env
