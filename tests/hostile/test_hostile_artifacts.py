"""Dump patterns come from the audited code: data, never instructions.

``torch.save(x, f"/{self.home}/.bashrc")`` must not become ``rm /root/.bashrc``; ``/proc/*/root``
or ``/{a}/{b}/{c}/…`` must not walk the whole filesystem; ``~`` is not the auditor's home; only
regular files no RECORD owns, newer than the code that writes them, count as dumps.
"""

from __future__ import annotations

import base64
import hashlib
import os
import stat
import time

import pytest

from driftscan import audit
from driftscan.api import plan
from driftscan.lint import artifacts, find_artifacts, inspect_source
from driftscan.lint.artifacts import unsearchable

HOSTILE = [
    "/*/.bashrc",  # f"/{self.home}/.bashrc"
    "/root/.bashrc",
    "/home/alice/.bashrc",
    "/home/alice/.config/dbg_*.pt",
    "/root/.ssh/authorized_keys",
    "/proc/*/root/tmp/dbg_*.pt",
    "/proc/self/root/etc/x.pt",
    "/*/*/*/dbg_*.pt",  # f"/{a}/{b}/{c}/dbg_{k}.pt"
    "~/x.pt",
    "~/dumps/q_*.pt",
    "/etc/dbg_x.pt",
    "/etc/passwd",
    "/usr/lib/dbg_*.pt",
    "/sys/kernel/dbg.bin",
    "/dev/sda",
    "/tmp/../etc/passwd",
    "/tmp/a/*/*/*/dbg_*.pt",  # more computed directory levels than allowed
    "/tmp/.bashrc",  # a dotfile name, not a dump's
    "/srv/app/main.py",  # code, not a dump
    "/opt/svc/run_*.sh",
]


@pytest.mark.parametrize("pattern", HOSTILE)
def test_hostile_patterns_are_not_searched(pattern):
    started = time.perf_counter()
    group = find_artifacts(pattern)
    assert group is not None and group.refused and group.paths == () and group.total_bytes == 0
    assert time.perf_counter() - started < 0.5
    assert unsearchable(pattern) == group.refused


@pytest.mark.parametrize("pattern", ["/tmp/nomla_hidden_*_*.pt", "/dev/shm/trace-*.json", "/tmp/*/layer_*.pt",
                                     "/var/tmp/state_*.pkl", "/tmp/.dbg_dump_*.pt"])
def test_plausible_patterns_are_searched(pattern):
    assert unsearchable(pattern) is None


def test_tilde_is_never_the_auditors_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    (home / "x.pt").write_bytes(b"x")
    monkeypatch.setenv("HOME", str(home))
    group = find_artifacts("~/x.pt")
    assert group is not None and group.paths == () and "home directory" in group.refused


def test_only_regular_unowned_files_newer_than_the_code_count(tmp_path):
    d = tmp_path / "dumps"
    d.mkdir()
    writer = tmp_path / "model.py"
    writer.write_text("...")
    code_mtime = os.lstat(writer).st_mtime
    real = d / "dbg_real_1.pt"
    real.write_bytes(b"x" * 10)
    (d / "dbg_target.bin").write_bytes(b"t")
    os.symlink(d / "dbg_target.bin", d / "dbg_link_1.pt")
    os.mkfifo(d / "dbg_fifo_1.pt")
    (d / "dbg_dir_1.pt").mkdir()
    old = d / "dbg_old_1.pt"
    old.write_bytes(b"old")
    os.utime(old, (code_mtime - 3600, code_mtime - 3600))
    owned = d / "dbg_owned_1.pt"
    owned.write_bytes(b"owned")
    (d / "dbg_exec_1.pt").write_bytes(b"#!/bin/sh\n")
    os.chmod(d / "dbg_exec_1.pt", 0o755)
    try:
        os.mknod(d / "dbg_dev_1.pt", stat.S_IFCHR | 0o600, os.makedev(1, 3))  # /dev/null's numbers
    except (PermissionError, OSError):
        pass  # not root: the FIFO and the symlink stand for the special files
    started = time.perf_counter()
    group = find_artifacts(str(d / "dbg_*_1.pt"), newer_than=code_mtime, owned=lambda p: p == str(owned))
    assert time.perf_counter() - started < 0.5
    assert group is not None and group.paths == (str(real),) and group.total_bytes == 10
    assert group.skipped >= 6
    # The environment's own directories never hold a dump.
    assert find_artifacts(str(d / "dbg_real_*.pt"), exclude=[str(d)]) is None


def test_a_symlinked_directory_does_not_lead_into_system_trees(tmp_path):
    os.symlink("/etc", tmp_path / "etclink")
    group = find_artifacts(str(tmp_path / "etclink" / "host*"))
    assert group is None or group.paths == ()
    (tmp_path / "runs").mkdir()
    os.symlink("/etc", tmp_path / "runs" / "run_1")  # computed levels do not follow symlinks
    group = find_artifacts(str(tmp_path / "runs" / "*" / "host*"))
    assert group is None or group.paths == ()


