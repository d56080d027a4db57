"""Globs of what dump calls write, the too-broad check, and finding leftovers on disk."""

from __future__ import annotations

import os

import libcst as cst
import pytest

from driftscan.lint import find_artifacts, inspect_source, is_too_broad
from driftscan.lint.artifacts import artifact_pattern
from driftscan.lint.context import FileContext


def glob_of(expr: str, prelude: str = "") -> str | None:
    ctx = FileContext("<t>")
    module = cst.parse_module(prelude)
    for stmt in module.body:  # let the context see imports and assignments
        for small in getattr(stmt, "body", ()):
            for hook in ("visit_Import", "visit_ImportFrom", "visit_Assign"):
                if type(small).__name__ == hook[6:]:
                    getattr(ctx, hook)(small)
    return ctx.path_info(cst.parse_expression(expr)).glob


@pytest.mark.parametrize(
    ("expr", "prelude", "expected"),
    [
        ('"/tmp/q.pt"', "", "/tmp/q.pt"),
        ('f"/tmp/nomla_{self._n}_{x.shape[0]}.pt"', "", "/tmp/nomla_*_*.pt"),
        ('f"/tmp/{name}"', "", "/tmp/*"),
        ('"/tmp/state_%d_%s.pkl" % (i, tag)', "", "/tmp/state_*_*.pkl"),
        ('"/tmp/100%%_%05.2f.txt" % x', "", "/tmp/100%_*.txt"),
        ('"/tmp/{}_{:03d}.npy".format(a, b)', "", "/tmp/*_*.npy"),
        ('"/tmp/{{x}}_{}.npy".format(a)', "", "/tmp/{x}_*.npy"),
        ('os.path.join("/tmp", "dump", f"q{i}.pt")', "import os", "/tmp/dump/q*.pt"),
        ('os.path.join(base, "/tmp/abs.pt")', "import os", "/tmp/abs.pt"),
        ('Path("/tmp/d") / "a" / f"{k}.pt"', "from pathlib import Path", "/tmp/d/a/*.pt"),
        ('pathlib.Path("/tmp").joinpath("x.bin")', "import pathlib", "/tmp/x.bin"),
        ('"/tmp/" + name + ".pt"', "", "/tmp/*.pt"),
        ('"/tmp/" "concat.pt"', "", "/tmp/concat.pt"),
        ("path", 'path = f"/tmp/h_{i}.pt"', "/tmp/h_*.pt"),
        ("str(p)", 'p = "/tmp/s.pt"', "/tmp/s.pt"),
        ('"/tmp/[weird]*.pt"', "", "/tmp/[[]weird][*].pt"),
        ("filename", "", None),
        ("get_path()", "", None),
    ],
)
def test_glob_of_path_expressions(expr, prelude, expected):
    assert glob_of(expr, prelude) == expected


def test_self_referencing_assignment_terminates():
    assert glob_of("p", "p = p + 'x'").startswith("*x")


@pytest.mark.parametrize(
    ("pattern", "broad"),
    [
        ("/tmp/q.pt", False),
        ("/tmp/nomla_*_*.pt", False),
        ("/tmp/*", True),
        ("/*", True),
        ("/tmp/*.pt", True),
        ("/tmp/*_*.npy", True),
        ("/tmp/*/*", True),
        ("/tmp/dumps/*.pt", True),
        ("/tmp/*/layer_*.pt", False),
        ("/tmp/[*].pt", False),  # an escaped literal "*"
        ("relative/x_*.pt", True),
        ("/tmp/**/x.pt", True),
        ("/", True),
        ("~/dumps/q_*.pt", False),
    ],
)
def test_too_broad(pattern, broad):
    assert is_too_broad(pattern) is broad
    assert artifact_pattern(pattern) == (None if broad else pattern)


def test_find_artifacts(tmp_path):
    for name, size in [("nomla_1_7.pt", 10), ("nomla_2_7.pt", 20), ("other.pt", 5)]:
        (tmp_path / name).write_bytes(b"x" * size)
    (tmp_path / "nomla_dir_x.pt").mkdir()  # directories are not artifacts
    os.symlink(tmp_path / "other.pt", tmp_path / "nomla_link_1.pt")  # nor are symlinks
    group = find_artifacts(str(tmp_path / "nomla_*_*.pt"))
    assert group is not None and not group.too_broad
    assert [os.path.basename(p) for p in group.paths] == ["nomla_1_7.pt", "nomla_2_7.pt"]
    assert group.total_bytes == 30
    assert find_artifacts(str(tmp_path / "absent_*.pt")) is None
    broad = find_artifacts(str(tmp_path / "*.pt"))
    assert broad is not None and broad.too_broad and broad.paths == () and broad.total_bytes == 0


def test_findings_carry_artifact_patterns_only_when_specific():
    code = """import torch, numpy as np
torch.save(a, f"/tmp/nomla_{self._n}_{x.shape[0]}.pt")
torch.save(b, "/tmp/q.pt")
torch.save(c, f"/tmp/{name}")
np.save(f"dumps/{i}.npy", d)
"""
    patterns = {f.line: f.artifact_pattern for f in inspect_source(code) if f.code == "DBG101"}
    # Line 5 names a dump directory but is relative: nothing to look for on disk.
    assert patterns == {2: "/tmp/nomla_*_*.pt", 3: "/tmp/q.pt", 4: None, 5: None}
    (broad,) = [f for f in inspect_source(code) if f.line == 4]
    assert "too unspecific" in broad.message
