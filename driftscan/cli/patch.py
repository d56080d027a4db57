"""``driftscan patch``: the fixes a team keeps, as reviewable patch files (docs/patches.md)."""

from __future__ import annotations

import sys

import click

from ..caches.location import refuse_inside
from ..environment.target import environment_roots, resolve_target
from ..patches.apply import Allow, apply_patches
from ..patches.apply import exit_status as apply_exit_status
from ..render.registry import PATCH_APPLY, PATCH_EXPORT, PATCH_REBASE, OutputFormat, RenderOptions, format_names, render
from .configuration import load_config
from .exits import guarded
from .options import format_option, jobs_option, pristine_options, target_options, uv_cache_option
from .output import for_text, write
from .patchsource import patch_source, patch_source_options, pin_manifest, pin_option
from .targets import default_venv, say_target, wheel_dirs
from ..api import patch_export, patch_rebase, patch_rebase_abort, patch_rebase_continue
from ..patches.export import exit_status
from ..patches.rebase import exit_status as rebase_exit_status


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def patch() -> None:
    """Keep the fixes made in installed packages as patch files: export them, review and commit
    them, apply them after every install, rebase them onto a new release."""


# ---------------------------------------------------------------------------------- patch export


@patch.command("export")
@click.argument("distributions", metavar="[DIST]...", nargs=-1)
@target_options("The environment to export from (default: the active or nearest one, as audit finds it).")
@click.option("--output", "-o", metavar="DIR", required=True,
              help="Where to write DIST@VERSION.patch (made if missing; never inside the environment).")
@click.option("--include-debug", is_flag=True,
              help="Keep injected debug code (default: it is removed statement by statement, as reapply does; a "
                   "file whose whole change is debug code, and an added module with debug code, are left out).")
@click.option("--force", is_flag=True, help="Replace a different patch file already at that name.")
@pin_option
@click.option("--manifest", metavar="FILE", type=click.Path(dir_okay=False),
              help="With --pin: the manifest to write, a pyproject.toml ([tool.driftscan.patches]) or driftscan.toml "
                   "([patches]).")
@pristine_options
@uv_cache_option
@format_option(format_names(PATCH_EXPORT))
@click.option("--verbose", "-v", is_flag=True, help="List the files exported as they are, too.")
@jobs_option()
@guarded
def export(distributions: tuple[str, ...], venv: str | None, site_packages: tuple[str, ...], output: str,
           include_debug: bool, force: bool, pin: bool, manifest: str | None, wheels: tuple[str, ...], fetch: bool,
           uv_cache: str | None, fmt: str, verbose: bool, jobs: int | None) -> None:
    """Write DIR/DIST@VERSION.patch for each distribution with changed package files (those named, or all).

    A standard unified diff from the install root (git apply -p1 or patch -p1 in an unpacked wheel)
    behind a DEP-3-style header listing each file with its original's RECORD hash: modified files
    diffed against their verified originals (--wheels, --fetch, or the caches), files added in the
    distribution's package directories as new files, missing ones as deletions. Each file's fate
    is printed, and the manifest line that pins each patch; --pin writes that line into the
    manifest itself. Exit status: 0 a patch written (or the same one there), 1 nothing to export,
    2 a file could not be exported (no verified original, binary, too large), a patch file not
    written, or (--pin) a line not written.
    """
    if manifest and not pin:
        raise click.UsageError("--manifest names where --pin writes: give --pin too")
    pin_to = pin_manifest(manifest) if pin else None
    venv, why = default_venv(venv, site_packages)
    say_target("patch export", venv, why)
    result = patch_export(output, venv, site_packages, distributions=distributions, include_debug=include_debug,
                          force=force, pin=pin_to, wheels=wheel_dirs(wheels), fetch=fetch, uv_cache=uv_cache,
                          jobs=jobs)
    write(render(result, OutputFormat(fmt), RenderOptions(verbose=verbose)), fmt, None)
    sys.exit(exit_status(result))


# ----------------------------------------------------------------------------------- patch apply


@patch.command("apply")
@target_options("The environment to patch (default: the active or nearest one, as audit finds it).")
@patch_source_options
@click.option("--yes", is_flag=True, help="Write (default: a dry run that says what would be written).")
@click.option("--allow-unused", is_flag=True, help="A patch no installed distribution matches does not fail the run.")
@click.option("--allow-conflicts", is_flag=True,
              help="A file that conflicts (left as it is) does not fail the run; the other files are written.")
