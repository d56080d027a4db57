"""Audit every alive node of a Ray cluster once, gather the reports, compare them.

How the work is placed (verified with Ray 2.60 on a loaded cluster):

- one task per node, ``num_cpus=0`` and ``NodeAffinitySchedulingStrategy(node_id, soft=False)``:
  it needs no free CPU, so it runs on a node whose every CPU a vLLM engine holds — a placement
  group would wait for resources forever there — and it never moves to another node;
- only nodes ``ray.nodes()`` says are alive are asked;
- one deadline (``timeout``) for the whole run: a node that has not answered by then is
  ``unreachable`` and its task is cancelled, the others are reported; a node that dies during the
  run is ``unreachable`` too; an audit that fails on its node is ``failed`` with its one-line error;
- a probe (standard library only, sent by value) runs first on every node, within half the
  timeout (at most a minute), and tells whether the node can import driftscan (this version) and
  its dependencies; what any node lacks is sent with the job as ``runtime_env`` ``py_modules``
  (Ray takes local directories only for a whole job: the driver reconnects with it) and named in
  that node's result. A node that does not answer its probe is not waited for again.
- every answer (the probe's, the audit's) is checked whole against its exact shape before use
  (``answers.py``): another shape makes that node ``failed`` with the reason; what is shipped is
  computed here from driftscan's own requirements, and a node's list of what it lacks is only
  compared against them (nothing it names is imported or uploaded).

Ray unpickles a node's answer in this process before any of that: every node is trusted, as Ray
trusts them (docs/fleet.md).

The driver connects with the Ray it runs under: it must be the cluster's Ray and Python versions
(run ``driftscan fleet`` from the serving venv). ``RAY_AUTH_MODE`` and Ray's token settings are
read by Ray itself from the environment; driftscan passes them through untouched.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

from .. import __version__
from ..fs.atomic import write_atomic
from ..compare import CompareError, compare_files
from ..core.errors import DriftscanError
from ..core.units import count
from ..report.contract import Report
from . import probe as probe_module
from .answers import BadAnswer, probe_answer, task_answer
from .model import FleetResult, NodeOut
from .shipping import needed_modules, shipment
from .task import run_on_node

Progress = Callable[[str, str], None]  # (event, node_id): probed | submitted | done | unreachable


_NODE_ID = re.compile(r"[0-9a-f]{8,128}")


class FleetError(DriftscanError):
    """The cluster cannot be asked at all (no Ray, no cluster at the address)."""


def _ray() -> Any:
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise FleetError("driftscan fleet needs Ray: pip install 'driftscan[fleet]' (in the serving venv, so the "
                         "driver has the cluster's Ray and Python versions)") from None


# Ray's word that the node itself went away (not the audit failing on it). The GCS may still list
# the node as alive for a few seconds after its raylet died.
_NODE_GONE = ("NodeDiedError", "TaskUnschedulableError", "LocalRayletDiedError", "RaySystemError")


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    # Ray's task errors carry the remote traceback; its last line says what happened.
    last = next((line for line in reversed(text) if line.strip()), type(exc).__name__)
    return f"{type(exc).__name__}: {last.strip()}"[:500]


class _Connection:
    """The driver's connection to the cluster; ``reconnect`` starts a new job with a runtime_env
    (Ray takes local directories for ``py_modules`` only at the job level)."""

    def __init__(self, ray: Any, address: str | None):
        self.ray = ray
        self.address = address
        self.owned = False

    def _init(self, runtime_env: dict[str, Any] | None = None) -> None:
        try:
            self.ray.init(address=self.address or "auto", log_to_driver=False, logging_level=logging.WARNING,
                          include_dashboard=False, runtime_env=runtime_env)
        except Exception as exc:  # noqa: BLE001 - ConnectionError, version mismatch, auth: one line
            raise FleetError(f"cannot connect to the Ray cluster at {self.address or 'auto'}: "
                             f"{_one_line(exc)}") from None

    def __enter__(self) -> "_Connection":
        if not self.ray.is_initialized():
            self._init()
            self.owned = True
        return self

    def reconnect(self, runtime_env: dict[str, Any]) -> bool:
        """False when the caller's own Ray session is in use (it is not ours to restart)."""
        if not self.owned:
            return False
        self.ray.shutdown()
        self._init(runtime_env)
        return True

    def __exit__(self, *exc: object) -> None:
        if self.owned:
            self.ray.shutdown()  # the driver's connection only; the cluster is not stopped


def _strategy(node_id: str) -> Any:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)


