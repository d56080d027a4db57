"""Remedies a user can paste: each one run, or checked word by word, against real
installs and real directories.

- ``uv cache clean --cache-dir DIR NAME`` when the edited cache copy is not in uv's default cache;
- ``--site-packages`` targets: the interpreter found for the directory, or a note that none was and
  the ``--python`` form; a dist of an extra ``--site-packages`` next to ``--venv`` reinstalls there;
- ``hf download --local-dir`` directories: the repository from ranked evidence on disk, else none guessed;
- dumps: the exact list in driftscan's cache directory and one ``xargs -0 rm``.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from driftscan import audit
from driftscan.api import plan
from driftscan.pipeline.classify import uv_cache_clean
from driftscan.core.values import Distribution
from driftscan.modeldir.provenance.localdir import REPO_PLACEHOLDER
from driftscan.modeldir.provenance.hubrepo import find_repo_id, valid_repo_id
from fixtures import venvs
from fixtures.harness import run_cli
from fixtures.modeldirs import COMMIT, build_cache_repo, build_local_dir, dump_json, seed_files, sm120_edit
from fixtures.wheels import build_wheel

PY = f"{sys.version_info.major}.{sys.version_info.minor}"


@pytest.fixture(scope="module")
def house(tmp_path_factory) -> Path:
    house = tmp_path_factory.mktemp("remedy-wheels")
    build_wheel(house, "remedypkg", "1.0", {"remedypkg/__init__.py": "X = 1\n",
                                            "remedypkg/core.py": "def f():\n    return 1\n"})
    build_wheel(house, "otherpkg", "2.0", {"otherpkg/__init__.py": "Y = 2\n"})
    return house


def _offline(house: Path) -> list[str]:
    return ["--no-index", "--find-links", str(house)]


def _append(path: Path, text: str = "_debug = 1\n") -> None:
    with open(path, "a") as f:  # in place: a uv hard link's cache copy is edited too
        f.write(text)


def _drift(report, relpath: str):
    return next(d for d in report.drifts if d.relpath == relpath)


# ---- uv's cache -------------------------------------------------------------------------------

def test_uv_cache_clean_names_the_cache_the_edit_is_in_and_cleans_it(tmp_path, house, monkeypatch):
    cache = tmp_path / "private uv cache"  # not uv's default, and a space to quote
    venv = venvs.make_uv_venv(tmp_path / "venv", cache)
    venvs.uv_install(venv, cache, *_offline(house), "remedypkg")
    core = venvs.site_packages_of(venv) / "remedypkg" / "core.py"
    _append(core)
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "another-cache"))  # what a plain `uv cache clean` would clean

    drift = _drift(audit(venv=str(venv), uv_cache=str(cache)), "remedypkg/core.py")
    assert drift.prediction.value == "survives"
    copy = Path(drift.actual["uv_cache"]["copy"])
    assert copy.read_text().endswith("_debug = 1\n")  # the premise: the cache copy carries the edit
    clean, _, reinstall = drift.remedy.partition(" && ")
    assert clean == f"uv cache clean --cache-dir {shlex.quote(str(cache))} remedypkg"
    assert reinstall.startswith(f"uv pip install --python {venv} --reinstall --no-deps remedypkg==1.0")
    steps = [s.command for s in plan(["remedypkg"], venv=str(venv), uv_cache=str(cache)).steps if s.command]
    assert steps[0].startswith("driftscan checkpoint") and steps[1] == clean  # the edit is in no checkpoint yet
    pip_steps = plan(["remedypkg"], venv=str(venv), uv_cache=str(cache), installer="pip").steps
    assert pip_steps[1].command == clean and str(cache) in pip_steps[1].step

    # Pasted as given (UV_CACHE_DIR naming another cache), it cleans the edited one.
    subprocess.run([venvs.uv_bin(), *shlex.split(clean)[1:]], check=True, capture_output=True,
                   env={**os.environ, "UV_CACHE_DIR": str(tmp_path / "another-cache")})
    assert not copy.exists()


def test_uv_cache_clean_stays_plain_for_uvs_default_cache(tmp_path, monkeypatch):
    dist = Distribution("six", "1.17.0", "/v/six-1.17.0.dist-info", "/v/lib/python3.11/site-packages")
    monkeypatch.delenv("UV_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert uv_cache_clean(dist, str(tmp_path / "xdg" / "uv")) == "uv cache clean six"
    assert uv_cache_clean(dist, None) == "uv cache clean six"  # not located: nothing better to say
    assert uv_cache_clean(dist, "/srv/uv cache") == "uv cache clean --cache-dir '/srv/uv cache' six"
    # UV_CACHE_DIR elsewhere: the default cache must be named, or the command cleans UV_CACHE_DIR's.
    monkeypatch.setenv("UV_CACHE_DIR", "/srv/ci-cache")
    assert uv_cache_clean(dist, str(tmp_path / "xdg" / "uv")) == \
        f"uv cache clean --cache-dir {tmp_path / 'xdg' / 'uv'} six"


# ---- --site-packages: which interpreter ---------------------------------------------------------

def _pip(*args: str) -> None:
    venvs.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-input", *args])


def test_prefix_interpreter_is_a_real_file_or_link_never_a_directory_or_fifo(tmp_path, house):
    prefix = tmp_path / "pfx"
    _pip(*_offline(house), "--ignore-installed", "--prefix", str(prefix), "remedypkg")
    site = prefix / "lib" / f"python{PY}" / "site-packages"
    _append(site / "remedypkg" / "core.py")
    (prefix / "bin").mkdir(exist_ok=True)
    (prefix / "bin" / f"python{PY}").mkdir()  # a directory of that name is no interpreter
    os.mkfifo(prefix / "bin" / "python3")  # nor a FIFO
    remedy = _drift(audit(site_packages=[str(site)]), "remedypkg/core.py").remedy
    assert remedy == (f"no interpreter found in {prefix}/bin; any Python {PY} installs there with --prefix: "
                      f"python{PY} -m pip install --prefix {prefix} --force-reinstall --no-deps remedypkg==1.0")

    (prefix / "bin" / "python3").unlink()
    (prefix / "bin" / "python3").symlink_to(sys.executable)  # a link to a real interpreter is one
    remedy = _drift(audit(site_packages=[str(site)]), "remedypkg/core.py").remedy
    assert remedy == f"{prefix}/bin/python3 -m pip install --force-reinstall --no-deps remedypkg==1.0"


def test_target_directory_of_unknown_version_shows_the_python_form_and_it_works(tmp_path, house):
    target = tmp_path / "T"
    _pip(*_offline(house), "--no-compile", "--target", str(target), "remedypkg")  # no bytecode: no version known
    _append(target / "remedypkg" / "core.py")
    remedy = _drift(audit(site_packages=[str(target)]), "remedypkg/core.py").remedy
    note, _, command = remedy.partition(": ")
    assert note == (f"no interpreter belongs to the --target directory {target}, and nothing in it names its "
                    "Python version; name the Python it belongs to")
    assert command == (f"python3 -m pip --python /path/to/python install --target {target} --upgrade "
                       "--force-reinstall --no-deps remedypkg==1.0")
    assert not remedy.startswith("python -m pip") and " python -m pip" not in remedy
    [step] = [s for s in plan(["remedypkg"], site_packages=[str(target)], installer="uv").steps
              if s.step.startswith("reinstall")]
    assert step.step == f"reinstall remedypkg with uv ({note})"  # the plan's step says it, its command is clean
    assert step.command == f"uv pip install --target {target} --python /path/to/python --reinstall --no-deps remedypkg==1.0"

    # The placeholder refused as it stands; with an interpreter named, the command restores the file.
    argv = shlex.split(command)
    refused = subprocess.run([sys.executable, *argv[1:], *_offline(house)], capture_output=True, text=True)
    assert refused.returncode != 0 and "/path/to/python" in refused.stderr
    assert (target / "remedypkg" / "core.py").read_text().endswith("_debug = 1\n")  # nothing was installed
    argv[argv.index("/path/to/python")] = sys.executable
    venvs.run([sys.executable, *argv[1:], *_offline(house)])
    assert [d.relpath for d in audit(site_packages=[str(target)]).drifts] == []


def test_extra_site_packages_next_to_a_venv_reinstall_there_not_into_the_venv(tmp_path, house):
    venv = tmp_path / "venv"
    venvs.run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    venvs.modern_pip_install(venv, *_offline(house), "remedypkg")
    extra = tmp_path / "extra"
    _pip(*_offline(house), "--target", str(extra), "otherpkg")
    _append(extra / "otherpkg" / "__init__.py")
    _append(venvs.site_packages_of(venv) / "remedypkg" / "core.py")
    report = audit(venv=str(venv), site_packages=[str(extra)])
    mine = _drift(report, "remedypkg/core.py").remedy
    # a venv without pip: `V/bin/python -m pip` cannot run there, uv installs into it
    assert mine.endswith(f": uv pip install --python {venv}/bin/python --reinstall --no-deps remedypkg==1.0")
    assert "has no pip installed" in mine
    other = _drift(report, "otherpkg/__init__.py").remedy
    assert other.endswith(f"python{PY} -m pip install --target {extra} --upgrade --force-reinstall --no-deps "
                          "otherpkg==2.0")
    assert f"{venv}/bin/python" not in other


# ---- hf download --local-dir: the repository id ---------------------------------------------------

CARD = """---
license: other
base_model: moonshotai/Kimi-K2.5
tags:
- nvfp4
model-index:
- name: nvidia/Kimi-K2.5-NVFP4
  results:
  - task:
      type: text-generation
    dataset:
      name: cais/mmlu
