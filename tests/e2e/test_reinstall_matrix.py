"""Every ``plan --from`` prediction checked against the real reinstall: installers (pip; uv with its
hard-linked cache; uv ``--link-mode copy``) × edit styles (in place through the link; temporary file
+ rename; an added file) × reinstall sources (the same find-links directory, the index, a wheel
file, the source as installed, after the plan's own ``uv cache clean``, after a cache clean done
before planning). Toy wheels built here, one private uv cache per case (the cases poison it).

The table in docs/reinstall-matrix.md is this matrix: a row per case and file, with the prediction
and what the real reinstall did; the tests check the document says what they observed.
"""

from __future__ import annotations

import ensurepip
import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from driftscan.api import plan
from fixtures import venvs
from fixtures.harness import replace_by_rename
from fixtures.wheels import build_wheel
from fixtures.paths import REPO

NAME, VERSION = "matrixpkg", "1.0"
FILES = {"matrixpkg/__init__.py": "", "matrixpkg/inplace.py": "def f():\n    return 1\n",
         "matrixpkg/renamed.py": "def g():\n    return 2\n"}
MARK = "# local edit\n"
EDITS = {"in place": "matrixpkg/inplace.py", "tmp + rename": "matrixpkg/renamed.py", "added file": "matrixpkg/helper.py"}
DOC = REPO / "docs" / "reinstall-matrix.md"
BUNDLED = os.path.join(os.path.dirname(ensurepip.__file__), "_bundled")


@dataclass(frozen=True)
class Case:
    installer: str  # pip | uv | uv-copy
    installed_from: str  # dir | wheel
    source: str  # dir | wheel | index | as-installed | plan-steps | cleaned-before

    @property
    def key(self) -> str:
        return f"{self.installer} / {self.installed_from} / {self.source}"


CASES = [Case("uv", "dir", s) for s in ("dir", "index", "as-installed", "wheel", "plan-steps", "cleaned-before")] + \
        [Case("uv", "wheel", s) for s in ("wheel", "as-installed", "dir", "plan-steps")] + \
        [Case("uv-copy", "dir", s) for s in ("dir", "wheel")] + \
        [Case("pip", "dir", s) for s in ("dir", "wheel", "index")] + [Case("pip", "wheel", "wheel")]


@pytest.fixture(scope="module")
def house(tmp_path_factory):
    root = tmp_path_factory.mktemp("matrix-wheels")
    wheel = build_wheel(root / "links", NAME, VERSION, FILES)
    return root / "links", wheel


def _env(cache: Path, copy: bool) -> dict[str, str]:
    return {**os.environ, **venvs.uv_env(cache), "UV_LINK_MODE": "copy" if copy else "hardlink"}


def _installed(case: Case, tmp: Path, links: Path, wheel: Path) -> tuple[Path, Path]:
    cache = tmp / "uv-cache"
    venv = venvs.make_uv_venv(tmp / "venv", cache)
    what = ["--no-index", "--find-links", str(links), f"{NAME}=={VERSION}"] if case.installed_from == "dir" \
        else [str(wheel)]
    if case.installer == "pip":  # pip itself in the venv (from the wheel ensurepip ships), then pip installs
        venvs.uv_install(venv, cache, "--no-index", "--find-links", BUNDLED, "pip")
        venvs.run([str(venvs.python_of(venv)), "-m", "pip", "install", "--no-input", "--no-deps", *what])
    else:
        venvs.run([venvs.uv_bin(), "pip", "install", "--quiet", "--python", str(venvs.python_of(venv)), "--no-deps",
                   *what], env=_env(cache, case.installer == "uv-copy"))
    return venv, cache


def _edit(site: Path) -> None:
    with open(site / EDITS["in place"], "a") as f:  # through the hard link: uv's cache copy changes too
        f.write(MARK)
    replace_by_rename(site / EDITS["tmp + rename"], (site / EDITS["tmp + rename"]).read_text() + MARK)
    (site / EDITS["added file"]).write_text("HELPER = 1\n" + MARK)


def _outcome(site: Path, rel: str) -> str:
    path = site / rel
    return "SURVIVES" if path.exists() and MARK in path.read_text() else "WIPED"


def _run(command: str, case: Case, cache: Path, links: Path) -> None:
    argv = shlex.split(command)
    if argv[0] == "uv":
        argv[0] = venvs.uv_bin()
    if "--reinstall" in argv or "--force-reinstall" in argv:
        if "--find-links" not in argv and not any(a.endswith(".whl") for a in argv):
            argv += ["--no-index", "--find-links", str(links)]  # the index, played by the same directory
        argv += ["--quiet"]
    subprocess.run(argv, check=True, capture_output=True, env=_env(cache, case.installer == "uv-copy"))


