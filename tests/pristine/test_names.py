"""driftscan.pristine.names: which wheel file is a distribution's, by its file name alone."""

from __future__ import annotations

import os

from driftscan.core.values import Distribution
from driftscan.pristine.names import (
    canonical_version,
    expand_tags,
    installed_tags,
    normalize_name,
    parse_wheel_filename,
    same_release,
)


def test_names_and_tags():
    parsed = parse_wheel_filename("Foo.Bar-1.0rc1-1local-py2.py3-none-any.whl")
    assert parsed is not None and parsed.build == "1local"
    assert parsed.tags == {"py2-none-any", "py3-none-any"}
    assert parse_wheel_filename("foo-1.0.tar.gz") is None and parse_wheel_filename("foo-1.0-x-y.whl") is None
    assert expand_tags("cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64") == {
        "cp311-cp311-manylinux_2_17_x86_64", "cp311-cp311-manylinux2014_x86_64"}
    assert expand_tags("a-b") == frozenset() and expand_tags("py3-none-../x") == frozenset()
    assert canonical_version("1.0") == canonical_version("1.0.0") == "1"
    assert canonical_version("1.0RC1") == canonical_version("1.0rc1") != canonical_version("1.0")
    assert canonical_version("2.13.0+CPU") == "2.13+cpu"


def test_normalize_name_follows_pep_503():
    assert normalize_name("Foo.Bar_baz--Qux") == "foo-bar-baz-qux"
    assert normalize_name("typing_extensions") == normalize_name("typing-extensions") == "typing-extensions"


def test_canonical_version_spellings_of_one_version_agree():
    assert canonical_version("0!1.0") == "1"  # a zero epoch is not written
    assert canonical_version("1!2.0") == "1!2"
    assert canonical_version("1.0-1") == canonical_version("1.0.post1") == canonical_version("1.0post1") == "1.post1"
    assert canonical_version("1.0.dev") == "1.dev0"
    assert canonical_version("1.0alpha2") == canonical_version("1.0a2") == "1a2"
    assert canonical_version("1.0c1") == canonical_version("1.0pre1") == "1rc1"
    assert canonical_version("v1.0") == "1"
    assert canonical_version("1.0+Local_Build-7") == "1+local.build.7"
    assert canonical_version(" Weird-Version ") == "weird-version"  # not PEP 440: compared as written
    assert canonical_version("1.0") != canonical_version("1.0.post0.dev0") != canonical_version("1.0.dev0")


def test_same_release_compares_normalized_names_and_versions():
    dist = Distribution("Foo.Bar", "1.0.0", "/site/Foo.Bar-1.0.0.dist-info", "/site")
    assert same_release(dist, "foo_bar", "1.0")
    assert not same_release(dist, "foo_bar", "1.0.1")
    assert not same_release(dist, "foobar", "1.0")


def test_wheel_file_names_that_are_refused():
    assert parse_wheel_filename("pkg-1.0-py3-none-any.whl").build is None
    for name in ("pkg-1.0-py3-none-any.zip",  # not .whl
                 "pkg-1.0-x1-py3-none-any.whl",  # a build tag must start with a digit
                 "pkg--1.0-py3-none-any.whl",  # an empty part
                 "pkg-1.0-1-2-py3-none-any.whl",  # seven parts
                 "pkg-1.0-py3-none-../../x.whl"):  # a tag part with characters no tag has
        assert parse_wheel_filename(name) is None, name
    parsed = parse_wheel_filename("Pkg-1.0-CP311-ABI3-Linux_X86_64.whl")
    assert parsed.name == "Pkg" and parsed.tags == {"cp311-abi3-linux_x86_64"}  # tags in lower case


def test_installed_tags_are_read_from_the_dist_info_wheel_file(tmp_path):
    info = tmp_path / "pkg-1.0.dist-info"
    info.mkdir()
    dist = Distribution("pkg", "1.0", str(info), str(tmp_path))
    assert installed_tags(dist) is None  # no WHEEL file
    (info / "WHEEL").write_text("Wheel-Version: 1.0\nRoot-Is-Purelib: true\n")
    assert installed_tags(dist) is None  # no Tag line: matched on name and version alone
    (info / "WHEEL").write_text("Wheel-Version: 1.0\nTag: cp311-cp311-manylinux_2_17_x86_64\n"
                                "tag : cp311-cp311-manylinux2014_x86_64\nTag: not-a-tag-at-all\n")
    assert installed_tags(dist) == {"cp311-cp311-manylinux_2_17_x86_64", "cp311-cp311-manylinux2014_x86_64"}


def test_installed_tags_does_not_follow_a_symlinked_wheel_file(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("Tag: py3-none-any\n")
    info = tmp_path / "pkg-1.0.dist-info"
    info.mkdir()
    os.symlink(elsewhere, info / "WHEEL")
    assert installed_tags(Distribution("pkg", "1.0", str(info), str(tmp_path))) is None
