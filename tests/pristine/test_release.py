"""driftscan.pristine.release: the files of a wheel of any NAME==VERSION, each verified against the
wheel's own RECORD, from --wheels, uv's cache and pip's cache (real wheels built here; the real
installers' caches and --fetch are in test_release_installers.py)."""

from __future__ import annotations

import csv
import hashlib
import io
import os
import shutil
import textwrap
import zipfile
from pathlib import Path

import pytest

from driftscan.core.errors import DriftscanError
from driftscan.pristine.base import PristineOptions, SourceKind
from driftscan.pristine.release import ReleaseError, ReleaseWheel, find_release, installed_path
from fixtures.bounded import python_bounded
from fixtures.wheelfiles import installed, wheel_file

V1 = {"toy_pkg/__init__.py": "VERSION = 1\n", "toy_pkg/core.py": "def f():\n    return 1\n"}
V2 = {"toy_pkg/__init__.py": "VERSION = 2\n", "toy_pkg/core.py": "def f():\n    return 2\n",
      "toy_pkg/new.py": "NEW = True\n"}
DATA = {"purelib": {"toy_pkg/pure.py": "P = 1\n"}, "platlib": {"toy_pkg/plat.py": "Q = 1\n"},
        "scripts": {"toy": "#!python\n"}, "headers": {"toy.h": "int x;\n"}}


def options(tmp_path: Path, *wheels: Path, **more) -> PristineOptions:
    """Only the sources a test names: no uv or pip cache of the machine's."""
    more.setdefault("uv_cache", str(tmp_path / "no-uv"))
    more.setdefault("pip_cache", str(tmp_path / "no-pip"))
    return PristineOptions(wheels=tuple(map(str, wheels)), **more)


def record_hash(content: str | bytes) -> str:
    import base64

    data = content.encode() if isinstance(content, str) else content
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def rewrite(wheel: Path, change) -> Path:
    """The wheel rewritten member by member: ``change(name, data)`` gives the new (name, data) or
    None to drop the member; the RECORD is kept as it is unless ``change`` rewrites it."""
    with zipfile.ZipFile(wheel) as zf:
        members = [(info.filename, zf.read(info)) for info in zf.infolist()]
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members:
            changed = change(name, data)
            if changed is not None:
                zf.writestr(changed[0], changed[1])
    return wheel


def record_rows(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode())))


def render_rows(rows: list[list[str]]) -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().encode()


@pytest.fixture
def house(tmp_path: Path) -> Path:
    house = tmp_path / "house"
    wheel_file(house, "toy-pkg", "1.0", V1)
    wheel_file(house, "toy-pkg", "2.0", V2, data=DATA)
    return house


def test_a_release_that_is_not_installed_gives_its_files_and_bytes(tmp_path, house):
    found, notes = find_release("toy-pkg", "2.0", options(tmp_path, house))
    assert isinstance(found, ReleaseWheel), notes
    with found:
        assert (found.name, found.version, found.source) == ("toy-pkg", "2.0", SourceKind.WHEELS)
        assert found.where == str(house / "toy_pkg-2.0-py3-none-any.whl")
        # purelib and platlib as an installer maps them; scripts, headers and the dist-info left out
        assert found.files() == ["toy_pkg/__init__.py", "toy_pkg/core.py", "toy_pkg/new.py",
                                 "toy_pkg/plat.py", "toy_pkg/pure.py"]
        for rel, content in {**V2, "toy_pkg/pure.py": "P = 1\n", "toy_pkg/plat.py": "Q = 1\n"}.items():
            assert found.read(rel) == content.encode()
            assert found.record_hash(rel) == record_hash(content)
        assert found.read("toy_pkg/gone.py") is None and found.record_hash("toy_pkg/gone.py") is None
        assert found.read("toy") is None  # a script is not a site-packages file


def test_versions_and_names_are_compared_as_pep_440_and_503_say(tmp_path, house):
    for name, version in (("toy-pkg", "2.0.0"), ("Toy_Pkg", "2.0"), ("TOY.pkg", "v2.0")):
        found, notes = find_release(name, version, options(tmp_path, house))
        assert found is not None, (name, version, notes)
        with found:
            assert (found.name, found.version) == ("toy-pkg", "2.0")  # the version as the file names it
            assert found.read("toy_pkg/__init__.py") == b"VERSION = 2\n"
    found, _ = find_release("toy-pkg", "1", options(tmp_path, house))
    with found:
        assert found.version == "1.0" and found.files() == sorted(V1)


