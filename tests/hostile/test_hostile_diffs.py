"""Diffs and patch application on inputs that make line matching quadratic or worse.

difflib's matcher walks, for each line of one side, every place that line has on the other; an edit
with many repeated lines and no runs in common calls it once per line. Each input below took more
than 30 s before its diff was bounded (measured in each builder's docstring); now each diff has a budget
of work (``formats/linediff.py``), past which the report says "diff too large" instead of the diff,
and a patch's offset search looks only where its rarest line is. Every case runs under
``fixtures/bounded.py``: a regression fails the test, not the machine.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from fixtures import venvs
from fixtures.bounded import driftscan_bounded, python_bounded
from fixtures.upgrades import no_caches, pip_venv
from fixtures.wheels import build_wheel

NAME, MODULE = "tablepkg", "tablepkg/table.py"


def interleaved(lines: int = 4000, distinct: int = 60) -> tuple[str, str]:
    """(original, edited): assignments drawn from ``distinct`` names (each line repeated, none
    common enough for difflib to set aside), edited by a new line after every line. 32 KB / 72 KB:
    difflib.unified_diff took 79 s, the patch diff 82 s."""
    draw = random.Random(1)
    original = [f"v{draw.randrange(distinct):02d} = 1\n" for _ in range(lines)]
    edited = [line for t, old in enumerate(original) for line in (old, f"t{t:06d} = {t}\n")]
    return "".join(original), "".join(edited)


def rewritten(lines: int = 18000) -> tuple[str, str]:
    """(original, edited): two lines in random order, rewritten in another random order, with a
    ``breakpoint()`` added: reapply's removal of the debug code aligned them with difflib without
    its popular-line heuristic (131 s at 18,000 lines, 2 s now)."""
    draw = random.Random(3)
    original = "".join(draw.choice(["x = 1\n", "y = 2\n"]) for _ in range(lines))
    edited = "".join(draw.choice(["x = 1\n", "y = 2\n"]) for _ in range(lines)) + "breakpoint()\n"
    return original, edited


# ------------------------------------------------------------------------------------ library calls

def test_a_text_diff_past_its_budget_says_so_instead_of_hanging():
    proc = python_bounded(
        "import random\n"
        "from driftscan.formats.jsondiff import describe\n"
        "draw = random.Random(1)\n"
        "original = [f'v{draw.randrange(60):02d} = 1\\n' for _ in range(4000)]\n"
        "edited = [line for t, old in enumerate(original) for line in (old, f't{t:06d} = {t}\\n')]\n"
        "print(describe(''.join(original).encode(), ''.join(edited).encode(), 'table.py').diff)\n",
        seconds=8, memory_mb=256)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("diff too large: 4000 to 11998 lines changed"), proc.stdout


def test_a_patch_diff_past_its_budget_is_a_patch_error():
    proc = python_bounded(
        "import random\n"
        "from driftscan.formats.patch import PatchError, make_patch\n"
        "draw = random.Random(1)\n"
        "original = [f'v{draw.randrange(60):02d} = 1\\n' for _ in range(4000)]\n"
        "edited = [line for t, old in enumerate(original) for line in (old, f't{t:06d} = {t}\\n')]\n"
        "try:\n"
        "    make_patch(''.join(original), ''.join(edited), 'table.py')\n"
        "except PatchError as exc:\n"
        "    print(exc)\n",
        seconds=8, memory_mb=256)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("diff too large: 4000 to 11998 lines changed"), proc.stdout


def test_a_far_offset_in_a_large_file_is_found_without_scanning_every_offset():
    """A 14 KB patch reversed onto a 1 MB saved copy (reapply rebuilding the original): its one
    hunk's lines are all "a" but the last, and the file is "a" up to its last line. Every offset
    compared 4,500 lines: 84 s before; now 0.3 s, only the rarest line's places visited."""
    proc = python_bounded(
        "from driftscan.formats.patch import apply_hunks, parse_patch, reverse_hunks\n"
        "ours = 'a\\n' * 500_000 + 'b\\n'\n"
        "patch = '--- m.py\\n+++ m.py\\n@@ -1,1 +1,4500 @@\\n-x\\n' + '+a\\n' * 4499 + '+b\\n'\n"
        "assert len(patch) > 13_000 and len(ours) > 1_000_000\n"
        "(fp,) = parse_patch(patch)\n"
        "base = apply_hunks(ours, reverse_hunks(fp.hunks))\n"
        "assert base == 'a\\n' * 495_501 + 'x\\n', len(base)\n"
        "print('ok')\n",
        seconds=8, memory_mb=512)
    assert proc.returncode == 0 and proc.stdout == "ok\n", proc.stderr


