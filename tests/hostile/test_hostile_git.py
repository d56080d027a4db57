"""An audited repository is data, never instructions (docs/git-access.md).

Every command a hostile repository names is a canary script that logs that it ran; no audit
may make one run, hang, or read outside the tree, and the benign drift planted next to the
hostile configuration is still reported. A control test shows the canaries do run under plain git.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from driftscan import audit
from driftscan import git as gitaccess
from fixtures.envtree import editable_site
from fixtures.bounded import driftscan_bounded
from fixtures.demo import make_project
from fixtures.modeldirs import build_git_clone, seed_files, sm120_edit

HOOKS = ("pre-commit", "post-checkout", "post-index-change", "reference-transaction", "fsmonitor-watchman")


def canaries(base: Path) -> tuple[dict[str, str], Path]:
    """One script per hostile role; each appends its role to ``base/ran.log``."""
    log = base / "ran.log"
    bin_dir = base / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    scripts = {}
    for role in ("fsmonitor", "external", "textconv", "clean", "smudge", "process", "lfs-clean", "lfs-smudge",
                 "lfs-process", "pager", "askpass", "ssh", "credential", "include-fsmonitor", "include-clean",
                 "hook", *HOOKS):
        script = bin_dir / f"canary-{role}"
        script.write_text(f"#!/bin/sh\necho {role} >> '{log}'\ncat\n")
        script.chmod(0o755)
        scripts[role] = str(script)
    return scripts, log


def ran(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def make_hostile(repo_root: Path, base: Path) -> Path:
    """Append every command-naming key to the repository's config; returns the canary log."""
    c, log = canaries(base)
    hooks = base / "hooks"
    hooks.mkdir(exist_ok=True)
    for hook in HOOKS:
        (hooks / hook).symlink_to(c[hook])
    included = base / "included.cfg"
    included.write_text(f"[core]\n\tfsmonitor = {c['include-fsmonitor']}\n"
                        f"[filter \"evil\"]\n\tclean = {c['include-clean']}\n")
    with open(repo_root / ".git" / "config", "a") as f:
        f.write(f"""
[core]
\tfsmonitor = {c['fsmonitor']}
\tpager = {c['pager']}
\taskPass = {c['askpass']}
\tsshCommand = {c['ssh']}
\thooksPath = {hooks}
[diff]
\texternal = {c['external']}
[diff "evil"]
\ttextconv = {c['textconv']}
\tcachetextconv = false
[filter "evil"]
\tclean = {c['clean']}
\tsmudge = {c['smudge']}
\tprocess = {c['process']}
\trequired = true
[filter "lfs"]
\tclean = {c['lfs-clean']}
\tsmudge = {c['lfs-smudge']}
\tprocess = {c['lfs-process']}
\trequired = true
[credential]
\thelper = {c['credential']}
[include]
\tpath = {included}
[includeIf "gitdir:/"]
\tpath = {included}
""")
    return log


@pytest.fixture
def hostile_project(tmp_path):
    """An editable install whose repository names a command for every git hook point, with
    benign drift planted: a modified file, a deleted one, a new one, a stat-dirty one."""
    project = make_project(tmp_path / "proj")
    (project / ".gitattributes").write_text("* diff=evil filter=evil\n*.bin filter=lfs diff=lfs\n")
    (project / "src/mypkg/w.bin").write_bytes(b"\0weights\0")
    import git

    repo = git.Repo(project)
    repo.index.add([".gitattributes", "src/mypkg/w.bin"])  # gitpython's index runs no filter
    repo.index.commit("attributes")
    site = editable_site(tmp_path, project)
    assert audit(site_packages=[str(site)]).drifts == []
    log = make_hostile(project, tmp_path / "attack")
    (project / "src/mypkg/__init__.py").write_text("def forward(x):\n    return x * 3\n")
    (project / "src/mypkg/util.py").unlink()
    (project / "src/mypkg/patch.py").write_text("OVERRIDES = {}\n")
    later = time.time() + 5
    os.utime(project / "src/mypkg/w.bin", (later, later))  # stat-dirty: git status re-hashes it (clean filter)
    os.utime(project / "README.md", (later, later))
    return project, site, log


PLANTED = {("src/mypkg/__init__.py", "modified"), ("src/mypkg/util.py", "missing"), ("src/mypkg/patch.py", "added")}


