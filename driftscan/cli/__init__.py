"""The command line: the click group, one module per command family, and ``entry`` (the console
script). The only package that prints or exits; everything else returns values.

Each command module holds its commands' options and turns their values into one library call
(``api.py``), its output and its exit status; the options several commands share are decorators
(``options.py``), and the exit status and error lines are ``exits.py``."""

from __future__ import annotations

import importlib
import os
import sys

import click

# Third-party pydantic plugins are not loaded into driftscan's process: they could observe or alter
# the report, and finding them scans the entry points of every distribution on sys.path at
# start-up (160 of them in a vLLM venv). Set before the first model class exists; overridable.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

from .._version import __version__  # noqa: E402 - after the environment setting above
from .exits import EXIT_CLEAN, EXIT_DRIFT, EXIT_INCOMPLETE, FAIL_ON, exit_status, guarded  # noqa: E402
from .fleet import stdout_is_stderr as _stdout_is_stderr  # noqa: E402
from .options import (SEVERITIES, config_option, model_options, policy_options, pristine_options,  # noqa: E402
                      rule_options, text_options)
from .output import emit  # noqa: E402
from .progress import PROGRESS_MIN_BYTES, FleetProgress, Progress, ScanProgress  # noqa: E402

__all__ = ["main", "entry", "EXIT_CLEAN", "EXIT_DRIFT", "EXIT_INCOMPLETE", "FAIL_ON", "SEVERITIES", "exit_status",
           "guarded", "emit", "config_option", "model_options", "policy_options", "pristine_options",
           "rule_options", "text_options", "PROGRESS_MIN_BYTES", "Progress", "ScanProgress", "FleetProgress",
           "_stdout_is_stderr"]


# Each command by the module that holds it. A command's module is imported when that command
# runs (or --help lists them all): the commands that drive the audit pipeline import the library
# with it (about 80 modules, 30 ms of CPU by python -X importtime), which `driftscan scan`,
# `compare`, `schema` and `--version` never need.
COMMANDS = {
    "accept": "accept", "audit": "audit", "checkpoint": "checkpoint", "compare": "compare", "diff": "snapshot",
    "fleet": "fleet", "guard": "guard", "lock-check": "lockcheck", "patch": "patch", "plan": "plan", "procs": "procs",
    "reapply": "checkpoint",
    "restore": "checkpoint",
    "scan": "scan", "schema": "schema", "snapshot": "snapshot",
}


class _Commands(click.Group):
    """The command group, each command loaded from ``COMMANDS`` on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMANDS.get(cmd_name)
        if module is None:
            return None
        command = getattr(importlib.import_module(f".{module}", __name__), cmd_name.replace("-", "_"))
        assert isinstance(command, click.Command)
        return command


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="driftscan")
def main() -> None:
    """Find what drifted in a Python environment, what the drift is, and what a reinstall does."""


def entry() -> None:
    """The console script: run the command, flush, and leave without tearing the heap down.

    An audit leaves a few hundred thousand objects behind; freeing them one by one at interpreter
    exit costs tens of milliseconds and serves nothing (no threads, files or atexit work remain).
    This process is driftscan's own, so its helpers may be forked from it (driftscan/fs/helpers.py)."""
    from ..fs.helpers import allow_fork  # not for `import driftscan.cli` (a library host): 3 ms

    allow_fork()
    try:
        main(prog_name="driftscan")
        code = EXIT_CLEAN
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or EXIT_CLEAN
        else:
            click.echo(str(exc.code), err=True)
            code = EXIT_INCOMPLETE
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (| head): nothing more can be said
            pass
    os._exit(code)
