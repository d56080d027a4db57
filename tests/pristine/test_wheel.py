"""driftscan.pristine.wheel: wheels opened safely, members found by exact name, sizes never trusted."""

from __future__ import annotations

import errno
import io
import os
import zipfile

import pytest

from driftscan.core.values import Distribution
from driftscan.pristine.base import SourceKind
from driftscan.pristine.wheel import (
    ZipCopy,
    central_directory,
    installed_outside,
    installer_written,
    layout,
    member_candidates,
    member_names,
    open_file,
    open_wheel,
    wheel_members_error,
)
from fixtures.wheelfiles import entry, installed, wheel_file

FILES = {"pkg/__init__.py": "", "pkg/core.py": "X = 1\n"}


def dist_in(tmp_path, name="pkg", version="1.0") -> Distribution:
    return installed(tmp_path / "site", name, version, FILES)


def test_central_directory_lists_every_member(tmp_path):
    wheel = wheel_file(tmp_path, "pkg", "1.0", FILES)
    with open(wheel, "rb") as f:
        cd = central_directory(f, wheel.stat().st_size, 1 << 20)
    with zipfile.ZipFile(wheel) as zf:
        assert list(member_names(cd)) == zf.namelist()
    assert "pkg-1.0.dist-info/RECORD" in member_names(cd)


def test_central_directory_refuses_what_is_no_zip_or_too_big(tmp_path):
    wheel = wheel_file(tmp_path, "pkg", "1.0", FILES)
    data = wheel.read_bytes()
    with pytest.raises(ValueError, match="no end of central directory record"):
        central_directory(io.BytesIO(b"PK" + b"\0" * 100), 102, 1 << 20)
    with pytest.raises(ValueError, match="more than the 10 read"):
        central_directory(io.BytesIO(data), len(data), 10)
    forged = bytearray(data)  # an end record whose directory would start before the file
    forged[-22 + 12:-22 + 16] = (len(data) * 2).to_bytes(4, "little")
    with pytest.raises(ValueError, match="outside the file"):
        central_directory(io.BytesIO(bytes(forged)), len(forged), 1 << 30)


def test_central_directory_finds_the_end_record_behind_a_comment(tmp_path):
    path = tmp_path / "c.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("a", b"a")
        zf.comment = b"PK\x05\x06 a fake end record inside the comment"
    with open(path, "rb") as f:
        assert list(member_names(central_directory(f, path.stat().st_size, 1 << 20))) == ["a"]


def test_member_names_refuses_a_malformed_directory():
    with pytest.raises(ValueError, match="malformed central directory"):
        list(member_names(b"PK\x01\x02 too short"))
    with pytest.raises(ValueError, match="malformed central directory"):
        list(member_names(b"XXXX" + b"\0" * 60))


def test_paths_installed_outside_site_packages():
    assert installed_outside("../../../bin/tool")
    assert installed_outside("/usr/bin/tool")
    assert installed_outside("..\\..\\Scripts\\tool.exe")
    assert not installed_outside("pkg/core.py")
    assert not installed_outside("pkg/..data/x")  # a name with dots is not a climb


def test_installer_written_files_are_the_installed_dist_info_s_own():
    dist = Distribution("pkg", "1.0", "/site/pkg-1.0.dist-info/", "/site")
    assert installer_written("pkg-1.0.dist-info/RECORD", dist)
    assert installer_written("pkg-1.0.dist-info/direct_url.json", dist)
    assert not installer_written("pkg-1.0.dist-info/METADATA", dist)
    assert not installer_written("other-1.0.dist-info/INSTALLER", dist)
    assert not installer_written("INSTALLER", dist)


