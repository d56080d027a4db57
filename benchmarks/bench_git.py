"""git access, before and after its hardening, as ratios measured in the same run (docs/git-access.md).

    python benchmarks/bench_git.py [--site-packages DIR] [--runs 7] [--old-ref 74c2133] [--pack] [--json out.json]

A real repository is built in a temp dir from a copy of a site-packages directory (a few
thousand files), committed with gitpython, then edited: files modified, deleted, added, and
touched (stat-dirty with unchanged content, which git status must re-hash). Timed, interleaved
round by round:

(a) today's code: source.py and modeldir_git.py as of ``--old-ref`` (gitpython, the repository's
    own config, git status / diff HEAD / ls-files / ls-tree / diff-index / hash-object);
(b) the hardened git access (driftscan.git: private GIT_DIR, clean config, timeouts),
    through today's source.py and modeldir_git.py;
(c) a pure-Python prototype of the editable check: gitpython's index reader and pure-Python
    object database (GitDB), index entries against lstat, stat-dirty blobs hashed here, and an
    untracked walk that applies NO ignore rules (a lower bound: see docs/git-access.md);
plus the fixed cost of opening a repository the hardened way (private GIT_DIR set up and removed).
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import importlib
import os
import platform
import shutil
import stat
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")
import git  # noqa: E402

from driftscan.environment.editable import EditableSource  # noqa: E402
from driftscan import git as gitaccess  # noqa: E402
from driftscan import modeldir as modeldir_module  # noqa: E402
from driftscan.environment import sourcetree as source_module  # noqa: E402


def load_old(ref: str, relpath: str, name: str) -> types.ModuleType:
    """A module of driftscan as it was at ``ref``, importable next to today's package."""
    text = subprocess.run(["git", "-C", ROOT, "show", f"{ref}:{relpath}"], check=True, capture_output=True,
                          text=True).stdout
    # The old code's sibling imports, under the names they had then (since moved).
    for old, new in (("modeldir_engine", "tree.engine"), ("modeldir_hash", "tree.hashing")):
        sys.modules.setdefault(f"driftscan.verify.{old}", importlib.import_module(f"driftscan.verify.{new}"))
    module = types.ModuleType(f"driftscan.verify.{name}")
    module.__package__ = "driftscan.verify"
    module.__file__ = f"<{ref}:{relpath}>"
    sys.modules[module.__name__] = module
    exec(compile(text, module.__file__, "exec"), module.__dict__)  # noqa: S102 - our own history
    return module


