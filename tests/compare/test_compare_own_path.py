"""``driftscan compare`` of venvs at different paths: a venv writes its own path into its
activate scripts, console scripts and ``pyvenv.cfg``; the same venv at three paths must compare
equal, and a real edit on one must still be the one outlier. Real venvs (``python -m venv``),
the runner's pip installing a wheel built here, the CLI as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixtures import venvs
from fixtures.harness import replace_by_rename, run_cli
from fixtures.wheels import build_wheel

from driftscan.compare import compare_files

NOTE = "only by the environment's own path"


@pytest.fixture(scope="module")
def house(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("ownpathwheels")
    files: dict[str, bytes | str] = {f"fleetpkg/m{i}.py": f"X{i} = {i}\n" for i in range(5)}
    files["fleetpkg/__init__.py"] = "def main():\n    print('fleet')\n"
    build_wheel(where, "fleetpkg", "1.0", files, console_scripts={"fleet": "fleetpkg:main"})
    return where


@pytest.fixture(scope="module")
def nodes(tmp_path_factory, house) -> list[Path]:
    """Three venvs with the same packages at three different paths, of one name (a venv's prompt
    in its activate scripts is its directory's name); the longest one's console script gets pip's
    /bin/sh launcher (a shebang line has at most 127 bytes)."""
    return venvs.pip_venvs_at(tmp_path_factory.mktemp("ownpath"),
                              ("node1/venv", "srv/ray/runtime_env/abc123/venv", "home/user-" + "x" * 120 + "/venv"),
                              house, "fleetpkg", "--no-compile")


def snapshot(venv: Path, out: Path) -> Path:
    done = run_cli("snapshot", "--venv", str(venv), "-o", str(out))
    assert done.returncode == 0, done.stderr
    return out


def audit_json(venv: Path, out: Path) -> Path:
    done = run_cli("audit", "--venv", str(venv), "--format", "json", "-o", str(out), "--no-pristine")
    assert done.returncode in (0, 1), done.stderr
    return out


def compare_json(*paths: Path) -> tuple[int, dict]:
    done = run_cli("compare", *map(str, paths), "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def edit(path: Path, extra: str) -> None:
    replace_by_rename(path, path.read_text() + extra)


def test_venvs_at_three_paths_agree_and_an_edit_is_the_one_outlier(tmp_path, nodes):
    # The files really do hold each venv's own path...
    for venv in nodes:
        assert str(venv) in (venv / "bin" / "activate").read_text()
        assert str(venv) in (venv / "bin" / "fleet").read_text()
        assert str(venv) in (venv / "pyvenv.cfg").read_text()
    assert (nodes[2] / "bin" / "fleet").read_text().startswith("#!/bin/sh\n")  # pip's long-path launcher
    snaps = [snapshot(v, tmp_path / f"node{n}.json") for n, v in enumerate(nodes)]
    manifest = json.loads(snaps[0].read_text())
    own = manifest["prefix_free"]
    assert {"bin/activate", "bin/fleet", "pyvenv.cfg"} <= set(own)
    assert any(rel.endswith("fleetpkg-1.0.dist-info/RECORD") for rel in own)  # it lists bin/fleet's sha256
    assert own["bin/fleet"]["xxh3_128"] == manifest["files"]["bin/fleet"]["xxh3_128"]
    raw = {json.loads(s.read_text())["files"]["bin/activate"]["xxh3_128"] for s in snaps}
    assert len(raw) == 3  # three different files byte for byte ...
    status, result = compare_json(*snaps)
    assert (status, result["outliers"]) == (0, [])  # ... that are one file but for the path
    merged = [n for n in result["notes"] if NOTE in n]
    assert len(merged) == 1 and int(merged[0].split()[0]) >= 3, result["notes"]

    # A real edit on one node is the only outlier.
    edited = venvs.site_packages_of(nodes[1]) / "fleetpkg" / "m2.py"
    original = edited.read_text()
    edit(edited, "import pdb; pdb.set_trace()\n")
    try:
        snaps[1] = snapshot(nodes[1], tmp_path / "node1-edited.json")
        status, result = compare_json(*snaps)
        assert status == 1
        assert [(o["machine"], o["relpath"], o["kind"]) for o in result["outliers"]] == \
            [(str(snaps[1]), "fleetpkg/m2.py", "modified")]
    finally:
        replace_by_rename(edited, original)


def test_a_console_script_edited_on_one_node_is_an_outlier(tmp_path, nodes):
    script = nodes[2] / "bin" / "fleet"
    original = script.read_text()
    edit(script, "# local hack\n")
    try:
        snaps = [snapshot(v, tmp_path / f"node{n}.json") for n, v in enumerate(nodes)]
        assert "bin/fleet" in json.loads(snaps[2].read_text())["prefix_free"]  # it still holds the path
        result = compare_files([str(s) for s in snaps])
        # The script, and its RECORD: that RECORD's row no longer has the script's hash, so its
        # sha256 (another on each node) is compared as it is.
        assert sorted((o.machine, o.root, o.relpath, o.kind) for o in result.outliers) == \
            [(str(snaps[2]), "site-packages", "fleetpkg-1.0.dist-info/RECORD", "modified"),
             (str(snaps[2]), "venv", "bin/fleet", "modified")]
        result.outliers.sort(key=lambda o: o.root, reverse=True)
        assert result.outliers[0].this["xxh3_128"] == json.loads(snaps[2].read_text())["files"]["bin/fleet"]["xxh3_128"]
    finally:
        replace_by_rename(script, original)


def test_reports_of_the_same_script_edit_at_three_paths_agree(tmp_path, nodes):
    scripts = [v / "bin" / "fleet" for v in nodes]
    originals = [s.read_text() for s in scripts]
    try:
        for s in scripts:
            edit(s, "import os; os.environ['DEBUG'] = '1'\n")
        reports = [audit_json(v, tmp_path / f"node{n}.json") for n, v in enumerate(nodes)]
        drifts = [next(d for d in json.loads(r.read_text())["drifts"] if d["relpath"] == "bin/fleet") for r in reports]
        assert len({d["actual"]["hash"] for d in drifts}) == 3
        assert len({d["actual"]["hash_prefix_free"] for d in drifts}) == 1
        result = compare_files([str(r) for r in reports], before_after=False)
        assert result.outliers == []
        assert any(NOTE in n for n in result.notes)

        # Another edit on one node is still told apart.
        edit(scripts[0], "# and one more\n")
        reports[0] = audit_json(nodes[0], tmp_path / "node0-again.json")
        result = compare_files([str(r) for r in reports], before_after=False)
        assert [(o.machine, o.relpath) for o in result.outliers] == [(str(reports[0]), "bin/fleet")]

        # A hostile report that declares "/" (or no venv) as its path, with a prefix-free digest
        # copied from the majority, masks nothing.
        for declared in ("/", ""):
            doc = json.loads(reports[0].read_text())
            doc["target"]["venv"] = declared
            for d in doc["drifts"]:
                if d["relpath"] == "bin/fleet":
                    d["actual"]["hash_prefix_free"] = drifts[1]["actual"]["hash_prefix_free"]
            hostile = tmp_path / f"hostile{len(declared)}.json"
            hostile.write_text(json.dumps(doc))
            result = compare_files([str(hostile), str(reports[1]), str(reports[2])], before_after=False)
            assert [o.machine for o in result.outliers if o.relpath == "bin/fleet"] == [str(hostile)], declared
    finally:
        for s, text in zip(scripts, originals):
            replace_by_rename(s, text)


def test_a_hostile_snapshot_rooted_at_slash_masks_nothing(tmp_path, nodes):
    script = nodes[0] / "bin" / "fleet"
    original = script.read_text()
    edit(script, "# local hack\n")
    try:
        snaps = [snapshot(v, tmp_path / f"node{n}.json") for n, v in enumerate(nodes)]
    finally:
        replace_by_rename(script, original)
    good = json.loads(snaps[1].read_text())["prefix_free"]["bin/fleet"]["prefix_free_xxh3_128"]
    for root in ("/", "rel/venv"):
        doc = json.loads(snaps[0].read_text())
        doc["root"] = root
        doc["prefix_free"]["bin/fleet"]["prefix_free_xxh3_128"] = good  # claims the majority's
        hostile = tmp_path / "hostile.json"
        hostile.write_text(json.dumps(doc))
        result = compare_files([str(hostile), str(snaps[1]), str(snaps[2])])
        assert [(o.machine, o.relpath) for o in result.outliers if o.relpath == "bin/fleet"] == \
            [(str(hostile), "bin/fleet")], root
