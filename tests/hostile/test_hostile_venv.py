"""A hostile venv is data, never instructions (the venv side).

Each test copies a real pip venv, plants one kind of hostile content, audits it under a deadline
and checks that the audit ends, reports what it could not check as an error with its reason,
reads nothing outside the environment, and still reports the rest (an edited ``six.py``, planted
in every copy, must always be found).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

import driftscan.api as api
from driftscan.caches import racy
from driftscan import TargetError, audit
from driftscan.caches import statcache as cache_mod
from driftscan.environment.fast import cleanindex
from driftscan.environment import verify as pipeline
from fixtures import venvs
from fixtures.wheels import record_hash
from fixtures.harness import offline, run_cli

CANARY = b"driftscan-venv-canary-0b7e51d2 the content of a file outside the venv\n"
STRACE = shutil.which("strace")

# Not copied: pip and setuptools are a thousand files that only make each copy slower.
_HEAVY = ("pip", "setuptools", "_distutils_hack", "pkg_resources", "distutils-precedence.pth")


def _ignore(directory: str, names: list[str]) -> set[str]:
    return {n for n in names if n in _HEAVY or n.startswith(("pip-", "setuptools-", "pip3")) or n == "pip"}


@contextlib.contextmanager
def deadline(seconds: float):
    """Fail (rather than hang the test run) if the block takes longer than ``seconds``."""
    def expired(signum, frame):
        raise TimeoutError(f"the audit did not end within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)



def add_rows(info: Path, *rows: str) -> None:
    with open(info / "RECORD", "a", newline="") as f:
        f.write("".join(row + "\r\n" for row in rows))


@pytest.fixture
def venv(pristine_pip_venv, tmp_path, monkeypatch):
    """A copy of the pristine venv (without pip and setuptools) with six.py edited in place."""
    copy = tmp_path / "v"
    shutil.copytree(pristine_pip_venv, copy, symlinks=True, ignore=_ignore)
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(tmp_path / "cache"))
    site = venvs.site_packages_of(copy)
    with open(site / "six.py", "a") as f:
        f.write("# edited\n")
    return copy


def site_of(venv: Path) -> Path:
    return venvs.site_packages_of(venv)


def info_of(venv: Path, name: str) -> Path:
    return next(site_of(venv).glob(f"{name}-*.dist-info"))


def drifts(report) -> set[tuple[str, str]]:
    return {(d.relpath, d.kind.value) for d in report.drifts}


def errors(report) -> list[tuple[str, str]]:
    return [(e.path, e.message) for e in report.errors]


def assert_rest_intact(report) -> None:
    """The drift planted in every copy is reported, and the other distributions are audited."""
    assert ("six.py", "modified") in drifts(report)
    assert report.summary.distributions >= 8 and report.summary.files_checked > 100
    assert not any("internal error" in m for _, m in errors(report))


def canary_absent(text: str) -> None:
    digest = hashlib.sha256(CANARY).digest()
    for form in (digest.hex(), base64.urlsafe_b64encode(digest).rstrip(b"=").decode(),
                 base64.b64encode(digest).rstrip(b"=").decode(), CANARY.decode().strip()[:30]):
        assert form not in text


def test_a_10_gib_pyvenv_cfg_costs_only_the_python_version(venv):
    cfg = venv / "pyvenv.cfg"
    with open(cfg, "r+b") as f:
        f.truncate(10 << 30)  # sparse: its first lines are still the real ones
    with deadline(20):
        report = audit(venv=str(venv))
    assert_rest_intact(report)
    assert report.target.python_version == f"{sys.version_info.major}.{sys.version_info.minor}"
    [(path, message)] = [e for e in errors(report) if e[0].endswith("pyvenv.cfg")]
    assert "10737418240 bytes" in message and "pyvenv.cfg" in message


def test_a_binary_record_fails_alone(venv):
    (info_of(venv, "click") / "RECORD").write_bytes(b"\0\xff\xfe" + os.urandom(4096) + b"\0click/x.py\0,,\n" * 3)
    (info_of(venv, "requests") / "RECORD").write_bytes(b"requests/api.py\0,sha256=x,1\r\n\x00\x00\x00")
    with open(info_of(venv, "idna") / "RECORD", "ab") as f:  # a size int() would refuse to parse
        f.write(f"idna/core.py,{record_hash(b'x')},{'9' * 5000}\r\n".encode())
    with open(info_of(venv, "urllib3") / "RECORD", "r+b") as f:
        f.truncate(300 << 20)  # sparse, past the RECORD cap
    with deadline(20):
        report = audit(venv=str(venv))
    assert_rest_intact(report)
    bad = {Path(p).parent.name.split("-")[0] for p, _ in errors(report)}
    assert {"click", "requests", "idna", "urllib3"} <= bad
    assert any("a RECORD may have" in m for p, m in errors(report) if "urllib3" in p)
    unverifiable = {u.distribution.split()[0] for u in report.unverifiable}
    assert {"click", "urllib3"} <= unverifiable  # nothing to check them against: not called clean
    assert all("NUL" not in p for p, _ in errors(report))  # the NUL is in the message, escaped
    assert any("NUL byte" in m for _, m in errors(report))
    json.loads(report.model_dump_json())  # and the report serializes


@pytest.mark.parametrize("payload", [b'{"url": 42}', b'{"url": ["file:///x"], "dir_info": {"editable": true}}',
                                     b'{"url": "file:///x", "dir_info": [1]}',
                                     b"[" * 100_000 + b"]" * 100_000, b'{"url": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
                                     b"\xff\xfe not json"])
def test_a_hostile_direct_url_json_fails_alone(venv, payload):
    (info_of(venv, "click") / "direct_url.json").write_bytes(payload)
    with deadline(20):
        report = audit(venv=str(venv))
    assert_rest_intact(report)
    assert any(p.endswith("direct_url.json") for p, _ in errors(report))
    assert ("click/core.py", "modified") not in drifts(report)


@pytest.fixture
def canary(tmp_path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    path = outside / "canary.txt"
    path.write_bytes(CANARY)
    (outside / "sub").mkdir()
    (outside / "sub" / "canary.txt").write_bytes(CANARY)
    return path


def _plant_pointers_at(venv: Path, canary: Path) -> None:
    site = site_of(venv)
    info = info_of(venv, "click")
    # The size is the canary's, so only reading it could settle a row: its digest in the report
    # would show that it was read (RECORD's own claim is another digest).
    good, size = record_hash(b"not the canary"), len(CANARY)
    add_rows(info, f"{canary},{good},{size}",  # absolute
             f"{os.path.relpath(canary, site)},{good},{size}",  # ../../../..
             f"{'../' * 40}{str(canary).lstrip('/')},{good},{size}",  # past the filesystem's root
             f"click_link.py,{good},{size}",  # a symlink in site-packages named by RECORD
             f"click_pkg/canary.txt,{good},{size}")  # through a symlinked directory
    (site / "click_link.py").symlink_to(canary)
    (site / "unowned_link.py").symlink_to(canary)
    (site / "click_pkg").symlink_to(canary.parent / "sub")
    # A RECORD-named file replaced by a link out of the tree, and a dist-info file linked out
    # (in another distribution: without its INSTALLER, click's drift would make it unverifiable).
    (site / "click" / "globals.py").unlink()
    (site / "click" / "globals.py").symlink_to(canary)
    installer = info_of(venv, "requests") / "INSTALLER"
    installer.unlink()
    installer.symlink_to(canary)


def test_nothing_outside_the_venv_is_read(venv, canary):
    _plant_pointers_at(venv, canary)
    with deadline(20):
        report = audit(venv=str(venv), use_cache=False)
    text = report.model_dump_json()
    canary_absent(text)
    assert_rest_intact(report)
    found = drifts(report)
    assert {("click_link.py", "type-changed"), ("click/globals.py", "type-changed"),
            ("unowned_link.py", "added"), ("click_pkg", "added")} <= found
    by_path = {d.relpath: d for d in report.drifts}
    assert by_path["click/globals.py"].actual == {"type": "symlink", "target": str(canary)}
    messages = " | ".join(m for _, m in errors(report))
    assert messages.count("outside the environment") >= 4, messages
    assert any(p.endswith("INSTALLER") for p, _ in errors(report))


def test_site_packages_linked_out_of_the_venv_is_refused(venv, tmp_path):
    site = site_of(venv)
    elsewhere = tmp_path / "elsewhere-site"
    shutil.move(site, elsewhere)
    site.symlink_to(elsewhere)
    with pytest.raises(TargetError, match="resolves outside the environment"):
        audit(venv=str(venv))


def _fifo_and_device(venv: Path) -> list[Path]:
    site = site_of(venv)
    planted = [site / "click" / "types.py"]
    planted[0].unlink()
    os.mkfifo(planted[0])
    if os.geteuid() == 0:
        device = site / "click" / "utils.py"
        device.unlink()
        null = os.stat("/dev/null")
        os.mknod(device, 0o644 | stat.S_IFCHR, null.st_rdev)  # the same device as /dev/null
        planted.append(device)
    info = info_of(venv, "requests")
    (info / "METADATA").unlink()
    os.mkfifo(info / "METADATA")
    return planted


def test_fifos_and_devices_named_by_record_are_never_opened(venv):
    planted = _fifo_and_device(venv)
    with deadline(20):
        report = audit(venv=str(venv), use_cache=False)
    assert_rest_intact(report)
    site = site_of(venv)
    for path in planted:
        assert (os.path.relpath(path, site), "type-changed") in drifts(report)


@pytest.mark.skipif(STRACE is None, reason="strace is not installed")
def test_under_strace_no_fifo_device_or_outside_file_is_opened(venv, canary, tmp_path):
    planted = _fifo_and_device(venv)
    _plant_pointers_at(venv, canary)
    planted += [info_of(venv, "requests") / "METADATA", canary, canary.parent / "sub" / "canary.txt"]
    trace = tmp_path / "trace"
    proc = subprocess.run([STRACE, "-f", "-qq", "-s", "4096", "-e", "trace=open,openat,openat2", "-o", str(trace),
                           sys.executable, "-m", "driftscan", "audit", "--venv", str(venv), "--no-cache",
                           "--format", "json"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode in (1, 3), proc.stderr
    canary_absent(proc.stdout)
    opened = trace.read_text()
    assert f'"{site_of(venv) / "six.py"}"' in opened  # the trace does show what is opened
    for path in planted:
        assert f'"{path}"' not in opened, path
    # ... and the targets of the links were not opened through the links either.
    for link in ("click_link.py", "click/globals.py", "click_pkg/canary.txt"):
        assert f'"{site_of(venv) / link}"' not in opened, link


def test_a_1_tib_sparse_file_where_record_says_16_mib_is_settled_by_its_size(venv, monkeypatch):
    monkeypatch.setenv("DRIFTSCAN_FORK", "fork")  # the prehash child takes files of 8 MiB and more
    site = site_of(venv)
    big = site / "click" / "big.bin"
    with open(big, "wb") as f:
        f.truncate(1 << 40)
    add_rows(info_of(venv, "click"), f"click/big.bin,{record_hash(b'x')},{16 << 20}")
    started = time.monotonic()
    with deadline(30):
        report = audit(venv=str(venv), use_cache=False, jobs=2)
    assert time.monotonic() - started < 20
    assert_rest_intact(report)
    check = next(d for d in report.drifts if d.relpath == "click/big.bin")
    assert check.kind.value == "modified" and check.actual["size"] == 1 << 40 and "hash" not in check.actual


def test_duplicate_rows_with_different_hashes_are_reported(venv):
    site = site_of(venv)
    info = info_of(venv, "click")
    data = (site / "click" / "core.py").read_bytes()
    add_rows(info, f"click/core.py,{record_hash(b'something else')},{len(data)}")
    # pip's own double listing (a wheel-shipped .pyc, once hashless, once hashed) is not hostile
    pyc = site / "click" / "shipped.pyc"
    pyc.write_bytes(b"bytecode")
    add_rows(info, "click/shipped.pyc,,", f"click/shipped.pyc,{record_hash(b'bytecode')},8")
    with deadline(20):
        report = audit(venv=str(venv))
    assert_rest_intact(report)
    [(path, message)] = [e for e in errors(report) if "listed" in e[1]]
    assert path.endswith("RECORD") and "click/core.py" in message and "different hashes" in message
    assert "shipped.pyc" not in " ".join(m for _, m in errors(report))
    assert not any(rel.startswith(("click/core.py", "click/shipped.pyc")) for rel, _ in drifts(report))


def _clean_then_add(venv: Path, monkeypatch, link: str) -> tuple[list, list, bool]:
    """Link ``link`` (site-packages or bin) to a directory inside the venv, audit clean, add a
    file through the real directory; (warm drifts, --no-cache drifts, index used)."""
    monkeypatch.setattr(racy, "RACY_NS", 0)
    site = site_of(venv)
    (site / "six.py").write_bytes((site / "six.py").read_bytes().replace(b"# edited\n", b""))
    path = site if link == "site" else venv / "bin"
    real = venv / f"real-{link}"
    shutil.move(path, real)
    path.symlink_to(os.path.relpath(real, path.parent))
    first = audit(venv=str(venv))
    assert first.drifts == [] and first.errors == [], (first.drifts, first.errors)
    time.sleep(0.05)
    (real / "added_later.py").write_text("X = 1\n")

    full_runs = []
    real_verify = pipeline.verify
    monkeypatch.setattr(pipeline, "verify", lambda *a, **k: full_runs.append(1) or real_verify(*a, **k))
    warm = audit(venv=str(venv))
    cold = audit(venv=str(venv), use_cache=False)
    return sorted(drifts(warm)), sorted(drifts(cold)), not full_runs[:1]


@pytest.mark.parametrize("link", ["site", "bin"])
def test_a_symlinked_site_packages_or_bin_does_not_hide_an_added_file(venv, monkeypatch, link):
    with deadline(30):
        warm, cold, settled = _clean_then_add(venv, monkeypatch, link)
    assert not settled
    expected = "added_later.py" if link == "site" else "bin/added_later.py"
    assert (expected, "added") in cold
    assert warm == cold


def _damage(path: Path, how: str) -> None:
    if how == "garbage":
        path.write_bytes(os.urandom(2000))
    elif how == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif how == "fifo":
        path.unlink()
        os.mkfifo(path)
    elif how == "huge":
        with open(path, "r+b") as f:
            f.truncate(4 << 30)  # sparse, past the cache cap
    elif how == "forged":  # a valid checksum over values of the wrong types
        import marshal

        import xxhash

        if path.name.endswith(".clean.bin"):
            fmt, value = cache_mod.CLEAN_FORMAT, {"version": 1, "roots": 5, "paths": [1], "signatures": b"",
                                                  "present": [None], "distributions": [(1, 2, 3, 4, 5, 6)]}
        elif path.name.endswith(".owned.bin"):
            fmt, value = cache_mod.OWNED_FORMAT, b"/not/owned\0/by/anyone"
        elif path.name.endswith(".records.bin"):
            fmt, value = cache_mod.RECORDS_FORMAT, {"r": (1, 2, 3), "s": (b"", True, ([(5, 1, 2, 3, "x", None)], 7))}
        else:
            fmt, value = cache_mod.FORMAT, {"x": 1, str(path): 5}
        payload = marshal.dumps(value)
        path.write_bytes(fmt + xxhash.xxh3_64_digest(payload) + payload)


@pytest.mark.parametrize("how", ["garbage", "truncated", "fifo", "huge", "forged"])
def test_a_damaged_cache_file_is_ignored(venv, tmp_path, monkeypatch, how):
    monkeypatch.setattr(racy, "RACY_NS", 0)
    baseline = audit(venv=str(venv), use_cache=False)
    audit(venv=str(venv))
    (site_of(venv) / "six.py").write_bytes((site_of(venv) / "six.py").read_bytes().replace(b"# edited\n", b""))
    clean = audit(venv=str(venv))  # leaves a stat cache and a clean index
    assert clean.drifts == []
    files = sorted((tmp_path / "cache" / "statcache").glob("*.bin"))
    # digests, parsed RECORDs, the index (and the owned paths the index of the drifted audit
    # before it left: the clean one was settled from it by re-checking six.py)
    assert {p.name.split(".", 1)[1] for p in files} <= {"bin", "records.bin", "clean.bin", "owned.bin"}, files
    assert len(files) >= 3, files
    for path in files:
        _damage(path, how)
    with open(site_of(venv) / "six.py", "a") as f:
        f.write("# edited\n")
    with deadline(20):
        report = audit(venv=str(venv))
    assert drifts(report) == drifts(baseline) and errors(report) == errors(baseline)
    assert_rest_intact(report)


@pytest.fixture
def uv_symlink_venv(tmp_path, wheelhouse):
    cache = tmp_path / "uvcache"
    venv = venvs.make_uv_venv(tmp_path / "vuv", cache)
    venvs.uv_install(venv, cache, *offline(wheelhouse), "--link-mode", "symlink", "six==1.17.0")
    assert (site_of(venv) / "six.py").is_symlink()
    return venv, cache


def test_uv_symlink_links_are_followed_into_the_uv_cache_driftscan_knows_only(uv_symlink_venv):
    venv, cache = uv_symlink_venv
    with deadline(20):
        known = audit(venv=str(venv), uv_cache=str(cache), use_cache=False)
        unknown = audit(venv=str(venv), uv_cache=str(venv / "not-the-cache"), use_cache=False)
    assert known.drifts == [] and known.errors == []
    # The tree says nothing about where uv's cache is: links into an unknown place are reported.
    assert ("six.py", "type-changed") in drifts(unknown)
    six = next(d for d in unknown.drifts if d.relpath == "six.py")
    assert six.actual["type"] == "symlink" and "hash" not in six.actual
    # Cleaned cache: the links dangle into the known cache, reported missing (not followed elsewhere).
    venvs.run([venvs.uv_bin(), "cache", "clean", "six"], env=venvs.uv_env(cache))
    cleaned = audit(venv=str(venv), uv_cache=str(cache), use_cache=False)
    assert {"six.py", "six-1.17.0.dist-info/METADATA"} <= {r for r, k in drifts(cleaned) if k == "missing"}
    assert next(d for d in cleaned.drifts if d.relpath == "six.py").actual["dangling"] is True


def test_cli_audit_of_a_hostile_venv_writes_a_report(venv, canary):
    _plant_pointers_at(venv, canary)
    _fifo_and_device(venv)
    (info_of(venv, "six") / "direct_url.json").write_bytes(b"[" * 100_000)
    with open(venv / "pyvenv.cfg", "r+b") as f:
        f.truncate(10 << 30)
    proc = run_cli("audit", "--venv", str(venv), "--format", "json")
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    canary_absent(proc.stdout)
    report = json.loads(proc.stdout)
    assert any(d["relpath"] == "six.py" and d["kind"] == "modified" for d in report["drifts"])
