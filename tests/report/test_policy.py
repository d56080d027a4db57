"""The fail policy and the exit status bitmask, as a library caller gets them."""

from __future__ import annotations

import pytest

import driftscan
from driftscan.procs.model import (EvidenceOut, Placement, ProcessOut, ProcsReport, ProcsSummary, Source, Strength,
                                   Tie, WhereOut)
from driftscan.report.policy import (EXIT_CLEAN, EXIT_DRIFT, EXIT_INCOMPLETE, FailOn, exit_status, fail_policies, fails,
                                     procs_exit_status)
from fixtures.reports import clean_report, every_kind_report


def test_a_clean_report_fails_no_policy():
    report = clean_report()
    assert [p for p in FailOn if fails(report, p)] == []
    assert exit_status(report) == EXIT_CLEAN


def test_every_kind_report_fails_drift_and_never_never():
    report = every_kind_report()
    assert fails(report, FailOn.DRIFT) and not fails(report, FailOn.NEVER)
    assert exit_status(report, fail_on=[FailOn.NEVER]) & EXIT_DRIFT == 0
    assert exit_status(report, fail_on=["drift"]) & EXIT_DRIFT
    assert exit_status(report, exit_zero=True) & EXIT_DRIFT == 0
    scopes = {d.scope.value for d in report.drifts}
    for policy in (FailOn.PACKAGE, FailOn.ENVIRONMENT, FailOn.SOURCE, FailOn.DATA, FailOn.EXTERNAL):
        assert fails(report, policy) == (policy.value in scopes)


def test_accepted_drift_does_not_count():
    report = every_kind_report()
    assert fails(report, FailOn.DRIFT)
    accepted = report.model_copy(update={"drifts": [d.model_copy(update={"accepted": {"reason": "kept on purpose", "entry": 0}})
                                                    for d in report.drifts]})
    assert not fails(accepted, FailOn.DRIFT) and not fails(accepted, FailOn.DEBUG)


def test_errors_set_bit_two():
    report = every_kind_report()
    assert exit_status(report, fail_on=[FailOn.NEVER]) == (EXIT_INCOMPLETE if report.errors else EXIT_CLEAN)


def test_policies_are_read_from_words():
    assert fail_policies([]) == (FailOn.DRIFT,)
    assert fail_policies(["debug,package", "never"]) == (FailOn.DEBUG, FailOn.PACKAGE, FailOn.NEVER)
    with pytest.raises(ValueError, match="unknown nope"):
        fail_policies(["drift,nope"])


def test_the_package_exports_them():
    assert driftscan.exit_status is exit_status and driftscan.FailOn is FailOn


def test_a_wrong_upstream_row_counts_only_under_unverifiable():
    report = every_kind_report()
    alone = report.model_copy(update={"drifts": [d for d in report.drifts if d.kind.value == "upstream-record-mismatch"],
                                      "unverifiable": []})
    assert len(alone.drifts) == 1 and alone.drifts[0].scope.value == "package"
    assert [p for p in FailOn if fails(alone, p)] == [FailOn.UNVERIFIABLE]
    assert exit_status(alone) & EXIT_DRIFT == 0  # the default --fail-on drift
    assert exit_status(alone, fail_on=["unverifiable"]) & EXIT_DRIFT


def _procs(stale: bool, errors: list[str] | None = None):
    evidence = [EvidenceOut(strength=Strength.LIKELY, source=Source.CTIME, reason="changed-after-start",
                            files=["/v/x.py"], count=1)] if stale else []
    process = ProcessOut(pid=7, user="u", started="2026-01-01T00:00:00+00:00", started_at=0.0, command="/v/bin/python",
                         tie=Tie.EXECUTABLE, where=WhereOut(placement=Placement.PROCESS), stale=stale,
                         evidence=evidence)
    return ProcsReport(environment=["/v"], processes=[process],
                       summary=ProcsSummary(scanned=1, running=1, stale=int(stale), exited=0, hidden=0,
                                            files_walked=1), errors=errors or [])


def test_a_stale_process_fails_procs_by_default_and_never_an_audit():
    assert fail_policies(["stale-process"]) == (FailOn.STALE_PROCESS,)
    assert procs_exit_status(_procs(True)) == EXIT_DRIFT and procs_exit_status(_procs(False)) == EXIT_CLEAN
    assert procs_exit_status(_procs(True), fail_on=[FailOn.DRIFT]) == EXIT_DRIFT
    assert procs_exit_status(_procs(True), fail_on=[FailOn.NEVER]) == EXIT_CLEAN
    assert procs_exit_status(_procs(True), exit_zero=True) == EXIT_CLEAN
    assert procs_exit_status(_procs(False, ["walk cut"])) == EXIT_INCOMPLETE
    assert not fails(every_kind_report(), FailOn.STALE_PROCESS)


def test_an_audit_with_processes_fails_stale_process_alone():
    report = clean_report()
    report.processes = _procs(True)
    assert fails(report, FailOn.STALE_PROCESS) and not fails(report, FailOn.DRIFT)
    assert exit_status(report, fail_on=["stale-process"]) == EXIT_DRIFT
    assert exit_status(report) == EXIT_CLEAN  # drift (the default) counts files, not processes
    assert exit_status(report, fail_on=["stale-process"], exit_zero=True) == EXIT_CLEAN
    report.processes = _procs(False, ["the walk stopped"])
    assert exit_status(report, fail_on=["stale-process"]) == EXIT_INCOMPLETE