def source_drifts(report):
    return {(d.relpath, d.kind.value) for d in report.drifts if d.scope.value == "source"}


def test_control_plain_git_runs_the_canaries(hostile_project, tmp_path):
    """What driftscan used to do (git status / diff HEAD with the repository's config) runs them."""
    project, _site, log = hostile_project
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"}
    subprocess.run(["git", "status", "--porcelain"], cwd=project, env=env, capture_output=True, timeout=30)
    (project / ".gitattributes").write_text("")  # else the required process filter fails the diff first
    subprocess.run(["git", "diff", "HEAD", "--", "src/mypkg/__init__.py"], cwd=project, env=env,
                   capture_output=True, timeout=30)
    roles = set(ran(log))
    assert {"fsmonitor", "external"} <= roles or {"include-fsmonitor", "external"} <= roles
    assert roles & {"clean", "include-clean", "process", "lfs-process", "lfs-clean"}


def test_editable_hostile_config_runs_nothing(hostile_project):
    project, site, log = hostile_project
    index = project / ".git" / "index"
    before = index.stat().st_mtime_ns
    report = audit(site_packages=[str(site)])
    assert ran(log) == []
    assert source_drifts(report) == PLANTED
    assert not report.errors and not report.unverifiable
    init = next(d for d in report.drifts if d.relpath == "src/mypkg/__init__.py")
    assert "+    return x * 3" in init.diff  # git's own diff, not diff.external's or a textconv's
    assert index.stat().st_mtime_ns == before


def test_editable_plan_runs_nothing(hostile_project):
    from driftscan.api import plan

    _project, site, log = hostile_project
    result = plan(["mypkg"], site_packages=[str(site)])
    assert ran(log) == []
    assert {(d.relpath, d.kind.value) for d in result.audit.drifts} >= PLANTED


def test_editable_excludes_file_fifo_does_not_hang(hostile_project):
    project, site, log = hostile_project
    fifo = project.parent / "excludes.fifo"
    os.mkfifo(fifo)
    with open(project / ".git" / "config", "a") as f:
        f.write(f"[core]\n\texcludesFile = {fifo}\n\tattributesFile = {fifo}\n")
    started = time.monotonic()
    report = audit(site_packages=[str(site)])
    assert time.monotonic() - started < 10  # never opened: no timeout was needed
    assert source_drifts(report) == PLANTED and not report.errors
    assert ran(log) == []


def test_editable_info_exclude_fifo_is_refused_without_blocking(hostile_project):
    project, site, log = hostile_project
    (project / ".git" / "info").mkdir(exist_ok=True)
    (project / ".git" / "info" / "exclude").unlink(missing_ok=True)
    os.mkfifo(project / ".git" / "info" / "exclude")
    started = time.monotonic()
    report = audit(site_packages=[str(site)])
    assert time.monotonic() - started < 10
    assert source_drifts(report) == set() and ran(log) == []
    [unverifiable] = report.unverifiable
    assert "info/exclude" in unverifiable.reason and "not a regular file" in unverifiable.reason


def test_editable_dot_git_file_is_not_followed(tmp_path):
    """A ``.git`` file (gitdir: elsewhere) names another repository: never read."""
    elsewhere = make_project(tmp_path / "elsewhere")
    log = make_hostile(elsewhere, tmp_path / "attack")
    project = tmp_path / "proj"
    (project / "src/mypkg").mkdir(parents=True)
    (project / "src/mypkg/__init__.py").write_text("X = 1\n")
    (project / "pyproject.toml").write_text("[project]\nname = 'mypkg'\nversion = '0.1'\n")
    (project / ".git").write_text(f"gitdir: {elsewhere / '.git'}\n")
    site = editable_site(tmp_path, project)
    report = audit(site_packages=[str(site)])
    assert ran(log) == []
    [unverifiable] = report.unverifiable
    assert ".git is a file" in unverifiable.reason and "not followed" in unverifiable.reason