---
# Kimi-K2.5-NVFP4
"""


def _local_dir(tmp_path: Path, **extra: bytes) -> Path:
    files = {**seed_files(), **extra}
    root = build_local_dir(tmp_path / "kimi", files)
    sm120_edit(root)
    return root


def _config_remedy(root: Path):
    report = audit(model_dirs=[str(root)])
    return _drift(report, "config.json")


def _after_checkpoint(command: str, root: Path) -> str:
    """A remedy that replaces the file saves it first: the checkpoint line, then `&&` the rest."""
    head, sep, rest = command.partition(" && ")
    assert sep and head.startswith(f"checkpoint first: driftscan checkpoint --model-dir {shlex.quote(str(root))} -o "), \
        command
    return rest


def test_the_model_card_names_no_repository(tmp_path):
    """base_model is what the model was derived from; the card's model-index name is no download record."""
    root = _local_dir(tmp_path, **{"README.md": CARD.encode()})
    drift = _config_remedy(root)
    assert "moonshotai/Kimi-K2.5" not in drift.remedy and "nvidia/Kimi-K2.5-NVFP4" not in drift.remedy
    assert "; then no repository is known: " in drift.remedy
    assert find_repo_id(str(root), COMMIT) is None


def test_repo_id_from_config_name_or_path(tmp_path):
    files = seed_files()
    config = json.loads(files["config.json"])
    config["_name_or_path"] = "nvidia/Kimi-K2.5-NVFP4"
    root = _local_dir(tmp_path, **{"config.json": dump_json(config), "README.md": CARD.encode()})
    drift = _config_remedy(root)
    said, _, command = drift.remedy.partition(": checkpoint first: ")
    assert said == "repository named by config.json's _name_or_path"
    assert _after_checkpoint("checkpoint first: " + command, root).startswith(
        f"hf download nvidia/Kimi-K2.5-NVFP4 config.json --revision {COMMIT} ")
    # not a record of the download, said so; the pinned revision makes a wrong name fail
    assert "config.json's _name_or_path (evidence: name-or-path), not a record of the download" in drift.evidence


