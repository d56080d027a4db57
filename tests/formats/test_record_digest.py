"""shipped_rows_digest: one digest per installed wheel, the same whatever installed it and wherever."""

from __future__ import annotations


from driftscan.core.values import Hash, RecordEntry, RecordRows
from driftscan.formats.record import parse_record, shipped_rows_digest
from fixtures.wheelfiles import entry

INFO = "pkg-1.0.dist-info"
SHIPPED = [entry("pkg/__init__.py", "x = 1\n"), entry("pkg/mod.py", "def f(): pass\n"),
           entry(f"{INFO}/METADATA", "Name: pkg\nVersion: 1.0\n"), entry(f"{INFO}/WHEEL", "Wheel-Version: 1.0\n")]


def _rows(*entries: RecordEntry) -> RecordRows:
    return RecordRows(RecordEntry(e.path, e.hash, e.size, n) for n, e in enumerate(entries))


def test_installer_rows_row_order_scripts_and_bytecode_do_not_change_it() -> None:
    pip = _rows(*SHIPPED, entry(f"{INFO}/INSTALLER", "pip\n"), entry(f"{INFO}/REQUESTED", ""),
                RecordEntry(f"{INFO}/RECORD", None, None, 0), RecordEntry("pkg/__pycache__/mod.cpython-311.pyc", None,
                                                                          None, 0),
                entry("../../../bin/pkg-tool", "#!/srv/a/venv/bin/python\n"))
    uv = _rows(*reversed(SHIPPED), entry(f"{INFO}/INSTALLER", "uv"), entry(f"{INFO}/uv_cache.json", "{}"),
               entry("../../../bin/pkg-tool", "#!/home/b/.venv/bin/python\n"))
    digest = shipped_rows_digest(pip, INFO)
    assert digest is not None and digest.startswith("sha256=")
    assert shipped_rows_digest(uv, INFO) == digest


def test_a_rewritten_row_gives_another_digest() -> None:
    rewritten = [entry("pkg/mod.py", "def f(): breakpoint()\n") if e.path == "pkg/mod.py" else e for e in SHIPPED]
    assert shipped_rows_digest(_rows(*rewritten), INFO) != shipped_rows_digest(_rows(*SHIPPED), INFO)


def test_a_row_added_or_removed_gives_another_digest() -> None:
    base = shipped_rows_digest(_rows(*SHIPPED), INFO)
    assert shipped_rows_digest(_rows(*SHIPPED[1:]), INFO) != base
    assert shipped_rows_digest(_rows(*SHIPPED, entry("pkg/extra.py", "")), INFO) != base


def test_rows_cannot_be_run_together() -> None:
    """A path holding what would read as the next row's fields does not collide with two rows."""
    a = _rows(RecordEntry("a", None, None, 0), RecordEntry("b", None, None, 1))
    b = _rows(RecordEntry("a,,\n1:b", None, None, 0))
    assert shipped_rows_digest(a, INFO) != shipped_rows_digest(b, INFO)


def test_other_hash_algorithms_and_sizes_count() -> None:
    sha512 = RecordEntry("pkg/x.py", Hash("sha512", b"\1" * 64), 3, 0)
    other = RecordEntry("pkg/x.py", Hash("sha512", b"\2" * 64), 3, 0)
    resized = RecordEntry("pkg/x.py", Hash("sha512", b"\1" * 64), 4, 0)
    digests = {shipped_rows_digest(_rows(e), INFO) for e in (sha512, other, resized)}
    assert len(digests) == 3


def test_nothing_shipped_gives_none() -> None:
    assert shipped_rows_digest(_rows(RecordEntry(f"{INFO}/RECORD", None, None, 0)), INFO) is None
    assert shipped_rows_digest(RecordRows(), INFO) is None


def test_same_as_a_parsed_record_with_crlf() -> None:
    text = "pkg/mod.py,sha256=" + "A" * 43 + ",12\r\n" + f"{INFO}/RECORD,,\r\n"
    lf = text.replace("\r\n", "\n")
    assert shipped_rows_digest(parse_record(text).entries, INFO) == shipped_rows_digest(parse_record(lf).entries, INFO)
    assert shipped_rows_digest(parse_record(text).entries, INFO) is not None


def test_an_editable_install_has_no_digest_a_warm_audit_keeps_its_own() -> None:
    from driftscan.core.values import Distribution
    from driftscan.formats.record import distribution_digest

    rows = _rows(*SHIPPED)
    plain = Distribution("pkg", "1.0", f"/site/{INFO}", "/site", entries=rows)
    assert distribution_digest(plain) == shipped_rows_digest(rows, INFO) is not None
    editable = Distribution("pkg", "1.0", f"/site/{INFO}", "/site", entries=rows,
                            direct_url={"url": "file:///src/pkg", "dir_info": {"editable": True}})
    assert distribution_digest(editable) is None, "its .pth names this machine's source tree"
    warm = Distribution("pkg", "1.0", f"/site/{INFO}", "/site", record_digest="sha256=kept")
    assert distribution_digest(warm) == "sha256=kept"
