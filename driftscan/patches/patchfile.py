"""The patch file `driftscan patch` writes and reads: a DEP-3-style header, then a git-style unified diff.

```
Description: Fixes kept from /root/ml-env (driftscan patch export)
Distribution: vllm
Version: 0.33.0
Driftscan-Version: 0.1.0
Files:
 vllm/models/x.py sha256=<the original's RECORD hash>
 vllm/new_module.py new
---
diff --git a/vllm/models/x.py b/vllm/models/x.py
--- a/vllm/models/x.py
+++ b/vllm/models/x.py
@@ ...
```

Paths are relative to the distribution's install root (site-packages) with git's ``a/``/``b/`` prefixes,
so ``git apply`` and ``patch -p1`` apply the body in an unpacked wheel (both skip the header, which
ends at the line ``---``). Pure text: no I/O. A patch file comes from a repository someone else may
have written, so ``parse`` reads it as hostile data: every path is checked (relative, no ``..``, not
into a ``.dist-info`` directory), the header's file list must name exactly the files the diff
changes, and the size is bounded.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass

from driftscan.formats.patch import (
    FilePatch,
    PatchError,
    diff_hunks,
    parse_patch,
    quote_path,
    split_lines,
    unquote_path,
)

__all__ = [
    "MAX_HUNKS",
    "MAX_PATCH_BYTES",
    "FilePatch",
    "PatchFile",
    "PatchFormatError",
    "PatchHeader",
    "PatchedFile",
    "check_path",
    "file_diff",
    "file_patches",
    "is_record_hash",
    "parse",
    "render",
]

MAX_PATCH_BYTES = 64 * 1024 * 1024
MAX_HUNKS = 100_000

_MODES = ("100644", "100755")  # a regular file; never a symlink (120000) or a submodule
_CANONICAL_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+!_-]*")
# RECORD's hash as it writes it: the algorithm, "=", the urlsafe base64 digest without padding.
_HASH = re.compile(r"(sha256=[A-Za-z0-9_-]{43}|sha384=[A-Za-z0-9_-]{64}|sha512=[A-Za-z0-9_-]{86})")
_FIELDS = ("Description", "Distribution", "Version", "Driftscan-Version", "Files")
_FIELD_LINE = re.compile(r"([A-Za-z][A-Za-z0-9-]*):(?: (.*))?")


class Change(str, enum.Enum):
    """What a patch does to one file."""

    MODIFY = "modify"
    CREATE = "create"
    DELETE = "delete"


class PatchFormatError(PatchError):
    """A patch file that is malformed or hostile; one line that says where and why."""


@dataclass(frozen=True)
class PatchedFile:
    """One file the patch changes: its path below the install root and its original's RECORD hash
    (``sha256=...``), or None for a file the patch creates."""

    path: str
    original: str | None


@dataclass(frozen=True)
class PatchHeader:
    description: str
    distribution: str  # the canonical (PEP 503) name
    version: str  # as installed
    driftscan_version: str
    files: tuple[PatchedFile, ...]


@dataclass(frozen=True)
class PatchFile:
    header: PatchHeader
    body: str  # the diff, from the first ``diff --git`` line to the end


def _shown(text: str) -> str:
    shown = repr(text)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def check_path(path: str) -> str:
    """``path`` if it may be patched below an install root; PatchFormatError saying why not otherwise.
    POSIX, relative, no empty, ``.`` or ``..`` component, no control character or backslash, and
    never into a ``*.dist-info`` directory (a patch never edits RECORD or METADATA)."""
    if not path:
        raise PatchFormatError("an empty path")
    if any(ord(ch) < 0x20 or ch == "\x7f" for ch in path):
        raise PatchFormatError(f"a path with a control character: {_shown(path)}")
    if "\\" in path:
        raise PatchFormatError(f"a path with a backslash (patch paths are POSIX): {_shown(path)}")
    if path.startswith("/"):
        raise PatchFormatError(f"an absolute path: {_shown(path)}")
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise PatchFormatError(f"a path that is not plainly below the install root: {_shown(path)}")
    if any(part.endswith(".dist-info") for part in parts[:-1]):
        raise PatchFormatError(f"a path into a .dist-info directory (a patch never edits RECORD or METADATA): {_shown(path)}")
    return path


def is_record_hash(text: str) -> bool:
    """``text`` is a hash as RECORD writes it (``sha256=`` and urlsafe base64), what ``Files:`` takes."""
    return bool(_HASH.fullmatch(text))


def _check_text(name: str, value: str) -> None:
    if not isinstance(value, str):
        raise PatchFormatError(f"{name} must be text, not {type(value).__name__}")
    if any(ord(ch) < 0x20 and ch != "\n" or ch == "\x7f" for ch in value):
        raise PatchFormatError(f"{name} holds a control character: {_shown(value)}")


def _check_header(header: PatchHeader) -> None:
    _check_text("the description", header.description)
    if any(line.strip() == "." for line in header.description.split("\n")):
        raise PatchFormatError("a description line cannot be '.' alone (DEP-3 reads it as an empty line)")
    if not _CANONICAL_NAME.fullmatch(header.distribution):
        raise PatchFormatError(f"Distribution must be a canonical name (lower case, '-'): {_shown(header.distribution)}")
    for name, value in (("Version", header.version), ("Driftscan-Version", header.driftscan_version)):
        if not _VERSION.fullmatch(value):
            raise PatchFormatError(f"{name} is not a version: {_shown(value)}")
    if not header.files:
        raise PatchFormatError("a patch lists no file (Files: is empty)")
    seen: set[str] = set()
    for entry in header.files:
        check_path(entry.path)
        if entry.path in seen:
            raise PatchFormatError(f"Files: lists {_shown(entry.path)} twice")
        seen.add(entry.path)
        if entry.original is not None and not _HASH.fullmatch(entry.original):
            raise PatchFormatError(f"Files: {_shown(entry.path)} has no RECORD hash ('sha256=...') or 'new': {_shown(entry.original)}")


def _header_text(header: PatchHeader) -> str:
    lines = header.description.split("\n")
    out = ["Description: " + lines[0]]
    out += [" " + (line if line else ".") for line in lines[1:]]
    out += [
        "Distribution: " + header.distribution,
        "Version: " + header.version,
        "Driftscan-Version: " + header.driftscan_version,
        "Files:",
    ]
    out += [f" {entry.path} {entry.original or 'new'}" for entry in header.files]
    return "\n".join(out) + "\n---\n"


def render(patch: PatchFile) -> str:
    """The patch file's text; ``parse(render(p)) == p``. PatchFormatError for a header or body that
    would not read back the same."""
    _check_header(patch.header)
    text = _header_text(patch.header) + patch.body
    parsed = parse(text)
    if parsed != patch:
        raise PatchFormatError("the patch would not read back as written (the header's text is not plain)")
    return text


def file_diff(path: str, old: str | None, new: str | None, context: int = 3) -> str:
    """One file's part of the body: ``git diff``'s form for ``old`` -> ``new`` at ``path`` (None: the
    file does not exist on that side), which ``git apply`` and ``patch -p1`` accept. "" when equal."""
    check_path(path)
    if old is None and new is None:
        raise PatchFormatError(f"{_shown(path)}: a file missing on both sides")
    if old == new:
        return ""
    a_name, b_name = quote_path("a/" + path), quote_path("b/" + path)
    out = [f"diff --git {a_name.rstrip(chr(9))} {b_name.rstrip(chr(9))}\n"]
    if old is None:
        out.append("new file mode 100644\n")
    elif new is None:
        out.append("deleted file mode 100644\n")
    hunks = diff_hunks(old or "", new or "", context)
    if hunks:  # an empty file created or deleted has no hunk, as git writes it
        out.append(f"--- {'/dev/null' if old is None else a_name}\n")
        out.append(f"+++ {'/dev/null' if new is None else b_name}\n")
        out += [hunk.text() for hunk in hunks]
    return "".join(out)


# ------------------------------------------------------------------------------------ reading


def _read_header(lines: Sequence[str]) -> PatchHeader:
    fields: dict[str, list[str]] = {}
    current: list[str] | None = None
    for number, line in enumerate(lines, 1):
        if line.startswith(" "):
            if current is None:
                raise PatchFormatError(f"line {number}: a continuation line before any field")
            current.append(line[1:])
            continue
        match = _FIELD_LINE.fullmatch(line)
        if not match:
            raise PatchFormatError(f"line {number}: expected 'Field: value' in the header, got {_shown(line)}")
        name = match[1]
        known = next((field for field in _FIELDS if field.lower() == name.lower()), None)
        if known is None:  # another DEP-3 field (Author:, Forwarded:, ...): allowed, not kept
            current = []
            continue
        if known in fields:
            raise PatchFormatError(f"line {number}: the header has {known}: twice")
        current = fields[known] = [match[2] or ""]
    missing = [field for field in _FIELDS if field not in fields]
    if missing:
        raise PatchFormatError("the header has no " + ", ".join(f"{field}:" for field in missing))
    for field in ("Distribution", "Version", "Driftscan-Version"):
        if len(fields[field]) != 1:
            raise PatchFormatError(f"{field}: is one line")
    if fields["Files"][0]:
        raise PatchFormatError("Files: lists one file per continuation line, nothing on its own line")
    files = []
    for entry in fields["Files"][1:]:
        path, _, original = entry.rpartition(" ")
        if not path:
            raise PatchFormatError(f"Files: expected '<path> sha256=...' or '<path> new', got {_shown(entry)}")
        files.append(PatchedFile(path, None if original == "new" else original))
    first, *rest = fields["Description"]
    description = "\n".join([first] + ["" if line == "." else line for line in rest])
    header = PatchHeader(
        description=description,
        distribution=fields["Distribution"][0],
        version=fields["Version"][0],
        driftscan_version=fields["Driftscan-Version"][0],
        files=tuple(files),
    )
    _check_header(header)
    return header


def _strip_prefix(line: str, prefix: str, lineno: int) -> str:
    """``--- a/x`` -> ``--- x`` (quoted names keep their quotes); ``/dev/null`` stays."""
    head, rest = line[:4], line[4:]
    if rest.rstrip("\r\n") == "/dev/null":
        return line
    if rest.startswith(prefix):
        return head + rest[len(prefix) :]
    if rest.startswith('"' + prefix):
        return head + '"' + rest[len(prefix) + 1 :]
    raise PatchFormatError(f"line {lineno}: expected {prefix!r} before the path, got {_shown(line.rstrip(chr(10)))}")


def _git_path(line: str, lineno: int) -> str:
    """The path of ``diff --git a/P b/P`` (each side quoted as git quotes it); both sides must agree."""
    rest = line.rstrip("\n")[len("diff --git ") :]
    if len(rest) % 2 == 0:
        raise PatchFormatError(f"line {lineno}: {_shown(line.rstrip(chr(10)))} does not name one file on both sides")
    half = len(rest) // 2
    a_side, b_side = rest[:half], rest[half + 1 :]
    try:
        a_path, b_path = unquote_path(a_side), unquote_path(b_side)
    except PatchError as exc:
        raise PatchFormatError(f"line {lineno}: {exc}") from None
    if rest[half] != " " or not a_path.startswith("a/") or b_path != "b/" + a_path[2:]:
        raise PatchFormatError(f"line {lineno}: {_shown(line.rstrip(chr(10)))} does not name one file as a/<path> b/<path>")
    return check_path(a_path[2:])


def _read_file(lines: Sequence[str], first_line: int) -> FilePatch:
    """One ``diff --git`` section: git's extended header, then a -p0 diff for formats.patch."""
    i = 1
    created = deleted = False
    while i < len(lines) and not lines[i].startswith("--- "):
        line = lines[i].rstrip("\n")
        lineno = first_line + i
        if line.startswith("new file mode ") and line[14:] in _MODES:
            created = True
        elif line.startswith("deleted file mode ") and line[18:] in _MODES:
            deleted = True
        elif re.fullmatch(r"index [0-9a-f]{7,64}\.\.[0-9a-f]{7,64}(?: 100644| 100755)?", line):
            pass  # git diff writes it; the Files: hash is what driftscan checks
        else:
            raise PatchFormatError(
                f"line {lineno}: {_shown(line)} is not part of a text patch driftscan applies "
                "(no renames, mode changes, symlinks or binary files)"
            )
        i += 1
    if created and deleted:
        raise PatchFormatError(f"line {first_line}: a file both created and deleted")
    path = _git_path(lines[0], first_line)
    if i == len(lines):  # no hunks: only an empty file created or deleted
        if not (created or deleted):
            raise PatchFormatError(f"line {first_line}: 'diff --git' without a change")
        return FilePatch(path, (), created=created, deleted=deleted)
    section = [_strip_prefix(lines[i], "a/", first_line + i)]
    if i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
        section.append(_strip_prefix(lines[i + 1], "b/", first_line + i + 1))
    section += lines[i + len(section) :]
    try:
        parsed = parse_patch("".join(section))
    except PatchError as exc:
        raise PatchFormatError(f"in the diff starting at line {first_line} (counting from its '---' line): {exc}") from None
    if len(parsed) != 1:
        raise PatchFormatError(f"line {first_line}: one 'diff --git' section holds {len(parsed)} files")
    (patch,) = parsed
    if patch.created != created or patch.deleted != deleted:
        raise PatchFormatError(f"line {first_line}: 'new file' or 'deleted file' disagrees with /dev/null in the diff of {_shown(patch.path)}")
    if patch.path != path:
        raise PatchFormatError(f"line {first_line}: 'diff --git' names {_shown(path)}, its '---'/'+++' lines {_shown(patch.path)}")
    return patch


