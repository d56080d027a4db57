"""``python -m driftscan.runtime [-m MODULE | SCRIPT] [ARGS...]``: run a program as ``python`` would,
with the runtime recorder started first (like ``python -m cProfile``)."""

from __future__ import annotations

import os
import runpy
import sys

from .recorder import start

USAGE = "usage: python -m driftscan.runtime (-m MODULE | SCRIPT) [ARGS...]"


def main(argv: list[str]) -> str | None:
    """Run the program ``argv`` names; a usage message when it names none."""
    if not argv or argv[0] in ("-h", "--help") or (argv[0] == "-m" and len(argv) < 2):
        return USAGE
    start()
    if argv[0] == "-m":
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv[:]
        sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
        runpy.run_path(argv[0], run_name="__main__")
    return None


if __name__ == "__main__":
    message = main(sys.argv[1:])
    if message is not None:
        print(message, file=sys.stderr)
        sys.exit(2)