def test_member_candidates():
    data = ("pkg-1.0.data",)
    assert member_candidates("pkg/core.py", "pkg-1.0.dist-info", "pkg-1.0.dist-info", data) == [
        "pkg/core.py", "pkg-1.0.data/purelib/pkg/core.py", "pkg-1.0.data/platlib/pkg/core.py"]
    # The installed dist-info's files come from the wheel's dist-info, whatever its spelling
    assert member_candidates("Pkg-1.0.dist-info/METADATA", "Pkg-1.0.dist-info", "pkg-1.0.dist-info", data) == [
        "pkg-1.0.dist-info/METADATA"]
    assert member_candidates("other-2.dist-info/METADATA", "pkg-1.0.dist-info", "pkg-1.0.dist-info", data) == [
        "other-2.dist-info/METADATA"]
    for path in ("", "/etc/passwd", "pkg/../../x", "pkg//x", "./pkg/x", "pkg\\x", "pkg/x\0"):
        assert member_candidates(path, "pkg-1.0.dist-info", "pkg-1.0.dist-info", data) == [], path


def test_layout_prefers_the_installed_dist_info():
    dist = Distribution("pkg", "1.0", "/site/pkg-1.0.dist-info", "/site")
    names = ["a-1.dist-info/RECORD", "pkg-1.0.dist-info/RECORD", "pkg-1.0.data/scripts/x", "pkg-1.0.data/purelib/y",
             "z.data"]
    assert layout(names, dist) == ("pkg-1.0.dist-info", ("pkg-1.0.data",))
    assert layout(["a-1.dist-info/RECORD", "b-1.dist-info/RECORD"], dist) == (None, ())  # which one: unknown
    assert layout(["Pkg-1.0.dist-info/RECORD"], dist) == ("Pkg-1.0.dist-info", ())


def test_a_wheel_gives_the_bytes_of_rows_that_match_and_only_those(tmp_path):
    dist = dist_in(tmp_path)
    init, core = dist.entries
    wheel = wheel_file(tmp_path / "house", "pkg", "1.0", FILES)
    copy = open_wheel(str(wheel), SourceKind.WHEELS, dist)
    try:
        assert isinstance(copy, ZipCopy) and copy.source is SourceKind.WHEELS and copy.path == str(wheel)
        assert copy.read(init) == b"" and copy.read(core) == b"X = 1\n"
        assert copy.has(core) and not copy.has(entry("pkg/gone.py", b""))
        assert copy.check(entry("pkg/gone.py", b"")) == "not in --wheels"
        assert copy.check(entry("pkg/core.py", "X = 2\n")) == "its content does not match RECORD's sha256"
        assert copy.check(entry("pkg/core.py", "X = 11\n")) == "its size differs from RECORD's"
        assert copy.wheel_tags() == {"py3-none-any"}
        metadata = "Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n\n"
        assert copy.read(entry("pkg-1.0.dist-info/METADATA", metadata)) == metadata.encode()
    finally:
        copy.close()


def test_a_member_that_does_not_match_its_own_record_is_refused(tmp_path):
    """A wheel whose member was changed after its RECORD was written: the installed row decides."""
    dist = dist_in(tmp_path)
    core = dist.entries[1]
    wheel = wheel_file(tmp_path / "house", "pkg", "1.0", FILES)
    tampered = tmp_path / "tampered" / wheel.name
    tampered.parent.mkdir()
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(tampered, "w") as dst:
        for info in src.infolist():
            dst.writestr(info, b"X = 2\n" if info.filename == "pkg/core.py" else src.read(info))
    copy = open_wheel(str(tampered), SourceKind.WHEELS, dist)
    try:
        assert copy.has(core)
        assert copy.read(core) is None
        assert copy.failures([core]) == [(core, "its content does not match RECORD's sha256")]
    finally:
        copy.close()


