"""fleet.answers: a node's probe and audit answers are checked whole, against the exact shape
probe.py and task.py return, before the driver uses any part of them."""

from __future__ import annotations

import pytest

from driftscan.fleet.answers import BadAnswer, probe_answer, task_answer
from driftscan.fleet.probe import probe_node

ASKED = ["pydantic", "xxhash"]


def _probe(**changes):
    answer = probe_node(ASKED)
    answer.update(changes)
    return answer


def test_the_real_probe_answer_passes():
    found = probe_answer(probe_node(ASKED + ["no_such_module_for_the_probe"]),
                         ASKED + ["no_such_module_for_the_probe"])
    assert found.missing == ("no_such_module_for_the_probe",) and found.hostname and found.python
    assert probe_answer(_probe(missing=["xxhash", "xxhash"]), ASKED).missing == ("xxhash",)


@pytest.mark.parametrize("answer, why", [
    ([], "the answer is a list, not a dict"),
    (None, "the answer is a NoneType, not a dict"),
    (7, "the answer is a int, not a dict"),
    ({1: "x"}, "a key that is not a string"),
    (_probe(hostname=["gpu-1"]), "hostname is a list, not a string"),
    (_probe(hostname=7), "hostname is a int, not a string"),
    (_probe(hostname="h" * 5000), "hostname is 5000 characters long"),
    (_probe(python=None), "python is a NoneType, not a string"),
    (_probe(missing=".."), "missing is a str, not a list"),
    (_probe(missing=[".."]), "missing names '..', which the driver did not ask about"),
    (_probe(missing=[7]), "missing names a int, not a module name"),
    (_probe(missing=["this.x"]), "missing names 'this.x', which the driver did not ask about"),
    (_probe(missing=["email"]), "missing names 'email', which the driver did not ask about"),
    (_probe(missing=["xml/etree"]), "which the driver did not ask about"),
    (_probe(missing=["pydantic"] * 10), "missing names 10 modules; the driver asked about 2"),
    (_probe(sys_path=[None]), "sys_path is not a list"),
    (_probe(extra=1), "keys it should not: 'extra'"),
    ({k: v for k, v in _probe().items() if k != "driftscan"}, "the answer lacks driftscan"),
])
def test_a_hostile_probe_answer_is_refused_in_one_line(answer, why):
    with pytest.raises(BadAnswer) as info:
        probe_answer(answer, ASKED)
    assert why in str(info.value) and "\n" not in str(info.value)


def test_the_real_task_answers_pass(tmp_path):
    from driftscan.fleet.task import run_on_node

    failed = task_answer(run_on_node({"venv": str(tmp_path / "no-such-venv")}))
    assert failed.error and failed.target == str(tmp_path / "no-such-venv") and failed.data is None
    ok = task_answer({"hostname": "h", "python": "3.12", "driftscan": "0", "target": "/v", "why": "--venv",
                      "kind": "snapshot", "data": "{}", "unreadable": 0})
    assert ok.kind == "snapshot" and ok.unreadable == 0 and ok.error is None


@pytest.mark.parametrize("answer, why", [
    ([], "the answer is a list, not a dict"),
    (None, "the answer is a NoneType, not a dict"),
    (3, "the answer is a int, not a dict"),
    ({"hostname": ["h"], "kind": "report", "data": "{}"}, "hostname is a list"),
    ({"hostname": 3, "kind": "report", "data": "{}"}, "hostname is a int"),
    ({"hostname": "h", "kind": "report", "data": b"{}"}, "data is a bytes, not a string"),
    ({"hostname": "h", "kind": "report", "data": None}, "data is a NoneType, not a string"),
    ({"hostname": "h", "kind": ["report"], "data": "{}"}, "kind is a list, not a string"),
    ({"hostname": "h", "kind": "pickle", "data": "{}"}, "kind is 'pickle', not 'report' or 'snapshot'"),
    ({"hostname": "h", "kind": "snapshot", "data": "{}", "unreadable": True}, "unreadable is a bool"),
    ({"hostname": "h", "kind": "snapshot", "data": "{}", "unreadable": -1}, "unreadable is a int, not a count"),
    ({"hostname": "h", "error": ["boom"]}, "error is a list, not a string"),
    ({"hostname": "h", "target": 1, "error": "boom"}, "target is a int"),
    ({"hostname": "h", "error": "boom", "exec": "x"}, "keys it should not: 'exec'"),
])
def test_a_hostile_task_answer_is_refused_in_one_line(answer, why):
    with pytest.raises(BadAnswer) as info:
        task_answer(answer)
    assert why in str(info.value) and "\n" not in str(info.value)
