"""Progress on stderr, only for a terminal and long work: hashing, scanning, a fleet's nodes."""

from __future__ import annotations

import sys

import click

PROGRESS_MIN_BYTES = 256 << 20


class Progress:
    """A one-line progress bar on stderr, only when stderr is a terminal and the work is long
    (more than PROGRESS_MIN_BYTES to hash). Only the rendering: the ``progress(done, total)``
    calls come from the hashing's byte counter (``fileio.ByteProgress`` in audits and diffs)."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()
        self.last = -1

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total < PROGRESS_MIN_BYTES:
            return
        pct = int(done * 100 / total)
        if pct != self.last:
            self.last = pct
            bar = "#" * (pct // 4)
            click.echo(f"\rhashing {bar:<25} {pct:3d}% of {total / 1e9:.1f} GB", err=True, nl=pct >= 100)


class ScanProgress:
    """``scan``'s progress on stderr, for a terminal and more than a few hundred files: files
    parsed so far, as the workers report them."""

    MIN_FILES = 200

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()
        self.last = -1

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total < self.MIN_FILES:
            return
        pct = int(done * 100 / total)
        if pct != self.last:
            self.last = pct
            click.echo(f"\rscanning {'#' * (pct // 4):<25} {pct:3d}% of {total} files", err=True, nl=pct >= 100)


class FleetProgress:
    """``fleet``'s progress on stderr, for a terminal: nodes probed, audits submitted and answered."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()
        self.counts = {"probed": 0, "submitted": 0, "done": 0}

    def __call__(self, event: str, node_id: str) -> None:
        if not self.enabled or event not in self.counts:
            return
        self.counts[event] += 1
        c = self.counts
        click.echo(f"\rnodes probed {c['probed']}, audits sent {c['submitted']}, answered {c['done']}   ",
                   err=True, nl=False)

    def close(self) -> None:
        if self.enabled and any(self.counts.values()):
            click.echo("", err=True)
