"""The compare result names each machine's input kind: as its value in JSON and in the headline."""

from __future__ import annotations

import json

import pytest

from driftscan.compare.inputs import InputKind
from driftscan.compare.model import CompareReport, MachineOut
from driftscan.render.compare import render_compare_json, render_compare_text


@pytest.mark.parametrize("kind", list(InputKind))
def test_the_input_kind_is_written_as_its_value(kind):
    r = CompareReport(machines=[MachineOut(name=f"m{i}.json", source=kind) for i in range(3)])
    assert f"3 machines compared ({kind.value}s)" in render_compare_text(r)
    doc = json.loads(render_compare_json(r))
    assert [m["source"] for m in doc["machines"]] == [kind.value] * 3
    assert CompareReport.model_validate(doc).machines[0].source is kind


def test_a_source_that_is_no_input_kind_is_refused():
    with pytest.raises(ValueError):
        MachineOut(name="m.json", source="manifest")
