"""Provenance on real wheels installed by real pip and real uv (offline): each wheel found by its
file digest, the installed RECORD compared with the wheel's own, row by row."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from driftscan.api import audit
from driftscan.core.values import Distribution
from driftscan.environment import find_distributions
from driftscan.pristine import PristineOptions
from driftscan.provenance.check import check_provenance
from driftscan.provenance.expected import Expected
from driftscan.provenance.model import FileState, ProvenanceSource, RowChange, RowChangeKind
from driftscan.provenance.rows import compare_rows
from fixtures import venvs
from fixtures.harness import replace_by_rename
from fixtures.wheels import build_wheel, record_hash

PACKAGES = ("pvclean", "pvrehash", "pvremoved", "pvadded", "pvscripts", "pvdigest", "pvcorrupt", "pvnowheel")
CORE = "VALUE = {name!r}\n" + "# padding\n" * 10


def files(name: str) -> dict[str, str]:
    return {f"{name}/__init__.py": "from .core import VALUE\n", f"{name}/core.py": CORE.format(name=name)}


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def dists_of(site: Path) -> dict[str, Distribution]:
    return {m.distribution.name: m.distribution for m in find_distributions((str(site),))
            if m.distribution is not None}


def options(tmp: Path, *wheels: Path) -> PristineOptions:
    """Only the given --wheels: empty uv and pip caches (never the user's own)."""
    for name in ("no-uv", "no-pip"):
        (tmp / name).mkdir(exist_ok=True)
    return PristineOptions(wheels=tuple(map(str, wheels)), uv_cache=str(tmp / "no-uv"), pip_cache=str(tmp / "no-pip"))


def rewrite_row(site: Path, dist: Distribution, path: str, data: bytes | None) -> None:
    """Rewrite ``path``'s row in the installed RECORD to describe ``data`` (None: drop the row)."""
    record = Path(dist.metadata_dir) / "RECORD"
    lines = []
    for line in record.read_text().splitlines():
        if line.split(",", 1)[0] == path:
            if data is None:
                continue
            line = f"{path},{record_hash(data)},{len(data)}"
        lines.append(line)
    record.write_text("\n".join(lines) + "\n")


def by_name(results) -> dict:
    return {p.distribution: p for p in results}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("provenance-wheels")
    house = root / "house"
    paths = {name: build_wheel(house, name, "1.0", files(name)) for name in PACKAGES if name != "pvscripts"}
    paths["pvscripts"] = build_wheel(house, "pvscripts", "1.0", files("pvscripts"),
                                     console_scripts={"pvscripts-run": "pvscripts:VALUE"},
                                     data={"scripts": {"pvscripts-sh": "#!python\nprint('hi')\n"}})
    paths["house"] = house
    paths["root"] = root
    return paths


def lock_of(built: dict[str, Path]) -> dict[str, Expected]:
    """What a lockfile says: each wheel's sha256, by normalized name."""
    return {name: Expected(sha256_of(built[name]), "uv.lock", built[name].name) for name in PACKAGES}


def expected_for(site: Path, built: dict[str, Path]) -> dict[str, Expected]:
    locked = lock_of(built)
    return {d.metadata_dir: locked[d.name] for d in dists_of(site).values() if d.name in locked}


@pytest.fixture(scope="module", params=["pip", "uv"])
def site(request, tmp_path_factory, built) -> Path:
    """A venv with every package installed from the wheelhouse by name (no direct_url.json), pip
    compiling bytecode into RECORD; then the edits the tests look for."""
    root = tmp_path_factory.mktemp(f"provenance-{request.param}")
    if request.param == "pip":
        venv = venvs.make_pip_venv(root / "venv")
        venvs.pip_install(venv, "--no-index", "--compile", "--find-links", str(built["house"]), *PACKAGES)
    else:
        cache = root / "uv-cache"
        venv = venvs.make_uv_venv(root / "venv", cache)
        venvs.uv_install(venv, cache, "--no-index", "--compile-bytecode", "--find-links", str(built["house"]),
                         *PACKAGES)
    site = venvs.site_packages_of(venv)
    dists = dists_of(site)
    # An edit whose RECORD row is re-hashed to match (by rename: never through uv's hard link).
    edited = "VALUE = 'pwned'\n"
    replace_by_rename(site / "pvrehash/core.py", edited)
    rewrite_row(site, dists["pvrehash"], "pvrehash/core.py", edited.encode())
    # A row removed (its file too), a row and its file added.
    (site / "pvremoved/core.py").unlink()
    rewrite_row(site, dists["pvremoved"], "pvremoved/core.py", None)
    extra = b"import os\n"
    (site / "pvadded/extra.py").write_bytes(extra)
    record = Path(dists["pvadded"].metadata_dir) / "RECORD"
    record.write_text(record.read_text() + f"pvadded/extra.py,{record_hash(extra)},{len(extra)}\n")
    return site


@pytest.fixture(scope="module")
def results(site, built, tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("provenance-options")
    return by_name(check_provenance(list(dists_of(site).values()), expected_for(site, built),
                                    options(tmp, built["house"])))


def test_an_untouched_install_is_verified_with_no_rows(results, built):
    found = results["pvclean"]
    assert found.verified and found.reason is None and found.how_to is None
    assert found.rows == () and found.rows_compared >= 3  # two modules, METADATA, WHEEL
    assert found.source is ProvenanceSource.WHEELS and found.wheel == built["pvclean"].name
    assert found.wheel_sha256 == sha256_of(built["pvclean"]) and found.lock == "uv.lock"


def test_a_rehashed_edit_is_found_though_the_audit_says_clean(results, site, built):
    report = audit(site_packages=[str(site)], compare=False)
    assert [d.relpath for d in report.drifts if d.distribution and d.distribution.name == "pvrehash"] == []
    found = results["pvrehash"]
    assert found.verified
    assert found.rows == (RowChange("pvrehash/core.py", RowChangeKind.CHANGED,
                                    record_hash(b"VALUE = 'pwned'\n"),
                                    record_hash(CORE.format(name="pvrehash").encode()),
                                    FileState.MATCHES_INSTALLED_ROW),)


def test_a_removed_row_is_reported_with_its_file_missing(results):
    found = results["pvremoved"]
    assert [(r.path, r.kind, r.file_state) for r in found.rows] == \
        [("pvremoved/core.py", RowChangeKind.REMOVED, FileState.MISSING)]
    assert found.rows[0].installed_hash is None and found.rows[0].wheel_hash is not None


def test_an_added_row_and_file_are_reported(results):
    found = results["pvadded"]
    assert [(r.path, r.kind, r.file_state, r.wheel_hash) for r in found.rows] == \
        [("pvadded/extra.py", RowChangeKind.ADDED, FileState.MATCHES_INSTALLED_ROW, None)]


def test_compiled_bytecode_scripts_and_installer_files_are_not_reported(results, site):
    dist = dists_of(site)["pvscripts"]
    paths = [e.path for e in dist.entries]
    # The installers did add them (so not reporting them is the point of the test); uv compiles
    # without listing the bytecode in RECORD, pip lists it.
    assert any("__pycache__/" in p and p.endswith(".pyc") for p in paths) == (dist.installer == "pip")
    assert any(p.endswith("/bin/pvscripts-run") for p in paths) and any(p.endswith("/bin/pvscripts-sh") for p in paths)
    assert any(p.endswith(".dist-info/INSTALLER") for p in paths)
    found = results["pvscripts"]
    assert found.verified and found.rows == ()


def test_a_wheel_whose_digest_differs_is_rejected_with_both_digests(site, built, tmp_path):
    other = tmp_path / "other-house"
    impostor = build_wheel(other, "pvdigest", "1.0", {**files("pvdigest"), "pvdigest/core.py": "VALUE = 1\n"})
    wanted = lock_of(built)["pvdigest"]
    dist = dists_of(site)["pvdigest"]
    [found] = check_provenance([dist], {dist.metadata_dir: wanted}, options(tmp_path, other))
    assert not found.verified and found.source is ProvenanceSource.NONE and found.rows == ()
    assert str(impostor) in found.reason
    assert f"its sha256 {sha256_of(impostor)[:12]}… differs from the expected {wanted.sha256[:12]}…" in found.reason


def test_a_corrupt_wheel_with_the_expected_digest_is_unverified(site, built, tmp_path):
    house = tmp_path / "corrupt"
    house.mkdir()
    corrupt = house / built["pvcorrupt"].name
    corrupt.write_bytes(built["pvcorrupt"].read_bytes()[:200])  # truncated: no central directory
    dist = dists_of(site)["pvcorrupt"]
    [found] = check_provenance([dist], {dist.metadata_dir: Expected(sha256_of(corrupt), "pylock.toml")},
                               options(tmp_path, house))
    assert not found.verified and found.lock == "pylock.toml"
    assert "its sha256 is the expected one, but it is not a zip file" in found.reason


def test_no_wheel_at_hand_says_how_to_get_one(site, built, tmp_path):
    dist = dists_of(site)["pvnowheel"]
    [found] = check_provenance([dist], {dist.metadata_dir: lock_of(built)["pvnowheel"]}, options(tmp_path))
    assert not found.verified and found.wheel is None and found.source is ProvenanceSource.NONE
    assert "--wheels (not given)" in found.reason and "--fetch (not asked for)" in found.reason
    assert "pip download --no-deps --only-binary :all: pvnowheel==1.0 -d" in found.how_to
    assert "--wheels" in found.how_to and "--fetch" in found.how_to


def test_only_distributions_with_an_expected_digest_are_checked(site, built, tmp_path):
    dists = list(dists_of(site).values())
    assert check_provenance(dists, {}, options(tmp_path, built["house"])) == []


@pytest.fixture(scope="module")
def direct_site(tmp_path_factory, built) -> tuple[Path, Path]:
    """``pip install ./x.whl``: pip records the archive's sha256 in direct_url.json."""
    root = tmp_path_factory.mktemp("provenance-direct")
    wheel = build_wheel(root / "own", "pvdirect", "1.0", files("pvdirect"))
    venv = venvs.make_pip_venv(root / "venv")
    venvs.pip_install(venv, "--no-index", str(wheel))
    return venvs.site_packages_of(venv), wheel


def test_a_wheel_installed_by_path_is_found_without_any_lock(direct_site, tmp_path):
    site, wheel = direct_site
    dists = list(dists_of(site).values())
    found = by_name(check_provenance(dists, {}, options(tmp_path)))
    assert list(found) == ["pvdirect"]  # pip itself (from ensurepip) has no archive hash
    assert found["pvdirect"].verified and found["pvdirect"].rows == ()
    assert found["pvdirect"].source is ProvenanceSource.DIRECT_URL and found["pvdirect"].lock is None
    assert found["pvdirect"].wheel_sha256 == sha256_of(wheel) and found["pvdirect"].wheel == wheel.name


def test_a_replaced_wheel_behind_direct_url_is_not_the_one(direct_site, tmp_path):
    site, wheel = direct_site
    saved = tmp_path / "saved.whl"
    shutil.copy2(wheel, saved)
    try:
        build_wheel(wheel.parent, "pvdirect", "1.0", {**files("pvdirect"), "pvdirect/core.py": "VALUE = 2\n"})
        [found] = check_provenance([dists_of(site)["pvdirect"]], {}, options(tmp_path))
        assert not found.verified and "direct_url.json's wheel" in found.reason and "differs from the expected" \
            in found.reason
    finally:
        shutil.copy2(saved, wheel)
