"""driftscan.pristine with pip's HTTP cache and ``--fetch``, filled and run by real pip.

pip caches a download only when the response allows it (Cache-Control / ETag). The offline tests
serve real wheels from a local index that sends those headers, as PyPI does; the network tests
use PyPI itself.
"""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from driftscan.caches.statcache import user_cache_dir
from driftscan.environment import find_distributions
from driftscan.core.values import Distribution, RecordEntry
from driftscan.pristine import PristineOptions, SourceKind, find_pristine, pipcache
from driftscan.pristine.fetch import index_arguments, tag_arguments
from fixtures import venvs
from fixtures.localindex import LocalIndex
from fixtures.wheels import build_wheel
from tests.conftest import skip_or_fail_without_network

CORE = "VALUE = {name!r}\n" + "# filler\n" * 30
SERVED = ("prcache", "prcache2", "prpoison")
# pip without the user's configuration (find-links, mirrors), so that it talks only to the index given
ISOLATED = {"PIP_CONFIG_FILE": os.devnull, "PIP_FIND_LINKS": "", "PIP_EXTRA_INDEX_URL": "", "PIP_RETRIES": "0"}


def dist_of(site: Path, name: str) -> Distribution:
    found = [m.distribution for m in find_distributions((str(site),)) if m.distribution and m.distribution.name == name]
    assert found, f"{name} is not installed in {site}"
    return found[0]


def row(dist: Distribution, path: str) -> RecordEntry:
    return next(e for e in dist.entries if e.path == path)


def bodies(cache: Path) -> set[Path]:
    return set((cache / "http-v2").rglob("*.body"))


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    served = tmp_path_factory.mktemp("served")
    for name in SERVED:
        build_wheel(served, name, "1.0", {f"{name}/__init__.py": "", f"{name}/core.py": CORE.format(name=name)})
    local = LocalIndex(served)
    yield local
    local.close()


def modern_pip(*args: str) -> str:
    """The dev venv's pip (a recent release), isolated from the user's pip configuration."""
    return venvs.run([sys.executable, "-m", "pip", "--no-input", *args], env=ISOLATED)


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("pristine-pipcache") / "venv"
    venvs.run([sys.executable, "-m", "venv", "--without-pip", str(path)])
    return path


