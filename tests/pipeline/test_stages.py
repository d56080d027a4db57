"""The audit as one options value and a list of stages: the keyword form and the options form give
the same report, accepted drift is applied by the library, and docs/architecture.md lists the
stages the code runs."""

from __future__ import annotations

import dataclasses
import re

import pytest

import driftscan
from driftscan import api
from driftscan.pipeline.options import AuditOptions, CachePolicy, Need, OriginalSources, Targets, options_of
from driftscan.pipeline.stages import STAGES, execute
from driftscan.report.accept import AcceptEntry
from fixtures.envtree import install, make_venv
from fixtures.paths import REPO


@pytest.fixture
def drifted(tmp_path):
    venv, site = make_venv(tmp_path / "venv")
    install(site, "stagepkg", "1.0", {"stagepkg/__init__.py": "", "stagepkg/core.py": "LIMIT = 1\n",
                                      "stagepkg/io.py": "def load(p):\n    return open(p)\n"})
    (site / "stagepkg/core.py").write_text("LIMIT = 2\n")
    (site / "stagepkg/io.py").write_text("def load(p):\n    return open(p, 'rb')\n")
    return venv


def _kinds(report):
    return sorted((d.relpath, d.kind, bool(d.accepted)) for d in report.drifts)


def test_the_keyword_form_and_the_options_form_give_the_same_report(drifted):
    by_keywords = api.audit(str(drifted), use_cache=False, compare=False)
    options = AuditOptions(targets=Targets(venv=str(drifted)), cache=CachePolicy(use_cache=False),
                           originals=OriginalSources(look=False))
    by_options = api.audit(options=options)
    assert _kinds(by_keywords) == _kinds(by_options)
    assert {d.relpath for d in by_options.drifts} == {"stagepkg/core.py", "stagepkg/io.py"}


def test_audit_applies_accepted_drift_and_counts_it(drifted):
    entry = AcceptEntry(path="stagepkg/core.py", reason="the limit we run with")
    report = api.audit(str(drifted), use_cache=False, compare=False, accept=[entry], accept_source="team.toml")
    accepted = {d.relpath: d.accepted for d in report.drifts if d.accepted}
    assert list(accepted) == ["stagepkg/core.py"]
    assert accepted["stagepkg/core.py"]["reason"] == "the limit we run with"
    assert report.summary.accepted == 1
    assert driftscan.exit_status(report) & 1  # io.py is not accepted: the run still fails


def test_the_reason_an_environment_was_chosen_is_in_the_report(drifted):
    report = api.audit(str(drifted), use_cache=False, compare=False, chosen_because="the activated venv")
    assert report.target.chosen_because == "the activated venv"


def test_options_and_keywords_do_not_mix_and_unknown_keywords_are_refused(drifted):
    with pytest.raises(TypeError, match="not both"):
        api.audit(str(drifted), options=AuditOptions())
    with pytest.raises(TypeError, match="unknown audit setting: report_only"):
        options_of(str(drifted), (), report_only=True)  # type: ignore[call-arg]
    with pytest.raises(dataclasses.FrozenInstanceError):
        AuditOptions().jobs = 3  # type: ignore[misc]


def test_held_originals_are_closed_with_the_run(drifted):
    options = options_of(str(drifted), (), use_cache=False)
    with api.run(options=options, need=Need.ORIGINALS) as result:
        assert result.originals is not None
        closed = []
        original_close = result.originals.close
        object.__setattr__(result.originals, "close", lambda: (closed.append(True), original_close()))
    assert closed == [True]
    state = execute(options, Need.CHECKS)
    assert state.originals is None  # not needed: closed by the stage that opened them


def test_the_architecture_page_lists_the_stages_the_code_runs():
    page = (REPO / "docs/architecture.md").read_text()
    section = page.split("## The audit, stage by stage", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\d+\. `([a-z_]+)`", section, flags=re.M)
    assert listed == ["resolve", *(stage.__name__ for stage in STAGES)]
