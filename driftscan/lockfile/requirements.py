"""Requirements files, hashed ones above all (``uv pip compile --generate-hashes``, pip-compile):
one requirement a line, ``\\`` continuations, ``--hash`` options; no other file is opened."""

from __future__ import annotations

import re

from packaging.requirements import InvalidRequirement, Requirement

from .fields import MAX_PACKAGES, Fields, capped
from .model import Lock, LockedFile, LockedPackage, LockFormat, SourceKind

_COMMENT = re.compile(r"(^|\s+)#.*$")
_HASH = re.compile(r"--hash[=\s]+(\S+)")
_NOT_FOLLOWED = ("-r", "--requirement", "-c", "--constraint")
_EDITABLE = ("-e", "--editable")


def parse_requirements(path: str, text: str) -> Lock:
    f = Fields(path)
    notes: list[str] = []
    packages: list[LockedPackage] = []
    lines = _logical_lines(text)
    if len(lines) > MAX_PACKAGES:
        raise f.error("lines", f"{len(lines)} requirement lines, more than the {MAX_PACKAGES} a lock may have")
    for number, line in lines:
        where = f"line {number}"
        if line.startswith("-"):
            option, _, value = line.partition(" ") if " " in line.split("=", 1)[0] else line.partition("=")
            value = value.strip()
            if option in _NOT_FOLLOWED:
                notes.append(f"{where}: {option} {value[:120]}: another file, not followed")
            elif option in _EDITABLE:
                if (editable := _editable(f, value, where, notes)) is not None:
                    packages.append(editable)
            else:
                notes.append(f"{where}: {option}: ignored")
            continue
        hashes = _HASH.findall(line)
        text_part = _HASH.sub("", line).strip()
        if " --" in f" {text_part}":  # per-requirement options other than --hash
            text_part, _, rest = f" {text_part}".partition(" --")
            text_part = text_part.strip()
            notes.append(f"{where}: --{rest.split()[0][:60]}: ignored")
        try:
            req = Requirement(text_part)
        except InvalidRequirement as exc:
            raise f.error(where, f"not a requirement ({str(exc).splitlines()[0][:120]})") from None
        name = f.canonical(req.name, where)
        pins = [s for s in req.specifier if s.operator in ("==", "===") and not s.version.endswith(".*")]
        version = pins[0].version if len(pins) == 1 and len(req.specifier) == 1 else None
        digests = [f.sha256(h, f"{where}: --hash") for h in hashes]
        if req.url:
            files = tuple(f.file(None, req.url, d, None) for d in digests) or (f.file(None, req.url, None, None),)
        else:
            files = tuple(LockedFile(filename=None, url=None, sha256=d, size=None, is_wheel=False)
                          for d in digests if d is not None)
        packages.append(LockedPackage(name=name, version=version,
                                      source=SourceKind.URL if req.url else SourceKind.REGISTRY,
                                      location=req.url, files=files, marker=str(req.marker) if req.marker else None))
    return Lock(path=path, format=LockFormat.REQUIREMENTS, packages=tuple(packages), requires_python=None,
                notes=capped(notes))


def _editable(f: Fields, value: str, where: str, notes: list[str]) -> LockedPackage | None:
    """``-e PATH_OR_URL``: the name is the ``#egg=`` fragment when there is one."""
    egg = re.search(r"[#&]egg=([^&\s]+)", value)
    if egg is None:
        notes.append(f"{where}: -e {value[:120]}: no #egg= name: not checked")
        return None
    return LockedPackage(name=f.canonical(egg.group(1), where), version=None, source=SourceKind.EDITABLE, location=value, files=(), marker=None)


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, text) of each line once continuations are joined and comments gone."""
    out: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        if not pending:
            start = number
        line = _COMMENT.sub("", raw)
        if line.endswith("\\"):
            pending.append(line[:-1])
            continue
        pending.append(line)
        joined = " ".join(part.strip() for part in pending).strip()
        pending = []
        if joined:
            out.append((start, joined))
    if pending and (joined := " ".join(p.strip() for p in pending).strip()):
        out.append((start, joined))
    return out