def test_editable_pointing_at_a_repository_that_is_no_python_project_is_not_read(tmp_path):
    """direct_url.json may name any directory: an etckeeper-style /etc under git must not have its
    untracked files listed or its changed files diffed into the report."""
    import git

    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "shadow").write_text("root:$6$original:19000::::::\n")
    repo = git.Repo.init(etc)
    repo.index.add(["shadow"])
    repo.index.commit("etckeeper")
    repo.close()
    (etc / "shadow").write_text("root:$6$SECRET-HASH-changed:19001::::::\n")
    (etc / "new-secret").write_text("token\n")
    site = editable_site(tmp_path, etc)
    report = audit(site_packages=[str(site)])
    assert "SECRET-HASH" not in report.model_dump_json()
    assert source_drifts(report) == set()
    [unverifiable] = report.unverifiable
    assert "not a Python project" in unverifiable.reason


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_editable_tree_of_another_user_is_not_read(tmp_path):
    project = make_project(tmp_path / "proj")
    log = make_hostile(project, tmp_path / "attack")
    site = editable_site(tmp_path, project)
    for path in (project, project / ".git"):
        os.chown(path, 54321, -1)
    report = audit(site_packages=[str(site)])
    assert ran(log) == []
    [unverifiable] = report.unverifiable
    assert "uid 54321" in unverifiable.reason


@pytest.fixture
def hostile_model(tmp_path):
    files = {**seed_files(), ".gitignore": b"*.log\n", ".gitattributes": b"*.json diff=evil filter=evil\n"}
    root = tmp_path / "Kimi"
    repo = build_git_clone(root, files)
    log = make_hostile(root, tmp_path / "attack")
    sm120_edit(root)  # config.json and hf_quant_config.json
    (root / "debug_dump.pt").write_bytes(b"tensor")
    later = time.time() + 5
    os.utime(root / "tokenizer_config.json", (later, later))  # stat-dirty, same content
    return root, repo, log


MODEL_PLANTED = {("config.json", "modified"), ("hf_quant_config.json", "modified"), ("debug_dump.pt", "added")}


def model_drifts(report):
    return {(d.relpath, d.kind.value) for d in report.drifts}


def test_control_plain_git_runs_the_model_canaries(hostile_model):
    root, _repo, log = hostile_model
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
    subprocess.run(["git", "hash-object", "--", "config.json"], cwd=root, env=env, capture_output=True, timeout=30)
    assert set(ran(log)) & {"clean", "include-clean", "process"}


def test_model_dir_hostile_config_runs_nothing(hostile_model):
    root, _repo, log = hostile_model
    report = audit(model_dirs=[str(root)])
    assert ran(log) == []
    assert model_drifts(report) == MODEL_PLANTED
    assert not report.errors and not report.unverifiable


def test_model_dir_excludes_file_fifo_is_never_opened(hostile_model):
    root, _repo, log = hostile_model
    fifo = root.parent / "excludes.fifo"
    os.mkfifo(fifo)
    with open(root / ".git" / "config", "a") as f:
        f.write(f"[core]\n\texcludesFile = {fifo}\n")
    started = time.monotonic()
    report = audit(model_dirs=[str(root)])
    assert time.monotonic() - started < 10
    assert model_drifts(report) == MODEL_PLANTED and not report.errors


def test_model_dir_dot_git_file_is_not_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    build_git_clone(elsewhere, seed_files())
    log = make_hostile(elsewhere, tmp_path / "attack")
    root = tmp_path / "model"
    root.mkdir()
    for rel, data in seed_files().items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    (root / ".git").write_text(f"gitdir: {elsewhere / '.git'}\n")
    report = audit(model_dirs=[str(root)])
    assert ran(log) == []
    assert any(".git is a file" in u.reason for u in report.unverifiable)


def test_model_dir_borrowed_objects_are_not_followed(hostile_model, tmp_path):
    root, _repo, log = hostile_model
    other = tmp_path / "other.git"
    other.mkdir()
    (root / ".git/objects/info").mkdir(exist_ok=True)
    (root / ".git/objects/info/alternates").write_text(f"{other}\n")
    report = audit(model_dirs=[str(root)])
    assert ran(log) == []
    assert any("alternates" in u.reason for u in report.unverifiable)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_model_dir_in_a_repository_of_another_user_is_not_read(tmp_path):
    """Found by walking up: like git's safe.directory, a repository of another uid is not read."""
    files = {f"models/m/{k}": v for k, v in seed_files().items()}
    home = tmp_path / "home"
    build_git_clone(home, files)
    log = make_hostile(home, tmp_path / "attack")
    for path in (home, home / ".git"):
        os.chown(path, 54321, -1)
    report = audit(model_dirs=[str(home / "models" / "m")])
    assert ran(log) == []
    assert any("uid 54321" in u.reason for u in report.unverifiable)