@pytest.mark.parametrize("name, version, bad", [
    ("toy pkg", "2.0", "toy pkg"), ("../toy", "2.0", "../toy"), ("", "2.0", ""),
    ("toy", "2.0; rm", "2.0; rm"), ("toy", "not a version", "not a version"), ("toy", "", "")])
def test_a_name_or_version_that_is_none_is_an_error(tmp_path, house, name, version, bad):
    with pytest.raises(ReleaseError) as raised:
        find_release(name, version, options(tmp_path, house))
    assert isinstance(raised.value, DriftscanError) and repr(bad) in str(raised.value)


def test_a_wheel_whose_tags_do_not_fit_the_installed_ones_is_not_taken(tmp_path):
    house = tmp_path / "house"
    wheel_file(house, "toy-pkg", "2.0", V2, tag="cp311-cp311-win_amd64")
    like = installed(tmp_path / "site", "toy-pkg", "1.0", V1, tag="cp311-cp311-linux_x86_64")
    found, notes = find_release("toy-pkg", "2.0", options(tmp_path, house), like=like)
    assert found is None
    assert any(n.startswith("--wheels (") and "set aside for their tags: toy_pkg-2.0-cp311-cp311-win_amd64.whl" in n
               for n in notes), notes
    assert "--platform linux_x86_64" in notes[-1]  # the line asks for the installed one's tags
    fitting = wheel_file(house, "toy-pkg", "2.0", V2, tag="cp311-cp311-linux_x86_64")
    found, notes = find_release("toy-pkg", "2.0", options(tmp_path, house), like=like)
    assert found is not None, notes
    with found:
        assert found.where == str(fitting)
    # Without an installed distribution, any tags do.
    fitting.unlink()
    found, notes = find_release("toy-pkg", "2.0", options(tmp_path, house))
    assert found is not None and found.where.endswith("win_amd64.whl"), notes
    found.close()


def test_a_member_that_does_not_match_its_row_is_an_error_naming_wheel_and_file(tmp_path, house):
    wheel = house / "toy_pkg-2.0-py3-none-any.whl"
    rewrite(wheel, lambda name, data: (name, b"def f():\n    return 666\n" if name == "toy_pkg/core.py" else data))
    found, notes = find_release("toy-pkg", "2.0", options(tmp_path, house))
    assert found is not None, notes
    with found:
        assert found.read("toy_pkg/new.py") == b"NEW = True\n"  # the other files still verify
        with pytest.raises(ReleaseError) as raised:
            found.read("toy_pkg/core.py")
    assert "toy_pkg/core.py" in str(raised.value) and str(wheel) in str(raised.value)
    assert "RECORD" in str(raised.value)


def test_a_member_its_own_record_does_not_list_is_an_error(tmp_path, house):
    wheel = house / "toy_pkg-2.0-py3-none-any.whl"

    def unlist(name, data):
        if name.endswith(".dist-info/RECORD"):
            rows = [r for r in record_rows(data) if r[0] != "toy_pkg/new.py"]
            rows = [[r[0], "", r[2]] if r[0] == "toy_pkg/core.py" else r for r in rows]
            return name, render_rows(rows)
        return name, data

    rewrite(wheel, unlist)
    found, _ = find_release("toy-pkg", "2.0", options(tmp_path, house))
    with found:
        assert "toy_pkg/new.py" not in found.files()
        with pytest.raises(ReleaseError, match=r"toy_pkg/new\.py.*does not list it"):
            found.read("toy_pkg/new.py")
        assert found.record_hash("toy_pkg/core.py") is None
        with pytest.raises(ReleaseError, match=r"toy_pkg/core\.py.*no hash"):
            found.read("toy_pkg/core.py")


def test_a_listed_file_missing_from_the_wheel_is_an_error(tmp_path, house):
    wheel = house / "toy_pkg-2.0-py3-none-any.whl"
    rewrite(wheel, lambda name, data: None if name == "toy_pkg/new.py" else (name, data))
    found, _ = find_release("toy-pkg", "2.0", options(tmp_path, house))
    with found:
        assert "toy_pkg/new.py" in found.files()
        with pytest.raises(ReleaseError, match="no such file"):
            found.read("toy_pkg/new.py")


