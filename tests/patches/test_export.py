"""``driftscan patch export`` on real pip and uv venvs with a real wheel built here, edited as a
debugging session does (a fix, a ``torch.save`` dump and its counter, a debug helper module, a new
module, a deleted file): the patch carries the fixes and none of the debug code, and real ``git apply
-p1`` and ``patch -p1`` turn the unpacked wheel into exactly what was exported."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import jsonschema
import pytest

from driftscan.patches.patchfile import file_patches, parse
from driftscan.render import json_schema
from fixtures.tools import need_tool
from fixtures import venvs
from fixtures.debug_shapes import SHAPES
from fixtures.harness import run_cli
from fixtures.wheels import build_wheel, record_hash

pytestmark = pytest.mark.slow

NAME = "Fix_Pkg"  # a name that is not canonical: the patch file is named fix-pkg@1.0.patch
SEED = SHAPES[0]
assert SEED.name == "seed" and SEED.expected is not None
ORIGINAL = {
    "fix_pkg/__init__.py": "",
    "fix_pkg/attention.py": SEED.base,
    "fix_pkg/legacy.py": "def old():\n    return 1\n",
    "fix_pkg/config.py": "RETRIES = 3\nTIMEOUT = 10\n",
}
NEW_MODULE = "def helper(x):\n    return x * 2\n"
DEBUG_HELPER = "import torch\n\n\ndef dump(t):\n    torch.save(t, '/tmp/nomla_dump.pt')\n"
EXPORTED = {  # what the unpacked wheel holds once the exported patch is applied
    "fix_pkg/__init__.py": "",
    "fix_pkg/attention.py": SEED.expected,
    "fix_pkg/config.py": "RETRIES = 5\nTIMEOUT = 10\n",
    "fix_pkg/sub/new_module.py": NEW_MODULE,
}




@pytest.fixture(scope="module")
def house(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fixpkg") / "house"


@pytest.fixture(scope="module")
def wheel(house) -> Path:
    return build_wheel(house, NAME, "1.0", ORIGINAL)


def _edit(site: Path) -> None:
    pkg = site / "fix_pkg"
    (pkg / "attention.py").write_text(SEED.ours)  # the fix, a counter and a torch.save dump
    (pkg / "config.py").write_text(EXPORTED["fix_pkg/config.py"])
    (pkg / "legacy.py").unlink()
    (pkg / "sub").mkdir()
    (pkg / "sub" / "new_module.py").write_text(NEW_MODULE)
    (pkg / "_debug_dump.py").write_text(DEBUG_HELPER)


def _pip_env(tmp_path: Path, wheel: Path) -> Path:
    venv = venvs.make_pip_venv(tmp_path / "venv")
    venvs.pip_install(venv, "--no-index", str(wheel))
    _edit(venvs.site_packages_of(venv))
    return venv


def _unpacked(wheel: Path, dest: Path) -> Path:
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(dest)
    return dest


def _tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*"))
            if p.is_file() and ".dist-info" not in p.as_posix() and ".git" not in p.parts}


def _check_applies(patch: Path, wheel: Path, tmp_path: Path) -> None:
    git, patch_tool = need_tool("git"), need_tool("patch")
    by_git = _unpacked(wheel, tmp_path / "by-git")
    subprocess.run([git, "apply", "--check", "-p1", str(patch)], cwd=by_git, check=True, capture_output=True)
    subprocess.run([git, "apply", "-p1", str(patch)], cwd=by_git, check=True, capture_output=True)
    assert _tree(by_git) == EXPORTED
    by_patch = _unpacked(wheel, tmp_path / "by-patch")
    subprocess.run([patch_tool, "--dry-run", "-p1", "-i", str(patch)], cwd=by_patch, check=True, capture_output=True)
    subprocess.run([patch_tool, "-p1", "-i", str(patch)], cwd=by_patch, check=True, capture_output=True)
    assert _tree(by_patch) == EXPORTED


def test_export_writes_the_fixes_without_the_debug_code(tmp_path, wheel, house):
    venv = _pip_env(tmp_path, wheel)
    out = tmp_path / "patches"
    proc = run_cli("patch", "export", "--venv", str(venv), "-o", str(out), "--wheels", str(house))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    patch = out / "fix-pkg@1.0.patch"
    text = patch.read_text()
    parsed = parse(text)
    assert parsed.header.distribution == "fix-pkg" and parsed.header.version == "1.0"
    listed = {f.path: f.original for f in parsed.header.files}
    assert listed == {
        "fix_pkg/attention.py": record_hash(SEED.base.encode()),
        "fix_pkg/config.py": record_hash(ORIGINAL["fix_pkg/config.py"].encode()),
        "fix_pkg/legacy.py": record_hash(ORIGINAL["fix_pkg/legacy.py"].encode()),
        "fix_pkg/sub/new_module.py": None,
    }
    assert "-        q = q * self.config.scale\n+        q = q * self.config.scale.to(q.dtype)\n" in text
    assert "torch.save" not in text and "_nomla_debug" not in text and "_debug_dump" not in text
    deleted = {p.path for p in file_patches(parsed) if p.deleted}
    assert deleted == {"fix_pkg/legacy.py"}
    # what the user is told: each left-out file and the line for the manifest
    assert "debug-removed" in proc.stdout and "debug-only" in proc.stdout and "fix_pkg/_debug_dump.py" in proc.stdout
    assert '= { distribution = "fix-pkg", version = "==1.0", sha256 = "' in proc.stdout
    _check_applies(patch, wheel, tmp_path)

    # The same export again: the same file, said unchanged; a different file there is kept without --force.
    again = run_cli("patch", "export", "--venv", str(venv), "-o", str(out), "--wheels", str(house))
    assert again.returncode == 0 and "unchanged" in again.stdout and patch.read_text() == text
    with_debug = run_cli("patch", "export", "--venv", str(venv), "-o", str(out), "--wheels", str(house),
                         "--include-debug", "fix-pkg")
    assert with_debug.returncode == 2 and "NOT written" in with_debug.stdout and patch.read_text() == text
    forced = run_cli("patch", "export", "--venv", str(venv), "-o", str(out), "--wheels", str(house),
                     "--include-debug", "--force", "FIX.PKG")
    assert forced.returncode == 0, forced.stdout + forced.stderr
    kept = patch.read_text()
    assert "torch.save" in kept and "fix_pkg/_debug_dump.py" in kept
    by_git = _unpacked(wheel, tmp_path / "with-debug")
    subprocess.run([need_tool("git"), "apply", "-p1", str(patch)], cwd=by_git, check=True, capture_output=True)
    assert (by_git / "fix_pkg/attention.py").read_text() == SEED.ours
    assert (by_git / "fix_pkg/_debug_dump.py").read_text() == DEBUG_HELPER


def test_json_result_names_every_file_and_validates(tmp_path, wheel, house):
    venv = _pip_env(tmp_path, wheel)
    proc = run_cli("patch", "export", "--venv", str(venv), "-o", str(tmp_path / "p"), "--wheels", str(house),
                   "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    jsonschema.validate(doc, json_schema("patch-export"))
    (patch,) = doc["patches"]
    fates = {f["path"]: (f["change"], f["fate"]) for f in patch["files"]}
    assert fates == {
        "fix_pkg/attention.py": ("modified", "debug-removed"),
        "fix_pkg/config.py": ("modified", "exported"),
        "fix_pkg/legacy.py": ("deleted", "exported"),
        "fix_pkg/sub/new_module.py": ("added", "exported"),
        "fix_pkg/_debug_dump.py": ("added", "debug-only"),
    }
    assert patch["status"] == "written" and patch["exported"] == 4 and patch["left_out"] == 1
    assert patch["sha256"] == hashlib.sha256(Path(patch["path"]).read_bytes()).hexdigest()


def test_no_verified_original_is_exit_2_with_the_way_to_get_one(tmp_path, wheel):
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    local = shutil.copy(wheel, moved / wheel.name)
    venv = venvs.make_pip_venv(tmp_path / "venv")
    venvs.pip_install(venv, "--no-index", local)
    Path(local).unlink()  # direct_url.json names it: gone, so no original anywhere
    (venvs.site_packages_of(venv) / "fix_pkg" / "config.py").write_text("RETRIES = 5\nTIMEOUT = 10\n")
    (venvs.site_packages_of(venv) / "fix_pkg" / "extra.py").write_text(NEW_MODULE)
    (venvs.site_packages_of(venv) / "fix_pkg" / "blob.bin").write_bytes(b"\x00\x01\xff")
    out = tmp_path / "p"
    proc = run_cli("patch", "export", "--venv", str(venv), "-o", str(out))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "no-original" in proc.stdout and "fix_pkg/config.py" in proc.stdout and "pip download" in proc.stdout
    assert "binary" in proc.stdout and "fix_pkg/blob.bin" in proc.stdout
    # the file that could be exported still is
    parsed = parse((out / "fix-pkg@1.0.patch").read_text())
    assert [f.path for f in parsed.header.files] == ["fix_pkg/extra.py"]


def test_a_clean_environment_has_nothing_to_export(tmp_path, wheel):
    venv = venvs.make_pip_venv(tmp_path / "venv")
    venvs.pip_install(venv, "--no-index", str(wheel))
    proc = run_cli("patch", "export", "--venv", str(venv), "-o", str(tmp_path / "p"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "nothing written" in proc.stdout
    assert list((tmp_path / "p").iterdir()) == []


def test_bad_requests_are_one_line_errors(tmp_path, wheel):
    venv = venvs.make_pip_venv(tmp_path / "venv")
    venvs.pip_install(venv, "--no-index", str(wheel))
    unknown = run_cli("patch", "export", "--venv", str(venv), "-o", str(tmp_path / "p"), "not-installed")
    assert unknown.returncode == 2 and "not installed" in unknown.stderr and "Traceback" not in unknown.stderr
    inside = run_cli("patch", "export", "--venv", str(venv), "-o", str(venv / "patches"))
    assert inside.returncode == 2 and "inside the environment" in inside.stderr
    assert not (venv / "patches").exists()


def test_uv_venv_export_applies_to_the_unpacked_wheel(tmp_path, wheel, house):
    cache = tmp_path / "uv-cache"
    venv = venvs.make_uv_venv(tmp_path / "venv", cache)
    venvs.uv_install(venv, cache, "--no-index", str(wheel))
    # uv hard-links from its cache: edit by replacing the files, as editors do
    site = venvs.site_packages_of(venv)
    for rel in ("fix_pkg/attention.py", "fix_pkg/config.py"):
        (site / rel).unlink()
    _edit(site)
    out = tmp_path / "patches"
    proc = run_cli("patch", "export", "--venv", str(venv), "-o", str(out), "--wheels", str(house))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _check_applies(out / "fix-pkg@1.0.patch", wheel, tmp_path)


def test_a_record_rewritten_file_is_diffed_against_its_wheel(tmp_path, wheel, house):
    """An edit whose installed RECORD row was re-hashed to match: direct_url.json names the wheel by
    digest, so its own row is the original's, and the patch lists that hash."""
    venv = venvs.make_pip_venv(tmp_path / "venv")
    venvs.pip_install(venv, "--no-index", str(wheel))
    site = venvs.site_packages_of(venv)
    edited = EXPORTED["fix_pkg/config.py"].encode()
    (site / "fix_pkg/config.py").write_bytes(edited)
    record = next(site.glob("fix_pkg-1.0.dist-info")) / "RECORD"
    rows = [f"fix_pkg/config.py,{record_hash(edited)},{len(edited)}" if line.startswith("fix_pkg/config.py,") else line
            for line in record.read_text().splitlines()]
    record.write_text("\n".join(rows) + "\n")
    out = tmp_path / "p"
    proc = run_cli("patch", "export", "--venv", str(venv), "-o", str(out), "--wheels", str(house), "--format", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (patch,) = json.loads(proc.stdout)["patches"]
    assert [(f["path"], f["fate"]) for f in patch["files"]] == [("fix_pkg/config.py", "exported")]
    parsed = parse((out / "fix-pkg@1.0.patch").read_text())
    assert parsed.header.files[0].original == record_hash(ORIGINAL["fix_pkg/config.py"].encode())
    by_git = _unpacked(wheel, tmp_path / "unpacked")
    subprocess.run([need_tool("git"), "apply", "-p1", str(out / "fix-pkg@1.0.patch")], cwd=by_git, check=True,
                   capture_output=True)
    assert (by_git / "fix_pkg/config.py").read_bytes() == edited