PROBE_SHARE = 0.5  # of --timeout, at most PROBE_MAX seconds: what the probes may take
PROBE_MAX = 60.0


def _wait(ray: Any, pending: dict[Any, str], until: float, progress: Progress | None, event: str
          ) -> tuple[dict[str, Any], dict[str, str], set[str]]:
    """Results and errors by node id as they come, until every ref answered or ``until``; the
    nodes left are returned too (their tasks cancelled)."""
    results: dict[str, Any] = {}
    errors: dict[str, str] = {}
    while pending:
        left = until - time.monotonic()
        if left <= 0:
            break
        ready, _ = ray.wait(list(pending), num_returns=1, timeout=min(left, 5.0))
        for ref in ready:
            node = pending.pop(ref)
            try:
                results[node] = ray.get(ref)
            except Exception as exc:  # noqa: BLE001 - a node's failure is that node's
                errors[node] = _one_line(exc)
            if progress:
                progress(event, node)
    late = set(pending.values())
    for ref in pending:
        try:
            ray.cancel(ref, force=True)
        except Exception:  # noqa: BLE001 - the node may be gone already
            pass
    return results, errors, late


def _ask(conn: _Connection, nodes: dict[str, NodeOut], options: dict[str, Any], started: float, timeout: float,
         progress: Progress | None) -> tuple[dict[str, Any], dict[str, str], dict[str, float]]:
    """Probe every node, send what any node lacks with the job, then audit every probed node.
    Returns the audits' answers and errors by node id, and for each node that did not answer,
    the seconds it was given."""
    ray = conn.ray
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(probe_module)  # the probe runs where driftscan is not installed
    probe = ray.remote(num_cpus=0, max_retries=0)(probe_module.probe_node)
    modules = needed_modules()
    window = min(timeout * PROBE_SHARE, PROBE_MAX)
    refs = {probe.options(scheduling_strategy=_strategy(node)).remote(modules): node for node in nodes}
    probes, errors, late = _wait(ray, refs, started + window, progress, "probed")
    silent = {node: window for node in late}
    ship_dirs: list[str] = []
    lacking: dict[str, list[str]] = {}
    for node, raw in probes.items():
        out = nodes[node]
        try:
            found = probe_answer(raw, modules)
        except BadAnswer as exc:
            out.status, out.error = "failed", f"its probe answered what a probe does not: {exc}"
            continue
        out.hostname = found.hostname or out.hostname
        out.python = found.python
        if found.driftscan != __version__ or found.missing:
            ship = shipment(found.missing, modules)
            if ship.unshippable:
                out.status = "failed"
                out.error = (f"the node lacks {', '.join(ship.unshippable)}, which driftscan needs and which cannot "
                             f"be sent as py_modules: install driftscan there")
                continue
            lacking[node] = list(ship.names)
            ship_dirs += [d for d in ship.modules if d not in ship_dirs]
    if lacking:
        if conn.reconnect({"py_modules": ship_dirs}):
            for node, names in lacking.items():
                nodes[node].shipped = names
        else:
            for node in lacking:
                nodes[node].status = "failed"
                nodes[node].error = ("the node lacks driftscan (or this version of it), and the caller's own Ray "
                                     "session cannot be given it: ray.init(runtime_env={'py_modules': [...]}) "
                                     "or install driftscan there")
    task = ray.remote(num_cpus=0, max_retries=0)(run_on_node)
    audits = {}
    for node in probes:
        if nodes[node].status == "failed":
            continue
        try:
            audits[task.options(scheduling_strategy=_strategy(node)).remote(options)] = node
        except Exception as exc:  # noqa: BLE001 - e.g. a runtime_env Ray refuses: that node's failure
            nodes[node].status, nodes[node].error = "failed", f"cannot start the audit there: {_one_line(exc)}"
            continue
        if progress:
            progress("submitted", node)
    answers, audit_errors, late = _wait(ray, audits, started + timeout, progress, "done")
    errors.update(audit_errors)
    silent.update({node: timeout for node in late})
    return answers, errors, silent


def _alive(ray: Any) -> dict[str, dict[str, Any]]:
    return {n["NodeID"]: n for n in ray.nodes() if n.get("Alive") or n.get("alive")}


def _hostname(info: dict[str, Any]) -> str | None:
    name = info.get("NodeManagerHostname")
    return name if isinstance(name, str) else None


