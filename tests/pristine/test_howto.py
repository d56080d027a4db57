"""driftscan.pristine.howto: the lines a user can run to get an original driftscan did not find."""

from __future__ import annotations

import shlex

from driftscan.core.values import Distribution, RecordEntry
from driftscan.pristine.base import Lookup, PristineCopy, Rejected, SourceKind
from driftscan.pristine.fetch import tag_arguments
from driftscan.pristine.howto import download_line, ways_to_original, wheels_dir, why_no_original
from fixtures.wheelfiles import entry, installed


def test_wheels_dir_is_in_driftscan_s_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(tmp_path / "cache"))
    assert wheels_dir() == str(tmp_path / "cache" / "wheels")


def test_download_line_names_the_installed_wheel(tmp_path):
    (tmp_path / "venv").mkdir()
    (tmp_path / "venv" / "pip.conf").write_text("[global]\nindex-url = https://mirror.example/simple\n")
    dist = installed(tmp_path / "site", "pkg", "1.0", {}, tag="cp311-cp311-linux_x86_64")
    line = download_line(dist, "3.11", str(tmp_path / "venv"), "/my wheels")
    assert shlex.split(line) == ["pip", "download", "--no-deps", "--only-binary", ":all:",
                                 *tag_arguments(frozenset({"cp311-cp311-linux_x86_64"}), "3.11"),
                                 "--index-url", "https://mirror.example/simple", "pkg==1.0", "-d", "/my wheels"]
    assert "'/my wheels'" in line  # quoted for the shell


def test_no_download_line_for_a_name_pip_could_not_be_asked_for():
    for name, version in (("pkg$(reboot)", "1.0"), ("pkg", "1.0;reboot"), ("", "1")):
        dist = Distribution(name, version, "/site/x.dist-info", "/site")
        assert download_line(dist, None, None, "/w") is None


def test_ways_to_original_text(monkeypatch, tmp_path):
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(tmp_path / "a cache"))
    dist = installed(tmp_path / "site", "pkg", "1.0", {})
    ways = ways_to_original(dist, None, None)
    where = str(tmp_path / "a cache" / "wheels")
    assert ways.requirement == "pkg==1.0" and ways.wheels == where
    assert ways.download == shlex.join(["pip", "download", "--no-deps", "--only-binary", ":all:", "pkg==1.0",
                                        "-d", where])
    assert ways.text() == (f"pass --wheels {shlex.quote(where)} (a directory holding the pkg==1.0 wheel) or --fetch; "
                           f"to fill it: {ways.download}")
    bad = Distribution("pkg;x", "1.0", "/site/x.dist-info", "/site")
    assert ways_to_original(bad, None, None).text().endswith("or --fetch")


class Fixed(PristineCopy):
    def __init__(self, members):
        super().__init__(SourceKind.UV_CACHE, "/cache/archive-v0/abc", Distribution("pkg", "1.0", "/s/i", "/s"))
        self.members = members

    def has(self, entry):
        return entry.path in self.members

    def _open(self, entry):
        import io

        data = self.members.get(entry.path)
        return None if data is None else (io.BytesIO(data), len(data))


def test_why_no_original():
    dist = Distribution("pkg", "1.0", "/s/i", "/s")
    row = entry("pkg/core.py", b"X = 1\n")
    assert why_no_original(None, row) == "no original was looked for"
    assert why_no_original(Lookup(dist, None, (), "r"), RecordEntry("pkg/x.pyc", None, None, 0)) == \
        "RECORD gives no hash for it: nothing to verify an original against"
    assert why_no_original(Lookup(dist, None, (), "tried everything"), row) == "tried everything"
    assert why_no_original(Lookup(dist, None, (), None), row) == "no verified original found"
    copy = Fixed({"pkg/core.py": b"X = 2\n"})
    rejected = (Rejected(SourceKind.WHEELS, "/w/pkg.whl", "pkg/core.py: its content does not match"),
                Rejected(SourceKind.WHEELS, "/w/other.whl", "pkg/other.py: not in --wheels"))
    said = why_no_original(Lookup(dist, copy, rejected, None), row, uv_edited=True)
    assert said == ("uv's cache /cache/archive-v0/abc: pkg/core.py: its content does not match RECORD's sha256; "
                    "it was edited through uv's hard link, so uv's cache copy is edited too; "
                    "--wheels /w/pkg.whl (rejected: pkg/core.py: its content does not match)")
    good = Fixed({"pkg/core.py": b"X = 1\n"})
    assert why_no_original(Lookup(dist, good, (), None), row) == \
        "uv's cache /cache/archive-v0/abc: pkg/core.py verifies there"
