"""Which command lines and mappings tie a process to the environment: absolute paths only."""

from __future__ import annotations

import pytest

from driftscan.procs.model import Tie
from driftscan.procs.proc import Mapping, ProcEntry
from driftscan.procs.scan import Environment, tie_of

ENV = Environment(prefixes=("/v",), programs=("/v/bin", "/v/lib/python3.11/site-packages"),
                  site_packages=("/v/lib/python3.11/site-packages",))


def entry(*argv: str, maps: tuple[Mapping, ...] = ()) -> ProcEntry:
    return ProcEntry(pid=1, argv=argv, exe="/usr/bin/python3.11", uid=0, start_ticks=1, cgroup="",
                     other_mount_ns=False, maps=maps)


@pytest.mark.parametrize("argv, tie, module", [
    (("/v/bin/python", "-m", "vllm.entrypoints.openai.api_server"), Tie.MODULE, "vllm.entrypoints.openai.api_server"),
    (("/v/bin/python3", "-u", "-mpkg.mod"), Tie.MODULE, "pkg.mod"),
    (("/v/bin/python", "-c", "import x"), Tie.EXECUTABLE, None),
    (("/v/bin/python", "/v/bin/vllm", "serve"), Tie.SCRIPT, None),
    (("/usr/bin/python3", "-X", "dev", "/v/lib/python3.11/site-packages/ray/_private/workers/default_worker.py"),
     Tie.SCRIPT, None),
    (("/v/bin/../bin/vllm",), Tie.EXECUTABLE, None),
    (("/usr/bin/python3", "-m", "pkg.mod"), Tie.NONE, None),  # -m of another python: not ours
    (("python", "-m", "pkg.mod"), Tie.NONE, None),  # never resolved through PATH
    ((".venv/bin/python", "x.py"), Tie.NONE, None),  # nor the working directory
    (("/usr/bin/python3", "v/bin/x.py"), Tie.NONE, None),
    (("/vv/bin/python",), Tie.NONE, None),  # a sibling directory with a common prefix
])
def test_command_lines(argv, tie, module):
    assert tie_of(entry(*argv), ENV) == (tie, module)


def test_a_mapped_file_of_the_environment_ties_it():
    mapped = Mapping(path="/v/lib/python3.11/site-packages/torch/lib/libtorch.so", dev=1, inode=2, deleted=False)
    assert tie_of(entry("ray::IDLE", maps=(mapped,)), ENV) == (Tie.MAPS, None)