def test_the_search_is_bounded_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(artifacts, "MAX_ENTRIES", 50)
    many = tmp_path / "many"
    many.mkdir()
    for i in range(200):
        (many / f"f_{i}.txt").write_bytes(b"")
    group = find_artifacts(str(many / "dbg_*.pt"))
    assert group is not None and group.paths == () and "50 directory entries" in group.truncated
    monkeypatch.setattr(artifacts, "MAX_ENTRIES", 20_000)
    monkeypatch.setattr(artifacts, "MAX_WILD_MATCHES", 5)
    for i in range(20):
        (tmp_path / "w" / f"run_{i}").mkdir(parents=True)
        (tmp_path / "w" / f"run_{i}" / "dbg_1.pt").write_bytes(b"x")
    group = find_artifacts(str(tmp_path / "w" / "*" / "dbg_*.pt"))
    assert group is not None and len(group.paths) == 5 and "5 directories" in group.truncated


def test_code_patterns_become_refusals(tmp_path):
    code = """import torch
class M:
    def forward(self, x):
        torch.save(x, f"/{self.home}/.bashrc")
        torch.save(x, f"/proc/{pid}/root/tmp/dbg_{k}.pt")
        torch.save(x, f"/{a}/{b}/{c}/dbg_{k}.pt")
"""
    patterns = [f.artifact_pattern for f in inspect_source(code) if f.code == "DBG101"]
    assert patterns == ["/*/.bashrc", "/proc/*/root/tmp/dbg_*.pt", "/*/*/*/dbg_*.pt"]
    assert all(unsearchable(p) for p in patterns)


# -- end to end: audit and plan --------------------------------------------------------------


def _record_row(site, rel: str) -> str:
    data = (site / rel).read_bytes()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{rel},sha256={digest},{len(data)}"


def _site(tmp_path, dumps):
    site = tmp_path / "site"
    (site / "modelpkg").mkdir(parents=True)
    (site / "modelpkg/__init__.py").write_text("")
    (site / "modelpkg/model.py").write_text("class M:\n    def forward(self, x):\n        return x\n")
    info = site / "modelpkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: modelpkg\nVersion: 1.0\n")
    (info / "INSTALLER").write_text("pip\n")
    rels = ["modelpkg/__init__.py", "modelpkg/model.py", f"{info.name}/METADATA", f"{info.name}/INSTALLER"]
    (info / "RECORD").write_text("\n".join([_record_row(site, r) for r in rels] + [f"{info.name}/RECORD,,"]) + "\n")
    (site / "modelpkg/model.py").write_text(f'''import os
import torch

class M:
    def forward(self, x):
        if self._debug:
            torch.save(x, f"/{{self.home}}/.bashrc")
            torch.save(x, f"/proc/{{os.getpid()}}/root/tmp/dbg_{{self.k}}.pt")
            torch.save(x, f"/{{self.a}}/{{self.b}}/{{self.c}}/dbg_{{self.k}}.pt")
            torch.save(x, "~/x.pt")
            torch.save(x, f"/etc/dbg_{{self.k}}.pt")
            torch.save(x, f"{dumps}/dbg_hidden_{{self.k}}.pt")
        return x
''')
    return site


def test_audit_and_plan_name_only_plausible_dump_files(tmp_path):
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    site = _site(tmp_path, dumps)
    code_mtime = os.lstat(site / "modelpkg/model.py").st_mtime
    fresh = [dumps / f"dbg_hidden_{i}.pt" for i in range(3)]
    for f in fresh:
        f.write_bytes(b"\0" * 100)
        os.utime(f, (code_mtime + 10, code_mtime + 10))
    stale = dumps / "dbg_hidden_old.pt"
    stale.write_bytes(b"old")
    os.utime(stale, (code_mtime - 3600, code_mtime - 3600))
    os.mkfifo(dumps / "dbg_hidden_fifo.pt")
    os.symlink("/etc/hostname", dumps / "dbg_hidden_link.pt")

    started = time.perf_counter()
    report = audit(site_packages=[str(site)])
    assert time.perf_counter() - started < 20
    found = [d for d in report.drifts if d.kind.value == "debug-artifacts"]
    assert [d.artifacts for d in found] == [[str(f) for f in fresh]]
    remedy = found[0].remedy
    assert remedy.startswith("rm ") and all(str(f) in remedy for f in fresh) and "*" not in remedy
    for d in report.drifts:
        for text in (d.remedy or "", " ".join(d.artifacts)):
            assert ".bashrc" not in text and "/proc" not in text and "/etc" not in text and "~" not in text
            assert str(stale) not in text and "fifo" not in text and "link" not in text
    notes = {s.path: s.message for s in report.skipped}
    for pattern in ("/*/.bashrc", "/proc/*/root/tmp/dbg_*.pt", "/*/*/*/dbg_*.pt", "~/x.pt", "/etc/dbg_*.pt"):
        assert "not searched" in notes[pattern], notes

    result = plan(["modelpkg"], site_packages=[str(site)])
    commands = " ".join(s.command or "" for s in result.steps)
    assert all(str(f) in commands for f in fresh)
    assert ".bashrc" not in commands and "/proc" not in commands and "/etc/" not in commands
    assert str(stale) not in commands
