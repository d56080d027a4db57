"""environment/managers/placeholders.py: a conda file rewritten at link time, verified by putting
the placeholder back in memory and comparing with the package's sha256."""

from __future__ import annotations

import hashlib
import os

import pytest

from driftscan.core.values import Hash, RecordEntry
from driftscan.environment.files import ERROR, MISSING, MODIFIED, OK, TYPE_CHANGED
from driftscan.environment.managers.placeholders import (
    PRESENCE_ONLY,
    Placeholder,
    check_placeholder,
    restore_binary,
    restore_text,
)

PLACEHOLDER = "/opt/anaconda1anaconda2anaconda3" + "_placehold" * 10


def sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def row(path="x", in_prefix: bytes | None = None) -> RecordEntry:
    return RecordEntry(path, Hash("sha256", sha(in_prefix)) if in_prefix is not None else None, None, 1)


def link_text(original: bytes, prefix: str) -> bytes:
    return original.replace(PLACEHOLDER.encode(), prefix.encode())


def link_binary(original: bytes, prefix: str) -> bytes:
    """As conda links a binary-mode file: each C string keeps its length, NUL-padded."""
    old, new = PLACEHOLDER.encode(), prefix.encode()
    out, at = bytearray(), 0
    while (start := original.find(old, at)) != -1:
        end = original.find(b"\0", start)
        segment = original[start:end]
        out += original[at:start] + segment.replace(old, new) + b"\0" * (len(segment) - len(segment.replace(old, new)))
        at = end
    return bytes(out + original[at:])


@pytest.fixture
def prefix(tmp_path):
    (tmp_path / "env").mkdir()
    return tmp_path / "env"


TEXT = f"#!{PLACEHOLDER}/bin/python3.12\nimport sys\nPREFIX = '{PLACEHOLDER}'\n".encode()


def test_text_file_linked_at_the_prefix_is_ok_and_an_edit_is_modified(prefix):
    path = prefix / "bin/tool"
    path.parent.mkdir()
    path.write_bytes(link_text(TEXT, str(prefix)))
    ph = Placeholder(PLACEHOLDER, "text", sha(TEXT), None)
    result = check_placeholder(str(path), row(), ph, str(prefix))
    assert result.status == OK and "substituted back" in result.detail and result.content_checked
    path.write_bytes(link_text(TEXT, str(prefix)) + b"breakpoint()\n")
    result = check_placeholder(str(path), row(), ph, str(prefix))
    assert result.status == MODIFIED and "text mode" in result.detail


def test_the_records_sha256_in_prefix_settles_it_first(prefix):
    linked = link_text(TEXT, str(prefix))
    (prefix / "tool").write_bytes(linked)
    ph = Placeholder(PLACEHOLDER, "text", sha(TEXT), None)
    result = check_placeholder(str(prefix / "tool"), row(in_prefix=linked), ph, str(prefix))
    assert result == (OK, "matches the record's sha256_in_prefix")


def test_shortened_shebangs_are_undone(prefix):
    original = f"#!{PLACEHOLDER}/bin/python3.12 -E\nprint('{PLACEHOLDER}')\n".encode()
    env_form = f"#!/usr/bin/env python3.12 -E\nprint('{prefix}')\n".encode()
    forms = list(restore_text(env_form, PLACEHOLDER, str(prefix)))
    assert (original, "text mode, shebang shortened to /usr/bin/env") in forms
    exec_form = (f"#!/bin/sh\n'''exec' \"{prefix}/bin/python3.12\" -E \"$0\" \"$@\" #'''\n"
                 f"print('{prefix}')\n").encode()
    assert (original, "text mode, shebang rewritten to /bin/sh exec") in list(restore_text(exec_form, PLACEHOLDER,
                                                                                             str(prefix)))
    (prefix / "tool").write_bytes(env_form)
    assert check_placeholder(str(prefix / "tool"), row(), Placeholder(PLACEHOLDER, "text", sha(original), None),
                             str(prefix)).status == OK


def test_text_mode_undoes_every_encoding(prefix):
    original = PLACEHOLDER.encode("utf-16-le") + b"|" + PLACEHOLDER.encode()
    linked = str(prefix).encode("utf-16-le") + b"|" + str(prefix).encode()
    assert next(restore_text(linked, PLACEHOLDER, str(prefix)))[0] == original


BINARY = b"\x7fELF" + PLACEHOLDER.encode() + b"/lib\0code" + PLACEHOLDER.encode() + b"\0tail"


def test_binary_file_keeps_its_length(prefix):
    linked = link_binary(BINARY, str(prefix))
    assert len(linked) == len(BINARY) and restore_binary(linked, PLACEHOLDER, str(prefix)) == BINARY
    (prefix / "lib.so").write_bytes(linked)
    ph = Placeholder(PLACEHOLDER, "binary", sha(BINARY), len(BINARY))
    result = check_placeholder(str(prefix / "lib.so"), row(), ph, str(prefix))
    assert result.status == OK and "binary mode, NUL padding" in result.detail
    edited = bytearray(linked)
    edited[-1] ^= 0xFF
    (prefix / "lib.so").write_bytes(bytes(edited))
    assert check_placeholder(str(prefix / "lib.so"), row(), ph, str(prefix)).status == MODIFIED
    (prefix / "lib.so").write_bytes(linked + b"\0")  # linking never changes a binary file's size
    result = check_placeholder(str(prefix / "lib.so"), row(), ph, str(prefix))
    assert result.status == MODIFIED and "keeps its length" in result.detail