def test_pip_http_cache(index, venv, tmp_path, monkeypatch):
    cache = tmp_path / "pip-cache"
    modern_pip("--python", str(venvs.python_of(venv)), "install", *index.pip_args(cache), "prcache==1.0")
    # What pip 23.3+ wrote: http-v2/<5 levels of the key's first characters>/<sha224 of the URL>.body, the wheel
    url = f"{index.url}/files/prcache-1.0-py3-none-any.whl"
    key = hashlib.sha224(url.encode()).hexdigest()
    body = cache / "http-v2" / Path(*key[:5]) / f"{key}.body"
    assert body.is_file() and zipfile.is_zipfile(body)
    assert (cache / "http-v2" / Path(*key[:5]) / key).is_file()  # the response's headers, framed
    site = venvs.site_packages_of(venv)
    dist = dist_of(site, "prcache")
    core = row(dist, "prcache/core.py")
    original = (site / "prcache/core.py").read_bytes()
    with open(site / "prcache/core.py", "a") as f:
        f.write("print('debug')\n")
    (tmp_path / "no-uv").mkdir()
    options = PristineOptions(pip_cache=str(cache), uv_cache=str(tmp_path / "no-uv"))

    opened: list[str] = []
    real_index_body = pipcache._index_body

    def counting(path: str):
        opened.append(path)
        return real_index_body(path)

    monkeypatch.setattr(pipcache, "_index_body", counting)
    said: list[str] = []
    with find_pristine([(dist, [core])], options, progress=said.append) as found:
        lookup = found.get(dist)
        assert lookup.copy is not None and lookup.copy.source is SourceKind.PIP_CACHE, lookup
        assert lookup.copy.path == str(body)
        assert lookup.copy.read(core) == original
    assert len(opened) == len(bodies(cache)) == 2  # the wheel and the index page
    assert said == ["looking for the original files of prcache 1.0", f"indexing pip's cache {cache}"]
    [index_file] = (Path(user_cache_dir()) / "pristine").glob("pip-http-v2-*.json")
    assert index_file == Path(pipcache.index_file(str(cache / "http-v2")))
    written = index_file.stat().st_mtime_ns

    opened.clear()  # an unchanged cache: no body is opened again
    with find_pristine([(dist, [core])], options) as found:
        assert found.get(dist).copy.path == str(body)
    assert opened == []

    before = bodies(cache)  # a new download invalidates only what changed: the new bodies are opened
    modern_pip("--python", str(venvs.python_of(venv)), "install", *index.pip_args(cache), "prcache2==1.0")
    junk = cache / "http-v2" / "f" / "f" / "f" / "f" / "f" / ("f" * 56 + ".body")
    junk.parent.mkdir(parents=True)
    junk.write_bytes(b"PK\x03\x04" + os.urandom(300))  # a zip's first bytes and nothing else
    new = bodies(cache) - before
    assert len(new) == 3
    dist2 = dist_of(site, "prcache2")
    (site / "prcache2/core.py").unlink()
    core2 = row(dist2, "prcache2/core.py")
    with find_pristine([(dist, [core]), (dist2, [core2])], options) as found:
        assert found.get(dist).copy.path == str(body)
        assert found.get(dist2).copy.source is SourceKind.PIP_CACHE
        assert found.get(dist2).copy.read(core2) == CORE.format(name="prcache2").encode()
    assert sorted(opened) == sorted(map(str, new))
    assert index_file.stat().st_mtime_ns != written


def test_poisoned_uv_cache_falls_through_to_pip_cache(index, tmp_path):
    cache = tmp_path / "uv-cache"
    uv_venv = venvs.make_uv_venv(tmp_path / "uv-venv", cache)
    venvs.uv_install(uv_venv, cache, "--no-index", "--find-links", str(index.directory), "prpoison==1.0")
    pip_cache = tmp_path / "pip-cache"
    modern_pip("download", "--no-deps", "--dest", str(tmp_path / "dl"), *index.pip_args(pip_cache), "prpoison==1.0")
    site = venvs.site_packages_of(uv_venv)
    dist = dist_of(site, "prpoison")
    core = row(dist, "prpoison/core.py")
    assert os.stat(site / "prpoison/core.py").st_nlink > 1
    with open(site / "prpoison/core.py", "a") as f:  # in place: the cache copy is edited too
        f.write("import pdb; pdb.set_trace()\n")
    with find_pristine([(dist, [core])], PristineOptions(uv_cache=str(cache), pip_cache=str(pip_cache))) as found:
        lookup = found.get(dist)
        assert lookup.copy.source is SourceKind.PIP_CACHE
        [poisoned] = lookup.rejected
        assert poisoned.source is SourceKind.UV_CACHE and "poisoned" in poisoned.reason
        assert lookup.copy.read(core) == CORE.format(name="prpoison").encode()


def test_no_fetch_runs_no_subprocess(index, venv, tmp_path, monkeypatch):
    modern_pip("--python", str(venvs.python_of(venv)), "install", *index.pip_args(tmp_path / "c"), "prpoison==1.0")
    dist = dist_of(venvs.site_packages_of(venv), "prpoison")

    def refuse(*args, **kwargs):
        raise AssertionError(f"a subprocess was run: {args}")

    monkeypatch.setattr(subprocess, "run", refuse)
    monkeypatch.setattr(subprocess, "Popen", refuse)
    options = PristineOptions(pip_cache=str(tmp_path / "none"), uv_cache=str(tmp_path / "none"))
    with find_pristine([(dist, [row(dist, "prpoison/core.py")])], options) as found:
        lookup = found.get(dist)
        assert lookup.copy is None and "--fetch (not asked for)" in lookup.reason


