"""The command line. The only module that prints or exits; everything else returns values."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
from typing import TYPE_CHECKING

import click

# Third-party pydantic plugins are not loaded into driftscan's process: they could observe or alter
# the report, and finding them scans the entry points of every distribution on sys.path at
# start-up (160 of them in a vLLM venv). Set before the first model class exists; overridable.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

from ._version import __version__  # noqa: E402 - after the environment setting above
from .core.errors import DriftscanError  # noqa: E402
from .fs.atomic import write_atomic  # noqa: E402
from .fs.paths import inert, line_safe, one_line  # noqa: E402
from .render.formats import PLAN_FORMATS, REPORT_FORMATS, SCAN_FORMATS  # noqa: E402

if TYPE_CHECKING:
    from .report.contract import Report

# Start-up stays light: the renderers and the report models (pydantic) are imported by the
# commands that build a report, so a command settled from its cache (a warm scan) never pays for them.

# Exit status is a bitmask (documented in the README).
EXIT_CLEAN = 0
EXIT_DRIFT = 1
EXIT_INCOMPLETE = 2


def _fail(message: str) -> None:
    click.echo(inert(f"driftscan: error: {message}"), err=True)
    sys.exit(EXIT_INCOMPLETE)


# Formats that escape control characters themselves (JSON strings); the others are shown as
# written, so a file name from the audited tree is made inert first (paths.inert).
_ESCAPED_FORMATS = {"json", "sarif"}


def _write(text: str, fmt: str, output: str | None, color: bool = False) -> bool:
    """Write a rendered report to ``output`` (atomically; ``-`` is stdout) or stdout; True if to a file."""
    if fmt not in _ESCAPED_FORMATS:
        text = inert(text)
    if color:
        from .render.text import colorize

        text = colorize(text)
    if output and output != "-":
        write_atomic(output, text)
        return True
    click.echo(text, nl=False, color=True if color else None)  # click strips ANSI off a terminal
    return False


def _load_config(config_file: str | None):
    from .config.find import NoConfig, nothing_to_read

    if nothing_to_read(config_file):
        return NoConfig()
    from .config.settings import load_config

    config = load_config(config_file)
    for note in config.notes:
        click.echo(inert(f"driftscan: note: {note}"), err=True)
    return config


def guarded(func):
    """Turn every error into one line on stderr and exit status 2; never a traceback."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        debug = kwargs.pop("debug", False)
        try:
            return func(*args, **kwargs)
        except DriftscanError as exc:
            _fail(str(exc))
        except click.ClickException:
            raise  # a usage error: click prints it as such (exit 2), not as an internal error
        except KeyboardInterrupt:
            click.echo("driftscan: interrupted", err=True)
            sys.exit(130)
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            _fail(f"{where}{exc.strerror or exc}")
        except Exception as exc:  # noqa: BLE001 - the promise is: no traceback without --debug
            if debug:
                import traceback

                traceback.print_exc()
            _fail(f"internal error: {type(exc).__name__}: {exc} (rerun with --debug and report it)")

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
        from .core.values import Origin

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


def _fail_on(values: tuple[str, ...]) -> tuple[str, ...]:
    chosen = tuple(v.strip() for value in values for v in value.split(",") if v.strip()) or ("drift",)
    unknown = [v for v in chosen if v not in FAIL_ON]
    if unknown:
        raise click.UsageError(f"--fail-on: unknown {', '.join(unknown)} (choose from {', '.join(FAIL_ON)})")
    return chosen


def policy_options(func):
    """--fail-on / --exit-zero: which drift sets exit bit 1; shared by audit, plan and diff."""
    func = click.option("--exit-zero", is_flag=True, help="Exit 0 whatever drift is found (errors still set bit 2).")(func)
    return click.option("--fail-on", "fail_on", metavar="POLICY[,POLICY]", multiple=True,
                        help="What sets exit bit 1: " + ", ".join(FAIL_ON) + " (default: drift; repeatable, "
                             "comma-separated; accepted drift never counts).")(func)


def _for_text(model, fmt: str):
    """Text output shows every value from the tree on one line (paths.line_safe)."""
    return model if fmt in _ESCAPED_FORMATS else line_safe(model)


def emit(report: Report, fmt: str, output: str | None, *, diffs: bool = False, show_upstream: bool = False,
         verbose: bool = False, quiet: bool = False) -> None:
    from .render.text import render_text, summary_line

    if fmt == "text" and quiet:
        render = lambda r: summary_line(r) + "\n"  # noqa: E731
    elif fmt == "text":
        render = functools.partial(render_text, diffs=diffs or verbose, show_upstream=show_upstream, verbose=verbose)
    elif fmt == "github":
        from .render.github import render_github

        render = functools.partial(render_github, show_upstream=show_upstream)
    else:
        from .render import RENDERERS

        render = RENDERERS[fmt]
    if _write(render(_for_text(report, fmt)), fmt, output, color=fmt == "text" and _color(output)):
        click.echo(inert(summary_line(report)), err=True)


def model_options(func):
    """Options naming model directories; shared by audit and plan."""
    for option in reversed([
        click.option("--model-dir", "model_dirs", metavar="PATH", multiple=True,
                     help="Audit a model directory: hf download --local-dir, a hub cache repository, a git clone, "
                          "or a directory with a driftscan manifest (repeatable)."),
        click.option("--hf-cache", metavar="DIR", is_flag=False, flag_value="", default=None,
                     help="Audit every repository of a Hugging Face cache (default: HF_HUB_CACHE / HF_HOME / "
                          "~/.cache/huggingface/hub)."),
    ]):
        func = option(func)
    return func


def _color(output: str | None) -> bool:
    """Colour only for a terminal, and never with NO_COLOR set (https://no-color.org)."""
    if output and output != "-":
        return False
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return sys.stdout.isatty() and os.environ.get("TERM") != "dumb"


def text_options(func):
    """How much the text report shows; shared by audit and diff."""
    for option in reversed([
        click.option("--diff", "show_diffs", is_flag=True, help="Text: each modified file's diff against its original."),
        click.option("--verbose", "-v", "verbose", is_flag=True,
                     help="Text: also the evidence, JSON changes (pointer, old → new) and diffs under each drift."),
        click.option("--quiet", "-q", "quiet", is_flag=True, help="Text: only the summary line."),
        click.option("--show-upstream", is_flag=True,
                     help="Text: also the findings the original file has too (hidden by default)."),
    ]):
        func = option(func)
    return func


