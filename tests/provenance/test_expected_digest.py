"""The expected wheel digest from direct_url.json's archive_info."""

from __future__ import annotations

import hashlib

import pytest

from driftscan.core.values import Distribution
from driftscan.provenance.expected import Expected, from_direct_url

DIGEST = hashlib.sha256(b"a wheel").hexdigest()
URL = "file:///wheels/pkg-1.0-py3-none-any.whl"


def dist(direct_url) -> Distribution:
    return Distribution("pkg", "1.0", "/site/pkg-1.0.dist-info", "/site", direct_url=direct_url)


@pytest.mark.parametrize("info", [{"hashes": {"sha256": DIGEST}}, {"hash": f"sha256={DIGEST}"},
                                  {"hashes": {"SHA256": DIGEST.upper()}}])
def test_the_archive_sha256_is_the_expected_digest(info):
    notes: list[str] = []
    assert from_direct_url(dist({"url": URL, "archive_info": info}), notes) == \
        Expected(DIGEST, None, "pkg-1.0-py3-none-any.whl")
    assert notes == []


def test_a_remote_url_gives_its_file_name():
    found = from_direct_url(dist({"url": "https://example.org/a/pkg-1.0-py3-none-any.whl#x",
                                  "archive_info": {"hashes": {"sha256": DIGEST}}}))
    assert found is not None and found.filename == "pkg-1.0-py3-none-any.whl"
    found = from_direct_url(dist({"url": "https://example.org/a/pkg-1.0.tar.gz",
                                  "archive_info": {"hashes": {"sha256": DIGEST}}}))
    assert found is not None and found.filename is None  # an sdist: no wheel name to give


@pytest.mark.parametrize("direct_url, why", [
    ({"url": URL, "archive_info": {"hashes": {"md5": "0" * 32}}}, "direct_url.json records no archive sha256"),
    ({"url": URL, "archive_info": {"hashes": {"sha512": "0" * 128}}},
     "direct_url.json records no archive sha256 (only sha512)"),
    ({"url": URL, "archive_info": {"hashes": {"sha256": "xyz"}}}, "direct_url.json's archive sha256 is not a hex digest"),
    ({"url": URL, "archive_info": {"hash": "sha256"}}, "direct_url.json's archive hash is not algorithm=digest"),
])
def test_no_sha256_gives_no_expectation_and_says_why(direct_url, why):
    notes: list[str] = []
    assert from_direct_url(dist(direct_url), notes) is None
    assert notes == [why]


@pytest.mark.parametrize("direct_url", [None, [], {"url": URL}, {"url": "file:///src", "dir_info": {}},
                                        {"url": URL, "archive_info": "sha256"}])
def test_nothing_recorded_is_no_expectation_and_no_note(direct_url):
    notes: list[str] = []
    assert from_direct_url(dist(direct_url), notes) is None
    assert notes == []


def test_an_expected_digest_must_be_a_sha256():
    assert Expected(DIGEST.upper()).sha256 == DIGEST
    for bad in ("", "00", DIGEST + "0", "g" * 64):
        with pytest.raises(ValueError, match="not a sha256 hex digest"):
            Expected(bad)