def test_an_offset_search_that_cannot_succeed_runs_out_of_budget_not_time():
    """Every line of the file is the hunk's most common line and no place matches."""
    proc = python_bounded(
        "from driftscan.formats.patch import Hunk, PatchError, apply_hunks\n"
        "ours = ('a\\n' * 4000 + 'c\\n') * 125\n"
        "hunk = Hunk(1, 4500, 1, 4499, tuple(['-a\\n'] * 4500 + ['+a\\n'] * 4499))\n"
        "try:\n"
        "    apply_hunks(ours, [hunk])\n"
        "except PatchError as exc:\n"
        "    print(exc)\n",
        seconds=8, memory_mb=256)
    assert proc.returncode == 0, proc.stderr
    assert "went past its budget" in proc.stdout, proc.stdout


def test_removing_debug_code_from_a_rewritten_file_is_refused_within_the_budget():
    proc = python_bounded(
        "import random\n"
        "from driftscan.reinstall.excise import excise\n"
        "draw = random.Random(3)\n"
        "base = ''.join(draw.choice(['x = 1\\n', 'y = 2\\n']) for _ in range(18000))\n"
        "ours = ''.join(draw.choice(['x = 1\\n', 'y = 2\\n']) for _ in range(18000)) + 'breakpoint()\\n'\n"
        "cut = excise(base, ours, [(18001, 1)])\n"
        "print(cut.text is None, cut.refused)\n",
        seconds=10, memory_mb=256)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("True diff too large:"), proc.stdout


# ------------------------------------------------------------------------------------ end to end

@pytest.fixture(scope="module")
def house(tmp_path_factory) -> Path:
    """A real wheel whose module is the original of both hostile edits."""
    house = tmp_path_factory.mktemp("hostile-diff-wheels")
    build_wheel(house, NAME, "1.0", {"tablepkg/__init__.py": "", MODULE: interleaved()[0],
                                     "tablepkg/rewritten.py": rewritten()[0]})
    return house


def installed(tmp_path_factory, house: Path, name: str) -> tuple[Path, Path]:
    venv = pip_venv(tmp_path_factory, name)
    venvs.pip_install(venv, "--no-cache-dir", "--no-index", "--find-links", str(house), f"{NAME}==1.0")
    return venv, venvs.site_packages_of(venv)


def _env(tmp: Path) -> dict[str, str]:
    return {**os.environ, **no_caches(tmp), "PYTHONDONTWRITEBYTECODE": "1"}


@pytest.mark.slow
def test_audit_of_an_edit_whose_diff_is_quadratic_finishes_and_says_diff_too_large(tmp_path, tmp_path_factory, house):
    """The plain audit of a venv whose module was edited that way, the original found in the
    wheelhouse: it hung in the diff (79 s for the diff alone); now the drift is reported with
    "diff too large" in place of the diff, and the rest of the audit is there."""
    venv, site = installed(tmp_path_factory, house, "hostile-diff-audit")
    (site / MODULE).write_text(interleaved()[1])
    proc = driftscan_bounded("audit", "--venv", str(venv), "--wheels", str(house), "--format", "json",
                             seconds=15, memory_mb=768, env=_env(tmp_path))
    assert proc.returncode & 1 and not proc.returncode & ~3, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    report = json.loads(proc.stdout)
    drift = [d for d in report["drifts"] if d["path"].endswith(MODULE)]
    assert len(drift) == 1 and drift[0]["kind"] == "modified", report["drifts"]
    assert drift[0]["pristine"], drift[0]
    assert drift[0]["diff"].startswith("diff too large: 4000 to 11998 lines changed"), drift[0]["diff"]
    assert "\n" == drift[0]["diff"][-1] and drift[0]["diff"].count("\n") == 1


