"""Where a process runs (its cgroup, its argv) and what to restart."""

from __future__ import annotations

import pytest

from driftscan.procs.model import Placement
from driftscan.procs.where import remedy, shown_command, where

CID = "0123456789abcdef" * 4


@pytest.mark.parametrize("cgroup, placement, unit, container", [
    ("0::/system.slice/vllm.service\n", Placement.SYSTEMD, "vllm.service", None),
    ("0::/user.slice/user-1000.slice/user@1000.service/app.slice/api.service\n", Placement.SYSTEMD_USER,
     "api.service", None),
    (f"0::/system.slice/docker-{CID}.scope\n", Placement.DOCKER, None, CID),
    (f"12:memory:/docker/{CID}\n0::/\n", Placement.DOCKER, None, CID),
    (f"0::/machine.slice/libpod-{CID}.scope/container\n", Placement.PODMAN, None, CID),
    (f"0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-{CID}.scope\n", Placement.CONTAINERD, None, CID),
    ("0::/user.slice/user-0.slice/session-3.scope\n", Placement.PROCESS, None, None),
    ("", Placement.PROCESS, None, None),
])
def test_cgroups(cgroup, placement, unit, container):
    place = where(cgroup, ("/v/bin/python",), False)
    assert (place.placement, place.unit, place.container) == (placement, unit, container)


def test_ray_workers_by_their_argv():
    assert where("0::/\n", ("ray::IDLE",), False).placement is Placement.RAY
    assert where("0::/\n", ("/v/bin/python", "/v/lib/python3.11/site-packages/ray/_private/workers/default_worker.py"),
                 False).placement is Placement.RAY


def test_remedies_name_what_to_restart():
    argv = ("/v/bin/python", "-m", "vllm.entrypoints.openai.api_server")
    assert remedy(where("0::/system.slice/vllm.service\n", argv, False), 7, argv) == "systemctl restart vllm.service"
    assert remedy(where(f"0::/system.slice/docker-{CID}.scope\n", argv, True), 7, argv) == f"docker restart {CID[:12]}"
    assert remedy(where(f"0::/libpod-{CID}.scope\n", argv, True), 7, argv) == f"podman restart {CID[:12]}"
    assert remedy(where("0::/\n", argv, False), 7, argv) == \
        "restart PID 7 (/v/bin/python -m vllm.entrypoints.openai.api_server)"


def test_a_shown_command_is_one_inert_bounded_line():
    shown = shown_command(("/v/bin/python", "-c", "x\n\x1b[2J" + "y" * 500))
    assert "\n" not in shown and "\x1b" not in shown and len(shown) <= 200 and shown.endswith("…")
    assert shown_command(()) == "(no command line)"
