"""render.short: one line per drift — its kind's letter (lower case when accepted), what a reinstall
does, the path from column 4 on, relative to the working directory when below it — and nothing else;
a path that could break a line or a word is C-quoted as ``git status -s`` quotes it."""

from __future__ import annotations

import codecs
import dataclasses

import pytest

from driftscan.core.values import DriftKind, Prediction
from driftscan.render import OutputFormat, RenderOptions, render
from driftscan.render.short import CODES, MARKS, quote, render_short, shown_path
from fixtures.reports import SITE, VENV, every_kind_report


def _unquote(text: str) -> str:
    """What a C-string reader (git's, Python's) makes of a quoted path."""
    if not text.startswith('"'):
        return text
    return codecs.escape_decode(text[1:-1].encode("utf-8"))[0].decode("utf-8")


def test_every_kind_has_its_own_letter_and_every_prediction_a_mark():
    assert set(CODES) == set(DriftKind)
    assert len(set(CODES.values())) == len(CODES)
    assert all(len(c) == 1 and c.isupper() for c in CODES.values())  # so lower case can mean accepted
    assert set(MARKS) == set(Prediction) and len(set(MARKS.values())) == len(MARKS)


def test_one_line_per_drift_with_its_letter_mark_and_path():
    report = every_kind_report()
    out = render_short(report, cwd="/nowhere")
    lines = out.splitlines()
    assert out.endswith("\n") and len(lines) == len(report.drifts)
    for text, d in zip(lines, report.drifts):
        assert text[0] == CODES[d.kind] and text[1] == MARKS[d.prediction] and text[2] == " "
        assert _unquote(text[3:]) == d.path  # absolute: not below the working directory


def test_paths_below_the_working_directory_are_relative():
    report = every_kind_report()
    lines = render_short(report, cwd=VENV + "/").splitlines()
    by_path = {d.path: text[3:] for d, text in zip(report.drifts, lines)}
    assert by_path[f"{SITE}/demo/core.py"] == "lib/python3.12/site-packages/demo/core.py"
    assert by_path["/tmp/dbg_*.pt"] == "/tmp/dbg_*.pt"  # outside it: absolute
    site = {d.path: text[3:] for d, text in zip(report.drifts, render_short(report, cwd=SITE).splitlines())}
    assert site[f"{SITE}/stray_patch.py"] == "stray_patch.py"
    assert shown_path(SITE, SITE) == SITE  # the directory itself is no relative path
    assert shown_path(f"{SITE}x/a.py", SITE) == f"{SITE}x/a.py"  # a sibling that shares a prefix


def test_the_registry_renders_it_relative_to_the_working_directory(monkeypatch):
    report = every_kind_report()
    monkeypatch.chdir("/")
    assert render(report, OutputFormat.SHORT, RenderOptions(verbose=True)) == render_short(report, cwd="/")
    first = report.drifts[0]
    assert render_short(report).splitlines()[0] == CODES[first.kind] + MARKS[first.prediction] + " " + first.path[1:]


def test_survival_is_marked():
    report = every_kind_report()
    lines = render_short(report, cwd="/").splitlines()
    marks = {d.prediction: text[1] for d, text in zip(report.drifts, lines)}
    assert marks[Prediction.WIPED] == " "
    assert marks.get(Prediction.SURVIVES, "!") == "!"
    assert {d.prediction for d in report.drifts} >= {Prediction.WIPED, Prediction.SURVIVES}


def test_accepted_drift_is_shown_in_lower_case():
    report = every_kind_report()
    first = report.drifts[0]
    accepted = dataclasses.replace(first, accepted={"reason": "local fix", "entry": 0, "path": first.relpath,
                                                    "source": "driftscan.toml"})
    report = dataclasses.replace(report, drifts=[accepted, *report.drifts[1:]])
    lines = render_short(report, cwd="/x").splitlines()
    assert lines[0][0] == CODES[first.kind].lower() and lines[1][0] == CODES[report.drifts[1].kind]


@pytest.mark.parametrize("name", ["a\nb.py", "tab\there.py", 'say "hi".py', "back\\slash.py", "sp ace.py",
                                  "bell\x07.py", "line\u2028sep.py", "bidi\u202e.py", "del\x7f.py", "caf\u00e9\n.py"])
def test_a_hostile_name_stays_on_one_line_and_unquotes_to_itself(name):
    report = every_kind_report()
    drift = dataclasses.replace(report.drifts[0], path=f"{SITE}/demo/{name}")
    out = render_short(dataclasses.replace(report, drifts=[drift]), cwd=SITE)
    assert out.count("\n") == 1 and out.endswith("\n")
    assert out.isprintable() or out[:-1].isprintable()
    shown = out[3:-1]
    assert shown.startswith('"') and shown.endswith('"')
    assert _unquote(shown) == f"demo/{name}"


def test_a_plain_name_is_not_quoted():
    assert quote("demo/caf\u00e9_*.py") == "demo/caf\u00e9_*.py"
    assert quote("a b") == '"a b"'
