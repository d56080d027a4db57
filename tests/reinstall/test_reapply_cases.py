"""``driftscan reapply`` on ``edgepkg``: what the default leaves out, sources in other encodings, a
.pth importing a debug helper, files not applied, the ledger, names other modules read.

A real wheel (fixtures/wheels.py), real pip in a venv copied from one made by venvs.make_pip_venv,
the real CLI where the exit status or the text is the point.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from driftscan import api
from fixtures import venvs
from fixtures.upgrades import by_rel, cli, install, own_env, pip_venv, reapply, site_of
from fixtures.wheels import build_wheel

EXIT_DRIFT, EXIT_INCOMPLETE = 1, 2
MOD, LAT, CPX, BOM, A, B, GONE = ("edgepkg/mod.py", "edgepkg/lat.py", "edgepkg/cpx.py", "edgepkg/bom.py",
                                  "edgepkg/a.py", "edgepkg/b.py", "edgepkg/gone.py")
PROBE, PTH, NOTES = "edgepkg_probe.py", "edgepkg_probe.pth", "edgepkg/notes.txt"

MOD_SOURCE = '"""Mod."""\n\n\ndef scale(y, factor):\n    out = y * factor\n    return out\n'
MOD_EDITED = ('"""Mod."""\nimport json\n\n\ndef scale(y, factor):\n    out = y * abs(factor)\n'
              '    print("scale", out.shape)\n    json.dump({"f": factor}, open("/tmp/edge_mod.json", "w"))\n'
              '    return out\n')
MOD_KEPT = '"""Mod."""\n\n\ndef scale(y, factor):\n    out = y * abs(factor)\n    return out\n'


def coded(cookie: str, literal: str) -> str:
    """A module with an encoding cookie and one non-ASCII character."""
    return f'{cookie}"""Coded: {literal}."""\nimport torch\n\n\ndef keep(y):\n    return y\n'


CODED = {LAT: ("# -*- coding: latin-1 -*-\n", "caf\u00e9", "latin-1"),
         CPX: ("# coding: cp1252\n", "\u20ac 5", "cp1252"),
         BOM: ("", "na\u00efve", "utf-8-sig")}


def coded_bytes(rel: str, edit: str = "") -> bytes:
    cookie, literal, encoding = CODED[rel]
    text = coded(cookie, literal).replace("    return y\n", edit + "    return y\n")
    return text.encode(encoding)


CODED_FIX = "    y = y.float()\n"
CODED_DEBUG = '    torch.save(y, "/tmp/edge_coded.pt")\n'
A_SOURCE = '"""A."""\nimport torch\n\nLIMIT = 3\n\n\ndef run(y):\n    return y\n'
A_EDITED = A_SOURCE.replace("LIMIT = 3\n", 'LIMIT = 3\nRETRIES = 5\ntorch.save(torch.zeros(RETRIES), "/tmp/edge_r.pt")\n')
A_KEPT = A_SOURCE.replace("LIMIT = 3\n", "LIMIT = 3\nRETRIES = 5\n")
B_SOURCE = '"""B."""\nfrom . import a\n\n\ndef retries():\n    return a.RETRIES if hasattr(a, "RETRIES") else a.LIMIT\n'
GONE_SOURCE = "def g():\n    return 1\n"
PROBE_SOURCE = 'import pickle\n\n\ndef dump(x):\n    pickle.dump(x, open("/tmp/edge_probe.pkl", "wb"))\n'
PTH_SOURCE = "import edgepkg_probe\n"


def files(version: str) -> dict[str, str | bytes]:
    out: dict[str, str | bytes] = {"edgepkg/__init__.py": f"__version__ = {version!r}\n", MOD: MOD_SOURCE,
                                   A: A_SOURCE, B: B_SOURCE, GONE: GONE_SOURCE}
    out.update({rel: coded_bytes(rel) for rel in CODED})
    if version != "1.0":
        del out[GONE]  # the upgrade drops the module the user had patched
    return out


@pytest.fixture(scope="module")
def house(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("edge-wheels")
    for version in ("1.0", "1.1"):
        build_wheel(dest, "edgepkg", version, files(version))
    return dest








def edit(site: Path) -> None:
    (site / MOD).write_text(MOD_EDITED)
    for rel in CODED:
        (site / rel).write_bytes(coded_bytes(rel, CODED_FIX + CODED_DEBUG))
    (site / A).write_text(A_EDITED)
    (site / GONE).write_text(GONE_SOURCE.replace("1", "2"))
    (site / PROBE).write_text(PROBE_SOURCE)
    (site / PTH).write_text(PTH_SOURCE)
    (site / NOTES).write_text("notes\n")


def remove_added(site: Path) -> None:
    """What a fresh environment lacks: no reinstall removes files RECORD does not list."""
    for rel in (PROBE, PTH, NOTES):
        (site / rel).unlink(missing_ok=True)


def reinstall(venv: Path, house: Path, version: str = "1.0") -> None:
    install(venv, house, "--force-reinstall", "--no-deps", f"edgepkg=={version}")
    remove_added(site_of(venv))


@pytest.fixture()
def edited(tmp_path, tmp_path_factory, house):
    """A venv with edgepkg 1.0 edited, its checkpoint (originals from the wheel), and the CLI's env."""
    env = own_env(tmp_path)
    venv = pip_venv(tmp_path_factory, "edge")
    install(venv, house, "edgepkg==1.0")
    edit(site_of(venv))
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        written = api.checkpoint(str(tmp_path / "cp"), str(venv), wheels=[str(house)])
    assert all(f.original for f in written.index.files if f.kind == "modified"), written.index.files
    return venv, tmp_path / "cp", env


