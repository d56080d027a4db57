"""``driftscan fleet`` on a real local Ray cluster (``ray.cluster_utils.Cluster``, 3 nodes).

Each node gets its own ``VIRTUAL_ENV`` through the raylet's ``env_vars``; one of those venvs has
a planted drift. One more node, started with ``ray start --block`` by an interpreter that cannot
import driftscan, shows the job shipping driftscan with ``runtime_env`` ``py_modules``. A node
removed during a run must be reported ``unreachable`` with the others reported.

Ray's processes are this module's own: the cluster is shut down node by node, the extra node by
killing its process group, and anything left by PID. Never ``ray stop``: it kills every Ray
process on the host, a user's own cluster included.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from fixtures import venvs
from fixtures.harness import replace_by_rename, run_cli
from fixtures.wheels import build_wheel

ray = pytest.importorskip("ray", reason="the fleet extra is not installed (pip install 'driftscan[fleet]')") \
    if os.environ.get("CI", "").lower() not in ("1", "true", "yes") else __import__("ray")

from ray.cluster_utils import Cluster  # noqa: E402

pytestmark = pytest.mark.xdist_group("ray-cluster")  # one cluster for the module, on one worker


def _venv(root: Path, wheels: Path, cache: Path) -> Path:
    venv = venvs.make_uv_venv(root, cache)
    venvs.uv_install(venv, cache, "--no-index", "--find-links", str(wheels), "--link-mode", "copy", "nodepkg")
    return venv


def _descendants(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                child = int(entry)
                out += [child, *_descendants(child)]
        except (OSError, IndexError, ValueError):
            continue
    return out


def _kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, uv_cache):
    base = tmp_path_factory.mktemp("fleet")
    wheels = base / "wheels"
    build_wheel(wheels, "nodepkg", "1.0", {f"nodepkg/m{i}.py": f"X = {i}\n" for i in range(20)})
    # One name at three paths, as Ray's runtime environments and per-user venvs are: the prompt in
    # bin/activate is the directory's name, the path in every script is the node's own.
    envs = [_venv(base / f"node{i}" / "venv", wheels, uv_cache) for i in range(3)]
    drifted = venvs.site_packages_of(envs[1]) / "nodepkg" / "m5.py"
    replace_by_rename(drifted, drifted.read_text() + "import torch; torch.save(x, '/tmp/x.pt')\n")
    # Unix socket paths must stay short: a pytest tmp path is too long for Ray's.
    ray_tmp = tempfile.mkdtemp(prefix="dsr", dir="/tmp")
    saved = {k: os.environ.get(k) for k in ("RAY_TMPDIR", "RAY_AUTH_MODE")}
    os.environ["RAY_TMPDIR"] = ray_tmp
    os.environ["RAY_AUTH_MODE"] = "disabled"
    before = set(_descendants(os.getpid()))
    c = Cluster(initialize_head=True, shutdown_at_exit=True,
                head_node_args={"num_cpus": 1, "env_vars": {"VIRTUAL_ENV": str(envs[0])}})
    for env in envs[1:]:
        c.add_node(num_cpus=1, env_vars={"VIRTUAL_ENV": str(env)})
    c.wait_for_nodes()
    try:
        yield {"cluster": c, "envs": envs, "drifted": drifted, "base": base, "wheels": wheels, "tmp": ray_tmp}
    finally:
        try:
            if ray.is_initialized():
                ray.shutdown()
            c.shutdown()
        finally:
            # Kill-by-PID fallback: whatever this module started and is still running.
            time.sleep(0.5)
            _kill([p for p in _descendants(os.getpid()) if p not in before])
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            shutil.rmtree(ray_tmp, ignore_errors=True)


def _fleet(cluster, *args: str, timeout: float = 240):
    return subprocess.run([sys.executable, "-m", "driftscan", "fleet", "--ray-address", cluster["cluster"].address,
                           *args], capture_output=True, text=True, timeout=timeout, cwd=str(cluster["base"]),
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    # cwd: Ray puts the driver's working directory on every worker's sys.path; from a checkout
    # of driftscan, every node could import it from there.


def test_fleet_reports_three_nodes_and_the_drifted_one(cluster, tmp_path):
    reports = tmp_path / "reports"
    done = _fleet(cluster, "--venv-from-env", "--format", "json", "--reports", str(reports))
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    nodes = result["nodes"]
    assert len(nodes) == 3 and {n["status"] for n in nodes} == {"ok"}
    assert sorted(n["target"] for n in nodes) == sorted(str(e) for e in cluster["envs"])
    assert {n["chosen_because"] for n in nodes} == {"the node's VIRTUAL_ENV"}
    assert all(n["hostname"] == os.uname().nodename and len(n["node_id"]) == 56 for n in nodes)
    drifted_node = next(n for n in nodes if n["target"] == str(cluster["envs"][1]))
    assert drifted_node["summary"]["drifts"] == 1
    assert [(o["machine"], o["relpath"], o["kind"]) for o in result["outliers"]] == [
        (drifted_node["node_id"], "nodepkg/m5.py", "modified")]
    assert result["outliers"][0]["majority"]["of"] == 3
    # Every node's full report, the same Report as a local audit.
    for n in nodes:
        report = json.loads((reports / f"{n['node_id']}.json").read_text())
        assert report["target"]["venv"] == n["target"] and report["hostname"] == n["hostname"]
    local = json.loads(run_cli("audit", "--venv", str(cluster["envs"][1]), "--format", "json").stdout)
    remote = json.loads((reports / f"{drifted_node['node_id']}.json").read_text())
    assert [(d["relpath"], d["kind"], d["actual"].get("hash")) for d in remote["drifts"]] == \
        [(d["relpath"], d["kind"], d["actual"].get("hash")) for d in local["drifts"]]
    text = _fleet(cluster, "--venv-from-env")
    assert text.returncode == 1
    assert "3 nodes: 3 ok, 0 unreachable, 0 failed" in text.stdout
    assert f"node {drifted_node['node_id'][:12]}" in text.stdout and "nodepkg/m5.py" in text.stdout


def test_snapshots_of_one_package_set_at_three_paths_agree_but_for_the_planted_edit(cluster):
    done = _fleet(cluster, "--venv-from-env", "--snapshot", "--format", "json")
    assert done.returncode == 1, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert result["kind"] == "snapshot" and len(result["nodes"]) == 3
    assert sorted(n["target"] for n in result["nodes"]) == sorted(str(e) for e in cluster["envs"])
    drifted_node = next(n for n in result["nodes"] if n["target"] == str(cluster["envs"][1]))
    # The scripts, pyvenv.cfg and RECORDs name each node's own path: equal once it is taken out.
    assert [(o["machine"], o["relpath"]) for o in result["outliers"]] == [
        (drifted_node["node_id"], "nodepkg/m5.py")], result["outliers"]
    assert result["agree"] > 20


def test_fleet_venv_for_all_snapshots_and_the_workers_own_interpreter(cluster):
    done = _fleet(cluster, "--venv", str(cluster["envs"][0]), "--snapshot", "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert result["kind"] == "snapshot" and len(result["nodes"]) == 3
    assert {n["target"] for n in result["nodes"]} == {str(cluster["envs"][0])}
    assert result["outliers"] == [] and result["agree"] > 20
    # No choice: the Ray worker's own interpreter (here the test runner's environment).
    from driftscan.fleet.task import chosen_venv

    assert chosen_venv(None, False) == (sys.prefix, "the Ray worker's interpreter")
    with pytest.raises(LookupError):
        os.environ.pop("VIRTUAL_ENV", None)
        chosen_venv(None, True)
    bad = _fleet(cluster, "--venv", str(cluster["base"] / "not-a-venv"), "--format", "json")
    assert bad.returncode == 2
    assert {n["status"] for n in json.loads(bad.stdout)["nodes"]} == {"failed"}
    assert "Traceback" not in bad.stdout + bad.stderr


def test_a_node_without_driftscan_gets_it_with_the_job(cluster, tmp_path):
    # An interpreter that has Ray and driftscan's dependencies but not driftscan: the base
    # Python with this environment's site-packages on PYTHONPATH, driftscan's entries left out
    # (a .pth or an editable finder is not processed from PYTHONPATH).
    import site as site_module

    sp = Path(next(p for p in site_module.getsitepackages() if p.endswith("site-packages")))
    lean = tmp_path / "lean-site"
    lean.mkdir()
    for entry in sp.iterdir():
        if "driftscan" not in entry.name.lower():
            (lean / entry.name).symlink_to(entry)
    base_python = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env.update(PYTHONPATH=str(lean), PYTHONNOUSERSITE="1")
    check = subprocess.run([base_python, "-c", "import ray, pydantic, xxhash\n"
                            "import importlib.util as u; print(u.find_spec('driftscan') is None)"],
                           capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert check.stdout.strip() == "True", check.stderr
    node = subprocess.Popen([base_python, "-m", "ray.scripts.scripts", "start", "--address",
                             cluster["cluster"].address, "--block", "--num-cpus", "1", "--disable-usage-stats"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=str(tmp_path),
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while len([n for n in ray_nodes(cluster) if n["Alive"]]) < 4:
            assert time.monotonic() < deadline, "the extra node did not join"
            assert node.poll() is None, "ray start exited"
            time.sleep(1)
        done = _fleet(cluster, "--venv", str(cluster["envs"][0]), "--format", "json")
        assert done.stdout, done.stderr
        result = json.loads(done.stdout)
        assert len(result["nodes"]) == 4 and {n["status"] for n in result["nodes"]} == {"ok"}, done.stdout
        shipped = [n for n in result["nodes"] if n["shipped"]]
        assert len(shipped) == 1 and shipped[0]["shipped"] == ["driftscan"]
        assert shipped[0]["driftscan"] is not None and result["outliers"] == []
        text = _fleet(cluster, "--venv", str(cluster["envs"][0]))
        assert "sent with the job (the node lacked them): driftscan" in text.stdout
    finally:
        try:
            os.killpg(node.pid, signal.SIGTERM)
            node.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        try:
            os.killpg(node.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _wait_dead(cluster, expected_alive=3)


def ray_nodes(cluster):
    return cluster["cluster"].global_state.node_table()


def _wait_dead(cluster, expected_alive: int, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len([n for n in ray_nodes(cluster) if n["Alive"]]) <= expected_alive:
            return
        time.sleep(1)


def _slow_venv(cluster) -> str:
    """A copy of a node's venv whose audit takes seconds, not a fraction of one: one RECORD-listed
    module is a 4 GiB sparse file (its RECORD row says so), which the audit must hash whole. So a
    node removed when its audit is submitted cannot have answered before it died."""
    slow = cluster["base"] / "slow-env"
    if not slow.exists():
        shutil.copytree(cluster["envs"][2], slow, symlinks=True)
        site = venvs.site_packages_of(slow)
        big = site / "nodepkg" / "m7.py"
        size = 4 << 30
        with open(big, "wb") as f:
            f.truncate(size)
        [record] = site.glob("nodepkg-*.dist-info/RECORD")
        rows = [f"nodepkg/m7.py,{r.split(',')[1]},{size}" if r.startswith("nodepkg/m7.py,") else r
                for r in record.read_text().splitlines()]
        record.write_text("\n".join(rows) + "\n")
    return str(slow)


def test_a_node_stopped_during_the_run_is_unreachable(cluster):
    # Its own extra node, so the module's three stay up for any test after this one.
    doomed = cluster["cluster"].add_node(num_cpus=1, env_vars={"VIRTUAL_ENV": _slow_venv(cluster)})
    cluster["cluster"].wait_for_nodes()
    doomed_id = doomed.node_id
    import driftscan.fleet

    killed = []

    def progress(event: str, node_id: str) -> None:
        if event == "submitted" and node_id == doomed_id and not killed:
            killed.append(node_id)
            cluster["cluster"].remove_node(doomed, allow_graceful=False)

    result = driftscan.fleet.run(cluster["cluster"].address, venv_from_env=True, timeout=180, progress=progress)
    assert killed == [doomed_id]
    by_id = {n.node_id: n for n in result.nodes}
    assert by_id[doomed_id].status == "unreachable", by_id[doomed_id].error
    assert by_id[doomed_id].error
    others = [n for n in result.nodes if n.node_id != doomed_id]
    assert len(others) == 3 and {n.status for n in others} == {"ok"}
    assert all(n.report is not None and n.report.target.venv == n.target for n in others)
    assert [o.relpath for o in result.outliers] == ["nodepkg/m5.py"]
    assert result.incomplete


def test_a_node_that_does_not_answer_is_unreachable_not_waited_for(cluster):
    # A node that is alive for Ray but answers nothing: its raylet stopped (SIGSTOP), as a
    # wedged host is. The others must be reported, this one named unreachable at the deadline.
    from ray._private import ray_constants

    wedged = cluster["cluster"].add_node(num_cpus=1, env_vars={"VIRTUAL_ENV": str(cluster["envs"][0])})
    cluster["cluster"].wait_for_nodes()
    raylet = wedged.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process.pid
    os.kill(raylet, signal.SIGSTOP)
    try:
        done = _fleet(cluster, "--venv-from-env", "--timeout", "40", "--format", "json")
    finally:
        os.kill(raylet, signal.SIGCONT)
        cluster["cluster"].remove_node(wedged, allow_graceful=False)
    result = json.loads(done.stdout)
    by_id = {n["node_id"]: n for n in result["nodes"]}
    assert by_id[wedged.node_id]["status"] == "unreachable"
    assert "did not answer within 20 s" in by_id[wedged.node_id]["error"]  # the probe's half of --timeout
    assert [n["status"] for i, n in by_id.items() if i != wedged.node_id] == ["ok"] * 3
    assert done.returncode == 3  # the drifted node differs (1) and a node was not reached (2)