def test_fetch_without_pip_says_so(index, venv, tmp_path, monkeypatch):
    import importlib.util

    modern_pip("--python", str(venvs.python_of(venv)), "install", *index.pip_args(tmp_path / "c"), "prcache==1.0")
    dist = dist_of(venvs.site_packages_of(venv), "prcache")
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pip" else real_find_spec(name, *a))
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("pip was run"))
    options = PristineOptions(fetch=True, pip_cache=str(tmp_path / "x"), uv_cache=str(tmp_path / "x"))
    with find_pristine([(dist, [row(dist, "prcache/core.py")])], options) as found:
        assert f"--fetch (driftscan's interpreter {sys.executable} has no pip)" in found.get(dist).reason


def test_fetch_failure_is_a_reason(index, venv, tmp_path, monkeypatch):
    modern_pip("--python", str(venvs.python_of(venv)), "install", *index.pip_args(tmp_path / "c"), "prcache==1.0")
    dist = dist_of(venvs.site_packages_of(venv), "prcache")
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (venv / "pip.conf").write_text(f"[global]\nindex-url = http://127.0.0.1:{port}/simple\n")
    for name, value in ISOLATED.items():
        monkeypatch.setenv(name, value)
    options = PristineOptions(fetch=True, venv=str(venv), pip_cache=str(tmp_path / "x"), uv_cache=str(tmp_path / "x"))
    try:
        with find_pristine([(dist, [row(dist, "prcache/core.py")])], options) as found:
            lookup = found.get(dist)
            assert lookup.copy is None
            [failed] = lookup.rejected
            assert failed.source is SourceKind.FETCH and failed.path == "prcache==1.0"
            assert failed.reason.startswith("pip download failed: ") and "prcache" in failed.reason
            assert f"index settings from {venv}/pip.conf" in failed.reason
    finally:
        (venv / "pip.conf").unlink()


def test_fetch_arguments(tmp_path):
    assert tag_arguments(frozenset({"py3-none-any"}), "3.12") == []
    assert tag_arguments(None, "3.12") == []
    assert tag_arguments(frozenset({"cp312-cp312-manylinux_2_17_x86_64", "cp312-cp312-manylinux2014_x86_64"}), None) \
        == ["--implementation", "cp", "--python-version", "3.12", "--abi", "cp312",
            "--platform", "manylinux2014_x86_64", "--platform", "manylinux_2_17_x86_64"]
    # an abi3 wheel's cp38 is its oldest Python: the environment's version picks the wheel
    assert tag_arguments(frozenset({"cp38-abi3-win_amd64"}), "3.12")[:4] == ["--implementation", "cp",
                                                                            "--python-version", "3.12"]
    assert tag_arguments(frozenset({"cp38-abi3-win_amd64"}), None)[:4] == ["--implementation", "cp",
                                                                          "--python-version", "3.8"]
    assert tag_arguments(frozenset({"cp312-cp312-linux;rm -rf"}), None) == []
    (tmp_path / "pip.conf").write_text(
        "[global]\nindex-url = https://mirror.example/simple\nextra-index-url = file:///etc https://b.example/s\n"
        "trusted-host = evil.example\n[download]\nindex_url = ftp://x.example/\n[install]\n"
        "extra-index-url = https://c.example/simple\n")
    args, note = index_arguments(str(tmp_path))
    assert args == ["--index-url", "https://mirror.example/simple", "--extra-index-url", "https://c.example/simple"]
    assert note == f"index settings from {tmp_path}/pip.conf"
    (tmp_path / "pip.conf").write_text("[global\nnot ini")
    assert index_arguments(str(tmp_path))[0] == []
    (tmp_path / "pip.conf").unlink()
    os.mkfifo(tmp_path / "pip.conf")
    assert index_arguments(str(tmp_path))[0] == []  # never blocks


