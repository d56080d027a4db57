"""Exit status and failures: the bitmask every command exits with (documented in the README), the
fail policy that sets its bit 1, and ``guarded``, which turns every error into one line on stderr."""

from __future__ import annotations

import functools
import sys
from typing import TYPE_CHECKING

import click

from ..core.errors import DriftscanError
from ..fs.paths import inert

if TYPE_CHECKING:
    from ..report.contract import Report

# Exit status is a bitmask (documented in the README).
EXIT_CLEAN = 0
EXIT_DRIFT = 1
EXIT_INCOMPLETE = 2


def fail(message: str) -> None:
    click.echo(inert(f"driftscan: error: {message}"), err=True)
    sys.exit(EXIT_INCOMPLETE)


def guarded(func):
    """Turn every error into one line on stderr and exit status 2; never a traceback."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
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
                import traceback

                traceback.print_exc()
            fail(f"internal error: {type(exc).__name__}: {exc} (rerun with --debug and report it)")

    return click.option("--debug", is_flag=True, hidden=True, help="Show tracebacks.")(wrapper)


FAIL_ON = ["drift", "package", "environment", "source", "data", "external", "debug", "debug-high", "unverifiable",
           "never"]


def _counted(report: Report) -> list:
    """The drifts that count toward the exit status: not accepted (an accepted drift stays in the report)."""
    return [d for d in report.drifts if getattr(d, "accepted", None) is None]


def _fails(report: Report, policy: str) -> bool:
    counted = _counted(report)
    if policy == "drift":
        return bool(counted)
    if policy in ("package", "environment", "source", "data", "external"):
        return any(d.scope.value == policy for d in counted)
    if policy in ("debug", "debug-high"):
        from ..core.values import Origin

        findings = [f for d in counted for f in d.findings if f.origin is not Origin.UPSTREAM]
        if policy == "debug-high":
            return any(f.severity.value == "high" for f in findings)
        return bool(findings) or any(d.kind.value == "debug-artifacts" for d in counted)
    if policy == "unverifiable":
        return bool(report.unverifiable)
    return False  # never


def exit_status(report: Report, strict: bool, fail_on: tuple[str, ...] = ("drift",), exit_zero: bool = False) -> int:
    """Bit 1 when the report meets one of the ``fail_on`` policies (never with ``exit_zero``);
    bit 2 when something could not be checked (with ``strict``: also unverifiable distributions,
    or a target where nothing at all could be verified)."""
    status = EXIT_DRIFT if not exit_zero and any(_fails(report, p) for p in fail_on) else EXIT_CLEAN
    nothing_verified = report.summary.files_checked == 0 and not report.drifts
    if report.errors or (strict and (report.unverifiable or nothing_verified)):
        status |= EXIT_INCOMPLETE
    return status


def fail_on_policies(values: tuple[str, ...]) -> tuple[str, ...]:
    """--fail-on's values, comma-separated and repeatable, checked (default: drift)."""
    chosen = tuple(v.strip() for value in values for v in value.split(",") if v.strip()) or ("drift",)
    unknown = [v for v in chosen if v not in FAIL_ON]
    if unknown:
        raise click.UsageError(f"--fail-on: unknown {', '.join(unknown)} (choose from {', '.join(FAIL_ON)})")
    return chosen
