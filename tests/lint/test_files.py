"""The walk for ``*.py`` files and the assembling of a scan's result, without the rule engine."""

from __future__ import annotations

import os

from driftscan.core.values import Finding, Severity
from driftscan.lint.files import MAX_FILE_BYTES, ScanResult, collect_files, gather


def tree(root):
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "__pycache__").mkdir()
    (root / "pkg" / "b.py").write_text("b = 1\n")
    (root / "pkg" / "a.py").write_text("a = 22\n")
    (root / "pkg" / "notes.txt").write_text("x")
    (root / "pkg" / "sub" / "c.py").write_text("")
    (root / "pkg" / "__pycache__" / "a.py").write_text("cached\n")
    return root / "pkg"


def test_a_directory_gives_its_py_files_sorted_with_sizes_and_skips_pycache(tmp_path):
    pkg = tree(tmp_path)
    errors = []
    files = collect_files([str(pkg)], errors)
    assert errors == []
    assert files == [(f"{pkg}/a.py", 7), (f"{pkg}/b.py", 6), (f"{pkg}/sub/c.py", 0)]


def test_a_file_named_directly_is_scanned_whatever_its_suffix(tmp_path):
    pkg = tree(tmp_path)
    files = collect_files([str(pkg / "notes.txt")], [])
    assert files == [(str(pkg / "notes.txt"), 1)]


def test_overlapping_paths_are_deduplicated(tmp_path):
    pkg = tree(tmp_path)
    files = collect_files([str(pkg), str(pkg / "a.py"), str(pkg / "sub") + "/../a.py"], [])
    assert [p for p, _ in files].count(f"{pkg}/a.py") == 1
    assert len(files) == 3


def test_stats_are_recorded_for_each_file(tmp_path):
    pkg = tree(tmp_path)
    stats = {}
    files = collect_files([str(pkg)], [], stats)
    assert set(stats) == {p for p, _ in files}
    assert all(stats[p].st_size == size for p, size in files)


def test_a_missing_path_and_a_fifo_are_errors_not_files(tmp_path):
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    errors = []
    files = collect_files([str(tmp_path / "gone.py"), str(fifo)], errors)
    assert files == []
    assert [(p.path, "no such file" in p.message or "not a regular file" in p.message) for p in errors] == [
        (str(tmp_path / "gone.py"), True), (str(fifo), True)]
    assert "fifo" in errors[1].message.lower()


def test_a_fifo_inside_a_directory_is_an_error_too(tmp_path):
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "ok.py").write_text("x = 1\n")
    errors = []
    files = collect_files([str(tmp_path)], errors)
    assert [os.path.basename(p) for p, _ in files] == ["ok.py"]
    assert len(errors) == 1 and errors[0].path.endswith("pipe.py")


def finding(line, code="DBG101", column=1, message="m"):
    return Finding(code, "n", Severity.HIGH, line, column, message)


def test_gather_sums_counts_and_sorts_findings_and_errors():
    rows = [
        ("b.py", [finding(3), finding(1, "DBG106")], 100, True, None),
        ("a.py", [finding(5, column=2), finding(5, column=1)], 50, False, "could not read"),
        ("a.py", [], 10, True, "another error"),
    ]
    result = gather(ScanResult(rules=("DBG101",)), rows)
    assert (result.files_scanned, result.bytes_scanned, result.files_parsed) == (3, 160, 2)
    assert [(p, f.line, f.column) for p, f in result.findings] == [
        ("a.py", 5, 1), ("a.py", 5, 2), ("b.py", 1, 1), ("b.py", 3, 1)]
    assert [(p.path, p.message) for p in result.errors] == [("a.py", "another error"), ("a.py", "could not read")]
    assert result.rules == ("DBG101",)


def test_gather_adds_to_what_the_result_already_holds():
    result = gather(ScanResult(files_scanned=2, bytes_scanned=5), [("x.py", [], 1, False, None)])
    assert (result.files_scanned, result.bytes_scanned, result.files_parsed) == (3, 6, 0)


def test_the_size_cap_is_four_mebibytes():
    assert MAX_FILE_BYTES == 4 * 1024 * 1024