@pytest.mark.network
def test_pip_cache_from_pypi(tmp_path):
    target = tmp_path / "venv"
    venvs.run([sys.executable, "-m", "venv", "--without-pip", str(target)])
    cache = tmp_path / "pip-cache"
    try:
        modern_pip("--python", str(venvs.python_of(target)), "install", "--cache-dir", str(cache),
                   "--index-url", "https://pypi.org/simple", "six==1.17.0")
    except venvs.InstallError as exc:
        skip_or_fail_without_network(f"PyPI unreachable: {exc}")
    cached = any(zipfile.is_zipfile(b) for b in bodies(cache))
    site = venvs.site_packages_of(target)
    dist = dist_of(site, "six")
    entry = row(dist, "six.py")
    with open(site / "six.py", "a") as f:
        f.write("# edited\n")
    with find_pristine([(dist, [entry])], PristineOptions(pip_cache=str(cache), uv_cache=str(tmp_path))) as found:
        lookup = found.get(dist)
        if cached:
            assert lookup.copy is not None and lookup.copy.source is SourceKind.PIP_CACHE
            assert lookup.copy.read(entry) is not None
        else:
            # Seen here: a proxy strips PyPI's caching headers, so pip keeps no body at all (the
            # local-index test covers the cache format). The lookup must then say so, not guess.
            assert lookup.copy is None and "pip's cache" in (lookup.reason or ""), lookup.reason


@pytest.mark.network
def test_fetch_downloads_and_verifies(tmp_path):
    target = tmp_path / "venv"
    venvs.run([sys.executable, "-m", "venv", "--without-pip", str(target)])
    try:
        venvs.modern_pip_install(target, "--no-deps", "six==1.17.0")  # with the user's own index settings
    except venvs.InstallError as exc:
        skip_or_fail_without_network(f"package index unreachable: {exc}")
    site = venvs.site_packages_of(target)
    dist = dist_of(site, "six")
    entry = row(dist, "six.py")
    original = (site / "six.py").read_bytes()
    with open(site / "six.py", "a") as f:
        f.write("# edited\n")
    options = PristineOptions(fetch=True, venv=str(target), python_version="3.11",
                              pip_cache=str(tmp_path / "none"), uv_cache=str(tmp_path / "none"))
    with find_pristine([(dist, [entry])], options) as found:
        lookup = found.get(dist)
        if lookup.copy is None and lookup.rejected and "pip download failed" in lookup.rejected[-1].reason:
            skip_or_fail_without_network(f"pip download failed: {lookup.rejected[-1].reason}")
        assert lookup.copy is not None and lookup.copy.source is SourceKind.FETCH, lookup
        assert lookup.copy.read(entry) == original
        download = Path(lookup.copy.path)
        assert download.name == "six-1.17.0-py2.py3-none-any.whl" and download.is_file()
    assert not download.exists()  # the temporary directory went with the set


def test_the_download_line_finds_a_wheel_whose_inner_tag_is_linux_but_whose_name_is_manylinux(tmp_path):
    """auditwheel leaves ``linux_x86_64`` in the WHEEL file and renames the file to manylinux (vLLM
    0.33's cp38-abi3 wheel): the arguments made from the installed tags must still find that file,
    for an environment of another Python than the wheel's oldest. Checked with a real pip download."""
    house = tmp_path / "house"
    built = build_wheel(house, "abipkg", "1.0", {"abipkg/__init__.py": "X = 1\n"}, tag="cp38-abi3-linux_x86_64")
    served = built.with_name("abipkg-1.0-cp38-abi3-manylinux_2_28_x86_64.whl")
    built.rename(served)
    args = tag_arguments(frozenset({"cp38-abi3-linux_x86_64"}), "3.11")
    assert args[:4] == ["--implementation", "cp", "--python-version", "3.11"]
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", *args,
                           "--no-index", "--find-links", str(house), "abipkg==1.0", "-d", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in out.iterdir()] == [served.name]