def test_a_file_larger_than_the_limit_is_an_error_read_no_further(tmp_path):
    house = tmp_path / "house"
    big = b"\0" * (4 << 20)
    wheel_file(house, "toy-pkg", "2.0", {"toy_pkg/big.bin": big, "toy_pkg/small.py": "S = 1\n"})
    found, _ = find_release("toy-pkg", "2.0", options(tmp_path, house))
    with found:
        with pytest.raises(ReleaseError, match="more than"):
            found.read("toy_pkg/big.bin", limit=1 << 20)
        assert found.read("toy_pkg/big.bin", limit=8 << 20) == big
        assert found.read("toy_pkg/small.py", limit=6) == b"S = 1\n"


def bomb_wheel(house: Path, size: int) -> Path:
    """A wheel whose member ``toy_pkg/bomb.bin`` inflates to ``size`` zero bytes from a few hundred
    KB, its own RECORD row giving the right hash and no size (nothing but the limit bounds it)."""
    wheel = wheel_file(house, "toy-pkg", "2.0", {"toy_pkg/bomb.bin": b"", "toy_pkg/ok.py": "OK = 1\n"})
    digest = hashlib.sha256()
    chunk = b"\0" * (1 << 20)
    for _ in range(size >> 20):
        digest.update(chunk)
    import base64
    row = "sha256=" + base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()
    with zipfile.ZipFile(wheel) as zf:
        members = [(info.filename, zf.read(info)) for info in zf.infolist() if info.filename != "toy_pkg/bomb.bin"]
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        bomb = zipfile.ZipInfo("toy_pkg/bomb.bin")
        bomb.compress_type = zipfile.ZIP_DEFLATED
        with zf.open(bomb, "w", force_zip64=True) as f:
            for _ in range(size >> 20):
                f.write(chunk)
        for name, data in members:
            if name.endswith(".dist-info/RECORD"):
                rows = [[r[0], row, ""] if r[0] == "toy_pkg/bomb.bin" else r for r in record_rows(data)]
                data = render_rows(rows)
            zf.writestr(zipfile.ZipInfo(name), data, zipfile.ZIP_DEFLATED)
    return wheel


def test_a_zip_bomb_member_is_refused_within_bounded_memory(tmp_path):
    house = tmp_path / "house"
    wheel = bomb_wheel(house, 512 << 20)
    assert wheel.stat().st_size < 4 << 20
    code = textwrap.dedent(f"""
        from driftscan.pristine.base import PristineOptions
        from driftscan.pristine.release import ReleaseError, find_release
        found, notes = find_release("toy-pkg", "2.0", PristineOptions(
            wheels=({str(house)!r},), uv_cache={str(tmp_path / "none")!r}, pip_cache={str(tmp_path / "none")!r}))
        with found:
            assert found.read("toy_pkg/ok.py") == b"OK = 1\\n"
            try:
                found.read("toy_pkg/bomb.bin", limit=8 << 20)
            except ReleaseError as exc:
                print("refused:", exc)
    """)
    # 512 MB inflated would not fit in 96 MB; the limit (8 MB) plus a chunk does.
    proc = python_bounded(code, memory_mb=96, seconds=120)
    assert proc.returncode == 0, proc.stderr
    assert "refused: toy_pkg/bomb.bin of toy-pkg 2.0" in proc.stdout and "more than" in proc.stdout, proc.stdout


@pytest.mark.parametrize("hostile", ["../../etc/x", "/abs/x", "toy_pkg/../../x", "toy_pkg/a\0b", "C:\\x",
                                     "toy_pkg/./x", "other-1.0.dist-info/x/RECORD", "toy_pkg-2.0.data/purelib/../../x",
                                     "toy_pkg-2.0.data/x"])
