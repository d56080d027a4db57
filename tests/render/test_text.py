"""render.text: one line per drift under a heading per distribution or place, every drift kind
shown for what it is, remedies after their group, one summary line last."""

from __future__ import annotations

import dataclasses
import re

import pytest

from driftscan.core.values import DriftKind
from driftscan.fs.paths import line_safe
from driftscan.render.text import COLLAPSE_OVER, colorize, render_text, summary_line
from fixtures.reports import MODEL, clean_report, every_kind_report


@pytest.fixture(scope="module")
def report():
    return every_kind_report(duration=2.0)


@pytest.fixture(scope="module")
def text(report):
    return render_text(report)


def _line_of(text: str, kind: str, relpath: str) -> str:
    found = [line for line in text.splitlines() if line.lstrip().startswith(kind + " ") and relpath in line]
    assert len(found) == 1, (kind, relpath, text)
    return found[0]


def test_every_drift_kind_has_its_line(report, text):
    for drift in report.drifts:
        line = _line_of(text, drift.kind.value, drift.relpath)
        mark = "PRISTINE" if drift.kind is DriftKind.RESTORED else {"wiped": "WIPED", "survives": "SURVIVES",
                                                                  "may-survive": "MAY SURVIVE"}[drift.prediction.value]
        assert mark in line, line


def test_details_say_what_changed(text):
    assert "(+2 −1 lines)" in _line_of(text, "modified", "demo/core.py")
    assert "was a file, now a symlink → /elsewhere/data.bin" in _line_of(text, "type-changed", "demo/data.bin")
    assert "(42 bytes)" in _line_of(text, "added", "stray_patch.py")
    assert "contains: METADATA" in _line_of(text, "orphaned-metadata", "ghost-0.1.dist-info")
    assert "2 files, 2.0 MB" in _line_of(text, "debug-artifacts", "dbg_*.pt")
    assert "older than the code" in _line_of(text, "possible-debug-artifacts", "old_*.pt")
    assert "1 edited: demo/core.py" in _line_of(text, "cache-modified", "abc")
    assert f"{'a' * 12} → {'b' * 12}" in text
    assert "DBG101 high   line 3:1 breakpoint: breakpoint() left in [injected]" in text


def test_headings_per_place(text):
    lines = text.splitlines()
    assert lines[0].startswith("driftscan ") and "venv /srv/venv (Python 3.12.3)" in lines[0]
    assert f"model directory {MODEL}" in lines[0]
    assert "demo 1.0 (pip)" in lines
    assert "not owned by any distribution" in lines
    assert f"model directory {MODEL} (no reinstall touches it)" in lines
    assert any(line.startswith("proj — editable source tree") for line in lines)
    assert "files left behind by debug code (no reinstall touches them)" in lines
    assert any(line.startswith("uv's cache: the archive of demo 1.0") for line in lines)
    # package groups first, external last
    assert lines.index("demo 1.0 (pip)") < lines.index("not owned by any distribution") \
        < lines.index("files left behind by debug code (no reinstall touches them)")


def test_remedies_follow_their_group(report, text):
    modified = next(d for d in report.drifts if d.kind is DriftKind.MODIFIED)
    assert f"  remedy: {modified.remedy}" in text
    assert "  remedy: uv cache clean --cache-dir /cache/uv demo" in text
    restored = next(d for d in report.drifts if d.kind is DriftKind.RESTORED)
    assert f"remedy: {restored.remedy}" not in text, "a restored file needs nothing"


def test_unverifiable_errors_and_summary(report, text):
    assert "unverifiable (1) — neither clean nor drifted" in text and "  legacy 0.1: no RECORD" in text
    assert "could not check (1)" in text and "locked.py: Permission denied" in text
    last = text.rstrip("\n").splitlines()[-1]
    assert last == summary_line(report)
    assert last.startswith(f"{len(DriftKind)} drifts (")
    assert "1000 files checked in 3 distributions in 2.00 s" in last
    assert last.endswith("1 unverifiable; 1 error")


def test_diffs_and_verbose(report):
    plain = render_text(report)
    with_diffs = render_text(report, diffs=True)
    assert "+breakpoint()" not in plain
    assert "      +breakpoint()" in with_diffs
    verbose = render_text(report, verbose=True)
    assert "listed in the RECORD of demo 1.0" in verbose or "no RECORD lists this file" in verbose
    assert "+breakpoint()" in verbose, "verbose shows diffs too"


