"""driftscan.git.config: the repository's config parsed here and cut down to inert keys; any key that
could run a command, include a file or point git elsewhere never reaches the private config."""

from __future__ import annotations

import pytest

from driftscan.git.config import WHITELIST, check_format, parse_config, read_config
from driftscan.git.errors import GitRefused
from fixtures.gitrepos import git, init_repo

HOSTILE = """\
[core]
\tfsmonitor = /tmp/attack/fsmonitor.sh
\tpager = sh -c 'touch /tmp/pwned'
\thooksPath = /tmp/attack/hooks
\tsshCommand = /tmp/attack/ssh
\teditor = /tmp/attack/editor
\texcludesFile = /etc/shadow
\tfilemode = no
[diff]
\texternal = /tmp/attack/diff
[include]
\tpath = /tmp/attack/more.config
[includeIf "gitdir:/"]
\tpath = /tmp/attack/more.config
[filter "lfs"]
\tclean = /tmp/attack/clean
\tprocess = /tmp/attack/process
[credential]
\thelper = /tmp/attack/helper
"""


def test_parse_config_syntax():
    text = ('# comment\n; another\n[Core]\n\tFileMode = false ; trailing comment\n'
            '\tbare\n'  # a bare key is true (an empty value)
            '\tEditor = "vim  -u  NONE" # quoted spaces kept\n'
            '\tlong = a\\\nb\n'  # a line continuation
            '\tescaped = "tab\\there\\\\ \\"q\\""\n'
            '\tspaced =   x   y   \n'
            '[remote "origin"]\n\turl = https://example.invalid/r\n'  # a subsection: not kept
            '[a.b]\n\tc = 1\n'
            '[user]\n\tname = first\n\tname = last\n')
    assert parse_config(text) == {
        "core.filemode": "false", "core.bare": "", "core.editor": "vim  -u  NONE", "core.long": "ab",
        "core.escaped": 'tab\there\\ "q"', "core.spaced": "x   y", "user.name": "last"}


def test_parse_config_stops_at_an_unclosed_section_and_skips_what_is_no_key():
    assert parse_config("[core]\n\tfilemode = true\n[broken\n\tx = 1\n") == {"core.filemode": "true"}
    assert parse_config("[core]\n\t= value\n\t!!! = 1\n\tfilemode = false\n") == {"core.filemode": "false"}
    assert parse_config("key = before any section\n") == {}


def test_hostile_keys_are_cut():
    values = parse_config(HOSTILE)
    assert values["core.fsmonitor"] == "/tmp/attack/fsmonitor.sh"  # parsed as data...
    assert "include.path" in values
    config = check_format(values, "/r/.git")
    assert config == {"core.filemode": "false", "core.repositoryformatversion": "0"}  # ...and not kept


def test_whitelisted_values_are_validated_and_normalized():
    config = check_format({"core.filemode": "Yes", "core.symlinks": "0", "core.ignorecase": "maybe",
                           "core.autocrlf": "INPUT", "core.eol": "cr", "core.checkstat": "minimal",
                           "core.trustctime": ""}, "/r/.git")
    assert config == {"core.filemode": "true", "core.symlinks": "false", "core.autocrlf": "input",
                      "core.checkstat": "minimal", "core.trustctime": "true", "core.repositoryformatversion": "0"}
    assert all(key.startswith(("core.", "extensions.")) for key in WHITELIST)


def test_object_format_is_kept_only_in_format_1():
    assert check_format({"extensions.objectformat": "sha256", "core.repositoryformatversion": "1"}, "/r") == {
        "extensions.objectformat": "sha256", "core.repositoryformatversion": "1"}
    assert check_format({"extensions.objectformat": "sha256"}, "/r") == {"core.repositoryformatversion": "0"}
    assert check_format({"extensions.objectformat": "md5", "core.repositoryformatversion": "1"}, "/r") == {
        "core.repositoryformatversion": "1"}


def test_refusals():
    with pytest.raises(GitRefused, match="a bare git repository has no work tree"):
        check_format({"core.bare": "yes"}, "/r/.git")
    with pytest.raises(GitRefused, match="repository format version '2' is not one driftscan reads"):
        check_format({"core.repositoryformatversion": "2"}, "/r/.git")
    with pytest.raises(GitRefused, match="uses extensions.refstorage=reftable, which driftscan does not read"):
        check_format({"core.repositoryformatversion": "1", "extensions.refstorage": "reftable",
                      "extensions.noop": "x"}, "/r/.git")
    # in format 0 git ignores extensions: so does this
    assert check_format({"extensions.refstorage": "reftable"}, "/r") == {"core.repositoryformatversion": "0"}


def test_read_config_of_a_real_repository(tmp_path):
    repo = init_repo(tmp_path / "r")
    git(repo, "config", "core.autocrlf", "input")
    git(repo, "config", "core.fsmonitor", "/tmp/attack/x")
    values = read_config(str(repo / ".git"))
    assert values["core.autocrlf"] == "input" and values["core.bare"] == "false"
    assert check_format(values, str(repo / ".git"))["core.autocrlf"] == "input"
    assert "core.fsmonitor" not in check_format(values, str(repo / ".git"))
    assert read_config(str(tmp_path)) == {}  # no config file
