"""driftscan.runtime's recorder in real processes: a program that starts it, imports a module of a
wheel installed in a venv, and keeps running; the reader finds its records and what changed; a vLLM
general plugin's loading starts it; a clean exit removes the file; it needs nothing outside the
standard library and never breaks its host."""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from driftscan.runtime import location
from driftscan.runtime.records import ChangeKind, changed, read_records
from fixtures import venvs
from fixtures.harness import replace_by_rename
from fixtures.paths import REPO
from fixtures.wheels import build_wheel

PROBE = {"rtprobe/__init__.py": "from . import mod\n", "rtprobe/mod.py": "VALUE = 1\n",
         "rtprobe/extra.py": "EXTRA = 2\n"}


@pytest.fixture(scope="module")
def probe_venv(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("rtvenv")
    house = root / "wheels"
    build_wheel(house, "rtprobe", "1.0", PROBE)
    venv = venvs.make_pip_venv(root / "venv")
    venvs.pip_install(venv, "--no-index", "--find-links", str(house), "rtprobe")
    yield venv


@pytest.fixture(autouse=True)
def probe_as_installed(request):
    """Each test edits the module's one venv its own way: the next starts from the wheel's files."""
    yield
    if "probe_venv" in request.fixturenames:
        site = venvs.site_packages_of(request.getfixturevalue("probe_venv"))
        for rel, text in PROBE.items():
            replace_by_rename(site / rel, text)
            for pyc in (site / rel).parent.joinpath("__pycache__").glob(f"{Path(rel).stem}.*.pyc"):
                pyc.unlink()


@pytest.fixture
def runtime_env(tmp_path):
    run = tmp_path / "xdg-run"
    run.mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VLLM_PLUGINS")}
    env.update(XDG_RUNTIME_DIR=str(run), PYTHONPATH=str(REPO))
    return env, run / "driftscan"


class Running:
    """A process started for a test; killed at the end whatever happens."""

    def __init__(self, argv, env):
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     cwd="/", start_new_session=True)

    def line(self) -> str:
        out = self.proc.stdout.readline()
        assert out, self.proc.stderr.read()
        return out.strip()

    def kill(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()


@pytest.fixture
def running():
    started = []

    def start(argv, env):
        started.append(Running(argv, env))
        return started[-1]

    yield start
    for proc in started:
        proc.kill()


KEEP_RUNNING = ("import driftscan.runtime as r, sys, time; r.start(); import json, rtprobe; r.flush(); "
                "print(r.record_path(), flush=True); time.sleep(30)")
# No flush: the recording thread writes what the import events announced.
UNFLUSHED = ("import driftscan.runtime as r, sys, time; r.start(); import json, rtprobe; "
             "print(r.record_path(), flush=True); time.sleep(30)")


def wait_for(pid: int, ticks: int, directory: Path, name: str):
    """The records once they name ``name`` (the recording thread writes shortly after an import)."""
    for _ in range(200):
        records = read_records(pid, ticks, os.getuid(), str(directory))
        if records is not None and (records.error is not None or any(m.name == name for m in records.modules)):
            return records
        time.sleep(0.1)
    return records


def test_a_running_process_records_and_changed_sees_edits_in_place_and_by_rename(probe_venv, runtime_env, running):
    env, directory = runtime_env
    proc = running([str(venvs.python_of(probe_venv)), "-c", UNFLUSHED], env)
    path = proc.line()
    pid = proc.proc.pid
    ticks = location.start_ticks(pid)
    assert Path(path) == directory / location.file_name(pid, ticks)
    assert (os.stat(directory).st_mode & 0o777) == 0o700

    records = wait_for(pid, ticks, directory, "rtprobe.mod")
    assert records.error is None, records.error
    site = venvs.site_packages_of(probe_venv)
    by_name = {m.name: m for m in records.modules}
    assert "rtprobe.mod" in by_name, (records.error, records.state, list(by_name)[-5:])
    assert by_name["rtprobe.mod"].path == str(site / "rtprobe" / "mod.py")
    assert by_name["rtprobe"].path == str(site / "rtprobe" / "__init__.py")
    assert "json" in by_name and "rtprobe.extra" not in by_name
    assert changed(records) == []

    with open(site / "rtprobe" / "mod.py", "a") as f:
        f.write("breakpoint()\n")
    replace_by_rename(site / "rtprobe" / "__init__.py", "from . import mod\nimport pdb\n")
    (site / "rtprobe" / "extra.py").write_text("EXTRA = 3\n")  # never imported: not this process's concern
    assert {c.module.name: c.kind for c in changed(records)} == {
        "rtprobe.mod": ChangeKind.MODIFIED, "rtprobe": ChangeKind.REPLACED}

    # Another start time for the same PID is another process: its file is not this one.
    assert read_records(pid, ticks + 1, os.getuid(), str(directory)) is None


def test_a_hashed_recording_tells_a_same_size_same_mtime_edit(probe_venv, runtime_env, running):
    env, directory = runtime_env
    env["DRIFTSCAN_RUNTIME_HASH_LIMIT"] = "65536"
    proc = running([str(venvs.python_of(probe_venv)), "-c", KEEP_RUNNING], env)
    proc.line()
    pid = proc.proc.pid
    records = read_records(pid, location.start_ticks(pid), os.getuid(), str(directory))
    assert records.error is None and all(m.blake2b for m in records.modules if m.name.startswith("rtprobe"))
    mod = venvs.site_packages_of(probe_venv) / "rtprobe" / "mod.py"
    st = os.stat(mod)
    mod.write_text("VALUE = 2\n")
    os.utime(mod, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert [(c.module.name, c.kind) for c in changed(records)] == [("rtprobe.mod", ChangeKind.CONTENT)]


def test_a_clean_exit_removes_the_file_and_a_forked_child_gets_its_own(runtime_env):
    env, directory = runtime_env
    code = ("import driftscan.runtime as r, os, sys, json; r.start(); parent = r.record_path(); "
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    import csv; r.flush(); print(json.dumps([parent, r.record_path(), os.path.exists(r.record_path())]),"
            " flush=True); os._exit(0)\n"
            "os.waitpid(pid, 0); print(json.dumps([parent, os.path.exists(parent)]), flush=True)")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd="/",
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    child, parent = (json.loads(line) for line in proc.stdout.splitlines())
    assert child[0] == parent[0] and child[1] != parent[0] and child[2] is True
    assert parent[1] is True  # the child's exit did not remove its parent's file
    assert not os.path.exists(parent[0])  # the parent's clean exit did
    # The child left by os._exit: its file stays until a reader removes it as stale.
    assert os.path.exists(child[1])


EMULATE_VLLM = """
import os, sys
from importlib.metadata import entry_points
allowed = os.environ["VLLM_PLUGINS"].split(",") if "VLLM_PLUGINS" in os.environ else None
plugins = {}
for plugin in entry_points(group="vllm.general_plugins"):
    if allowed is None or plugin.name in allowed:
        plugins[plugin.name] = plugin.load()
for func in plugins.values():
    func()
import driftscan.runtime as r
path = r.record_path()
print(sorted(plugins), path, path is not None and os.path.exists(path), flush=True)
"""


@pytest.mark.parametrize("allowed", [None, "driftscan_runtime", "someone_else"])
def test_loaded_as_vllm_loads_general_plugins(runtime_env, allowed):
    """The dev venv has driftscan installed: its metadata names the entry point, and loading the
    group as vllm.plugins.load_general_plugins does starts the recorder (unless VLLM_PLUGINS leaves
    it out); the process's clean exit removes the file."""
    env, directory = runtime_env
    env.pop("PYTHONPATH")
    if allowed is not None:
        env["VLLM_PLUGINS"] = allowed
    proc = subprocess.run([sys.executable, "-c", EMULATE_VLLM], env=env, capture_output=True, text=True, cwd="/",
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    names, path, existed = proc.stdout.split(" ")
    if allowed == "someone_else":
        assert path == "None"
    else:
        assert "driftscan_runtime" in names and existed.strip() == "True"
        assert Path(path).parent == directory and not Path(path).exists()


def test_python_m_driftscan_runtime_runs_a_script_and_a_module(tmp_path, runtime_env):
    env, directory = runtime_env
    script = tmp_path / "prog.py"
    script.write_text("import json, sys, driftscan.runtime as r, csv; r.flush()\n"
                      "lines = [json.loads(l) for l in list(open(r.record_path()))[1:]]\n"
                      "print(sys.argv[1:], [l['name'] for l in lines if l['path'] == __file__], "
                      "sum(l['name'] == 'csv' for l in lines))\n")
    proc = subprocess.run([sys.executable, "-m", "driftscan.runtime", str(script), "a", "--b"], env=env,
                          capture_output=True, text=True, cwd="/", timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['a', '--b'] ['__main__'] 1"
    proc = subprocess.run([sys.executable, "-m", "driftscan.runtime", "-m", "json.tool"], env=env, input='{"a":1}',
                          capture_output=True, text=True, cwd="/", timeout=60)
    assert proc.returncode == 0 and json.loads(proc.stdout) == {"a": 1}
    proc = subprocess.run([sys.executable, "-m", "driftscan.runtime"], env=env, capture_output=True, text=True,
                          cwd="/", timeout=60)
    assert proc.returncode == 2 and proc.stderr.startswith("usage:")
    assert list(directory.iterdir()) == []


STDLIB_ONLY = """
import sys
sys.path.insert(0, sys.argv[1])
import driftscan.runtime as r
assert r.start(sys.argv[2])
import driftscan.runtime.records, driftscan.runtime.location
import email.mime.text
r.flush()
tops = {m.split(".")[0] for m in sys.modules}
driftscan = sorted(m for m in sys.modules if m.startswith("driftscan"))
print(sorted(tops - set(sys.stdlib_module_names) - {"__main__", "driftscan"}), driftscan)
"""


def test_it_needs_only_the_standard_library(tmp_path):
    proc = subprocess.run([sys.executable, "-S", "-I", "-c", STDLIB_ONLY, str(REPO), str(tmp_path / "rt")],
                          capture_output=True, text=True, cwd="/", timeout=60)
    assert proc.returncode == 0, proc.stderr
    third_party, own = proc.stdout.strip().split("] [")
    assert third_party == "["
    allowed = {"driftscan", "driftscan._version", "driftscan.core", "driftscan.core.errors"}
    assert {m.strip("']") for m in own.split(", ")} - allowed <= {
        "driftscan.runtime", "driftscan.runtime.recorder", "driftscan.runtime.records", "driftscan.runtime.location"}


EVERY_MODULE = """
import importlib, json, sys
import driftscan.runtime as r
r.start(sys.argv[1])
import asyncio, email.mime.multipart, unittest.mock, http.server, xml.dom.minidom, logging.handlers
importlib.import_module("xmlrpc.client")
from concurrent import futures
from email import policy
r.flush()
specs = {name: getattr(m, "__dict__", {}).get("__spec__") for name, m in sys.modules.items()}
files = {name for name, spec in specs.items() if spec is not None and spec.has_location and name != "__main__"}
recorded = {json.loads(line)["name"] for line in list(open(r.record_path()))[1:]}
print(json.dumps([sorted(files - recorded), sorted(recorded - files - {"__main__"}), len(files)]))
"""


def test_every_module_with_a_file_is_recorded(tmp_path):
    """Imports through every path (an import statement, from-imports of submodules, import_module),
    nested packages that importlib moves to the end of sys.modules once run: none is missed."""
    proc = subprocess.run([sys.executable, "-c", EVERY_MODULE, str(tmp_path / "rt")], capture_output=True,
                          text=True, cwd="/", timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    missed, extra, count = json.loads(proc.stdout)
    assert (missed, extra) == ([], []) and count > 100


def test_the_caps_stop_recording_and_say_so(tmp_path):
    code = ("import os, sys, driftscan.runtime as r, driftscan.runtime.recorder as rec; rec.MAX_RECORDS = 5; "
            "r.start(sys.argv[1]); import email.mime.text; r.flush(); "
            "from driftscan.runtime import location; "
            "print(os.getpid(), location.start_ticks(), int(rec.Announcer in sys.meta_path), flush=True); "
            "sys.stdin.read()")
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "rt")], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, cwd="/")
    try:
        pid, ticks, finder_left = map(int, proc.stdout.readline().split())
        records = read_records(pid, ticks, os.getuid(), str(tmp_path / "rt"))
    finally:
        proc.kill()
        proc.wait()
        proc.stdin.close()
        proc.stdout.close()
    assert records.error is None and len(records.modules) == 5
    assert records.state.value == "truncated" and records.detail == "stopped after 5 records"
    assert finder_left == 0  # a stopped recorder leaves sys.meta_path as it found it


def test_the_runtime_package_imports_no_other_driftscan_package():
    for path in (REPO / "driftscan" / "runtime").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert node.level == 1 or not (node.module or "").startswith("driftscan"), path
                assert node.level <= 1, path
            elif isinstance(node, ast.Import):
                assert not any(a.name.startswith("driftscan") for a in node.names), path


@pytest.mark.parametrize("setup", ["open directory", "a file in its place", "no proc"])
def test_a_failure_never_reaches_the_host(tmp_path, runtime_env, setup):
    env, directory = runtime_env
    target = tmp_path / "rt"
    if setup == "open directory":
        target.mkdir(mode=0o755)
        target.chmod(0o755)
    elif setup == "a file in its place":
        target.write_text("")
    code = ("import sys, driftscan.runtime as r, driftscan.runtime.location as l\n"
            + ("l.start_ticks = lambda pid='self': None\n" if setup == "no proc" else "")
            + f"ok = r.start({str(target)!r}); import csv; r.flush(); print(ok, r.recording(), flush=True)")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd="/", timeout=60)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout.strip() == "False False"
