"""``driftscan compare``: real venvs (uv, real wheels built here), real audits and snapshots,
the CLI as a user runs it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import jsonschema
import pytest

from fixtures import venvs
from fixtures.harness import replace_by_rename, run_cli
from fixtures.wheels import build_wheel

from driftscan.compare import compare_files

MODULES = 40  # a version skew must not become 40 file differences


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> Path:
    house = tmp_path_factory.mktemp("fleetwheels")
    for version in ("1.0", "1.1"):
        files: dict[str, bytes | str] = {f"fleetpkg/m{i}.py": f"VERSION = {version!r}\nX{i} = {i}\n"
                                         for i in range(MODULES)}
        files["fleetpkg/__init__.py"] = f"__version__ = {version!r}\n"
        build_wheel(house, "fleetpkg", version, files)
    build_wheel(house, "helperpkg", "2.0", {"helperpkg/__init__.py": "X = 1\n"})
    return house


def machine(root: Path, version: str, wheels: Path, uv_cache: Path) -> Path:
    venv = venvs.make_uv_venv(root, uv_cache)
    venvs.uv_install(venv, uv_cache, "--no-index", "--find-links", str(wheels), "--link-mode", "copy",
                     f"fleetpkg=={version}", "helperpkg")
    return venv


def site(venv: Path) -> Path:
    return venvs.site_packages_of(venv)


def hotfix(venv: Path, module: str = "m3") -> Path:
    path = site(venv) / "fleetpkg" / f"{module}.py"
    replace_by_rename(path, path.read_text() + "import torch; torch.save({}, '/tmp/dump.pt')\n")
    return path


def audit_json(venv: Path, out: Path) -> Path:
    done = run_cli("audit", "--venv", str(venv), "--format", "json", "-o", str(out), "--no-pristine")
    assert done.returncode in (0, 1), done.stderr
    return out


def snapshot(venv: Path, out: Path) -> Path:
    done = run_cli("snapshot", "--venv", str(venv), "-o", str(out))
    assert done.returncode == 0, done.stderr
    return out


def compare_cli(*args: str):
    return run_cli("compare", *args)


def test_three_snapshots_one_hotfix_gives_one_outlier(tmp_path, wheels, uv_cache):
    # Three machines of one image: same venv path, same files; then node 3 gets a hotfix.
    venv = machine(tmp_path / "ml-env", "1.1", wheels, uv_cache)
    s1 = snapshot(venv, tmp_path / "node1.json")
    s2 = snapshot(venv, tmp_path / "node2.json")
    fixed = hotfix(venv)
    s3 = snapshot(venv, tmp_path / "node3.json")
    done = compare_cli(str(s1), str(s2), str(s3), "--format", "json")
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert result["schema_version"] == "1"
    assert [m["name"] for m in result["machines"]] == [str(s1), str(s2), str(s3)]
    assert {m["source"] for m in result["machines"]} == {"snapshot"}
    assert {m["hostname"] for m in result["machines"]} == {os.uname().nodename}  # snapshots record it too
    assert len(result["outliers"]) == 1, result["outliers"]
    o = result["outliers"][0]
    assert (o["machine"], o["relpath"], o["kind"], o["scope"]) == (str(s3), "fleetpkg/m3.py", "modified", "package")
    assert o["path"] == str(fixed)
    assert o["distribution"] == {"name": "fleetpkg", "version": "1.1"}
    assert o["majority"]["machines"] == 2 and o["majority"]["of"] == 3
    assert o["majority"]["xxh3_128"] != o["this"]["xxh3_128"]
    assert result["version_skew"] == []
    assert result["agree"] == result["compared"] - 1 > MODULES
    text = compare_cli(str(s1), str(s2), str(s3))
    assert text.returncode == 1
    assert str(s3) in text.stdout and str(fixed) in text.stdout and str(s1) + " (" not in text.stdout


def test_reports_version_skew_is_one_entry_not_a_flood(tmp_path, wheels, uv_cache):
    a = machine(tmp_path / "a", "1.1", wheels, uv_cache)
    b = machine(tmp_path / "b", "1.1", wheels, uv_cache)
    c = machine(tmp_path / "c", "1.0", wheels, uv_cache)
    hotfix(c, "m1")  # a drift of the old version's own: not compared with 1.1's files
    reports = [audit_json(v, tmp_path / f"{v.name}.json") for v in (a, b, c)]
    result = compare_files([str(r) for r in reports])
    assert result.outliers == []
    assert len(result.version_skew) == 1
    skew = result.version_skew[0]
    assert skew.distribution == "fleetpkg" and skew.kind == "distribution"
    assert skew.majority == {"version": "1.1", "machines": 2}
    assert [(m.machine, m.version, m.drifts) for m in skew.machines] == [(str(reports[2]), "1.0", 1)]
    # Every report names its machine and lists its distributions.
    doc = json.loads(reports[0].read_text())
    assert doc["hostname"] == os.uname().nodename
    [fleetpkg] = [d for d in doc["distributions"] if d["name"] == "fleetpkg"]
    assert fleetpkg.pop("record_digest").startswith("sha256=")
    assert fleetpkg == {"name": "fleetpkg", "version": "1.1", "installer": "uv"}
    text = compare_cli(*map(str, reports))
    assert text.returncode == 1
    assert "version skew" in text.stdout and "fleetpkg: majority 1.1 on 2" in text.stdout
    assert "1 drift in its own report" in text.stdout

    # The same machines' snapshots: still a skew, not MODULES file differences.
    snaps = [snapshot(v, tmp_path / f"{v.name}.snap.json") for v in (a, b, c)]
    result = compare_files([str(s) for s in snaps])
    assert [s.distribution for s in result.version_skew] == ["fleetpkg"]
    assert not [o for o in result.outliers if o.distribution and o.distribution["name"] == "fleetpkg"]


def test_reports_name_the_drifted_machine_with_content_hashes(tmp_path, wheels, uv_cache):
    venvs_ = [machine(tmp_path / f"n{i}", "1.1", wheels, uv_cache) for i in range(4)]
    fixed = [hotfix(venvs_[1]), hotfix(venvs_[2])]  # the same hotfix on two machines...
    extra = site(venvs_[3]) / "fleetpkg" / "m3.py"
    replace_by_rename(extra, extra.read_text() + "# another edit\n")  # ...and a different one on a third
    reports = [audit_json(v, tmp_path / f"{v.name}.json") for v in venvs_]
    doc = json.loads(reports[1].read_text())
    drift = next(d for d in doc["drifts"] if d["relpath"] == "fleetpkg/m3.py")
    import base64
    import hashlib

    digest = base64.urlsafe_b64encode(hashlib.sha256(fixed[0].read_bytes()).digest()).rstrip(b"=").decode()
    assert drift["actual"]["hash"] == f"sha256={digest}"
    result = compare_files([str(r) for r in reports])
    # The same hotfix on two of four machines is the most common state: the clean machine and the
    # one with another edit are the odd ones out (states: 2 hotfix, 1 recorded, 1 other edit).
    by_machine = {o.machine: o for o in result.outliers}
    assert set(by_machine) == {str(reports[0]), str(reports[3])}
    assert by_machine[str(reports[3])].majority["hash"] == drift["actual"]["hash"]
    assert by_machine[str(reports[0])].this == {"state": "recorded"}


def test_two_machines_differences_both_ways(tmp_path, wheels, uv_cache):
    venv = machine(tmp_path / "ml-env", "1.1", wheels, uv_cache)
    s1 = snapshot(venv, tmp_path / "before.json")
    (site(venv) / "fleetpkg" / "extra.py").write_text("DEBUG = True\n")
    (site(venv) / "fleetpkg" / "m7.py").unlink()
    s2 = snapshot(venv, tmp_path / "after.json")
    result = compare_files([str(s1), str(s2)])
    got = sorted((o.machine, o.relpath, o.kind) for o in result.outliers)
    assert got == sorted([(str(s1), "fleetpkg/extra.py", "missing"), (str(s2), "fleetpkg/extra.py", "added"),
                          (str(s1), "fleetpkg/m7.py", "added"), (str(s2), "fleetpkg/m7.py", "missing")])
    assert all(o.tie and o.majority is not None for o in result.outliers)


def test_a_mix_of_reports_and_snapshots_is_one_line(tmp_path, wheels, uv_cache):
    venv = machine(tmp_path / "ml-env", "1.1", wheels, uv_cache)
    report = audit_json(venv, tmp_path / "r.json")
    snap = snapshot(venv, tmp_path / "s.json")
    done = compare_cli(str(report), str(snap))
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and "not a mix" in done.stderr and "Traceback" not in done.stderr


def test_bad_inputs_are_listed_and_the_rest_compared(tmp_path, wheels, uv_cache):
    good = [audit_json(machine(tmp_path / f"g{i}", "1.1", wheels, uv_cache), tmp_path / f"g{i}.json")
            for i in range(2)]
    (tmp_path / "garbage.json").write_bytes(b"\xff\xfe not json")
    (tmp_path / "other.json").write_text('{"hello": "world"}')
    hostile = json.loads(good[0].read_text())
    hostile["drifts"] = ["a string", {"kind": 5}, {"path": None}, {"path": "/x\x1b[2J\nfake line", "kind": "added"}]
    hostile["distributions"] = [{"name": 1}, "x"]
    hostile["hostname"] = "evil\x1b]0;title\x07"
    (tmp_path / "hostile.json").write_text(json.dumps(hostile))
    os.mkfifo(tmp_path / "fifo.json")
    args = [str(p) for p in (*good, tmp_path / "garbage.json", tmp_path / "other.json", tmp_path / "hostile.json",
                             tmp_path / "fifo.json", tmp_path / "absent.json")]
    done = compare_cli(*args)
    assert done.returncode == 3, done.stderr  # machines differ (the hostile one) and inputs were unreadable
    assert "Traceback" not in done.stderr + done.stdout
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert "fake line" in done.stdout and "\nfake line" not in done.stdout
    result = json.loads(compare_cli(*args, "--format", "json").stdout)
    assert sorted(e["path"] for e in result["errors"]) == sorted(args[2:4] + args[5:])
    assert any("malformed entries skipped" in n for n in result["notes"])
    assert len(result["machines"]) == 3


def test_older_reports_without_distributions_or_hostname(tmp_path, wheels, uv_cache):
    paths = []
    for i in range(3):
        report = audit_json(machine(tmp_path / f"o{i}", "1.1" if i else "1.0", wheels, uv_cache),
                            tmp_path / f"o{i}.json")
        doc = json.loads(report.read_text())
        del doc["distributions"], doc["hostname"]
        report.write_text(json.dumps(doc))
        paths.append(str(report))
    result = compare_files(paths)
    assert any("list no distributions" in n for n in result.notes)
    assert result.version_skew == [] and [m.hostname for m in result.machines] == [None] * 3


def test_many_machines_and_the_schema(tmp_path, wheels, uv_cache):
    clean = audit_json(machine(tmp_path / "clean", "1.1", wheels, uv_cache), tmp_path / "clean.json")
    drifted_venv = machine(tmp_path / "drifted", "1.1", wheels, uv_cache)
    hotfix(drifted_venv)
    (site(drifted_venv) / "notes.txt").write_text("scratch\n")
    drifted = audit_json(drifted_venv, tmp_path / "drifted.json")
    paths = []
    for i in range(9):  # nine machines of one image: one venv path, nine hostnames
        copy = tmp_path / f"node{i}.json"
        doc = json.loads((drifted if i == 4 else clean).read_text())
        doc["target"] = json.loads(clean.read_text())["target"]
        doc["drifts"] = [{**d, "path": d["path"].replace(str(drifted_venv), str(tmp_path / "clean"))}
                         for d in doc["drifts"]]
        doc["hostname"] = f"gpu-{i:02d}"
        copy.write_text(json.dumps(doc))
        paths.append(str(copy))
    done = compare_cli(*paths, "--format", "json")
    result = json.loads(done.stdout)
    schema = json.loads(run_cli("schema", "--for", "compare").stdout)
    jsonschema.validate(result, schema)
    assert {(o["machine"], o["relpath"], o["kind"]) for o in result["outliers"]} == {
        (paths[4], "fleetpkg/m3.py", "modified"), (paths[4], "notes.txt", "added")}
    assert all(o["majority"]["machines"] == 8 and o["majority"]["of"] == 9 for o in result["outliers"])
    md = compare_cli(*paths, "--format", "markdown")
    assert md.returncode == 1 and "| machine |" in md.stdout and "fleetpkg/m3.py" in md.stdout
    assert compare_cli(*paths, "--exit-zero").returncode == 0
    same = compare_cli(paths[0], paths[1])
    assert same.returncode == 0 and "every machine agrees" in same.stdout


def test_warm_audit_lists_the_same_distributions_and_hashes(tmp_path, wheels, uv_cache):
    # The second audit is settled from the stat cache / clean index: its report must carry the
    # same distributions and the same content hashes, or compare would see skew or drift between
    # a machine's cold and warm runs.
    clean = machine(tmp_path / "clean", "1.1", wheels, uv_cache)
    drifted = machine(tmp_path / "drifted", "1.1", wheels, uv_cache)
    hotfix(drifted)
    for venv in (clean, drifted):
        from fixtures.harness import settle

        settle(venv)
        first = json.loads(audit_json(venv, tmp_path / "first.json").read_text())
        second = json.loads(audit_json(venv, tmp_path / "second.json").read_text())
        assert first["distributions"] == second["distributions"] and len(first["distributions"]) >= 2
        assert [(d["relpath"], d["actual"].get("hash")) for d in first["drifts"]] == \
            [(d["relpath"], d["actual"].get("hash")) for d in second["drifts"]]
        result = compare_files([str(tmp_path / "first.json"), str(tmp_path / "second.json")])
        assert result.outliers == [] and result.mode == "before-after"  # one venv at two times
        [step] = result.before_after
        assert step.appeared == step.went_away == step.changed == [] and len(step.stayed) == len(first["drifts"])


# ---- before/after: reports of one environment on one machine, in time order ----


def edit(path: Path, text: str) -> None:
    replace_by_rename(path, path.read_text() + text)


def dump_newer_than(code: Path, dump: Path) -> None:
    dump.write_bytes(b"\0" * 64)
    later = code.stat().st_mtime + 60  # written after the code that writes it, whatever the clock's grain
    os.utime(dump, (later, later))


def retime(report: Path, when: str) -> None:
    doc = json.loads(report.read_text())
    doc["generated_at"] = when
    report.write_text(json.dumps(doc))


def test_one_venv_at_two_times(tmp_path, wheels, uv_cache):
    venv = machine(tmp_path / "ml-env", "1.1", wheels, uv_cache)
    pkg = site(venv) / "fleetpkg"
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    debug = pkg / "m3.py"
    edit(debug, f"import torch\nfor step in range(2):\n    torch.save({{}}, f'{dumps}/dump_{{step}}.pt')\n")
    dump_newer_than(debug, dumps / "dump_1.pt")
    edit(pkg / "m5.py", "# first edit\n")
    edit(pkg / "m7.py", "# kept edit\n")
    m8 = pkg / "m8.py"
    original = m8.read_text()
    edit(m8, "# edit undone later\n")
    before = audit_json(venv, tmp_path / "before.json")

    # In between: m5 edited again, m8 put back, m9 removed, another dump left.
    edit(pkg / "m5.py", "# second edit\n")
    replace_by_rename(m8, original)
    (pkg / "m9.py").unlink()
    dump_newer_than(debug, dumps / "dump_2.pt")
    after = audit_json(venv, tmp_path / "after.json")
    retime(before, "2026-12-01T10:00:00+00:00")
    retime(after, "2026-12-01T11:00:00+00:00")

    # Given newest first: time order wins.
    result = compare_files([str(after), str(before)])
    assert result.mode == "before-after"
    assert result.outliers == [] and result.version_skew == []
    [step] = result.before_after
    assert (step.before.name, step.after.name, step.order) == (str(before), str(after), "generated_at")
    assert step.hostname == os.uname().nodename and step.venv == str(venv)
    rel = {str(pkg / f"m{i}.py"): f"m{i}" for i in range(10)}
    pattern_paths = {i.path for i in step.changed + step.stayed if i.path not in rel}
    assert [rel.get(i.path) for i in step.appeared] == ["m9"]
    assert step.appeared[0].after.kind == "missing" and step.appeared[0].before is None
    assert [rel.get(i.path) for i in step.went_away] == ["m8"]
    assert step.went_away[0].before.kind == "modified" and step.went_away[0].after is None
    changed = {rel.get(i.path, "dumps"): i for i in step.changed}
    assert set(changed) == {"m5", "dumps"}
    assert changed["m5"].changes == ["hash"]
    assert changed["m5"].before.hash != changed["m5"].after.hash
    assert changed["dumps"].changes == ["dumps"]
    assert changed["dumps"].before.dumps == [str(dumps / "dump_1.pt")]
    assert changed["dumps"].after.dumps == [str(dumps / "dump_1.pt"), str(dumps / "dump_2.pt")]
    assert (changed["dumps"].dumps_still_there, changed["dumps"].dumps_since) == (1, "2026-12-01T10:00:00+00:00")
    assert sorted(rel.get(i.path, "?") for i in step.stayed) == ["m3", "m7"]
    assert len(pattern_paths) == 1
    assert result.differs

    done = run_cli("compare", str(after), str(before))
    assert done.returncode == 1, done.stderr
    out = done.stdout
    assert "1 drift appeared, 1 went away, 2 changed, 2 stayed" in out
    assert "1 dump file still there since 2026-12-01T10:00:00+00:00" in out
    assert "dumps 1 file → 2 files" in out
    assert out.index("before: " + str(before)) < out.index("after:  " + str(after))
    assert "majority" not in out
    doc = json.loads(run_cli("compare", str(after), str(before), "--format", "json").stdout)
    jsonschema.validate(doc, json.loads(run_cli("schema", "--for", "compare").stdout))
    assert doc["mode"] == "before-after" and len(doc["before_after"][0]["stayed"]) == 2

    # A third report, nothing touched since: two steps; both dumps listed since the second report.
    third = audit_json(venv, tmp_path / "third.json")
    retime(third, "2026-12-01T12:00:00+00:00")
    result = compare_files([str(third), str(before), str(after)])
    assert [(s.before.name, s.after.name) for s in result.before_after] == [(str(before), str(after)),
                                                                            (str(after), str(third))]
    last = result.before_after[1]
    assert last.appeared == last.went_away == last.changed == [] and len(last.stayed) == 5
    [kept] = [i for i in last.stayed if i.after.dumps]
    assert (kept.dumps_still_there, kept.dumps_since) == (2, "2026-12-01T11:00:00+00:00")
    assert "2 dump files still there since 2026-12-01T11:00:00+00:00" in run_cli(
        "compare", str(third), str(before), str(after)).stdout

    # Equal times: the command line's order, and said so.
    retime(after, "2026-12-01T10:00:00+00:00")
    result = compare_files([str(after), str(before)])
    [step] = result.before_after
    assert (step.before.name, step.after.name, step.order) == (str(after), str(before), "command line")
    assert [rel.get(i.path) for i in step.appeared] == ["m8"]  # seen the other way round
    assert any("order given on the command line" in n for n in result.notes)
    # The same report twice: nothing changed, exit 0.
    same = run_cli("compare", str(before), str(before))
    assert same.returncode == 0 and "nothing changed between the two reports" in same.stdout


def test_different_venvs_keep_the_majority_view_and_a_mix_gets_both(tmp_path, wheels, uv_cache):
    a = machine(tmp_path / "a", "1.1", wheels, uv_cache)
    b = machine(tmp_path / "b", "1.1", wheels, uv_cache)
    ra = audit_json(a, tmp_path / "a.json")
    edit(site(b) / "fleetpkg" / "m2.py", "# hotfix\n")
    rb = audit_json(b, tmp_path / "b.json")
    result = compare_files([str(ra), str(rb)])
    assert result.mode == "majority" and result.before_after == []
    assert [(o.machine, o.relpath) for o in result.outliers] == [(str(rb), "fleetpkg/m2.py")]

    # A second report of a, later, with a drift of its own: a's before/after, and a against b by
    # a's newest report.
    edit(site(a) / "fleetpkg" / "m4.py", "# later\n")
    ra2 = audit_json(a, tmp_path / "a2.json")
    retime(ra, "2026-12-01T10:00:00+00:00")
    retime(ra2, "2026-12-01T12:00:00+00:00")
    result = compare_files([str(ra2), str(rb), str(ra)])
    assert result.mode == "mixed"
    [step] = result.before_after
    assert (step.before.name, step.after.name) == (str(ra), str(ra2))
    assert [i.path for i in step.appeared] == [str(site(a) / "fleetpkg" / "m4.py")]
    assert step.went_away == step.changed == step.stayed == []
    # The newest of a against b.
    # Each path on one of two: "as RECORD says" wins the tie, the drifted one is the odd one out.
    assert sorted((o.machine, o.relpath) for o in result.outliers) == sorted([
        (str(ra2), "fleetpkg/m4.py"), (str(rb), "fleetpkg/m2.py")])
    assert [m.name for m in result.machines] == [str(ra2), str(rb), str(ra)]
    text = run_cli("compare", str(ra2), str(rb), str(ra)).stdout
    assert "before/after: 1 drift appeared, 0 went away, 0 changed, 0 stayed" in text
    assert "2 environments (the newest report of each) compared" in text


def test_before_after_of_hostile_reports_is_inert_and_orders_by_command_line(tmp_path, wheels, uv_cache):
    venv = machine(tmp_path / "ml-env", "1.1", wheels, uv_cache)
    edit(site(venv) / "fleetpkg" / "m1.py", "# edit\n")
    report = audit_json(venv, tmp_path / "r.json")
    doc = json.loads(report.read_text())
    first, second = dict(doc), dict(doc)
    first["generated_at"] = "not a time"
    second["generated_at"] = 17
    second["drifts"] = doc["drifts"] + [
        "a string", {"kind": 5}, {"path": None},
        {"path": "/x\x1b[2J\nfake line", "kind": "added\x07", "actual": {"hash": ["x"]}, "prediction": {"a": 1},
         "artifacts": ["/d\x1b]0;t\x07", 3], "distribution": {"name": 1}}]
    (tmp_path / "first.json").write_text(json.dumps(first))
    (tmp_path / "second.json").write_text(json.dumps(second))
    args = [str(tmp_path / "first.json"), str(tmp_path / "second.json")]
    result = compare_files(args)
    [step] = result.before_after
    assert (step.before.name, step.after.name, step.order) == (args[0], args[1], "command line")
    assert [i.path for i in step.appeared] == ["/x\x1b[2J\nfake line"]
    assert step.appeared[0].after.dumps == ["/d\x1b]0;t\x07"] and step.appeared[0].after.hash is None
    assert len(step.stayed) == len(doc["drifts"]) and step.changed == step.went_away == []
    for fmt in ("text", "markdown", "json"):
        done = run_cli("compare", *args, "--format", fmt)
        assert done.returncode == 1, done.stderr
        assert "Traceback" not in done.stderr + done.stdout
        if fmt != "json":
            assert "\x1b" not in done.stdout and "\x07" not in done.stdout and "\nfake line" not in done.stdout
    md = run_cli("compare", *args, "--format", "markdown").stdout
    assert "| appeared |" in md and "1 drift appeared, 0 went away, 0 changed, 1 stayed" in md


def test_a_report_gone_before_its_second_read_is_an_error_not_a_traceback(tmp_path, wheels, uv_cache):
    venv = machine(tmp_path / "ml-env", "1.1", wheels, uv_cache)
    edit(site(venv) / "fleetpkg" / "m1.py", "# edit\n")
    first = audit_json(venv, tmp_path / "first.json")
    second = audit_json(venv, tmp_path / "second.json")

    def progress(done: int, total: int) -> None:
        if done == 2:  # both read once: the second one is replaced before before/after reads it again
            second.write_text("{not json")

    result = compare_files([str(first), str(second)], progress=progress)
    assert result.mode == "before-after" and result.before_after == []
    assert [e.path for e in result.errors] == [str(second)] and "second read" in result.errors[0].message
