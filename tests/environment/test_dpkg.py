"""Debian's dpkg database read into driftscan's model (``driftscan.environment.managers.dpkg``).

The real-system tests install real Debian packages with real apt-get (once per session) and take
``debsums`` and ``dpkg -L`` as the reference; they run only as root where dpkg exists. The
hostile-database tests corrupt a copy under tmp_path and run everywhere.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from pathlib import Path

import pytest

from driftscan.environment.managers import dpkg as dpkg_module
from driftscan.environment.managers.dpkg import (
    HASH_EVIDENCE,
    LIMITS,
    MAX_PROBLEMS,
    DpkgOwnership,
    dpkg_database_for,
    dpkg_database_problem,
    hash_evidence,
    md5sums_path,
    package_spec,
    read_dpkg,
    valid_package_name,
    valid_version,
)
from driftscan.environment.target import containment_for_site_packages
from driftscan.core.values import Distribution
from fixtures import dpkg as debian
from fixtures.dpkg import DIST_PACKAGES, FakeSystem, fake_blinker, real_system_lock, status_paragraph

SITE = "/usr/lib/python3/dist-packages"
MARKER = b"\n_driftscan_test_debug = 1  # planted by tests/environment/test_dpkg.py\n"


# --- the real system --------------------------------------------------------------------------

system_lock = real_system_lock


@pytest.fixture(scope="session")
def debian_system():
    """python3-blinker, python3-requests, python3-cffi-backend and debsums installed by apt-get."""
    why = debian.can_use_system_dpkg()
    if why:
        pytest.skip(why)
    with system_lock():
        try:
            debian.ensure_installed()
        except (debian.AptError, subprocess.TimeoutExpired) as exc:
            from fixtures.network import skip_or_fail_without_network

            skip_or_fail_without_network(f"apt-get could not install {', '.join(debian.PACKAGES)}: {exc}")
        _undo_leftover_plant()
    return read_dpkg("/var/lib/dpkg", SITE, containment_for_site_packages([SITE]))


def owners_of(system, path: str):
    """The packages whose file lists name ``path`` (absolute, or relative to site-packages), or
    the metadata directory ``path`` heads."""
    if os.path.isabs(path):
        path = os.path.relpath(path, system.site_packages).replace(os.sep, "/")
    return tuple(d for d in (*system.distributions, *system.untrusted)
                 if any(e.path == path or e.path.split("/", 1)[0] == path for e in d.entries))


def _undo_leftover_plant() -> None:
    """A run killed inside the planted-edit test left its line in blinker/base.py: take it out."""
    path = Path(SITE) / "blinker/base.py"
    data = path.read_bytes()
    if data.endswith(MARKER):
        with open(path, "r+b") as f:
            f.truncate(len(data) - len(MARKER))


def _dist(ownership: DpkgOwnership, name: str) -> Distribution:
    found = [d for d in ownership.distributions if d.name == name]
    assert len(found) == 1, f"{name}: {[d.name for d in ownership.distributions]}"
    return found[0]


def _changed_by_entries(dist: Distribution) -> set[str]:
    """The files whose md5 is not the one the entry (dpkg's md5sums) records."""
    return {e.path for e in dist.entries if e.hash is not None
            and os.path.lexists(path := os.path.join(dist.site_packages, e.path)) and debian.md5(path) != e.hash.digest}


def _debsums_changed(*packages: str) -> set[str]:
    """``debsums -c``: changed files (and missing ones, reported on stderr) of the packages."""
    proc = debian.run(["debsums", "-c", *packages], check=False)
    changed = set(proc.stdout.split("\n"))
    changed |= {line.split("missing file ", 1)[1].split(" (from ", 1)[0]
                for line in proc.stderr.splitlines() if "missing file " in line}
    return {os.path.relpath(p, SITE) for p in changed if p.startswith(SITE + "/")}


@pytest.mark.network
def test_database_of_the_system_dist_packages(debian_system):
    assert dpkg_database_for(SITE) == "/var/lib/dpkg"
    assert dpkg_database_for(SITE + "/") == "/var/lib/dpkg"
    assert dpkg_database_for("/usr/lib/python3.11/dist-packages") == "/var/lib/dpkg"
    assert dpkg_database_for("/usr/local/lib/python3.11/dist-packages") is None  # pip's, not dpkg's
    assert dpkg_database_for("/usr/lib/python3/site-packages") is None
    assert dpkg_database_problem(SITE) is None


@pytest.mark.network
@pytest.mark.parametrize("package", ["python3-blinker", "python3-requests"])
def test_pristine_package_agrees_with_debsums_and_dpkg_L(debian_system, package):
    with system_lock():
        proc = debian.run(["debsums", "-s", package], check=False)
        assert proc.returncode == 0 and not proc.stdout and not proc.stderr, proc
        dist = _dist(debian_system, package)
        assert _changed_by_entries(dist) == set()
    # Every file dpkg -L lists under dist-packages, no directory, each with Debian's md5.
    listed = {os.path.relpath(p, SITE) for p in debian.dpkg_files(package)
              if p.startswith(SITE + "/") and not os.path.isdir(p)}
    assert {e.path for e in dist.entries} == listed
    assert all(e.hash is not None and e.hash.algorithm == "md5" and e.hash.encoding == "hex" for e in dist.entries)
    version, arch = debian.query(package, "${Version} ${Architecture}").split()
    assert (dist.version, dist.build, dist.installer) == (version, arch, "dpkg")
    assert dist.metadata_dir == f"/var/lib/dpkg/info/{package}.list" and dist.site_packages == SITE
    assert package_spec(dist) == package and md5sums_path(dist) == f"/var/lib/dpkg/info/{package}.md5sums"
    assert hash_evidence(dist).startswith("md5, as Debian records it") and HASH_EVIDENCE in hash_evidence(dist)
    # Its Python metadata directory is dpkg's (its RECORD does not describe the installed files).
    metadata = {os.path.join(SITE, e.path.split("/", 1)[0]) for e in dist.entries
                if e.path.split("/", 1)[0].endswith((".dist-info", ".egg-info"))}
    assert metadata and metadata <= debian_system.python_metadata_dirs
    assert all(owners_of(debian_system, m) == (dist,) for m in metadata)
    assert not {e.path for e in dist.entries} & set(debian_system.shared)


@pytest.mark.network
def test_multi_arch_package_named_with_its_architecture(debian_system):
    """python3-cffi-backend is Multi-Arch: same: its database files are pkg:arch.*; its
    _cffi_backend*.so is one of the files no Python metadata lists."""
    dist = _dist(debian_system, "python3-cffi-backend")
    arch = debian.query("python3-cffi-backend", "${Architecture}")
    assert dist.build == arch and dist.metadata_dir == f"/var/lib/dpkg/info/python3-cffi-backend:{arch}.list"
    assert package_spec(dist) == f"python3-cffi-backend:{arch}"
    so = [e for e in dist.entries if e.path.startswith("_cffi_backend") and e.path.endswith(".so")]
    assert len(so) == 1 and so[0].hash is not None
    assert debian.md5(os.path.join(SITE, so[0].path)) == so[0].hash.digest
    assert owners_of(debian_system, os.path.join(SITE, so[0].path)) == (dist,)


@pytest.mark.network
def test_planted_edit_found_like_debsums(debian_system):
    """An edit to the real blinker/base.py: debsums -c and the entries both call it changed, and
    nothing else; restored afterwards whatever happens."""
    dist = _dist(debian_system, "python3-blinker")
    path = Path(SITE) / "blinker/base.py"
    with system_lock():
        original = path.read_bytes()
        st = path.stat()
        try:
            with open(path, "ab") as f:
                f.write(MARKER)
            assert _debsums_changed("python3-blinker") == {"blinker/base.py"}
            assert _changed_by_entries(dist) == {"blinker/base.py"}
            # read again after the edit: the database, not the file, is where the md5 comes from
            again = _dist(read_dpkg("/var/lib/dpkg", SITE), "python3-blinker")
            assert again.entries == dist.entries
        finally:
            with open(path, "r+b") as f:
                f.write(original)
                f.truncate(len(original))
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert debian.run(["debsums", "-s", "python3-blinker"], check=False).returncode == 0
        assert _changed_by_entries(dist) == set()


@pytest.mark.network
def test_whole_dist_packages_agrees_with_debsums(debian_system):
    """Over every package that owns something in dist-packages: the files whose md5 differs
    from the entries are exactly those debsums -c reports (on a pristine system none; this
    machine may carry edits of its own, such as a CA bundle appended to)."""
    with system_lock():
        now = read_dpkg("/var/lib/dpkg", SITE)  # as it is now: other runs may have installed more
        ours = set().union(*(_changed_by_entries(d) for d in now.distributions))
        # a file listed in the entries but gone is what debsums calls missing
        ours |= {e.path for d in now.distributions for e in d.entries
                 if e.hash is not None and not os.path.lexists(os.path.join(SITE, e.path))}
        names = sorted({package_spec(d) for d in now.distributions})
        assert ours == _debsums_changed(*names)
    assert now.problems == ()
    # dpkg -S agrees on who owns a sample of files
    for dist in now.distributions[:5]:
        entry = dist.entries[0]
        owner = debian.run(["dpkg", "-S", os.path.join(SITE, entry.path)]).stdout.split(":")[0]
        assert owner == dist.name


@pytest.mark.network
def test_reading_runs_nothing_and_opens_only_the_database(debian_system, monkeypatch):
    opened: list[str] = []
    real_open = os.open

    def recording_open(path, *args, **kwargs):
        opened.append(os.fsdecode(path))
        return real_open(path, *args, **kwargs)

    def refuse(*args, **kwargs):
        raise AssertionError(f"a process was started: {args}")

    monkeypatch.setattr(os, "open", recording_open)
    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(os, "execv", refuse)
    monkeypatch.setattr(os, "posix_spawn", refuse)
    started = time.perf_counter()
    result = read_dpkg("/var/lib/dpkg", SITE)
    elapsed = time.perf_counter() - started
    monkeypatch.undo()
    assert result.distributions
    assert opened and all(p.startswith("/var/lib/dpkg/") for p in opened), [p for p in opened if "/dpkg/" not in p]
    assert not any(p.endswith((".postinst", ".prerm", ".postrm", ".preinst", ".config")) for p in opened)
    assert elapsed < 30, elapsed


# --- dpkg_database_for on other roots ------------------------------------------------------------

def test_database_of_an_unpacked_image(tmp_path):
    system = FakeSystem(tmp_path / "rootfs")
    assert dpkg_database_for(str(system.site)) == str(system.database)
    assert dpkg_database_for(str(system.root / "usr/lib/python3.11/dist-packages")) == str(system.database)
    assert dpkg_database_for(str(system.root / "usr/local/lib/python3.11/dist-packages")) is None
    assert dpkg_database_for(str(tmp_path / "venv/lib/python3.11/site-packages")) is None
    (system.database / "status").unlink()
    assert dpkg_database_for(str(system.site)) is None  # no status: not a database


def test_image_database_linked_to_the_host_is_not_used(tmp_path):
    """An image whose var/lib/dpkg is a symlink to /var/lib/dpkg would have the host's database
    describe the image's files: refused, with the reason."""
    root = tmp_path / "rootfs"
    (root / DIST_PACKAGES).mkdir(parents=True)
    (root / "var/lib").mkdir(parents=True)
    host = tmp_path / "host-dpkg"
    (host / "info").mkdir(parents=True)
    (host / "status").write_text(status_paragraph("python3-six"))
    (root / "var/lib/dpkg").symlink_to(host)
    site = str(root / DIST_PACKAGES)
    assert dpkg_database_for(site) is None
    problem = dpkg_database_problem(site)
    assert problem is not None and "resolves outside" in problem.message


def test_image_usr_linked_to_the_host_is_not_used(tmp_path):
    root = tmp_path / "rootfs"
    FakeSystem(root)
    real_usr = tmp_path / "elsewhere-usr"
    os.rename(root / "usr", real_usr)
    (root / "usr").symlink_to(real_usr)
    assert dpkg_database_for(str(root / DIST_PACKAGES)) is None
    assert dpkg_database_problem(str(root / DIST_PACKAGES)) is not None


# --- the format, on a copy ---------------------------------------------------------------------

@pytest.fixture
def system(tmp_path) -> FakeSystem:
    """A fake root with python3-blinker (copied from this machine's database where it has it)."""
    fake = FakeSystem(tmp_path / "root")
    with system_lock():  # never a copy of the real files while another test plants an edit in them
        fake_blinker(fake)
    return fake


def read(fake: FakeSystem) -> DpkgOwnership:
    return read_dpkg(str(fake.database), str(fake.site), containment_for_site_packages([str(fake.site)]))


def _entries(result: DpkgOwnership, name: str) -> dict[str, bytes | None]:
    dist = _dist(result, name)
    return {e.path: (e.hash.digest if e.hash else None) for e in dist.entries}


def test_copy_reads_like_the_original(system):
    result = read(system)
    assert result.problems == () and result.unverifiable == ()
    entries = _entries(result, "python3-blinker")
    assert "blinker/base.py" in entries and not any(p in entries for p in ("blinker", "blinker-1.5.dist-info"))
    for path, digest in entries.items():
        assert digest == debian.md5(system.site / path), path
    assert result.python_metadata_dirs == {str(system.site / "blinker-1.5.dist-info")}
    dist = _dist(result, "python3-blinker")
    assert dist.metadata_dir == str(system.info / "python3-blinker.list")
    lines = (system.info / "python3-blinker.list").read_bytes().split(b"\n")
    assert all(lines[e.line - 1] == f"/{DIST_PACKAGES}/{e.path}".encode() for e in dist.entries)


def test_files_outside_the_site_packages_are_not_entries(system):
    system.add("python3-mixed", {"mixed.py": b"x = 1\n"})
    lst = system.info / "python3-mixed.list"
    lst.write_bytes(lst.read_bytes() + b"/usr/share/doc/python3-mixed/copyright\n/etc/mixed.conf\n"
                    b"/usr/lib/python3/dist-packagesX/evil.py\n/usr/lib/python3/dist-packages\n")
    assert set(_entries(read(system), "python3-mixed")) == {"mixed.py"}


def test_non_utf8_path(system):
    name = b"caf\xe9.py"
    system.add("python3-cafe", {b"cafe/" + name: b"x = 1\n"})
    entries = _entries(read(system), "python3-cafe")
    assert entries == {os.fsdecode(b"cafe/" + name): hashlib.md5(b"x = 1\n").digest()}


def test_malformed_md5_lines_are_problems_the_rest_is_read(system):
    system.add("python3-bad", {"bad/a.py": b"a\n", "bad/b.py": b"b\n"})
    md5s = system.info / "python3-bad.md5sums"
    md5s.write_bytes(b"nothex  usr/lib/python3/dist-packages/bad/zzz.py\n" + md5s.read_bytes()
                     + b"0123456789abcdef\n" + b"\xff\xfe\x00garbage\n")
    result = read(system)
    assert _entries(result, "python3-bad") == {"bad/a.py": hashlib.md5(b"a\n").digest(),
                                               "bad/b.py": hashlib.md5(b"b\n").digest()}
    lines = sorted(p.message.split(":")[0] for p in result.problems if p.path == str(md5s))
    assert lines == ["line 1", "line 4", "line 5"]


def test_two_md5s_for_one_path_check_presence_only(system):
    system.add("python3-twice", {"twice.py": b"a\n"})
    md5s = system.info / "python3-twice.md5sums"
    md5s.write_bytes(md5s.read_bytes() + b"0" * 32 + b"  usr/lib/python3/dist-packages/twice.py\n")
    result = read(system)
    assert _entries(result, "python3-twice") == {"twice.py": None}
    assert any("two different md5s" in p.message for p in result.problems)


def test_list_path_escaping_the_site_packages_is_ignored(system):
    system.add("python3-escape", {"ok.py": b"a\n"})
    lst = system.info / "python3-escape.list"
    lst.write_bytes(lst.read_bytes() + b"/usr/lib/python3/dist-packages/../../../../etc/shadow\n"
                    b"/usr/lib/python3/dist-packages//double.py\n")
    result = read(system)
    assert set(_entries(result, "python3-escape")) == {"ok.py"}
    assert sum("not a normal path" in p.message for p in result.problems) == 2


def test_list_that_is_a_fifo_is_a_problem_not_a_hang(system):
    system.add("python3-fifo", {"fifo_pkg.py": b"a\n"})
    lst = system.info / "python3-fifo.list"
    lst.unlink()
    os.mkfifo(lst)
    started = time.perf_counter()
    result = read(system)
    assert time.perf_counter() - started < 10
    assert "python3-fifo" not in {d.name for d in result.distributions}
    assert [p.path for p in result.problems] == [str(lst)] and "not a regular file" in result.problems[0].message
    assert _entries(result, "python3-blinker")  # the rest is read


def test_list_that_is_a_symlink_out_is_not_read(system, tmp_path):
    """A .list linked to /etc/shadow, and one linked to a canary outside the database that would
    make driftscan own a file if it were read: both refused."""
    canary = tmp_path / "canary.list"
    canary.write_bytes(b"/usr/lib/python3/dist-packages/canary.py\n")
    (system.site / "canary.py").write_bytes(b"x\n")
    system.add("python3-shadow", {"s.py": b"s\n"})
    system.add("python3-canary", {"c.py": b"c\n"})
    (system.info / "python3-shadow.list").unlink()
    (system.info / "python3-shadow.list").symlink_to("/etc/shadow")
    (system.info / "python3-canary.list").unlink()
    (system.info / "python3-canary.list").symlink_to(canary)
    result = read(system)
    names = {d.name for d in result.distributions}
    assert "python3-shadow" not in names and "python3-canary" not in names
    assert not any(e.path == "canary.py" for d in result.distributions for e in d.entries)
    assert {p.path for p in result.problems} == {str(system.info / "python3-shadow.list"),
                                                 str(system.info / "python3-canary.list")}


def test_sparse_1gb_md5sums_is_refused_presence_only(system):
    system.add("python3-huge", {"huge.py": b"h\n"})
    md5s = system.info / "python3-huge.md5sums"
    with open(md5s, "r+b") as f:
        f.truncate(1 << 30)
    started = time.perf_counter()
    result = read(system)
    assert time.perf_counter() - started < 10
    assert _entries(result, "python3-huge") == {"huge.py": None}
    assert any(p.path == str(md5s) and "more than" in p.message for p in result.problems)
    assert any(u.distribution == "python3-huge" and "presence checked only" in u.reason for u in result.unverifiable)
    assert LIMITS["dpkg md5sums"] < 1 << 30


def test_package_without_md5sums_is_presence_only(system):
    system.add("python3-nomd5", {"nomd5.py": b"n\n"}, md5sums=False)
    result = read(system)
    assert _entries(result, "python3-nomd5") == {"nomd5.py": None}
    reasons = [u.reason for u in result.unverifiable if u.distribution == "python3-nomd5"]
    assert reasons == ["dpkg recorded no md5sums for it: presence checked only"]
    assert result.problems == ()


def test_removed_package_owns_nothing(system):
    """deinstall ok config-files: removed, only its conffiles left; not-installed: gone."""
    system.add("python3-removed", {"removed.py": b"r\n"}, status="deinstall ok config-files")
    system.add("python3-purged", {"purged.py": b"p\n"}, status="purge ok not-installed")
    result = read(system)
    names = {d.name for d in (*result.distributions, *result.untrusted)}
    assert not names & {"python3-removed", "python3-purged"}
    assert result.problems == () and result.unverifiable == ()


def test_half_installed_package_is_not_trusted(system):
    system.add("python3-half", {"half.py": b"h\n"}, status="install reinstreq half-installed")
    result = read(system)
    assert "python3-half" not in {d.name for d in result.distributions}
    [half] = result.untrusted
    assert half.name == "python3-half" and [(e.path, e.hash) for e in half.entries] == [("half.py", None)]
    [why] = [u.reason for u in result.unverifiable if u.distribution == "python3-half"]
    assert "install reinstreq half-installed" in why and "not trusted" in why
    assert owners_of(result, "half.py") == (half,)


def test_unpacked_not_yet_configured_package_is_verified(system):
    system.add("python3-unpacked", {"unpacked.py": b"u\n"}, status="install ok unpacked")
    system.add("python3-trig", {"trig.py": b"t\n"}, status="install ok triggers-pending")
    result = read(system)
    assert _entries(result, "python3-unpacked")["unpacked.py"] is not None
    assert _entries(result, "python3-trig")["trig.py"] is not None


def test_journal_in_updates_overrides_status(system):
    """dpkg writes status changes to updates/NNNN before folding them into status."""
    (system.database / "updates/0000").write_text(status_paragraph("python3-blinker", "1.5-1",
                                                                   status="install reinstreq half-installed"))
    (system.database / "updates/tmp.i").write_text("garbage being written\n")
    result = read(system)
    assert "python3-blinker" not in {d.name for d in result.distributions}
    assert [d.name for d in result.untrusted] == ["python3-blinker"]


def test_multi_arch_names_and_shared_files(system):
    """Multi-Arch: same packages have pkg:arch.list; co-installed for two architectures they
    list the same files."""
    files = {"_ext.cpython-311-x86_64-linux-gnu.so": b"\x7fELF"}
    system.add("python3-ext", files, stem="python3-ext:amd64", arch="amd64", multi_arch="same")
    system.add("python3-ext", files, stem="python3-ext:i386", arch="i386", multi_arch="same")
    result = read(system)
    exts = [d for d in result.distributions if d.name == "python3-ext"]
    assert sorted((d.build, package_spec(d)) for d in exts) == [("amd64", "python3-ext:amd64"),
                                                                 ("i386", "python3-ext:i386")]
    assert result.shared == {"_ext.cpython-311-x86_64-linux-gnu.so": ("python3-ext:amd64", "python3-ext:i386")}
    assert len(owners_of(result, "_ext.cpython-311-x86_64-linux-gnu.so")) == 2


def test_diversions(system):
    """dpkg-divert: python3-patch diverts blinker/base.py to base.py.distrib and ships its own;
    a local diversion moves another file out of the site-packages."""
    original = (system.site / "blinker/base.py").read_bytes()
    (system.site / "blinker/base.py.distrib").write_bytes(original)
    system.add("python3-patch", {"blinker/base.py": b"patched\n"})
    system.add("python3-local", {"local_mod.py": b"l\n", "into.py": b"i\n"})
    lst = system.info / "python3-local.list"
    lst.write_bytes(lst.read_bytes() + b"/usr/share/python3-local/outside.py\n")
    # a package none of whose listed paths is under the site-packages, but one diverted into it
    (system.info / "python3-outsider.list").write_bytes(b"/.\n/usr\n/usr/share\n/usr/share/outsider.py\n")
    system.paragraphs.append(status_paragraph("python3-outsider"))
    system.write_status()
    (system.database / "diversions").write_bytes(
        b"/usr/lib/python3/dist-packages/blinker/base.py\n/usr/lib/python3/dist-packages/blinker/base.py.distrib\n"
        b"python3-patch\n"
        b"/usr/lib/python3/dist-packages/local_mod.py\n/usr/local/share/local_mod.py\n:\n"
        b"/usr/share/python3-local/outside.py\n/usr/lib/python3/dist-packages/outside_diverted_in.py\n:\n"
        b"/usr/share/outsider.py\n/usr/lib/python3/dist-packages/outsider.py\npython3-other\n")
    result = read(system)
    blinker = _entries(result, "python3-blinker")
    assert "blinker/base.py" not in blinker and "blinker/base.py.distrib" in blinker
    assert blinker["blinker/base.py.distrib"] == hashlib.md5(original).digest()
    assert _entries(result, "python3-patch") == {"blinker/base.py": hashlib.md5(b"patched\n").digest()}
    assert set(_entries(result, "python3-outsider")) == {"outsider.py"}
    local = _entries(result, "python3-local")
    assert set(local) == {"into.py", "outside_diverted_in.py"}  # local_mod.py lives in /usr/local now
    assert result.diverted == {"blinker/base.py.distrib": f"/{DIST_PACKAGES}/blinker/base.py",
                               "outside_diverted_in.py": "/usr/share/python3-local/outside.py",
                               "outsider.py": "/usr/share/outsider.py"}


def test_malformed_diversions(system):
    (system.database / "diversions").write_bytes(b"relative\n/x\npkg\n/only/two\n/lines\n")
    result = read(system)
    assert _entries(result, "python3-blinker")
    assert len([p for p in result.problems if p.path.endswith("diversions")]) == 2


def test_conffile_under_site_packages_is_presence_only(system):
    conf = b"setting = 1\n"
    system.add("python3-conf", {"conf_pkg/settings.cfg": conf, "conf_pkg/__init__.py": b""},
               conffiles={f"/{DIST_PACKAGES}/conf_pkg/settings.cfg": hashlib.md5(conf).hexdigest() + " obsolete"})
    result = read(system)
    entries = _entries(result, "python3-conf")
    assert entries["conf_pkg/settings.cfg"] is None and entries["conf_pkg/__init__.py"] is not None
    assert result.conffiles == {"conf_pkg/settings.cfg"}


def test_empty_directory_and_symlink_listed_without_md5(system):
    system.add("python3-shapes", {"shapes/a.py": b"a\n"}, dirs=("shapes/empty",))
    (system.site / "shapes/link.py").symlink_to("a.py")
    lst = system.info / "python3-shapes.list"
    lst.write_bytes(lst.read_bytes() + f"/{DIST_PACKAGES}/shapes/link.py\n".encode())
    result = read(system)
    assert set(_entries(result, "python3-shapes")) == {"shapes/a.py", "shapes/link.py"}
    assert result.symlinks == {"shapes/link.py"}


def test_status_garbage_is_problems_the_rest_is_read(system):
    status = system.database / "status"
    status.write_bytes(status.read_bytes() + b"\n"
                       + b"Package: ../../etc/passwd\nStatus: install ok installed\nArchitecture: all\n\n"
                       + b"Package: python3-x\nStatus: install ok\nVersion: 1\n\n"
                       + b"Package: python3-y\nStatus: install ok installed\nVersion: $(reboot)\n\n"
                       + b"\xff\xfe not a field at all\n\n"
                       + b"Package: python3-z\nStatus: install ok installed\nArchitecture: ../..\n")
    result = read(system)
    assert _entries(result, "python3-blinker")
    messages = " | ".join(p.message for p in result.problems)
    for expected in ("is not a Debian package name", "is not '<want> <flag> <state>'",
                     "is not a Debian version", "not a status field", "architecture '../..' is not valid"):
        assert expected in messages


def test_status_that_cannot_be_read(system):
    status = system.database / "status"
    status.unlink()
    os.mkfifo(status)
    result = read(system)
    assert result.distributions == () and len(result.problems) == 1
    assert "not a regular file" in result.problems[0].message


def test_info_that_is_a_symlink_out(system, tmp_path):
    elsewhere = tmp_path / "elsewhere-info"
    os.rename(system.info, elsewhere)
    system.info.symlink_to(elsewhere)
    result = read(system)
    assert result.distributions == () and result.problems[0].path == str(system.info)


def test_problems_are_capped(system):
    system.add("python3-noisy", {"noisy.py": b"n\n"})
    md5s = system.info / "python3-noisy.md5sums"
    md5s.write_bytes(md5s.read_bytes() + b"junk\n" * 5000)
    result = read(system)
    mine = [p for p in result.problems if p.path == str(md5s)]
    assert len(mine) == MAX_PROBLEMS + 1 and mine[-1].message == f"{5000 - MAX_PROBLEMS} more problems like these"


def test_list_budget_bounds_the_work(system, monkeypatch):
    monkeypatch.setattr(dpkg_module, "LIST_BUDGET", 1)
    system.add("python3-zzz", {"zzz.py": b"z\n"})
    result = read(system)
    assert any("not read" in p.message for p in result.problems)


def test_not_a_dist_packages(tmp_path):
    result = read_dpkg(str(tmp_path), str(tmp_path / "lib/python3.11/site-packages"))
    assert result.distributions == () and "dpkg's database not used" in result.problems[0].message


def test_validators():
    assert valid_package_name("python3-lazr.restfulclient") and valid_package_name("g++")
    assert not valid_package_name("../etc") and not valid_package_name("Python3") and not valid_package_name("a")
    assert valid_version("1:2.28.1+dfsg-1~deb12u1") and valid_version("0.99.30-4.1~deb12u1")
    assert not valid_version("$(reboot)") and not valid_version("1 2") and not valid_version("")


def test_one_list_named_by_many_paragraphs_is_read_once(system):
    system.add("python3-twice", {"twice.py": b"t\n"}, arch="amd64")
    system.paragraphs.append(status_paragraph("python3-twice", arch="i386"))
    system.paragraphs.append(status_paragraph("python3-twice", arch="arm64"))
    system.write_status()
    result = read(system)
    [dist] = [d for d in result.distributions if d.name == "python3-twice"]
    assert dist.build == "amd64" and [e.path for e in dist.entries] == ["twice.py"]
    [problem] = [p for p in result.problems if p.path == str(system.info / "python3-twice.list")]
    assert problem.message == ("status names 3 packages for this one file list: read once, as python3-twice:amd64's, "
                               "not for python3-twice:arm64, python3-twice:i386")
    assert "twice.py" not in result.shared
