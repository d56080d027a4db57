"""uv's cache audited itself: an archive edited through a hard link is found after the venv was
reinstalled clean (from a wheel file, or a new venv), with the exact ``uv cache clean`` line; a clean
cache gives nothing; a hostile archive is reported, never a crash or a hang."""

from __future__ import annotations

import os
import shlex
import subprocess

import pytest

from driftscan import audit
from driftscan.environment.uv.archives import audit_archives
from fixtures import venvs
from fixtures.harness import DEMO_REQS, offline, settle
from fixtures.wheels import record_hash

MARK = "_cache_poisoned = True\n"


def _cache_drifts(report):
    return [d for d in report.drifts if d.kind.value == "cache-modified"]


def _uv(cache, *args):
    return subprocess.run([venvs.uv_bin(), *args], check=True, capture_output=True, text=True,
                          env={**os.environ, **venvs.uv_env(cache)})


@pytest.fixture
def poisoned(tmp_path, wheelhouse):
    """A venv whose six.py was edited in place through uv's hard link, then reinstalled clean from
    the wheel file: the venv is pristine, the cache archive its index names still has the edit."""
    cache = tmp_path / "uv-cache"
    venv = venvs.make_uv_venv(tmp_path / "v", cache)
    venvs.uv_install(venv, cache, *offline(wheelhouse), "six==1.17.0", "click==8.1.8")
    six = venvs.site_packages_of(venv) / "six.py"
    assert six.stat().st_nlink >= 2
    with open(six, "a") as f:  # in place: the archive's copy is this same inode
        f.write(MARK)
    wheel = next(wheelhouse.glob("six-1.17.0-*.whl"))
    venvs.uv_install(venv, cache, "--reinstall", "--no-deps", str(wheel))
    assert MARK not in six.read_text()  # unpacked afresh: the venv is clean again
    return venv, cache


def test_the_edited_archive_is_listed_and_uv_cache_clean_removes_it(poisoned, wheelhouse, tmp_path):
    venv, cache = poisoned
    report = audit(venv=str(venv), uv_cache=str(cache))
    assert [d.kind.value for d in report.drifts] == ["cache-modified"]  # the venv itself is clean
    (drift,) = _cache_drifts(report)
    assert drift.distribution.name == "six" and drift.distribution.version == "1.17.0"
    assert drift.scope.value == "external" and drift.prediction.value == "survives"
    assert [e["path"] for e in drift.actual["edited"]] == ["six.py"]
    assert drift.path.startswith(str(cache / "archive-v0") + "/")
    assert drift.remedy == f"uv cache clean --cache-dir {shlex.quote(str(cache))} six"
    assert "a new venv installed from that source gets the edit" in drift.evidence
    assert drift.actual["index_entries"] and all("/six/1.17.0-" in e for e in drift.actual["index_entries"])

    # What it says is true: a new venv installed from the index source gets the edit back.
    fresh = venvs.make_uv_venv(tmp_path / "fresh", cache)
    venvs.uv_install(fresh, cache, *offline(wheelhouse), "--no-deps", "six==1.17.0")
    assert MARK in (venvs.site_packages_of(fresh) / "six.py").read_text()

    # Without --uv-cache (the cache as uv's default), the archives of the venv's distributions.
    old = os.environ.get("UV_CACHE_DIR")
    os.environ["UV_CACHE_DIR"] = str(cache)
    try:
        assert [d.path for d in _cache_drifts(audit(venv=str(venv)))] == [drift.path]
    finally:
        if old is None:
            del os.environ["UV_CACHE_DIR"]
        else:
            os.environ["UV_CACHE_DIR"] = old

    subprocess.run(drift.remedy, shell=True, check=True, capture_output=True,
                   env={**os.environ, "PATH": f"{os.path.dirname(venvs.uv_bin())}:/usr/bin:/bin"})
    assert not os.path.exists(drift.path)
    assert _cache_drifts(audit(venv=str(venv), uv_cache=str(cache))) == []


def test_a_clean_cache_of_real_packages_gives_no_cache_drift(tmp_path, wheelhouse):
    cache = tmp_path / "uv-cache"
    venv = venvs.make_uv_venv(tmp_path / "v", cache)
    venvs.uv_install(venv, cache, *offline(wheelhouse), *DEMO_REQS)
    found = audit_archives(str(cache))
    assert found.archives >= len(DEMO_REQS) and found.files_checked > 50
    assert found.checks == () and found.errors == ()
    report = audit(venv=str(venv), uv_cache=str(cache))
    assert report.drifts == [] and report.errors == []