def expected_site(site: Path) -> None:
    assert (site / MOD).read_text() == MOD_KEPT
    for rel in CODED:
        assert (site / rel).read_bytes() == coded_bytes(rel, CODED_FIX), rel
    assert (site / A).read_text() == A_KEPT
    assert (site / GONE).read_text() == GONE_SOURCE.replace("1", "2")
    assert (site / NOTES).read_text() == "notes\n"
    assert not (site / PROBE).exists() and not (site / PTH).exists()


def test_before_any_reinstall_there_is_nothing_to_do(edited):
    venv, cp, env = edited
    code, report = reapply(str(cp), env=env)
    assert code == 0, report
    files = by_rel(report)
    for rel in (MOD, A, GONE, *CODED):
        assert files[rel]["status"] == "already", files[rel]
        assert files[rel]["reason"] == "the file still holds the checkpoint's content: nothing to do", files[rel]


def test_the_default_leaves_debug_code_out_in_any_encoding_and_keeps_what_others_read(edited, house):
    venv, cp, env = edited
    site = site_of(venv)
    reinstall(venv, house)
    code, report = reapply(str(cp), env=env)  # the dry run
    assert code == 0, report
    files = by_rel(report)
    for rel in (MOD, A, GONE, *CODED, NOTES):
        assert files[rel]["status"] == "planned", files[rel]
    for rel, (_, _, encoding) in CODED.items():
        assert files[rel]["action"] == "apply", files[rel]
        assert files[rel]["encoding"] == {"latin-1": "iso-8859-1"}.get(encoding, encoding), files[rel]
        assert [r["text"] for r in files[rel]["removed"]] == ['torch.save(y, "/tmp/edge_coded.pt")'], files[rel]
    # The print of a shape (DBG109, off in audit's default selection) is debug code too.
    assert {x["code"] for x in files[MOD]["findings"]} == {"DBG109", "DBG108"}, files[MOD]
    assert files[PROBE]["status"] == "skipped" and files[PROBE]["excluded_debug"], files[PROBE]
    # The .pth imports the helper left out: not recreated (every interpreter start would fail on it).
    assert files[PTH]["status"] == "skipped" and files[PTH]["excluded_debug"], files[PTH]
    assert "edgepkg_probe" in files[PTH]["reason"] and "ModuleNotFoundError" in files[PTH]["reason"]

    code, report = reapply(str(cp), "--yes", env=env)
    assert code == 0, report
    expected_site(site)
    assert "json" not in (site / MOD).read_text() and "print" not in (site / MOD).read_text()
    first = {p: p.read_bytes() for p in site.joinpath("edgepkg").iterdir() if p.is_file()}
    code, report = reapply(str(cp), "--yes", env=env)  # idempotent: nothing written
    assert code == 0, report
    assert {f["status"] for f in report["files"] if not f["excluded_debug"]} == {"already"}, report
    assert {p: p.read_bytes() for p in site.joinpath("edgepkg").iterdir() if p.is_file()} == first
    assert report["checkpoint"] is None


