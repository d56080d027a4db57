"""``--pin``: the patch's manifest line written into pyproject.toml / driftscan.toml by driftscan
itself, the rest of the file kept byte for byte; every file it cannot edit safely refused with
nothing written. Unit tests on real files; then the command line end to end: ``patch export --pin``
in a project, ``patch apply`` accepting what was pinned, ``patch rebase --pin`` (and
``--continue``) adding the new version's line."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import jsonschema
import pytest

from driftscan.cli.patchsource import pin_manifest
from driftscan.core.errors import ConfigError
from driftscan.patches.manifest import read_manifest
from driftscan.patches.pin import PinStatus, entry_line, pin, pin_patch
from driftscan.render import json_schema
from fixtures import venvs
from fixtures.harness import run_cli
from fixtures.patchfiles import patch_text
from fixtures.wheels import build_wheel

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

A, B, C = "a" * 64, "b" * 64, "c" * 64

PYPROJECT = f"""\
# the project's own comment
[project]
name = "demo"   # keep this alignment
version = "1"

[tool.driftscan.patches]
# the team's patches
"patches/vllm@0.33.0.patch" = {{ distribution = "vllm", version = "==0.33.0", sha256 = "{A}" }}  # reviewed

[tool.ruff]
line-length = 120
"""


def _write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def _pin(path: Path, key: str, dist: str, version: str, digest: str, **kw):
    return pin(str(path), key, entry_line(key, dist, version, digest), **kw)


def _entries(path: Path) -> dict[str, tuple[str, str, str | None]]:
    return {e.shown: (e.distribution, e.specifier, e.sha256) for e in read_manifest(str(path))}


# ------------------------------------------------------------------------------------ the edit


def test_added_after_the_last_entry_everything_else_kept(tmp_path):
    path = _write(tmp_path / "pyproject.toml", PYPROJECT)
    result = _pin(path, "patches/torch@2.5.0.patch", "torch", "2.5.0", B)
    assert result.status is PinStatus.ADDED and result.key == "patches/torch@2.5.0.patch"
    line = f'"patches/torch@2.5.0.patch" = {{ distribution = "torch", version = "==2.5.0", sha256 = "{B}" }}\n'
    anchor = "# reviewed\n"
    assert path.read_text() == PYPROJECT.replace(anchor, anchor + line)
    assert _entries(path) == {"patches/vllm@0.33.0.patch": ("vllm", "==0.33.0", A),
                              "patches/torch@2.5.0.patch": ("torch", "==2.5.0", B)}


def test_replaced_in_place_keeping_its_comment_then_unchanged(tmp_path):
    path = _write(tmp_path / "pyproject.toml", PYPROJECT)
    os.chmod(path, 0o640)
    result = _pin(path, "patches/vllm@0.33.0.patch", "vllm", "0.33.0", C)
    assert result.status is PinStatus.REPLACED
    assert path.read_text() == PYPROJECT.replace(A, C)  # the comment after it, and every other byte, kept
    assert oct(os.stat(path).st_mode & 0o777) == oct(0o640)
    before = os.stat(path)
    again = _pin(path, "patches/vllm@0.33.0.patch", "vllm", "0.33.0", C)
    assert again.status is PinStatus.UNCHANGED
    assert path.read_text() == PYPROJECT.replace(A, C) and os.stat(path).st_ino == before.st_ino


def test_a_line_written_otherwise_but_meaning_the_same_is_unchanged(tmp_path):
    text = f"[patches]\n'x.patch'={{sha256='{A}',version='==1',distribution='x'}}\n"
    path = _write(tmp_path / "driftscan.toml", text)
    assert _pin(path, "x.patch", "x", "1", A).status is PinStatus.UNCHANGED
    assert path.read_text() == text


def test_driftscan_toml_uses_its_patches_table(tmp_path):
    text = "select = [\"DBG1\"]\n\n[patches]\n\n[[accept]]\npath = \"a.py\"\nreason = \"kept\"\n"
    path = _write(tmp_path / "driftscan.toml", text)
    assert _pin(path, "p/x@1.patch", "x", "1", A).status is PinStatus.ADDED
    new = path.read_text()
    assert new == text.replace("[patches]\n", f"[patches]\n{entry_line('p/x@1.patch', 'x', '1', A)}\n")
    assert tomllib.loads(new)["accept"] == [{"path": "a.py", "reason": "kept"}]


@pytest.mark.parametrize(("name", "text", "header"), [
    ("pyproject.toml", '[project]\nname = "demo"\n', "[tool.driftscan.patches]"),
    ("pyproject.toml", '[project]\nname = "demo"\n\n', "[tool.driftscan.patches]"),
    ("pyproject.toml", '[project]\nname = "demo"', "[tool.driftscan.patches]"),
    ("driftscan.toml", "", "[patches]"),
    ("driftscan.toml", 'ignore = ["DBG109"]\n', "[patches]"),
])
def test_a_missing_table_is_appended_after_one_blank_line(tmp_path, name, text, header):
    path = _write(tmp_path / name, text)
    assert _pin(path, "x@1.patch", "x", "1", A).status is PinStatus.ADDED
    body = text if not text or text.endswith("\n") else text + "\n"
    gap = "\n" if body.strip() and not body.endswith("\n\n") else ""
    assert path.read_text() == f"{body}{gap}{header}\n{entry_line('x@1.patch', 'x', '1', A)}\n"
    assert _entries(path) == {"x@1.patch": ("x", "==1", A)}


def test_crlf_line_endings_are_kept(tmp_path):
    path = _write(tmp_path / "pyproject.toml", PYPROJECT.replace("\n", "\r\n"))
    _pin(path, "patches/vllm@0.33.0.patch", "vllm", "0.33.0", C)
    _pin(path, "new@1.patch", "new", "1", B)
    raw = path.read_bytes()
    assert b"\n" not in raw.replace(b"\r\n", b"")
    assert raw.count(b"\r\n") == PYPROJECT.count("\n") + 1
    assert _entries(path)["patches/vllm@0.33.0.patch"][2] == C


def test_a_key_with_spaces_and_quotes_is_matched_as_toml_reads_it(tmp_path):
    key = 'my patches/it\'s "odd"@1.patch'
    written = r'"my\u0020patches/it\u0027s \"odd\"@1.patch"'  # another spelling of the same key
    text = f"[patches]\n{written} = {{ distribution = \"odd\", version = \"==1\", sha256 = \"{A}\" }}\n"
    path = _write(tmp_path / "driftscan.toml", text)
    assert _pin(path, key, "odd", "1", B).status is PinStatus.REPLACED
    assert _entries(path) == {key: ("odd", "==1", B)}
    assert path.read_text().count("\n") == 2


def test_pin_patch_names_the_patch_relative_to_the_manifest(tmp_path, monkeypatch):
    project = tmp_path / "project"
    (project / "patches").mkdir(parents=True)
    manifest = _write(project / "pyproject.toml", "")
    monkeypatch.chdir(tmp_path)  # run from elsewhere: the key is still the manifest's
    result = pin_patch(str(manifest), str(project / "patches" / "x@1.patch"), "x", "1", A)
    assert result.key == "patches/x@1.patch"
    (entry,) = read_manifest(str(manifest))
    assert entry.path == str(project / "patches" / "x@1.patch")


def test_dry_run_checks_and_writes_nothing(tmp_path):
    path = _write(tmp_path / "pyproject.toml", PYPROJECT)
    assert _pin(path, "x@1.patch", "x", "1", B, write=False).status is PinStatus.ADDED
    assert path.read_text() == PYPROJECT


# ------------------------------------------------------------------------------------ refused


@pytest.mark.parametrize(("name", "text", "said"), [
    ("pyproject.toml", f'[tool.driftscan]\npatches."vllm@1.patch" = {{ distribution = "vllm", sha256 = "{A}" }}\n',
     "without its own"),
    ("pyproject.toml", f'tool.driftscan.patches."x" = {{ distribution = "x" }}\n', "without its own"),
    ("pyproject.toml", '[tool.driftscan]\npatches = { "x" = { distribution = "x" } }\n', "without its own"),
    ("pyproject.toml", 'tool = { driftscan = { select = ["DBG1"] } }\n', "not be valid TOML"),
    ("pyproject.toml", '[tool]\ndriftscan = { select = ["DBG1"] }\n', "not be valid TOML"),
    ("driftscan.toml", '[patches]\n"k@1.patch".distribution = "k"\n"k@1.patch".version = "==1"\n',
     "not one line of its own"),
    ("driftscan.toml", '[patches."k@1.patch"]\ndistribution = "k"\n', "without its own"),
    ("driftscan.toml", "[patches]\n\"k@1.patch\" = {\n", "not valid TOML"),
    ("driftscan.toml", "patches = 3\n", "not a table"),
    ("driftscan.toml", "[patches]\n\"other@1.patch\" = { distribution = \"other\", bogus = 1 }\n", "unknown key"),
])
def test_what_cannot_be_edited_safely_is_refused_with_nothing_written(tmp_path, name, text, said):
    path = _write(tmp_path / name, text)
    with pytest.raises(ConfigError) as err:
        _pin(path, "k@1.patch", "k", "1", B)
    message = str(err.value)
    assert said in message and "\n" not in message and str(path) in message
    assert path.read_text() == text


def test_not_utf8_too_large_symlink_not_regular_and_missing_are_refused(tmp_path):
    for sub in ("latin1", "big"):
        (tmp_path / sub).mkdir()
    cases = {"latin1": _write(tmp_path / "latin1" / "pyproject.toml", b"# caf\xe9\n"),
             "large": _write(tmp_path / "big" / "driftscan.toml", b"# " + b"x" * (16 << 20) + b"\n")}
    real = _write(tmp_path / "real.toml", PYPROJECT)
    link = tmp_path / "link" / "pyproject.toml"
    link.parent.mkdir()
    link.symlink_to(real)
    cases["symlink"] = link
    fifo = tmp_path / "fifo" / "driftscan.toml"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    cases["fifo"] = fifo
    cases["missing"] = tmp_path / "none" / "pyproject.toml"
    said = {"latin1": "not UTF-8", "large": "bytes", "symlink": "symlink", "fifo": "not a regular file",
            "missing": "no such file"}
    for what, path in cases.items():
        before = path.read_bytes() if what in ("latin1", "large", "symlink") else None
        with pytest.raises(ConfigError) as err:
            _pin(path, "k@1.patch", "k", "1", B)
        assert said[what] in str(err.value) and "\n" not in str(err.value), what
        if before is not None:
            assert path.read_bytes() == before, what
    assert real.read_text() == PYPROJECT
    assert not (tmp_path / "none").exists()


# ------------------------------------------------------------------------------------ which file


def test_pin_manifest_found_upward_planted_refused_else_pyproject_else_error(tmp_path, monkeypatch):
    top = tmp_path / "top"
    work = top / "sub"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    with pytest.raises(ConfigError, match="--manifest FILE"):
        pin_manifest(None)
    assert pin_manifest("given.toml") == "given.toml"
    here = _write(work / "pyproject.toml", '[project]\nname = "x"\n')  # no [tool.driftscan]: still the one
    assert pin_manifest(None) == str(here)
    found = _write(top / "driftscan.toml", "")
    assert pin_manifest(None) == str(found)  # the configuration found upward comes first
    os.chmod(found, 0o666)
    with pytest.raises(ConfigError, match="writable by every user") as err:
        pin_manifest(None)
    assert "--manifest" in str(err.value)


# ------------------------------------------------------------------------------------ end to end

NAME = "pinpkg"
ORIGINAL = {"pinpkg/__init__.py": "", "pinpkg/core.py": "RETRIES = 3\nTIMEOUT = 10\n"}


@pytest.fixture(scope="module")
def house(tmp_path_factory) -> Path:
    house = tmp_path_factory.mktemp("pinhouse")
    build_wheel(house, NAME, "1.0", ORIGINAL)
    return house


def _export(project: Path, venv: Path, house: Path, *extra: str):
    proc = run_cli("patch", "export", "--venv", str(venv), "-o", "patches", "--wheels", str(house), "--pin",
                   "--format", "json", *extra, cwd=str(project))
    assert proc.stdout, proc.stderr
    result = json.loads(proc.stdout)
    jsonschema.validate(result, json_schema("patch-export"))
    return proc.returncode, result


@pytest.mark.slow
def test_export_pin_then_apply_accepts_then_a_new_export_replaces_the_line(tmp_path, house):
    project = tmp_path / "project"
    project.mkdir()
    pyproject = _write(project / "pyproject.toml", '[project]\nname = "app"  # ours\n')
    venv = venvs.make_pip_venv(tmp_path / "venv")
    venvs.pip_install(venv, "--no-index", "--find-links", str(house), NAME)
    core = venvs.site_packages_of(venv) / "pinpkg" / "core.py"
    core.write_text("RETRIES = 5\nTIMEOUT = 10\n")

    code, result = _export(project, venv, house)
    assert code == 0, result
    (patch,) = result["patches"]
    patch_file = project / "patches" / "pinpkg@1.0.patch"
    assert patch["pinned"] == {"manifest": str(pyproject), "key": "patches/pinpkg@1.0.patch", "status": "added"}
    digest = hashlib.sha256(patch_file.read_bytes()).hexdigest()
    assert pyproject.read_text().startswith('[project]\nname = "app"  # ours\n\n[tool.driftscan.patches]\n')
    assert _entries(pyproject) == {"patches/pinpkg@1.0.patch": ("pinpkg", "==1.0", digest)}

    # patch apply finds the manifest as the configuration and accepts the pinned patch
    fresh = venvs.make_pip_venv(tmp_path / "fresh")
    venvs.pip_install(fresh, "--no-index", "--find-links", str(house), NAME)
    applied = run_cli("patch", "apply", "--venv", str(fresh), "--yes", "--format", "json", cwd=str(project))
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert [p["state"] for p in json.loads(applied.stdout)["patches"]] == ["applied"]
    assert (venvs.site_packages_of(fresh) / "pinpkg" / "core.py").read_text() == "RETRIES = 5\nTIMEOUT = 10\n"

    # another edit, another export: the same line replaced with the new digest; the text says so
    core.write_text("RETRIES = 7\nTIMEOUT = 10\n")
    text = run_cli("patch", "export", "--venv", str(venv), "-o", "patches", "--wheels", str(house), "--pin",
                   "--force", cwd=str(project))
    assert text.returncode == 0, text.stdout + text.stderr
    assert f"pinned in {pyproject}: its line replaced" in text.stdout
    new_digest = hashlib.sha256(patch_file.read_bytes()).hexdigest()
    assert new_digest != digest
    assert _entries(pyproject) == {"patches/pinpkg@1.0.patch": ("pinpkg", "==1.0", new_digest)}
    assert pyproject.read_text().count("pinpkg@1.0.patch") == 1

    # a manifest that cannot be edited: the patch is written, the line is not, exit 2
    dotted = ('[patches]\n"patches/pinpkg@1.0.patch".distribution = "pinpkg"\n'
              '"patches/pinpkg@1.0.patch".version = "==1.0"\n')
    broken = _write(project / "driftscan.toml", dotted)
    core.write_text("RETRIES = 9\nTIMEOUT = 10\n")
    code, result = _export(project, venv, house, "--force", "--manifest", str(broken))
    assert code == 2 and result["patches"][0]["pinned"] is None and result["patches"][0]["status"] == "written"
    assert "not pinned" in result["errors"][0]["message"] and "not one line of its own" in result["errors"][0]["message"]
    assert broken.read_text() == dotted


@pytest.mark.slow
def test_export_pin_with_nowhere_to_write_is_one_line_before_anything_is_done(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = run_cli("patch", "export", "-o", "patches", "--pin", cwd=str(empty),
                   env={"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert proc.returncode == 2 and "--manifest FILE" in proc.stderr and "Traceback" not in proc.stderr
    assert not (empty / "patches").exists()
    lone = run_cli("patch", "export", "-o", "patches", "--manifest", "x.toml", cwd=str(empty))
    assert lone.returncode == 2 and "give --pin too" in lone.stderr


# rebase: two releases; 2.0 changes a line the patch does not touch, or (conflict) the same line
V10 = "ALPHA = 1\n" + "".join(f"PAD{n} = {n}\n" for n in range(8)) + "GAMMA = 3\n"
V20 = V10.replace("PAD7 = 7", "PAD7 = 70")
CLEAN = V10.replace("ALPHA = 1", "ALPHA = 10")
CONFLICTING = V10.replace("PAD7 = 7", "PAD7 = 700")


@pytest.fixture(scope="module")
def releases(tmp_path_factory) -> Path:
    house = tmp_path_factory.mktemp("pinreleases")
    for version, text in (("1.0", V10), ("2.0", V20)):
        build_wheel(house, "toy", version, {"toy/__init__.py": "", "toy/core.py": text})
    return house


def _rebase(project: Path, *args: str):
    env = {"PIP_CACHE_DIR": str(project / ".pip"), "UV_CACHE_DIR": str(project / ".uv"),
           "XDG_CACHE_HOME": str(project / ".xdg")}
    proc = run_cli("patch", "rebase", *args, "--format", "json", cwd=str(project), env=env)
    assert proc.stdout, proc.stderr
    result = json.loads(proc.stdout)
    jsonschema.validate(result, json_schema("patch-rebase"))
    return proc.returncode, result


def _project(tmp_path: Path, patched: str) -> tuple[Path, Path]:
    project = tmp_path / "project"
    (project / "patches").mkdir(parents=True)
    old = project / "patches" / "toy@1.0.patch"
    old.write_text(patch_text("toy", "1.0", {"toy/core.py": (V10, patched)}))
    manifest = _write(project / "driftscan.toml", "# team manifest\n[patches]\n")
    pin_patch(str(manifest), str(old), "toy", "1.0", hashlib.sha256(old.read_bytes()).hexdigest())
    return project, manifest


@pytest.mark.slow
def test_rebase_pin_adds_the_new_versions_line_and_keeps_the_old(tmp_path, releases):
    project, manifest = _project(tmp_path, CLEAN)
    old_entries = _entries(manifest)
    code, result = _rebase(project, "toy", "--to", "2.0", "--wheels", str(releases), "--pin")
    assert code == 0 and result["state"] == "written", result
    assert result["pinned"] == {"manifest": str(manifest), "key": "patches/toy@2.0.patch", "status": "added"}
    new = project / "patches" / "toy@2.0.patch"
    assert _entries(manifest) == {**old_entries,
                                  "patches/toy@2.0.patch": ("toy", "==2.0", hashlib.sha256(new.read_bytes()).hexdigest())}
    assert manifest.read_text().startswith("# team manifest\n[patches]\n")

    # again, as text: the same patch is there, its line already says so; nothing is written
    before = manifest.read_bytes()
    text = run_cli("patch", "rebase", "toy", "--to", "2.0", "--wheels", str(releases), "--pin", cwd=str(project),
                   env={"PIP_CACHE_DIR": str(project / ".pip"), "UV_CACHE_DIR": str(project / ".uv")})
    assert text.returncode == 0, text.stdout + text.stderr
    assert f"pinned in {manifest}: its line already says this (not written)" in text.stdout
    assert manifest.read_bytes() == before


@pytest.mark.slow
def test_continue_pin_of_a_rebase_started_without_it_pins_in_the_manifest_found_here(tmp_path, releases):
    project, manifest = _project(tmp_path, CONFLICTING)
    code, result = _rebase(project, "toy", "--to", "2.0", "--wheels", str(releases))
    assert code == 1 and result["state"] == "conflict"
    work = project / "patches" / "toy@2.0.rebase"
    assert json.loads((work / "state.json").read_text())["pin"] is None
    merged = work / "files" / "toy" / "core.py"
    lines = merged.read_text().splitlines(keepends=True)
    start = next(i for i, ln in enumerate(lines) if ln.startswith("<<<<<<<"))
    end = next(i for i, ln in enumerate(lines) if ln.startswith(">>>>>>>"))
    merged.write_text("".join(lines[:start] + ["PAD7 = 7000\n"] + lines[end + 1:]))
    code, done = _rebase(project, "--continue", "--pin")
    assert code == 0 and done["pinned"]["status"] == "added", done
    new = project / "patches" / "toy@2.0.patch"
    assert _entries(manifest)["patches/toy@2.0.patch"][2] == hashlib.sha256(new.read_bytes()).hexdigest()


@pytest.mark.slow
def test_rebase_pin_through_a_conflict_and_continue_and_a_forged_state(tmp_path, releases):
    project, manifest = _project(tmp_path, CONFLICTING)
    before = manifest.read_text()
    code, result = _rebase(project, "toy", "--to", "2.0", "--wheels", str(releases), "--pin")
    assert code == 1 and result["state"] == "conflict" and result["pinned"] is None
    assert manifest.read_text() == before
    work = project / "patches" / "toy@2.0.rebase"
    state_file = work / "state.json"
    state = json.loads(state_file.read_text())
    assert state["pin"] == str(manifest)
    merged = work / "files" / "toy" / "core.py"
    lines = merged.read_text().splitlines(keepends=True)
    start = next(i for i, ln in enumerate(lines) if ln.startswith("<<<<<<<"))
    end = next(i for i, ln in enumerate(lines) if ln.startswith(">>>>>>>"))
    merged.write_text("".join(lines[:start] + ["PAD7 = 7000\n"] + lines[end + 1:]))

    # a state that names a relative path, or a file every user may write, is refused: nothing written
    planted = _write(tmp_path / "planted.toml", "[patches]\n")
    os.chmod(planted, 0o666)
    for forged, said in (("driftscan.toml", "'pin' is not the absolute path"), (str(planted), "writable by every")):
        state_file.write_text(json.dumps({**state, "pin": forged}))
        code, refused = _rebase(project, "--continue")
        assert code == 2 and refused["state"] == "refused" and said in refused["message"], refused
        assert planted.read_text() == "[patches]\n" and manifest.read_text() == before and work.exists()
        assert not (project / "patches" / "toy@2.0.patch").exists()

    state_file.write_text(json.dumps(state))
    code, done = _rebase(project, "--continue")
    assert code == 0 and done["state"] == "written", done
    assert done["pinned"] == {"manifest": str(manifest), "key": "patches/toy@2.0.patch", "status": "added"}
    new = project / "patches" / "toy@2.0.patch"
    assert _entries(manifest)["patches/toy@2.0.patch"] == ("toy", "==2.0", hashlib.sha256(new.read_bytes()).hexdigest())
    assert "patches/toy@1.0.patch" in _entries(manifest)


def test_the_bound_is_the_configuration_readers():
    from driftscan.config import find
    from driftscan.patches import pin as pinning

    assert pinning.TOML_MAX == find.TOML_MAX
