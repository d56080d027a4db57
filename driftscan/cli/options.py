"""The option groups several commands share, as decorators. Each adds its options in the order
given, so a command's --help lists them where the decorator stands."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

from .exits import FAIL_ON

F = TypeVar("F", bound=Callable[..., Any])

# scan's --fail-on levels, lowest first.
SEVERITIES = ["low", "medium", "high"]

VENV_HELP = ("The virtual environment (default as for audit: VIRTUAL_ENV, CONDA_PREFIX, the uv project's .venv, the "
             "python3 on PATH, else driftscan's own).")


def _group(*options: Callable[[F], F]) -> Callable[[F], F]:
    """One decorator adding ``options`` in the order given (the first one listed first)."""

    def decorate(func: F) -> F:
        for option in reversed(options):
            func = option(func)
        return func

    return decorate


def target_options(venv_help: str = VENV_HELP,
                   site_packages_help: str | None = "A bare site-packages.") -> Callable[[F], F]:
    """--venv / --site-packages: the environment a command works on (the help says how each command uses it)."""
    return _group(
        click.option("--venv", metavar="PATH", help=venv_help),
        click.option("--site-packages", "site_packages", metavar="DIR", multiple=True, help=site_packages_help),
    )


def model_options(func: F) -> F:
    """Options naming model directories; shared by audit, plan, guard and accept."""
    return _group(
        click.option("--model-dir", "model_dirs", metavar="PATH", multiple=True,
                     help="Audit a model directory: hf download --local-dir, a hub cache repository, a git clone, "
                          "or a directory with a driftscan manifest (repeatable)."),
        click.option("--hf-cache", metavar="DIR", is_flag=False, flag_value="", default=None,
                     help="Audit every repository of a Hugging Face cache (default: HF_HUB_CACHE / HF_HOME / "
                          "~/.cache/huggingface/hub)."),
    )(func)


def output_options(formats: list[str], what: str = "report") -> Callable[[F], F]:
    """--format FORMAT (text by default) and --output/-o FILE, written atomically instead of stdout."""
    return _group(
        click.option("--format", "fmt", type=click.Choice(formats), default="text", show_default=True),
        click.option("--output", "-o", metavar="FILE", help=f"Write the {what} here (atomically) instead of stdout."),
    )


def format_option(formats: list[str]) -> Callable[[F], F]:
    """--format alone, for the commands that always write to stdout."""
    return click.option("--format", "fmt", type=click.Choice(formats), default="text", show_default=True)


def jobs_option(workers: str = "hashing workers") -> Callable[[F], F]:
    return click.option("--jobs", "-j", type=click.IntRange(min=1), help=f"Parallel {workers} (default: cores).")


def lock_group_option(func: F) -> F:
    return click.option("--lock-group", "lock_groups", metavar="NAME", multiple=True,
                        help="A dependency group the install took besides the lock's default one (pdm: default, "
                             "poetry: main, uv: dev; repeatable): its packages are required too. Packages only "
                             "other groups bring may be installed or not.")(func)


def uv_cache_option(func: F) -> F:
    return click.option("--uv-cache", metavar="DIR",
                        help="uv's cache directory (default: UV_CACHE_DIR or uv's default).")(func)


def _name_app_data(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    # The library reads virtualenv's app-data where virtualenv does, from VIRTUALENV_OVERRIDE_APP_DATA
    # (environment/uv/cache.py): naming it here is setting that for this run (and its helper processes).
    if value:
        os.environ["VIRTUALENV_OVERRIDE_APP_DATA"] = os.path.abspath(value)


def app_data_option(func: F) -> F:
    return click.option("--app-data", metavar="DIR", expose_value=False, callback=_name_app_data,
                        type=click.Path(exists=True, file_okay=False),
                        help="virtualenv's app-data directory, which --symlink-app-data venvs link their seed "
                             "packages from (default: VIRTUALENV_OVERRIDE_APP_DATA, else "
                             "~/.local/share/virtualenv); sets VIRTUALENV_OVERRIDE_APP_DATA for the run.")(func)


def no_cache_option(help: str = "Trust no cache: re-hash every file.") -> Callable[[F], F]:  # noqa: A002 - click's own word
    return click.option("--no-cache", is_flag=True, help=help)


def text_options(func: F) -> F:
    """How much the text report shows; shared by audit and diff."""
    return _group(
        click.option("--diff", "show_diffs", is_flag=True, help="Text: each modified file's diff against its original."),
        click.option("--verbose", "-v", "verbose", is_flag=True,
                     help="Text: also the evidence, JSON changes (pointer, old → new) and diffs under each drift."),
        click.option("--quiet", "-q", "quiet", is_flag=True, help="Text: only the summary line."),
        click.option("--show-upstream", is_flag=True,
                     help="Text: also the findings the original file has too (hidden by default)."),
    )(func)


def pristine_options(func: F) -> F:
    """Where originals of drifted package files are looked for; shared by audit, plan, checkpoint,
    restore, reapply and guard."""
    return _group(
        click.option("--wheels", "wheels", metavar="DIR", multiple=True,
                     help="Wheels to take originals from (pip download, a wheelhouse), matched by name, version and "
                          "tag (repeatable)."),
        click.option("--fetch", is_flag=True,
                     help="Allow `pip download --no-deps --only-binary :all: NAME==VERSION` for originals found "
                          "nowhere else (the only option that reaches the network)."),
    )(func)


def rule_options(func: F) -> F:
    """--select / --ignore by code prefix or rule name (longest prefix wins), --no-plugins; shared by
    audit, plan, diff, scan and guard."""
    return _group(
        click.option("--select", "select", metavar="CODES", multiple=True,
                     help="Rule codes, prefixes or names to run (default: all)."),
        click.option("--ignore", "ignore", metavar="CODES", multiple=True,
                     help="Rule codes, prefixes or names to leave out (comma-separated, repeatable)."),
        click.option("--no-plugins", "no_plugins", is_flag=True,
                     help="Leave out rules from the driftscan.rules entry points of driftscan's environment."),
    )(func)


def codes(values: tuple[str, ...]) -> list[str]:
    """--select / --ignore values: comma-separated and repeatable."""
    return [c.strip() for v in values for c in v.split(",") if c.strip()]


def policy_options(func: F) -> F:
    """--fail-on / --exit-zero: which drift sets exit bit 1; shared by audit, plan and diff."""
    return _group(
        click.option("--fail-on", "fail_on", metavar="POLICY[,POLICY]", multiple=True,
                     help="What sets exit bit 1: " + ", ".join(FAIL_ON) + " (default: drift; repeatable, "
                          "comma-separated; accepted drift never counts)."),
        click.option("--exit-zero", is_flag=True, help="Exit 0 whatever drift is found (errors still set bit 2)."),
    )(func)


def config_option(func: F) -> F:
    return click.option("--config", "config_file", metavar="FILE",
                        help="Configuration file (default: the nearest driftscan.toml, or pyproject.toml with "
                             "[tool.driftscan], from here upward; then ~/.config/driftscan/config.toml).")(func)
