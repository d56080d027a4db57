"""stdout carries only driftscan's own output while a library that prints runs in-process."""

from __future__ import annotations

import os
import sys

from driftscan import cli


def test_what_is_printed_inside_goes_to_stderr_through_both_the_object_and_the_descriptor(capfd):
    print("before")
    with cli._stdout_is_stderr():
        print("(raylet) a node was marked dead")  # Ray's threads print through sys.stdout
        os.write(1, b"through fd 1\n")  # and native code writes to the descriptor
    sys.stdout.flush()
    print("after")
    out, err = capfd.readouterr()
    assert out == "before\nafter\n"
    assert "(raylet) a node was marked dead" in err and "through fd 1" in err


def test_stdout_comes_back_when_the_run_raises(capfd):
    try:
        with cli._stdout_is_stderr():
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    print("mine")
    assert capfd.readouterr().out == "mine\n"