def test_repo_id_from_the_hub_cache_holding_that_commit_is_certain(tmp_path, monkeypatch):
    hub = tmp_path / "hub"
    build_cache_repo(hub, {"config.json": b"{}"}, repo_id="acme/kimi-mirror", commit=COMMIT)
    (hub / "datasets--acme--other" / "snapshots" / ("0" * 40)).mkdir(parents=True)  # another commit: not it
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    root = _local_dir(tmp_path, **{"README.md": CARD.encode()})
    drift = _config_remedy(root)
    said, _, command = drift.remedy.partition(": checkpoint first: ")
    assert said == "repository named by the hub cache holding the recorded commit"
    assert _after_checkpoint("checkpoint first: " + command, root).startswith(
        f"hf download acme/kimi-mirror config.json --revision {COMMIT} ")
    assert "not a record of the download" not in drift.evidence and "(evidence: hub-cache)" in drift.evidence
    found = find_repo_id(str(root), COMMIT)
    assert found is not None and found.certain and found.repo_type == "model"


def test_no_repo_id_on_disk_says_so_and_cannot_be_pasted_by_mistake(tmp_path):
    root = _local_dir(tmp_path)
    remedy = _config_remedy(root).remedy
    assert "<repo-id>" not in remedy
    first, _, rest = remedy.partition("; then ")
    assert first.startswith(f"checkpoint first: driftscan checkpoint --model-dir {shlex.quote(str(root))} -o ")
    why, _, command = rest.partition("once you know the repository, ")
    assert why.startswith("no repository is known: the download metadata records only the commit "
                          f"{COMMIT[:12]}, and no hub cache holds it")
    assert "restore it offline from a copy of the original" in why
    assert command == (f"hf download {REPO_PLACEHOLDER} config.json --revision {COMMIT} --local-dir {root} "
                       "--force-download")
    words = shlex.split(command)
    assert words[2] == "<ORG/NAME: see above>"  # one quoted word: no redirection in a shell, no valid repo id
    assert valid_repo_id(words[2]) is None


