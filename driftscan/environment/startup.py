"""Files Python runs at every start of an environment's interpreter, read as data.

``site`` processes every ``*.pth`` file directly in a site-packages directory when the
interpreter starts. It skips blank lines and lines starting with ``#``; a line whose first
characters are ``import`` followed by a space or a tab is passed to ``exec()`` whole (so
``import os; os.environ.setdefault(...)`` runs every statement on it); any other line is a
directory added to ``sys.path``. Leading blanks make a line a path, not code. After the ``.pth``
files, ``site`` imports ``sitecustomize`` (and ``usercustomize`` when user site-packages are
enabled) from wherever ``sys.path`` finds it. Nothing here runs or imports any of it.

Every read is capped (``fs/reader.py``): a file that cannot be read whole, or not at all (a FIFO,
a symlink out of the tree), is reported as startup code with the reason, never assumed harmless.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..core.units import plural, size
from ..fs.paths import inert, printable
from ..fs.reader import LIMITS, os_error, read_head

PREVIEW_LINES = 20
PREVIEW_BYTES = 4 << 10
READ_LIMIT = LIMITS[".pth"]  # bytes of a .pth or customize module read; a larger one is cut there
SHOWN_LINE = 200  # characters of one executable line quoted in the evidence
SHOWN_LINES = 3  # executable lines quoted in the evidence; the rest are counted
RUNS = "runs at every start of this environment's interpreter"


def is_pth(site: str, path: str) -> bool:
    """A path-configuration file ``site`` reads: a ``.pth`` directly in a site-packages directory."""
    return path.endswith(".pth") and os.path.dirname(path) == site


CUSTOMIZE_MODULES = ("sitecustomize", "usercustomize")
_COMPILED = (".so", ".pyd", ".pyc")  # an extension module (any ABI tag before it), or sourceless bytecode


def customize_module(site: str, path: str) -> str | None:
    """The module ``site`` imports at start-up that ``path`` is (``sitecustomize`` or
    ``usercustomize``): a ``.py``, a package's ``__init__.py``, an extension module
    (``sitecustomize.cpython-312-x86_64-linux-gnu.so``, ``.abi3.so``, ``.pyd``) or a sourceless
    ``.pyc`` directly in site-packages — the import system takes any of them. None otherwise."""
    parent, name = os.path.split(path)
    if parent == site:
        stem, dot, rest = name.partition(".")
        if stem in CUSTOMIZE_MODULES and dot and (rest == "py" or name.endswith(_COMPILED)):
            return stem
    elif name == "__init__.py" and os.path.dirname(parent) == site and os.path.basename(parent) in CUSTOMIZE_MODULES:
        return os.path.basename(parent)
    return None


def is_startup_file(site: str, path: str) -> bool:
    return (os.path.dirname(path) == site and path.endswith(".pth")) or customize_module(site, path) is not None


def executable_lines(text: str) -> list[tuple[int, str]]:
    """(line number from 1, line) of each line of a ``.pth`` that ``site`` executes. Lines are
    split wherever ``str.splitlines`` splits (newer Pythons split so; older ones split on fewer
    characters: this finds at least what either runs), and a UTF-8 byte-order mark is dropped."""
    lines = text.removeprefix("\ufeff").splitlines()
    return [(n, line) for n, line in enumerate(lines, 1) if line.startswith(("import ", "import\t"))]


def _shown(line: str) -> str:
    line = inert(printable(line))
    return line if len(line) <= SHOWN_LINE else line[:SHOWN_LINE] + f"… ({len(line)} characters)"


def preview(data: bytes, total: int) -> str:
    """The first ``PREVIEW_LINES`` lines and ``PREVIEW_BYTES`` bytes of ``data`` (the start of a
    file of ``total`` bytes), inert, with a last line saying what was cut."""
    text = data[:PREVIEW_BYTES].decode("utf-8", "surrogateescape")
    if len(data) > PREVIEW_BYTES:  # a character cut in two by the byte cap is dropped
        text = data[:PREVIEW_BYTES].decode("utf-8", "ignore")
    lines = text.splitlines()
    shown = lines[:PREVIEW_LINES]
    out = "\n".join(inert(printable(line)) for line in shown)
    if len(lines) > PREVIEW_LINES or len(data) > PREVIEW_BYTES or total > len(data):
        out += f"\n… (cut: the first {plural_n(len(shown), 'line')}, at most {size(PREVIEW_BYTES)}, of {size(total)})"
    return out


def plural_n(count: int, noun: str) -> str:
    return f"{count} {plural(count, noun)}"


@dataclass(frozen=True)
class StartupCode:
    """What a startup file does, as the report says it."""

    evidence: str
    preview: str | None


def _read(site: str, path: str) -> tuple[bytes, int] | str:
    """(its start, its size), or why it cannot be read. A symlink is followed within ``site``
    only: Python follows it anywhere, driftscan reads nothing outside the tree."""
    try:
        return read_head(path, READ_LIMIT, follow=True, root=site)
    except OSError as exc:
        return os_error(exc)


def inspect(site: str, path: str) -> StartupCode | None:
    """What an unowned startup file in ``site`` runs, or None for a ``.pth`` that only adds paths."""
    module = customize_module(site, path)
    read = _read(site, path)
    if isinstance(read, str):
        what = f"Python imports {module} from it" if module else "Python reads it"
        return StartupCode(f"{what} at every start of this environment's interpreter; not read ({read}), so "
                           "what it runs is unchecked", None)
    data, total = read
    compiled = path.endswith(_COMPILED)
    shown = None if compiled else preview(data, total)  # machine code or bytecode: nothing to quote
    cut = f" (only its first {size(len(data))} of {size(total)} read)" if total > len(data) and not compiled else ""
    if module:
        when = " when user site-packages are enabled" if module == "usercustomize" else ""
        form = (" (an extension module)" if path.endswith((".so", ".pyd")) else " (sourceless bytecode)" if compiled
                else " (a package)" if os.path.basename(path) == "__init__.py" else "")
        return StartupCode(f"{RUNS}: Python imports {module}{form} at start-up{when}, and no RECORD lists it{cut}",
                           shown)
    lines = executable_lines(data.decode("utf-8", "surrogateescape"))
    if lines:
        return StartupCode(f"{RUNS}: {lines_said(lines)}{cut}", shown)
    if total > len(data):
        return StartupCode(f"Python reads all {size(total)} of it at every start of this environment's interpreter; "
                           f"its first {size(len(data))} have no executable line, the rest is unchecked", shown)
    return None


def lines_said(lines: list[tuple[int, str]]) -> str:
    """``line N: <line>`` for the first executable lines, the rest counted."""
    said = "; ".join(f"line {n}: {_shown(line)}" for n, line in lines[:SHOWN_LINES])
    more = len(lines) - SHOWN_LINES
    return said + (f"; and {more} more executable line{'s' if more != 1 else ''}" if more > 0 else "")


def modified_pth(site: str, path: str) -> StartupCode | None:
    """For a ``.pth`` a RECORD owns that no longer matches it: what it now runs, if anything."""
    read = _read(site, path)
    if isinstance(read, str):
        return None
    data, total = read
    lines = executable_lines(data.decode("utf-8", "surrogateescape"))
    if not lines:
        return None
    return StartupCode(f"it has executable lines, and {RUNS}: {lines_said(lines)}", preview(data, total))