def _read_body(body: str, first_line: int) -> list[FilePatch]:
    lines = split_lines(body)
    if not lines:
        raise PatchFormatError("the patch has a header and no diff")
    if not lines[0].startswith("diff --git "):
        raise PatchFormatError(f"line {first_line}: expected 'diff --git' after the header's '---', got {_shown(lines[0])}")
    hunks = sum(1 for line in lines if line.startswith("@@"))
    if hunks > MAX_HUNKS:
        raise PatchFormatError(f"the patch has {hunks} hunks, more than the {MAX_HUNKS} driftscan reads")
    starts = [index for index, line in enumerate(lines) if line.startswith("diff --git ")] + [len(lines)]
    return [_read_file(lines[a:b], first_line + a) for a, b in zip(starts, starts[1:])]


def _split(text: str) -> tuple[list[str], str, int]:
    """The header's lines (without their newlines), the body, and the body's first line number."""
    header: list[str] = []
    offset = 0
    for number, line in enumerate(split_lines(text), 1):
        offset += len(line)
        if line == "---\n":
            return header, text[offset:], number + 1
        if not line.endswith("\n"):
            break
        header.append(line[:-1])
    raise PatchFormatError("no line '---' ends the header (is this a driftscan patch file?)")


def file_patches(patch: PatchFile) -> list[FilePatch]:
    """The body's files, each with its hunks (paths below the install root, checked)."""
    return _read_body(patch.body, 1)


