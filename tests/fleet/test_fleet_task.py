"""fleet.task: which environment a node audits, and a failure as one line, never a traceback."""

from __future__ import annotations

import sys

import pytest

from driftscan.fleet.task import chosen_venv, run_on_node


def test_chosen_venv(monkeypatch):
    assert chosen_venv("/srv/venv", False) == ("/srv/venv", "--venv")
    monkeypatch.setenv("VIRTUAL_ENV", "/env/from/node")
    assert chosen_venv(None, True) == ("/env/from/node", "the node's VIRTUAL_ENV")
    assert chosen_venv(None, False) == (sys.prefix, "the Ray worker's interpreter")
    monkeypatch.delenv("VIRTUAL_ENV")
    with pytest.raises(LookupError, match="VIRTUAL_ENV is not set"):
        chosen_venv(None, True)


def test_run_on_node_failure_is_one_line(monkeypatch, tmp_path):
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    out = run_on_node({"venv_from_env": True})
    assert out["error"] == "VIRTUAL_ENV is not set on this node (--venv-from-env)"
    assert "data" not in out and out["hostname"]
    missing = run_on_node({"venv": str(tmp_path / "no-such-venv")})
    assert "data" not in missing and missing["error"] and "\n" not in missing["error"]
    assert "Traceback" not in missing["error"]
    assert missing["target"] == str(tmp_path / "no-such-venv") and missing["why"] == "--venv"
