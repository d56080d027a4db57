"""compare.inputs: another machine's report or snapshot read into a Machine and its facts.
Inputs are data from machines nobody has to trust: malformed values are skipped and counted,
unreadable files are one InputError."""

from __future__ import annotations

import json
import os

import pytest

from driftscan.compare import inputs as compare_inputs
from driftscan.compare.inputs import (ABSENT, AS_REFERENCE, BY_NAME, EXTERNAL, SITE_PACKAGES, VENV, InputError,
                                      InputKind, LazyArray, canonical, kind_of, load, report_facts,
                                      report_machine, snapshot_facts, snapshot_machine)

SP = "/srv/venv/lib/python3.12/site-packages"


def report_doc(**extra):
    doc = {
        "schema_version": "1",
        "tool": {"name": "driftscan", "version": "0"},
        "hostname": "gpu-01",
        "target": {"venv": "/srv/venv", "site_packages": [SP], "python_version": "3.12.3",
                   "model_dirs": ["/models/Llama-3-8B", "/other/Llama-3-8B/"]},
        "summary": {"files_checked": 1234},
        "distributions": [{"name": "Torch_Utils", "version": "2.1"}, {"name": "vllm", "version": "0.6"}],
        "drifts": [
            {"path": f"{SP}/vllm/layers.py", "relpath": "vllm/layers.py", "kind": "modified", "scope": "package",
             "distribution": {"name": "vllm", "version": "0.6"}, "actual": {"hash": "sha256=aa", "size": 3}},
            {"path": f"{SP}/vllm/gone.py", "relpath": "vllm/gone.py", "kind": "missing", "scope": "package",
             "distribution": {"name": "vllm", "version": "0.6"}},
            {"path": f"{SP}/stray.py", "kind": "added", "scope": "environment", "actual": {"size": 7}},
            {"path": "/srv/venv/bin/tool", "kind": "modified", "actual": {"xxh3_128": "ff"}},
            {"path": "/models/Llama-3-8B/config.json", "kind": "modified", "scope": "data", "actual": {}},
            {"path": "/tmp/dump_1.pt", "kind": "debug-artifacts", "scope": "external"},
        ],
    }
    doc.update(extra)
    return doc


def test_kind_of_recognises_reports_and_snapshots():
    assert kind_of(report_doc()) is InputKind.REPORT
    assert kind_of({"manifest_version": "1", "root": "/x", "files": {}}) is InputKind.SNAPSHOT
    assert kind_of({"bundle_version": "1", "roots": []}) is InputKind.SNAPSHOT
    for doc in ([], "text", {"schema_version": "1", "tool": {"name": "other"}, "drifts": []},
                {"schema_version": "1", "tool": {"name": "driftscan"}, "drifts": "all"}):
        with pytest.raises(InputError, match="neither"):
            kind_of(doc)
    assert set(BY_NAME) == set(InputKind)


def test_canonical_names():
    assert canonical("Torch_Utils") == canonical("torch-utils") == canonical("torch.utils") == "torch-utils"


def test_report_machine_reads_who_and_what():
    machine = report_machine(0, "a.json", report_doc())
    assert machine.source is InputKind.REPORT and machine.hostname == "gpu-01"
    assert machine.python_version == "3.12.3" and machine.files == 1234
    assert machine.versions == {"torch-utils": "2.1", "vllm": "0.6"}
    assert machine.display["torch-utils"] == "Torch_Utils"
    assert machine.roots[VENV] == "/srv/venv" and machine.roots[SITE_PACKAGES] == SP
    assert machine.roots["model:Llama-3-8B"] == "/models/Llama-3-8B"
    assert machine.roots["model:Llama-3-8B#2"] == "/other/Llama-3-8B/", "two models of one name both kept"


def test_report_facts_group_by_root_and_relpath():
    machine = report_machine(0, "a.json", report_doc())
    facts = {fact[0]: fact for fact in report_facts(machine, report_doc())}
    layers = facts[(SITE_PACKAGES, "vllm/layers.py")]
    assert layers[1] == "vllm" and layers[2] == ("modified", "sha256=aa") and layers[3] == "package"
    assert layers[4] == AS_REFERENCE, "a machine not listing a modified file has it as recorded"
    assert facts[(SITE_PACKAGES, "vllm/gone.py")][2] == ("missing",)
    stray = facts[(SITE_PACKAGES, "stray.py")]
    assert stray[2] == ("added", "size=7") and stray[4] == ABSENT, "an added file is absent where not listed"
    assert facts[(VENV, "bin/tool")][2] == ("modified", "xxh3_128:ff"), "the nearest root wins over the venv"
    assert facts[("model:Llama-3-8B", "config.json")][2] == ("modified", None)
    assert facts[(EXTERNAL, "/tmp/dump_1.pt")][4] == ABSENT