def pristine_options(func):
    """Where originals of drifted package files are looked for; shared by audit, checkpoint, restore."""
    for option in reversed([
        click.option("--wheels", "wheels", metavar="DIR", multiple=True,
                     help="Wheels to take originals from (pip download, a wheelhouse), matched by name, version and "
                          "tag (repeatable)."),
        click.option("--fetch", is_flag=True,
                     help="Allow `pip download --no-deps --only-binary :all: NAME==VERSION` for originals found "
                          "nowhere else (the only option that reaches the network)."),
    ]):
        func = option(func)
    return func


def config_option(func):
    return click.option("--config", "config_file", metavar="FILE",
                        help="Configuration file (default: the nearest driftscan.toml, or pyproject.toml with "
                             "[tool.driftscan], from here upward; then ~/.config/driftscan/config.toml).")(func)


def _targets(config, venv, site_packages, model_dirs, hf_cache):
    """Command-line targets plus the config's model directories and caches. Config model
    directories add to the default target instead of replacing it."""
    named = venv is not None or bool(site_packages) or bool(model_dirs) or hf_cache is not None
    dirs = list(dict.fromkeys([*model_dirs, *config.model_dirs]))
    hub = hf_cache if hf_cache is not None else config.hf_cache_arg
    include_environment = not named and bool(config.model_dirs or hub is not None)
    return dirs, hub, include_environment


def _codes(values: tuple[str, ...]) -> list[str]:
    return [c.strip() for v in values for c in v.split(",") if c.strip()]


def rule_options(func):
    """--select / --ignore by code prefix or rule name (longest prefix wins), --no-plugins; shared by audit and scan."""
    func = click.option("--no-plugins", "no_plugins", is_flag=True,
                        help="Leave out rules from the driftscan.rules entry points of driftscan's environment.")(func)
    func = click.option("--ignore", "ignore", metavar="CODES", multiple=True,
                        help="Rule codes, prefixes or names to leave out (comma-separated, repeatable).")(func)
    return click.option("--select", "select", metavar="CODES", multiple=True,
                        help="Rule codes, prefixes or names to run (default: all).")(func)


PROGRESS_MIN_BYTES = 256 << 20


