"""The processes section of an audit's text and markdown, and the lines other commands end with."""

from __future__ import annotations

from driftscan.procs.restart import running_of, stale_of
from driftscan.render.markdown import render_markdown
from driftscan.render.procsview import audit_section, restart_lines
from driftscan.render.text import render_text
from fixtures.procsreports import process, report
from fixtures.reports import clean_report


def test_text_and_markdown_show_each_stale_process_and_count_the_others():
    r = clean_report()
    r.processes = report(process(10, True, unit="vllm.service"), process(11, False), process(12, False))
    text = render_text(r)
    assert "processes (3 processes run the environment, 1 with evidence of old code)" in text
    assert "  STALE  PID 10  /v/bin/python -m srv" in text and "      restart: systemctl restart vllm.service" in text
    assert "      exact: 1 file mapped and since replaced on disk; likely: 2 files changed after it started" in text
    assert "  2 other processes run what is on disk" in text
    md = render_markdown(r)
    assert "Processes (3 run the environment, 1 with evidence of old code)" in md
    assert "PID 10" in md and "systemctl restart vllm.service" in md and "2 other processes run what is on disk" in md
    r.processes = None
    assert "processes (" not in render_text(r) and "Processes (" not in render_markdown(r)
    assert audit_section(None) == []


def test_the_end_of_a_command_that_wrote():
    lines = restart_lines(stale_of(report(process(10, True, unit="vllm.service"), process(11, False))))
    assert lines[:3] == ["", "1 process still runs the old code:",
                         "  PID 10 (/v/bin/python -m srv): systemctl restart vllm.service"]
    assert lines[3] == "      exact: 1 file mapped and since replaced on disk; likely: 2 files changed after it " \
                       "started: /v/a.so"
    assert restart_lines([]) == [] and restart_lines(None) == []
    before = restart_lines(running_of(report(process(10, False), process(11, False))), after=False)
    assert before[1] == "2 processes to restart after the reinstall (they run the environment):"
    # A bare process's remedy names it already: the line is the remedy alone.
    assert before[2:] == ["  restart PID 10 (/v/bin/python -m srv)", "  restart PID 11 (/v/bin/python -m srv)"]


def test_hostile_text_stays_on_one_line():
    p = process(10, True)
    p.argv = ["/v/bin/python", "-c", "x\n\x1b[2Jy"]
    text = "\n".join(restart_lines(stale_of(report(p))))
    assert "\x1b" not in text and "x\ny" not in text.replace("\\n", "")
