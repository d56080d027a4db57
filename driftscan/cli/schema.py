"""``driftscan schema``: the JSON Schema of each command's JSON output."""

from __future__ import annotations

import json

import click

from .exits import guarded
from ..render import json_schema


@click.command()
@click.option("--for", "kind", type=click.Choice(["audit", "scan", "plan", "compare", "fleet", "guard"]),
              default="audit", show_default=True,
              help="Whose JSON: audit's (and diff's) report, scan, plan, compare, fleet or guard --format json.")
@guarded
def schema(kind: str) -> None:
    """Print the JSON Schema of the audit report (or of scan's, plan's, compare's, fleet's or guard's JSON output)."""
    if kind == "fleet":
        from ..fleet.model import FleetResult  # pydantic only: Ray is not imported

        click.echo(json.dumps(FleetResult.model_json_schema(), indent=2))
        return
    if kind == "guard":
        from ..reinstall.guard import GuardReport

        click.echo(json.dumps(GuardReport.model_json_schema(), indent=2))
        return
    from ..report.contract import report_schema  # 6-9 ms: not at the command line's start-up

    click.echo(json.dumps(report_schema() if kind == "audit" else json_schema(kind), indent=2))
