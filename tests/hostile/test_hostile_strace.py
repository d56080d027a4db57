"""End to end, under strace: one venv and three model directories full of pointers to a secret
outside them (RECORD rows, symlinks, an in-tree manifest, a hub snapshot link), plus hostile git
configuration. The audit must end, report the planted drift, never open the secret, and start no
program but git (under its hardened configuration, docs/git-access.md)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.modeldirs import build_cache_repo, build_git_clone, build_local_dir, seed_files, sm120_edit
from fixtures.wheels import record_hash
from fixtures.venvs import site_packages_of

STRACE = shutil.which("strace")
SECRET = b"driftscan-canary-secret-7f3a9c\n"



def _hostile_git_config(repo: Path, canary: Path) -> None:
    script = repo.parent / f"{repo.name}-canary.sh"
    script.write_text(f"#!/bin/sh\necho ran >> {canary}\ncat\n")
    script.chmod(0o755)
    with open(repo / ".git" / "config", "a") as f:
        f.write(f"[core]\n\tfsmonitor = {script}\n\tpager = {script}\n[diff]\n\texternal = {script}\n"
                f"[filter \"evil\"]\n\tclean = {script}\n\tsmudge = {script}\n\tprocess = {script}\n"
                f"[diff \"evil\"]\n\ttextconv = {script}\n")
    (repo / ".gitattributes").write_text("* filter=evil diff=evil\n")


@pytest.mark.skipif(STRACE is None, reason="strace is not installed")
def test_hostile_trees_never_read_the_secret_nor_run_anything(tmp_path, pristine_pip_venv):
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_bytes(SECRET)
    secret.chmod(0o600)
    canary = tmp_path / "canary-ran"

    venv = tmp_path / "venv"
    shutil.copytree(pristine_pip_venv, venv, symlinks=True)
    site = site_packages_of(venv)
    six_info = next(site.glob("six-*.dist-info"))
    # The tree does not know the secret: it vouches for a guess, hoping the report shows the truth.
    guess = record_hash(b"a guess\n")
    rows = [f"{secret},{guess},{len(SECRET)}", f"{os.path.relpath(secret, site)},{guess},{len(SECRET)}",
            f"six_link.py,{guess},{len(SECRET)}"]
    with open(six_info / "RECORD", "a") as f:
        f.write("\n".join(rows) + "\n")
    (site / "six_link.py").symlink_to(secret)
    (site / "added_link.txt").symlink_to(secret)
    with open(site / "six.py", "a") as f:
        f.write("# planted\n")

    local = build_local_dir(tmp_path / "local", seed_files())
    sm120_edit(local)
    (local / "leak.json").symlink_to(secret)
    clone = tmp_path / "clone"
    build_git_clone(clone, seed_files()).close()
    _hostile_git_config(clone, canary)
    (clone / "config.json").write_text('{"edited": true}\n')
    hub = tmp_path / "hub"
    repo = build_cache_repo(hub, seed_files())
    snapshot = next((repo / "snapshots").iterdir())
    (snapshot / "extra.json").symlink_to(secret)

    log = tmp_path / "strace.log"
    cmd = [STRACE, "-f", "-qq", "-e", "trace=open,openat,openat2,execve", "-o", str(log),
           sys.executable, "-m", "driftscan", "audit", "--venv", str(venv), "--model-dir", str(local),
           "--model-dir", str(clone), "--model-dir", str(repo), "--format", "json", "--no-cache"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode in (1, 3), proc.stderr
    report = json.loads(proc.stdout)
    text = proc.stdout

    assert not canary.exists(), canary.read_text()
    assert SECRET.decode().strip() not in text
    assert hashlib.sha256(SECRET).hexdigest() not in text
    assert record_hash(SECRET).split("=", 1)[1] not in text
    drifted = {(d["relpath"], d["scope"]) for d in report["drifts"]}
    assert ("six.py", "package") in drifted
    assert ("config.json", "data") in drifted

    trace = log.read_text(errors="replace")
    opened_secret = [line for line in trace.splitlines()
                     if re.search(r"\bopen(at2?)?\(", line) and str(secret) in line]
    assert opened_secret == []
    programs = set(re.findall(r'execve\("([^"]+)"', trace))
    allowed = {os.path.realpath(sys.executable), sys.executable, STRACE}
    strangers = {p for p in programs if p not in allowed and os.path.basename(p) != "git"
                 and not os.path.basename(p).startswith("python")}
    assert strangers == set(), strangers
