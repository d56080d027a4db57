"""``patch apply --yes`` leaves no pyc behind that Python would run instead of the patched source
(an unchecked-hash pyc, as Debian's and conda's installers compile them)."""

from __future__ import annotations

import py_compile

from fixtures.envtree import install, make_venv
from fixtures.patchfiles import patch_text

from driftscan.patches.apply import Source, apply_patches
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
