"""Exit status and failures: the library's bitmask and fail policy (``report.policy``) as options,
and ``guarded``, which turns every error into one line on stderr."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, NoReturn

import click

from ..core.errors import DriftscanError
from ..fs.paths import inert
# The exit status bitmask and the fail policy are the library's; re-exported for the commands.
from ..report.policy import EXIT_CLEAN, EXIT_DRIFT, EXIT_INCOMPLETE, FailOn, exit_status, fail_policies

__all__ = ["EXIT_CLEAN", "EXIT_DRIFT", "EXIT_INCOMPLETE", "FAIL_ON", "exit_status", "fail", "fail_on_policies",
           "guarded"]


def fail(message: str) -> NoReturn:
    click.echo(inert(f"driftscan: error: {message}"), err=True)
    sys.exit(EXIT_INCOMPLETE)


def guarded(func: Callable[..., None]) -> Callable[..., None]:
    """Turn every error into one line on stderr and exit status 2; never a traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        debug = kwargs.pop("debug", False)
        try:
            return func(*args, **kwargs)
        except DriftscanError as exc:
            fail(str(exc))
        except click.ClickException:
            raise  # a usage error: click prints it as such (exit 2), not as an internal error
        except KeyboardInterrupt:
            click.echo("driftscan: interrupted", err=True)
            sys.exit(130)
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            fail(f"{where}{exc.strerror or exc}")
        except Exception as exc:  # noqa: BLE001 - the promise is: no traceback without --debug
            if debug:
                import traceback  # only for --debug: 2 ms every command would pay

                traceback.print_exc()
            fail(f"internal error: {type(exc).__name__}: {exc} (rerun with --debug and report it)")

    return click.option("--debug", is_flag=True, hidden=True, help="Show tracebacks.")(wrapper)


FAIL_ON = [p.value for p in FailOn]


def fail_on_policies(values: tuple[str, ...]) -> tuple[FailOn, ...]:
    """--fail-on's values, comma-separated and repeatable, checked (default: drift)."""
    try:
        return fail_policies(values)
    except ValueError as exc:
        raise click.UsageError(f"--fail-on: {exc}") from None