def test_hostile_record_rows_never_become_paths(tmp_path, house, hostile):
    wheel = house / "toy_pkg-2.0-py3-none-any.whl"

    def add_row(name, data):
        if name.endswith(".dist-info/RECORD"):
            return name, render_rows([*record_rows(data), [hostile, record_hash("evil\n"), "5"]])
        return name, data

    rewrite(wheel, add_row)
    with zipfile.ZipFile(wheel, "a") as zf:
        zf.writestr(hostile, "evil\n")  # the member itself, too
    found, notes = find_release("toy-pkg", "2.0", options(tmp_path, house))
    assert found is not None, notes
    with found:
        files = found.files()
        assert all(not f.startswith("/") and ".." not in f.split("/") and "\0" not in f and "\\" not in f for f in files)
        assert "x" not in files and not any(f.endswith("/x") and not f.startswith("toy_pkg/") for f in files)
        shown = repr(hostile).replace("\\x00", "\\\\0")  # as the RECORD reader spells a NUL
        assert any(shown in n and "skipped" in n for n in notes), notes
        assert found.read(hostile) is None
        assert found.read("toy_pkg/core.py") == b"def f():\n    return 2\n"


@pytest.mark.parametrize("member, expected", [
    ("pkg/a.py", ("pkg/a.py", None)),
    ("pkg-1.0.data/purelib/pkg/b.py", ("pkg/b.py", None)),
    ("pkg-1.0.data/platlib/pkg/c.so", ("pkg/c.so", None)),
    ("pkg-1.0.data/scripts/tool", (None, None)),
    ("pkg-1.0.data/headers/x.h", (None, None)),
    ("pkg-1.0.dist-info/METADATA", (None, None)),
])
def test_installed_path_maps_as_an_installer_does(member, expected):
    assert installed_path(member, "pkg-1.0.dist-info") == expected


def test_nothing_found_says_what_was_tried_and_ends_with_the_download_line(tmp_path, house):
    found, notes = find_release("toy-pkg", "3.0", options(tmp_path, house))
    assert found is None
    assert notes[0] == f"--wheels (no toy-pkg 3.0 wheel in {house})"
    assert f"uv's cache ({tmp_path / 'no-uv'}: no such directory)" in notes
    assert f"pip's cache ({tmp_path / 'no-pip'}: no such directory)" in notes
    assert "--fetch (not asked for)" in notes
    assert notes[-1].startswith("pip download --no-deps --only-binary :all: toy-pkg==3.0 -d ")
    assert notes[-1].endswith(f", then --wheels {notes[-1].split(' -d ')[1].split(',')[0]}")
    found, notes = find_release("toy-pkg", "2.0", options(tmp_path))
    assert found is None and notes[0] == "--wheels (not given)"


def test_a_corrupt_wheel_is_a_note_and_the_next_source_is_tried(tmp_path, house):
    (house / "toy_pkg-2.0-py3-none-any.whl").write_bytes(b"not a zip at all")
    cache = tmp_path / "uv"
    archive = cache / "archive-v0" / "abc"
    with zipfile.ZipFile(wheel_file(tmp_path / "other", "toy-pkg", "2.0", V2)) as zf:
        zf.extractall(archive)
    found, notes = find_release("toy-pkg", "2.0", options(tmp_path, house, uv_cache=str(cache)))
    assert found is not None, notes
    with found:
        assert found.source is SourceKind.UV_CACHE and found.where == str(archive)
        assert found.read("toy_pkg/new.py") == b"NEW = True\n"
    assert any(str(house / "toy_pkg-2.0-py3-none-any.whl") in n and "rejected" in n for n in notes), notes


def test_a_uv_archive_is_verified_against_its_own_record(tmp_path):
    cache = tmp_path / "uv"
    archive = cache / "archive-v0" / "abc"
    with zipfile.ZipFile(wheel_file(tmp_path / "built", "toy-pkg", "2.0", V2, data=DATA)) as zf:
        zf.extractall(archive)
    # uv hard-links archive files into venvs: an edit in a venv is an edit here
    (archive / "toy_pkg" / "core.py").write_text("def f():\n    return 'edited'\n")
    (archive / "toy_pkg" / "link.py").symlink_to("/etc/passwd")
    found, notes = find_release("Toy-Pkg", "2.0", options(tmp_path, uv_cache=str(cache)))
    assert found is not None, notes
    with found:
        assert found.source is SourceKind.UV_CACHE and found.version == "2.0"
        assert "toy_pkg/pure.py" in found.files() and "toy_pkg/link.py" not in found.files()
        assert found.read("toy_pkg/pure.py") == b"P = 1\n"
        with pytest.raises(ReleaseError, match=r"toy_pkg/core\.py of toy-pkg 2\.0"):
            found.read("toy_pkg/core.py")
        assert found.read("toy_pkg/link.py") is None  # a symlink is never followed


