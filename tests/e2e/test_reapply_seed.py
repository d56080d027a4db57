"""``reapply`` (injected debug code left out, the default) on seed-like patches, across real reinstalls with pip and uv.

``seedpkg`` has four edited files, as the seed's vLLM had: a debug-only file (a counter, class-level
one-shot flags, a ``torch.save`` to /tmp), a fix-only file (two hunks: a name table and a scale-name
fix), a fix with a separate debug hunk, and a fix sharing one hunk with debug code (two
``pop("kv_cache_scheme", None)`` lines next to a ``json.dump`` to /tmp, plus ``import json`` /
``import os`` only the debug code used); one package file is deleted and one renamed to
``.disabled``. Checkpoints are taken with originals (``--wheels``) and without (a uv venv edited
in place through its hard links, so uv's cache copy is edited too, and no wheels). Then a real
reinstall from the wheel file and the real ``driftscan reapply`` command.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from driftscan import api
from fixtures import venvs
from fixtures.upgrades import by_rel, cli, install, own_env, pip_venv, reapply, site_of
from fixtures.wheels import build_wheel

EXIT_DRIFT, EXIT_INCOMPLETE = 1, 2
ATTN, WEIGHTS, LOADER, CONFIG = "seedpkg/attention.py", "seedpkg/weights.py", "seedpkg/loader.py", "seedpkg/config.py"
LEGACY, WARMUP = "seedpkg/legacy.py", "seedpkg/warmup_cache.py"
DISABLED = WARMUP + ".disabled"
PADDING = "".join(f"\n\ndef helper_{i}():\n    return {i}\n" for i in range(4))


def attention(extra: str = 'f"heads={self.heads}"') -> str:
    return f'''"""Attention."""

import torch


class Attention:
    heads = 4

    def __init__(self, scale):
        self.scale = scale

    def forward(self, x):
        y = x * self.scale
        return y
{PADDING}

    def extra_repr(self):
        return {extra}
'''


def weights(scale: str = 'name.replace(".scale", ".weight_scale")', tail: str = '"tail"') -> str:
    return f'''"""Weight names."""

NAME_TABLE = {{
    "attn.q": "q_proj",
    "attn.k": "k_proj",
}}
{PADDING}

def scale_name(name):
    return {scale}
{PADDING}

def tail():
    return {tail}
'''


def loader(tail: str = '"tail"') -> str:
    return f'''"""Loader."""

import torch


def load(path):
    state = torch.load(path)
    return state
{PADDING}

def rename(name):
    return name
{PADDING}

def tail():
    return {tail}
'''


def config(tail: str = '"tail"') -> str:
    return f'''"""Config."""


def load(cfg):
    quantization_config = cfg.get("quantization_config") or {{}}
    return cfg
{PADDING}

def tail():
    return {tail}
'''


def version_files(version: str) -> dict[str, str]:
    tail = {"1.0": '"tail"', "1.1": '"tail 1.1"', "1.2": '"tail 1.1"'}[version]
    scale = 'name.replace(".scale", ".weight_scale")' if version != "1.2" else \
        'name.replace(".scale", ".weight_scale").lower()'
    return {"seedpkg/__init__.py": f"__version__ = {version!r}\n",
            ATTN: attention('f"heads={self.heads}"' if version == "1.0" else 'f"heads={self.heads} {self.scale}"'),
            WEIGHTS: weights(scale, tail), LOADER: loader(tail), CONFIG: config(tail),
            LEGACY: "OLD = True\n", WARMUP: "def warm():\n    return 'cache'\n"}


def _sub(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


# The user's edits, applied by exact replacement so the expected result on any version is known.
def edit_attention_debug(text: str) -> str:
    text = _sub(text, "    heads = 4\n", "    heads = 4\n    _nomla_debug = 0\n    _dumped_once = False\n")
    text = _sub(text, "        self.scale = scale\n", "        self.scale = scale\n        self._nomla_debug = 0\n")
    return _sub(text, "        y = x * self.scale\n", '''        self._nomla_debug += 1
        y = x * self.scale
        if not Attention._dumped_once and x.shape[0] == 7:
            torch.save(y, f"/tmp/nomla_{self._nomla_debug}.pt")
            Attention._dumped_once = True
''')


def fix_weights(text: str) -> str:
    text = _sub(text, '    "attn.k": "k_proj",\n', '    "attn.k": "k_proj",\n    "attn.kv_a": "kv_a_proj_with_mqa",\n')
    return _sub(text, '    return name.replace(".scale", ".weight_scale")',
                '    return name.replace(".k_scale", ".attn.k_scale").replace(".scale", ".weight_scale")')


def fix_loader(text: str) -> str:
    return _sub(text, "    state = torch.load(path)\n", '    state = torch.load(path, map_location="cpu")\n')


def debug_loader(text: str) -> str:
    return _sub(text, "def rename(name):\n    return name\n", '''def rename(name):
    if name.endswith(".weight"):
        torch.save(name, "/tmp/names.pt")
    return name
''')


POPS = '    quantization_config.pop("kv_cache_scheme", None)\n    cfg.pop("kv_cache_scheme", None)\n'


def fix_config(text: str) -> str:
    """What reapply must keep of the one-hunk edit: the two pop lines."""
    return _sub(text, '    quantization_config = cfg.get("quantization_config") or {}\n',
                '    quantization_config = cfg.get("quantization_config") or {}\n' + POPS)


def edit_config(text: str) -> str:
    text = _sub(text, '"""Config."""\n', '"""Config."""\nimport json\nimport os\n')
    return _sub(text, '    quantization_config = cfg.get("quantization_config") or {}\n', '''\
    quantization_config = cfg.get("quantization_config") or {}
    quantization_config.pop("kv_cache_scheme", None)
    json.dump(cfg, open("/tmp/cfg.json", "w"))
    cfg.pop("kv_cache_scheme", None)
    with open(os.path.join("/tmp", "cfg.txt"), "w") as f:
        f.write(repr(cfg))
''')


EDITS = {ATTN: edit_attention_debug, WEIGHTS: fix_weights, LOADER: lambda t: debug_loader(fix_loader(t)),
         CONFIG: edit_config}
KEPT = {ATTN: lambda t: t, WEIGHTS: fix_weights, LOADER: fix_loader, CONFIG: fix_config}


def expected(version: str) -> dict[str, str]:
    files = version_files(version)
    return {rel: KEPT[rel](files[rel]) for rel in EDITS}


@pytest.fixture(scope="module")
def house(tmp_path_factory) -> dict[str, Path]:
    dest = tmp_path_factory.mktemp("seed-wheels")
    return {v: build_wheel(dest, "seedpkg", v, version_files(v)) for v in ("1.0", "1.1", "1.2")}


def edit_in_place(site: Path) -> None:
    """Edits the way an editor that rewrites in place does (the inode stays: through a uv hard
    link the cache copy changes too), one deletion and one rename."""
    for rel, edit in EDITS.items():
        path = site / rel
        text = path.read_text()
        with open(path, "r+") as f:
            f.truncate(0)
            f.write(edit(text))
    (site / LEGACY).unlink()
    os.rename(site / WARMUP, site / DISABLED)








def contents(site: Path) -> dict[str, str | None]:
    return {rel: (site / rel).read_text() if (site / rel).exists() else None
            for rel in [*EDITS, LEGACY, WARMUP, DISABLED]}


def assert_no_debug(site: Path) -> None:
    for rel in EDITS:
        text = (site / rel).read_text()
        ast.parse(text)  # every changed file parses
        for bad in ("torch.save", "/tmp", "_nomla_debug", "_dumped_once", "json.dump", "import json", "import os"):
            assert bad not in text, (rel, bad, text)


def assert_result(site: Path, version: str) -> None:
    got = contents(site)
    assert {rel: got[rel] for rel in EDITS} == expected(version)
    assert got[LEGACY] is None and got[WARMUP] is None  # the deletion and the rename, reapplied
    assert got[DISABLED] == version_files("1.0")[WARMUP]
    assert_no_debug(site)


def test_pip_checkpoint_with_originals_reinstall_from_the_wheel_then_reapply_twice(tmp_path, tmp_path_factory,
                                                                                    house):
    env = own_env(tmp_path)
    venv = pip_venv(tmp_path_factory, "seed-pip")
    install(venv, house["1.0"].parent, "seedpkg==1.0")
    site = site_of(venv)
    edit_in_place(site)
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        written = api.checkpoint(str(tmp_path / "cp"), str(venv), wheels=[str(house["1.0"].parent)])
    cp = tmp_path / "cp"
    assert all(f.original for f in written.index.files if f.kind == "modified")
    venvs.pip_install(venv, "--no-cache-dir", "--no-index", "--force-reinstall", "--no-deps", str(house["1.0"]))
    assert (site / LEGACY).exists() and (site / WARMUP).exists() and (site / DISABLED).exists()
    for rel in EDITS:
        assert (site / rel).read_text() == version_files("1.0")[rel]

    # The dry run: the resulting diff of each file, the deletion and the rename said, nothing written.
    before = contents(site)
    code, report = reapply(str(cp), "--exclude-findings", env=env)  # the default, still accepted
    assert code == 0, report
    files = by_rel(report)
    assert contents(site) == before
    cfg = files[CONFIG]
    assert cfg["status"] == "planned" and cfg["diff"], cfg
    assert '+    cfg.pop("kv_cache_scheme", None)' in cfg["diff"] and "json.dump" not in cfg["diff"]
    removed = {r["text"] for r in cfg["removed"]}
    assert {"import json", "import os", 'json.dump(cfg, open("/tmp/cfg.json", "w"))',
            'with open(os.path.join("/tmp", "cfg.txt"), "w") as f:'} <= removed, cfg["removed"]
    assert cfg["kept"], cfg
    assert {f["origin"] for f in cfg["findings"]} == {"injected"}
    assert files[ATTN]["status"] == "unchanged"  # debug only: nothing comes back
    assert files[LEGACY]["action"] == "delete" and files[LEGACY]["status"] == "planned"
    assert files[WARMUP]["action"] == "delete" and "renamed to" in files[WARMUP]["reason"]
    assert files[DISABLED]["action"] == "recreate" and "renamed from" in files[DISABLED]["reason"]
    text = cli("reapply", str(cp), env=env).stdout
    assert '+    quantization_config.pop("kv_cache_scheme", None)' in text and "would delete" in text

    code, report = reapply(str(cp), "--yes", env=env)
    assert code == 0, report
    assert_result(site, "1.0")
    first = contents(site)

    code, report = reapply(str(cp), "--yes", env=env)
    assert code == 0, report
    assert contents(site) == first
    statuses = {rel: f["status"] for rel, f in by_rel(report).items()}
    assert statuses == {ATTN: "unchanged", WEIGHTS: "already", LOADER: "already", CONFIG: "already",
                        LEGACY: "already", WARMUP: "already", DISABLED: "already"}, statuses

    # A checkpoint whose findings were tampered with (all "upstream", or none): the rules decide.
    forged = tmp_path / "forged"
    shutil.copytree(cp, forged)
    index = json.loads((forged / "checkpoint.json").read_text())
    for i, f in enumerate(index["files"]):
        f["findings"] = [] if i % 2 else [{**x, "origin": "upstream"} for x in f["findings"]]
    (forged / "checkpoint.json").write_text(json.dumps(index))
    venvs.pip_install(venv, "--no-cache-dir", "--no-index", "--force-reinstall", "--no-deps", str(house["1.0"]))
    code, report = reapply(str(forged), "--yes", env=env)
    assert code == 0, report
    assert_result(site, "1.0")


def test_uv_in_place_edit_without_originals_then_reinstall_from_the_wheel(tmp_path, house):
    env = own_env(tmp_path)
    cache = tmp_path / "uv-cache"
    venv = venvs.make_uv_venv(tmp_path / "vuv", cache)
    venvs.uv_install(venv, cache, "--no-index", "--find-links", str(house["1.0"].parent), "seedpkg==1.0")
    site = site_of(venv)
    assert os.stat(site / CONFIG).st_nlink >= 2  # linked from uv's cache
    edit_in_place(site)
    cached = list((cache / "archive-v0").glob(f"*/{CONFIG}"))
    assert cached and all(p.read_text() == edit_config(version_files("1.0")[CONFIG]) for p in cached)
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        written = api.checkpoint(str(tmp_path / "cp"), str(venv), uv_cache=str(cache))
    modified = [f for f in written.index.files if f.kind == "modified"]
    assert modified and all(f.original is None and f.patch is None for f in modified)
    assert all(x.origin is None for f in modified for x in f.findings)  # what fooled reapply before

    venvs.uv_install(venv, cache, "--no-index", "--reinstall", "--no-deps", str(house["1.0"]))
    for rel in EDITS:
        assert (site / rel).read_text() == version_files("1.0")[rel], rel  # the wheel file wiped the edits

    code, report = reapply(str(tmp_path / "cp"), "--yes", env=env)
    assert code == 0, report
    assert "the installed file" in by_rel(report)[CONFIG]["original"]
    assert_result(site, "1.0")
    first = contents(site)
    code, report = reapply(str(tmp_path / "cp"), "--yes", env=env)
    assert code == 0, report
    assert contents(site) == first
    assert by_rel(report)[CONFIG]["status"] == "already" and by_rel(report)[WEIGHTS]["status"] == "already"


def test_no_original_is_refused_then_found_in_wheels_and_merged_onto_an_upgrade(tmp_path, tmp_path_factory, house):
    env = own_env(tmp_path)
    venv = pip_venv(tmp_path_factory, "seed-refuse")
    wheels = str(house["1.0"].parent)
    install(venv, wheels, "seedpkg==1.0")
    site = site_of(venv)
    edit_in_place(site)
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        written = api.checkpoint(str(tmp_path / "cp"), str(venv))  # no --wheels, empty caches: no original
    assert all(f.original is None for f in written.index.files if f.kind == "modified")
    install(venv, wheels, "--upgrade", "seedpkg==1.1")
    upgraded = contents(site)

    code, report = reapply(str(tmp_path / "cp"), "--yes", env=env)
    assert code & EXIT_INCOMPLETE, report
    item = by_rel(report)[CONFIG]
    assert item["status"] == "refused" and "cannot be decided" in item["reason"] and "--wheels" in item["reason"]
    for rel in EDITS:
        assert (site / rel).read_text() == upgraded[rel], rel  # nothing written to a refused file

    code, report = reapply(str(tmp_path / "cp"), "--wheels", wheels, "--yes", env=env)
    assert code == 0, report
    assert by_rel(report)[CONFIG]["action"] == "merge" and by_rel(report)[CONFIG]["status"] == "applied"
    assert "--wheels" in by_rel(report)[CONFIG]["original"]
    assert_result(site, "1.1")
    first = contents(site)
    # Twice, and without --wheels: the kept original and the merge say "already", no false conflict.
    code, report = reapply(str(tmp_path / "cp"), "--yes", env=env)
    assert code == 0, report
    assert contents(site) == first
    assert {by_rel(report)[r]["status"] for r in (WEIGHTS, LOADER, CONFIG)} == {"already"}
    # The original found in --wheels was kept in driftscan's cache, named by its verified digest.
    original = version_files("1.0")[CONFIG].encode()
    kept = Path(env["DRIFTSCAN_CACHE_DIR"]) / "originals" / f"sha256-{hashlib.sha256(original).hexdigest()}"
    assert kept.read_bytes() == original
    # Without the ledger of what reapply wrote, the merge of the wanted changes onto the merged
    # file is a no-op: still "already", no false conflict.
    shutil.rmtree(Path(env["DRIFTSCAN_CACHE_DIR"]) / "reapply")
    code, report = reapply(str(tmp_path / "cp"), "--yes", env=env)
    assert code == 0, report
    assert {by_rel(report)[r]["status"] for r in (WEIGHTS, LOADER, CONFIG)} == {"already"}, report
    assert "kept from an earlier run" in by_rel(report)[CONFIG]["original"]
    assert contents(site) == first
    # A kept original that no longer matches its name is not used: the origin is unknown again.
    kept.write_bytes(original + b"# forged\n")
    code, report = reapply(str(tmp_path / "cp"), "--only", by_rel_path(venv, CONFIG), env=env)
    assert code & EXIT_INCOMPLETE and report["files"][0]["status"] == "refused", report


def test_backups_kept_beside_the_edited_files_are_the_originals_for_audit_checkpoint_and_reapply(
        tmp_path, tmp_path_factory, house):
    """`cp x x.bak` (or .orig, ~) before editing, as people do: no --wheels, empty caches, yet the
    audit diffs against the backups, the checkpoint holds them as originals and reapply merges the
    edits onto an upgrade."""
    env = own_env(tmp_path)
    venv = pip_venv(tmp_path_factory, "seed-backups")
    wheels = str(house["1.0"].parent)
    install(venv, wheels, "seedpkg==1.0")
    site = site_of(venv)
    for rel, suffix in zip(EDITS, (".bak", ".orig", "~", ".bak")):
        shutil.copyfile(site / rel, site / f"{rel}{suffix}")
    (site / f"{CONFIG}.bak").write_text("# a backup taken after the edit is no original\n")
    (site / f"{CONFIG}.orig").write_bytes((site / CONFIG).read_bytes())  # the one that is
    edit_in_place(site)

    proc = cli("audit", "--venv", str(venv), "--format", "json", env=env)
    report = json.loads(proc.stdout)
    pristine = next(p for p in report["pristine"] if p["distribution"] == "seedpkg")
    assert pristine["source"] == "backup", pristine
    drifts = {d["relpath"]: d for d in report["drifts"]}
    for rel in EDITS:
        assert drifts[rel]["diff"], rel
        assert drifts[rel]["pristine"]["source"] == "backup"
    assert "a backup of seedpkg/weights.py" in drifts[f"{WEIGHTS}.orig"]["evidence"]
    assert "a backup of" not in drifts[f"{CONFIG}.bak"]["evidence"]  # it does not match: just added

    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        written = api.checkpoint(str(tmp_path / "cp"), str(venv))
    assert all(f.original is not None for f in written.index.files if f.kind == "modified")
    install(venv, wheels, "--upgrade", "seedpkg==1.1")
    for rel in EDITS:  # pip leaves files no RECORD lists: the backups are still there, still 1.0's
        assert (site / f"{rel}{'.orig' if rel in (WEIGHTS, CONFIG) else '.bak' if rel == ATTN else '~'}").exists()
    code, report = reapply(str(tmp_path / "cp"), "--yes", env=env)
    assert code == 0, report
    assert by_rel(report)[CONFIG]["action"] == "merge" and by_rel(report)[CONFIG]["status"] == "applied"
    assert_result(site, "1.1")


def test_partial_applies_the_clean_hunks_and_writes_the_rej_beside_the_checkpoint(tmp_path, tmp_path_factory, house):
    env = own_env(tmp_path)
    venv = pip_venv(tmp_path_factory, "seed-partial")
    wheels = str(house["1.0"].parent)
    install(venv, wheels, "seedpkg==1.0")
    site = site_of(venv)
    edit_in_place(site)
    cp = tmp_path / "cp"
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        api.checkpoint(str(cp), str(venv), wheels=[wheels])
    install(venv, wheels, "--upgrade", "seedpkg==1.2")  # 1.2 changes the scale-name line the fix changes
    now = (site / WEIGHTS).read_text()
    cp_listing = sorted(str(p.relative_to(cp)) for p in cp.rglob("*"))

    code, report = reapply(str(cp), "--only", by_rel_path(venv, WEIGHTS), "--yes", env=env)
    assert code == EXIT_DRIFT, report
    item = report["files"][0]
    assert item["status"] == "conflict" and "--partial would apply the 1 clean hunk" in item["reason"], item
    assert (site / WEIGHTS).read_text() == now
    assert not Path(str(cp) + ".rej").exists()

    # The dry run exits as --yes does for the same .rej (bit 1), and names it.
    code, report = reapply(str(cp), "--partial", env=env)
    assert code == EXIT_DRIFT, report
    assert by_rel(report)[WEIGHTS]["status"] == "planned" and by_rel(report)[WEIGHTS]["rej"], report
    assert not Path(str(cp) + ".rej").exists()
    code, report = reapply(str(cp), "--partial", "--yes", env=env)
    assert code == EXIT_DRIFT, report
    item = by_rel(report)[WEIGHTS]
    assert item["status"] == "partial" and item["rej"], item
    rej = Path(item["rej"])
    assert rej == Path(str(cp) + ".rej") / (by_rel_path(venv, WEIGHTS) + ".rej")
    assert ".attn.k_scale" in rej.read_text() and rej.read_text().startswith("--- ")
    text = (site / WEIGHTS).read_text()
    assert '"attn.kv_a": "kv_a_proj_with_mqa"' in text  # the clean hunk
    assert ".lower()" in text and ".attn.k_scale" not in text  # 1.2's line kept, the conflicting hunk not applied
    ast.parse(text)
    assert sorted(str(p.relative_to(cp)) for p in cp.rglob("*")) == cp_listing  # nothing into the checkpoint
    assert not list(Path(venv).rglob("*.rej"))  # nothing into the environment
    # The other files merged cleanly onto 1.2.
    assert (site / CONFIG).read_text() == expected("1.2")[CONFIG]
    # Again: its own partial write recognised (partial, the .rej named), exit 1, nothing rewritten.
    code, report = reapply(str(cp), "--partial", "--yes", env=env)
    assert code == EXIT_DRIFT and by_rel(report)[WEIGHTS]["status"] == "partial", report
    assert by_rel(report)[WEIGHTS]["rej"] == str(rej), report
    assert (site / WEIGHTS).read_text() == text
    assert by_rel(report)[CONFIG]["status"] == "already"
    # Without --partial too, in the text: partly applied, the .rej named, bit 1.
    proc = cli("reapply", str(cp), "--only", by_rel_path(venv, WEIGHTS), env=env)
    assert proc.returncode == EXIT_DRIFT, proc.stdout + proc.stderr
    assert "partly applied" in proc.stdout and str(rej) in proc.stdout, proc.stdout


def by_rel_path(venv: Path, rel: str) -> str:
    return os.path.relpath(site_of(venv) / rel, venv).replace(os.sep, "/")


def test_fetch_downloads_the_old_original_with_pip_once_per_release(tmp_path, tmp_path_factory, house):
    """--fetch: ``pip download`` of the checkpoint's release (here from a local find-links
    directory through pip's own environment settings, so no network), verified and merged; one
    download for the two files that need it."""
    env = own_env(tmp_path)
    venv = pip_venv(tmp_path_factory, "seed-fetch")
    wheels = str(house["1.0"].parent)
    install(venv, wheels, "seedpkg==1.0")
    site = site_of(venv)
    for rel in (CONFIG, WEIGHTS):
        (site / rel).write_text(EDITS[rel]((site / rel).read_text()))
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        api.checkpoint(str(tmp_path / "cp"), str(venv))
    install(venv, wheels, "--upgrade", "seedpkg==1.1")
    code, report = reapply(str(tmp_path / "cp"), "--yes", env=env)
    assert code & EXIT_INCOMPLETE and {f["status"] for f in report["files"]} == {"refused"}, report

    import driftscan.pristine.fetch as fetch_module
    import driftscan.pristine.search as search_module

    calls = []
    real = fetch_module.fetch_candidates

    def counted(*args, **kwargs):
        calls.append(args[0].key)
        return real(*args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        for k, v in {**env, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": wheels}.items():
            mp.setenv(k, v)
        # kept.py calls it through its module; search.py bound it at its import
        for module in (fetch_module, search_module):
            mp.setattr(module, "fetch_candidates", counted)
        result = json.loads(api.reapply(str(tmp_path / "cp"), exclude_findings=True, fetch=True,
                                        yes=True).model_dump_json())
    assert calls == ["seedpkg 1.0"], calls
    files = by_rel(result)
    for rel in (CONFIG, WEIGHTS):
        assert files[rel]["status"] == "applied" and "--fetch" in files[rel]["original"], files[rel]
        # named by its download, not by the temporary wheel removed when the run ends
        assert files[rel]["original"] == "--fetch pip download seedpkg==1.0 from pip's configured index"
        assert (site / rel).read_text() == expected("1.1")[rel]