def test_upstream_findings_hidden_unless_asked(report):
    drifts = [dataclasses.replace(d, findings=[dataclasses.replace(f, origin="upstream") for f in d.findings])
              for d in report.drifts]
    upstream = dataclasses.replace(report, drifts=drifts)
    text = render_text(upstream)
    assert "DBG101" not in text and "(1 finding also in the original file not shown: --show-upstream)" in text
    assert "[upstream]" in render_text(upstream, show_upstream=True)


def test_clean_and_empty_summaries():
    assert summary_line(clean_report(files=5)).startswith("no drift; 5 files checked in 1 distribution;")
    assert summary_line(clean_report(files=0)).startswith("nothing could be verified")
    assert render_text(clean_report()).endswith(summary_line(clean_report()) + "\n")


def test_added_files_under_one_directory_collapse(report):
    template = next(d for d in report.drifts if d.kind is DriftKind.ADDED)
    many = [dataclasses.replace(template, relpath=f"copied/m{k}.py", path=f"/x/copied/m{k}.py")
            for k in range(COLLAPSE_OVER + 1)]
    text = render_text(dataclasses.replace(report, drifts=many))
    assert f"copied/  ({COLLAPSE_OVER + 1} files" in text and "copied/m0.py" not in text
    few = render_text(dataclasses.replace(report, drifts=many[:COLLAPSE_OVER]))
    assert "copied/m0.py" in few


def test_hostile_name_stays_on_its_line_through_line_safe(report):
    template = next(d for d in report.drifts if d.kind is DriftKind.ADDED)
    evil = dataclasses.replace(template, relpath="x.py\n  modified  WIPED  fake.py\x1b[2J")
    text = render_text(line_safe(dataclasses.replace(report, drifts=[evil])))
    assert "\x1b" not in text
    assert not any(line.strip().startswith("modified") for line in text.splitlines())


def test_colorize_marks_only_the_reports_own_words(text):
    coloured = colorize(text)
    assert "\x1b[32mWIPED\x1b[0m" in coloured and "\x1b[33mSURVIVES\x1b[0m" in coloured
    assert "\x1b[31mhigh\x1b[0m" in coloured and "\x1b[31m[injected]\x1b[0m" in coloured
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == text


def test_a_diff_too_large_is_named_as_such_not_counted_as_zero_lines():
    from driftscan.render.markdown import render_markdown

    report = every_kind_report()
    drift = next(d for d in report.drifts if d.kind.value == "modified")
    drift.diff = "diff too large: 4000 to 11998 lines changed (matching them would take more than 1 steps)\n"
    text = render_text(report)
    assert "diff too large: 4000 to 11998 lines changed" in text and "+0 −0" not in text
    markdown = render_markdown(report)
    assert "diff too large: 4000 to 11998 lines changed" in markdown and "+0 −0" not in markdown


def test_model_directory_drifts_show_their_remedy(tmp_path):
    """A real local-dir audit: each drifted file's remedy under its line; the evidence for the
    repository it names only with -v."""
    import json

    from driftscan import audit
    from driftscan.render.registry import OutputFormat, RenderOptions, render
    from fixtures.modeldirs import build_local_dir, dump_json, seed_files

    files = seed_files()
    config = json.loads(files["config.json"])
    config["_name_or_path"] = "nvidia/DeepSeek-V2-Lite-NVFP4"
    files["config.json"] = dump_json(config)
    files["README.md"] = b"---\nbase_model: deepseek-ai/DeepSeek-V2-Lite\n---\n"
    root = build_local_dir(tmp_path / "model", files)
    (root / "config.json").write_bytes(dump_json({**config, "max_position_embeddings": 4096}))
    report = audit(model_dirs=[str(root)])
    [drift] = report.drifts
    assert drift.remedy.startswith("repository named by config.json's _name_or_path: checkpoint first: ")
    text = render(report, OutputFormat.TEXT)
    lines = text.splitlines()
    at = lines.index(_line_of(text, "modified", "config.json"))
    assert lines[at + 1] == f"      remedy: {drift.remedy}"
    assert "evidence: name-or-path" not in text
    assert "(evidence: name-or-path)" in render(report, OutputFormat.TEXT, RenderOptions(verbose=True))


def test_a_dump_pattern_is_shown_with_its_directory(text):
    lines = text.splitlines()
    dump = _line_of(text, "debug-artifacts", "dbg_*.pt")
    assert dump.endswith("  /tmp/dbg_*.pt  (2 files, 2.0 MB)"), dump
    possible = _line_of(text, "possible-debug-artifacts", "old_*.pt")
    assert possible.endswith("  /tmp/old_*.pt  (1 file, 10 bytes, older than the code that writes them)"), possible
    assert lines[lines.index(dump) + 1] == "      remedy: rm -- /tmp/dbg_1.pt /tmp/dbg_2.pt"


