"""The index carries drift, so a venv with a few drifted files re-audits as fast as a
clean one, and never reports anything a ``--no-cache`` audit would not.

Each test drifts a copy of a real pip venv, lets an audit write the index, then audits it warm
and with no cache at all, and compares the whole reports (timing fields aside). A hashed file
whose signature changed since is checked again against its RECORD row, the rest carried
("by_index"); a changed directory, RECORD or anything odd takes the full audit."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

import driftscan.api as api
from driftscan.caches import statcache as cache_mod
from driftscan.environment.fast import cleanindex
from fixtures import venvs
from fixtures.harness import audit_and_whether_settled, offline


@pytest.fixture
def template(index_template):
    return index_template  # conftest.py: a pip venv with six and requests


@pytest.fixture
def venv(index_venv):
    return index_venv  # conftest.py: a fresh copy of it, racy window shrunk, private cache dir


def site(venv):
    return venvs.site_packages_of(venv)


def audit(venv, **kw):
    """(the report as JSON without its timing fields, whether the index settled it)."""
    report, settled = audit_and_whether_settled(venv, **kw)
    return json.loads(report.model_dump_json(exclude={"generated_at", "duration_seconds"})), settled


def drifts(report):
    return sorted((d["kind"], d["relpath"]) for d in report["drifts"])


def tick():
    time.sleep(0.01)  # timestamps must be able to differ


def drift_a_few_files(venv):
    """A size-changing edit, a same-size edit, a debug block in an added file, a deleted file."""
    s = site(venv)
    with open(s / "six.py", "a") as f:
        f.write("\n_debug_calls = 0\n")
    path = s / "requests" / "api.py"
    st = path.stat()
    path.write_bytes(path.read_bytes().replace(b"import", b"imporT", 1))
    # Dated two seconds past its install: an edit in the very second pip compiled its pyc would
    # leave that pyc stale (a drift of its own, tested below).
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
    (s / "requests" / "patched_by_hand.py").write_text(
        "import pdb\n\n\ndef f(x):\n    breakpoint()\n    print(x)\n    return x\n")
    (s / "requests" / "help.py").unlink()


def carried(venv):
    """Drift, the full audit that writes the index, then one the index settles."""
    drift_a_few_files(venv)
    first, by_index = audit(venv)
    assert not by_index and len(first["drifts"]) == 4
    again, by_index = audit(venv)
    assert by_index, "the index should carry this drift"
    assert again == first
    return first


def test_an_unchanged_drifted_venv_is_settled_with_the_no_cache_report(venv):
    warm = carried(venv)
    cold, by_index = audit(venv, use_cache=False)
    assert not by_index
    assert warm == cold
    assert {"modified", "added", "missing"} == {k for k, _ in drifts(warm)}
    assert any(d["findings"] for d in warm["drifts"]), "findings on the drifted files, as a full audit gives"


def test_a_file_changed_after_the_index_was_written_is_caught(venv):
    carried(venv)
    tick()
    path = site(venv) / "requests" / "models.py"  # clean until now: same size, a later mtime second
    st = path.stat()
    path.write_bytes(path.read_bytes().replace(b"import", b"imporT", 1))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
    warm, by_index = audit(venv)
    assert by_index  # re-checked against its row, the rest carried
    assert ("modified", "requests/models.py") in drifts(warm)
    assert warm == audit(venv, use_cache=False)[0]


def test_an_edit_that_keeps_the_pyc_valid_is_left_to_the_full_audit(venv):
    """Same size, mtime restored: the pyc pip compiled still matches the header Python checks, so
    Python runs the old code. The index cannot tell: the full audit reports the stale pyc."""
    carried(venv)
    tick()
    path = site(venv) / "requests" / "models.py"
    st = path.stat()
    path.write_bytes(path.read_bytes().replace(b"import", b"imporT", 1))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    warm, by_index = audit(venv)
    assert not by_index
    assert ("modified", "requests/models.py") in drifts(warm)
    assert any(k == "stale-bytecode" and p.startswith("requests/__pycache__/models.") for k, p in drifts(warm))
    assert warm == audit(venv, use_cache=False)[0]


def test_past_the_recheck_limit_the_full_audit_decides(venv, monkeypatch):
    carried(venv)
    tick()
    monkeypatch.setattr(cleanindex, "RECHECK_MAX", 1)
    for name in ("models.py", "sessions.py"):
        path = site(venv) / "requests" / name
        path.write_bytes(path.read_bytes().replace(b"import", b"imporT", 1))
    warm, by_index = audit(venv)
    assert not by_index
    assert {("modified", "requests/models.py"), ("modified", "requests/sessions.py")} <= set(drifts(warm))
    assert warm == audit(venv, use_cache=False)[0]


def test_a_clean_venv_edited_is_rechecked_from_the_clean_index(venv):
    """The index of a clean audit (no drift carried, no list of owned paths) serves too."""
    audit(venv)
    assert audit(venv) == audit(venv, use_cache=False)[:1] + (True,)
    tick()
    path = site(venv) / "six.py"
    st = path.stat()
    path.write_bytes(path.read_bytes().replace(b"import", b"imporT", 1))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))  # not its pyc's second
    warm, by_index = audit(venv)
    assert by_index and drifts(warm) == [("modified", "six.py")]
    assert warm == audit(venv, use_cache=False)[0]


def test_a_drifted_file_changed_again_is_reported_as_it_is_now(venv):
    carried(venv)
    tick()
    path = site(venv) / "six.py"  # already modified: edited again, same size, mtime restored
    st = path.stat()
    path.write_bytes(path.read_bytes().replace(b"_debug_calls", b"_debug_CALLS"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    warm, by_index = audit(venv)
    assert by_index
    assert warm == audit(venv, use_cache=False)[0]
    again, by_index = audit(venv)
    assert by_index and again == warm


@pytest.mark.parametrize("what", ["modified", "added", "missing", "all"])
def test_a_reverted_file_is_clean_again(venv, template, what):
    carried(venv)
    tick()
    s, original = site(venv), site(template)
    if what in ("modified", "all"):
        shutil.copy2(original / "six.py", s / "six.py")
    if what in ("added", "all"):
        (s / "requests" / "patched_by_hand.py").unlink()
    if what in ("missing", "all"):
        shutil.copy2(original / "requests" / "help.py", s / "requests" / "help.py")
    if what == "all":
        shutil.copy2(original / "requests" / "api.py", s / "requests" / "api.py")
    warm, by_index = audit(venv)
    assert by_index == (what == "modified")  # an added or a missing file changes its directory
    cold = audit(venv, use_cache=False)[0]
    assert warm == cold
    gone = {"modified": ("modified", "six.py"), "added": ("added", "requests/patched_by_hand.py"),
            "missing": ("missing", "requests/help.py")}
    if what == "all":
        assert warm["drifts"] == []
        assert audit(venv)[1] is True  # and the clean index settles the next one
    else:
        assert gone[what] not in drifts(warm) and len(warm["drifts"]) == 3


def test_an_added_file_that_grows_is_reported_as_it_is_now(venv):
    carried(venv)
    tick()
    with open(site(venv) / "requests" / "patched_by_hand.py", "a") as f:
        f.write("import pdb; pdb.set_trace()\n")
    warm, by_index = audit(venv)
    assert by_index  # its signature moved, its directory's did not
    assert warm == audit(venv, use_cache=False)[0]


def test_a_file_added_beside_carried_drift_is_caught(venv):
    carried(venv)
    tick()
    (site(venv) / "requests" / "second_patch.py").write_text("Y = 2\n")
    warm, by_index = audit(venv)
    assert not by_index
    assert ("added", "requests/second_patch.py") in drifts(warm)
    assert warm == audit(venv, use_cache=False)[0]


def test_the_owned_paths_are_those_of_a_full_audit_even_without_their_file(venv, tmp_path):
    """The dump search asks which paths the RECORDs own: the list beside the index, or (that
    file gone or foreign) the RECORDs read again: both the set a full audit computes."""
    carried(venv)
    full = api.run(str(venv), use_cache=False).verification.referenced
    settled = api.run(str(venv), need=api.Need.REPORT)
    assert isinstance(settled.verification.referenced, cleanindex.OwnedPaths)
    assert set(settled.verification.referenced) == set(full) and len(full) > 100
    for owned in (tmp_path / "cache" / "statcache").glob("*.owned.bin"):
        owned.write_bytes(b"driftscan-owned-1\n" + b"\0" * 40)
    settled = api.run(str(venv), need=api.Need.REPORT)
    assert isinstance(settled.verification.referenced, cleanindex.OwnedPaths)
    assert set(settled.verification.referenced) == set(full)


def test_the_owned_list_is_handed_to_the_cache_beside_the_index_not_inside_it(venv, monkeypatch):
    """An index that carries drift holds the digest of the paths the RECORDs own; the list itself
    goes to the stat cache as its own value, and no key of the index holds it."""
    import xxhash

    given = []
    real = cache_mod.StatCache.set_clean_index

    def spy(self, index, owned=None):
        given.append((index, owned))
        return real(self, index, owned)

    monkeypatch.setattr(cache_mod.StatCache, "set_clean_index", spy)
    drift_a_few_files(venv)
    run = api.run(str(venv))
    index, owned = given[-1]
    assert index is not None and isinstance(owned, bytes)
    assert index["owned"] == xxhash.xxh3_128_digest(owned)
    assert {os.fsdecode(p) for p in owned.split(b"\0")} == set(run.verification.referenced)
    assert all(v is not owned and v != owned for v in index.values())


def test_a_drift_the_index_cannot_sign_is_not_carried(venv):
    """A symlink in place of a file (a type change) always takes the full path."""
    path = site(venv) / "requests" / "help.py"
    copy = path.with_name("help_copy.py")
    shutil.copy(path, copy)
    path.unlink()
    path.symlink_to(copy.name)
    first, _ = audit(venv)
    again, by_index = audit(venv)
    assert not by_index and again == first


def test_the_cli_exit_status_and_json_equal_a_no_cache_audit(venv, tmp_path):
    drift_a_few_files(venv)
    env = {**os.environ, "DRIFTSCAN_CACHE_DIR": str(tmp_path / "cli-cache")}
    time.sleep(2.2)  # the real racy window (2 s): the CLI is a process of its own

    def cli(*extra):
        done = subprocess.run([sys.executable, "-m", "driftscan", "audit", "--venv", str(venv), "--format", "json",
                               *extra], capture_output=True, text=True, env=env)
        report = json.loads(done.stdout)
        for key in ("generated_at", "duration_seconds"):
            report.pop(key)
        return done.returncode, report

    cold = cli("--no-cache")
    cli()  # writes the index, drift carried
    names = os.listdir(tmp_path / "cli-cache" / "statcache")
    assert any(n.endswith(".clean.bin") for n in names) and any(n.endswith(".owned.bin") for n in names)
    warm = cli()
    assert warm == cold and cold[0] == 1


def test_a_path_two_records_list_is_never_rechecked_alone(venv):
    """A file two distributions both list: its verdict depends on both rows (clobbered or not),
    so a change to it takes the full audit."""
    s = site(venv)
    six_record = next(s.glob("six-*.dist-info")) / "RECORD"
    row = next(line for line in six_record.read_text().splitlines() if line.startswith("six.py,"))
    requests_record = next(s.glob("requests-*.dist-info")) / "RECORD"
    requests_record.write_text(requests_record.read_text() + row + "\n")
    first, _ = audit(venv)
    assert first["drifts"] == []
    assert audit(venv)[1] is True
    tick()
    path = s / "six.py"
    path.write_bytes(path.read_bytes().replace(b"import", b"imporT", 1))
    warm, by_index = audit(venv)
    assert not by_index
    assert warm == audit(venv, use_cache=False)[0] and len(warm["drifts"]) == 2