def test_unfaithful_checks_members_against_the_wheel_s_own_record(tmp_path):
    """What an installer writes is the member, under the wheel's own row: a member that differs from
    that row is unfaithful, whatever the installed RECORD says; a wheel without RECORD vouches for
    nothing; a row the wheel has no member for is not its to judge."""
    dist = dist_in(tmp_path)
    init, core = dist.entries
    wheel = wheel_file(tmp_path / "house", "pkg", "1.0", FILES)
    liar, bare = tmp_path / "liar" / wheel.name, tmp_path / "bare" / wheel.name
    liar.parent.mkdir()
    bare.parent.mkdir()
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(liar, "w") as lie, zipfile.ZipFile(bare, "w") as no_record:
        for info in src.infolist():
            data = src.read(info)
            lie.writestr(info.filename, b"X = 2\n" if info.filename == "pkg/core.py" else data)
            if not info.filename.endswith("/RECORD"):
                no_record.writestr(info.filename, data)
    for path, expected in ((wheel, {}),
                           (liar, {"pkg/core.py": "its member pkg/core.py does not match the wheel's own RECORD "
                                                  "(its content does not match RECORD's sha256)"}),
                           (bare, {"pkg/__init__.py": "the wheel has no readable RECORD",
                                   "pkg/core.py": "the wheel has no readable RECORD"})):
        copy = open_wheel(str(path), SourceKind.WHEELS, dist)
        try:
            assert copy.unfaithful([init, core, entry("pkg/gone.py", b"")]) == expected, path
        finally:
            copy.close()


def test_members_come_from_data_directories_and_keep_their_x_bit(tmp_path):
    dist = installed(tmp_path / "site", "pkg", "1.0", {"pkg/lib.py": "L\n"})
    wheel = wheel_file(tmp_path / "house", "pkg", "1.0", {}, data={"purelib": {"pkg/lib.py": "L\n"},
                                                                   "scripts": {"tool": "#!python\n"}})
    copy = open_wheel(str(wheel), SourceKind.WHEELS, dist)
    try:
        assert copy.read(dist.entries[0]) == b"L\n"  # pkg/lib.py from pkg-1.0.data/purelib/
        assert not copy.executable(dist.entries[0])
        assert copy.executable(entry("pkg-1.0.data/scripts/tool", "#!python\n"))
        assert not copy.executable(entry("pkg/none.py", ""))
    finally:
        copy.close()


def test_wheel_tags_come_from_the_wheel_s_own_wheel_file(tmp_path):
    dist = dist_in(tmp_path)
    wheel = wheel_file(tmp_path / "house", "pkg", "1.0", FILES, tag="cp311-cp311-linux_x86_64")
    renamed = wheel.with_name("pkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl")
    wheel.rename(renamed)
    copy = open_wheel(str(renamed), SourceKind.WHEELS, dist)
    try:
        assert copy.wheel_tags() == {"cp311-cp311-linux_x86_64"}  # what is inside, not the file name
    finally:
        copy.close()


def test_open_wheel_refuses_what_is_no_wheel(tmp_path):
    dist = dist_in(tmp_path)
    (tmp_path / "text.whl").write_text("not a zip")
    with pytest.raises(ValueError, match="not a zip file") as caught:
        open_wheel(str(tmp_path / "text.whl"), SourceKind.WHEELS, dist)
    assert wheel_members_error(caught.value) == "not a zip file (no end of central directory record)"
    os.mkfifo(tmp_path / "fifo.whl")
    with pytest.raises(OSError) as caught:
        open_wheel(str(tmp_path / "fifo.whl"), SourceKind.WHEELS, dist)  # returns at once: never blocks
    assert "not a regular file" in wheel_members_error(caught.value)
    wheel = wheel_file(tmp_path / "house", "pkg", "1.0", FILES)
    os.symlink(wheel, tmp_path / "link.whl")
    with pytest.raises(OSError):
        open_wheel(str(tmp_path / "link.whl"), SourceKind.DIRECT_URL, dist, follow=False)
    open_wheel(str(tmp_path / "link.whl"), SourceKind.WHEELS, dist).close()  # a wheelhouse's link is followed


def test_open_file_refuses_a_file_bigger_than_the_cap(tmp_path):
    wheel = wheel_file(tmp_path, "pkg", "1.0", FILES)
    with pytest.raises(OSError) as caught:
        open_file(str(wheel), max_size=10)
    assert caught.value.errno == errno.EFBIG and "more than the 10 a wheel may have here" in str(caught.value)
    f, size = open_file(str(wheel))
    with f:
        assert size == wheel.stat().st_size and f.read(2) == b"PK"


