"""environment/dists.py: metadata directories found in site-packages and what is read from them."""

from __future__ import annotations

import hashlib

from driftscan.core.values import MetadataKind
from driftscan.environment.dists import find_distributions
from driftscan.fs.containment import Containment
from fixtures.envtree import install, make_venv
from fixtures.wheels import record_hash


def found(site, containment=None):
    return {md.path.rsplit("/", 1)[1]: md for md in find_distributions((str(site),), containment=containment)}


def test_dist_info_read_as_installed(tmp_path):
    _, site = make_venv(tmp_path / "v")
    info = install(site, "demo-pkg", "1.2", {"demo_pkg/__init__.py": "X = 1\n", "../../../bin/demo": "#!/bin/sh\n"})
    (info / "REQUESTED").write_text("")
    md = found(site)[info.name]
    dist = md.distribution
    assert md.problems == () and md.has_file_list
    assert (dist.name, dist.version, dist.installer, dist.kind) == ("demo-pkg", "1.2", "pip", MetadataKind.DIST_INFO)
    assert dist.requested and dist.site_packages == str(site)
    rows = {e.path: e for e in dist.entries}
    assert set(rows) == {"demo_pkg/__init__.py", "../../../bin/demo", f"{info.name}/METADATA",
                         f"{info.name}/INSTALLER", f"{info.name}/RECORD"}
    init = rows["demo_pkg/__init__.py"]
    assert init.hash.algorithm == "sha256" and init.hash.digest == hashlib.sha256(b"X = 1\n").digest()
    assert init.size == 6 and rows[f"{info.name}/RECORD"].hash is None


def test_dist_info_without_record_is_orphaned(tmp_path):
    site = tmp_path / "site"
    (site / "ghost-1.0.dist-info").mkdir(parents=True)
    (site / "ghost-1.0.dist-info/METADATA").write_text("Name: ghost\n")
    md = found(site)["ghost-1.0.dist-info"]
    assert md.distribution is None and md.missing == ("RECORD",)


def test_name_and_version_fall_back_to_the_directory_name(tmp_path):
    site = tmp_path / "site"
    info = install(site, "pkg", "3.0", {"pkg.py": ""})
    (info / "METADATA").write_text("Metadata-Version: 2.1\n\n")  # says neither
    dist = found(site)[info.name].distribution
    assert (dist.name, dist.version) == ("pkg", "3.0")


def test_contradicting_rows_of_one_path_are_a_problem_and_presence_only(tmp_path):
    site = tmp_path / "site"
    info = install(site, "dup", "1.0", {"dup.py": "A\n", "keep.py": "B\n"},
                   extra_rows=(f"dup.py,{record_hash(b'other')},5", "keep.py,,"))
    md = found(site)[info.name]
    rows = {e.path: e for e in md.distribution.entries}
    assert rows["dup.py"].hash is None and rows["dup.py"].size is None  # neither row trusted
    assert rows["keep.py"].hash is not None  # hashless and hashed agree: the hashed row kept
    assert len(md.problems) == 1 and "dup.py is listed 2 times" in md.problems[0].message


def test_direct_url_json_must_be_an_object_with_a_url(tmp_path):
    site = tmp_path / "site"
    good = install(site, "good", "1.0", {"good.py": ""})
    (good / "direct_url.json").write_text('{"url": "file:///src/good", "dir_info": {"editable": true}}')
    bad = install(site, "bad", "1.0", {"bad.py": ""})
    (bad / "direct_url.json").write_text('{"url": "file:///x", "dir_info": [1]}')
    mds = found(site)
    assert mds[good.name].distribution.editable
    assert mds[bad.name].distribution.direct_url is None
    assert [p.message for p in mds[bad.name].problems] == ["its dir_info is not an object but list: ignored"]


def test_egg_info_lists_paths_relative_to_itself(tmp_path):
    site = tmp_path / "site"
    egg = site / "legacy-0.5-py3.11.egg-info"
    egg.mkdir(parents=True)
    (egg / "PKG-INFO").write_text("Name: legacy\nVersion: 0.5\n")
    (egg / "installed-files.txt").write_text("../legacy/__init__.py\nPKG-INFO\n\n")
    (egg / "top_level.txt").write_text("legacy\n")
    bare = site / "nolist-1.0.egg-info"
    bare.mkdir()
    mds = found(site)
    dist = mds[egg.name].distribution
    assert dist.kind is MetadataKind.EGG_INFO and (dist.name, dist.version) == ("legacy", "0.5")
    assert [e.path for e in dist.entries] == ["legacy/__init__.py", f"{egg.name}/PKG-INFO"]
    assert all(e.hash is None for e in dist.entries) and dist.top_level == ("legacy",)
    assert not mds[bare.name].has_file_list


def test_pip_target_scripts_are_looked_for_in_the_directorys_bin(tmp_path):
    target = tmp_path / "deps"  # pip install --target: no interpreter prefix around it
    info = install(target, "tool", "1.0", {"tool.py": ""}, extra_rows=("../../bin/tool,,",))
    (target / "bin").mkdir()
    (target / "bin/tool").write_text("#!/bin/sh\n")
    paths = {e.path for e in found(target)[info.name].distribution.entries}
    assert "bin/tool" in paths and "../../bin/tool" not in paths


def test_symlinked_dist_info_outside_the_containment_is_not_read(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    outside = tmp_path / "outside"
    real = install(outside, "evil", "1.0", {"evil.py": ""})
    (site / real.name).symlink_to(real)
    assert found(site, Containment([str(site)])) == {}


def test_undecodable_record_is_read_with_escapes_and_said(tmp_path):
    site = tmp_path / "site"
    info = install(site, "latin", "1.0", {"latin.py": ""})
    (info / "RECORD").write_bytes((info / "RECORD").read_bytes() + b"caf\xe9.py,,\n")
    md = found(site)[info.name]
    assert [p.message for p in md.problems] == ["not valid UTF-8; undecodable bytes kept as escapes"]
    assert "caf\udce9.py" in {e.path for e in md.distribution.entries}


def test_records_false_reads_who_not_what(tmp_path):
    site = tmp_path / "site"
    info = install(site, "who", "2.0", {"who.py": ""}, installer="uv")
    md = next(find_distributions((str(site),), records=False))
    assert (md.distribution.name, md.distribution.installer) == ("who", "uv") and len(md.distribution.entries) == 0
    assert md.path == str(info)


def test_unlistable_site_packages_is_a_problem(tmp_path):
    md = next(find_distributions((str(tmp_path / "gone"),)))
    assert md.distribution is None and md.problems[0].message.startswith("cannot list")


def test_an_app_data_image_wheel_is_found_in_uv_cache_by_its_digest(tmp_path, monkeypatch):
    """``uv tool run --from virtualenv``: the virtualenv that unpacked an app-data image lives in
    uv's cache; its embedded wheel is the image's reference only when its sha256 is the image's name."""
    from driftscan.environment import dists as dists_module

    embed = tmp_path / "uv-cache/archive-v0/ab12/virtualenv/seed/wheels/embed"
    embed.mkdir(parents=True)
    wheel = embed / "demo-1.0-py3-none-any.whl"
    wheel.write_bytes(b"the embedded wheel's bytes")
    (embed / "demo-1.0-py2-none-any.whl").write_bytes(b"another wheel of that name")
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    found = dists_module._embedded_wheel("demo-1.0.dist-info", digest)
    assert found is not None and found[0] == str(wheel) and found[1] == wheel.read_bytes()
    assert dists_module._embedded_wheel("demo-1.0.dist-info", "0" * 64) is None
