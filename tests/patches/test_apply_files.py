"""``patch apply`` file by file: a deleted file, a created one in a new directory, the record of what
was written, and no pyc left behind that Python would run instead of the patched source (an
unchecked-hash pyc, as Debian's and conda's installers compile them)."""

from __future__ import annotations

import hashlib
import json
import py_compile

from fixtures.envtree import install, make_venv
from fixtures.patchfiles import patch_text

from driftscan.patches.apply import FileState, PatchState, Source, apply_patches
from driftscan.patches.manifest import from_directory

OLD = "def alpha():\n    return 1\n"
NEW = "def alpha():\n    return 10\n"


def test_an_unchecked_hash_pyc_of_the_old_source_is_removed(tmp_path):
    venv, site = make_venv(tmp_path / "venv")
    install(site, "toy-fix", "1.0", {"toyfix/__init__.py": "", "toyfix/core.py": OLD, "toyfix/other.py": OLD})
    stale = py_compile.compile(str(site / "toyfix/core.py"), doraise=True,
                               invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    untouched = py_compile.compile(str(site / "toyfix/other.py"), doraise=True,
                                   invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    patches = tmp_path / "patches"
    patches.mkdir()
    (patches / "toy-fix@1.0.patch").write_text(patch_text("toy-fix", "1.0", {"toyfix/core.py": (OLD, NEW)}))
    source = Source(tuple(from_directory(str(patches))), directory=str(patches))

    dry = apply_patches([str(site)], source)
    assert not dry.patches[0].files[0].bytecode_removed and (tmp_path / stale).exists()

    report = apply_patches([str(site)], source, yes=True)
    (f,) = report.patches[0].files
    assert f.written and (site / "toyfix/core.py").read_text() == NEW
    assert f.bytecode_removed == [stale] and not (tmp_path / stale).exists()
    assert (tmp_path / untouched).exists() and not report.errors


def test_delete_and_create_then_already_and_the_record(tmp_path):
    venv, site = make_venv(tmp_path / "venv")
    install(site, "toy-fix", "1.0", {"toyfix/__init__.py": "", "toyfix/core.py": OLD, "toyfix/gone.py": OLD})
    patches = tmp_path / "patches"
    patches.mkdir()
    text = patch_text("toy-fix", "1.0", {"toyfix/gone.py": (OLD, None), "toyfix/sub/new.py": (None, NEW)})
    (patches / "toy-fix@1.0.patch").write_text(text)
    source = Source(tuple(from_directory(str(patches))), directory=str(patches))

    report = apply_patches([str(site)], source, yes=True)
    files = {f.path: f for f in report.patches[0].files}
    assert files["toyfix/gone.py"].change.value == "delete" and files["toyfix/gone.py"].written
    assert files["toyfix/sub/new.py"].change.value == "create" and files["toyfix/sub/new.py"].written
    assert not (site / "toyfix/gone.py").exists() and (site / "toyfix/sub/new.py").read_text() == NEW
    record = json.loads(open(report.record).read())
    assert record["version"] == 1
    (entry,) = record["patches"].values()
    assert entry["files"] == {"toyfix/gone.py": None, "toyfix/sub/new.py": hashlib.sha256(NEW.encode()).hexdigest()}
    assert entry["sha256"] == hashlib.sha256(text.encode()).hexdigest() and entry["version"] == "1.0"

    again = apply_patches([str(site)], source, yes=True)
    assert again.patches[0].state is PatchState.ALREADY and not again.written
    assert {f.state for f in again.patches[0].files} == {FileState.ALREADY}
    assert json.loads(open(report.record).read()) == record  # nothing written: the record as it was


def test_a_file_to_delete_with_other_content_conflicts(tmp_path):
    venv, site = make_venv(tmp_path / "venv")
    install(site, "toy-fix", "1.0", {"toyfix/__init__.py": "", "toyfix/gone.py": OLD})
    (site / "toyfix/gone.py").write_text(NEW)
    patches = tmp_path / "patches"
    patches.mkdir()
    (patches / "toy-fix@1.0.patch").write_text(patch_text("toy-fix", "1.0", {"toyfix/gone.py": (OLD, None)}))
    report = apply_patches([str(site)], Source(tuple(from_directory(str(patches)))), yes=True)
    (f,) = report.patches[0].files
    assert f.state is FileState.CONFLICT and not f.written and (site / "toyfix/gone.py").read_text() == NEW


def test_a_distribution_without_a_record_is_not_patched(tmp_path):
    venv, site = make_venv(tmp_path / "venv")
    egg = site / "toy_fix-1.0.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: toy-fix\nVersion: 1.0\n")
    (site / "toyfix").mkdir()
    (site / "toyfix/core.py").write_text(OLD)
    patches = tmp_path / "patches"
    patches.mkdir()
    (patches / "toy-fix@1.0.patch").write_text(patch_text("toy-fix", "1.0", {"toyfix/core.py": (OLD, NEW)}))
    report = apply_patches([str(site)], Source(tuple(from_directory(str(patches)))), yes=True)
    (patch,) = report.patches
    assert patch.state is PatchState.REFUSED and "no RECORD" in patch.message and not report.written
    assert (site / "toyfix/core.py").read_text() == OLD


def test_a_patch_whose_every_file_is_left_to_reapply_is_left_not_applied(tmp_path):
    venv, site = make_venv(tmp_path / "venv")
    install(site, "toy-fix", "1.0", {"toyfix/__init__.py": "", "toyfix/core.py": OLD})
    patches = tmp_path / "patches"
    patches.mkdir()
    (patches / "toy-fix@1.0.patch").write_text(patch_text("toy-fix", "1.0", {"toyfix/core.py": (OLD, NEW)}))
    source = Source(tuple(from_directory(str(patches))), directory=str(patches))
    leave = {str(site / "toyfix/core.py"): "the checkpoint holds an edit of it"}
    report = apply_patches([str(site)], source, yes=True, leave=leave)
    (patch,) = report.patches
    assert patch.state is PatchState.LEFT and patch.files[0].state is FileState.LEFT
    assert not report.written and (site / "toyfix/core.py").read_text() == OLD and report.record is None


def test_an_older_versions_patch_beside_the_installed_versions_own_says_it_is_superseded(tmp_path):
    venv, site = make_venv(tmp_path / "venv")
    install(site, "toy-fix", "2.0", {"toyfix/__init__.py": "", "toyfix/core.py": OLD})
    patches = tmp_path / "patches"
    patches.mkdir()
    for version in ("1.0", "2.0"):
        (patches / f"toy-fix@{version}.patch").write_text(patch_text("toy-fix", version, {"toyfix/core.py": (OLD, NEW)}))
    report = apply_patches([str(site)], Source(tuple(from_directory(str(patches))), directory=str(patches)), yes=True)
    states = {p.patch: p for p in report.patches}
    assert states[str(patches / "toy-fix@2.0.patch")].state is PatchState.APPLIED, states
    old = states[str(patches / "toy-fix@1.0.patch")]
    assert old.state is PatchState.UNUSED
    assert "takes" in old.message and "toy-fix@2.0.patch" in old.message and "drop its manifest line" in old.message


def test_the_original_a_patch_overwrites_is_kept_for_export_and_rebase(tmp_path, monkeypatch):
    from driftscan.pristine.kept import kept
    from fixtures.wheels import record_hash

    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(tmp_path / "cache"))
    venv, site = make_venv(tmp_path / "venv")
    install(site, "toy-fix", "1.0", {"toyfix/__init__.py": "", "toyfix/core.py": OLD, "toyfix/gone.py": NEW})
    patches = tmp_path / "patches"
    patches.mkdir()
    text = patch_text("toy-fix", "1.0", {"toyfix/core.py": (OLD, NEW), "toyfix/gone.py": (NEW, None)})
    (patches / "toy-fix@1.0.patch").write_text(text)
    source = Source(tuple(from_directory(str(patches))), directory=str(patches))
    assert kept(record_hash(OLD.encode())) is None
    apply_patches([str(site)], source)  # a dry run keeps nothing
    assert kept(record_hash(OLD.encode())) is None
    apply_patches([str(site)], source, yes=True)
    assert kept(record_hash(OLD.encode())) == OLD.encode() and kept(record_hash(NEW.encode())) == NEW.encode()