def test_missing_and_retyped_files(prefix):
    ph = Placeholder(PLACEHOLDER, "text", sha(TEXT), None)
    assert check_placeholder(str(prefix / "gone"), row(), ph, str(prefix)).status == MISSING
    (prefix / "dir").mkdir()
    assert check_placeholder(str(prefix / "dir"), row(), ph, str(prefix)).status == TYPE_CHANGED
    os.symlink("/etc/passwd", prefix / "link")
    result = check_placeholder(str(prefix / "link"), row(), ph, str(prefix))
    assert result.status == TYPE_CHANGED and "symlink" in result.detail  # never followed


def test_what_cannot_be_decided_is_presence_only(prefix, tmp_path):
    (prefix / "tool").write_bytes(link_text(TEXT, "/somewhere/else"))  # the prefix was moved after linking
    result = check_placeholder(str(prefix / "tool"), row(), Placeholder(PLACEHOLDER, "text", sha(TEXT), None),
                               str(prefix))
    assert result.status == OK and result.detail.startswith(PRESENCE_ONLY) and not result.content_checked
    # ... unless the prefix it was linked at is known
    moved = check_placeholder(str(prefix / "tool"), row(), Placeholder(PLACEHOLDER, "text", sha(TEXT), None),
                              str(prefix), also=("/somewhere/else",))
    assert moved.status == OK and moved.content_checked
    no_hash = check_placeholder(str(prefix / "tool"), row(), Placeholder(PLACEHOLDER, "text", None, None),
                                str(prefix))
    assert no_hash.status == OK and no_hash.detail.startswith(PRESENCE_ONLY)


def test_a_file_outside_the_prefix_is_not_read(prefix, tmp_path):
    (tmp_path / "outside").write_bytes(TEXT)
    result = check_placeholder(str(tmp_path / "outside"), row(), Placeholder(PLACEHOLDER, "text", sha(TEXT), None),
                               str(prefix))
    assert result.status == ERROR and "cannot read" in result.detail


def test_restore_binary_leaves_unpadded_occurrences_alone():
    placeholder, prefix = "/p" * 20, "/opt/env"
    original = b"A" + placeholder.encode() + b"/lib\0" + b"/opt/env/natural\0" + placeholder.encode() + b"/x"
    pad = len(placeholder) - len(prefix)
    linked = (b"A" + prefix.encode() + b"/lib" + b"\0" * pad + b"\0" + b"/opt/env/natural\0"
              + prefix.encode() + b"/x" + b"\0" * pad)  # the last string runs to the end: rattler pads it
    assert len(linked) == len(original)
    assert restore_binary(linked, placeholder, prefix) == original


def test_restore_binary_later_occurrence_of_a_string_takes_the_padding():
    """Two occurrences in one C string, padding for one: the first is a path the package had, the
    second the placeholder's (the string's end, its occurrences and NULs are found once)."""
    placeholder, prefix = "/p" * 20, "/opt/env"
    pad = len(placeholder) - len(prefix)
    linked = b"x/opt/env:" + prefix.encode() + b"/lib" + b"\0" * pad + b"\0tail"
    assert restore_binary(linked, placeholder, prefix) == b"x/opt/env:" + placeholder.encode() + b"/lib\0tail"


def test_restore_binary_is_linear_in_a_string_of_prefixes():
    prefix = "/opt/env"
    linked = prefix.encode() * 20_000  # one string, no NUL, no padding: nothing to put back
    assert restore_binary(linked, prefix + "x", prefix) == linked


@pytest.mark.parametrize("placeholder, mode, needle", [
    ("/" + "p" * 2000, "text", "prefix_placeholder has 2001 bytes, more than the 1024"),
    ("/" + "p" * 200, "binary", "more than the package's file (50 bytes) can hold"),
])
def test_a_placeholder_the_file_cannot_have_held_is_an_error(prefix, placeholder, mode, needle):
    path = prefix / "f"
    path.write_bytes(((str(prefix) + "/bin\0").encode() * 10)[:50])
    ph = Placeholder(placeholder, mode, sha(b"the package's file"), 50 if mode == "binary" else None)
    result = check_placeholder(str(path), row(), ph, str(prefix))
    assert result.status == ERROR and needle in result.detail


def test_a_text_substitution_past_the_limit_is_an_error(prefix, monkeypatch):
    from driftscan.environment.managers import placeholders

    monkeypatch.setattr(placeholders, "PLACEHOLDER_LIMIT", 4096)
    path = prefix / "f"
    path.write_bytes((str(prefix) + "\n").encode() * (4000 // (len(str(prefix)) + 1)))  # substituted back: over
    result = check_placeholder(str(path), row(), Placeholder("/" + "p" * 500, "text", sha(b"x"), None), str(prefix))
    assert result.status == ERROR and "more than the 4096 bytes" in result.detail
