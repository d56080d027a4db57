"""``driftscan schema``: the JSON Schema of each command's JSON output."""

from __future__ import annotations

import json

import click

from .exits import guarded
from ..render import json_schema


@click.command()
@click.option("--for", "kind", type=click.Choice(["audit", "scan", "plan", "compare", "fleet", "guard", "procs", "lock-check",
                                                   "patch-export", "patch-apply", "patch-rebase"]),
              default="audit", show_default=True,
              help="Whose JSON: audit's (and diff's) report, scan, plan, compare, fleet, guard, procs, lock-check, "
                   "patch export, patch apply or patch rebase --format json.")
@guarded
def schema(kind: str) -> None:
    """Print the JSON Schema of the audit report (or of scan's, plan's, compare's, fleet's, guard's, procs',
    lock-check's, patch export's, patch apply's or patch rebase's JSON output)."""
    click.echo(json.dumps(json_schema(kind), indent=2))
