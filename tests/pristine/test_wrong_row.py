"""A wheel whose own RECORD row is wrong about one of its members is still that file's original,
but only on the evidence: the installed bytes are the member's, the wheel's row is the installed
row, every other needed row verifies, and the wheel is of the installed release. Real wheels
written here (``fixtures.wheelfiles``), the real search."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

from driftscan.pristine import PristineOptions, SourceKind, find_pristine
from fixtures.wheelfiles import WRONG_DIGEST, installed_wrong_row, wheel_file, wheel_with_wrong_row

FILES = {"pkg/__init__.py": "", "pkg/core.py": "X = 1\n", "pkg/lib.so": b"\x7fELF shipped"}
WRONG = "pkg/lib.so"


def options(tmp_path, house) -> PristineOptions:
    for name in ("no-uv", "no-pip"):
        (tmp_path / name).mkdir(exist_ok=True)
    return PristineOptions(wheels=(str(house),), uv_cache=str(tmp_path / "no-uv"), pip_cache=str(tmp_path / "no-pip"))


def digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def tmp_site(dist) -> Path:
    return Path(dist.site_packages)


def content_of(dist, path: str) -> dict[tuple[str, str], tuple[str, int]]:
    """What the audit hands the search: the installed file's digest and size."""
    data = (tmp_site(dist) / path).read_bytes()
    return {(dist.metadata_dir, path): (digest(data), len(data))}


def rows_of(dist, *paths):
    return [e for e in dist.entries if e.path in paths]


def test_the_wheel_that_ships_the_installed_bytes_under_a_wrong_row_is_their_original(tmp_path):
    house = tmp_path / "house"
    wheel = wheel_with_wrong_row(house, "pkg", "1.0", FILES, WRONG)
    dist = installed_wrong_row(tmp_path / "site", "pkg", "1.0", FILES, WRONG)
    rows = rows_of(dist, WRONG, "pkg/core.py")
    with find_pristine([(dist, rows)], options(tmp_path, house), installed=content_of(dist, WRONG)) as found:
        lookup = found.get(dist)
        assert lookup.copy is not None and lookup.copy.source is SourceKind.WHEELS
        (wrong,) = lookup.wrong_rows
        assert (wrong.path, wrong.member, wrong.wheel, wrong.row_hash) == (WRONG, WRONG, wheel.name, WRONG_DIGEST)
        assert lookup.verified == {"pkg/core.py"}
        assert lookup.original(next(e for e in rows if e.path == WRONG)) is None  # never read as verified


def test_without_the_installed_content_the_wheel_is_rejected_as_today(tmp_path):
    house = tmp_path / "house"
    wheel_with_wrong_row(house, "pkg", "1.0", FILES, WRONG)
    dist = installed_wrong_row(tmp_path / "site", "pkg", "1.0", FILES, WRONG)
    with find_pristine([(dist, rows_of(dist, WRONG))], options(tmp_path, house)) as found:
        lookup = found.get(dist)
        assert lookup.copy is None and lookup.wrong_rows == ()
        assert lookup.rejected[0].reason.startswith(f"{WRONG}: its content does not match RECORD's sha256")


def test_an_edited_file_is_not_the_wheels_bytes(tmp_path):
    house = tmp_path / "house"
    wheel_with_wrong_row(house, "pkg", "1.0", FILES, WRONG)
    dist = installed_wrong_row(tmp_path / "site", "pkg", "1.0", FILES, WRONG)
    (tmp_site(dist) / WRONG).write_bytes(b"\x7fELF patched!")
    with find_pristine([(dist, rows_of(dist, WRONG))], options(tmp_path, house),
                       installed=content_of(dist, WRONG)) as found:
        lookup = found.get(dist)
        assert lookup.copy is None and lookup.wrong_rows == ()


def test_a_wheel_whose_row_differs_from_the_installed_row_is_not_the_one_installed_from(tmp_path):
    # The wheel at hand has a correct row: the installed (wrong) row did not come from it.
    house = tmp_path / "house"
    wheel_file(house, "pkg", "1.0", FILES)
    dist = installed_wrong_row(tmp_path / "site", "pkg", "1.0", FILES, WRONG)
    with find_pristine([(dist, rows_of(dist, WRONG))], options(tmp_path, house),
                       installed=content_of(dist, WRONG)) as found:
        assert found.get(dist).wrong_rows == ()


def test_another_failing_row_makes_the_wheel_untrusted(tmp_path):
    # core.py's member differs from the installed row too, and is no wrong row of the wheel's:
    # this wheel is not what was installed, so it vouches for nothing.
    house = tmp_path / "house"
    wheel_with_wrong_row(house, "pkg", "1.0", {**FILES, "pkg/core.py": "X = 2\n"}, WRONG)
    dist = installed_wrong_row(tmp_path / "site", "pkg", "1.0", FILES, WRONG)
    with find_pristine([(dist, rows_of(dist, WRONG, "pkg/core.py"))], options(tmp_path, house),
                       installed=content_of(dist, WRONG)) as found:
        lookup = found.get(dist)
        assert lookup.wrong_rows == ()
        assert lookup.verified == frozenset()


def test_a_wheel_of_another_release_renamed_into_place_is_refused(tmp_path):
    # The file name says 1.0, the dist-info inside says 2.0.
    house = tmp_path / "house"
    made = wheel_with_wrong_row(tmp_path / "other", "pkg", "2.0", FILES, WRONG)
    house.mkdir()
    (house / "pkg-1.0-py3-none-any.whl").write_bytes(made.read_bytes())
    dist = installed_wrong_row(tmp_path / "site", "pkg", "1.0", FILES, WRONG)
    with find_pristine([(dist, rows_of(dist, WRONG))], options(tmp_path, house),
                       installed=content_of(dist, WRONG)) as found:
        assert found.get(dist).wrong_rows == ()


def test_a_wrong_row_for_the_wheels_own_metadata_is_found_too(tmp_path):
    # torch 1.12.1's METADATA row did not match its METADATA (pypa/installer refuses the wheel).
    metadata = "pkg-1.0.dist-info/METADATA"
    files = {**FILES, metadata: "Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n\n"}  # as build_wheel writes it
    house = tmp_path / "house"
    wheel_with_wrong_row(house, "pkg", "1.0", files, metadata)
    dist = installed_wrong_row(tmp_path / "site", "pkg", "1.0", files, metadata)
    with find_pristine([(dist, rows_of(dist, metadata))], options(tmp_path, house),
                       installed=content_of(dist, metadata)) as found:
        (wrong,) = found.get(dist).wrong_rows
        assert (wrong.path, wrong.member) == (metadata, metadata)
