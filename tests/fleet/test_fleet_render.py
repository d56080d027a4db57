"""fleet.render: one line per node with its status, values from the nodes kept on one line."""

from __future__ import annotations

import json

from driftscan.fleet.model import FleetResult, NodeOut
from driftscan.fleet.render import FLEET_RENDERERS, render_fleet_markdown, render_fleet_text, short


def _result() -> FleetResult:
    return FleetResult(kind="report", notes=["1 node answered: nothing to compare"], nodes=[
        NodeOut(node_id="0123456789abcdef", hostname="gpu-01", status="ok", target="/srv/venv",
                chosen_because="--venv", summary={"drifts": 2, "by_kind": {"modified": 1, "added": 1}},
                shipped=["driftscan", "xxhash"], report_file="/r/0123.json"),
        NodeOut(node_id="fedcba9876543210", hostname="gpu-02\n  ok  node forged", status="failed",
                error="ImportError: no module\x1b[2J"),
        NodeOut(node_id="aaaaaaaaaaaaaaaa", status="unreachable"),
        NodeOut(node_id="bbbbbbbbbbbbbbbb", hostname="gpu-04", status="ok", summary={"files": 10}),
    ])


def test_text_lists_every_node():
    text = render_fleet_text(_result())
    lines = text.splitlines()
    assert lines[0] == "4 nodes: 2 ok, 1 unreachable, 1 failed (reports)"
    assert "  ok          node 0123456789ab (gpu-01)  /srv/venv [--venv]: 2 drifts (1 added, 1 modified)" in lines
    assert "              sent with the job (the node lacked them): driftscan, xxhash" in lines
    assert "              report: /r/0123.json" in lines
    assert any(line.startswith("  unreachable node aaaaaaaaaaaa (?)") and line.endswith(": unreachable")
               for line in lines)
    assert any("snapshot of 10 files" in line for line in lines)
    assert "note: 1 node answered: nothing to compare" in lines


def test_values_from_a_node_cannot_fake_lines():
    text = render_fleet_text(_result())
    assert "\x1b" not in text
    assert not any(line.lstrip().startswith("ok  node forged") for line in text.splitlines())
    assert len([line for line in text.splitlines() if line.startswith("  ok ")]) == 2


def test_markdown_and_json():
    md = render_fleet_markdown(_result())
    rows = [line for line in md.splitlines() if line.startswith("| <code>")]
    assert md.startswith("## driftscan fleet\n") and len(rows) == 4, "one table row per node"
    assert "forged" in rows[1] and len(md.strip().splitlines()) == 8, "a hostname cannot add rows"
    data = json.loads(FLEET_RENDERERS["json"](_result()))
    assert [n["status"] for n in data["nodes"]] == ["ok", "failed", "unreachable", "ok"]
    assert short("0123456789abcdef") == "0123456789ab"
