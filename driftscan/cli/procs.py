"""``driftscan procs``: the processes that run an environment and whether they run old code."""

from __future__ import annotations

import sys

import click

from ..render.registry import PROCS, OutputFormat, RenderOptions, format_names, render
from .exits import FAIL_ON, fail_on_policies, guarded
from .options import output_options, target_options
from .output import for_text, write
from .targets import default_venv, say_target
from ..api import procs as run_procs
from ..report.policy import FailOn, procs_exit_status


@click.command()
@target_options("The environment whose processes to list (default: the active or nearest one, as audit finds it).")
@click.option("--all", "all_python", is_flag=True,
              help="List every Python process seen, those that do not run the environment marked as such.")
@output_options(format_names(PROCS), "result")
@click.option("--fail-on", "fail_on", metavar="POLICY[,POLICY]", multiple=True,
              help="What sets exit bit 1: " + ", ".join(FAIL_ON) + " (default: stale-process; only stale-process "
                   "and drift count here, never: nothing does).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 whatever is found (what could not be checked still sets bit 2).")
@click.option("--verbose", "-v", is_flag=True, help="Every file of each piece of evidence (default: the first 5).")
@click.option("--compile-cache", "compile_cache_dirs", metavar="DIR", multiple=True,
              help="Also look through this compile-cache directory (a VLLM_CACHE_ROOT's torch_compile_cache, "
                   "a TRITON_CACHE_DIR, a TORCHINDUCTOR_CACHE_DIR) besides the default ones.")
@click.option("--no-compile-caches", is_flag=True,
              help="Do not look through the vLLM, Inductor and Triton compile caches.")
@click.option("--runtime-dir", "runtime_dirs", metavar="DIR", multiple=True,
              help="Read driftscan.runtime's record files from this directory only (default: each user's "
                   "$XDG_RUNTIME_DIR/driftscan and ~/.cache/driftscan/runtime).")
@guarded
def procs(venv: str | None, site_packages: tuple[str, ...], all_python: bool, fmt: str, output: str | None,
          fail_on: tuple[str, ...], exit_zero: bool, verbose: bool, compile_cache_dirs: tuple[str, ...],
          no_compile_caches: bool, runtime_dirs: tuple[str, ...]) -> None:
    """Which processes run the environment, and which of them run code other than what is on disk?

    A process runs the environment when its command line names a program, script or module of it
    by an absolute path, or when it maps a file of it. Evidence: the module files it imported that
    changed since, when it runs driftscan.runtime's recorder (exact); a mapped file of it deleted
    or replaced since (exact); files of it changed after the process started (likely). Each stale
    process is followed by what to restart: its systemd unit, its container, or the process.
    Only /proc is read: no process is run, traced, or has its memory or environment read.
    Then the vLLM and Triton compile-cache entries built from files of the environment that are
    gone or changed since, with their size and the rm -r line that removes them (never run).
    Exit status: bit 1 when a process runs old code (--fail-on stale-process, the default);
    bit 2 when something could not be checked (a process not visible to this user).
    """
    policies = fail_on_policies(fail_on) if fail_on else (FailOn.STALE_PROCESS,)
    venv, why = default_venv(venv, site_packages)
    say_target("procs", venv, why)
    result = run_procs(venv=venv, site_packages=site_packages, all_python=all_python,
                       compile_caches=not no_compile_caches, compile_cache_dirs=compile_cache_dirs,
                       runtime_dirs=runtime_dirs)
    write(render(for_text(result, fmt), OutputFormat(fmt), RenderOptions(verbose=verbose)), fmt, output)
    sys.exit(procs_exit_status(result, policies, exit_zero))