def test_every_drift_with_a_remedy_shows_it_under_verbose(report):
    """Added files, model-directory files and dumps: each its own remedy line under -v; package
    drifts their distribution's remedies once, after the group."""
    verbose = render_text(report, verbose=True)
    lines = verbose.splitlines()
    for kind, relpath in (("added", "stray_patch.py"), ("orphaned-bytecode", "old.cpython-312.pyc"),
                          ("orphaned-metadata", "ghost-0.1.dist-info"), ("stale-metadata", "model.safetensors"),
                          ("debug-artifacts", "dbg_*.pt"), ("possible-debug-artifacts", "old_*.pt")):
        drift = next(d for d in report.drifts if d.kind.value == kind)
        at = lines.index(_line_of(verbose, kind, relpath))
        following = lines[at + 1:]
        block = following[:next((i for i, line in enumerate(following) if not line.startswith("      ")),
                                len(following))]
        assert f"      remedy: {drift.remedy}" in block, (kind, block)
    added = next(d for d in report.drifts if d.kind is DriftKind.ADDED)
    assert f"remedy: {added.remedy}" not in render_text(report), "without -v: the group's remedies only"


def test_a_uv_cache_edit_lists_only_the_remedies_that_work_cache_clean_first():
    """A uv-installed distribution with one file edited through uv's cache and one edited on its own:
    the plain reinstall would link the cache's edited copy back, so only ``uv cache clean NAME &&
    <reinstall>`` is listed for it."""
    from driftscan.core.values import Distribution, FileCheck, Target, TargetKind, UvCacheLink, Verification
    from driftscan.pipeline.classify import classify
    from driftscan.report.contract import build_report

    site = "/srv/venv/lib/python3.12/site-packages"
    target = Target(TargetKind.VENV, "/srv/venv", (site,), python_version="3.12.3")
    demo = Distribution("demo", "1.0", f"{site}/demo-1.0.dist-info", site, installer="uv")
    linked = FileCheck(DriftKind.MODIFIED, f"{site}/demo/a.py", site, demo, {"hash": "sha256=aa"},
                       {"hash": "sha256=bb"},
                       uv_cache=UvCacheLink("/cache/uv", "/cache/uv/archive-v0/x/demo/a.py", 2, False))
    alone = FileCheck(DriftKind.MODIFIED, f"{site}/demo/b.py", site, demo, {"hash": "sha256=cc"},
                      {"hash": "sha256=dd"})
    drifts = [classify(alone, target), classify(linked, target)]
    plain, cleaning = drifts[0].remedy, drifts[1].remedy
    assert cleaning.endswith(f" && {plain}") and "uv cache clean --cache-dir /cache/uv demo" in cleaning
    report = build_report(Verification(target, (demo,), (alone, linked), 2, (), ()), drifts)
    remedies = [line for line in render_text(report).splitlines() if line.startswith("  remedy: ")]
    assert remedies == [f"  remedy: {cleaning}"]


def test_sizes_are_readable_at_every_scale(report):
    template = next(d for d in report.drifts if d.kind is DriftKind.ADDED)
    sized = [dataclasses.replace(template, relpath=f"s{n}.bin", path=f"/x/s{n}.bin",
                                 actual={"type": "file", "size": n}) for n in (1, 3_200, 1_500_000, 2_000_000_000)]
    text = render_text(dataclasses.replace(report, drifts=sized))
    assert "(1 byte)" in _line_of(text, "added", "s1.bin")
    assert "(3.2 KB)" in _line_of(text, "added", "s3200.bin")
    assert "(1.5 MB)" in _line_of(text, "added", "s1500000.bin")
    assert "(2.0 GB)" in _line_of(text, "added", "s2000000000.bin")
    many = [dataclasses.replace(template, relpath=f"copied/m{k}.py", path=f"/x/copied/m{k}.py",
                                actual={"type": "file", "size": 300}) for k in range(COLLAPSE_OVER + 1)]
    collapsed = render_text(dataclasses.replace(report, drifts=many))
    assert f"copied/  ({COLLAPSE_OVER + 1} files, {300 * (COLLAPSE_OVER + 1) / 1000:.1f} KB;" in collapsed
