"""Compile-cache entries built from files of a real venv that changed since: vLLM's
torch_compile_cache and Triton's cache (Inductor's records no source), laid out as the tools
write them (fixtures/compilecaches.py)."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest

from driftscan import api
from driftscan.environment.target import resolve_target
from driftscan.procs import compilecache
from driftscan.procs.compilecache import CacheDir, default_cache_dirs, scan_compile_caches
from driftscan.procs.model import CacheSignal, CompileCache
from driftscan.procs.scan import environment_of
from driftscan.render.registry import OutputFormat, render
from fixtures.compilecaches import inductor_cache, triton_entry, vllm_entry
from fixtures.harness import run_cli
from fixtures.venvs import site_packages_of


def env_of(venv: Path):
    return environment_of(resolve_target(str(venv), []))


def source(venv: Path) -> Path:
    return site_packages_of(venv) / "pkgx" / "mod.py"


def ctime(path: Path) -> float:
    return os.stat(path).st_ctime


def scan(venv: Path, *dirs: Path, **kw):
    return scan_compile_caches(env_of(venv), [CacheDir("given", str(d)) for d in dirs], **kw)


def tree_size(top: Path) -> int:
    return sum(os.lstat(os.path.join(d, f)).st_size for d, _, fs in os.walk(top) for f in fs)


def test_an_entry_built_after_its_source_changed_is_not_reported(venv, tmp_path):
    mod = source(venv)
    vllm_entry(tmp_path / "vllm", [(str(mod), 3)], built=ctime(mod) + 10)
    triton_entry(tmp_path / "triton", "add_kernel", [(str(mod), 3)], built=ctime(mod) + 10)
    out = scan(venv, tmp_path / "vllm", tmp_path / "triton")
    assert out.entries == [] and out.entries_read == 2 and out.not_checked == []


def test_a_vllm_entry_built_before_its_source_changed_is_named_with_size_and_rm_line(venv, tmp_path):
    mod = source(venv)
    other = site_packages_of(venv) / "pkgx" / "__init__.py"
    entry = vllm_entry(tmp_path / "vllm", [(str(mod), 3), (str(other), 1), ("/usr/lib/python3/x.py", 7)],
                       built=ctime(mod) - 10)
    out = scan(venv, tmp_path / "vllm")
    [e] = out.entries
    assert e.cache is CompileCache.VLLM and e.path == str(entry) and e.signal is CacheSignal.CHANGED
    assert set(e.files) == {str(mod), str(other)} and e.count == 2 and e.sources == 2  # /usr/lib: not the venv's
    assert e.bytes == tree_size(entry) and e.size_complete and e.built_at == pytest.approx(ctime(mod) - 10)
    assert e.remedy == f"rm -r -- {shlex.quote(str(entry))}"
    assert entry.is_dir() and (entry / "computation_graph.py").is_file()  # never deleted


def test_a_triton_kernel_built_from_a_source_since_deleted_is_named(venv, tmp_path):
    mod = source(venv)
    entry = triton_entry(tmp_path / "triton", "add_kernel", [(str(mod), 3)], built=ctime(mod) + 10)
    mod.unlink()
    [e] = scan(venv, tmp_path / "triton").entries
    assert e.cache is CompileCache.TRITON and e.kernel == "add_kernel" and e.signal is CacheSignal.DELETED
    assert e.files == [str(mod)] and e.bytes == tree_size(entry)


def test_inductor_records_no_source_but_its_triton_kernels_do(venv, tmp_path):
    mod = source(venv)
    top = inductor_cache(tmp_path / "torchinductor_u", built=ctime(mod) - 10)
    kernel = triton_entry(top / "triton" / "0", "triton_poi_fused_add_0",
                          [(str(top / "xy" / "cxyz.py"), 18)], built=ctime(mod) - 10)
    assert scan(venv, top).entries == []  # the kernel's source is Inductor's generated file, not the venv's
    mine = triton_entry(top / "triton" / "0", "my_kernel", [(str(mod), 9)], built=ctime(mod) - 10)
    out = scan(venv, top)
    assert [e.path for e in out.entries] == [str(mine)] and out.entries_read == 2 and kernel.is_dir()


def test_the_changed_files_given_select_the_entries(venv, tmp_path):
    mod = source(venv)
    other = site_packages_of(venv) / "pkgx" / "__init__.py"
    vllm_entry(tmp_path / "vllm", [(str(mod), 3)], built=ctime(mod) - 10, key="aaaaaaaaaa")
    b = vllm_entry(tmp_path / "vllm", [(str(other), 1)], built=ctime(other) - 10, key="bbbbbbbbbb")
    out = scan(venv, tmp_path / "vllm", changed=[str(other)])
    assert [e.path for e in out.entries] == [str(b)]


def test_the_default_directories_follow_the_tools_variables(tmp_path):
    dirs = default_cache_dirs({"VLLM_CACHE_ROOT": "/v", "TORCHINDUCTOR_CACHE_DIR": "/i", "TRITON_CACHE_DIR": "/t"},
                              home="/h")
    assert [(d.label, d.path) for d in dirs] == [("vllm", "/v/torch_compile_cache"), ("inductor", "/i"),
                                                 ("triton", "/t")]
    dirs = default_cache_dirs({"XDG_CACHE_HOME": "/x", "TRITON_HOME": "/th"}, home="/h")
    assert dirs[0].path == "/x/vllm/torch_compile_cache" and dirs[2].path == "/th/.triton/cache"
    assert os.path.basename(dirs[1].path).startswith("torchinductor_")


def test_procs_reports_the_entries_in_text_and_json(venv, tmp_path):
    mod = source(venv)
    entry = vllm_entry(tmp_path / "vllm", [(str(mod), 3)], built=ctime(mod) - 10)
    report = api.procs(venv=str(venv), compile_cache_dirs=[str(tmp_path / "vllm")])
    assert str(tmp_path / "vllm") in report.compile_caches.dirs
    text = render(report, OutputFormat.TEXT)
    assert "compile cache entries built from changed files: 1 entry" in text
    assert f"rm -r -- {shlex.quote(str(entry))}" in text and str(mod) in text
    proc = run_cli("procs", "--venv", str(venv), "--compile-cache", str(tmp_path / "vllm"), "--format", "json",
                   env={"HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "tmp")})
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)["compile_caches"]
    assert [e["path"] for e in data["entries"]] == [str(entry)] and data["entries"][0]["signal"] == "changed-since-built"
    proc = run_cli("procs", "--venv", str(venv), "--no-compile-caches", "--format", "json")
    assert json.loads(proc.stdout)["compile_caches"] is None and entry.is_dir()


# Hostile caches: every read capped, nothing followed, the walk bounded.

def test_a_huge_computation_graph_is_read_only_up_to_its_cap(venv, tmp_path):
    mod = source(venv)
    entry = vllm_entry(tmp_path / "vllm", [(str(mod), 3)], built=ctime(mod) - 10)
    graph = entry / "computation_graph.py"
    with open(graph, "r+b") as f:
        f.truncate(compilecache.GRAPH_HEAD * 4)  # sparse: its recorded source sits in the part read
    os.utime(graph, (ctime(mod) - 10,) * 2)
    out = scan(venv, tmp_path / "vllm")
    assert [e.files for e in out.entries] == [[str(mod)]]
    assert any("only its first" in n for n in out.not_checked)


def test_one_enormous_line_of_locations_is_scanned_once(venv, tmp_path):
    mod = source(venv)
    entry = triton_entry(tmp_path / "triton", "k", [(str(mod), 3)], built=ctime(mod) - 10)
    (entry / "k.ttir").write_bytes(b'loc("/' * 600_000 + b"File: /:1 in " * 100_000)
    os.utime(entry / "k.ttir", (ctime(mod) - 10,) * 2)
    [e] = scan(venv, tmp_path / "triton").entries  # the .ttgir, read next, names it
    assert e.files == [str(mod)]


def test_symlinks_in_a_cache_are_never_followed(venv, tmp_path):
    mod = source(venv)
    outside = vllm_entry(tmp_path / "elsewhere", [(str(mod), 3)], built=ctime(mod) - 10)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "link").symlink_to(outside.parent)  # a directory link out of the cache
    entry = cache / "e"
    entry.mkdir()
    (entry / "computation_graph.py").symlink_to(outside / "computation_graph.py")  # a file link
    os.utime(entry / "computation_graph.py", (ctime(mod) - 10,) * 2, follow_symlinks=False)
    out = scan(venv, cache)
    assert out.entries == [] and out.entries_read == 1
    assert any("symlink" in n for n in out.not_checked)


def test_deep_nesting_and_many_names_stay_within_the_bounds(venv, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    deep = cache
    for _ in range(compilecache.MAX_DEPTH + 5):
        deep = deep / "d"
    deep.mkdir(parents=True)
    assert any("deeper than" in n for n in scan(venv, cache).not_checked)
    wide = tmp_path / "wide"
    wide.mkdir()
    for i in range(50):
        (wide / f"f{i}").touch()
    monkeypatch.setattr(compilecache, "MAX_NAMES", 10)
    assert any("names past the first 10" in n for n in scan(venv, wide).not_checked)


def test_a_fifo_named_like_a_cache_file_is_never_opened(venv, tmp_path):
    entry = tmp_path / "cache" / "e"
    entry.mkdir(parents=True)
    os.mkfifo(entry / "computation_graph.py")
    out = scan(venv, tmp_path / "cache")  # opening it would block
    assert out.entries == [] and any("not a regular file" in n or "symlink" in n for n in out.not_checked)