def test_git_environment_is_built_from_nothing(tmp_path, monkeypatch):
    """Inherited GIT_* variables (a hostile wrapper's GIT_DIR, GIT_CONFIG_*) do not reach git."""
    root = tmp_path / "m"
    build_git_clone(root, seed_files())
    c, log = canaries(tmp_path / "attack")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.fsmonitor")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", c["fsmonitor"])
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", c["external"])
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "nowhere"))
    os.utime(root / "config.json")
    with gitaccess.open_repository(str(root)) as repo:
        assert "GIT_CONFIG_COUNT" not in repo._env and repo._env["GIT_DIR"] != str(tmp_path / "nowhere")
        repo.run("status", "--porcelain")
        repo.run("diff", "HEAD")
    assert ran(log) == []
    assert not repo.private.startswith(os.path.realpath(root))  # never inside the audited tree
    assert not os.path.exists(repo.private)  # and removed


def test_private_config_keeps_only_inert_keys(tmp_path):
    root = tmp_path / "m"
    build_git_clone(root, seed_files())
    make_hostile(root, tmp_path / "attack")
    with open(root / ".git" / "config", "a") as f:
        f.write("[core]\n\tfilemode = no\n\tautocrlf = input\n")
    with gitaccess.open_repository(str(root)) as repo:
        written = (Path(repo.gitdir_private) / "config").read_text()
        assert repo.config == {"core.filemode": "false", "core.autocrlf": "input",
                               "core.repositoryformatversion": "0"}
        assert "canary" not in written and "include" not in written and "filemode = false" in written
        assert not repo.filemode


def test_editable_lfs_file_is_compared_without_git_lfs(tmp_path):
    """git-lfs's clean filter never runs now: a stat-dirty LFS file whose content matches the
    committed pointer is not drift (what git-lfs would have said); a changed one is."""
    import git

    from fixtures.modeldirs import lfs_pointer

    project = make_project(tmp_path / "proj")
    weights = b"\x00real weights\x00" * 100
    (project / "src/mypkg/w.bin").write_bytes(lfs_pointer(weights))
    (project / "src/mypkg/x.bin").write_bytes(lfs_pointer(weights))
    repo = git.Repo(project)
    repo.index.add(["src/mypkg/w.bin", "src/mypkg/x.bin"])
    repo.index.commit("weights")
    (project / ".git/lfs/objects").mkdir(parents=True)  # git lfs pull keeps its objects there
    (project / "src/mypkg/w.bin").write_bytes(weights)  # what git lfs pull leaves
    (project / "src/mypkg/x.bin").write_bytes(weights[:-1] + b"!")
    site = editable_site(tmp_path, project)
    report = audit(site_packages=[str(site)])
    assert source_drifts(report) == {("src/mypkg/x.bin", "modified")}


