"""Where a process runs, from its /proc/PID/cgroup and argv: a systemd unit, a container, a Ray
worker, or a plain process; and what to restart (the remedy), as text a person runs."""

from __future__ import annotations

import re
import shlex

from ..fs.paths import one_line
from .model import Placement, WhereOut

_HEX = r"[0-9a-f]{12,64}"
_CONTAINERS = (
    (Placement.DOCKER, re.compile(rf"(?:/docker-({_HEX})\.scope|/docker/({_HEX}))(?:/|$)")),
    (Placement.PODMAN, re.compile(rf"/libpod-(?:conmon-)?({_HEX})(?:\.scope)?(?:/|$)")),
    (Placement.CONTAINERD, re.compile(rf"/cri-containerd-({_HEX})(?:\.scope)?(?:/|$)")),
)
_UNIT = re.compile(r"/([^/]+\.service)(?:/|$)")
COMMAND_SHOWN = 200  # characters of a command line a remedy quotes


def _cgroup_paths(cgroup: str) -> list[str]:
    """Each line's path (``ID:CONTROLLERS:PATH``), the unified hierarchy's first."""
    paths = [line.split(":", 2)[2] for line in cgroup.splitlines() if line.count(":") >= 2]
    return sorted(paths, key=lambda p: not p)  # stable: order kept, empty paths last


def where(cgroup: str, argv: tuple[str, ...], other_mount_ns: bool) -> WhereOut:
    paths = _cgroup_paths(cgroup)
    for kind, pattern in _CONTAINERS:
        for path in paths:
            match = pattern.search(path)
            if match:
                cid = next(g for g in match.groups() if g)
                return WhereOut(placement=kind, container=cid, other_mount_namespace=other_mount_ns)
    if any(a.startswith("ray::") for a in argv[:1]) or any(a.endswith("default_worker.py") for a in argv[:3]):
        return WhereOut(placement=Placement.RAY, other_mount_namespace=other_mount_ns)
    for path in paths:
        units = _UNIT.findall(path)
        # user@UID.service is the user's manager; a unit below it is the user's own
        own = [u for u in units if not u.startswith("user@")]
        if own:
            user = any(u.startswith("user@") for u in units)
            return WhereOut(placement=Placement.SYSTEMD_USER if user else Placement.SYSTEMD, unit=own[-1],
                            other_mount_namespace=other_mount_ns)
    return WhereOut(placement=Placement.PROCESS, other_mount_namespace=other_mount_ns)


def shown_command(argv: tuple[str, ...], limit: int = COMMAND_SHOWN) -> str:
    """A command line quoted for a person to read, on one line, inert, at most ``limit`` characters."""
    text = one_line(shlex.join(argv)) if argv else "(no command line)"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def remedy(place: WhereOut, pid: int, argv: tuple[str, ...]) -> str:
    """What to restart so that the process runs what is on disk now."""
    if place.placement is Placement.SYSTEMD and place.unit:
        return f"systemctl restart {shlex.quote(place.unit)}"
    if place.placement is Placement.SYSTEMD_USER and place.unit:
        return f"systemctl --user restart {shlex.quote(place.unit)}"
    if place.placement in (Placement.DOCKER, Placement.PODMAN) and place.container:
        return f"{place.placement.value} restart {place.container[:12]}"
    if place.placement is Placement.CONTAINERD and place.container:
        return f"restart the pod of container {place.container[:12]} (crictl stop {place.container[:12]})"
    if place.placement is Placement.RAY:
        return f"restart the Ray job or cluster of worker PID {pid} ({shown_command(argv)})"
    return f"restart PID {pid} ({shown_command(argv)})"
