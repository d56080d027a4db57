"""``reapply`` (no flag) on the corpus of debug-block shapes, across a real pip and a real uv reinstall.

Each shape of ``fixtures.debug_shapes`` is one module of ``shapespkg`` 1.0 (its ``base``); the
user's edit (its ``ours``) holds a wanted fix beside the debug block. A module ``_readers.py``
reads the names a shape says another module reads (``keep_names``). After a checkpoint, a real
reinstall from the wheel file wipes the edits; ``driftscan reapply CP --yes`` must then write
each module's ``expected`` text exactly — every fix, no debug code, no residue — and a second run
must write nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from driftscan.lint import inspect_source
from fixtures import venvs
from fixtures.debug_shapes import SHAPES
from fixtures.upgrades import cli, install, own_env, pip_venv, reapply, site_of
from fixtures.wheels import build_wheel

PKG = "shapespkg"


def module(shape) -> str:
    return f"{PKG}/{shape.name}.py"


def readers() -> str:
    names = sorted({(shape.name, n) for shape in SHAPES for n in shape.keep_names})
    lines = [f"from . import {name}\n" for name in sorted({s for s, _ in names})]
    body = "".join(f"        {s}.{n},\n" for s, n in names)
    return "".join(lines) + f"\n\ndef read():\n    return [\n{body}    ]\n"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    files = {f"{PKG}/__init__.py": "", f"{PKG}/_readers.py": readers()}
    files.update({module(s): s.base for s in SHAPES})
    return build_wheel(tmp_path_factory.mktemp("shapes-wheel"), PKG, "1.0", files)




def edit_in_place(site: Path) -> None:
    """Each module rewritten in place (the inode stays: through a uv hard link the cache copy changes too)."""
    for shape in SHAPES:
        with open(site / module(shape), "r+", encoding="utf-8") as f:
            f.truncate(0)
            f.write(shape.ours)




def statuses(report: dict) -> dict[str, str]:
    return {f["relpath"].split("site-packages/", 1)[-1]: f["status"] for f in report["files"]}


def contents(site: Path) -> dict[str, str]:
    return {module(s): (site / module(s)).read_text(encoding="utf-8") for s in SHAPES}


def check_result(site: Path, first: dict) -> None:
    files = {f["relpath"].split("site-packages/", 1)[-1]: f for f in first["files"]}
    wrong = {}
    for shape in SHAPES:
        got = (site / module(shape)).read_text(encoding="utf-8")
        item = files.get(module(shape))
        if shape.expected is None:
            assert got == shape.base and item["status"] == "refused", (shape.name, item)
            assert shape.refused in item["reason"], (shape.name, item)
            continue
        if got != shape.expected:
            wrong[shape.name] = (item, got)
        left = [f.code for f in inspect_source(got, module(shape)) if f.code.startswith("DBG1")]
        assert not left, (shape.name, left, got)
    assert not wrong, "\n".join(f"{name}: {item and (item['status'], item['reason'])}\n{got}" for name, (item, got) in wrong.items())


def run_loop(site: Path, cp: Path, env: dict[str, str]) -> None:
    refusals = 2 if any(s.expected is None for s in SHAPES) else 0
    code, first = reapply(str(cp), "--yes", env=env)
    assert code == refusals, first
    check_result(site, first)
    done = contents(site)
    code, again = reapply(str(cp), "--yes", env=env)
    assert code == refusals, again
    assert contents(site) == done
    assert set(statuses(again).values()) <= {"already", "unchanged", "refused"}, statuses(again)


def test_pip_reinstall_then_reapply_keeps_every_fix_and_no_debug_code(tmp_path, tmp_path_factory, wheel):
    env = own_env(tmp_path)
    venv = pip_venv(tmp_path_factory, "shapes-pip")
    install(venv, wheel.parent, f"{PKG}==1.0")
    site = site_of(venv)
    edit_in_place(site)
    cp = tmp_path / "cp"
    proc = cli("checkpoint", "--venv", str(venv), "--wheels", str(wheel.parent), "-o", str(cp), env=env)
    assert proc.returncode in (0, 1), proc.stderr
    venvs.pip_install(venv, "--no-cache-dir", "--no-index", "--force-reinstall", "--no-deps", str(wheel))
    assert all((site / module(s)).read_text(encoding="utf-8") == s.base for s in SHAPES)
    run_loop(site, cp, env)


def test_uv_reinstall_then_reapply_keeps_every_fix_and_no_debug_code(tmp_path, wheel):
    env = own_env(tmp_path)
    cache = tmp_path / "uv-cache"
    venv = venvs.make_uv_venv(tmp_path / "vuv", cache)
    venvs.uv_install(venv, cache, "--no-index", "--find-links", str(wheel.parent), f"{PKG}==1.0")
    site = site_of(venv)
    assert os.stat(site / module(SHAPES[0])).st_nlink >= 2  # linked from uv's cache
    edit_in_place(site)
    cp = tmp_path / "cp"
    proc = cli("checkpoint", "--venv", str(venv), "--uv-cache", str(cache), "-o", str(cp), env=env)
    assert proc.returncode in (0, 1), proc.stderr
    venvs.uv_install(venv, cache, "--no-index", "--reinstall", "--no-deps", str(wheel))
    assert all((site / module(s)).read_text(encoding="utf-8") == s.base for s in SHAPES)
    run_loop(site, cp, env)


def test_what_another_saved_file_s_debug_code_reads_is_no_reason_to_keep_a_name():
    from driftscan.reinstall.reapply import names_read_by_kept_code

    other = (b"import torch\n\n\nclass B:\n    def forward(self, x):\n        y = x.clamp(0, 1)\n"
             b"        if not Layer._dumped_once and x.shape[0] > 1:\n"
             b"            torch.save(x, f\"/tmp/b_{self._nomla_debug}.pt\")\n"
             b"            Layer._dumped_once = True\n        return y + cfg.RETRIES\n")
    assert names_read_by_kept_code(other, "b.py") >= {"clamp", "RETRIES"}
    assert not names_read_by_kept_code(other, "b.py") & {"_dumped_once", "_nomla_debug", "save"}
