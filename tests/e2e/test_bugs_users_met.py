"""Bugs users met, each through the real command line where a user met it.

- ``-o FILE`` was written 0600 (mkstemp's mode), and made an existing 0644 file 0600;
- ``-o`` errors named driftscan's temporary file, not the path given;
- ``--ignore DBG10`` (or a ``--select`` without the dump rules) made dumps vanish from the report;
- ``--rules-module json`` (no rules in it) was accepted silently;
- a model directory's git error was printed twice (unverifiable and could-not-check).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from driftscan import ConfigError, audit
from driftscan.fs.atomic import write_atomic
from driftscan.lint.registry import rules_from_spec
from fixtures.harness import run_cli
from fixtures.modeldirs import build_git_clone, seed_files


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


@pytest.fixture
def site(tmp_path) -> Path:
    site = tmp_path / "site"
    (site / "pkg").mkdir(parents=True)
    (site / "pkg" / "ok.py").write_text("X = 1\n")
    return site


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


# ---- -o FILE ----------------------------------------------------------------------------------

def test_output_file_gets_the_usual_mode_and_keeps_an_existing_ones(tmp_path, site, umask_022):
    new = tmp_path / "new.json"
    proc = run_cli("audit", "--site-packages", str(site), "--format", "json", "-o", str(new))
    assert proc.returncode == 1, proc.stderr
    assert _mode(new) == 0o644  # 0666 less the umask, like any file a program creates (was 0600)
    json.loads(new.read_text())

    for mode in (0o644, 0o640, 0o664):
        existing = tmp_path / f"existing-{mode:o}.json"
        existing.write_text("old")
        existing.chmod(mode)
        proc = run_cli("audit", "--site-packages", str(site), "--format", "json", "-o", str(existing))
        assert proc.returncode == 1, proc.stderr
        assert _mode(existing) == mode and existing.read_text() != "old"


def test_write_atomic_modes(tmp_path, umask_022):
    os.umask(0o027)
    write_atomic(str(tmp_path / "a.txt"), "x")
    assert _mode(tmp_path / "a.txt") == 0o640
    write_atomic(str(tmp_path / "b.txt"), "x", mode=0o644)  # an explicit mode for a new file (snapshots)
    assert _mode(tmp_path / "b.txt") == 0o644
    (tmp_path / "b.txt").chmod(0o600)
    write_atomic(str(tmp_path / "b.txt"), b"bytes too", mode=0o644)  # an existing file keeps its own
    assert _mode(tmp_path / "b.txt") == 0o600 and (tmp_path / "b.txt").read_bytes() == b"bytes too"
    link = tmp_path / "link.txt"
    link.symlink_to(tmp_path / "b.txt")
    write_atomic(str(link), "via the link")  # the target is written, with its mode; the link stays
    assert link.is_symlink() and (tmp_path / "b.txt").read_text() == "via the link" and _mode(tmp_path / "b.txt") == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".driftscan-")] == []


def test_output_errors_name_the_path_given(tmp_path, site):
    out = tmp_path / "no-such-dir" / "report.json"
    proc = run_cli("audit", "--site-packages", str(site), "--format", "json", "-o", str(out))
    assert proc.returncode == 2
    assert proc.stderr == f"driftscan: error: {out}: No such file or directory\n"
    assert ".driftscan-" not in proc.stderr
    with pytest.raises(FileNotFoundError) as caught:
        write_atomic(str(out), "x")
    assert caught.value.filename == str(out)


# ---- rule selection never hides drift -----------------------------------------------------------

@pytest.fixture
def dumping(site, tmp_path):
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    (site / "pkg" / "model.py").write_text(
        "import torch\n\n\nclass M:\n    def forward(self, x):\n        self._n += 1\n"
        f"        torch.save(x, f\"{dumps}/nomla_{{self._n}}.pt\")\n        return x\n")
    for i in range(2):
        (dumps / f"nomla_{i}.pt").write_bytes(b"\0" * 100)
    return site, dumps


@pytest.mark.parametrize("selection", [["--ignore", "DBG10"], ["--ignore", "DBG101"], ["--ignore", "DBG"],
                                       ["--select", "DBG103"]])
def test_rule_selection_never_hides_the_dumps(dumping, selection):
    site, dumps = dumping
    proc = run_cli("audit", "--site-packages", str(site), "--format", "json", *selection)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    [dump] = [d for d in report["drifts"] if d["kind"] == "debug-artifacts"]
    assert dump["artifacts"] == [str(dumps / "nomla_0.pt"), str(dumps / "nomla_1.pt")]
    assert dump["actual"]["written_by"][0]["code"] == "DBG101"  # what wrote them, though not reported
    model = next(d for d in report["drifts"] if d["relpath"] == "pkg/model.py")
    assert "DBG101" not in {f["code"] for f in model["findings"]}  # the selection still picks the findings


def test_selection_still_picks_the_findings(dumping):
    site, _ = dumping
    report = audit(site_packages=[str(site)], select=["DBG101"])
    model = next(d for d in report.drifts if d.relpath == "pkg/model.py")
    assert {f.code for f in model.findings} == {"DBG101"}
    assert len([d for d in report.drifts if d.kind.value == "debug-artifacts"]) == 1


# ---- --rules-module with no rules ----------------------------------------------------------------

def test_a_rules_module_without_rules_is_an_error(site):
    with pytest.raises(ConfigError, match="^module json defines no driftscan rules$"):
        rules_from_spec("json")
    proc = run_cli("scan", str(site), "--rules-module", "json")
    assert proc.returncode == 2
    assert proc.stderr == "driftscan: error: module json defines no driftscan rules\n"


# ---- a model directory's git error, once ---------------------------------------------------------

def _lines_with(text: str, needle: str) -> list[str]:
    return [line for line in text.splitlines() if needle in line]


def test_broken_head_is_one_line_with_gits_message_once(tmp_path):
    model = tmp_path / "model"
    build_git_clone(model, seed_files())
    (model / ".git" / "refs" / "heads" / "master").write_text("1" * 40 + "\n")  # HEAD names no object
    (model / ".git" / "refs" / "heads" / "main").write_text("1" * 40 + "\n")
    proc = run_cli("audit", "--model-dir", str(model))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    [line] = _lines_with(proc.stdout, "git cannot compare")
    assert line.strip().startswith(f"{model}: git cannot compare against HEAD: ")
    assert "unverifiable (" not in proc.stdout and proc.stdout.count("fatal:") == 1
    assert "'" not in line and '"' not in line  # no nested quoting of git's message
    data = json.loads(run_cli("audit", "--model-dir", str(model), "--format", "json").stdout)
    assert len(data["errors"]) == 1 and data["unverifiable"] == []


def test_unknown_revision_is_named_once(tmp_path):
    model = tmp_path / "model"
    build_git_clone(model, seed_files())
    proc = run_cli("audit", "--model-dir", str(model), "--revision", "no-such-branch")
    assert proc.returncode == 2
    [line] = _lines_with(proc.stdout, "no-such-branch")
    assert line.strip() == (f"{model}: git cannot compare against no-such-branch: no such commit, branch or tag "
                            "in this repository")