class Progress:
    """A one-line progress bar on stderr, only when stderr is a terminal and the work is long
    (more than PROGRESS_MIN_BYTES to hash). Only the rendering: the ``progress(done, total)``
    calls come from the hashing's byte counter (``fileio.ByteProgress`` in audits and diffs)."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()
        self.last = -1

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total < PROGRESS_MIN_BYTES:
            return
        pct = int(done * 100 / total)
        if pct != self.last:
            self.last = pct
            bar = "#" * (pct // 4)
            click.echo(f"\rhashing {bar:<25} {pct:3d}% of {total / 1e9:.1f} GB", err=True, nl=pct >= 100)


class ScanProgress:
    """``scan``'s progress on stderr, for a terminal and more than a few hundred files: files
    parsed so far, as the workers report them."""

    MIN_FILES = 200

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()
        self.last = -1

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total < self.MIN_FILES:
            return
        pct = int(done * 100 / total)
        if pct != self.last:
            self.last = pct
            click.echo(f"\rscanning {'#' * (pct // 4):<25} {pct:3d}% of {total} files", err=True, nl=pct >= 100)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="driftscan")
def main() -> None:
    """Find what drifted in a Python environment, what the drift is, and what a reinstall does."""


@main.command()
@click.option("--venv", metavar="PATH", help="Audit this virtual environment (its interpreter is not run).")
@click.option("--site-packages", "site_packages", metavar="DIR", multiple=True,
              help="Audit a bare site-packages directory (repeatable).")
@click.option("--format", "fmt", type=click.Choice(sorted(REPORT_FORMATS)), default="text", show_default=True)
@click.option("--output", "-o", metavar="FILE", help="Write the report here (atomically) instead of stdout.")
@click.option("--strict", is_flag=True, help="Distributions that cannot be verified also set exit bit 2.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Parallel hashing workers (default: cores).")
@click.option("--uv-cache", metavar="DIR", help="uv's cache directory (default: UV_CACHE_DIR or uv's default).")
@click.option("--no-cache", is_flag=True,
              help="Trust no cache (stat cache, parsed RECORDs, clean index): re-hash every file (paranoid mode).")
@model_options
@rule_options
@click.option("--deep", is_flag=True, help="Hash large model files too (default: presence, size and mtime).")
@click.option("--revision", metavar="REV", help="Model directories: the ref or commit to compare against.")
@click.option("--manifest", metavar="FILE", help="Model directories: compare against this driftscan manifest.")
@pristine_options
@click.option("--no-pristine", is_flag=True,
              help="Do not look for originals (no diffs, no injected/upstream origin for findings).")
@text_options
@policy_options
@config_option
@guarded
def audit(venv, site_packages, fmt, output, strict, jobs, uv_cache, no_cache, model_dirs, hf_cache, select, ignore,
          no_plugins, deep, revision, manifest, wheels, fetch, no_pristine, show_diffs, verbose, quiet, show_upstream,
          fail_on, exit_zero, config_file) -> None:
    """Check installed files against their RECORDs and model directories against their provenance.

    Lists files no RECORD owns, debug code in drifted Python files and the dumps it left. With no
    --venv or --site-packages: the activated venv (VIRTUAL_ENV), CONDA_PREFIX, the uv project's
    .venv, the python3 on PATH, else driftscan's own; --model-dir and --hf-cache add to it. Exit
    status: bit 1 drift found, bit 2 something could not be checked (or a usage error).
    """
    from .api import run

    config = _load_config(config_file)
    dirs, hub, include_environment = _targets(config, venv, site_packages, model_dirs, hf_cache)
    for flag, value in (("--revision", revision), ("--manifest", manifest)):
        if value and not dirs and hub is None:
            raise click.UsageError(f"{flag} applies to model directories: give --model-dir (or --hf-cache) too")
    venv, chosen_because = _default_venv(venv, site_packages, bool(dirs) or hub is not None, include_environment)
    report = run(venv, site_packages, jobs=jobs, uv_cache=uv_cache or config.uv_cache, use_cache=not no_cache,
                 model_dirs=dirs, hf_cache=hub, deep=deep, revision=revision, manifest=manifest, progress=Progress(),
                 select=_codes(select) or config.select, ignore=_codes(ignore) or config.ignore,
                 rules_modules=config.rules_modules, include_environment=include_environment,
                 report_only=True, plugins=not no_plugins, compare=not no_pristine,
                 pristine=_pristine(venv, site_packages, wheels, fetch, uv_cache or config.uv_cache)).report
    if chosen_because:
        report.target.chosen_because = chosen_because
    report = _apply_accepted(report, config)
    emit(report, fmt, output, diffs=show_diffs, show_upstream=show_upstream, verbose=verbose, quiet=quiet)
    sys.exit(exit_status(report, strict, _fail_on(fail_on), exit_zero))


def _pristine(venv, site_packages, wheels, fetch, uv_cache):
    """PristineOptions for the named environment, or None (run() then uses the defaults)."""
    if not wheels and not fetch:
        return None
    from .api import pristine_options
    from .environment import resolve_target

    for directory in wheels:
        if not os.path.isdir(directory):
            raise DriftscanError(f"--wheels {directory}: not a directory")
    return pristine_options(resolve_target(venv, tuple(site_packages)), wheels, fetch, uv_cache)


def _default_venv(venv: str | None, site_packages, models: bool = False,
                  include_environment: bool = False) -> tuple[str | None, str | None]:
    """(venv, why): the environment a command means when none is named (environment/default.py).
    Model directories named (``models``) add to that environment; only when the one found is
    driftscan's own do they stay alone (venv None), unless ``include_environment`` (the configuration's)."""
    if venv is not None or site_packages:
        return venv, None
    from .environment.default import default_environment

    venv, why = default_environment()
    if models and not include_environment:
        if venv is None:
            return None, ("the model directories alone: no environment of yours found (" + why.split(": ", 1)[-1]
                          + "); driftscan's own is not audited")
        if os.path.realpath(venv) == os.path.realpath(sys.prefix):  # e.g. driftscan's venv activated
            return None, f"the model directories alone: the environment found ({why}) is driftscan's own, not audited"
    return venv, why


def _say_target(command: str, venv: str | None, why: str | None, models=(), hf_cache: str | None = None,
                alone: bool = False) -> None:
    """The first line of a command run on an environment nobody named: what it covers (the
    environment and why that one, plus the model directories), the same rule for every command
    (environment/default.py)."""
    if not why:
        return
    names = [f"model directory {m}" for m in models]
    if hf_cache is not None:
        names.append(f"the Hugging Face cache {hf_cache or '(the default one)'}")
    if alone and names:
        click.echo(inert(f"driftscan {command}: target {', '.join(names)} ({why})"), err=True)
        return
    also = (" + " + ", ".join(names)) if names else ""
    click.echo(inert(f"driftscan {command}: target {venv or sys.prefix} ({why}){also}"), err=True)


def _names(values: tuple[str, ...]) -> list[str]:
    names = [n.strip() for v in values for n in v.split(",") if n.strip()]
    if not names:
        raise click.UsageError("--reinstall needs at least one distribution name")
    return names


@main.command()
@click.option("--reinstall", "reinstall", metavar="NAME[,NAME...]", multiple=True, required=True,
              help="The distributions you are about to reinstall (repeatable, comma-separated).")
@click.option("--installer", type=click.Choice(["pip", "uv"]),
              help="Predict for this installer (default: each distribution's INSTALLER).")
@click.option("--from", "source", metavar="WHEEL|DIR|index",
              help="Where the reinstall installs from: a wheel file, a find-links directory, or the index "
                   "(default: the source each distribution was installed from, as direct_url.json, INSTALLER "
                   "and uv's cache tell).")
@click.option("--checkpoint", "checkpoint", metavar="DIR",
              help="A checkpoint already taken: no checkpoint step for the content it holds.")
@click.option("--venv", metavar="PATH", help="The virtual environment (default as for audit: VIRTUAL_ENV, CONDA_PREFIX, the uv project's .venv, the python3 on PATH, else driftscan's own).")
@click.option("--site-packages", "site_packages", metavar="DIR", multiple=True, help="A bare site-packages.")
@click.option("--expect", "expect", metavar="FILE", help="TOML expectations to check now and after the reinstall.")
@click.option("--format", "fmt", type=click.Choice(sorted(PLAN_FORMATS)), default="text", show_default=True)
@click.option("--output", "-o", metavar="FILE", help="Write the plan here (atomically) instead of stdout.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Parallel hashing workers (default: cores).")
@click.option("--uv-cache", metavar="DIR", help="uv's cache directory (default: UV_CACHE_DIR or uv's default).")
@click.option("--no-cache", is_flag=True, help="Trust no cache: re-hash every file (paranoid mode).")
@model_options
@pristine_options
@rule_options
@policy_options
@config_option
@guarded
def plan(reinstall, installer, source, checkpoint, venv, site_packages, expect, fmt, output, jobs, uv_cache, no_cache,
         model_dirs, hf_cache, wheels, fetch, select, ignore, no_plugins, fail_on, exit_zero, config_file) -> None:
    """What will reinstalling NAME undo, and what will survive it?

    Each drift is marked WIPED, SURVIVES or MAY SURVIVE with the reason, for a reinstall from
    --from (default: where each distribution was installed from), followed by the steps: a
    checkpoint first when the reinstall destroys content, `uv cache clean` first where the
    reinstall would link an edited file back, the exact reinstall command, dumps to delete, and the
    expectations that already hold and survive (steps you can skip).
    Exit status: bit 1 when an expectation is not known to hold after the reinstall, or when what
    survives (or may survive) the reinstall meets --fail-on (default: any drift); bit 2 as for audit.
    """
    from .api import plan as run_plan

    config = _load_config(config_file)
    dirs, hub, include_environment = _targets(config, venv, site_packages, model_dirs, hf_cache)
    venv, chosen_because = _default_venv(venv, site_packages)  # a reinstall is always of an environment
    _say_target("plan", venv, chosen_because, dirs, hub)
    result = run_plan(_names(reinstall), venv=venv, site_packages=site_packages, installer=installer,
                      expect=expect, jobs=jobs, uv_cache=uv_cache or config.uv_cache, use_cache=not no_cache,
                      model_dirs=dirs, hf_cache=hub, include_environment=True,  # model directories add to it
                      pristine=_pristine(venv, site_packages, wheels, fetch, uv_cache or config.uv_cache),
                      select=_codes(select) or config.select, ignore=_codes(ignore) or config.ignore,
                      rules_modules=config.rules_modules, plugins=not no_plugins, source=source,
                      checkpoint=checkpoint)
    if chosen_because:
        result.audit.target.chosen_because = chosen_because
    result.audit = _apply_accepted(result.audit, config)  # accepted drift never counts toward the status
    from .render.planview import PLAN_RENDERERS

    _write(PLAN_RENDERERS[fmt](_for_text(result, fmt)), fmt, output)
    # The policy looks at what the reinstall leaves: the drifts that survive or may survive it.
    left = set(result.survives) | set(result.may_survive)
    remaining = result.audit.model_copy(update={"drifts": [d for d in result.audit.drifts if d.path in left]})
    status = exit_status(remaining, False, _fail_on(fail_on), exit_zero)
    if not exit_zero and any(e.holds_after is not True for e in result.expectations):
        status |= EXIT_DRIFT
    sys.exit(status)


@main.command()
@click.option("--venv", metavar="PATH", help="Record this virtual environment (every file, bin/ included).")
@click.option("--site-packages", "site_packages", metavar="DIR", multiple=True, help="Record a bare site-packages.")
@click.option("--model-dir", "model_dirs", metavar="PATH", multiple=True, help="Record a model directory.")
@click.option("--output", "-o", metavar="FILE", required=True, help="Where to write the snapshot (atomically).")
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Parallel hashing threads (default: cores).")
@guarded
def snapshot(venv, site_packages, model_dirs, output, jobs) -> None:
    """Record every file (xxh3-128, size, mode, mtime; small text files embedded) as a baseline.

    With no target, records the environment audit would (VIRTUAL_ENV, CONDA_PREFIX, ...). One root gives a plain manifest (also
    usable as `audit --model-dir DIR --manifest FILE`); several give a bundle.
    """
    from .api import snapshot as take

    venv, chosen_because = _default_venv(venv, site_packages, bool(model_dirs))
    _say_target("snapshot", venv, chosen_because, model_dirs, alone=venv is None and bool(model_dirs))
    problems = take(output, venv=venv, site_packages=site_packages, model_dirs=model_dirs, jobs=jobs,
                    progress=Progress())
    for p in problems:
        click.echo(inert(f"driftscan: not recorded: {p.path}: {p.message}"), err=True)
    click.echo(inert(f"snapshot written to {output}"), err=True)
    sys.exit(EXIT_INCOMPLETE if problems else EXIT_CLEAN)


@main.command()
@click.argument("snapshot_file", metavar="SNAPSHOT")
@click.option("--venv", metavar="PATH", help="Compare only this venv's root.")
@click.option("--site-packages", "site_packages", metavar="DIR", multiple=True)
@click.option("--model-dir", "model_dirs", metavar="PATH", multiple=True, help="Compare only this model directory.")
@click.option("--format", "fmt", type=click.Choice(sorted(REPORT_FORMATS)), default="text", show_default=True)
@click.option("--output", "-o", metavar="FILE", help="Write the report here (atomically) instead of stdout.")
@click.option("--deep", is_flag=True, help="Hash large files too (default: size and mtime for files over 16 MiB).")
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Parallel hashing threads (default: cores).")
@click.option("--strict", is_flag=True, help="Unverifiable roots also set exit bit 2.")
@click.option("--no-cache", is_flag=True,
              help="Trust no signature or cache: hash every file, even one whose size, mtime and mode match the "
                   "snapshot, and parse every RECORD (paranoid mode).")
@rule_options
@text_options
@policy_options
@config_option
@guarded
def diff(snapshot_file, venv, site_packages, model_dirs, fmt, output, deep, jobs, strict, no_cache, select, ignore,
         no_plugins, show_diffs, verbose, quiet, show_upstream, fail_on, exit_zero, config_file) -> None:
    """Report drift against a snapshot, with audit's kinds and report format (exit 0: unchanged).

    A file whose size, mtime and mode match the snapshot is trusted by that signature, not hashed
    (the report counts them: summary.trusted_by_signature); --no-cache hashes every file."""
    from .api import diff as run_diff

    config = _load_config(config_file)
    report = run_diff(snapshot_file, venv=venv, site_packages=site_packages, model_dirs=model_dirs, jobs=jobs,
                      deep=deep, progress=Progress(), select=_codes(select) or config.select,
                      ignore=_codes(ignore) or config.ignore, rules_modules=config.rules_modules,
                      plugins=not no_plugins, use_cache=not no_cache)
    if venv is None and not site_packages and not model_dirs:
        report.target.chosen_because = "every root the snapshot recorded (no --venv, --site-packages or --model-dir)"
    report = _apply_accepted(report, config)
    emit(report, fmt, output, diffs=show_diffs, show_upstream=show_upstream, verbose=verbose, quiet=quiet)
    if report.summary.trusted_by_signature and fmt == "text" and not quiet:
        click.echo(f"driftscan: {report.summary.trusted_by_signature} of {report.summary.files_checked} files trusted"
                   " by signature (size, mtime and mode as in the snapshot), not hashed; --no-cache hashes them",
                   err=True)
    sys.exit(exit_status(report, strict, _fail_on(fail_on), exit_zero))


SEVERITIES = ["low", "medium", "high"]


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@rule_options
@click.option("--format", "fmt", type=click.Choice(sorted(SCAN_FORMATS)), default="text", show_default=True)
@click.option("--output", "-o", metavar="FILE", help="Write the findings here (atomically) instead of stdout.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Parallel parser processes (default: cores).")
@click.option("--rules-module", "rules_modules", metavar="MODULE", multiple=True,
              help="Also load rules from this importable module (repeatable).")
@click.option("--no-prefilter", is_flag=True, help="Parse every file (slow; the findings are the same).")
@click.option("--strict", is_flag=True,
              help="Also report unused `# noqa: CODE` codes (DBG006 unused-noqa; --ignore DBG006 leaves it out).")
@click.option("--fail-on", type=click.Choice(SEVERITIES), default="medium", show_default=True,
              help="Lowest severity that sets exit bit 1.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 whatever is found (a file not scanned still sets bit 2).")
@click.option("--statistics", is_flag=True, help="Print one count per rule code instead of the findings.")
@click.option("--no-cache", is_flag=True,
              help="Inspect every file again instead of reusing the results of files unchanged since the last scan.")
@config_option
@guarded
def scan(paths, select, ignore, no_plugins, fmt, output, jobs, rules_modules, no_prefilter, strict, fail_on,
         exit_zero, statistics, no_cache, config_file) -> None:
    """Find injected debug code in Python files and directories (linter-style).

    Exit status as for audit: bit 1 when a finding at or above --fail-on, bit 2 when a file
    could not be scanned or for a usage error.
    """
    from .lint.warmscan import scan_paths

    missing = [p for p in paths if not os.path.lexists(p)]
    if missing:
        raise DriftscanError(f"{missing[0]}: no such file or directory")
    config = _load_config(config_file)
    cache = None
    if not no_cache:
        from .caches.location import user_cache_dir
        from .lint.scancache import ResultCache

        cache = ResultCache(os.path.join(user_cache_dir(), "scan"), __version__)
    result = scan_paths(paths, select=_codes(select) or config.select, ignore=_codes(ignore) or config.ignore,
                        jobs=jobs, prefilter=not no_prefilter, plugins=not no_plugins, unused_noqa=strict,
                        progress=ScanProgress(), cache=cache,
                        extra_rule_modules=[*rules_modules, *config.rules_modules])
    if statistics:
        from .render.statistics import render_statistics

        _write(render_statistics(result), "text", output)
    else:
        from .render.scan import SCAN_RENDERERS

        _write(SCAN_RENDERERS[fmt](result), fmt, output)
    threshold = SEVERITIES.index(fail_on) + 1
    found = any(f.severity.rank >= threshold for _, f in result.findings)
    status = EXIT_DRIFT if found and not exit_zero else EXIT_CLEAN
    if result.errors:
        status |= EXIT_INCOMPLETE
    sys.exit(status)


@main.command()
@click.option("--venv", metavar="PATH", help="The virtual environment (default as for audit: VIRTUAL_ENV, CONDA_PREFIX, the uv project's .venv, the python3 on PATH, else driftscan's own).")
@click.option("--site-packages", "site_packages", metavar="DIR", multiple=True, help="A bare site-packages.")
@click.option("--model-dir", "model_dirs", metavar="PATH", multiple=True, help="Also save a model directory's drift.")
@click.option("--hf-cache", metavar="DIR", is_flag=False, flag_value="", default=None,
              help="Also save the drift of every repository of a Hugging Face cache (default: HF_HUB_CACHE / HF_HOME "
                   "/ ~/.cache/huggingface/hub), edited blobs included.")
@click.option("--output", "-o", metavar="DIR", required=True, help="The checkpoint directory to create (must not exist).")
@pristine_options
@click.option("--uv-cache", metavar="DIR", help="uv's cache directory (default: UV_CACHE_DIR or uv's default).")
@click.option("--max-copy", type=click.IntRange(min=0), metavar="BYTES",
              help="Copy files up to this size (default 1 GiB); larger ones are listed, not copied.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Parallel hashing workers (default: cores).")
@click.option("--no-cache", is_flag=True, help="Trust no cache: re-hash every file.")
@click.option("--allow-partial", is_flag=True,
              help="Exit 0 even when a modified package file has no original and no patch in the checkpoint.")
@guarded
def checkpoint(venv, site_packages, model_dirs, hf_cache, output, wheels, fetch, uv_cache, max_copy, jobs, no_cache,
               allow_partial) -> None:
    """Save all drift as a restorable checkpoint outside the audited tree.

    DIR gets patches/ (one -p0 unified diff per modified text file, from the environment root),
    files/ (every drifted, added and model-directory file), originals/, report.json and
    checkpoint.json. Written atomically; an existing DIR is never replaced. Each file is listed
    with what the checkpoint holds of it (content, patch, verified original). Exit status: bit 1
    when a modified package file has no original and no patch (a partial checkpoint; the lines
    that complete it are printed; --allow-partial), bit 2 when a file could not be saved.
    """
    from .api import checkpoint as take
    from .render.restoreview import render_checkpoint_text

    venv, chosen_because = _default_venv(venv, site_packages, bool(model_dirs) or hf_cache is not None)
    _say_target("checkpoint", venv, chosen_because, model_dirs, hf_cache,
                alone=venv is None and bool(model_dirs or hf_cache is not None))
    written = take(output, venv=venv, site_packages=site_packages, model_dirs=model_dirs, wheels=wheels,
                   fetch=fetch, uv_cache=uv_cache, jobs=jobs, use_cache=not no_cache, max_copy=max_copy,
                   hf_cache=hf_cache)
    for problem in written.problems:
        click.echo(one_line(f"driftscan: {problem}"), err=True)
    click.echo(inert(render_checkpoint_text(written, allow_partial)), nl=False)
    status = EXIT_INCOMPLETE if written.problems else EXIT_CLEAN
    if written.index.partial and not allow_partial:
        status |= EXIT_DRIFT
    sys.exit(status)


@main.command()
@click.argument("paths", nargs=-1, metavar="[PATH]...")
@click.option("--dist", "dists", metavar="NAME", multiple=True, help="Restore this distribution's drift (repeatable).")
@click.option("--venv", metavar="PATH", help="The virtual environment (default as for audit: VIRTUAL_ENV, CONDA_PREFIX, the uv project's .venv, the python3 on PATH, else driftscan's own).")
@click.option("--site-packages", "site_packages", metavar="DIR", multiple=True, help="A bare site-packages.")
@click.option("--model-dir", "model_dirs", metavar="PATH", multiple=True,
              help="Include a model directory in the checkpoint (restore never changes it).")
@click.option("--hf-cache", metavar="DIR", is_flag=False, flag_value="", default=None,
              help="Include every repository of a Hugging Face cache in the checkpoint (restore never changes it).")
@pristine_options
@click.option("--uv-cache", metavar="DIR", help="uv's cache directory (default: UV_CACHE_DIR or uv's default).")
@click.option("--yes", is_flag=True, help="Write a checkpoint, then restore (default: a dry run).")
@click.option("--remove-added", is_flag=True,
              help="Also remove files no RECORD lists inside a restored distribution's own package directories.")
@click.option("--checkpoint", "checkpoint_path", metavar="DIR",
              help="Where --yes writes its checkpoint (default: ~/.local/state/driftscan/checkpoints/...).")
@click.option("--max-copy", type=click.IntRange(min=0), metavar="BYTES",
              help="The checkpoint copies files up to this size (default 1 GiB); a drifted file it cannot save "
                   "is not restored.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Parallel hashing workers (default: cores).")
@click.option("--no-cache", is_flag=True, help="Trust no cache: re-hash every file.")
@guarded
def restore(paths, dists, venv, site_packages, model_dirs, hf_cache, wheels, fetch, uv_cache, yes, remove_added,
            checkpoint_path, max_copy, fmt, jobs, no_cache) -> None:
    """Put package-scope drift back to the verified original bytes (a dry run unless --yes).

    Only files a RECORD lists are rewritten, each from a source whose bytes match RECORD, through a
    new file renamed into place (a uv hard link is broken, not written through). A file with no
    verified original of its own is listed as such with how to get one, and never touched.
    Environment, model directory, source and dump drift is listed with how to handle it. Exit
    status: bit 2 when a file failed, was refused, or has no verified original (in the dry run:
    would be).
    """
    from .api import restore as run_restore
    from .render.restoreview import RESTORE_RENDERERS

    venv, chosen_because = _default_venv(venv, site_packages)  # restore rewrites an environment's files
    _say_target("restore", venv, chosen_because, model_dirs, hf_cache)
    report = run_restore(venv, site_packages, dists=dists, paths=paths, wheels=wheels, fetch=fetch,
                         uv_cache=uv_cache, yes=yes, remove_added=remove_added, checkpoint_path=checkpoint_path,
                         model_dirs=model_dirs, jobs=jobs, use_cache=not no_cache, max_copy=max_copy,
                         hf_cache=hf_cache)
    _write(RESTORE_RENDERERS[fmt](report), fmt, None)
    # Bit 2 when anything asked was not (or, in a dry run, would not be) done: a failure, a file
    # with no verified original, one its checkpoint could not save, a refusal, what was not checked.
    sys.exit(EXIT_INCOMPLETE if report.not_done or report.refused or report.errors else EXIT_CLEAN)


@main.command()
@click.argument("checkpoint_dir", metavar="CHECKPOINT")
@click.option("--venv", metavar="PATH", help="The environment to patch (default: the one the checkpoint was taken of).")
@click.option("--site-packages", "site_packages", metavar="DIR", multiple=True, help="A bare site-packages.")
@click.option("--only", "only", metavar="PATH", multiple=True,
              help="Re-apply only these files (relative to the environment root, as in the checkpoint; repeatable).")
@click.option("--keep-findings", is_flag=True,
              help="Write injected debug code back too (default: it is removed statement by statement, with the "
                   "added code only it used; a file whose findings' origin cannot be decided is refused). Every "
                   "finding written back is listed.")
@click.option("--exclude-findings", is_flag=True,
              help="The default: injected debug code is left out (accepted for older scripts).")
@click.option("--partial", is_flag=True,
              help="On a file with conflicting hunks, apply the clean ones and write the conflicting ones to "
                   "CHECKPOINT.rej/<relpath>.rej (beside the checkpoint, never in the environment).")
@pristine_options
@click.option("--yes", is_flag=True, help="Write a checkpoint of the current drift, then write (default: a dry run).")
@click.option("--checkpoint", "checkpoint_path", metavar="DIR", help="Where --yes writes its checkpoint.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Parallel hashing workers (default: cores).")
@guarded
def reapply(checkpoint_dir, venv, site_packages, only, keep_findings, exclude_findings, partial, wheels, fetch, yes,
            checkpoint_path, fmt, jobs) -> None:
    """Re-apply a checkpoint's patches after a reinstall or upgrade (a dry run unless --yes).

    Each file's original is verified (the checkpoint's copy, the installed file, a kept one,
    --wheels or --fetch), and the debug findings' origins are decided against it. Where the version
    is unchanged the patch applies as it was; where it changed, a three-way merge onto the new
    original, and a file with a conflicting hunk is left untouched (--partial: its clean hunks are
    applied). A file already carrying the changes is "already". Injected debug code is left out
    unless --keep-findings. The dry run shows each resulting diff. Exit status: bit 1 when anything
    is (or, in a dry run, would be) not applied — a conflict, a --partial write to a .rej, a file
    skipped (gone, its distribution not installed, its place taken) —, bit 2 for a failure or a
    refusal.
    """
    from .api import reapply as run_reapply
    from .render.restoreview import REAPPLY_RENDERERS

    if venv is None and not site_packages:
        click.echo(inert(f"driftscan reapply: target the environment {checkpoint_dir} was taken of (no --venv "
                         "named)"), err=True)
    if keep_findings and exclude_findings:
        raise click.UsageError("--keep-findings and --exclude-findings contradict each other")
    report = run_reapply(checkpoint_dir, venv, site_packages, only=only, keep_findings=keep_findings, yes=yes,
                         checkpoint_path=checkpoint_path, jobs=jobs, partial=partial, wheels=wheels, fetch=fetch)
    _write(REAPPLY_RENDERERS[fmt](report), fmt, None)
    status = EXIT_DRIFT if report.not_applied else EXIT_CLEAN
    if report.refused_or_failed:
        status |= EXIT_INCOMPLETE
    sys.exit(status)


@main.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED, metavar="-- COMMAND [ARGS]...")
@click.option("--venv", metavar="PATH",
              help="The environment the command changes (default: the one the command names, else as for audit).")
@click.option("--site-packages", "site_packages", metavar="DIR", multiple=True, help="A bare site-packages.")
@model_options
@click.option("--from", "source", metavar="WHEEL|DIR|index",
              help="Where the reinstall comes from (default: read from the command; else as installed).")
@click.option("--checkpoint", "checkpoint_path", metavar="DIR",
              help="Where to write the checkpoint (default: where restore --yes puts its own).")
@click.option("--expect", "expect", metavar="FILE", help="TOML expectations to check before and after.")
@pristine_options
@click.option("--uv-cache", metavar="DIR", help="uv's cache directory (default: UV_CACHE_DIR or uv's default).")
@click.option("--force", is_flag=True,
              help="Run the command even when guard would refuse (debug code would come back, a partial "
                   "checkpoint, another environment); the report lists what was overridden.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--output", "-o", metavar="FILE", help="Write the report here (atomically) instead of stdout.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Parallel hashing workers (default: cores).")
@click.option("--no-cache", is_flag=True, help="Trust no cache: re-hash every file (paranoid mode).")
@rule_options
@config_option
@guarded
def guard(command, venv, site_packages, model_dirs, hf_cache, source, checkpoint_path, expect, wheels, fetch,
          uv_cache, force, fmt, output, jobs, no_cache, select, ignore, no_plugins, config_file) -> None:
    """Run an install command with the checkpoint before it and the check after it.

    Audits and predicts for the command (pip, uv pip, uv sync, conda/mamba/micromamba, pixi;
    anything else: every drift may survive), writes a whole checkpoint, refuses to start when the
    command would bring debug code back or the checkpoint could not undo it (--force overrides),
    runs the command without a shell (its output passed through; with --format json and no
    --output, its stdout goes to stderr), audits again and reports each prediction against what
    happened. Exit status: the command's own when it fails; else bit 1 when a prediction did not
    hold, bit 2 when guard refused to start it or something could not be checked.
    """
    from .api import guard as run_guard
    from .reinstall.guard import exit_status as guard_status
    from .render.guardview import GUARD_RENDERERS

    config = _load_config(config_file)
    for directory in wheels:
        if not os.path.isdir(directory):
            raise DriftscanError(f"--wheels {directory}: not a directory")
    dirs, hub, _ = _targets(config, venv, site_packages, model_dirs, hf_cache)
    chosen_because = None
    if venv is None and not site_packages:  # none named: where the command installs, else as for audit
        from .reinstall.guard import recognise

        where = recognise(list(command)).environment
        if where and (os.path.isfile(os.path.join(where, "pyvenv.cfg")) or os.path.isdir(os.path.join(where,
                                                                                                     "conda-meta"))):
            venv, chosen_because = where, "the command installs into it"
    if chosen_because is None:
        venv, chosen_because = _default_venv(venv, site_packages)  # model directories add to it, never replace it

    def say(text: str) -> None:
        click.echo(inert(f"driftscan guard: {text}"), err=True)

    to_file = bool(output and output != "-")
    report = run_guard(list(command), venv, site_packages, model_dirs=dirs, hf_cache=hub, source=source,
                       checkpoint_path=checkpoint_path, expect=expect, wheels=wheels, fetch=fetch,
                       uv_cache=uv_cache or config.uv_cache, jobs=jobs, use_cache=not no_cache, force=force,
                       select=_codes(select) or config.select, ignore=_codes(ignore) or config.ignore,
                       rules_modules=config.rules_modules, plugins=not no_plugins, chosen_because=chosen_because,
                       command_stdout=2 if fmt == "json" and not to_file else None, on_event=say)
    if _write(GUARD_RENDERERS[fmt](_for_text(report, fmt)), fmt, output):
        s = report.summary
        say(f"report written to {output}: {s.held} held, {s.failed} failed, {s.unjudged} not judged")
    sys.exit(guard_status(report))


@main.command()
@click.argument("inputs", metavar="REPORT_OR_SNAPSHOT...", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
@click.option("--output", "-o", metavar="FILE", help="Write the comparison here (atomically) instead of stdout.")
@click.option("--verbose", "-v", is_flag=True, help="Text: every path of every machine, not the first 50.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when machines differ.")
@guarded
def compare(inputs, fmt, output, verbose, exit_zero) -> None:
    """Compare audit reports (or snapshots) of several machines; name each machine that deviates
    from the majority, and how (exit 1: some machine differs; 2: an input could not be read)."""
    from .compare import compare_files
    from .render.compare import COMPARE_RENDERERS

    result = compare_files(list(inputs))
    _write(COMPARE_RENDERERS[fmt](result, verbose=verbose), fmt, output)
    status = EXIT_DRIFT if result.differs and not exit_zero else EXIT_CLEAN
    if result.errors:
        status |= EXIT_INCOMPLETE
    sys.exit(status)


@contextlib.contextmanager
def _stdout_is_stderr():
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


class FleetProgress:
    """``fleet``'s progress on stderr, for a terminal: nodes probed, audits submitted and answered."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()
        self.counts = {"probed": 0, "submitted": 0, "done": 0}

    def __call__(self, event: str, node_id: str) -> None:
        if not self.enabled or event not in self.counts:
            return
        self.counts[event] += 1
        c = self.counts
        click.echo(f"\rnodes probed {c['probed']}, audits sent {c['submitted']}, answered {c['done']}   ",
                   err=True, nl=False)

    def close(self) -> None:
        if self.enabled and any(self.counts.values()):
            click.echo("", err=True)