def run(address: str | None = None, *, venv: str | None = None, venv_from_env: bool = False,
        model_dirs: Sequence[str] = (), snapshot: bool = False, timeout: float = 600.0,
        reports_dir: str | None = None, progress: Progress | None = None) -> FleetResult:
    """Audit (or snapshot) the environment of every alive node of the Ray cluster at ``address``
    and compare them. Which environment: ``venv`` on every node, each node's ``VIRTUAL_ENV`` with
    ``venv_from_env``, else the Ray worker's interpreter (the node's serving venv).
    ``reports_dir``: keep each node's report (or snapshot) there as ``<node_id>.json``.
    Raises FleetError when the cluster cannot be reached; a node that cannot be audited is
    listed with its status."""
    if venv and venv_from_env:
        raise FleetError("--venv and --venv-from-env name the environment twice: give one")
    ray = _ray()
    started = time.monotonic()
    result = FleetResult(address=address, kind="snapshot" if snapshot else "report")
    options = {"venv": os.path.abspath(venv) if venv else None, "venv_from_env": venv_from_env,
               "model_dirs": [os.path.abspath(p) for p in model_dirs], "snapshot": snapshot}
    with _Connection(ray, address) as conn:
        alive = _alive(ray)
        if not alive:
            raise FleetError(f"the Ray cluster at {address or 'auto'} has no alive node")
        nodes = {node: NodeOut(node_id=node, hostname=_hostname(info), status="unreachable")
                 for node, info in alive.items()}
        answers, errors, late = _ask(conn, nodes, options, started, timeout, progress)
        still = _alive(ray) if errors or late else alive
    keep = reports_dir or tempfile.mkdtemp(prefix="driftscan-fleet-")
    try:
        return _finish(result, nodes, answers, errors, late, still, keep, reports_dir is not None, timeout)
    finally:
        if reports_dir is None:
            import shutil

            shutil.rmtree(keep, ignore_errors=True)


def _finish(result: FleetResult, nodes: dict[str, NodeOut], answers: dict[str, Any], errors: dict[str, str],
            late: dict[str, float], alive: dict[str, Any], keep: str, kept: bool, timeout: float) -> FleetResult:
    os.makedirs(keep, exist_ok=True)
    files: list[str] = []
    names: list[str] = []
    hosts: list[str | None] = []
    for node, out in nodes.items():
        if out.status == "failed":
            continue  # could not be started there (what it lacks cannot be sent)
        if node in late:
            out.status, out.error = "unreachable", f"did not answer within {late[node]:g} s"
        elif node in errors:
            gone = node not in alive or errors[node].startswith(_NODE_GONE)
            out.status = "unreachable" if gone else "failed"
            out.error = ("the node died during the run: " if gone else "") + errors[node]
        elif node in answers:
            try:
                answer = task_answer(answers[node])
            except BadAnswer as exc:
                out.status, out.error = "failed", f"its audit answered what an audit does not: {exc}"
                continue
            out.hostname = answer.hostname or out.hostname
            out.target, out.chosen_because = answer.target, answer.why
            out.driftscan = answer.driftscan
            if answer.error:
                out.status, out.error = "failed", answer.error[:2000]
                continue
            data = answer.data or ""
            out.status = "ok"
            if answer.kind == "report":
                try:
                    out.report = Report.model_validate_json(data)
                except ValueError as exc:
                    out.status, out.error = "failed", f"its report does not parse: {_one_line(exc)}"
                    continue
                out.summary = out.report.summary.model_dump()
            else:
                out.summary = {"files": None, "unreadable": answer.unreadable}
            # A node id is Ray's hex string; anything else (a hostile GCS) is not made a file name.
            path = os.path.join(keep, f"{node}.json" if _NODE_ID.fullmatch(node) else f"node-{len(files)}.json")
            write_atomic(path, data)
            if kept:
                out.report_file = path
            files.append(path)
            names.append(node)
            hosts.append(out.hostname)
    result.nodes = sorted(nodes.values(), key=lambda n: (n.hostname or "", n.node_id))
    if len(files) >= 2:
        try:
            comparison = compare_files(files, names=names, hostnames=hosts, before_after=False)  # each is a node
        except CompareError as exc:
            result.notes.append(f"not compared: {exc}")
        else:
            result.comparison = comparison
            result.outliers, result.version_skew = comparison.outliers, comparison.version_skew
            result.agree, result.compared = comparison.agree, comparison.compared
            result.notes += comparison.notes
            if result.kind == "snapshot":
                files_by = {m.name: m.files for m in comparison.machines}
                for out in result.nodes:
                    if out.summary is not None and out.node_id in files_by:
                        out.summary["files"] = files_by[out.node_id]
    else:
        result.notes.append(f"{count(len(files), 'node')} answered: nothing to compare")
    return result