def test_a_repeated_audit_of_the_cache_reads_no_content(tmp_path, wheelhouse, monkeypatch):
    from driftscan.caches.statcache import StatCache
    from driftscan.environment import files

    cache = tmp_path / "uv-cache"
    venv = venvs.make_uv_venv(tmp_path / "v", cache)
    venvs.uv_install(venv, cache, *offline(wheelhouse), "six==1.17.0", "click==8.1.8")
    settle(cache)  # older than the stat cache's racy window, so the digests are remembered
    hashed = []
    real = files.digest_fd
    monkeypatch.setattr(files, "digest_fd", lambda fd, algorithm, size: hashed.append(size) or real(fd, algorithm, size))
    stats = StatCache(str(tmp_path / "stat.bin"))
    first = audit_archives(str(cache), stat_cache=stats)
    stats.save()
    cold = len(hashed)
    second = audit_archives(str(cache), stat_cache=StatCache(str(tmp_path / "stat.bin")))
    assert first.files_checked == second.files_checked > 20 and second.checks == ()
    assert cold > 0 and len(hashed) == cold  # the second audit hashed nothing


def _archive(cache, name, files):
    """A hand-made archive: ``files`` maps relative paths to bytes (RECORD written as given)."""
    root = cache / "archive-v0" / name
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def test_hostile_archives_are_reported_not_followed(tmp_path):
    cache = tmp_path / "uv-cache"
    secret = tmp_path / "secret.txt"
    secret.write_text("outside the cache\n")
    _archive(cache, "malformed", {"bad-1.0.dist-info/RECORD": b"x.py,sha256=notbase64!!,3\n", "x.py": b"x=1"})
    good = record_hash(b"outside the cache\n").encode()
    link = _archive(cache, "symlinked", {"ln-1.0.dist-info/RECORD": b"ln/secret.txt," + good + b",18\n"})
    os.symlink(tmp_path, link / "ln")  # a directory leading out of the archive
    fifo = _archive(cache, "fifo", {"ff-1.0.dist-info/RECORD":
                                    b"ff.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n"})
    os.mkfifo(fifo / "ff.py")  # never opened: it would block
    _archive(cache, "escape", {"esc-1.0.dist-info/RECORD": b"../../../secret.txt," + good + b",18\n"})
    (cache / "archive-v0" / "empty").mkdir()
    found = audit_archives(str(cache))
    errors = {os.path.basename(os.path.dirname(e.path.rstrip("/"))) if e.path.endswith("RECORD") else
              os.path.basename(e.path): e.message for e in found.errors}
    assert "malformed RECORD" in errors["bad-1.0.dist-info"]
    assert "outside it" in errors["esc-1.0.dist-info"]
    assert "no .dist-info" in errors["empty"]
    by_name = {d.distribution.name: d for d in found.checks}
    assert by_name["ff"].actual["edited"][0]["kind"] == "type-changed"
    assert "leads out of the archive" in by_name["ln"].actual["edited"][0]["why"]
    assert set(by_name) == {"ff", "ln"}
    assert secret.read_text() == "outside the cache\n"


def test_a_missing_named_cache_is_an_error_not_a_crash(tmp_path):
    found = audit_archives(str(tmp_path / "nowhere"))
    assert found.checks == () and "no uv cache here" in found.errors[0].message


def test_archives_that_cannot_be_found_are_said_unchecked(tmp_path, wheelhouse, monkeypatch):
    cache = tmp_path / "uv-cache"
    venv = venvs.make_uv_venv(tmp_path / "v", cache)
    venvs.uv_install(venv, cache, *offline(wheelhouse), "six==1.17.0")
    other = tmp_path / "another-cache"
    other.mkdir()
    monkeypatch.setenv("UV_CACHE_DIR", str(other))  # uv's default here is not the cache six came from
    report = audit(venv=str(venv))
    assert report.drifts == []
    (note,) = [s for s in report.skipped if s.path == str(other)]
    assert "six 1.17.0" in note.message and "were not checked" in note.message
    monkeypatch.setenv("UV_CACHE_DIR", str(cache))
    assert [s for s in audit(venv=str(venv)).skipped if "uv's cache" in s.message] == []


def test_an_archive_remembered_clean_is_checked_again_once_edited(tmp_path, wheelhouse, monkeypatch):
    from driftscan.environment import files
    from driftscan.environment.uv.archives import CleanArchives

    cache = tmp_path / "uv-cache"
    venv = venvs.make_uv_venv(tmp_path / "v", cache)
    venvs.uv_install(venv, cache, *offline(wheelhouse), "six==1.17.0", "click==8.1.8")
    settle(cache)
    memo = tmp_path / "clean.bin"
    first = CleanArchives(str(memo))
    assert audit_archives(str(cache), clean=first).checks == ()
    first.save()
    checked = []
    real = files.check_entry
    monkeypatch.setattr("driftscan.environment.uv.archives.check_entry",
                        lambda *a, **k: checked.append(a[0]) or real(*a, **k))
    again = audit_archives(str(cache), clean=CleanArchives(str(memo)))
    assert checked == [] and again.files_checked > 20  # settled by signatures alone
    with open(venvs.site_packages_of(venv) / "six.py", "a") as f:  # through the hard link
        f.write(MARK)
    edited = audit_archives(str(cache), clean=CleanArchives(str(memo)))
    assert [d.distribution.name for d in edited.checks] == ["six"] and checked
