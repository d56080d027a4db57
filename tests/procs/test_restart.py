"""What other commands list of a procs scan: the processes still on old code, or every process that runs the
environment, each with its remedy; no /proc: not scanned, and why."""

from __future__ import annotations

from driftscan.procs.model import Tie
from driftscan.procs.restart import NO_PROC, available, evidence_summary, running_of, scan_if_possible, stale_of
from driftscan.procs.scan import Environment
from fixtures.procsreports import process, report


def test_stale_ones_with_their_evidence_and_remedy():
    stale, ok = process(10, True, unit="vllm.service"), process(11, False)
    [only] = stale_of(report(stale, ok))
    assert (only.pid, only.remedy, only.files) == (10, "systemctl restart vllm.service", ["/v/a.so"])
    assert only.evidence == evidence_summary(stale) == \
        "exact: 1 file mapped and since replaced on disk; likely: 2 files changed after it started"
    assert only.command == "/v/bin/python -m srv"


def test_before_a_reinstall_every_process_that_runs_it_gets_a_remedy():
    listed = running_of(report(process(10, False), process(12, False, tie=Tie.NONE)))
    assert [(r.pid, r.stale, r.remedy, r.evidence) for r in listed] == [
        (10, False, "restart PID 10 (/v/bin/python -m srv)", "runs the environment")]


def test_no_proc_is_not_scanned_and_says_why(tmp_path):
    assert not available(str(tmp_path))
    env = Environment(prefixes=("/v",), programs=("/v/bin",), site_packages=("/v/lib/site-packages",))
    assert scan_if_possible(env, proc=str(tmp_path)) == (None, NO_PROC)
    assert available()  # this machine has one: the other tests read it


def test_a_scan_that_fails_after_the_writes_is_a_note_not_an_error(monkeypatch, tmp_path):
    from driftscan import api
    from driftscan.environment.target import resolve_target

    def unreadable(env, proc="/proc"):
        raise PermissionError(13, "Permission denied", "/proc")

    venv = tmp_path / "v"
    (venv / "lib/python3.12/site-packages").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    monkeypatch.setattr(api, "scan_if_possible", unreadable)
    notes: list[str] = []
    assert api._restart_needed(resolve_target(str(venv), []), notes) is None
    assert notes == ["processes not checked: [Errno 13] Permission denied: '/proc'"]