@click.option("--format", "fmt", type=click.Choice(format_names(PATCH_APPLY)), default="text", show_default=True)
@click.option("--verbose", "-v", is_flag=True, help="Every hunk's state, not only the conflicting ones.")
@guarded
def apply(venv: str | None, site_packages: tuple[str, ...], patches_dir: str | None, manifest: str | None,
          yes: bool, allow_unused: bool, allow_conflicts: bool, fmt: str, verbose: bool) -> None:
    """Apply the team's patch files to the distributions installed in the environment.

    Each installed distribution gets the patch the manifest matches to it (an exact version beats a
    range, which beats the name alone), each hunk checked exactly against the installed file:
    applied, already (the environment carries it), obsolete (the new upstream version already does
    it) or conflict (the hunk and the lines there are shown; nothing of that file is written). A
    dry run unless --yes; with --yes each file is written atomically, never RECORD, never through a
    symlink, and what was written is recorded in the user cache.

    Exit status: 0 nothing left to do; 1 a dry run that would write, a conflict (unless
    --allow-conflicts), a patch no installed distribution matches (unless --allow-unused), a patch
    refused (an edited file under a pinned sha256, a hostile path); 2 something could not be done.
    """
    source = patch_source(patches_dir, manifest, load_config(None))
    venv, why = default_venv(venv, site_packages)
    say_target("patch apply", venv, why)
    target = resolve_target(venv, site_packages)
    if yes:
        refuse_inside(environment_roots(target))
    report = apply_patches(target.site_packages, source, yes=yes)
    write(render(for_text(report, fmt), OutputFormat(fmt), RenderOptions(verbose=verbose)), fmt, None)
    sys.exit(apply_exit_status(report, Allow(unused=allow_unused, conflicts=allow_conflicts)))


# ---------------------------------------------------------------------------------- patch rebase


@patch.command("rebase")
@click.argument("name", metavar="DIST|WORKDIR", required=False)
@click.option("--to", "to", metavar="VERSION", help="The version to carry the patch onto.")
@click.option("--from", "from_version", metavar="VERSION",
              help="The version whose patch to rebase, when DIST has several (default: the highest below --to).")
@patch_source_options
@click.option("--output", "-o", metavar="DIR",
              help="Where to write DIST@VERSION.patch, or its work directory (default: beside the old patch).")
@click.option("--continue", "continue_", is_flag=True,
              help="Write the new patch from the work directory WORKDIR (default: the one under ./patches) once "
                   "its conflicts are resolved, and remove it.")
@click.option("--abort", is_flag=True, help="Remove the work directory WORKDIR (default: the one under ./patches).")
@target_options("An environment with DIST installed: the old version's originals, or the new version's own files, "
                "may come from it, and a wheel must fit its tags (default: the active or nearest one, as audit "
                "finds it).")
@pristine_options
@uv_cache_option
@click.option("--force", is_flag=True, help="Replace a different patch file already at the new name.")
@pin_option
@format_option(format_names(PATCH_REBASE))
@click.option("--verbose", "-v", is_flag=True, help="Every hunk's state, where each original came from, the notes.")
@guarded
def rebase(name: str | None, to: str | None, from_version: str | None, patches_dir: str | None,
           manifest: str | None, output: str | None, continue_: bool, abort: bool, venv: str | None,
           site_packages: tuple[str, ...], wheels: tuple[str, ...], fetch: bool, uv_cache: str | None, force: bool,
           pin: bool, fmt: str, verbose: bool) -> None:
    """Carry DIST's patch onto another version: driftscan patch rebase DIST --to VERSION.

    Each file of the patch is merged three ways: the old version's original (driftscan's kept
    originals, the installed file, or the old wheel; verified against the patch's hashes), the
    same with the patch applied, and the new version's file (the installed one when the environment
    already has that version, checked against its RECORD; else from its verified wheel: --wheels,
    uv's or pip's cache, --fetch). A hunk is applied, already there (the new version made the same
    change, for Python files also in other words: the same syntax tree) or in conflict. Without conflict DIR/DIST@VERSION.patch is written and the old
    patch left in place; with one, the work directory DIST@VERSION.rebase/ holds every file merged
    (conflicts between markers): resolve them, then --continue (or --abort). --pin writes the new
    patch's line into the manifest (the old one's stays); a rebase started with --pin pins on
    --continue too, in the manifest it was started for.

    Exit status: 0 the new patch written (or the same one there, or nothing left to keep), or a
    work directory removed; 1 conflicts (the work directory is left) or markers left; 2 it could
    not be done (no wheel, no original, an unreadable patch, a bad work directory).
    """
    if continue_ and abort:
        raise click.UsageError("--continue and --abort: give one")
    if continue_ or abort:
        if to or from_version or patches_dir or manifest or output or venv or site_packages or wheels or fetch \
                or uv_cache:
            raise click.UsageError("--continue and --abort take only the work directory (and --force, --pin, "
                                   "--format)")
        if abort and pin:
            raise click.UsageError("--abort writes nothing: --pin has nothing to pin")
        result = patch_rebase_abort(name) if abort else \
            patch_rebase_continue(name, force=force, pin=(lambda: pin_manifest(None)) if pin else None)
    else:
        if not name or not to:
            raise click.UsageError("name the distribution and the version: driftscan patch rebase DIST --to VERSION "
                                   "(or --continue / --abort a rebase under way)")
        source = patch_source(patches_dir, manifest, load_config(None))
        if venv is None and not site_packages:
            # The active or nearest environment, as patch apply finds it: an installed old version
            # gives the originals, an installed new version its own files, and either the tags.
            venv, why = default_venv(None, ())
            if venv is not None:
                say_target("patch rebase", venv, why)
        pin_to = pin_manifest(manifest) if pin else None
        result = patch_rebase(name, to, source.entries, from_version=from_version, output=output, venv=venv,
                              site_packages=site_packages, wheels=wheel_dirs(wheels), fetch=fetch,
                              uv_cache=uv_cache, force=force, pin=pin_to)
    write(render(for_text(result, fmt), OutputFormat(fmt), RenderOptions(verbose=verbose)), fmt, None)
    sys.exit(rebase_exit_status(result))