def parse(text: str) -> PatchFile:
    """Read a patch file as untrusted data; PatchFormatError (one line) for anything malformed or hostile."""
    if not isinstance(text, str):
        raise PatchFormatError(f"a patch file is text, not {type(text).__name__}")
    if len(text) > MAX_PATCH_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_PATCH_BYTES:
        raise PatchFormatError(f"the patch file is larger than {MAX_PATCH_BYTES // (1024 * 1024)} MiB")
    if "\0" in text:
        raise PatchFormatError("the patch file holds a NUL character (binary data?)")
    if not text.startswith("Description:"):
        raise PatchFormatError("a driftscan patch file starts with 'Description:'")
    header_lines, body, first_line = _split(text)
    if any("\r" in line for line in header_lines):
        raise PatchFormatError("the header has a carriage return (CRLF line endings?)")
    header = _read_header(header_lines)
    files = _read_body(body, first_line)
    listed = {entry.path: entry for entry in header.files}
    seen: set[str] = set()
    for patch in files:
        check_path(patch.path)
        if patch.path in seen:
            raise PatchFormatError(f"the diff changes {_shown(patch.path)} twice")
        seen.add(patch.path)
        entry = listed.pop(patch.path, None)
        if entry is None:
            raise PatchFormatError(f"the diff changes {_shown(patch.path)}, which Files: does not list")
        if (entry.original is None) != patch.created:
            said = "new" if entry.original is None else "an original's hash"
            did = "creates" if patch.created else "changes"
            raise PatchFormatError(f"Files: says {said} for {_shown(patch.path)}, the diff {did} it")
    if listed:
        raise PatchFormatError(f"Files: lists {_shown(next(iter(listed)))}, which the diff does not change")
    return PatchFile(header, body)
