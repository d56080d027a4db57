"""driftscan.pristine.wheelhouse: ``--wheels DIR`` matched by file name, tags checked against WHEEL."""

from __future__ import annotations

from driftscan.pristine.base import Rejected, SourceKind
from driftscan.pristine.wheel import ZipCopy
from driftscan.pristine.wheelhouse import Wheelhouse
from fixtures.wheelfiles import installed, wheel_file

FILES = {"pkg/core.py": "X = 1\n"}


def names(paths):
    return sorted(p.rsplit("/", 1)[-1] for p in paths)


def test_matching_by_name_version_and_installed_tags(tmp_path):
    house = tmp_path / "house"
    for version in ("1.0", "1.0.0", "2.0"):
        wheel_file(house, "pkg", version, FILES)
    wheel_file(house, "pkg", "1.0", FILES, tag="cp311-cp311-win_amd64")
    wheel_file(house, "other", "1.0", FILES)
    (house / "pkg-1.0.tar.gz").write_text("an sdist")
    dist = installed(tmp_path / "site", "Pkg", "1.0", FILES)
    matched, set_aside = Wheelhouse([str(house)]).matching(dist)
    assert names(matched) == ["pkg-1.0-py3-none-any.whl", "pkg-1.0.0-py3-none-any.whl"]  # 1.0 and 1.0.0 agree
    assert names(set_aside) == ["pkg-1.0-cp311-cp311-win_amd64.whl"]


def test_without_installed_tags_every_wheel_of_the_release_matches(tmp_path):
    house = tmp_path / "house"
    wheel_file(house, "pkg", "1.0", FILES)
    wheel_file(house, "pkg", "1.0", FILES, tag="cp311-cp311-win_amd64")
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES, tag=None)  # a WHEEL file without Tag
    matched, set_aside = Wheelhouse([str(house)]).matching(dist)
    assert len(matched) == 2 and set_aside == []


def test_candidates_open_the_matching_wheels(tmp_path):
    house = tmp_path / "house"
    wheel = wheel_file(house, "pkg", "1.0", FILES)
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES)
    notes: list[str] = []
    [copy] = Wheelhouse([str(house)]).candidates(dist, notes)
    try:
        assert isinstance(copy, ZipCopy) and copy.source is SourceKind.WHEELS and copy.path == str(wheel)
        assert copy.read(dist.entries[0]) == b"X = 1\n"
    finally:
        copy.close()
    assert notes == []


def test_a_corrupt_wheel_is_a_rejection_with_its_reason(tmp_path):
    house = tmp_path / "house"
    house.mkdir()
    (house / "pkg-1.0-py3-none-any.whl").write_bytes(b"PK\x03\x04 truncated")
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES)
    [rejected] = Wheelhouse([str(house)]).candidates(dist, [])
    assert rejected == Rejected(SourceKind.WHEELS, str(house / "pkg-1.0-py3-none-any.whl"),
                                "not a zip file (no end of central directory record)")


def test_notes_say_why_nothing_was_tried(tmp_path):
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES)
    notes: list[str] = []
    assert list(Wheelhouse([]).candidates(dist, notes)) == [] and notes == ["--wheels (not given)"]
    house = tmp_path / "house"
    wheel_file(house, "pkg", "2.0", FILES)
    wheel_file(house, "pkg", "1.0", FILES, tag="cp311-cp311-win_amd64")
    notes = []
    assert list(Wheelhouse([str(house)]).candidates(dist, notes)) == []
    assert notes == [f"--wheels (no pkg 1.0 wheel in {house} with the installed tags (set aside for their tags: "
                     "pkg-1.0-cp311-cp311-win_amd64.whl))"]


def test_a_renamed_platform_tag_is_matched_by_the_wheel_file_inside(tmp_path):
    """auditwheel renames linux_x86_64 to manylinux_* in the file name only."""
    house = tmp_path / "house"
    built = wheel_file(house, "pkg", "1.0", FILES, tag="cp311-cp311-linux_x86_64")
    renamed = built.rename(house / "pkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl")
    foreign = wheel_file(house, "pkg", "1.0", FILES, tag="cp311-cp311-win_amd64")
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES, tag="cp311-cp311-linux_x86_64")
    house_ = Wheelhouse([str(house)])
    assert names(house_.matching(dist)[1]) == sorted([renamed.name, foreign.name])
    [copy] = house_.candidates(dist, [])
    try:
        assert copy.path == str(renamed)
    finally:
        copy.close()


def test_an_unreadable_directory_is_a_problem_not_a_crash(tmp_path):
    house = Wheelhouse([str(tmp_path / "missing"), str(tmp_path / "file")])
    (tmp_path / "file").write_text("x")
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES)
    assert house.matching(dist) == ([], [])
    assert len(house.problems) == 2 and house.problems[0].startswith(f"cannot list {tmp_path / 'missing'}: ")
