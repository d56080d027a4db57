"""core.values: the frozen values of the pipeline: RecordRows stands for a tuple of RecordEntry
whatever the row holds, and the dataclasses coerce plain strings given by API callers."""

from __future__ import annotations

import hashlib
import pickle

import pytest

from driftscan.core.values import (Distribution, DriftKind, DumpFiles, DumpWriter, FileCheck, Finding, Hash,
                                   MetadataKind, Origin, PristineRef, RecordEntry, RecordRows, Severity, SourceKind,
                                   Target, TargetKind, UvCacheLink)

SHA = hashlib.sha256(b"x").digest()

ODD_ROWS = [
    RecordEntry("a.py", Hash("sha256", SHA), 12, 1),  # the common row
    RecordEntry("b/", None, None, 2),  # bare
    RecordEntry("c.py", Hash("sha256", SHA, "hex"), 3, 3),  # Debian-style hex
    RecordEntry("d.py", Hash("md5", b"\x01" * 16), None, 4),  # another algorithm
    RecordEntry("e.py", Hash("sha256", b"short"), 5, 5),  # a digest of the wrong width
    RecordEntry("f.py", None, (1 << 64) + 7, 6),  # a size no 64-bit column holds
    RecordEntry("g.py", Hash("sha256", SHA), -1, 7),  # a negative size (a hostile RECORD)
    RecordEntry("h.py", None, 0, 8),
]


def test_every_kind_of_row_reads_back_unchanged():
    rows = RecordRows(ODD_ROWS)
    assert len(rows) == len(ODD_ROWS)
    assert list(rows) == ODD_ROWS
    assert [rows[k] for k in range(len(rows))] == ODD_ROWS
    assert rows[-1] == ODD_ROWS[-1]
    assert rows[2:5] == tuple(ODD_ROWS[2:5])
    assert [rows.hash(k) for k in range(len(rows))] == [e.hash for e in ODD_ROWS]
    assert [rows.size(k) for k in range(len(rows))] == [e.size for e in ODD_ROWS]
    with pytest.raises(IndexError):
        rows[len(ODD_ROWS)]


def test_only_plain_sha256_rows_use_the_digest_column():
    rows = RecordRows(ODD_ROWS)
    assert rows.digest(0) == SHA
    assert set(rows.other) == {2, 3, 4, 6}, "hex, md5, short digest and the negative-size row go to 'other'"
    assert rows.odd_sizes == {5: (1 << 64) + 7, 6: -1}


def test_equality_hash_and_pickle_as_the_tuple():
    rows = RecordRows(ODD_ROWS)
    assert rows == tuple(ODD_ROWS)
    assert rows == RecordRows(ODD_ROWS)
    assert rows != RecordRows(ODD_ROWS[:-1])
    assert hash(rows) == hash(tuple(ODD_ROWS))
    assert pickle.loads(pickle.dumps(rows)) == rows
    assert RecordRows.of(rows) is rows


def test_append_after_freeze():
    rows = RecordRows([ODD_ROWS[0]])
    assert type(rows.digests) is bytes
    rows.append_sha256("z.py", SHA, None, 9)
    rows.append_bare("z/", 10)
    rows.freeze()
    assert rows[1] == RecordEntry("z.py", Hash("sha256", SHA), None, 9)
    assert rows[2] == RecordEntry("z/", None, None, 10)


def test_hash_str_is_hex():
    assert str(Hash("sha256", b"\x00\xff")) == "sha256=00ff"


def test_severity_rank_orders():
    assert sorted(Severity, key=lambda s: s.rank) == [Severity.LOW, Severity.MEDIUM, Severity.HIGH]


def test_plain_strings_from_api_callers_are_coerced():
    target = Target(kind="venv", venv="/v", site_packages=("/v/lib",))
    assert target.kind is TargetKind.VENV
    dist = Distribution("demo", "1.0", "/v/demo.dist-info", "/v/lib", kind="egg-info", entries=ODD_ROWS[:2])
    assert dist.kind is MetadataKind.EGG_INFO
    assert type(dist.entries) is RecordRows and dist.entries == tuple(ODD_ROWS[:2])
    assert dist.key == "demo 1.0"
    with pytest.raises(ValueError):
        Target(kind="no-such-kind", venv=None, site_packages=())


def test_a_finding_origin_given_as_its_string_becomes_the_member():
    finding = Finding("DBG101", "torch-save-call", Severity.HIGH, 3, 5, "torch.save", origin="upstream")
    assert finding.origin is Origin.UPSTREAM and finding.origin == "upstream"
    assert Finding("DBG101", "torch-save-call", Severity.HIGH, 3, 5, "torch.save").origin is None
    with pytest.raises(ValueError):
        Finding("DBG101", "torch-save-call", Severity.HIGH, 3, 5, "torch.save", origin="no-such-origin")


def test_a_pristine_source_given_as_its_string_becomes_the_member_and_reads_back_as_it():
    ref = PristineRef("uv-cache", "/c/archive-v0/x")
    assert ref.source is SourceKind.UV_CACHE and ref.source.label == "uv's cache"
    assert ref.as_json() == {"source": "uv-cache", "path": "/c/archive-v0/x"}
    assert type(ref.as_json()["source"]) is str
    with pytest.raises(ValueError):
        PristineRef("somewhere", "/x")


@pytest.mark.parametrize("direct_url,editable", [
    (None, False),
    ({"dir_info": {"editable": True}}, True),
    ({"dir_info": {"editable": "true"}}, False),  # only a JSON true
    ({"dir_info": ["editable"]}, False),  # any JSON at all, never a crash
    ({"url": "file:///x"}, False),
])
def test_editable_only_for_a_real_true(direct_url, editable):
    assert Distribution("d", "1", "/m", "/s", direct_url=direct_url).editable is editable


def test_file_check_observed_adds_typed_observations():
    plain = FileCheck(DriftKind.MODIFIED, "/v/a.py", "/v", actual={"size": 3})
    assert plain.observed() == {"size": 3}
    assert plain.regular_file
    dumps = DumpFiles("/tmp/d_*.pt", ("/tmp/d_1.pt",), 10, (DumpWriter("/v/a.py", 3, "torch.save(x)"),))
    link = UvCacheLink("/cache", "/cache/a.py", 2, False)
    check = FileCheck(DriftKind.DEBUG_ARTIFACTS, "/v/a.py", "/v", actual={"type": "symlink"}, dumps=dumps,
                      uv_cache=link)
    seen = check.observed()
    assert seen["type"] == "symlink" and not check.regular_file
    assert seen["count"] == 1 and seen["artifacts"] == ["/tmp/d_1.pt"] and seen["bytes"] == 10
    assert seen["written_by"] == [{"path": "/v/a.py", "line": 3, "code": "torch.save(x)"}]
    assert seen["uv_cache"] == {"dir": "/cache", "copy": "/cache/a.py", "links": 2, "symlink": False}
    assert "list_file" not in seen
    assert check.actual == {"type": "symlink"}, "observed() returns a new dict"