def build_repo(base: str, site: str, pack: bool = False) -> str:
    top = os.path.join(base, "repo")
    shutil.copytree(site, top, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".git"))
    # An editable install's source tree must be a Python project (environment/sourcetree.py).
    with open(os.path.join(top, "pyproject.toml"), "w") as f:
        f.write("[project]\nname = 'bench'\nversion = '0.1'\n")
    repo = git.Repo.init(top)
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "bench")
        cw.set_value("user", "email", "bench@example.invalid")
    past = time.time() - 3600  # older than the index: no racily-clean entries
    for dirpath, _dirs, files in os.walk(top):
        if ".git" in dirpath.split(os.sep):
            continue
        for name in files:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                os.utime(path, (past, past))
    repo.git.add("--all", "--force")
    repo.git.commit("-q", "-m", "site-packages")
    if pack:  # as a fresh clone is: one pack, no loose-object directories
        repo.git.gc("-q", "--prune=now")
    tracked = sorted(p for p in repo.git.ls_files("-z").split("\0") if p.endswith(".py"))
    step = max(1, len(tracked) // 40)
    picked = tracked[::step]
    for rel in picked[:5]:  # modified
        with open(os.path.join(top, rel), "a") as f:
            f.write("\n_debug_counter = 0\n")
    for rel in picked[5:7]:  # deleted
        os.unlink(os.path.join(top, rel))
    for i in range(3):  # untracked
        with open(os.path.join(top, os.path.dirname(picked[0]), f"scratch_{i}.py"), "w") as f:
            f.write("x = 1\n")
    for rel in picked[7:37]:  # stat-dirty, same content
        os.utime(os.path.join(top, rel))
    repo.close()
    return top


def source_of(top: str) -> EditableSource:
    return EditableSource("bench", "0", top, "direct_url", None, None)


def drift_set(outcome) -> set[tuple[str, str]]:
    return {(c.kind.value, c.path) for c in outcome.checks}


# -- (c) the pure-Python prototype ---------------------------------------------------------

def _blob_sha(path: str, size: int) -> str:
    h = hashlib.sha1(b"blob %d\0" % size)
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def pure_python_status(top: str) -> set[tuple[str, str]]:
    """(kind, path) like the editable check, without the git binary. No ignore rules."""
    repo = git.Repo(top, odbt=git.GitDB)
    try:
        index = git.IndexFile(repo)
        index_mtime = os.stat(index.path).st_mtime_ns
        entries = {path: entry for (path, stage), entry in index.entries.items() if stage == 0}
        head = {}
        for item in repo.head.commit.tree.traverse():
            if item.type == "blob":
                head[item.path] = item.hexsha
        out = set()
        for path, sha in head.items():
            if path not in entries:
                out.add(("missing", os.path.join(top, path)))  # staged deletion
            elif entries[path].hexsha != sha:
                out.add(("modified", os.path.join(top, path)))  # staged change
        for path, entry in entries.items():
            full = os.path.join(top, path)
            if path not in head:
                out.add(("added", full))
                continue
            try:
                st = os.lstat(full)
            except FileNotFoundError:
                out.add(("missing", full))
                continue
            mtime = st.st_mtime_ns
            same_stat = (st.st_size == entry.size and (mtime // 10**9, mtime % 10**9) == tuple(entry.mtime)
                         and st.st_ino == entry.inode and stat.S_IMODE(st.st_mode) & 0o100 == entry.mode & 0o100)
            if same_stat and mtime < index_mtime:
                continue  # git's rule: a racily-clean entry is re-hashed
            if stat.S_ISREG(st.st_mode) and _blob_sha(full, st.st_size) == entry.hexsha:
                continue
            out.add(("modified", full))
        known = set(entries)
        for dirpath, dirnames, filenames in os.walk(top):
            if dirpath == top:
                dirnames[:] = [d for d in dirnames if d != ".git"]
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for name in filenames:
                rel = os.path.relpath(os.path.join(dirpath, name), top).replace(os.sep, "/")
                if rel not in known and not rel.endswith((".pyc", ".pyo")) and ".egg-info/" not in rel:
                    out.add(("added", os.path.join(top, rel)))
        for kind, full in out:  # diffs, as the editable check gives for modified files
            if kind == "modified" and os.path.isfile(full):
                rel = os.path.relpath(full, top).replace(os.sep, "/")
                old = repo.odb.stream(bytes.fromhex(head[rel])).read().decode("utf-8", "replace")
                with open(full, encoding="utf-8", errors="replace") as f:
                    list(difflib.unified_diff(old.splitlines(), f.read().splitlines(), lineterm=""))
        return out
    finally:
        repo.close()


# -- timing ---------------------------------------------------------------------------------

def timed(func) -> float:
    started = time.perf_counter()
    func()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site-packages", default=sysconfig.get_paths()["purelib"])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--old-ref", default="74c2133")
    parser.add_argument("--pack", action="store_true", help="git gc the repository first (like a fresh clone)")
    parser.add_argument("--json")
    args = parser.parse_args()

    old_source = load_old(args.old_ref, "driftscan/verify/source.py", "_old_source")
    old_modeldir_git = load_old(args.old_ref, "driftscan/verify/modeldir_git.py", "_old_modeldir_git")
    new_audit_git = modeldir_module.audit_git

    with tempfile.TemporaryDirectory(prefix="bench-git-") as base:
        top = build_repo(base, args.site_packages, args.pack)
        files = int(subprocess.run(["git", "-C", top, "ls-files", "-z"], capture_output=True,
                                   check=True).stdout.count(b"\0"))

        def model(audit_git):
            modeldir_module.audit_git = audit_git
            try:
                return modeldir_module.verify_model_dir(top)
            finally:
                modeldir_module.audit_git = new_audit_git

        def open_close():
            with gitaccess.open_repository(top):
                pass

        variants = {
            "editable (a) today": lambda: old_source.verify_source(source_of(top)),
            "editable (b) hardened": lambda: source_module.verify_source(source_of(top)),
            "editable (c) pure Python, no ignore rules": lambda: pure_python_status(top),
            "model dir (a) today": lambda: model(old_modeldir_git.audit_git),
            "model dir (b) hardened": lambda: model(new_audit_git),
            "open a repository the hardened way": open_close,
        }
        # Same answers first: a faster wrong answer is no result.
        a, b = old_source.verify_source(source_of(top)), source_module.verify_source(source_of(top))
        assert drift_set(a) == drift_set(b) and a.files_checked == b.files_checked, (drift_set(a) ^ drift_set(b))
        c = pure_python_status(top)
        assert c == drift_set(b), c ^ drift_set(b)
        ma, mb = model(old_modeldir_git.audit_git), model(new_audit_git)
        assert {(k.kind, k.path) for k in ma.checks} == {(k.kind, k.path) for k in mb.checks}
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.runs):
            for name, func in variants.items():  # interleaved: drift of the machine hits all alike
                times[name].append(timed(func))
    medians = {name: statistics.median(ts) for name, ts in times.items()}
    pairs = {"editable hardened / today": ("editable (b) hardened", "editable (a) today"),
             "editable pure Python / today": ("editable (c) pure Python, no ignore rules", "editable (a) today"),
             "model dir hardened / today": ("model dir (b) hardened", "model dir (a) today")}
    ratios = {name: medians[new] / medians[old] for name, (new, old) in pairs.items()}
    # The same ratio taken within each round, then the median: steadier on a shared machine.
    paired = {name: statistics.median(n / o for n, o in zip(times[new], times[old], strict=True))
              for name, (new, old) in pairs.items()}
    git_version = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
    result = {"packed": args.pack, "files": files, "drifts": len(drift_set(b)), "runs": args.runs, "median_s": medians,
              "ratios": ratios, "paired_ratios": paired, "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
              f"{platform.python_version()}, {git_version}, gitpython {git.__version__}"}
    for name, value in medians.items():
        print(f"{name:45s} {value * 1000:9.1f} ms")
    for name, value in ratios.items():
        print(f"{name:45s} {value:9.2f} x   (per round: {paired[name]:.2f} x)")
    print(result["machine"], f"; {files} tracked files, {len(drift_set(b))} drifts",
          "(packed)" if args.pack else "(all objects loose)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
