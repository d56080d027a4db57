"""``--fetch``: download the installed release's wheel with driftscan's own pip.

Never the audited environment's interpreter or pip: ``sys.executable -m pip download`` in a
temporary directory, without PYTHONPATH/PYTHONHOME, no input, a timeout. The wheel wanted is the
one installed, so the platform tags come from the installed WHEEL file (each validated), and
the index settings from the environment's own ``pip.conf`` (only index URLs, only http(s)).
"""

from __future__ import annotations

import configparser
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import urllib.parse
from collections.abc import Callable, Iterator

from ..fs.reader import read_regular
from ..core.values import Distribution
from .base import Rejected, SourceKind, error_text
from .names import installed_tags, parse_wheel_filename, same_release
from .wheel import ZipCopy, open_wheel, wheel_members_error

PIP_CONF_LIMIT = 1 << 20
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,200}[A-Za-z0-9])?")
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+!_-]{0,100}")
_TAG_PART = re.compile(r"[a-z0-9_]{1,100}")
_INTERPRETER = re.compile(r"(cp|pp)(\d)(\d{1,2})")
_PYTHON_VERSION = re.compile(r"3\.\d{1,2}")
_DROPPED_ENV = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONINSPECT")


def timeout() -> float:
    try:
        return max(1.0, float(os.environ.get("DRIFTSCAN_FETCH_TIMEOUT", "300")))
    except ValueError:
        return 300.0


_LINUX_PLATFORM = re.compile(r"linux_([A-Za-z0-9_]+)")
_MANYLINUX_GLIBC = (17, 24, 27, 28, 31, 34, 35, 39)  # manylinux2014 is manylinux_2_17


def tag_arguments(tags: frozenset[str] | None, python_version: str | None) -> list[str]:
    """``--implementation/--python-version/--abi/--platform`` for the installed wheel's tags;
    none for a pure wheel (``py3-none-any``) or when the tags are unknown."""
    if not tags:
        return []
    split = [tag.split("-") for tag in sorted(tags)]
    if any(len(parts) != 3 or not all(_TAG_PART.fullmatch(p) for p in parts) for parts in split):
        return []
    platforms = sorted({p[2] for p in split} - {"any"})
    abis = sorted({p[1] for p in split} - {"none"})
    if not platforms and not abis:
        return []
    args: list[str] = []
    interpreter = next((m for p in split if (m := _INTERPRETER.fullmatch(p[0]))), None)
    known = python_version if python_version and _PYTHON_VERSION.fullmatch(python_version) else None
    if interpreter is not None:
        # An abi3 wheel's cpXY is the oldest Python it runs on, not the one installed (vLLM's
        # cp38-abi3 wheel requires 3.11): the environment's own version picks the wheel.
        version = known if known and "abi3" in abis else f"{interpreter[2]}.{interpreter[3]}"
        args += ["--implementation", interpreter[1], "--python-version", version]
    elif known:
        args += ["--python-version", known]
    for abi in abis:
        args += ["--abi", abi]
    for platform in platforms:
        args += ["--platform", platform]
        # auditwheel renames linux_ARCH to manylinux_* in the file name only (the WHEEL file inside
        # keeps linux_ARCH), and indexes serve the manylinux file; pip takes each --platform as
        # given (no widening to older glibc versions), so the glibc levels wheels are built for.
        linux = _LINUX_PLATFORM.fullmatch(platform)
        if linux is not None:
            for glibc in _MANYLINUX_GLIBC:
                args += ["--platform", f"manylinux_2_{glibc}_{linux[1]}"]
    return args


def _http_url(value: str) -> bool:
    try:
        parts = urllib.parse.urlsplit(value)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc) and len(value) <= 2048 \
        and not re.search(r"[\x00-\x20\x7f]", value)


