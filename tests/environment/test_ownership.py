"""The compact ownership index (environment/ownership.py) against the plain dict it replaced.

``build_ownership`` used to keep one absolute path string, a one-item list and a
(distribution, entry) pair per RECORD row. It now indexes the RECORD's own relative path
strings per site-packages, keeps a row number per path and builds absolute paths on demand;
``rows``, ``owners`` and ``owned_paths()`` are views. These tests compare every view with the
old structure, rebuilt here from the same RECORD rows, on the awkward cases: nested
site-packages, paths listed by several distributions, rows that need normalising, rows outside
the environment, a RECORD that does not list itself, an egg-info that lists nothing.
"""

from __future__ import annotations

import os
import pickle

import pytest

from driftscan.environment.dists import MetadataDir
from driftscan.fs.containment import Containment
from driftscan.core.values import Distribution, Hash, MetadataKind, RecordEntry
from driftscan.environment.ownership import build_ownership


def _old_index(metadirs, containment):
    """What the old ``build_ownership`` built: (owners, rows, problems count)."""
    owners: dict[str, list] = {}
    rows: list[tuple] = []
    refused = 0
    for md in metadirs:
        dist = md.distribution
        if dist is None:
            continue
        for entry in dist.entries:
            path = os.path.normpath(os.path.join(dist.site_packages, entry.path))
            if not any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in containment.roots):
                refused += 1
                continue
            owners.setdefault(path, []).append((dist, entry))
            rows.append((dist, entry, path))
        if dist.kind is MetadataKind.DIST_INFO:
            owners.setdefault(os.path.join(dist.metadata_dir, "RECORD"), [])
    return owners, rows, refused


def _dist(site: str, name: str, paths: list[str], kind=MetadataKind.DIST_INFO, top_level=()) -> MetadataDir:
    entries = tuple(RecordEntry(p, Hash("sha256", bytes([n % 256]) * 32) if n % 3 else None, n, n + 1)
                    for n, p in enumerate(paths))
    suffix = ".dist-info" if kind is MetadataKind.DIST_INFO else ".egg-info"
    meta = os.path.join(site, f"{name}-1.0{suffix}")
    dist = Distribution(name, "1.0", meta, site, kind=kind, entries=entries, top_level=tuple(top_level))
    return MetadataDir(meta, site, dist)


@pytest.fixture
def layout(tmp_path):
    venv = str(tmp_path / "venv")
    site = f"{venv}/lib/python3.11/site-packages"
    inner = f"{site}/vendored/site-packages"  # a site-packages inside another (pip --target into a venv)
    metadirs = [
        _dist(site, "alpha", ["alpha/__init__.py", "alpha/core.py", "alpha/__pycache__/core.cpython-311.pyc",
                              "alpha-1.0.dist-info/RECORD", "alpha-1.0.dist-info/METADATA",
                              "../../../bin/alpha", "./alpha/odd.py", "alpha//twice.py", "alpha/data/",
                              "vendored/site-packages/shared.py", "../../../../../etc/shadow"]),
        _dist(site, "beta", ["beta.py", "alpha/core.py", "shared/x.py", "shared/x.py"]),  # clobbers, lists twice
        _dist(inner, "gamma", ["gamma.py", "shared.py", "../../vendored.txt"]),
        _dist(site, "delta", ["delta/a.py"]),  # its RECORD does not list itself
        _dist(site, "legacy", [], kind=MetadataKind.EGG_INFO, top_level=("legacy",)),
        MetadataDir(f"{site}/orphan-1.0.dist-info", site, None, missing=("RECORD",)),
    ]
    containment = Containment([venv])
    return venv, site, inner, metadirs, containment


def test_every_view_equals_the_old_index(layout):
    venv, site, inner, metadirs, containment = layout
    own = build_ownership(metadirs, containment)
    owners, rows, refused = _old_index(metadirs, containment)
    assert list(own.rows) == rows
    assert [own.rows[i] for i in range(len(rows))] == rows
    assert own.rows[-1] == rows[-1] and own.rows[1:3] == rows[1:3]
    assert len(own.rows) == len(own.entries) == len(rows)
    assert dict(own.owners) == owners
    assert set(own.owners) == set(owners) and len(own.owners) == len(owners)
    for path, pairs in owners.items():
        assert path in own.owners and own.owners[path] == pairs and own.owners.get(path) == pairs
    for path in (f"{site}/nothing.py", f"{site}/alpha", venv, "/etc/shadow", f"{inner}/none.py", "", f"{site}/"):
        assert path not in own.owners and own.owners.get(path) is None, path
    assert 7 not in own.owners
    assert len(own.problems) == refused == 1
    shared = {i for i, (_, _, path) in enumerate(rows) if len(owners[path]) > 1}
    # alpha/core.py, shared/x.py and the inner site-packages' shared.py, each named twice
    assert own.shared_rows() == shared and len(shared) == 6
    assert own.owners[f"{site}/delta-1.0.dist-info/RECORD"] == []
    assert own.claimed == {(site, "legacy")}