def test_a_uv_archive_of_other_tags_is_not_taken(tmp_path):
    cache = tmp_path / "uv"
    with zipfile.ZipFile(wheel_file(tmp_path / "built", "toy-pkg", "2.0", V2, tag="cp311-cp311-win_amd64")) as zf:
        zf.extractall(cache / "archive-v0" / "abc")
    like = installed(tmp_path / "site", "toy-pkg", "1.0", V1, tag="cp311-cp311-linux_x86_64")
    found, notes = find_release("toy-pkg", "2.0", options(tmp_path, uv_cache=str(cache)), like=like)
    assert found is None
    assert any("do not fit the installed cp311-cp311-linux_x86_64" in n for n in notes), notes


def test_a_wheel_in_pips_http_cache_is_found_by_its_contents(tmp_path):
    cache = tmp_path / "pip"
    body = cache / "http-v2" / "a" / "b" / "c" / "d" / "e" / ("0" * 56 + ".body")
    body.parent.mkdir(parents=True)
    shutil.copyfile(wheel_file(tmp_path / "built", "toy-pkg", "2.0", V2), body)
    found, notes = find_release("toy_pkg", "2.0", options(tmp_path, pip_cache=str(cache)))
    assert found is not None, notes
    with found:
        assert found.source is SourceKind.PIP_CACHE and found.where == str(body) and found.version == "2.0"
        assert found.read("toy_pkg/new.py") == b"NEW = True\n"


def _installed_release(tmp_path: Path, house: Path | None, files: dict[str, str] = V2):
    from driftscan.pristine.release import InstalledRelease

    dist = installed(tmp_path / "site", "toy-pkg", "2.0", files)
    wheels = (house,) if house is not None else ()
    return dist, InstalledRelease(dist, lambda: find_release("toy-pkg", "2.0", options(tmp_path, *wheels), like=dist))


def test_the_installed_version_is_its_own_release_without_a_wheel(tmp_path):
    dist, release = _installed_release(tmp_path, None)
    with release:
        assert release.files() == sorted(V2) and release.record_hash("toy_pkg/core.py") == record_hash(V2["toy_pkg/core.py"])
        assert release.read("toy_pkg/core.py") == V2["toy_pkg/core.py"].encode()
        assert release.read("toy_pkg/absent.py") is None and release.where.startswith("the installed toy-pkg 2.0")


def test_an_installed_file_edited_since_is_read_from_the_wheel(tmp_path, house):
    dist, release = _installed_release(tmp_path, house)
    (tmp_path / "site" / "toy_pkg/core.py").write_text("def f():\n    return 'edited'\n")
    with release:
        assert release.read("toy_pkg/core.py") == V2["toy_pkg/core.py"].encode()
        assert release.read("toy_pkg/new.py") == V2["toy_pkg/new.py"].encode()  # not edited: read in place
        assert ", edited files from" in release.where and str(house) in release.where


def test_an_edited_file_with_no_wheel_or_a_symlink_is_refused(tmp_path):
    dist, release = _installed_release(tmp_path, None)
    core = tmp_path / "site" / "toy_pkg/core.py"
    (tmp_path / "elsewhere.py").write_text(V2["toy_pkg/core.py"])
    core.unlink()
    core.symlink_to(tmp_path / "elsewhere.py")  # the right bytes, through a symlink: not followed
    with release, pytest.raises(ReleaseError, match="edited since the install"):
        release.read("toy_pkg/core.py")


def test_a_wheel_that_disagrees_with_the_installed_record_is_refused(tmp_path):
    other = tmp_path / "other-house"
    wheel_file(other, "toy-pkg", "2.0", {**V2, "toy_pkg/core.py": "def f():\n    return 'other'\n"})
    dist, release = _installed_release(tmp_path, other)
    (tmp_path / "site" / "toy_pkg/core.py").write_text("edited\n")
    with release, pytest.raises(ReleaseError, match="lists it with"):
        release.read("toy_pkg/core.py")
