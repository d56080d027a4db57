"""pipeline/locks.py on hand-made distributions and lockfiles: what is a mismatch, what is not,
and why a distribution the lock pins has no wheel digest to prove its RECORD by."""

from __future__ import annotations

from pathlib import Path

from driftscan.core.values import Distribution, DriftKind, Target, TargetKind
from driftscan.pipeline.locks import check_locks

H1 = "a" * 64


def dist(site: Path, name: str, version: str, *, tags: str = "py3-none-any", direct_url: dict | None = None):
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "WHEEL").write_text(f"Wheel-Version: 1.0\nTag: {tags}\n")
    return Distribution(name, version, str(info), str(site), installer="pip", direct_url=direct_url)


def target(tmp_path: Path) -> Target:
    return Target(TargetKind.VENV, str(tmp_path), (str(tmp_path / "site"),), python_version="3.11.7")


def test_versions_sources_extras_and_the_venvs_own_tooling(tmp_path):
    site = tmp_path / "site"
    reqs = tmp_path / "requirements.txt"
    reqs.write_text(f"alpha==1.0 --hash=sha256:{H1}\nbeta==2.0 --hash=sha256:{H1}\ngamma==3.0 --hash=sha256:{H1}\n")
    dists = [dist(site, "alpha", "1.0"), dist(site, "beta", "2.1"), dist(site, "pip", "25.0"),
             dist(site, "gamma", "3.0", direct_url={"url": "file:///src/gamma", "dir_info": {}}),
             dist(site, "delta", "0.1")]
    outcome = check_locks([str(reqs)], dists, target(tmp_path))
    found = {c.distribution.name if c.distribution else c.path: c for c in outcome.checks}
    assert all(c.kind is DriftKind.LOCK_MISMATCH for c in outcome.checks)
    assert set(found) == {"beta", "gamma", "delta"}, "pip is the venv's own: not a mismatch; alpha matches"
    assert found["beta"].expected["version"] == "2.0" and found["beta"].actual["version"] == "2.1"
    assert "installed from file:///src/gamma" in found["gamma"].evidence
    assert found["delta"].expected["version"] is None and "no such distribution" in found["delta"].evidence
    assert set(outcome.wheels) == {dists[0].metadata_dir}
    assert outcome.wheels[dists[0].metadata_dir].digests == frozenset({H1})
    assert found["beta"].remedy_hint == f"uv pip sync --python {tmp_path} {reqs}"


def test_a_package_the_lock_requires_that_is_not_installed(tmp_path):
    reqs = tmp_path / "requirements.txt"
    reqs.write_text(f"alpha==1.0 --hash=sha256:{H1}\nmissing-pkg==4.0 --hash=sha256:{H1}\n")
    outcome = check_locks([str(reqs)], [dist(tmp_path / "site", "alpha", "1.0")], target(tmp_path))
    [check] = outcome.checks
    assert check.distribution is None and check.path.endswith("site/missing_pkg-4.0.dist-info")
    assert "requires missing-pkg 4.0 here; it is not installed" in check.evidence


def test_why_a_pinned_distribution_has_no_wheel_digest(tmp_path):
    site = tmp_path / "site"
    reqs = tmp_path / "requirements.txt"
    reqs.write_text("nohash==1.0\n")
    lock = tmp_path / "uv.lock"
    lock.write_text('version = 1\nrevision = 3\nrequires-python = ">=3.8"\n\n'
                    '[[package]]\nname = "proj"\nversion = "0.1"\nsource = { virtual = "." }\n'
                    'dependencies = [{ name = "native" }]\n\n'
                    '[[package]]\nname = "native"\nversion = "2.0"\n'
                    'source = { registry = "https://pypi.org/simple" }\n'
                    f'sdist = {{ url = "https://example.invalid/native-2.0.tar.gz", hash = "sha256:{H1}" }}\n'
                    'wheels = [{ url = "https://example.invalid/native-2.0-cp39-cp39-win_amd64.whl", '
                    f'hash = "sha256:{"b" * 64}" }}]\n')
    for path, installed, why in ((reqs, dist(site, "nohash", "1.0"), "gives no hash for nohash 1.0"),
                                 (lock, dist(site, "native", "2.0", tags="cp311-cp311-linux_x86_64"),
                                  "names no wheel of native for the tags this one was installed with "
                                  "(cp311-cp311-linux_x86_64): built from the sdist")):
        outcome = check_locks([str(path)], [installed], target(tmp_path))
        assert outcome.checks == () and outcome.wheels == {}
        [prov] = outcome.no_wheel
        assert not prov.verified and why in prov.reason and prov.lock == str(path)


def test_a_lock_version_that_is_not_a_version_names_no_path_elsewhere(tmp_path):
    reqs = tmp_path / "requirements.txt"
    reqs.write_text(f"alpha==1.0 --hash=sha256:{H1}\n")
    lock = tmp_path / "pylock.toml"
    lock.write_text('lock-version = "1.0"\ncreated-by = "test"\n\n[[packages]]\nname = "ghost"\n'
                    'version = "../../../../etc/cron.d/x"\n')
    outcome = check_locks([str(lock)], [], target(tmp_path))
    [check] = outcome.checks
    assert check.path == str(tmp_path / "site" / "ghost-unknown.dist-info")
    assert check.expected["version"] == "../../../../etc/cron.d/x", "the lock's text is kept as data"