@main.command()
@click.option("--ray-address", "address", metavar="ADDR",
              help="The cluster (as ray.init takes it: HOST:PORT, ray://HOST:10001; default: RAY_ADDRESS, else auto).")
@click.option("--venv", metavar="PATH", help="Audit this environment on every node (default: the Ray worker's interpreter's).")
@click.option("--venv-from-env", is_flag=True, help="Audit each node's VIRTUAL_ENV.")
@click.option("--model-dir", "model_dirs", metavar="PATH", multiple=True, help="Also audit this model directory on every node.")
@click.option("--snapshot", "take_snapshot", is_flag=True, help="Compare snapshots of the nodes instead of audit reports.")
@click.option("--timeout", type=click.FloatRange(min=1), default=600, show_default=True,
              help="Seconds for the whole run: a node that has not answered by then is unreachable.")
@click.option("--reports", "reports_dir", metavar="DIR", help="Keep every node's report (or snapshot) here as NODE_ID.json.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
@click.option("--output", "-o", metavar="FILE", help="Write the result here (atomically) instead of stdout.")
@click.option("--verbose", "-v", is_flag=True, help="Text: every differing path, not the first 50 per node.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when nodes differ.")
@guarded
def fleet(address, venv, venv_from_env, model_dirs, take_snapshot, timeout, reports_dir, fmt, output, verbose,
          exit_zero) -> None:
    """Audit every alive node of a Ray cluster once and compare them (needs the fleet extra: pip install
    'driftscan[fleet]'; run it from the cluster's serving venv). Exit 1: nodes differ; 2: a node unreachable or failed."""
    from .fleet import run as run_fleet
    from .fleet.render import FLEET_RENDERERS

    progress = FleetProgress()
    try:
        with _stdout_is_stderr():  # Ray prints cluster events (a node marked dead) to stdout
            result = run_fleet(address, venv=venv, venv_from_env=venv_from_env, model_dirs=model_dirs,
                               snapshot=take_snapshot, timeout=timeout, reports_dir=reports_dir, progress=progress)
    finally:
        progress.close()
    _write(FLEET_RENDERERS[fmt](result, verbose=verbose), fmt, output)
    status = EXIT_DRIFT if result.differs and not exit_zero else EXIT_CLEAN
    if result.incomplete:
        status |= EXIT_INCOMPLETE
    sys.exit(status)


@main.command()
@click.option("--for", "kind", type=click.Choice(["audit", "scan", "plan", "compare", "fleet", "guard"]),
              default="audit", show_default=True,
              help="Whose JSON: audit's (and diff's) report, scan, plan, compare, fleet or guard --format json.")
@guarded
def schema(kind) -> None:
    """Print the JSON Schema of the audit report (or of scan's, plan's, compare's, fleet's or guard's JSON output)."""
    from .render import json_schema

    if kind == "fleet":
        from .fleet.model import FleetResult  # pydantic only: Ray is not imported

        click.echo(json.dumps(FleetResult.model_json_schema(), indent=2))
        return
    if kind == "guard":
        from .reinstall.guard import GuardReport

        click.echo(json.dumps(GuardReport.model_json_schema(), indent=2))
        return
    from .report.contract import report_schema

    click.echo(json.dumps(report_schema() if kind == "audit" else json_schema(kind), indent=2))


def _apply_accepted(report: Report, config) -> Report:
    """The config's accept entries applied to a report (accept.py): accepted drift marked, stale
    and unused entries listed. Called before emit and exit_status."""
    if not config.accept:
        return report
    from .report.accept import apply_accepted

    return apply_accepted(report, config.accept, source=config.source)


@main.command()
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--reason", required=True, help="Why this drift is kept (written into each entry; required).")
@click.option("--any-content", is_flag=True,
              help="Accept whatever the file holds (no sha256): the entry survives further edits.")
@click.option("--expires", metavar="DATE", help="From this date (YYYY-MM-DD) on the entries are stale.")
@click.option("--venv", metavar="PATH", help="The virtual environment (default: as for audit).")
@click.option("--site-packages", "site_packages", metavar="DIR", multiple=True, help="A bare site-packages.")
@model_options
@click.option("--uv-cache", metavar="DIR", help="uv's cache directory (default: UV_CACHE_DIR or uv's default).")
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Parallel hashing workers (default: cores).")
@click.option("--no-cache", is_flag=True, help="Trust no cache: re-hash every file.")
@click.option("--config", "config_file", metavar="FILE",
              help="The file to add the entries to (default: the configuration found from here upward, a "
                   "driftscan.toml or a pyproject.toml with [tool.driftscan]; else a new ./driftscan.toml).")
@guarded
def accept(paths, reason, any_content, expires, venv, site_packages, model_dirs, hf_cache, uv_cache, jobs, no_cache,
           config_file) -> None:
    """Accept the current drift of PATH...: one entry per drifted file, with its content's sha256.

    Runs the audit, finds the drifts PATH names (the relpath the report shows, or the file's
    path), and appends `[[accept]]` entries (`[[tool.driftscan.accept]]` in a pyproject.toml) to
    the configuration, keeping the rest of the file byte for byte. Written atomically. An
    accepted drift stays in the report and does not count toward the exit status; once the file
    changes again (or the entry expires), the entry is stale and the drift counts again.
    """
    import datetime

    from .report.accept import new_entries
    from .api import run
    from .config.settings import Config, append_entries, default_accept_file, user_config_path

    if not reason.strip():
        raise click.UsageError("--reason must say why the drift is kept")
    until = None
    if expires:
        try:
            until = datetime.date.fromisoformat(expires)
        except ValueError:
            raise click.UsageError(f"--expires {expires}: not a date (YYYY-MM-DD)") from None
    # --config naming a file that does not exist yet: it is created, with the defaults until then.
    config = _load_config(config_file) if not config_file or os.path.lexists(config_file) else Config()
    dirs, hub, include_environment = _targets(config, venv, site_packages, model_dirs, hf_cache)
    venv, _ = _default_venv(venv, site_packages, bool(dirs) or hub is not None, include_environment)
    report = run(venv, site_packages, jobs=jobs, uv_cache=uv_cache or config.uv_cache, use_cache=not no_cache,
                 model_dirs=dirs, hf_cache=hub, select=config.select, ignore=config.ignore,
                 rules_modules=config.rules_modules, include_environment=include_environment, report_only=True,
                 compare=False).report
    try:
        wanted = new_entries(report, paths, reason, any_content=any_content, expires=until)
    except ValueError as exc:
        raise DriftscanError(str(exc)) from None
    target = default_accept_file(config_file)
    same_file = config.source is not None and os.path.abspath(config.source) == os.path.abspath(target)
    already = {d.path: d.accepted for d in _apply_accepted(report, config).drifts if d.accepted} if same_file else {}
    entries = []
    for entry, drift, note in wanted:
        if drift.path in already:
            click.echo(one_line(f"driftscan: note: {drift.relpath}: already accepted by entry {already[drift.path]['entry']} "
                             f"of {target}"), err=True)
            continue
        if note:
            click.echo(one_line(f"driftscan: note: {drift.relpath}: {note}"), err=True)
        entries.append(entry)
    if not entries:
        sys.exit(EXIT_CLEAN)
    created = not os.path.lexists(target)
    append_entries(target, entries)
    for entry in entries:
        pinned = f"sha256 {entry.sha256[:16]}…" if entry.sha256 else "any content"
        click.echo(one_line(f"accepted {entry.path} ({pinned})" + (f", until {entry.expires}" if entry.expires else "")))
    click.echo(inert(f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'} added to {target}"
                     + (" (created)" if created else "")), err=True)
    if created and config.source and os.path.abspath(config.source) == os.path.abspath(user_config_path()):
        click.echo(inert(f"driftscan: note: from here on {target} is the configuration in this directory, not "
                         f"{config.source} (configuration files are not merged)"), err=True)
    sys.exit(EXIT_CLEAN)


def entry() -> None:
    """The console script: run the command, flush, and leave without tearing the heap down.

    An audit leaves a few hundred thousand objects behind; freeing them one by one at interpreter
    exit costs tens of milliseconds and serves nothing (no threads, files or atexit work remain).
    This process is driftscan's own, so its helpers may be forked from it (driftscan/fs/helpers.py)."""
    from .fs.helpers import allow_fork

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
