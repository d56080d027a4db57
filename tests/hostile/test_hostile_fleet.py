"""A node's answers are data: ``driftscan fleet`` against a real local Ray cluster (two nodes, one
of which answers what its probe or its audit never would).

The hostile node is the second node of the cluster, marked by its raylet's environment
(``DS_HOSTILE_NODE``). The driver runs under ``python_bounded`` with its probe and task functions
swapped for ones that answer normally on the honest node and with the hostile answer on the marked
one; everything else — Ray, the CLI, the comparison — is real. Each hostile answer must make that
node ``failed`` with its reason, the honest node must be reported ``ok``, the exit status must be 2
(could not check everything) and never an internal error; nothing the node names is imported in
the driver (``this``: importing it prints to stdout) or sent to the cluster.

Ray's processes are this module's own and are shut down node by node; never ``ray stop``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import time

import pytest

from fixtures import venvs
from fixtures.bounded import python_bounded

ray = pytest.importorskip("ray", reason="the fleet extra is not installed (pip install 'driftscan[fleet]')") \
    if os.environ.get("CI", "").lower() not in ("1", "true", "yes") else __import__("ray")

from ray.cluster_utils import Cluster  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray-cluster")]


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out += [int(entry), *_children(int(entry))]
            except (OSError, IndexError, ValueError):
                continue
    return out


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory, uv_cache):
    base = tmp_path_factory.mktemp("hostile-fleet")
    env = venvs.make_uv_venv(base / "env", uv_cache)  # the same small venv audited on both nodes
    ray_tmp = tempfile.mkdtemp(prefix="dsh", dir="/tmp")  # Ray's socket paths must stay short
    saved = {k: os.environ.get(k) for k in ("RAY_TMPDIR", "RAY_AUTH_MODE")}
    os.environ.update(RAY_TMPDIR=ray_tmp, RAY_AUTH_MODE="disabled")
    before = set(_children(os.getpid()))
    c = Cluster(initialize_head=True, shutdown_at_exit=True,
                head_node_args={"num_cpus": 1, "object_store_memory": 80 << 20})
    hostile = c.add_node(num_cpus=1, object_store_memory=80 << 20, env_vars={"DS_HOSTILE_NODE": "1"})
    c.wait_for_nodes()
    try:
        yield {"address": c.address, "env": str(env), "base": base, "hostile": hostile.node_id}
    finally:
        try:
            c.shutdown()
        finally:
            time.sleep(0.5)
            for pid in _children(os.getpid()):
                if pid not in before:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            shutil.rmtree(ray_tmp, ignore_errors=True)


# The driver: the probe and the audit answer normally except on the marked node, where the probe
# (where == "probe") or the audit answers `hostile` (merged into the real answer when `merge`).
DRIVER = """
import json, sys
sys.modules.pop("this", None)
import driftscan.fleet.driver as driver
import driftscan.fleet.probe as probe_module
WHERE, MERGE, HOSTILE = {where!r}, {merge!r}, {hostile!r}
real_probe, real_task = probe_module.probe_node, driver.run_on_node

def probe(modules, _real=real_probe):
    import os
    if WHERE == "probe" and os.environ.get("DS_HOSTILE_NODE"):
        return {{**_real(modules), **HOSTILE}} if MERGE else HOSTILE
    return _real(modules)

def task(options, _real=real_task):
    import os
    if WHERE == "task" and os.environ.get("DS_HOSTILE_NODE"):
        return {{**_real(options), **HOSTILE}} if MERGE else HOSTILE
    return _real(options)

probe_module.probe_node, driver.run_on_node = probe, task
from driftscan.cli import main
try:
    main(prog_name="driftscan", args=["fleet", "--ray-address", {address!r}, "--venv", {venv!r},
                                      "--timeout", "30", "--format", "json"])
finally:
    sys.stderr.write("\\nimported this: %s\\n" % ("this" in sys.modules))
"""

CASES = [
    ("probe", False, [], "its probe answered what a probe does not: the answer is a list, not a dict"),
    ("probe", False, None, "the answer is a NoneType, not a dict"),
    ("probe", False, 7, "the answer is a int, not a dict"),
    ("probe", True, {"hostname": ["gpu-1"]}, "hostname is a list, not a string"),
    ("probe", True, {"hostname": 7}, "hostname is a int, not a string"),
    ("probe", True, {"missing": [".."]}, "missing names '..', which the driver did not ask about"),
    ("probe", True, {"missing": [7]}, "missing names a int, not a module name"),
    ("probe", True, {"missing": ["this.x"]}, "missing names 'this.x', which the driver did not ask about"),
    ("probe", True, {"missing": ["email", "xml.etree", "pip"]}, "missing names 'email', which the driver did not"),
    ("task", False, [], "its audit answered what an audit does not: the answer is a list, not a dict"),
    ("task", False, None, "the answer is a NoneType, not a dict"),
    ("task", False, 7, "the answer is a int, not a dict"),
    ("task", True, {"hostname": ["gpu-1"]}, "hostname is a list, not a string"),
    ("task", True, {"hostname": 7}, "hostname is a int, not a string"),
    ("task", True, {"data": {"drifts": []}}, "data is a dict, not a string"),
]


@pytest.mark.parametrize("where, merge, hostile, why", CASES,
                         ids=[f"{w}-{'field' if m else 'whole'}-{json.dumps(h)[:30]}" for w, m, h, _ in CASES])
def test_a_hostile_node_answer_fails_that_node_only(two_nodes, where, merge, hostile, why):
    done = python_bounded(DRIVER.format(where=where, merge=merge, hostile=hostile, address=two_nodes["address"],
                                        venv=two_nodes["env"]),
                          seconds=60, memory_mb=1536)  # measured: 2-4 s, a Ray driver's 1.4 GB of address space
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 2, done.stderr[-3000:]
    assert "imported this: False" in done.stderr
    assert "Beautiful is better than ugly" not in done.stdout + done.stderr
    nodes = {n["node_id"]: n for n in json.loads(done.stdout)["nodes"]}
    bad = nodes.pop(two_nodes["hostile"])
    assert bad["status"] == "failed" and why in bad["error"], bad
    assert bad["shipped"] == [] and "\n" not in bad["error"]
    assert [n["status"] for n in nodes.values()] == ["ok"], nodes
