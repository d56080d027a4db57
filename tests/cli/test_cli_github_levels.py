"""GitHub annotations follow the fail policy the run exits by: a drift (or finding) that makes the
run fail is an ``error``, one that does not a ``warning``. A real venv made here (a wheel built by
the test, installed by a real pip): a package file edited to dump a tensor (a high finding), and
a module no distribution owns with a breakpoint in a debugging helper (a medium one)."""

from __future__ import annotations

import json
import re
import sys

import pytest

from fixtures import venvs
from fixtures.harness import run_cli
from fixtures.wheels import build_wheel

CORE = "import json\n\n\ndef load(path):\n    with open(path) as f:\n        return json.load(f)\n"
DUMP = "\n\ndef forward(x):\n    import torch\n    torch.save(x, '/tmp/ghlevels_dump.pt')\n    return x\n"
HELPER = "def debug_dump(x):\n    breakpoint()\n    return x\n"
LINE = re.compile(r"^::(error|warning|notice) (.*?)::(.*)$")


@pytest.fixture(scope="module")
def drifted(tmp_path_factory):
    root = tmp_path_factory.mktemp("ghlevels")
    build_wheel(root / "wheels", "ghpkg", "1.0", {"ghpkg/__init__.py": "", "ghpkg/core.py": CORE})
    venv = root / "venv"
    venvs.run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    venvs.modern_pip_install(venv, "--no-index", "--find-links", str(root / "wheels"), "ghpkg")
    site = venvs.site_packages_of(venv)
    (site / "ghpkg/core.py").write_text(CORE + DUMP)
    (site / "_nomla_debug_utils.py").write_text(HELPER)
    report = json.loads(run_cli("audit", "--venv", str(venv), "--no-pristine", "--format", "json").stdout)
    severities = {d["relpath"]: {f["severity"] for f in d["findings"]} for d in report["drifts"]}
    assert severities == {"ghpkg/core.py": {"high"}, "_nomla_debug_utils.py": {"medium"}}, severities
    return root, venv


def levels(stdout: str) -> dict[tuple[str, str], set[str]]:
    """(drift kind or finding code, file name) -> the levels annotated."""
    out: dict[tuple[str, str], set[str]] = {}
    for line in stdout.splitlines():
        m = LINE.match(line)
        assert m, line
        props = dict(p.split("=", 1) for p in m.group(2).split(","))
        title = props["title"].replace("%3A", ":").replace("%2C", ",")
        what = title.split(":")[0].removeprefix("driftscan ") if title.startswith("driftscan") else title.split()[0]
        out.setdefault((what, props["file"].rsplit("/", 1)[-1]), set()).add(m.group(1))
    return out


CORE_DRIFT, CORE_FINDING = ("modified", "core.py"), ("DBG101", "core.py")
ADDED_DRIFT, ADDED_FINDING = ("added", "_nomla_debug_utils.py"), ("DBG106", "_nomla_debug_utils.py")

# the policy's flags -> the level of each annotation, and the exit status
CASES = {
    "drift": ([], {CORE_DRIFT: "error", ADDED_DRIFT: "error", CORE_FINDING: "warning", ADDED_FINDING: "warning"}, 1),
    "debug": (["--fail-on", "debug"],
              {CORE_DRIFT: "error", ADDED_DRIFT: "error", CORE_FINDING: "error", ADDED_FINDING: "error"}, 1),
    "debug-high": (["--fail-on", "debug-high"],
                   {CORE_DRIFT: "error", ADDED_DRIFT: "warning", CORE_FINDING: "error", ADDED_FINDING: "warning"}, 1),
    "environment": (["--fail-on", "environment"],
                    {CORE_DRIFT: "warning", ADDED_DRIFT: "error", CORE_FINDING: "warning",
                     ADDED_FINDING: "warning"}, 1),
    "data": (["--fail-on", "data"], dict.fromkeys((CORE_DRIFT, ADDED_DRIFT, CORE_FINDING, ADDED_FINDING),
                                                  "warning"), 0),
    "never": (["--fail-on", "never"], dict.fromkeys((CORE_DRIFT, ADDED_DRIFT, CORE_FINDING, ADDED_FINDING),
                                                    "warning"), 0),
    "exit-zero": (["--fail-on", "debug", "--exit-zero"],
                  dict.fromkeys((CORE_DRIFT, ADDED_DRIFT, CORE_FINDING, ADDED_FINDING), "warning"), 0),
}


@pytest.mark.parametrize("case", CASES)
def test_audit_annotations_follow_the_fail_policy(drifted, case):
    _, venv = drifted
    flags, want, status = CASES[case]
    proc = run_cli("audit", "--venv", str(venv), "--no-pristine", "--format", "github", *flags)
    assert proc.returncode == status, proc.stderr
    got = levels(proc.stdout)
    assert {k: v for k, v in got.items() if k in want} == {k: {v} for k, v in want.items()}
    assert any("error" in v for v in got.values()) == (status == 1)  # an error is what fails the run


def test_diff_annotations_follow_the_fail_policy(drifted):
    root, venv = drifted
    snap = root / "snap.json"
    site = venvs.site_packages_of(venv)
    extra = site / "ghpkg_extra.py"
    extra.unlink(missing_ok=True)
    assert run_cli("snapshot", "--venv", str(venv), "-o", str(snap)).returncode == 0
    extra.write_text("def probe(x):\n    import torch\n    torch.save(x, '/tmp/ghlevels_probe.pt')\n")
    try:
        for flags, level, status in ((["--fail-on", "package"], "warning", 0), ([], "error", 1),
                                     (["--fail-on", "debug-high"], "error", 1), (["--exit-zero"], "warning", 0)):
            proc = run_cli("diff", str(snap), "--format", "github", *flags)
            assert proc.returncode == status, (flags, proc.stderr)
            got = levels(proc.stdout)
            assert got[("added", "ghpkg_extra.py")] == {level}, (flags, got)
    finally:
        extra.unlink()


def test_accepted_drift_is_a_notice_whatever_the_policy(drifted, tmp_path):
    _, venv = drifted
    config = tmp_path / "driftscan.toml"
    config.write_text('[[accept]]\npath = "ghpkg/core.py"\nreason = "kept on purpose"\n')
    for flags in ([], ["--fail-on", "debug"], ["--fail-on", "package"]):
        proc = run_cli("audit", "--venv", str(venv), "--no-pristine", "--format", "github", "--config", str(config),
                       *flags, cwd=str(tmp_path))
        got = levels(proc.stdout)
        assert got[CORE_DRIFT] == got[CORE_FINDING] == {"notice"}, (flags, got)
        # the added module still fails the run where the policy says so
        assert proc.returncode == (0 if flags == ["--fail-on", "package"] else 1), (flags, proc.stderr)
        assert got[ADDED_DRIFT] == {"warning" if flags == ["--fail-on", "package"] else "error"}
