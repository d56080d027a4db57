"""driftscan.pristine.fetch: the ``pip download`` command ``--fetch`` builds, and what it does with
the result. Offline: pip is stood in for by a script that records its arguments and environment."""

from __future__ import annotations

import os
import stat
import sys

from driftscan.pristine import fetch
from driftscan.pristine.base import Rejected, SourceKind
from driftscan.pristine.fetch import fetch_candidates, index_arguments, tag_arguments, timeout
from driftscan.pristine.wheel import ZipCopy
from fixtures.wheelfiles import installed, wheel_file

FILES = {"pkg/core.py": "X = 1\n"}
LINUX_GLIBC = (17, 24, 27, 28, 31, 34, 35, 39)


def test_no_tag_arguments_for_a_pure_or_unknown_wheel():
    assert tag_arguments(None, "3.12") == []
    assert tag_arguments(frozenset({"py3-none-any", "py2-none-any"}), "3.12") == []
    assert tag_arguments(frozenset({"py3-none-any", "cp3-x-../../etc"}), "3.12") == []  # a tag no wheel has


def test_tag_arguments_for_a_binary_wheel():
    assert tag_arguments(frozenset({"cp311-cp311-manylinux_2_17_x86_64"}), "3.12") == [
        "--implementation", "cp", "--python-version", "3.11", "--abi", "cp311",
        "--platform", "manylinux_2_17_x86_64"]
    # linux_ARCH (what the WHEEL file inside keeps) is also asked for as the manylinux names indexes serve
    args = tag_arguments(frozenset({"cp312-cp312-linux_aarch64"}), None)
    assert args[:6] == ["--implementation", "cp", "--python-version", "3.12", "--abi", "cp312"]
    assert args[6:] == [a for g in ["linux_aarch64", *(f"manylinux_2_{v}_aarch64" for v in LINUX_GLIBC)]
                        for a in ("--platform", g)]


def test_an_abi3_wheel_is_asked_for_with_the_environment_s_python():
    tags = frozenset({"cp38-abi3-manylinux_2_28_x86_64"})
    assert tag_arguments(tags, "3.11")[:4] == ["--implementation", "cp", "--python-version", "3.11"]
    assert tag_arguments(tags, None)[:4] == ["--implementation", "cp", "--python-version", "3.8"]
    assert tag_arguments(tags, "3.11; rm -rf /")[:4] == ["--implementation", "cp", "--python-version", "3.8"]
    # no cpXY interpreter tag: only the environment's version, when it is one
    assert tag_arguments(frozenset({"py3-none-win_amd64"}), "3.10") == [
        "--python-version", "3.10", "--platform", "win_amd64"]


def test_timeout_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv("DRIFTSCAN_FETCH_TIMEOUT", raising=False)
    assert timeout() == 300.0
    monkeypatch.setenv("DRIFTSCAN_FETCH_TIMEOUT", "12.5")
    assert timeout() == 12.5
    monkeypatch.setenv("DRIFTSCAN_FETCH_TIMEOUT", "0")
    assert timeout() == 1.0
    monkeypatch.setenv("DRIFTSCAN_FETCH_TIMEOUT", "soon")
    assert timeout() == 300.0


def test_index_arguments_from_the_environment_s_pip_conf(tmp_path):
    assert index_arguments(None) == ([], None)
    assert index_arguments(str(tmp_path)) == ([], None)  # no pip.conf
    (tmp_path / "pip.conf").write_text(
        "[global]\nindex-url = https://mirror.example/simple\nextra-index-url = https://a.example/s\n"
        "trusted-host = mirror.example\n"
        "[install]\nextra_index_url = file:///etc/passwd https://b.example/s ftp://c.example/s\n"
        "[download]\nindex-url = javascript:alert(1)\n")
    args, note = index_arguments(str(tmp_path))
    # [install] wins over [global] for the extra indexes; only http(s) URLs; a non-URL index-url is ignored
    assert args == ["--index-url", "https://mirror.example/simple", "--extra-index-url", "https://b.example/s"]
    assert note == f"index settings from {tmp_path / 'pip.conf'}"


def test_a_pip_conf_that_cannot_be_used_is_a_note(tmp_path):
    (tmp_path / "pip.conf").write_text("index-url = https://x.example\n")  # no section header
    assert index_arguments(str(tmp_path)) == ([], f"{tmp_path / 'pip.conf'} is not a valid config file: not used")
    (tmp_path / "pip.conf").unlink()
    os.mkfifo(tmp_path / "pip.conf")  # refused without blocking
    args, note = index_arguments(str(tmp_path))
    assert args == [] and note.startswith(f"{tmp_path / 'pip.conf'} not read (")
    (tmp_path / "pip.conf").unlink()
    (tmp_path / "real.conf").write_text("[global]\nindex-url = https://evil.example/simple\n")
    os.symlink(tmp_path / "real.conf", tmp_path / "pip.conf")
    assert index_arguments(str(tmp_path))[0] == []  # a symlinked pip.conf is not followed