def run_case(case: Case, tmp: Path, links: Path, wheel: Path) -> dict[str, tuple[str, str]]:
    """{edit style: (prediction, outcome)} for one case, from one real reinstall."""
    venv, cache = _installed(case, tmp, links, wheel)
    site = venvs.site_packages_of(venv)
    _edit(site)
    if case.source == "cleaned-before":
        _run(f"uv cache clean {NAME}", case, cache, links)
    source = {"dir": str(links), "wheel": str(wheel), "index": "index"}.get(case.source)
    result = plan([NAME], venv=str(venv), uv_cache=str(cache), source=source)
    (told,) = result.sources
    # uv records the ctime of the wheel it installed from (uv_cache.json): the directory's wheel and
    # the wheel file are that very file here; pip records nothing of the kind.
    if case.source in ("dir", "wheel"):
        assert ("uv_cache.json" in told.told_by) is (case.installer != "pip"), told
    # uv's edited cache archive (an in-place edit through the hard link) is a drift of its own,
    # checked against the cache after the reinstall below.
    archives = [i for i in result.items if i.kind == "cache-modified"]
    items = {os.path.relpath(i.path, site): i for i in result.items if i.kind != "cache-modified"}
    assert set(items) == set(EDITS.values()), items
    assert bool(archives) is (case.installer == "uv" and case.source != "cleaned-before"), archives
    with_steps = case.source == "plan-steps"
    for step in result.steps:
        command = step.command or ""
        if (with_steps and command.startswith("uv cache clean")) or " --reinstall " in command \
                or " --force-reinstall " in command:
            _run(command, case, cache, links)
    for archive in archives:
        predicted = archive.status if with_steps else archive.status_without_steps
        edited = Path(archive.path, EDITS["in place"])
        left = "SURVIVES" if edited.exists() and MARK in edited.read_text() else "WIPED"
        assert predicted == left, f"{case.key}: the edited cache archive: predicted {predicted}, left {left}"
    out = {}
    for style, rel in EDITS.items():
        item = items[rel]
        predicted = item.status if with_steps else item.status_without_steps
        out[style] = (predicted, _outcome(site, rel))
        assert item.reason, item
        if (case.key, style) in UNTOLD:
            why = item.reason_without_steps or item.reason
            assert predicted == "MAY SURVIVE" and "survives" in why and "wiped" in why, item
    return out


def doc_rows() -> dict[tuple[str, str], tuple[str, str]]:
    """The matrix table of docs/reinstall-matrix.md: (case key, edit style) → (prediction, outcome)."""
    rows = {}
    for line in DOC.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and cells[0] in ("pip", "uv", "uv-copy"):
            rows[(" / ".join(cells[:3]), cells[3])] = (cells[4], cells[5])
    return rows


# Installed from a find-links directory and reinstalled from "the index" (as installed, or
# --from index): whether the index is that directory depends on the installer's configuration when
# the command runs, so an in-place edit through uv's link MAY SURVIVE (here the index is played by
# the same directory, and it survives; from the package registry it is wiped).
UNTOLD = {("uv / dir / index", "in place"), ("uv / dir / as-installed", "in place")}


@pytest.mark.parametrize("case", CASES, ids=[c.key.replace(" / ", "-") for c in CASES])
def test_prediction_matches_the_real_reinstall(case, house, tmp_path):
    links, wheel = house
    observed = run_case(case, tmp_path, links, wheel)
    for style, (predicted, outcome) in observed.items():
        if (case.key, style) in UNTOLD:
            continue  # MAY SURVIVE, checked in run_case: both outcomes said
        assert predicted == outcome, f"{case.key}, {style}: predicted {predicted}, the reinstall left it {outcome}"
    # The document's table says what the real reinstall did.
    table = doc_rows()
    assert {style: table.get((case.key, style)) for style in EDITS} == observed


def test_the_documented_matrix_is_the_tested_one():
    assert set(doc_rows()) == {(c.key, style) for c in CASES for style in EDITS}


def test_uv_source_decides_whether_an_in_place_edit_survives():
    """The rows that make the point, read from the table the matrix checks."""
    table = doc_rows()
    assert table[("uv / dir / dir", "in place")] == ("SURVIVES", "SURVIVES")
    assert table[("uv / dir / wheel", "in place")] == ("WIPED", "WIPED")
    assert table[("uv / wheel / wheel", "in place")] == ("SURVIVES", "SURVIVES")
    assert table[("uv / dir / plan-steps", "in place")] == ("WIPED", "WIPED")
    assert all(re.fullmatch(r"WIPED|SURVIVES", v[1]) for v in table.values())


if __name__ == "__main__":  # regenerate the table: PYTHONPATH=. python tests/e2e/test_reinstall_matrix.py
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        links_dir = base / "links"
        built = build_wheel(links_dir, NAME, VERSION, FILES)
        print("| installer | installed from | reinstall source | edit | prediction | outcome |")
        print("|---|---|---|---|---|---|")
        for n, c in enumerate(CASES):
            (base / str(n)).mkdir()
            for style, (p, o) in run_case(c, base / str(n), links_dir, built).items():
                print(f"| {c.installer} | {c.installed_from} | {c.source} | {style} | {p} | {o} |")
        sys.stdout.flush()
