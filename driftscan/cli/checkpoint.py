"""Keeping work across a reinstall: ``driftscan checkpoint`` saves all drift, ``restore`` puts package
files back to their verified originals, ``reapply`` writes a checkpoint's patches back."""

from __future__ import annotations

import sys

import click

from ..core.errors import DriftscanError
from ..fs.paths import inert, one_line
from ..render.registry import REAPPLY, RESTORE, OutputFormat, RenderOptions, format_names, render
from .exits import EXIT_CLEAN, EXIT_DRIFT, EXIT_INCOMPLETE, guarded
from .options import (app_data_option, format_option, jobs_option, no_cache_option, pristine_options, target_options,
                      uv_cache_option)
from .output import write
from .targets import default_venv, empty_cache, say_empty_cache, say_target
from ..api import checkpoint as take
from ..api import reapply as run_reapply
from ..api import restore as run_restore


@click.command()
@target_options()
@click.option("--model-dir", "model_dirs", metavar="PATH", multiple=True, help="Also save a model directory's drift.")
@click.option("--hf-cache", metavar="DIR", is_flag=False, flag_value="", default=None,
              help="Also save the drift of every repository of a Hugging Face cache (default: HF_HUB_CACHE / HF_HOME "
                   "/ ~/.cache/huggingface/hub), edited blobs included.")
@click.option("--output", "-o", metavar="DIR", required=True, help="The checkpoint directory to create (must not exist).")
@pristine_options
@uv_cache_option
@app_data_option
@click.option("--max-copy", type=click.IntRange(min=0), metavar="BYTES",
              help="Copy files up to this size (default 1 GiB); larger ones are listed, not copied.")
@jobs_option()
@no_cache_option()
@click.option("--allow-partial", is_flag=True,
              help="Exit 0 even when a modified package file has no original and no patch in the checkpoint.")
@guarded
def checkpoint(venv: str | None, site_packages: tuple[str, ...], model_dirs: tuple[str, ...], hf_cache: str | None,
               output: str, wheels: tuple[str, ...], fetch: bool, uv_cache: str | None, max_copy: int | None,
               jobs: int | None, no_cache: bool, allow_partial: bool) -> None:
    """Save all drift as a restorable checkpoint outside the audited tree.

    DIR gets patches/ (one -p0 unified diff per modified text file, from the environment root),
    files/ (every drifted, added and model-directory file), originals/, report.json and
    checkpoint.json. Written atomically; an existing DIR is never replaced. Each file is listed
    with what the checkpoint holds of it (content, patch, verified original). Exit status: bit 1
    when a modified package file has no original and no patch (a partial checkpoint; the lines
    that complete it are printed; --allow-partial), bit 2 when a file could not be saved.
    """
    venv, chosen_because = default_venv(venv, site_packages, bool(model_dirs) or hf_cache is not None)
    say_target("checkpoint", venv, chosen_because, model_dirs, hf_cache,
               alone=venv is None and bool(model_dirs or hf_cache is not None))
    empty = empty_cache(hf_cache)
    if empty and venv is None and not site_packages and not model_dirs:
        raise DriftscanError(f"{empty}: nothing to checkpoint, nothing written")
    say_empty_cache("checkpoint", hf_cache)
    written = take(output, venv=venv, site_packages=site_packages, model_dirs=model_dirs, wheels=wheels,
                   fetch=fetch, uv_cache=uv_cache, jobs=jobs, use_cache=not no_cache, max_copy=max_copy,
                   hf_cache=hf_cache)
    for problem in written.problems:
        click.echo(one_line(f"driftscan: {problem}"), err=True)
    click.echo(inert(render(written, OutputFormat.TEXT, RenderOptions(allow_partial=allow_partial))), nl=False)
    status = EXIT_INCOMPLETE if written.problems else EXIT_CLEAN
    if written.index.partial and not allow_partial:
        status |= EXIT_DRIFT
    sys.exit(status)


@click.command()
@click.argument("paths", nargs=-1, metavar="[PATH]...")
@click.option("--dist", "dists", metavar="NAME", multiple=True, help="Restore this distribution's drift (repeatable).")
@target_options()
@click.option("--model-dir", "model_dirs", metavar="PATH", multiple=True,
              help="Include a model directory in the checkpoint (restore never changes it).")