def index_arguments(venv: str | None) -> tuple[list[str], str | None]:
    """``--index-url``/``--extra-index-url`` from ``<venv>/pip.conf`` ([global], then [install],
    then [download], the later winning as pip's command sections do) and a note, if any."""
    if not venv:
        return [], None
    path = os.path.join(venv, "pip.conf")
    try:
        text = read_regular(path, PIP_CONF_LIMIT, what="pip.conf", follow=False, root=venv).decode("utf-8")
    except FileNotFoundError:
        return [], None
    except (OSError, UnicodeDecodeError) as exc:
        return [], f"{path} not read ({error_text(exc)})"
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return [], f"{path} is not a valid config file: not used"
    index: str | None = None
    extra: list[str] = []
    for section in ("global", "install", "download"):
        if not parser.has_section(section):
            continue
        for key, value in parser.items(section):
            key = key.replace("_", "-")
            urls = [u for u in value.split() if _http_url(u)]
            if key == "index-url" and urls:
                index = urls[0]
            elif key == "extra-index-url":
                extra = urls
    args = (["--index-url", index] if index else []) + [a for u in extra for a in ("--extra-index-url", u)]
    return args, (f"index settings from {path}" if args else None)


def fetch_candidates(dist: Distribution, python_version: str | None, venv: str | None, workdir: Callable[[], str],
                     notes: list[str], progress: Callable[[str], None] | None = None,
                     tags: frozenset[str] | None = None) -> Iterator[ZipCopy | Rejected]:
    """Download ``dist``'s wheel into a new directory under ``workdir()`` and yield it; ``tags``:
    the platform tags to ask for instead of ``dist``'s own WHEEL's (a release not installed)."""
    if importlib.util.find_spec("pip") is None:
        notes.append(f"--fetch (driftscan's interpreter {sys.executable} has no pip)")
        return
    if not _NAME.fullmatch(dist.name) or not _VERSION.fullmatch(dist.version):
        notes.append("--fetch (the installed name or version is not one pip could be asked for)")
        return
    requirement = f"{dist.name}=={dist.version}"
    index_args, index_note = index_arguments(venv)
    try:
        dest = tempfile.mkdtemp(prefix="fetch-", dir=workdir())
    except OSError as exc:
        notes.append(f"--fetch (no temporary directory: {error_text(exc)})")
        return
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "--no-input",
           "--disable-pip-version-check", "--dest", dest,
           *tag_arguments(tags if tags is not None else installed_tags(dist), python_version), *index_args,
           requirement]
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
    if progress is not None:
        progress(f"downloading {requirement} with pip")
    try:
        proc = subprocess.run(cmd, check=False, cwd=dest, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              errors="replace", timeout=timeout())
    except subprocess.TimeoutExpired:
        yield Rejected(SourceKind.FETCH, requirement, f"pip download did not finish in {timeout():.0f} s")
        return
    except OSError as exc:
        yield Rejected(SourceKind.FETCH, requirement, f"pip could not be run: {error_text(exc)}")
        return
    if proc.returncode != 0:
        lines = [line.strip() for line in proc.stderr.splitlines() if line.strip()]
        last = lines[-1] if lines else f"exit status {proc.returncode}"
        yield Rejected(SourceKind.FETCH, requirement,
                       f"pip download failed: {last}" + (f" ({index_note})" if index_note else ""))
        return
    try:
        names = sorted(os.listdir(dest))
    except OSError:
        names = []
    wheels = [n for n in names if (w := parse_wheel_filename(n)) is not None and same_release(dist, w.name, w.version)]
    if not wheels:
        yield Rejected(SourceKind.FETCH, requirement, "pip download gave no wheel of this release")
        return
    for name in wheels:
        path = os.path.join(dest, name)
        try:
            copy = open_wheel(path, SourceKind.FETCH, dist, follow=False)
        except Exception as exc:  # noqa: BLE001 - a corrupt download is a reason
            yield Rejected(SourceKind.FETCH, path, wheel_members_error(exc))
            continue
        copy.note = index_note
        # The wheel itself is removed when the run ends: a report names what was downloaded.
        copy.origin = f"pip download {requirement} from {_index_named(index_args)}"
        yield copy


def _index_named(index_args: list[str]) -> str:
    """The index a ``pip download`` used, in words: the environment's pip.conf URLs when given,
    else pip's own configuration (its config files, ``PIP_INDEX_URL``, or PyPI)."""
    urls = index_args[1::2]
    if not urls:
        return "pip's configured index"
    return urls[0] + (f" (and {len(urls) - 1} extra index)" if len(urls) > 1 else "")
