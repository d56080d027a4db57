"""The recorder: every module the process has imported, and each one it imports from now on, with
its file's signature, appended to this process's record file (``location.py``).

The trigger is a finder at the head of ``sys.meta_path`` that answers nothing: importlib asks it
first for every module it is about to load (never for one already in ``sys.modules``; through an
import statement, ``from package import sub`` or ``importlib.import_module`` alike), and it only
wakes a recording thread (a bare ``_thread``, blocked while nothing is imported). The thread lets
the burst of imports run for DELAY seconds, then records what ``sys.modules`` gained since its last
look, with one write: every entry of ``sys.modules`` (a copy, taken at once) whose module it has not
recorded yet. (Reading only the entries after the last look's, from the end, missed modules when
another thread's import moved entries meanwhile: a whole look costs some microseconds per hundred
modules, once per burst.) ``flush()`` records everything at once. A module whose finder sits before this one (inserted at the head later) wakes
nothing itself, but is recorded at the next look.

Measured (benchmarks/bench_runtime.py, against a 2 % budget): an audit hook on the ``import``
event, the first design, cost 1.8 % of the import time while doing nothing, since every audit
event of the process calls it; statting and writing at each import cost as much again.

Never raises into the host: a failure writes a ``disabled`` status line (when it can) and stops
recording; a stopped recorder takes its finder out of ``sys.meta_path``.
"""

from __future__ import annotations

import os
import stat
import sys
from types import ModuleType
from typing import Any

try:  # the C encoder json uses, without importing json (and re) into the host
    from _json import encode_basestring_ascii as _quote
except ImportError:  # pragma: no cover - every CPython builds _json
    from json import dumps as _quote

from . import location

FORMAT = "driftscan-runtime"
VERSION = 1
MAX_RECORDS = 20_000
MAX_BYTES = 4 * 1024 * 1024
# The largest file a content hash (blake2b) may be asked for. Hashing reads each source once more,
# which its import did not do when the bytecode was cached: benchmarks/bench_runtime.py measured the
# recorder's share of the import time at 1.0 % without hashes, 1.6 % hashing files up to 4 KiB
# and 4.1 % up to 64 KiB, against a budget of 2 %. So it is off unless asked for
# (start(hash_limit=...) or HASH_ENV); without it the signature (device, inode, size, mtime_ns)
# alone decides.
HASH_LIMIT = 64 * 1024
HASH_ENV = "DRIFTSCAN_RUNTIME_HASH_LIMIT"
DELAY = 0.05  # seconds from an import event to the recording thread's look


class _State:
    def __init__(self) -> None:
        self.active = False
        self.fd = -1
        self.pid = 0
        self.path = ""
        self.directory: str | None = None
        self.records = 0
        self.size = 0
        self.seen: dict[str, int] = {}  # module name -> id() of the module object recorded
        self.hooked = False
        self.hash_limit = -1  # no file is hashed
        self.forked = False
        self.dirty = False  # an import event since the recording thread's last look
        self.generation = 0  # the recording thread of an older file (before a fork) ends
        import _thread
        self.lock = _thread.allocate_lock()  # held while recording
        self.wake = _thread.allocate_lock()  # released by the hook: the recording thread looks


_state = _State()


def start(directory: str | None = None, hash_limit: int | None = None) -> bool:
    """Record this process's imports from now on (and those already made); True when recording.

    Idempotent; never raises. ``directory`` overrides the runtime directory; ``hash_limit`` hashes
    the content of module files up to that many bytes (at most HASH_LIMIT; default: the
    HASH_ENV variable, else none)."""
    try:
        if _state.active and _state.pid == os.getpid():
            return True
        _state.hash_limit = _hash_limit(hash_limit)
        _open(directory)
        if not _state.hooked:
            os.register_at_fork(after_in_child=_after_fork_in_child)
            import atexit
            atexit.register(_remove)
            _state.hooked = True
        with _state.lock:
            _scan()
        _start_thread()
        if _state.active and Announcer not in sys.meta_path:  # not when the first look filled the caps
            sys.meta_path.insert(0, Announcer)
        return _state.active
    except Exception as exc:  # never into the host
        _disable(exc)
        return False


def _hash_limit(asked: int | None) -> int:
    if asked is None:
        text = os.environ.get(HASH_ENV, "").strip()
        asked = int(text) if text.isdigit() and len(text) < 12 else -1
    return min(asked, HASH_LIMIT)


def flush() -> None:
    """Record now what was imported since the recording thread's last look."""
    if _state.active and _state.pid == os.getpid() and _state.lock.acquire(timeout=5):
        try:
            _scan()
        except Exception as exc:
            _disable(exc)
        finally:
            _state.lock.release()


def recording() -> bool:
    return _state.active and _state.pid == os.getpid()


def record_path() -> str | None:
    """This process's record file, while recording."""
    return _state.path if recording() else None


def _open(directory: str | None) -> None:
    directory = location.ensure_directory(directory)
    pid = os.getpid()
    ticks = location.start_ticks()
    if ticks is None:
        raise OSError("no /proc/self/stat: the process start time is unknown")
    path = os.path.join(directory, location.file_name(pid, ticks))
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(path, flags, 0o600)
    _state.fd, _state.pid, _state.path, _state.directory = fd, pid, path, directory
    _state.records = _state.size = 0
    _state.seen = {}
    _state.forked = False
    header = (f'{{"format":"{FORMAT}","version":{VERSION},"pid":{pid},"start_ticks":{ticks},'
              f'"uid":{os.getuid()},"executable":{_quote(sys.executable or "")},'
              f'"max_records":{MAX_RECORDS},"max_bytes":{MAX_BYTES}}}\n')
    _write(header)
    _state.active = True


