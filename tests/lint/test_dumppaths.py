"""What a path expression writes to, as a glob: constant parts kept, computed parts ``*``."""

from __future__ import annotations

import re

import libcst as cst
import pytest

from driftscan.lint.analysis import dotted_name
from driftscan.lint.dumppaths import WILD, PathInfo, fill_template, path_info

QUALIFY = {"Path": "pathlib.Path", "join": "os.path.join"}


def qualify(expr):
    name = dotted_name(expr)
    return QUALIFY.get(name, name)


def info(source: str, names: dict[str, str] | None = None) -> PathInfo:
    assigned = {k: cst.parse_expression(v) for k, v in (names or {}).items()}
    return path_info(cst.parse_expression(source), qualify, assigned.get)


@pytest.mark.parametrize(("source", "glob"), [
    ('"/tmp/x.pt"', "/tmp/x.pt"),
    ('"/tmp/" "x.pt"', "/tmp/x.pt"),
    ('f"/tmp/nomla_{self._n}_{x.shape[0]}.pt"', "/tmp/nomla_*_*.pt"),
    ('"/tmp/x_%d_%s.pt" % (i, n)', "/tmp/x_*_*.pt"),
    ('"/tmp/100%%_%d" % i', "/tmp/100%_*"),
    ('"/tmp/x_{}_{name}.pt".format(i, name=n)', "/tmp/x_*_*.pt"),
    ('"/tmp/{{x}}_{}".format(i)', "/tmp/{x}_*"),
    ('"/tmp/" + name + ".pt"', "/tmp/*.pt"),
    ('os.path.join("/tmp", "d", name)', "/tmp/d/*"),
    ('os.path.join(base, "/tmp/abs.pt")', "/tmp/abs.pt"),
    ('Path("/tmp") / "dumps" / f"{i}.npy"', "/tmp/dumps/*.npy"),
    ('str(Path("/tmp/a.pt"))', "/tmp/a.pt"),
    ('Path("/tmp").joinpath("a", "b.pt")', "/tmp/a/b.pt"),
    ('Path("/tmp/a").with_suffix(".pt")', "/tmp/a*.pt"),
])
def test_globs_of_path_expressions(source, glob):
    assert info(source).glob == glob


def test_nothing_constant_gives_no_glob():
    assert info("some_path").glob is None
    assert info("get_path(x)").glob is None


def test_consecutive_computed_parts_collapse_into_one_star():
    assert info('"/tmp/" + a + b + ".pt"').glob == "/tmp/*.pt"


def test_glob_special_characters_in_constant_parts_are_escaped():
    assert info('"/tmp/x[1]*?.pt"').glob == "/tmp/x[[]1][*][?].pt"


def test_a_name_is_followed_to_its_assignment():
    assert info("path", {"path": 'f"/tmp/out_{i}.pt"'}).glob == "/tmp/out_*.pt"


def test_in_tmp_needs_the_temporary_directory_as_a_path_prefix():
    assert info('"/tmp/a.pt"').in_tmp
    assert info('"/dev/shm/a"').in_tmp
    assert info('"/var/tmp"').in_tmp
    assert not info('"/tmpdir/a.pt"').in_tmp
    assert not info('"/home/tmp/a.pt"').in_tmp
    assert not info("name").in_tmp


def test_in_tmp_also_needs_the_directory_in_the_literal_text():
    # The glob says /tmp, but only because of an escape: the raw bytes never say /tmp, so
    # the byte prefilter would not see it, and neither does in_tmp.
    escaped = info('"\\x2ftmp/a.pt"')
    assert escaped.glob == "/tmp/a.pt"
    assert not escaped.in_tmp


def test_raw_literals_are_the_source_text_of_the_string_tokens():
    assert info('"/tmp/" + f"{i}.pt"').raw_literals == ('"/tmp/"', ".pt")


def test_fill_template_makes_each_field_wild_and_resolves_escapes():
    parts = fill_template(["a%db%%c", WILD], re.compile(r"%%|%d"), {"%%": "%"})
    assert parts == ["a", WILD, "b", "%", "c", WILD]
