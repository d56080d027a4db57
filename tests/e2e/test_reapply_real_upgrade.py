"""``reapply`` across a real upgrade of a real package: six 1.16.0 → 1.17.0 from the package index.

Between the two releases six changed three places of ``six.py``: the ``UserDict`` move (one line),
and the ``URLopener``/``FancyURLopener`` moves (taken out of the list, added back under a
``sys.version_info`` check). The user's patches on 1.16.0:

- a clean fix in ``_import_module`` (far from every upstream change), in the same hunk as a
  ``json.dump`` of the module name to /tmp (injected debug code);
- the very ``URLopener`` change 1.17.0 made (already upstream);
- in the second scenario, another edit of the ``UserDict`` line (a conflict with 1.17.0).

After ``pip install --upgrade six==1.17.0``, ``driftscan reapply CP --yes`` (no flag) must write
1.17.0 plus the clean fix, without the debug code; with the conflict it writes nothing and exits 1
(``--partial``: the clean hunks go in, the conflicting one to the .rej).
"""

from __future__ import annotations

import ast
import sys
import zipfile
from pathlib import Path

import pytest

from fixtures import venvs
from fixtures.upgrades import cli, own_env, pip_venv, reapply, site_of
from tests.conftest import skip_or_fail_without_network

pytestmark = pytest.mark.network

USERDICT = '    MovedAttribute("UserDict", "UserDict", "collections"),\n'
USERDICT_MINE = '    MovedAttribute("UserDict", "UserDict", "collections", "UserDict", "UserDict"),\n'
IMPORT = '    __import__(name)\n    return sys.modules[name]\n'
IMPORT_FIXED = '    __import__(name)\n    return sys.modules.get(name) or sys.modules[name.rpartition(".")[0]]\n'
IMPORT_DEBUG = ('    __import__(name)\n    import json\n    json.dump([name], open("/tmp/six_imports.json", "a"))\n'
                '    return sys.modules.get(name) or sys.modules[name.rpartition(".")[0]]\n')
OPENERS = ('    MovedAttribute("URLopener", "urllib", "urllib.request"),\n'
           '    MovedAttribute("FancyURLopener", "urllib", "urllib.request"),\n')
AFTER_LIST = '    MovedAttribute("parse_keqv_list", "urllib2", "urllib.request"),\n]\n'
OPENERS_117 = AFTER_LIST + '''if sys.version_info[:2] < (3, 14):
    _urllib_request_moved_attributes.extend(
        [
            MovedAttribute("URLopener", "urllib", "urllib.request"),
            MovedAttribute("FancyURLopener", "urllib", "urllib.request"),
        ]
    )
'''


def sub(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


def with_upstream_openers(text: str) -> str:
    return sub(sub(text, OPENERS, ""), AFTER_LIST, OPENERS_117)


@pytest.fixture(scope="module")
def releases(tmp_path_factory) -> dict[str, Path]:
    dest = tmp_path_factory.mktemp("six-releases")
    try:
        venvs.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
                   "--dest", str(dest), "six==1.16.0"])
        venvs.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
                   "--dest", str(dest), "six==1.17.0"])
    except venvs.InstallError as exc:
        skip_or_fail_without_network(f"package index unreachable: {exc}")
    return {v: next(dest.glob(f"six-{v}-*.whl")) for v in ("1.16.0", "1.17.0")}


def member(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as z:
        return z.read("six.py").decode("utf-8")




def patched_then_upgraded(tmp_path, tmp_path_factory, releases, edit) -> tuple[Path, Path, dict[str, str]]:
    """A pip venv with six 1.16.0 edited by ``edit``, checkpointed, then upgraded to 1.17.0."""
    env = own_env(tmp_path)
    venv = pip_venv(tmp_path_factory, "six-upgrade")
    venvs.pip_install(venv, "--no-cache-dir", "--no-index", str(releases["1.16.0"]))
    six = site_of(venv) / "six.py"
    six.write_text(edit(six.read_text(encoding="utf-8")), encoding="utf-8")
    cp = tmp_path / "cp"
    proc = cli("checkpoint", "--venv", str(venv), "--wheels", str(releases["1.16.0"].parent), "-o", str(cp), env=env)
    assert proc.returncode in (0, 1), proc.stderr
    venvs.pip_install(venv, "--no-cache-dir", "--no-index", "--upgrade", str(releases["1.17.0"]))
    assert six.read_text(encoding="utf-8") == member(releases["1.17.0"])
    return six, cp, env




def six_item(cp: Path, env: dict[str, str], *args: str) -> tuple[int, dict]:
    code, report = reapply(str(cp), *args, env=env)
    return code, next(f for f in report["files"] if f["relpath"].endswith("six.py"))


def test_a_clean_and_an_already_upstream_fix_merge_onto_the_new_release(tmp_path, tmp_path_factory, releases):
    six, cp, env = patched_then_upgraded(
        tmp_path, tmp_path_factory, releases, lambda t: with_upstream_openers(sub(t, IMPORT, IMPORT_DEBUG)))
    new = member(releases["1.17.0"])
    code, item = six_item(cp, env)
    assert code == 0 and item["action"] == "merge" and item["status"] == "planned", item
    assert six.read_text(encoding="utf-8") == new  # a dry run
    code, item = six_item(cp, env, "--yes")
    assert code == 0 and item["status"] == "applied", item
    got = six.read_text(encoding="utf-8")
    assert got == sub(new, IMPORT, IMPORT_FIXED)  # the fix, 1.17.0's openers once, no debug code
    ast.parse(got)
    code, item = six_item(cp, env, "--yes")
    assert code == 0 and item["status"] == "already", item
    assert six.read_text(encoding="utf-8") == got


def test_a_conflict_writes_nothing_and_partial_writes_the_clean_hunks(tmp_path, tmp_path_factory, releases):
    six, cp, env = patched_then_upgraded(
        tmp_path, tmp_path_factory, releases, lambda t: sub(sub(t, USERDICT, USERDICT_MINE), IMPORT, IMPORT_DEBUG))
    new = member(releases["1.17.0"])
    code, item = six_item(cp, env, "--yes")
    assert code & 1 and item["status"] == "conflict" and item["conflicts"], item
    assert six.read_text(encoding="utf-8") == new
    code, item = six_item(cp, env, "--yes", "--partial")
    assert code & 1 and item["status"] == "partial" and item["rej"], item
    assert six.read_text(encoding="utf-8") == sub(new, IMPORT, IMPORT_FIXED)
    rej = Path(item["rej"]).read_text(encoding="utf-8")
    assert "UserDict" in rej and "json.dump" not in rej