class Announcer:
    """The finder at the head of ``sys.meta_path``: it finds nothing, and tells the recording
    thread that a module is about to be loaded."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> None:
        if not _state.active or _state.dirty:
            return
        try:
            _state.dirty = True
            if _state.forked:
                _restart_after_fork()
            try:
                _state.wake.release()
            except RuntimeError:  # already released: the recording thread has yet to look
                pass
        except Exception as exc:  # never into the host
            _disable(exc)

    @staticmethod
    def invalidate_caches() -> None:
        pass


def _start_thread() -> None:
    import _thread
    _state.generation += 1
    # Unlocked, and marked dirty: the thread's first look comes at once, and until then no hook
    # releases the lock (an event between the hook's install and now is covered by that look).
    _state.dirty = True
    _state.wake = _thread.allocate_lock()
    _thread.start_new_thread(_run, (_state.generation,))


def _run(generation: int) -> None:
    from time import sleep
    try:
        while True:
            _state.wake.acquire()
            if not _state.active or _state.generation != generation:
                return
            sleep(DELAY)
            _state.dirty = False
            with _state.lock:
                if _state.generation != generation:
                    return
                _scan()
    except Exception as exc:
        _disable(exc)


def _scan() -> None:
    modules = sys.modules
    seen = _state.seen
    for _attempt in range(5):
        try:
            items = list(modules.items())  # one C-level copy: the importing thread cannot change it mid-way
            break
        except RuntimeError:  # changed meanwhile all the same: look again
            continue
    else:
        return  # the next look catches up
    lines = []
    for name, module in items:
        if seen.get(name) == id(module):
            continue
        seen[name] = id(module)
        line = _line(name, module)
        if line is not None:
            lines.append(line)
    if lines:
        _append(lines)


def _line(name: str, module: Any) -> str | None:
    if not isinstance(module, ModuleType):
        return None
    namespace = module.__dict__  # not getattr: a module's own __getattr__ may run code
    spec = namespace.get("__spec__")
    if spec is not None:
        # Built-in, frozen (whose __file__ is not what runs) and namespace modules have no file.
        try:
            origin = spec.origin if spec.has_location is True else None
        except Exception:
            return None
    else:  # a script run as __main__
        origin = namespace.get("__file__")
    if not isinstance(origin, str) or not origin or "\0" in origin:
        return None
    if not os.path.isabs(origin):
        origin = os.path.abspath(origin)
    try:
        st = os.stat(origin)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    digest = "null"
    if st.st_size <= _state.hash_limit:
        digest = _hash(origin, st)
    return (f'{{"name":{_quote(name)},"path":{_quote(origin)},"dev":{st.st_dev},"ino":{st.st_ino},'
            f'"size":{st.st_size},"mtime_ns":{st.st_mtime_ns},"blake2b":{digest}}}\n')


def _hash(path: str, st: os.stat_result) -> str:
    from hashlib import blake2b  # imported by then: the first call pays, every later one finds it
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return "null"
    try:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            return "null"
        data = os.read(fd, HASH_LIMIT + 1)
    except OSError:
        return "null"
    finally:
        os.close(fd)
    if len(data) != st.st_size:
        return "null"  # changed while read: the signature alone stands
    return f'"{blake2b(data, digest_size=32).hexdigest()}"'


def _append(lines: list[str]) -> None:
    room = MAX_RECORDS - _state.records
    kept = lines[:room]
    data = "".join(kept)
    while kept and _state.size + len(data) > MAX_BYTES:
        kept.pop()
        data = "".join(kept)
    if data:
        _write(data)
        _state.records += len(kept)
    if len(kept) < len(lines):
        _write(f'{{"status":"truncated","records":{_state.records}}}\n')
        _stop()


def _write(text: str) -> None:
    data = text.encode("ascii")
    view = memoryview(data)
    while view:
        written = os.write(_state.fd, view)
        view = view[written:]
    _state.size += len(data)


def _disable(exc: BaseException) -> None:
    """Stop recording after a failure; say so in the file when it is open."""
    try:
        if _state.fd >= 0 and _state.pid == os.getpid():
            _write(f'{{"status":"disabled","reason":{_quote(type(exc).__name__ + ": " + str(exc)[:200])}}}\n')
    except Exception:
        pass
    _stop()


def _stop() -> None:
    _state.active = False
    try:
        sys.meta_path.remove(Announcer)
    except ValueError:
        pass
    if _state.fd >= 0:
        try:
            os.close(_state.fd)
        except OSError:
            pass
    _state.fd = -1


def _after_fork_in_child() -> None:
    # The parent's file, locks and thread are the parent's. The child's own file is opened at its
    # first import (a forked worker that imports nothing costs nothing): see _restart_after_fork.
    import _thread
    _state.lock = _thread.allocate_lock()
    _state.generation += 1
    _state.dirty = False
    if _state.active:
        try:
            os.close(_state.fd)
        except OSError:
            pass
        _state.fd = -1
        _state.forked = True


def _restart_after_fork() -> None:
    _state.forked = False
    _state.active = False
    try:
        _open(_state.directory)
        _start_thread()
    except Exception as exc:
        _disable(exc)


def _remove() -> None:
    """At a clean exit: the file goes with the process that wrote it (never a forked child's parent's)."""
    if _state.pid != os.getpid() or not _state.path:
        return
    locked = _state.lock.acquire(timeout=1)  # not while the recording thread writes
    _state.generation += 1
    _stop()
    if locked:
        _state.lock.release()
    try:
        os.unlink(_state.path)
    except OSError:
        pass
    _state.path = ""