def test_keep_findings_writes_the_debug_code_back_and_lists_every_finding(edited, house):
    venv, cp, env = edited
    site = site_of(venv)
    reinstall(venv, house)
    proc = cli("reapply", str(cp), "--keep-findings", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "debug code written back: DBG109 line 7" in proc.stdout, proc.stdout
    assert "debug code written back: DBG108 line 8" in proc.stdout, proc.stdout
    code, report = reapply(str(cp), "--keep-findings", "--yes", env=env)
    assert code == 0, report
    files = by_rel(report)
    assert report["keep_findings"] is True
    assert {x["code"] for x in files[MOD]["written_findings"]} == {"DBG109", "DBG108"}
    assert [x["code"] for x in files[PROBE]["written_findings"]] == ["DBG101"]
    assert (site / MOD).read_text() == MOD_EDITED
    assert (site / PROBE).read_text() == PROBE_SOURCE and (site / PTH).read_text() == PTH_SOURCE
    for rel in CODED:
        assert (site / rel).read_bytes() == coded_bytes(rel, CODED_FIX + CODED_DEBUG)


def test_a_forged_ledger_does_not_stop_the_fix(edited, house):
    venv, cp, env = edited
    site = site_of(venv)
    reinstall(venv, house)
    code, _ = reapply(str(cp), "--yes", env=env)
    assert code == 0
    reinstall(venv, house)
    [ledger] = (Path(env["DRIFTSCAN_CACHE_DIR"]) / "reapply").glob("*.json")
    rows = json.loads(ledger.read_text())
    for rel, row in rows.items():  # each entry now says "reapply wrote this" of the unpatched file
        row["written"] = hashlib.sha256((venv / rel).read_bytes()).hexdigest()
    ledger.write_text(json.dumps(rows))
    code, report = reapply(str(cp), "--yes", env=env)
    assert code == 0, report
    assert by_rel(report)[MOD]["status"] == "applied", by_rel(report)[MOD]
    expected_site(site)


def test_what_is_not_applied_sets_bit_1(edited, house, tmp_path_factory):
    venv, cp, env = edited
    site = site_of(venv)
    install(venv, house, "--upgrade", "edgepkg==1.1")  # gone.py is gone
    remove_added(site)
    (site / NOTES).write_text("another file\n")  # its place taken
    proc = cli("reapply", str(cp), env=env)
    assert proc.returncode == EXIT_DRIFT, proc.stdout + proc.stderr
    assert "not applied" in proc.stdout.splitlines()[-1], proc.stdout
    code, report = reapply(str(cp), "--yes", env=env)
    assert code == EXIT_DRIFT, report
    files = by_rel(report)
    assert files[GONE]["status"] == "skipped" and "gone from the installed version" in files[GONE]["reason"]
    assert files[NOTES]["status"] == "skipped" and "a different file" in files[NOTES]["reason"]
    assert (site / NOTES).read_text() == "another file\n"
    assert files[MOD]["status"] == "applied" and (site / MOD).read_text() == MOD_KEPT

    # Another environment, without edgepkg at all: said on the first line; nothing applied, bit 1.
    other = pip_venv(tmp_path_factory, "edge-other")
    proc = cli("reapply", str(cp), "--venv", str(other), env=env)
    first = proc.stdout.splitlines()[0]
    assert "NOT the environment the checkpoint was taken of" in first and str(venv) in first, proc.stdout
    assert proc.returncode == EXIT_DRIFT, proc.stdout + proc.stderr
    assert "6 files not applied" in proc.stdout.splitlines()[-1], proc.stdout
    # "nothing to write" does not hide what is skipped.
    mod = next(f["relpath"] for f in report["files"] if f["relpath"].endswith(MOD))
    proc = cli("reapply", str(cp), "--venv", str(other), "--only", mod, env=env)
    assert proc.returncode == EXIT_DRIFT, proc.stdout + proc.stderr
    assert "nothing to write" in proc.stdout and "1 file not applied" in proc.stdout, proc.stdout
    code, report = reapply(str(cp), "--venv", str(other), "--yes", env=env)
    assert code == EXIT_DRIFT, report
    assert by_rel(report)[MOD]["status"] == "skipped" and "not installed" in by_rel(report)[MOD]["reason"]
    assert report["other_target"] == str(venv)


def test_a_result_its_declared_encoding_cannot_hold_is_refused():
    """The result is written in the encoding its own cookie (or BOM) declares, or not at all."""
    from driftscan.reinstall.reapply import _decode, _encode

    out, why = _encode('# coding: latin-1\nx = "\u20ac"\n', "m.py", "iso-8859-1")
    assert out is None and "latin-1" in why
    assert _encode('# coding: latin-1\nx = "\u00e9"\n', "m.py", "iso-8859-1") == \
        ('# coding: latin-1\nx = "\u00e9"\n'.encode("latin-1"), "")
    assert _encode('x = "\u00e9"\n', "m.py", "utf-8-sig")[0] == b"\xef\xbb\xbf" + 'x = "\u00e9"\n'.encode()
    assert _decode(b"# coding: klingon\nx = 1\n", "m.py")[0] is None  # an unknown encoding: not guessed
    assert _decode(b"\xe9\n", "notes.txt")[0] is None  # not Python: UTF-8 only


def test_names_another_module_reads_are_attributes_and_from_imports_not_prose():
    from driftscan.reinstall.reapply import names_defined, names_read

    data = (b'from .a import RETRIES, LIMIT as L\nimport json\n# cfg.enabled in a comment\n'
            b'x = "config.json"\nif obj.enabled:\n    from b import (TAIL,\n        HEAD)\n    raise E from err\n')
    assert names_read(data) >= {"RETRIES", "LIMIT", "enabled", "TAIL", "HEAD"}
    assert not names_read(data) & {"json", "L", "x", "obj", "err"}
    text = 'import os\nX = 1\nself_enabled = 2\nwith open(p) as f:\n    self.on = True\n'
    assert names_defined(text, {1, 2, 4, 5}) == {"X", "f", "on", "self"}  # an import is no definition


def test_only_names_another_module_can_read_are_candidates_to_keep():
    from driftscan.reinstall.reapply import names_defined

    text = ("import json\nRETRIES = 5\n\n\nclass A:\n    flag = False\n\n    def f(self):\n        global COUNT\n"
            "        out = 1\n        self.enabled = True\n        COUNT = out\n        for i in range(3):\n"
            "            pass\n")
    got = names_defined(text, set(range(1, 15)))
    assert got == {"RETRIES", "A", "flag", "f", "enabled", "COUNT"}, got  # no import, no local


def test_a_record_row_naming_a_module_outside_the_environment_is_not_read(tmp_path):
    from driftscan.core.values import Distribution, RecordEntry
    from driftscan.reinstall.checkpoint import CheckpointIndex
    from driftscan.reinstall.reapply import NameIndex

    env, outside = tmp_path / "env", tmp_path / "elsewhere"
    env.mkdir()
    outside.mkdir()
    (env / "b.py").write_text("import a\nprint(a.RETRIES)\n")
    (outside / "c.py").write_text("import a\nprint(a.SECRET)\n")
    dist = Distribution("pkg", "1.0", str(env / "pkg-1.0.dist-info"), str(env),
                        entries=(RecordEntry("b.py", None, None, 1), RecordEntry("../elsewhere/c.py", None, None, 2)))
    names = NameIndex(str(tmp_path / "cp"), CheckpointIndex(), str(env), (str(env),))
    assert names.read_elsewhere(str(env / "a.py"), dist, {"RETRIES", "SECRET"}) == {"RETRIES"}
