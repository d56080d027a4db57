"""The installed RECORD compared with a wheel's own RECORD: what maps where, what is never
reported, and what each changed file holds now."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from driftscan.provenance.model import FileState, RowChangeKind
from driftscan.provenance.rows import compare_rows
from driftscan.provenance.rows import compare
from fixtures.wheelfiles import entry, installed

FILES = {"pkg/__init__.py": "", "pkg/mod.py": "X = 1\n"}


def wheel_record(files: dict[str, str], info: str = "pkg-1.0.dist-info") -> dict:
    rows = {path: entry(path, content) for path, content in files.items()}
    rows[f"{info}/RECORD"] = entry(f"{info}/RECORD", "")._replace(hash=None, size=None)
    return rows


def test_identical_records_give_no_rows(tmp_path):
    dist = installed(tmp_path, "pkg", "1.0", FILES)
    result = compare(dist, wheel_record(FILES))
    assert result.rows == () and result.compared == 2


def test_data_schemes_map_to_their_installed_places(tmp_path):
    site = tmp_path / "lib/python3.11/site-packages"
    dist = installed(site, "pkg", "1.0", {"pkg/mod.py": "X = 1\n", "../../../share/pkg/x.txt": "data\n",
                                          "../../../bin/tool": "#!/venv/bin/python\n"})
    record = wheel_record({"pkg-1.0.data/purelib/pkg/mod.py": "X = 1\n", "pkg-1.0.data/data/share/pkg/x.txt": "old\n",
                           "pkg-1.0.data/scripts/tool": "#!python\n", "pkg-1.0.data/headers/pkg.h": "int x;\n"})
    rows = compare_rows(dist, record)
    # The data file's row differs; the rewritten script and the header are not compared.
    assert [(r.path, r.kind, r.file_state) for r in rows] == \
        [("../../../share/pkg/x.txt", RowChangeKind.CHANGED, FileState.MATCHES_INSTALLED_ROW)]


def test_installer_rows_are_never_reported(tmp_path):
    dist = installed(tmp_path, "pkg", "1.0", {**FILES, "pkg/__pycache__/mod.cpython-311.pyc": b"\x00pyc",
                                              "pkg-1.0.dist-info/INSTALLER": "pip\n",
                                              "pkg-1.0.dist-info/REQUESTED": "",
                                              "pkg-1.0.dist-info/direct_url.json": "{}",
                                              "pkg-1.0.dist-info/uv_cache.json": "{}"})
    assert compare_rows(dist, wheel_record(FILES)) == ()


def test_a_shipped_pyc_listed_twice_is_compared_by_its_hashed_row(tmp_path):
    files = {**FILES, "pkg/__pycache__/mod.cpython-311.pyc": b"\x00shipped"}
    dist = installed(tmp_path, "pkg", "1.0", files)
    pyc = next(e for e in dist.entries if e.path.endswith(".pyc"))
    twice = replace(dist, entries=[pyc._replace(hash=None, size=None), *dist.entries])  # pip's two rows (FACTS §6a)
    assert compare(twice, wheel_record(files)).rows == ()
    edited = replace(dist, entries=[pyc._replace(hash=entry(pyc.path, b"other").hash)
                                    if e.path == pyc.path else e for e in dist.entries])
    [row] = compare_rows(edited, wheel_record(files))
    assert (row.path, row.kind, row.file_state) == (pyc.path, RowChangeKind.CHANGED, FileState.MATCHES_WHEEL)


def test_the_wheels_dist_info_is_compared_as_the_installed_one(tmp_path):
    dist = installed(tmp_path, "pkg", "1.0", {**FILES, "pkg-1.0.dist-info/METADATA": "Name: pkg\n"})
    [row] = compare_rows(dist, wheel_record({**FILES, "pkg-1.0.dist-info/METADATA": "Name: other\n"}))
    assert (row.path, row.kind) == ("pkg-1.0.dist-info/METADATA", RowChangeKind.CHANGED)


def test_what_the_changed_file_holds_now(tmp_path):
    dist = installed(tmp_path, "pkg", "1.0", {**FILES, "pkg/mod.py": "X = 2\n"})  # the row says X = 2
    record = wheel_record(FILES)
    [row] = compare_rows(dist, record)
    assert row.kind is RowChangeKind.CHANGED and row.file_state is FileState.MATCHES_INSTALLED_ROW
    (tmp_path / "pkg/mod.py").write_text("X = 1\n")
    assert compare_rows(dist, record)[0].file_state is FileState.MATCHES_WHEEL
    (tmp_path / "pkg/mod.py").write_text("X = 3\n")
    assert compare_rows(dist, record)[0].file_state is FileState.NEITHER
    (tmp_path / "pkg/mod.py").write_text("X = 1\n" * 1000)  # bigger than either row: not read through
    assert compare_rows(dist, record)[0].file_state is FileState.NEITHER
    (tmp_path / "pkg/mod.py").unlink()
    os.mkfifo(tmp_path / "pkg/mod.py")  # never opened for reading as a file
    assert compare_rows(dist, record)[0].file_state is FileState.NOT_CHECKED
    (tmp_path / "pkg/mod.py").unlink()
    assert compare_rows(dist, record)[0].file_state is FileState.MISSING


def test_a_size_alone_that_differs_is_a_change(tmp_path):
    dist = installed(tmp_path, "pkg", "1.0", FILES)
    record = wheel_record(FILES)
    record["pkg/mod.py"] = record["pkg/mod.py"]._replace(size=99)
    [row] = compare_rows(dist, record)
    assert (row.path, row.kind, row.installed_hash == row.wheel_hash) == ("pkg/mod.py", RowChangeKind.CHANGED, True)


def test_hostile_member_names_are_not_compared(tmp_path):
    dist = installed(tmp_path, "pkg", "1.0", FILES)
    record = {**wheel_record(FILES), **{name: entry(name, "x") for name in
                                        ("../escape.py", "/abs.py", "pkg/../x.py", "pkg\\win.py", "pkg//x.py")}}
    assert compare_rows(dist, record) == ()


def test_added_rows_need_a_hash_and_removed_rows_are_named(tmp_path: Path):
    dist = installed(tmp_path, "pkg", "1.0", {**FILES, "pkg/extra.py": "import os\n"})
    record = wheel_record({**FILES, "pkg/gone.py": "Y = 1\n"})
    rows = {r.path: r for r in compare_rows(dist, record)}
    assert rows["pkg/extra.py"].kind is RowChangeKind.ADDED and rows["pkg/extra.py"].wheel_hash is None
    assert rows["pkg/gone.py"].kind is RowChangeKind.REMOVED and rows["pkg/gone.py"].file_state is FileState.MISSING
    hashless = replace(dist, entries=[e._replace(hash=None, size=None) if e.path == "pkg/extra.py" else e
                                      for e in dist.entries])
    assert "pkg/extra.py" not in {r.path for r in compare_rows(hashless, record)}