def test_an_unused_patch_for_an_older_release_names_the_rebase(tmp_path):
    """Upgraded by a plain install: the 1.0 patch is unused and the message says what makes the
    patch for the installed 2.0; a patch for a later release than the one installed gets no such line."""
    venv, site = make_venv(tmp_path / "venv")
    install(site, "toy-fix", "2.0", {"toyfix/__init__.py": "", "toyfix/core.py": OLD})
    patches = tmp_path / "patches"
    patches.mkdir()
    for version in ("1.0", "3.0"):
        (patches / f"toy-fix@{version}.patch").write_text(patch_text("toy-fix", version, {"toyfix/core.py": (OLD, NEW)}))
    report = apply_patches([str(site)], Source(tuple(from_directory(str(patches))), directory=str(patches)), yes=True)
    messages = {p.patch.rsplit("/", 1)[-1]: (p.state, p.message) for p in report.patches}
    assert messages == {
        "toy-fix@1.0.patch": (PatchState.UNUSED, "toy-fix 2.0 is installed, not ==1.0: `driftscan patch rebase "
                                                 "toy-fix --to 2.0` makes the patch for it"),
        "toy-fix@3.0.patch": (PatchState.UNUSED, "toy-fix 2.0 is installed, not ==3.0"),
    }
    assert (site / "toyfix/core.py").read_text() == OLD and not report.written
