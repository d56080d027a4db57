"""The team's patch workflow end to end with real uv, as a new user runs it: a toy package built here
in two releases, installed by ``uv pip install --find-links`` with a private uv cache; the fixes made
in site-packages as editors make them, exported (without the debug dump), pinned in pyproject.toml,
applied from an activated venv, seen by the audit as ``patched``; 2.0 installed and the patch rebased
onto it from uv's cache alone; a conflicting rebase resolved by hand; ``guard --reapply-patches``
around a uv reinstall, and a patch edited after it was pinned refused."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import jsonschema
import pytest

from fixtures import venvs
from fixtures.debug_shapes import SHAPES
from fixtures.harness import replace_by_rename, run_cli
from fixtures.patchfiles import patch_text
from fixtures.tools import need_tool
from fixtures.wheels import build_wheel, record_hash

from driftscan.render import json_schema

pytestmark = pytest.mark.slow

DIST = "toy"
SEED = SHAPES[0]  # a fix next to a counter and a torch.save dump, as debugging leaves it
assert SEED.name == "seed" and SEED.expected is not None
PADS = "".join(f'\n\ndef pad{n}():\n    return "p{n}"\n' for n in range(4))

ATTENTION_10 = SEED.base + PADS
ATTENTION_EDITED = SEED.ours + PADS  # the fix and the debug dump
ATTENTION_FIXED = SEED.expected + PADS  # the fix alone: what the patch holds
CONFIG_10 = "RETRIES = 3\nTIMEOUT = 10\n"
CONFIG_FIXED = "RETRIES = 5\nTIMEOUT = 10\n"
V10 = {"toy/__init__.py": "", "toy/attention.py": ATTENTION_10, "toy/config.py": CONFIG_10}

# 2.0 changes a line far from the attention fix (the fix is carried) and makes the config fix itself.
ATTENTION_20 = ATTENTION_10.replace('return "p3"', 'return "p3, as 2.0 has it"')
V20 = {"toy/__init__.py": "", "toy/attention.py": ATTENTION_20, "toy/config.py": CONFIG_FIXED}
# Another 2.0 rewrote the very line the fix changes: the rebase conflicts there.
SCALE = "        q = q * self.config.scale\n"
ATTENTION_20_CONFLICTING = ATTENTION_10.replace(SCALE, "        q = (q * self.config.scale).contiguous()\n")
V20_CONFLICTING = {"toy/__init__.py": "", "toy/attention.py": ATTENTION_20_CONFLICTING, "toy/config.py": CONFIG_10}
RESOLVED = "        q = (q * self.config.scale.to(q.dtype)).contiguous()\n"  # both changes kept


def wheel_name(version: str) -> str:
    return f"{DIST}-{version}-py3-none-any.whl"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """Both releases, and the conflicting 2.0, each built once in a directory of its own."""
    root = tmp_path_factory.mktemp("toy-releases")
    build_wheel(root / "1.0", DIST, "1.0", V10)
    build_wheel(root / "2.0", DIST, "2.0", V20)
    build_wheel(root / "2.0-conflicting", DIST, "2.0", V20_CONFLICTING)
    return root


def find_links(built: Path, tmp_path: Path) -> Path:
    """The find-links directory H, holding only 1.0 at first."""
    house = tmp_path / "house"
    house.mkdir()
    shutil.copy(built / "1.0" / wheel_name("1.0"), house)
    return house


def user_env(tmp_path: Path, cache: Path, venv: Path | None = None) -> dict[str, str]:
    """The environment of every command: uv's cache the test's own, no pip cache of this machine's
    user (only uv's cache can answer for a wheel), VIRTUAL_ENV as an activated venv sets it."""
    (tmp_path / "no-pip-cache").mkdir(exist_ok=True)
    env = {**venvs.uv_env(cache), "PIP_CACHE_DIR": str(tmp_path / "no-pip-cache"),
           "XDG_CACHE_HOME": str(tmp_path / "xdg"), "DRIFTSCAN_CHECKPOINT_DIR": str(tmp_path / "checkpoints")}
    if venv is not None:
        env["VIRTUAL_ENV"] = str(venv)
    return env


def uv_venv(path: Path, cache: Path, house: Path, version: str) -> Path:
    venv = venvs.make_uv_venv(path, cache)
    venvs.uv_install(venv, cache, "--cache-dir", str(cache), "--no-index", "--find-links", str(house),
                     f"{DIST}=={version}")
    return venv


def cli_json(schema: str, *args: str, cwd: Path, env: dict[str, str]) -> tuple[int, dict]:
    at = args.index("--") if "--" in args else len(args)  # the options go before guard's command
    proc = run_cli(*args[:at], "--format", "json", *args[at:], cwd=str(cwd), env=env)
    assert proc.stdout and "Traceback" not in proc.stderr, proc.stderr
    doc = json.loads(proc.stdout)
    jsonschema.validate(doc, json_schema(schema))
    return proc.returncode, doc


def unpacked(wheel: Path, dest: Path) -> Path:
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(dest)
    return dest


def git_apply_check(patch: Path, wheel: Path, dest: Path) -> None:
    check = subprocess.run([need_tool("git"), "apply", "--check", "-p1", str(patch)], cwd=unpacked(wheel, dest),
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def add_to_manifest(project: Path, line: str) -> None:
    pyproject = project / "pyproject.toml"
    if not pyproject.exists():
        pyproject.write_text('[project]\nname = "team-app"\nversion = "0"\n\n[tool.driftscan.patches]\n')
    pyproject.write_text(pyproject.read_text() + line + "\n")


def audit_patched(venv: Path, cwd: Path, env: dict[str, str]) -> dict[str, str]:
    """Each drifted file of the toy package → its kind, and the patch named for a ``patched`` one."""
    proc = run_cli("audit", "--venv", str(venv), "--format", "json", cwd=str(cwd), env=env)
    assert proc.stdout and "Traceback" not in proc.stderr, proc.stderr
    found = {}
    for drift in json.loads(proc.stdout)["drifts"]:
        rel = drift["relpath"].split("site-packages/")[-1]
        if rel.startswith("toy/"):
            found[rel] = (drift["kind"], (drift.get("expected") or {}).get("patch"))
    return found


def under(cwd: Path, path: str) -> Path:
    """A path from a command's output, as given (relative to its working directory) or absolute."""
    return (cwd / path).resolve()


def states(doc: dict) -> dict[str, str]:
    return {p["patch"]: p["state"] for p in doc["patches"]}


def exported_patch(tmp_path: Path, built: Path) -> tuple[Path, Path, Path, Path, dict[str, str]]:
    """Steps 1 to 3: the fixes made in a uv venv, exported, pinned in pyproject.toml and applied to a
    fresh uv venv W of 1.0 from the project directory. (project, house, cache, W, env)"""
    cache, house, project = tmp_path / "uv-cache", find_links(built, tmp_path), tmp_path / "project"
    project.mkdir()
    env = user_env(tmp_path, cache)

    # 1. The debug box: uv hard-links the files from its cache, so the edits replace them by rename.
    dev = uv_venv(tmp_path / "dev", cache, house, "1.0")
    site = venvs.site_packages_of(dev)
    assert os.stat(site / "toy/attention.py").st_nlink > 1
    replace_by_rename(site / "toy/attention.py", ATTENTION_EDITED)
    replace_by_rename(site / "toy/config.py", CONFIG_FIXED)

    # 2. Export: the fixes, none of the debug code; git applies it to the unpacked 1.0 wheel.
    code, doc = cli_json("patch-export", "patch", "export", "--venv", str(dev), DIST, "-o", "patches/",
                         cwd=project, env=env)
    assert code == 0, doc
    (exported,) = doc["patches"]
    patch = project / "patches" / "toy@1.0.patch"
    assert exported["status"] == "written" and under(project, exported["path"]) == patch.resolve()
    assert {f["path"]: f["fate"] for f in exported["files"]} == {"toy/attention.py": "debug-removed",
                                                                   "toy/config.py": "exported"}
    text = patch.read_text()
    assert "+        q = q * self.config.scale.to(q.dtype)\n" in text and "+RETRIES = 5\n" in text
    assert "torch.save" not in text and "_nomla_debug" not in text and "_dumped_once" not in text
    assert f" toy/attention.py {record_hash(ATTENTION_10.encode())}\n" in text
    assert exported["sha256"] == hashlib.sha256(patch.read_bytes()).hexdigest()
    git_apply_check(patch, built / "1.0" / wheel_name("1.0"), tmp_path / "unpacked-1.0")
    # the edits went by rename: uv's cache copy is still the original
    assert (site / "toy/attention.py").stat().st_nlink == 1

    # 3. The printed line into pyproject.toml; a fresh W of 1.0; apply as a user in the activated W.
    line = exported["manifest_line"]
    assert line.startswith('"patches/toy@1.0.patch" = ') and exported["sha256"] in line
    add_to_manifest(project, line)
    w = uv_venv(tmp_path / "w", cache, house, "1.0")
    w_site = venvs.site_packages_of(w)
    assert (w_site / "toy/attention.py").read_text() == ATTENTION_10, "the export's uv cache is not poisoned"
    env_w = user_env(tmp_path, cache, w)
    code, doc = cli_json("patch-apply", "patch", "apply", "--yes", cwd=project, env=env_w)
    assert code == 0, doc
    assert states(doc) == {"patches/toy@1.0.patch": "applied"}
    assert under(project, doc["manifest"]) == (project / "pyproject.toml").resolve()
    assert sorted(doc["written"]) == sorted(str(w_site / rel) for rel in ("toy/attention.py", "toy/config.py"))
    assert (w_site / "toy/attention.py").read_text() == ATTENTION_FIXED
    assert (w_site / "toy/config.py").read_text() == CONFIG_FIXED
    # written by rename: the hard link to uv's cache is broken, the cache copy stays the original
    assert (w_site / "toy/attention.py").stat().st_nlink == 1
    code, doc = cli_json("patch-apply", "patch", "apply", "--yes", cwd=project, env=env_w)
    assert code == 0 and states(doc) == {"patches/toy@1.0.patch": "already"} and not doc["written"]
    assert audit_patched(w, project, env) == {rel: ("patched", str(patch)) for rel in ("toy/attention.py",
                                                                                       "toy/config.py")}
    return project, house, cache, w, env


def test_export_pin_apply_then_rebase_from_uvs_cache(built, tmp_path):
    project, house, cache, w, env = exported_patch(tmp_path, built)
    w_site = venvs.site_packages_of(w)

    # 4. 2.0 comes out: into H, installed into W by uv (so uv's cache holds it), then gone from H.
    shutil.copy(built / "2.0" / wheel_name("2.0"), house)
    venvs.uv_install(w, cache, "--cache-dir", str(cache), "--no-index", "--find-links", str(house), f"{DIST}==2.0")
    assert (w_site / "toy/attention.py").read_text() == ATTENTION_20
    (house / wheel_name("2.0")).unlink()
    env_w = user_env(tmp_path, cache, w)
    code, doc = cli_json("patch-apply", "patch", "apply", "--yes", cwd=project, env=env_w)
    assert code == 1 and states(doc) == {"patches/toy@1.0.patch": "unused"} and not doc["written"]
    assert "`driftscan patch rebase toy --to 2.0`" in doc["patches"][0]["message"]  # what to run next
    # On a box without toy installed (no VIRTUAL_ENV): the 2.0 wheel from uv's cache.
    code, doc = cli_json("patch-rebase", "patch", "rebase", DIST, "--to", "2.0", "--uv-cache", str(cache),
                         cwd=project, env=env)
    assert code == 0, doc
    assert doc["state"] == "written" and doc["from_version"] == "1.0" and doc["to_version"] == "2.0"
    assert str(cache) in doc["release"], doc["release"]  # found in uv's cache: no --wheels, H has no 2.0
    files = {f["path"]: f for f in doc["files"]}
    assert files["toy/attention.py"]["state"] == "carried"
    assert [h["state"] for h in files["toy/attention.py"]["hunks"]] == ["applied"]
    assert files["toy/config.py"]["state"] == "obsolete"  # 2.0 made the config fix itself
    assert [h["state"] for h in files["toy/config.py"]["hunks"]] == ["already"]
    new_patch = project / "patches" / "toy@2.0.patch"
    assert under(project, doc["output"]) == new_patch.resolve()
    assert doc["sha256"] == hashlib.sha256(new_patch.read_bytes()).hexdigest()
    text = new_patch.read_text()
    assert "Version: 2.0\n" in text and f" toy/attention.py {record_hash(ATTENTION_20.encode())}\n" in text
    assert "toy/config.py" not in text and "+        q = q * self.config.scale.to(q.dtype)\n" in text
    assert (project / "patches" / "toy@1.0.patch").exists()  # the old one stays for the 1.0 environments
    git_apply_check(new_patch, built / "2.0" / wheel_name("2.0"), tmp_path / "unpacked-2.0")
    # In the activated W, which the upgrade brought to 2.0: its own files, verified against its
    # RECORD, are 2.0's (no wheel needed); the same patch.
    written = new_patch.read_bytes()
    new_patch.unlink()
    code, again = cli_json("patch-rebase", "patch", "rebase", DIST, "--to", "2.0", "--uv-cache",
                           str(tmp_path / "empty-uv-cache"), cwd=project, env=env_w)
    assert code == 0 and again["release"].startswith(f"the installed toy 2.0 ({w_site}"), again
    assert new_patch.read_bytes() == written

    assert doc["manifest_line"].startswith('"patches/toy@2.0.patch" = ') and doc["sha256"] in doc["manifest_line"]
    add_to_manifest(project, doc["manifest_line"])
    code, doc = cli_json("patch-apply", "patch", "apply", "--yes", cwd=project, env=env_w)
    assert states(doc) == {"patches/toy@2.0.patch": "applied", "patches/toy@1.0.patch": "unused"}
    superseded = next(p for p in doc["patches"] if p["state"] == "unused")
    assert "takes patches/toy@2.0.patch" in superseded["message"] and "drop its manifest line" in superseded["message"]
    assert code == 1, "an unused patch fails the run until --allow-unused"
    assert doc["written"] == [str(w_site / "toy/attention.py")]
    assert (w_site / "toy/attention.py").read_text() == SEED.expected + PADS.replace('return "p3"',
                                                                                     'return "p3, as 2.0 has it"')
    assert (w_site / "toy/config.py").read_text() == CONFIG_FIXED  # as 2.0 ships it
    code, doc = cli_json("patch-apply", "patch", "apply", "--yes", "--allow-unused", cwd=project, env=env_w)
    assert code == 0 and states(doc)["patches/toy@2.0.patch"] == "already" and not doc["written"]
    assert audit_patched(w, project, env) == {"toy/attention.py": ("patched", str(new_patch))}


def test_a_conflicting_rebase_resolved_by_hand(built, tmp_path):
    project, house, cache, w, env = exported_patch(tmp_path, built)
    shutil.copy(built / "2.0-conflicting" / wheel_name("2.0"), house)
    w2 = uv_venv(tmp_path / "w2", cache, house, "2.0")
    (house / wheel_name("2.0")).unlink()
    env_w2 = user_env(tmp_path, cache, w2)
    code, doc = cli_json("patch-rebase", "patch", "rebase", DIST, "--to", "2.0", "--uv-cache", str(cache),
                         cwd=project, env=env_w2)
    assert code == 1 and doc["state"] == "conflict", doc
    work = project / "patches" / "toy@2.0.rebase"
    assert under(project, doc["workdir"]) == work.resolve()
    files = {f["path"]: f for f in doc["files"]}
    assert files["toy/attention.py"]["state"] == "conflict" and files["toy/config.py"]["state"] == "carried"
    (hunk,) = files["toy/attention.py"]["hunks"]
    assert hunk["state"] == "conflict" and any(".contiguous()" in line for line in hunk["theirs"])
    assert not (project / "patches" / "toy@2.0.patch").exists()

    merged = (work / "files" / "toy" / "attention.py").read_text()
    block = re.search(r"^<<<<<<< .*?^>>>>>>> [^\n]*\n", merged, re.M | re.S)
    assert block, merged
    assert "scale.to(q.dtype)" in block.group() and ".contiguous()" in block.group()
    assert "torch.save" not in merged  # the debug code was never in the patch
    (work / "files" / "toy" / "attention.py").write_text(merged.replace(block.group(), RESOLVED))

    code, doc = cli_json("patch-rebase", "patch", "rebase", "--continue", cwd=project, env=env_w2)
    assert code == 0, doc
    assert doc["state"] == "written" and doc["workdir_removed"] and not work.exists()
    new_patch = project / "patches" / "toy@2.0.patch"
    text = new_patch.read_text()
    assert f"+{RESOLVED}" in text and "+RETRIES = 5\n" in text
    git_apply_check(new_patch, built / "2.0-conflicting" / wheel_name("2.0"), tmp_path / "unpacked-2.0")

    code, doc = cli_json("patch-apply", "patch", "apply", "--yes", "--patches", "patches", "--allow-unused",
                         cwd=project, env=env_w2)
    assert code == 0, doc
    assert states(doc)["patches/toy@2.0.patch"] == "applied"
    site = venvs.site_packages_of(w2)
    assert (site / "toy/attention.py").read_text() == ATTENTION_20_CONFLICTING.replace(
        "        q = (q * self.config.scale).contiguous()\n", RESOLVED)
    assert (site / "toy/config.py").read_text() == CONFIG_FIXED


def test_guard_re_applies_after_a_uv_reinstall_and_refuses_an_edited_patch(built, tmp_path):
    cache, house, project = tmp_path / "uv-cache", find_links(built, tmp_path), tmp_path / "project"
    (project / "patches").mkdir(parents=True)
    patch = project / "patches" / "toy@1.0.patch"
    patch.write_text(patch_text(DIST, "1.0", {"toy/attention.py": (ATTENTION_10, ATTENTION_FIXED),
                                              "toy/config.py": (CONFIG_10, CONFIG_FIXED)}))
    digest = hashlib.sha256(patch.read_bytes()).hexdigest()
    add_to_manifest(project, f'"patches/toy@1.0.patch" = {{ distribution = "toy", version = "==1.0", '
                             f'sha256 = "{digest}" }}')
    w = uv_venv(tmp_path / "w", cache, house, "1.0")
    site = venvs.site_packages_of(w)
    env_w = user_env(tmp_path, cache, w)
    code, doc = cli_json("patch-apply", "patch", "apply", "--yes", cwd=project, env=env_w)
    assert code == 0 and states(doc) == {"patches/toy@1.0.patch": "applied"}, doc

    reinstall = (venvs.uv_bin(), "pip", "install", "--python", str(venvs.python_of(w)), "--cache-dir", str(cache),
                 "--reinstall", "--no-index", "--find-links", str(house), f"{DIST}==1.0")
    code, report = cli_json("guard", "guard", "--reapply-patches", "--", *reinstall, cwd=project, env=env_w)
    assert code == 0, report
    assert report["command"]["tool"] == "uv pip" and report["exit_code"] == 0
    assert report["summary"]["failed"] == 0  # the patched files wiped by the reinstall, as predicted
    assert [p["fate"] for p in report["patch_plan"]] == ["re-applied"]
    (applied,) = report["patch_apply"]["patches"]
    assert applied["state"] == "applied" and report["patch_apply_exit"] == 0
    assert sorted(report["patch_apply"]["written"]) == sorted(str(site / r) for r in ("toy/attention.py",
                                                                                     "toy/config.py"))
    assert (site / "toy/attention.py").read_text() == ATTENTION_FIXED
    assert (site / "toy/config.py").read_text() == CONFIG_FIXED

    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace(digest, "0" * 64))
    code, report = cli_json("guard", "guard", "--reapply-patches", "--", *reinstall, cwd=project, env=env_w)
    assert code != 0 and report["exit_code"] == 0, report
    (refused,) = report["patch_apply"]["patches"]
    assert refused["state"] == "refused" and digest in refused["message"] and "0" * 64 in refused["message"]
    # the reinstall linked uv's cache copy back: the original, so patch apply never wrote through the link
    assert (site / "toy/attention.py").read_text() == ATTENTION_10
    text = run_cli("guard", "--reapply-patches", "--", *reinstall, cwd=str(project), env=env_w)
    assert text.returncode != 0 and "refused" in text.stdout, text.stdout + text.stderr
    assert (site / "toy/attention.py").read_text() == ATTENTION_10
