"""An audit never writes into the tree it audits: content and mtimes identical before and after."""

from __future__ import annotations

import hashlib
import os

from fixtures.harness import run_cli


def snapshot(root) -> dict[str, tuple]:
    state = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            digest = None
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
            state[path] = (st.st_mode, st.st_size, st.st_mtime_ns, digest)
        state[dirpath] = (os.lstat(dirpath).st_mtime_ns,)
    return state


def test_audit_leaves_the_tree_untouched(planted, tmp_path):
    venv, _ = planted
    before = snapshot(venv)
    for fmt in ("text", "json"):
        proc = run_cli("audit", "--venv", str(venv), "--format", fmt, "--output", str(tmp_path / f"r.{fmt}"),
                       env={"PYTHONDONTWRITEBYTECODE": ""})
        assert proc.returncode == 1, proc.stderr
    after = snapshot(venv)
    assert before == after
    assert (tmp_path / "r.json").stat().st_size > 0