def test_a_root_written_with_a_trailing_slash_cuts_relpaths_at_the_slash():
    """A report without relpaths (older or hand-written) whose roots end in "/": the path below
    the root keeps its first character."""
    doc = report_doc(target={"site_packages": [SP + "/"], "model_dirs": ["/models/m/"]},
                     drifts=[{"path": f"{SP}/six.py", "kind": "modified"},
                             {"path": "/models/m/config.json", "kind": "modified"}])
    facts = {fact[0] for fact in report_facts(report_machine(0, "a.json", doc), doc)}
    assert facts == {(SITE_PACKAGES, "six.py"), ("model:m", "config.json")}


def test_malformed_report_entries_are_counted_not_raised():
    doc = report_doc(distributions=[{"name": 3, "version": "1"}, "x", {"name": "ok", "version": "1"}],
                     drifts=[None, {"path": 5, "kind": "modified"}, {"path": "/x"}, {"path": "/y", "kind": "added",
                             "actual": {"size": True}, "distribution": "vllm"}],
                     target="not a dict", summary={"files_checked": True}, hostname=["h"])
    machine = report_machine(0, "bad.json", doc)
    assert machine.skipped_entries == 2
    assert machine.versions == {"ok": "1"} and machine.roots == {} and machine.files is None
    assert machine.hostname is None and machine.python_version is None
    facts = list(report_facts(machine, doc))
    assert machine.skipped_entries == 5
    assert facts == [((EXTERNAL, "/y"), None, ("added", None), None, ABSENT, "/y")], "a bool is not a size"


def test_older_report_without_distributions_says_nothing_of_versions():
    doc = report_doc()
    del doc["distributions"]
    machine = report_machine(0, "old.json", doc)
    assert machine.versions is None
    list(report_facts(machine, doc))
    assert machine.versions is None


def test_two_metadata_directories_of_one_name_join_versions():
    doc = report_doc(distributions=[{"name": "pkg", "version": "2.0"}, {"name": "PKG", "version": "1.0"}])
    assert report_machine(0, "r", doc).versions["pkg"] == "1.0+2.0"


def snapshot_doc():
    site = "lib/python3.12/site-packages/"
    files = {
        "pyvenv.cfg": {"xxh3_128": "c0"},
        f"{site}vllm-0.6.dist-info/METADATA": {"xxh3_128": "m1"},
        f"{site}vllm-0.6.dist-info/top_level.txt": {"xxh3_128": "t1", "text": "vllm\n_vllm_C\n"},
        f"{site}vllm/layers.py": {"xxh3_128": "l1"},
        f"{site}_vllm_C.so": {"xxh3_128": "so"},
        f"{site}vllm/__pycache__/layers.cpython-312.pyc": {"xxh3_128": "pyc"},
        f"{site}loose.py": {"xxh3_128": "lo"},
        "bin/python": {"xxh3_128": "x", "link": "python3.12"},
        "bin/__pycache__/x.cpython-312.pyc": {"xxh3_128": "pyc2"},
        "bad-entry": "not a dict",
        f"{site}no-digest.py": {"size": 1},
    }
    return {"manifest_version": "1", "root": "/srv/venv", "hostname": "gpu-02", "files": files}


def test_snapshot_machine_finds_roots_python_and_versions():
    machine = snapshot_machine(1, "s.json", snapshot_doc())
    assert machine.source is InputKind.SNAPSHOT and machine.hostname == "gpu-02"
    assert machine.roots == {VENV: "/srv/venv", SITE_PACKAGES: "/srv/venv/lib/python3.12/site-packages"}
    assert machine.python_version == "3.12"
    assert machine.versions == {"vllm": "0.6"}
    assert machine.files == len(snapshot_doc()["files"])


def test_snapshot_facts_owners_bytecode_and_links():
    doc = snapshot_doc()
    machine = snapshot_machine(1, "s.json", doc)
    facts = {fact[0]: fact for fact in snapshot_facts(machine, doc)}
    assert facts[(SITE_PACKAGES, "vllm/layers.py")][1:4] == ("vllm", "l1", "package")
    assert facts[(SITE_PACKAGES, "_vllm_C.so")][1] == "vllm", "top_level.txt names the extension module"
    assert facts[(SITE_PACKAGES, "loose.py")][1:4] == (None, "lo", "environment")
    assert facts[(VENV, "bin/python")][2] == "link:python3.12"
    assert not any(key[1].endswith(".pyc") for key in facts), "bytecode is never compared"
    assert machine.skipped_entries == 2, "the entry that is not a dict and the one without a digest"


