"""core.units: counts pluralised as English says them, sizes readable at every scale — the one
place every text output takes them from."""

from __future__ import annotations

import pytest

from driftscan.core.units import count, plural, size, size_change


@pytest.mark.parametrize(("n", "noun", "said"), [
    (0, "file", "0 files"), (1, "file", "1 file"), (2, "file", "2 files"), (1, "copy", "1 copy"),
    (2, "copy", "2 copies"), (1, "patch", "1 patch"), (3, "patch", "3 patches"), (1_234, "drift", "1,234 drifts"),
    (2, "added file", "2 added files"), (1, "debug finding", "1 debug finding"),
])
def test_counts(n, noun, said):
    assert count(n, noun) == said


def test_plural_alone():
    assert plural(1, "entry") == "entry" and plural(2, "entry") == "entries"


@pytest.mark.parametrize(("n", "said"), [
    (0, "0 bytes"), (1, "1 byte"), (999, "999 bytes"), (1_000, "1.0 KB"), (3_200, "3.2 KB"),
    (999_949, "999.9 KB"), (999_999, "1.0 MB"), (1_500_000, "1.5 MB"), (2_000_000_000, "2.0 GB"),
    (5_000_000_000_000, "5000.0 GB"),
])
def test_sizes(n, said):
    assert size(n) == said


@pytest.mark.parametrize(("old", "new", "said"), [
    (5, 7, "5 bytes → 7 bytes"), (1_234, 3_400, "1.2 KB → 3.4 KB"), (900, 1_300_000, "900 bytes → 1.3 MB"),
    (1_234, 1_236, "1,234 → 1,236 bytes"),  # the same readable size on both sides: the bytes say what changed
])
def test_size_changes(old, new, said):
    assert size_change(old, new) == said