def test_wheel_members_error_words():
    assert wheel_members_error(zipfile.BadZipFile("Bad CRC-32")) == "not a readable zip file (Bad CRC-32)"
    assert wheel_members_error(OSError(13, "Permission denied")) == "Permission denied"
    assert wheel_members_error(RuntimeError()) == "RuntimeError"


def _counting_opens(monkeypatch) -> list[str]:
    opened: list[str] = []
    real = ZipCopy._open

    def counting(self, entry):
        opened.append(entry.path)
        return real(self, entry)

    monkeypatch.setattr(ZipCopy, "_open", counting)
    return opened


def test_a_member_of_one_wheel_file_is_decompressed_once_per_process(tmp_path, monkeypatch):
    """Two copies of one file (two sources naming it, or a hard link) share each member's verdict:
    a failure is not decompressed again, a success is streamed again only when its bytes are wanted."""
    wheel = wheel_file(tmp_path / "house", "pkg", "1.0", FILES)
    (tmp_path / "other").mkdir()
    os.link(wheel, tmp_path / "other" / wheel.name)
    dist = dist_in(tmp_path)
    good = entry("pkg/core.py", "X = 1\n")
    bad = entry("pkg/core.py", "X = 2\n")
    opened = _counting_opens(monkeypatch)
    first = open_wheel(str(wheel), SourceKind.DIRECT_URL, dist)
    second = open_wheel(str(tmp_path / "other" / wheel.name), SourceKind.WHEELS, dist)
    try:
        assert first.check(bad) == second.check(bad) == "its content does not match RECORD's sha256"
        assert first.check(good) is None and second.check(good) is None
        assert opened == ["pkg/core.py", "pkg/core.py"]
        out = io.BytesIO()
        assert second.check(good, out) is None and out.getvalue() == b"X = 1\n"
        assert len(opened) == 3
    finally:
        first.close()
        second.close()


def test_a_changed_wheel_file_is_checked_again(tmp_path, monkeypatch):
    dist = dist_in(tmp_path)
    bad = entry("pkg/core.py", "X = 2\n")
    wheel = wheel_file(tmp_path / "house", "pkg", "1.0", FILES)
    opened = _counting_opens(monkeypatch)
    copy = open_wheel(str(wheel), SourceKind.WHEELS, dist)
    try:
        assert copy.check(bad) is not None
    finally:
        copy.close()
    wheel.unlink()
    wheel_file(tmp_path / "house", "pkg", "1.0", {**FILES, "pkg/core.py": "X = 2\n"})
    copy = open_wheel(str(wheel), SourceKind.WHEELS, dist)
    try:
        assert copy.check(bad) is None
    finally:
        copy.close()
    assert len(opened) == 2


def test_verdicts_kept_are_bounded(tmp_path, monkeypatch):
    from driftscan.pristine import wheel as wheel_module

    monkeypatch.setattr(wheel_module, "VERDICTS_MAX", 2)
    files = {f"pkg/m{i}.py": f"V = {i}\n" for i in range(5)}
    wheel = wheel_file(tmp_path / "house", "pkg", "1.0", files)
    dist = installed(tmp_path / "site", "pkg", "1.0", files)
    copy = open_wheel(str(wheel), SourceKind.WHEELS, dist)
    try:
        for row in dist.entries:
            assert copy.check(row) is None
    finally:
        copy.close()
    assert len(wheel_module._verdicts) <= 2


def test_a_row_refused_for_a_caller_s_limit_is_not_remembered(tmp_path):
    wheel = wheel_file(tmp_path / "house", "pkg", "1.0", FILES)
    good = entry("pkg/core.py", "X = 1\n")
    copy = open_wheel(str(wheel), SourceKind.WHEELS, dist_in(tmp_path))
    try:
        assert copy.check(good, limit=2) == "6 bytes, more than the 2 asked for"
        assert copy.check(good) is None
    finally:
        copy.close()