@click.option("--hf-cache", metavar="DIR", is_flag=False, flag_value="", default=None,
              help="Include every repository of a Hugging Face cache in the checkpoint (restore never changes it).")
@pristine_options
@uv_cache_option
@app_data_option
@click.option("--yes", is_flag=True, help="Write a checkpoint, then restore (default: a dry run).")
@click.option("--remove-added", is_flag=True,
              help="Also remove files no RECORD lists inside a restored distribution's own package directories.")
@click.option("--checkpoint", "checkpoint_path", metavar="DIR",
              help="Where --yes writes its checkpoint (default: ~/.local/state/driftscan/checkpoints/...).")
@click.option("--max-copy", type=click.IntRange(min=0), metavar="BYTES",
              help="The checkpoint copies files up to this size (default 1 GiB); a drifted file it cannot save "
                   "is not restored.")
@format_option(format_names(RESTORE))
@jobs_option()
@no_cache_option()
@guarded
def restore(paths: tuple[str, ...], dists: tuple[str, ...], venv: str | None, site_packages: tuple[str, ...],
            model_dirs: tuple[str, ...], hf_cache: str | None, wheels: tuple[str, ...], fetch: bool,
            uv_cache: str | None, yes: bool, remove_added: bool, checkpoint_path: str | None, max_copy: int | None,
            fmt: str, jobs: int | None, no_cache: bool) -> None:
    """Put package-scope drift back to the verified original bytes (a dry run unless --yes).

    Only files a RECORD lists are rewritten, each from a source whose bytes match RECORD, through a
    new file renamed into place (a uv hard link is broken, not written through). A file with no
    verified original of its own is listed as such with how to get one, and never touched.
    Environment, model directory, source and dump drift is listed with how to handle it. Exit
    status: bit 2 when a file failed, was refused, or has no verified original (in the dry run:
    would be).
    """
    venv, chosen_because = default_venv(venv, site_packages)  # restore rewrites an environment's files
    say_target("restore", venv, chosen_because, model_dirs, hf_cache)
    say_empty_cache("restore", hf_cache)
    report = run_restore(venv, site_packages, dists=dists, paths=paths, wheels=wheels, fetch=fetch,
                         uv_cache=uv_cache, yes=yes, remove_added=remove_added, checkpoint_path=checkpoint_path,
                         model_dirs=model_dirs, jobs=jobs, use_cache=not no_cache, max_copy=max_copy,
                         hf_cache=hf_cache)
    write(render(report, OutputFormat(fmt)), fmt, None)
    # Bit 2 when anything asked was not (or, in a dry run, would not be) done: a failure, a file
    # with no verified original, one its checkpoint could not save, a refusal, what was not checked.
    sys.exit(EXIT_INCOMPLETE if report.not_done or report.refused or report.errors or report.bytecode_not_removed
             else EXIT_CLEAN)


@click.command()
@click.argument("checkpoint_dir", metavar="CHECKPOINT")
@target_options("The environment to patch (default: the one the checkpoint was taken of).")
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
@format_option(format_names(REAPPLY))
@jobs_option()
@guarded
def reapply(checkpoint_dir: str, venv: str | None, site_packages: tuple[str, ...], only: tuple[str, ...],
            keep_findings: bool, exclude_findings: bool, partial: bool, wheels: tuple[str, ...], fetch: bool,
            yes: bool, checkpoint_path: str | None, fmt: str, jobs: int | None) -> None:
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
    if venv is None and not site_packages:
        click.echo(inert(f"driftscan reapply: target the environment {checkpoint_dir} was taken of (no --venv "
                         "named)"), err=True)
    if keep_findings and exclude_findings:
        raise click.UsageError("--keep-findings and --exclude-findings contradict each other")
    report = run_reapply(checkpoint_dir, venv, site_packages, only=only, keep_findings=keep_findings, yes=yes,
                         checkpoint_path=checkpoint_path, jobs=jobs, partial=partial, wheels=wheels, fetch=fetch)
    write(render(report, OutputFormat(fmt)), fmt, None)
    status = EXIT_DRIFT if report.not_applied else EXIT_CLEAN
    if report.refused_or_failed or report.bytecode_not_removed:
        status |= EXIT_INCOMPLETE
    sys.exit(status)
