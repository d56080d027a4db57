from __future__ import annotations

from ..report.contract import Report


def render_json(report: Report) -> str:
    return report.model_dump_json(indent=2) + "\n"
