"""fleet.driver: how the nodes' answers become the fleet result (without a cluster): each node's
status, reports kept under safe names, and the comparison once two nodes answered."""

from __future__ import annotations

import dataclasses
import os

import pytest

from driftscan.fleet.driver import FleetError, _finish, run
from driftscan.fleet.model import FleetResult, NodeOut
from fixtures.reports import clean_report, every_kind_report

A, B, C, D, E = "a1" * 8, "b2" * 8, "c3" * 8, "d4" * 8, "../../etc/evil"


def _nodes(*ids: str) -> dict[str, NodeOut]:
    return {n: NodeOut(node_id=n, hostname=f"host-{n[:2]}", status="unreachable") for n in ids}


def _answer(report, host: str) -> dict:
    return {"hostname": host, "kind": "report", "data": report.model_dump_json(), "target": "/srv/venv",
            "why": "--venv", "driftscan": "0"}


def test_venv_given_twice_is_refused_before_any_connection():
    with pytest.raises(FleetError, match="name the environment twice"):
        run(venv="/v", venv_from_env=True)


def test_statuses_and_comparison(tmp_path):
    drifted = every_kind_report()
    clean = dataclasses.replace(clean_report(), distributions=drifted.distributions)
    nodes = _nodes(A, B, C, D)
    answers = {A: _answer(drifted, "gpu-a"), B: _answer(clean, "gpu-b"), C: {"hostname": "gpu-c", "error": "boom"}}
    errors = {D: "NodeDiedError: the node died"}
    result = _finish(FleetResult(), nodes, answers, errors, {}, {A: {}, B: {}, C: {}}, str(tmp_path), True, 60.0)
    by_id = {n.node_id: n for n in result.nodes}
    assert by_id[A].status == "ok" and by_id[A].summary["drifts"] == len(drifted.drifts)
    assert by_id[A].report_file == str(tmp_path / f"{A}.json") and os.path.exists(by_id[A].report_file)
    assert by_id[A].target == "/srv/venv" and by_id[A].chosen_because == "--venv"
    assert by_id[C].status == "failed" and by_id[C].error == "boom"
    assert by_id[D].status == "unreachable" and by_id[D].error.startswith("the node died during the run: ")
    assert result.comparison is not None and result.differs, "the drifted node stands out"
    assert {o.machine for o in result.outliers} <= {A, B}
    assert [n.hostname for n in result.nodes] == sorted(n.hostname for n in result.nodes)


def test_late_bad_and_hostile_answers(tmp_path):
    nodes = _nodes(A, B, E)
    answers = {B: {"hostname": "gpu-b", "kind": "report", "data": "{not json"},
               E: _answer(clean_report(), "gpu-e")}
    result = _finish(FleetResult(), nodes, answers, {}, {A: 30.0}, {A: {}, B: {}, E: {}}, str(tmp_path), False, 30.0)
    by_id = {n.node_id: n for n in result.nodes}
    assert by_id[A].status == "unreachable" and by_id[A].error == "did not answer within 30 s"
    assert by_id[B].status == "failed" and by_id[B].error.startswith("its report does not parse: ")
    assert by_id[E].status == "ok" and by_id[E].report_file is None, "not kept: no file named"
    assert os.listdir(tmp_path) == ["node-0.json"], "a node id that is not Ray's hex is never a file name"
    assert result.notes == ["1 node answered: nothing to compare"] and result.comparison is None