@pytest.mark.slow
def test_checkpoint_and_reapply_of_an_edit_whose_diff_is_quadratic_finish_and_refuse(tmp_path, tmp_path_factory,
                                                                                    house):
    """``checkpoint`` (it hung making the patch) then, after a reinstall, ``reapply``'s dry run (it
    hung aligning the saved copy with the original, and removing the debug code from a rewritten
    file): each file is refused with "diff too large", nothing written, and the command ends."""
    venv, site = installed(tmp_path_factory, house, "hostile-diff-reapply")
    (site / MODULE).write_text(interleaved()[1])
    (site / "tablepkg/rewritten.py").write_text(rewritten()[1])
    env = _env(tmp_path)
    cp = tmp_path / "cp"
    proc = driftscan_bounded("checkpoint", "-o", str(cp), "--venv", str(venv), "--wheels", str(house),
                             seconds=20, memory_mb=768, env=env)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1), proc.stderr
    index = json.loads((cp / "checkpoint.json").read_text())
    saved = {f["relpath"].rsplit("/", 1)[-1]: f for f in index["files"]}
    assert saved["table.py"]["content"] and saved["table.py"]["original"], saved["table.py"]
    assert saved["table.py"]["patch"] is None  # past the diff's budget: the two copies are the record

    venvs.pip_install(venv, "--no-cache-dir", "--no-index", "--find-links", str(house), "--force-reinstall",
                      f"{NAME}==1.0")
    before = {p: (site / p).read_bytes() for p in (MODULE, "tablepkg/rewritten.py")}
    proc = driftscan_bounded("reapply", str(cp), "--venv", str(venv), "--format", "json",
                             seconds=20, memory_mb=768, env=env)
    assert "Traceback" not in proc.stderr, proc.stderr
    report = json.loads(proc.stdout)
    files = {f["relpath"].rsplit("/", 1)[-1]: f for f in report["files"]}
    for name in ("table.py", "rewritten.py"):
        assert files[name]["status"] == "refused", files[name]
        assert "diff too large" in files[name]["reason"], files[name]
    assert proc.returncode & 2, proc.stderr  # a refusal
    assert {p: (site / p).read_bytes() for p in before} == before


@pytest.mark.slow
def test_reapply_rebuilding_an_original_from_a_patch_stated_far_off_finishes(tmp_path, tmp_path_factory):
    """A checkpoint without its original, whose 14 KB patch (over a 1 MB saved copy) states its hunk
    at line 1 while it sits at the end: reapply reverses it onto the saved copy to rebuild the
    original, and the offset search compared 4,500 lines at each of 495,000 offsets (84 s)."""
    house = tmp_path_factory.mktemp("hostile-offset-wheels")
    original = "a\n" * 495_501 + "x\n"
    build_wheel(house, "bigpkg", "1.0", {"bigpkg/__init__.py": "", "bigpkg/big.py": original})
    venv = pip_venv(tmp_path_factory, "hostile-offset")
    venvs.pip_install(venv, "--no-cache-dir", "--no-index", "--find-links", str(house), "bigpkg==1.0")
    site = venvs.site_packages_of(venv)
    (site / "bigpkg/big.py").write_text("a\n" * 500_000 + "b\n")
    env = _env(tmp_path)
    cp = tmp_path / "cp"
    proc = driftscan_bounded("checkpoint", "-o", str(cp), "--venv", str(venv), "--wheels", str(house),
                             seconds=30, memory_mb=768, env=env)
    assert proc.returncode in (0, 1), proc.stderr
    index = json.loads((cp / "checkpoint.json").read_text())
    (saved,) = [f for f in index["files"] if f["relpath"].endswith("big.py")]
    os.unlink(cp / saved["original"])  # no original: reapply rebuilds it from the patch
    patch_file = cp / saved["patch"]
    text = patch_file.read_text()
    assert len(text) > 13_000
    header = text.split("\n")[2]
    assert header.startswith("@@ -495499,"), header
    patch_file.write_text(text.replace(header, "@@ -1," + header.split(",", 1)[1].replace("+495499,", "+1,"), 1))
    venvs.pip_install(venv, "--no-cache-dir", "--no-index", "--find-links", str(house), "--force-reinstall",
                      "bigpkg==1.0")
    proc = driftscan_bounded("reapply", str(cp), "--venv", str(venv), "--format", "json",
                             seconds=20, memory_mb=768, env=env)
    assert "Traceback" not in proc.stderr, proc.stderr
    (item,) = [f for f in json.loads(proc.stdout)["files"] if f["relpath"].endswith("big.py")]
    assert item["original"] == "the checkpoint's patch, reversed", item
    assert item["status"] == "planned", item