@pytest.mark.parametrize("value", [
    "-rf/x", "org/--force", "../../etc", "org/..", "a b/c", "org/name; rm -rf ~", "org/name\n", "ｏrg/name",
    "org/name/extra", "/abs/path", "org/" + "n" * 200, "org--x/y",
])
def test_tree_values_that_are_no_repo_id_are_never_used(tmp_path, value):
    config = json.loads(seed_files()["config.json"])
    config["_name_or_path"] = value
    root = _local_dir(tmp_path, **{"config.json": dump_json(config)})
    if "\n" not in value:  # in .git/config a newline ends the value: what precedes it is a name
        (root / ".git").mkdir()
        (root / ".git" / "config").write_text(f'[remote "origin"]\n\turl = https://huggingface.co/{value}\n')
    remedy = _config_remedy(root).remedy
    assert "; then no repository is known: " in remedy and REPO_PLACEHOLDER in remedy


def test_config_and_git_config_are_read_bounded_and_only_as_regular_files(tmp_path):
    root = _local_dir(tmp_path)
    (root / ".git").mkdir()
    os.mkfifo(root / ".git" / "config")  # never opened: a FIFO would hang the audit
    assert find_repo_id(str(root), COMMIT) is None
    (root / ".git" / "config").unlink()
    (root / ".git" / "config").write_text('[remote "origin"]\n' + "#" * (80 << 10) +
                                          "\n\turl = https://huggingface.co/org/late\n")  # over the cap
    assert find_repo_id(str(root), COMMIT) is None
    config = root / "config.json"
    (tmp_path / "outside.json").write_text('{"_name_or_path": "org/outside"}')
    config.unlink()
    config.symlink_to(tmp_path / "outside.json")  # out of the directory: not read
    assert find_repo_id(str(root), COMMIT) is None


# ---- dumps: the exact list in driftscan's cache, one xargs -------------------------------------

def _dump_scene(tmp_path: Path, count: int) -> tuple[Path, Path]:
    site = tmp_path / "site"
    (site / "pkg").mkdir(parents=True)
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    (site / "pkg" / "model.py").write_text(
        "import torch\n\n\nclass M:\n    def forward(self, x):\n        self._n += 1\n"
        f"        torch.save(x, f\"{dumps}/nomla_{{self._n}}.pt\")\n        return x\n")
    for i in range(count):
        (dumps / f"nomla_{i}.pt").write_bytes(b"\0" * 10)
    (dumps / "keep.txt").write_text("not a dump\n")
    return site, dumps


