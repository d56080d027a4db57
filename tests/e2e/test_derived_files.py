"""Every entry of environment/derived.py's table, on the real tool that writes it."""

from __future__ import annotations

import os

import pytest

from driftscan import audit
from driftscan.environment.derived import DERIVED_CACHES, derived_source
from fixtures import venvs
from fixtures.wheels import build_wheel
from tests.conftest import skip_or_fail_without_network

MODULE = '''import numba


@numba.njit(cache=True)
def add(a, b):
    return a + b


class Ops:
    @staticmethod
    @numba.njit(cache=True)
    def mul(a, b):
        return a * b
'''


@pytest.mark.network
def test_numba_cache_beside_an_owned_module_is_derived(tmp_path):
    build_wheel(tmp_path / "house", "nbpkg", "1.0", {"nbpkg/__init__.py": "", "nbpkg/kernels.py": MODULE})
    venv = venvs.make_pip_venv(tmp_path / "v")
    try:
        venvs.pip_install(venv, "--quiet", "numba")
    except venvs.InstallError as exc:
        skip_or_fail_without_network(f"numba could not be installed from the index: {exc}")
    venvs.pip_install(venv, "--no-index", "--find-links", str(tmp_path / "house"), "nbpkg")
    venvs.run([str(venvs.python_of(venv)), "-c",
               "from nbpkg import kernels as k; k.add(1, 2); k.add(1.5, 2.5); k.Ops.mul(2, 3)"])
    cache = venvs.site_packages_of(venv) / "nbpkg" / "__pycache__"
    written = sorted(n for n in os.listdir(cache) if n.endswith((".nbi", ".nbc")))
    assert any(n.endswith(".nbi") for n in written) and any(n.endswith(".nbc") for n in written), written
    for name in written:
        found = derived_source(str(cache / name))
        assert found is not None and found[0] == str(cache.parent / "kernels.py") and found[1] is DERIVED_CACHES[0]

    assert [d.relpath for d in audit(venv=str(venv)).drifts] == []

    # A removed module is reported missing; its caches go with it, as its bytecode does.
    (cache.parent / "kernels.py").unlink()
    report = audit(venv=str(venv))
    assert [(d.relpath, d.kind.value) for d in report.drifts] == [("nbpkg/kernels.py", "missing")]
    # A cache file of a module no RECORD lists and no file holds is reported, naming the cache.
    ghost = cache / "ghost.f-1.py311.nbi"
    ghost.write_bytes(b"\x80\x04")
    added = [d for d in audit(venv=str(venv)).drifts if d.kind.value == "added"]
    assert [d.path for d in added] == [str(ghost)] and "numba cache" in added[0].evidence


@pytest.mark.parametrize("name, source", [
    ("kernels.add-4.py311.nbi", "kernels.py"),
    ("kernels.Ops.mul-10.py312.1.nbc", "kernels.py"),
    ("__init__.f-2.py313t.nbi", "__init__.py"),
])
def test_numba_names(name, source):
    found = derived_source(os.path.join("/v/pkg/__pycache__", name))
    assert found is not None and found[0] == os.path.join("/v/pkg", source)


@pytest.mark.parametrize("path", ["/v/pkg/__pycache__/kernels.nbi", "/v/pkg/kernels.add-4.py311.nbi",
                                  "/v/pkg/__pycache__/notes.txt", "/v/pkg/__pycache__/.add-4.py311.nbi"])
def test_not_derived(path):
    assert derived_source(path) is None
