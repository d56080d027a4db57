"""A checkpoint's index as the previous version wrote it (its closed sets as plain strings) is
still a checkpoint: it loads into the enums, and reapply works from it after a real reinstall.
A checkpoint from elsewhere with a value outside those sets is refused in one clear line.

``PREVIOUS`` is the checkpoint.json a real ``driftscan checkpoint`` of the previous version wrote
for ``take``'s edits (real pip, toy wheels from fixtures/upgrades.py), with what differs per run
replaced by @NAMES@."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from driftscan.core.errors import ConfigError
from driftscan.core.values import DriftKind, Scope
from driftscan.reinstall.checkpoint import INDEX, EntryType, load_index
from fixtures.upgrades import (
    MODEL,
    UTIL,
    VERSIONS,
    build_toypkg,
    cli,
    edit_kept,
    edit_model,
    install,
    own_env,
    pip_venv,
    site_of,
)

PROBE = "toypkg/probe.py"  # an added file with debug code
PROBE_SOURCE = 'import torch\n\ntorch.save(torch.zeros(1), "/tmp/toy_probe.pt")\n'
ALIAS = "toypkg/alias.py"  # an added symlink


def take(venv: Path, house: Path, dest: Path, env: dict[str, str], cli_env: dict[str, str] | None = None) -> Path:
    """The edits (model.py edited, util.py deleted, a file and a symlink added) and a real
    ``driftscan checkpoint`` of them (originals from --wheels)."""
    site = site_of(venv)
    (site / MODEL).write_text(edit_model((site / MODEL).read_text()))
    (site / UTIL).unlink()
    (site / PROBE).write_text(PROBE_SOURCE)
    os.symlink("model.py", site / ALIAS)
    for rel in (MODEL, PROBE):
        os.chmod(site / rel, 0o644)  # the index records the mode: the same whatever the umask
    proc = cli("checkpoint", "--venv", str(venv), "--wheels", str(house), "-o", str(dest),
               env={**env, **(cli_env or {})})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return dest


def tokens(index: dict, venv: Path, house: Path) -> dict[str, str]:
    """What differs from one run to the next, by its @NAME@ in ``PREVIOUS``."""
    return {"@VENV@": str(venv), "@HOUSE@": str(house), "@CREATED@": index["created_at"],
            "@HOST@": index["hostname"], "@TOOL@": index["tool"], "@PYTHON@": index["python_version"],
            "@PYXY@": f"{sys.version_info[0]}.{sys.version_info[1]}"}


def fill(text: str, values: dict[str, str]) -> str:
    for token, value in values.items():
        text = text.replace(token, json.dumps(value)[1:-1])
    return text


def tokenize(text: str, values: dict[str, str]) -> str:
    """The inverse of ``fill`` (how ``PREVIOUS`` was made from a real index)."""
    for token, value in sorted(values.items(), key=lambda kv: -len(kv[1])):
        text = text.replace(json.dumps(value)[1:-1], token)
    return text


PREVIOUS = '''{
  "format": "1",
  "tool": "@TOOL@",
  "created_at": "@CREATED@",
  "hostname": "@HOST@",
  "root": "@VENV@",
  "venv": "@VENV@",
  "site_packages": [
    "@VENV@/lib/python@PYTHON@/site-packages"
  ],
  "python_version": "@PYTHON@",
  "model_dirs": [],
  "distributions": [
    {
      "name": "toypkg",
      "version": "1.0",
      "installer": "pip",
      "pristine": {
        "source": "wheels",
        "path": "@HOUSE@/toypkg-1.0-py3-none-any.whl"
      },
      "reason": null
    }
  ],
  "files": [
    {
      "path": "@VENV@/lib/python@PYTHON@/site-packages/toypkg/model.py",
      "relpath": "lib/python@PYTHON@/site-packages/toypkg/model.py",
      "relpath_hex": null,
      "area": "env",
      "kind": "modified",
      "scope": "package",
      "distribution": "toypkg",
      "version": "1.0",
      "record_path": "toypkg/model.py",
      "hash_before": "sha256=SrpJR8SLBCiHxKEtNIFWV8_KGGs4CZZYRHyIG8sTX44",
      "hash_after": "sha256=b51f7b6af76d3be60db8a12fcf8a9f020179e01a55f95ebc93b7d4b603c7ea3f",
      "size_after": 910,
      "mode": 420,
      "type": "file",
      "symlink_target": null,
      "content": "files/env/lib/python@PYTHON@/site-packages/toypkg/model.py",
      "original": "originals/env/lib/python@PYTHON@/site-packages/toypkg/model.py",
      "patch": "patches/lib/python@PYTHON@/site-packages/toypkg/model.py.patch",
      "pristine": {
        "source": "wheels",
        "path": "@HOUSE@/toypkg-1.0-py3-none-any.whl"
      },
      "findings": [
        {
          "code": "DBG104",
          "line": 33,
          "origin": "injected"
        },
        {
          "code": "DBG101",
          "line": 34,
          "origin": "injected"
        }
      ],
      "not_copied": null,
      "link_resolves_to": null,
      "has_patch": true,
      "has_original": true,
      "no_original": null
    },
    {
      "path": "@VENV@/lib/python@PYTHON@/site-packages/toypkg/util.py",
      "relpath": "lib/python@PYTHON@/site-packages/toypkg/util.py",
      "relpath_hex": null,
      "area": "env",
      "kind": "missing",
      "scope": "package",
      "distribution": "toypkg",
      "version": "1.0",
      "record_path": "toypkg/util.py",
      "hash_before": "sha256=MeZ7gvwSMqboBrtNU1JCgYAJUGlBfh6zZ_AnaMOtzwk",
      "hash_after": null,
      "size_after": null,
      "mode": null,
      "type": "missing",
      "symlink_target": null,
      "content": null,
      "original": "originals/env/lib/python@PYTHON@/site-packages/toypkg/util.py",
      "patch": null,
      "pristine": {
        "source": "wheels",
        "path": "@HOUSE@/toypkg-1.0-py3-none-any.whl"
      },
      "findings": [],
      "not_copied": null,
      "link_resolves_to": null,
      "has_patch": false,
      "has_original": true,
      "no_original": null
    },
    {
      "path": "@VENV@/lib/python@PYTHON@/site-packages/toypkg/alias.py",
      "relpath": "lib/python@PYTHON@/site-packages/toypkg/alias.py",
      "relpath_hex": null,
      "area": "env",
      "kind": "added",
      "scope": "environment",
      "distribution": null,
      "version": null,
      "record_path": null,
      "hash_before": null,
      "hash_after": null,
      "size_after": null,
      "mode": 511,
      "type": "symlink",
      "symlink_target": "model.py",
      "content": null,
      "original": null,
      "patch": null,
      "pristine": null,
      "findings": [],
      "not_copied": null,
      "link_resolves_to": null,
      "has_patch": false,
      "has_original": false,
      "no_original": null
    },
    {
      "path": "@VENV@/lib/python@PYTHON@/site-packages/toypkg/probe.py",
      "relpath": "lib/python@PYTHON@/site-packages/toypkg/probe.py",
      "relpath_hex": null,
      "area": "env",
      "kind": "added",
      "scope": "environment",
      "distribution": null,
      "version": null,
      "record_path": null,
      "hash_before": null,
      "hash_after": "sha256=5a2a8206b9cb832a30bbaf6652627120fff556d12a8f675d8256df0458c2c8b5",
      "size_after": 62,
      "mode": 420,
      "type": "file",
      "symlink_target": null,
      "content": "files/env/lib/python@PYTHON@/site-packages/toypkg/probe.py",
      "original": null,
      "patch": null,
      "pristine": null,
      "findings": [
        {
          "code": "DBG101",
          "line": 3,
          "origin": "injected"
        }
      ],
      "not_copied": null,
      "link_resolves_to": null,
      "has_patch": false,
      "has_original": false,
      "no_original": null
    }
  ],
  "dumps": [],
  "partial": false,
  "incomplete": [],
  "complete_with": []
}'''


@pytest.fixture(scope="module")
def taken(tmp_path_factory) -> tuple[Path, Path, Path, dict[str, str]]:
    """(venv, wheels, checkpoint, the CLI's environment): toypkg 1.0, ``take``'s edits, a checkpoint."""
    tmp = tmp_path_factory.mktemp("compat")
    house = build_toypkg(tmp / "house")
    venv = pip_venv(tmp_path_factory, "compat-venv")
    install(venv, house, "toypkg==1.0")
    env = own_env(tmp)
    return venv, house, take(venv, house, tmp / "cp", env), env


def previous_text(venv: Path, house: Path, cp: Path) -> str:
    return fill(PREVIOUS, tokens(json.loads((cp / INDEX).read_text()), venv, house))


def test_the_index_written_today_is_the_previous_versions_byte_for_byte(taken):
    venv, house, cp, _ = taken
    assert (cp / INDEX).read_text() == previous_text(venv, house, cp)


def test_a_previous_versions_index_loads_into_the_enums_and_reapplies(taken, tmp_path):
    venv, house, cp, env = taken
    site = site_of(venv)
    old = tmp_path / "old-cp"
    shutil.copytree(cp, old, symlinks=True)
    (old / INDEX).write_text(previous_text(venv, house, cp))

    index = load_index(str(old))
    by_name = {f.relpath.rsplit("/", 1)[-1]: f for f in index.files}
    assert (by_name["model.py"].kind, by_name["model.py"].scope, by_name["model.py"].type) == \
        (DriftKind.MODIFIED, Scope.PACKAGE, EntryType.FILE)
    assert (by_name["util.py"].kind, by_name["util.py"].type) == (DriftKind.MISSING, EntryType.MISSING)
    assert (by_name["alias.py"].kind, by_name["alias.py"].scope, by_name["alias.py"].type) == \
        (DriftKind.ADDED, Scope.ENVIRONMENT, EntryType.SYMLINK)
    assert all(f.in_env for f in index.files)

    # A reinstall wipes the edit and brings util.py back; reapply from the old index redoes both.
    install(venv, house, "--force-reinstall", "--no-deps", "toypkg==1.0")
    assert (site / MODEL).read_text() == VERSIONS["1.0"][MODEL]
    assert (site / UTIL).exists()
    proc = cli("reapply", str(old), "--venv", str(venv), "--yes", "--format", "json", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    statuses = {f["relpath"].rsplit("/", 1)[-1]: (f["action"], f["status"]) for f in report["files"]}
    assert statuses["model.py"] == ("apply", "applied"), report
    assert statuses["util.py"] == ("delete", "applied"), report
    assert (site / MODEL).read_text() == edit_kept(VERSIONS["1.0"][MODEL])  # debug code left out
    assert not (site / UTIL).exists()


@pytest.mark.parametrize(("field", "value", "said"), [
    ("kind", "teleported", "files[0].kind: Input should be 'modified', "),
    ("scope", "galaxy", "files[0].scope: Input should be 'package', "),
    ("type", "wormhole", "files[0].type: Input should be 'file', "),
    ("area", "../../etc", "files[0].area: String should match pattern "),
    ("area", "model-x", "files[0].area: String should match pattern "),
])
def test_a_value_outside_a_closed_set_is_one_clear_error(taken, tmp_path, field, value, said):
    venv, house, cp, env = taken
    bad = tmp_path / "bad-cp"
    shutil.copytree(cp, bad, symlinks=True)
    index = json.loads(previous_text(venv, house, cp))
    index["files"][0][field] = value
    (bad / INDEX).write_text(json.dumps(index, indent=2))

    with pytest.raises(ConfigError) as caught:
        load_index(str(bad))
    message = str(caught.value)
    assert message.startswith(f"{bad / INDEX}: not a valid checkpoint index ({said}"), message
    assert repr(value) in message and "\n" not in message

    proc = cli("reapply", str(bad), "--venv", str(venv), env=env)  # cli(): never a traceback
    assert proc.returncode != 0 and said in proc.stderr, proc.stdout + proc.stderr