PIP = """#!/bin/sh
printf '%s\\n' "$@" > "{log}"
printf '%s' "${{PYTHONPATH-unset}}" > "{log}.env"
case "{mode}" in
  fail) echo "ERROR: No matching distribution found for pkg==1.0" >&2; exit 1 ;;
  none) exit 0 ;;
esac
while [ $# -gt 0 ]; do
  if [ "$1" = --dest ]; then cp "{wheel}" "$2/"; fi
  shift
done
"""


def fake_pip(tmp_path, monkeypatch, mode: str):
    """A stand-in for ``sys.executable -m pip``: records its arguments, puts a wheel in --dest."""
    wheel = wheel_file(tmp_path / "index", "pkg", "1.0", FILES, tag="cp311-cp311-linux_x86_64")
    script = tmp_path / "python"
    log = tmp_path / "args"
    script.write_text(PIP.format(log=log, wheel=wheel, mode=mode))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(fetch.sys, "executable", str(script))
    monkeypatch.setenv("PYTHONPATH", "/the/audited/tree")
    return log


def test_fetch_runs_pip_download_and_yields_the_wheel(tmp_path, monkeypatch):
    log = fake_pip(tmp_path, monkeypatch, "ok")
    work = tmp_path / "work"
    work.mkdir()
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES, tag="cp311-cp311-linux_x86_64")
    said: list[str] = []
    [copy] = fetch_candidates(dist, "3.11", None, lambda: str(work), [], said.append)
    try:
        assert isinstance(copy, ZipCopy) and copy.source is SourceKind.FETCH
        assert os.path.dirname(os.path.dirname(copy.path)) == str(work)  # a new directory under workdir()
        assert copy.read(dist.entries[0]) == b"X = 1\n"
        # A report names the download, not the temporary wheel removed when the run ends.
        assert copy.where == "pip download pkg==1.0 from pip's configured index"
    finally:
        copy.close()
    args = log.read_text().splitlines()
    assert args[:9] == ["-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "--no-input",
                        "--disable-pip-version-check", "--dest"]
    assert args[10:] == [*tag_arguments(frozenset({"cp311-cp311-linux_x86_64"}), "3.11"), "pkg==1.0"]
    assert (tmp_path / "args.env").read_text() == "unset"  # the audited tree's PYTHONPATH is dropped
    assert said == ["downloading pkg==1.0 with pip"]


def test_a_download_from_the_environment_s_index_names_it(tmp_path, monkeypatch):
    fake_pip(tmp_path, monkeypatch, "ok")
    (tmp_path / "work").mkdir()
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / "pip.conf").write_text("[global]\nindex-url = https://mirror.example/simple\n"
                                   "extra-index-url = https://extra.example/simple\n")
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES, tag="cp311-cp311-linux_x86_64")
    [copy] = fetch_candidates(dist, "3.11", str(venv), lambda: str(tmp_path / "work"), [])
    try:
        assert copy.where == "pip download pkg==1.0 from https://mirror.example/simple (and 1 extra index)"
        assert copy.path.endswith(".whl") and copy.path != copy.where
    finally:
        copy.close()


def test_a_failed_download_is_a_rejection_with_pip_s_last_line(tmp_path, monkeypatch):
    fake_pip(tmp_path, monkeypatch, "fail")
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES)
    [rejected] = fetch_candidates(dist, None, None, lambda: str(tmp_path), [])
    assert rejected == Rejected(SourceKind.FETCH, "pkg==1.0",
                                "pip download failed: ERROR: No matching distribution found for pkg==1.0")


def test_a_download_without_the_release_s_wheel_is_a_rejection(tmp_path, monkeypatch):
    fake_pip(tmp_path, monkeypatch, "none")
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES)
    [rejected] = fetch_candidates(dist, None, None, lambda: str(tmp_path), [])
    assert rejected.reason == "pip download gave no wheel of this release"


def test_names_pip_could_not_be_asked_for_are_not_fetched(tmp_path, monkeypatch):
    log = fake_pip(tmp_path, monkeypatch, "ok")
    for name, version in (("pkg; rm -rf /", "1.0"), ("-e", "1.0"), ("pkg", "1.0 --index-url=x"), ("pkg", "")):
        dist = installed(tmp_path / "site", name, version or "0", FILES)
        dist = type(dist)(name, version, dist.metadata_dir, dist.site_packages)
        notes: list[str] = []
        assert list(fetch_candidates(dist, None, None, lambda: str(tmp_path), notes)) == []
        assert notes == ["--fetch (the installed name or version is not one pip could be asked for)"], name
    assert not log.exists()


def test_no_pip_in_driftscan_s_interpreter_is_a_note(tmp_path, monkeypatch):
    monkeypatch.setattr(fetch.importlib.util, "find_spec", lambda name: None)
    notes: list[str] = []
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES)
    assert list(fetch_candidates(dist, None, None, lambda: str(tmp_path), notes)) == []
    assert notes == [f"--fetch (driftscan's interpreter {sys.executable} has no pip)"]
