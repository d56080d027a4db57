"""fixtures.bounded: the time and memory bound hostile-input tests run driftscan under holds."""

from __future__ import annotations

import pytest

from fixtures.bounded import driftscan_bounded, python_bounded


def test_an_allocation_past_the_bound_fails_in_the_child():
    proc = python_bounded("x = bytearray(900 << 20)", memory_mb=256)
    assert proc.returncode != 0 and "MemoryError" in proc.stderr


def test_the_command_line_runs_within_a_modest_bound():
    proc = driftscan_bounded("--version", memory_mb=256)
    assert proc.returncode == 0, proc.stderr


def test_a_hang_is_a_test_failure_that_says_so():
    with pytest.raises(pytest.fail.Exception, match="did not finish within 1 s"):
        python_bounded("import time; time.sleep(5)", seconds=1)