def test_many_dumps_are_listed_in_a_file_and_one_xargs_removes_exactly_them(tmp_path):
    site, dumps = _dump_scene(tmp_path, 35)
    report = audit(site_packages=[str(site)])
    [drift] = [d for d in report.drifts if d.kind.value == "debug-artifacts"]
    expected = sorted(str(dumps / f"nomla_{i}.pt") for i in range(35))
    assert sorted(drift.artifacts) == expected  # the JSON keeps the full list
    listed = drift.actual["list_file"]
    cache = os.environ["DRIFTSCAN_CACHE_DIR"]
    assert listed.startswith(os.path.join(cache, "dumps") + os.sep) and listed.endswith(".list")
    assert Path(listed).read_bytes() == b"".join(p.encode() + b"\0" for p in drift.artifacts)
    assert drift.remedy == (f"35 files matching {dumps}/nomla_*.pt; list in {listed} (review them: xargs -0 ls -l -- "
                            f"< {listed}), then: xargs -0 rm -- < {listed}")
    assert len(drift.remedy) < 600  # not 35 paths

    command = drift.remedy.rpartition(", then: ")[2]
    subprocess.run(["sh", "-c", command], check=True)
    assert sorted(p.name for p in dumps.iterdir()) == ["keep.txt"]


def test_plan_deletes_dumps_from_the_list(tmp_path, house):
    target = tmp_path / "T"
    _pip(*_offline(house), "--target", str(target), "remedypkg")
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    (target / "remedypkg" / "core.py").write_text(
        "import torch\n\n\ndef forward(x, i):\n    torch.save(x, f\"/" + str(dumps).lstrip("/") + "/q_{i}.pt\")\n")
    for i in range(5):
        (dumps / f"q_{i}.pt").write_bytes(b"x")
    result = plan(["remedypkg"], site_packages=[str(target)])
    [step] = [s for s in result.steps if s.step.startswith("review, then delete")]
    dump = next(d for d in result.audit.drifts if d.kind.value == "debug-artifacts")
    listed = dump.actual["list_file"]
    assert step.command == f"xargs -0 rm -- < {listed}"
    assert f"the exact list is in {listed}" in step.step
    assert Path(listed).read_bytes().split(b"\0")[:-1] == [str(dumps / f"q_{i}.pt").encode() for i in range(5)]


def test_dump_list_falls_back_to_rm_when_the_cache_cannot_be_written(tmp_path, monkeypatch):
    site, dumps = _dump_scene(tmp_path, 5)
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(blocker / "cache"))
    [drift] = [d for d in audit(site_packages=[str(site)]).drifts if d.kind.value == "debug-artifacts"]
    assert "list_file" not in drift.actual
    assert drift.remedy == "rm -- " + " ".join(sorted(str(dumps / f"nomla_{i}.pt") for i in range(5)))


def test_dump_list_is_never_written_inside_the_audited_tree(tmp_path, monkeypatch):
    site, dumps = _dump_scene(tmp_path, 5)
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(site / ".cache"))
    [drift] = [d for d in audit(site_packages=[str(site)]).drifts if d.kind.value == "debug-artifacts"]
    assert drift.remedy.startswith("rm -- ") and not (site / ".cache" / "dumps").exists()


def test_a_few_dumps_stay_named_in_the_remedy(tmp_path):
    site, dumps = _dump_scene(tmp_path, 2)
    [drift] = [d for d in audit(site_packages=[str(site)]).drifts if d.kind.value == "debug-artifacts"]
    assert drift.remedy == f"rm -- {dumps}/nomla_0.pt {dumps}/nomla_1.pt"


def test_dump_remedy_in_the_cli_json(tmp_path):
    site, dumps = _dump_scene(tmp_path, 35)
    proc = run_cli("audit", "--site-packages", str(site), "--format", "json")
    assert proc.returncode == 1, proc.stderr
    [drift] = [d for d in json.loads(proc.stdout)["drifts"] if d["kind"] == "debug-artifacts"]
    assert len(drift["artifacts"]) == 35 and drift["remedy"].endswith(f"xargs -0 rm -- < {drift['actual']['list_file']}")
