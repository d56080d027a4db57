"""``driftscan fleet``: every alive node of a Ray cluster audited once and compared."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
import os
import sys

import click

from ..render.registry import FLEET, OutputFormat, RenderOptions, format_names, render
from .exits import EXIT_CLEAN, EXIT_DRIFT, EXIT_INCOMPLETE, guarded
from .options import output_options
from .output import write
from .progress import FleetProgress


@contextlib.contextmanager
def stdout_is_stderr() -> Iterator[None]:
    """While Ray runs in this process, whatever it prints to stdout (its threads print cluster
    events there, through ``sys.stdout`` or the descriptor) goes to stderr: stdout carries only
    driftscan's own output, which a CI job may parse as JSON."""
    sys.stdout.flush()
    saved_fd, saved = os.dup(1), sys.stdout
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        sys.stderr.flush()
        sys.stdout = saved
        os.dup2(saved_fd, 1)
        os.close(saved_fd)


@click.command()
@click.option("--ray-address", "address", metavar="ADDR",
              help="The cluster (as ray.init takes it: HOST:PORT, ray://HOST:10001; default: RAY_ADDRESS, else auto).")
@click.option("--venv", metavar="PATH", help="Audit this environment on every node (default: the Ray worker's interpreter's).")
@click.option("--venv-from-env", is_flag=True, help="Audit each node's VIRTUAL_ENV.")
@click.option("--model-dir", "model_dirs", metavar="PATH", multiple=True, help="Also audit this model directory on every node.")
@click.option("--snapshot", "take_snapshot", is_flag=True, help="Compare snapshots of the nodes instead of audit reports.")
@click.option("--timeout", type=click.FloatRange(min=1), default=600, show_default=True,
              help="Seconds for the whole run: a node that has not answered by then is unreachable.")
@click.option("--reports", "reports_dir", metavar="DIR", help="Keep every node's report (or snapshot) here as NODE_ID.json.")
@output_options(format_names(FLEET), "result")
@click.option("--verbose", "-v", is_flag=True, help="Text: every differing path, not the first 50 per node.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when nodes differ.")
@guarded
def fleet(address: str | None, venv: str | None, venv_from_env: bool, model_dirs: tuple[str, ...],
          take_snapshot: bool, timeout: float, reports_dir: str | None, fmt: str, output: str | None, verbose: bool,
          exit_zero: bool) -> None:
    """Audit every alive node of a Ray cluster once and compare them (needs the fleet extra: pip install
    'driftscan[fleet]'; run it from the cluster's serving venv). Exit 1: nodes differ; 2: a node unreachable or failed."""
    from ..fleet import run as run_fleet
    progress = FleetProgress()
    try:
        with stdout_is_stderr():  # Ray prints cluster events (a node marked dead) to stdout
            result = run_fleet(address, venv=venv, venv_from_env=venv_from_env, model_dirs=model_dirs,
                               snapshot=take_snapshot, timeout=timeout, reports_dir=reports_dir, progress=progress)
    finally:
        progress.close()
    write(render(result, OutputFormat(fmt), RenderOptions(verbose=verbose)), fmt, output)
    status = EXIT_DRIFT if result.differs and not exit_zero else EXIT_CLEAN
    if result.incomplete:
        status |= EXIT_INCOMPLETE
    sys.exit(status)