def test_bundle_with_a_model_dir():
    doc = {"bundle_version": "1", "roots": [
        {"kind": "model-dir", "manifest": {"root": "/models/Qwen", "files": {"config.json": {"xxh3_128": "q"}}}},
        {"kind": "model-dir", "manifest": {"root": 3, "files": {}}},
        "junk",
    ]}
    machine = snapshot_machine(0, "b.json", doc)
    assert machine.roots == {"model:Qwen": "/models/Qwen"} and machine.skipped_entries == 1
    assert list(snapshot_facts(machine, doc)) == [(("model:Qwen", "config.json"), None, "q", "data", ABSENT, None)]
    with pytest.raises(InputError, match="unknown version"):
        snapshot_machine(0, "b.json", {"bundle_version": "2", "roots": []})


def test_load_reads_json_and_refuses_the_rest(tmp_path):
    good = tmp_path / "r.json"
    good.write_text(json.dumps(report_doc()))
    assert load(str(good))["hostname"] == "gpu-01"
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="not valid JSON"):
        load(str(bad))
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputError, match="nested too deeply"):
        load(str(deep))
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(InputError, match="cannot read"):
        load(str(tmp_path / "fifo"))
    with pytest.raises(InputError, match="cannot read"):
        load(str(tmp_path / "absent.json"))


def test_the_versions_compare_reads_are_the_ones_driftscan_writes():
    from driftscan.formats.manifest import MANIFEST_VERSION
    from driftscan.report.contract import SCHEMA_VERSION
    from driftscan.snapshot.run import BUNDLE_VERSION

    assert (compare_inputs.SCHEMA_VERSION, compare_inputs.MANIFEST_VERSION, compare_inputs.BUNDLE_VERSION) == \
        (SCHEMA_VERSION, MANIFEST_VERSION, BUNDLE_VERSION)


@pytest.mark.parametrize("doc, message", [
    (report_doc(schema_version="2"), "an audit report of schema_version \"2\""),
    (report_doc(schema_version=2), "an audit report of schema_version 2;"),
    ({**snapshot_doc(), "manifest_version": "9"}, "a snapshot of manifest_version \"9\""),
    ({"bundle_version": "2", "roots": []}, "a snapshot bundle of bundle_version \"2\""),
    ({"bundle_version": {"x": 1}, "roots": []}, "a snapshot bundle of bundle_version dict"),
])
def test_an_input_of_a_version_this_driftscan_does_not_read_is_an_input_error(doc, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        kind_of(doc)


def test_compare_files_lists_an_unknown_version_and_compares_the_rest(tmp_path):
    from driftscan.compare import compare_files

    paths = []
    for name, doc in (("a", report_doc()), ("new", report_doc(schema_version="2")), ("b", report_doc()),
                      ("bundle", {"bundle_version": "3", "roots": []})):
        paths.append(str(tmp_path / f"{name}.json"))
        (tmp_path / f"{name}.json").write_text(json.dumps(doc))
    out = compare_files(paths)
    assert [m.name for m in out.machines] == [paths[0], paths[2]]
    assert [e.path for e in out.errors] == [paths[1], paths[3]]


@pytest.mark.parametrize("text", [
    '{"drifts": []}', '{ "drifts" : [ ] , "x": 1 }', '{"drifts": [{"a": [1, {"b": "]"}]}, 2, "s,]"]}',
    '{"drifts": 3}', '{"drifts": [1], "drifts": [2, 3]}', '\n{\n  "a": {"drifts": [1]},\n  "drifts": [\n    1\n  ]\n}\n',
    '{}', '[1, 2]', '"x"', '{"drifts": [1, 2, 3]}'])
def test_load_reads_drifts_lazily_as_json_would(tmp_path, text):
    path = tmp_path / "r.json"
    path.write_text(text)
    doc = load(str(path))
    if isinstance(doc, dict) and isinstance(doc.get("drifts"), LazyArray):
        doc = {**doc, "drifts": list(doc["drifts"])}
        assert list(load(str(path))["drifts"]) == doc["drifts"], "iterable again"
    assert doc == json.loads(text)


@pytest.mark.parametrize("text", ['{"drifts": [1, 2', '{"drifts": [1 2]}', '{"drifts": [1,]}', '{"drifts": [1]',
                                  '{"drifts": [1]} x', '{"drifts" [1]}', '{1: 2}', '{"a": 1,}', '{"drifts": [nope]}'])
def test_load_refuses_invalid_json_around_and_inside_the_lazy_array(tmp_path, text):
    path = tmp_path / "r.json"
    path.write_text(text)
    with pytest.raises(InputError, match="not valid JSON"):
        load(str(path))
