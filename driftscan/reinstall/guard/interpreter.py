"""Which interpreter a command runs, and which environment that interpreter installs into: read
from files as data (a script's first lines, ``pyvenv.cfg``), never by running anything."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import stat
from dataclasses import dataclass

SHEBANG_MAX = 8192  # a shebang, or pip's /bin/sh trick for long paths, is a few lines at the top

VENV_LANDMARK = "pyvenv.cfg"
# pip/distlib's launcher for interpreter paths too long for a shebang: #!/bin/sh, then '''exec' "PY" "$0" "$@"
_SH_EXEC = re.compile(r"""^'''exec' (?P<py>"[^"]*"|\S+) "\$0" "\$@"\s*$""", re.M)


_PYTHON_NAME = re.compile(r"(?:python|pypy)(?:\d+(?:\.\d+)*t?)?(?:\.exe)?\Z")


@dataclass(frozen=True)
class Resolved:
    """The environment a command changes; ``unsure`` says why guard cannot be certain (then
    ``environment`` is its best reading, or None)."""

    environment: str | None
    why: str
    unsure: str = ""


def which(word: str, env: dict[str, str], cwd: str) -> str | None:
    if os.sep in word:
        return os.path.abspath(os.path.join(cwd, word))
    return shutil.which(word, path=env.get("PATH", os.defpath))


def environment_of(interpreter: str) -> Resolved:
    """What CPython takes as ``sys.prefix`` for ``interpreter`` (an absolute path as invoked): the
    directory holding pyvenv.cfg next to that path or one up (a venv: a venv's python is a link to
    the base interpreter, not followed for this); else, the link resolved, the installation above
    the real interpreter's ``bin/`` (a link elsewhere to a venv's python runs the base one)."""
    here = os.path.dirname(interpreter)
    for root in (here, os.path.dirname(here)):
        if os.path.isfile(os.path.join(root, VENV_LANDMARK)):
            return Resolved(root, f"{interpreter} belongs to the venv {root}")
    if not os.path.exists(interpreter):
        guess = os.path.dirname(os.path.dirname(interpreter))
        return Resolved(guess, f"{interpreter} (not found)", f"{interpreter} does not exist")
    real = os.path.realpath(interpreter)
    prefix = os.path.dirname(os.path.dirname(real))
    return Resolved(prefix, f"{interpreter} is not in a venv: it is {real}, which installs into {prefix}")


def script_interpreter(script: str, env: dict[str, str], cwd: str) -> tuple[str | None, str]:
    """(the interpreter a script's shebang runs, why) from its first bytes, read as data; None
    with the reason when it names none guard can resolve."""
    try:
        fd = os.open(script, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO does not block the read
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None, f"{script} is not a regular file"
            head = os.read(fd, SHEBANG_MAX)
        finally:
            os.close(fd)
    except OSError as exc:
        return None, f"cannot read {script} ({exc.strerror or exc})"
    if not head.startswith(b"#!"):
        return None, f"{script} is not a script with a shebang (a binary launcher?)"
    text = head.decode("utf-8", "replace")
    first = text.splitlines()[0][2:].strip()
    try:
        words = shlex.split(first)
    except ValueError:
        words = first.split()
    if not words:
        return None, f"{script}: an empty shebang"
    prog = words[0]
    if os.path.basename(prog) == "sh" and len(words) == 1:
        m = _SH_EXEC.search(text)
        if m:
            py = m["py"].strip('"')
            return py, f"{script} runs {py} (its /bin/sh launcher)"
        return None, f"{script} is a shell script guard cannot read"
    if os.path.basename(prog) == "env":
        rest = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        if not rest:
            return None, f"{script}: '#!{first}' names no program"
        found = which(rest[0], env, cwd) if os.sep not in rest[0] else rest[0]
        if found is None:
            return None, f"{script}: '#!{first}': {rest[0]} is not on PATH"
        return found, f"{script} runs {rest[0]} from PATH ({found})"
    return prog, f"{script} runs {prog}"


def interpreter_environment(interpreter: str, what: str) -> Resolved:
    """``environment_of`` with ``what`` (how the command names it) in front of the why."""
    got = environment_of(interpreter)
    return Resolved(got.environment, f"{what}: {got.why}", got.unsure)


def script_environment(word: str, env: dict[str, str], cwd: str) -> Resolved:
    """The environment a console script (``pip``, ``pip3.11``, ``V/bin/pip``) installs into: its
    shebang's interpreter's, whatever directory the script itself is in."""
    located = which(word, env, cwd)
    if located is None:
        return Resolved(None, f"{word} not found", f"{word} is not on PATH")
    interpreter, why = script_interpreter(located, env, cwd)
    if interpreter is None:
        return Resolved(None, why, why)
    if not _PYTHON_NAME.match(os.path.basename(interpreter)):  # a shim (pyenv's is a bash script) picks one later
        return Resolved(None, why, f"{why}, not a Python interpreter: which one it starts is not known")
    got = environment_of(interpreter)
    why = f"{why}; {got.why}"
    home = environment_of(located).environment  # the venv the script itself sits in
    if home and got.environment and os.path.realpath(home) != os.path.realpath(got.environment) \
            and os.path.isfile(os.path.join(home, VENV_LANDMARK)):
        why += (f" (the script sits in {home} but names another venv's interpreter: a copied or moved venv; "
                f"{os.path.join(os.path.dirname(located), 'python')} -m pip installs into {home})")
    return Resolved(got.environment, why, got.unsure)