def test_ignore_files_are_still_honoured_as_data(tmp_path, monkeypatch):
    """git runs without global config, yet the auditing user's global ignore file and a
    repository's core.excludesFile inside its own tree still hide files (read as data)."""
    root = tmp_path / "m"
    build_git_clone(root, seed_files())
    xdg = tmp_path / "xdg"
    (xdg / "git").mkdir(parents=True)
    (xdg / "git" / "ignore").write_text("*.swp\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    (root / ".git" / "repo-ignore").write_text("*.scratch\n")
    with open(root / ".git" / "config", "a") as f:
        f.write(f"[core]\n\texcludesFile = {root / '.git' / 'repo-ignore'}\n")
    for name in ("notes.swp", "a.scratch", "debug_dump.pt"):
        (root / name).write_text("x")
    report = audit(model_dirs=[str(root)])
    assert model_drifts(report) == {("debug_dump.pt", "added")}


def test_editable_pointers_that_are_fifos_do_not_block(tmp_path):
    """The .pth and .egg-link files that locate editable sources are read without blocking."""
    project = make_project(tmp_path / "proj")
    site = editable_site(tmp_path, project)
    pth = site / "__editable__.mypkg-0.1.pth"
    direct_url = next(site.glob("*.dist-info")) / "direct_url.json"
    direct_url.write_text(json.dumps({"url": "https://example.invalid/x", "dir_info": {"editable": True}}))
    pth.unlink()
    os.mkfifo(pth)  # direct_url has no file URL: the .pth would be read next
    os.mkfifo(site / "legacy.egg-link")
    started = time.monotonic()
    report = audit(site_packages=[str(site)])
    assert time.monotonic() - started < 10
    messages = {p.path: p.message for p in report.errors}
    assert "not a regular file" in messages[str(site / "legacy.egg-link")]
    assert any("source tree cannot be located" in m for m in messages.values())


def test_an_os_error_while_opening_is_a_refusal_not_a_crash(tmp_path, monkeypatch):
    """Callers handle git's errors only: an unreadable objects/ or a full /dev/shm must refuse
    the repository (reported), never escape as a bare OSError."""
    import errno

    from driftscan.git import privatedir

    root = tmp_path / "model"
    build_git_clone(root, {"config.json": b"{}\n"})

    def full(top):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(privatedir, "make", full)
    with pytest.raises(gitaccess.GitRefused, match="No space left on device"):
        gitaccess.open_repository(str(root))


# A FIFO git would open (a work-tree ignore or attributes file, an excludes file inside the tree)
# refuses the repository before git runs. Left to git it held each repository for the 30 s
# timeout (an editable install twice: the retry without the untracked listing).
FIFO_PLACES = {
    "gitignore": lambda top, sub: os.mkfifo(sub / ".gitignore"),
    "gitattributes": lambda top, sub: (top / ".gitattributes").unlink(missing_ok=True) or
    os.mkfifo(top / ".gitattributes"),
    "excludes-file": lambda top, sub: os.mkfifo(top / "ignore.fifo") or
    (top / ".git" / "config").open("a").write("[core]\n\texcludesFile = ignore.fifo\n"),
}


def _fifo_refusal(args: list[str], fifo_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "DRIFTSCAN_GIT_TIMEOUT"}  # git's own 30 s
    proc = driftscan_bounded("audit", *args, "--format", "json", "--no-pristine", seconds=20, env=env)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode & 2, (proc.returncode, proc.stderr)
    report = json.loads(proc.stdout)
    reasons = [u["reason"] for u in report["unverifiable"]]
    assert len(reasons) == 1 and str(fifo_dir) in reasons[0] and "fifo" in reasons[0].lower(), reasons
    return report


@pytest.mark.parametrize("place", sorted(FIFO_PLACES))
def test_editable_fifo_git_would_open_is_refused_before_git_runs(hostile_project, place):
    project, site, log = hostile_project
    (project / "src/mypkg/.gitignore").unlink(missing_ok=True)
    FIFO_PLACES[place](project, project / "src/mypkg")
    _fifo_refusal(["--site-packages", str(site)], project)
    assert ran(log) == []


@pytest.mark.parametrize("place", sorted(FIFO_PLACES))
def test_model_dir_fifo_git_would_open_is_refused_before_git_runs(hostile_model, place):
    root, _repo, log = hostile_model
    (root / "sub").mkdir()
    FIFO_PLACES[place](root, root / "sub")
    report = _fifo_refusal(["--model-dir", str(root)], root)
    assert any(str(root) in p["message"] and "fifo" in p["message"].lower() for p in report["errors"])
    assert ran(log) == []


def test_symlinked_ignore_file_to_a_fifo_is_refused(hostile_model, tmp_path):
    root, _repo, _log = hostile_model
    os.mkfifo(tmp_path / "elsewhere.fifo")
    (root / "sub").mkdir()
    (root / "sub" / ".gitignore").symlink_to(tmp_path / "elsewhere.fifo")
    _fifo_refusal(["--model-dir", str(root)], root)


def test_regular_control_files_everywhere_are_not_refused(hostile_model):
    root, _repo, _log = hostile_model
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "sub" / "deeper" / ".gitignore").write_text("*.tmp\n")
    (root / "sub" / ".gitattributes").mkdir()  # a directory: git's open fails at once, never blocks
    report = audit(model_dirs=[str(root)])
    assert model_drifts(report) == MODEL_PLANTED | {("sub/deeper/.gitignore", "added")}
    assert not report.unverifiable and not report.errors