def test_the_owned_paths_view_is_the_old_frozenset(layout):
    _, site, _, metadirs, containment = layout
    own = build_ownership(metadirs, containment)
    old = frozenset(_old_index(metadirs, containment)[0])
    view = own.owned_paths()
    assert view == old and old == view and len(view) == len(old) and set(view) == old
    assert hash(view) == hash(frozenset(view))
    assert f"{site}/alpha/core.py" in view and f"{site}/alpha/nothing.py" not in view and None not in view
    assert pickle.loads(pickle.dumps(view)) == old


def test_owns_walks_up_to_directory_rows(layout):
    venv, site, inner, metadirs, containment = layout
    own = build_ownership(metadirs, containment)
    assert own.owns(f"{site}/alpha/data/deep/file.bin", site)  # under the row "alpha/data/"
    assert own.owns(f"{inner}/gamma.py", inner) and own.owns(f"{site}/vendored/site-packages/shared.py", site)
    assert own.owns(f"{venv}/bin/alpha", f"{venv}/bin")
    assert not own.owns(f"{site}/alpha/new.py", site)
    assert own.dir_owner[f"{site}/alpha"].name == "alpha" and own.dir_owner[f"{site}/shared"].name == "beta"


def test_rows_name_each_path_as_normalised(layout):
    venv, site, inner, metadirs, containment = layout
    own = build_ownership(metadirs, containment)
    paths = [own.path(i) for i in range(len(own.entries))]
    assert f"{site}/alpha/odd.py" in paths and f"{site}/alpha/twice.py" in paths and f"{site}/alpha/data" in paths
    assert f"{venv}/bin/alpha" in paths and f"{site}/vendored.txt" in paths
    assert all(p == os.path.normpath(p) for p in paths)
    # a path of the inner site-packages has one place in the index, whichever RECORD names it
    assert [d.name for d, _ in own.owners[f"{inner}/shared.py"]] == ["alpha", "gamma"]


def test_an_audit_through_the_views_reports_as_before(tmp_path, monkeypatch):
    """verify_records settles rows through the index: a clobbered file, a missing one and a
    modified one are described as the old rows would have them."""
    from driftscan.environment import records

    site = tmp_path / "site"
    (site / "pkg").mkdir(parents=True)
    files = {"pkg/a.py": b"a\n", "pkg/b.py": b"b\n", "pkg/c.py": b"c\n"}
    for rel, data in files.items():
        (site / rel).write_bytes(data)
    import hashlib

    def row(rel, data, line):
        return RecordEntry(rel, Hash("sha256", hashlib.sha256(data).digest()), len(data), line)

    one = Distribution("one", "1", str(site / "one-1.dist-info"), str(site), installer="pip",
                       entries=(row("pkg/a.py", b"a\n", 1), row("pkg/b.py", b"other\n", 2)))
    two = Distribution("two", "1", str(site / "two-1.dist-info"), str(site), installer="pip",
                       entries=(row("pkg/b.py", b"b\n", 1), row("pkg/gone.py", b"x", 2), row("pkg/c.py", b"C\n", 3)))
    metadirs = [MetadataDir(d.metadata_dir, str(site), d) for d in (one, two)]
    own = build_ownership(metadirs, Containment([str(site)]))
    from driftscan.core.values import Target, TargetKind

    target = Target(TargetKind.SITE_PACKAGES, None, (str(site),))
    monkeypatch.setenv("DRIFTSCAN_FORK", "inline")
    outcome = records.verify_records(target, metadirs, own, 1, containment=Containment([str(site)]))
    got = sorted((c.kind.value, os.path.relpath(c.path, site), c.distribution.name) for c in outcome.checks)
    assert got == [("clobbered", "pkg/b.py", "one"), ("missing", "pkg/gone.py", "two"),
                   ("modified", "pkg/c.py", "two")]
    assert outcome.files_checked == 5
