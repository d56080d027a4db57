"""Venv-shaped trees built by hand for the unit tests of driftscan.environment: a pyvenv.cfg,
lib/pythonX.Y/site-packages, bin/, and dist-info directories whose RECORD lists every file it
installs with its real sha256 and size (and itself, hashless, as installers write it)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from fixtures.wheels import record_hash

PY = "3.11"


def make_venv(root: Path, version: str = PY, cfg: str | None = None) -> tuple[Path, Path]:
    """(venv, its site-packages): what ``python -m venv`` lays out, without an interpreter."""
    site = root / f"lib/python{version}/site-packages"
    site.mkdir(parents=True)
    (root / "bin").mkdir()
    (root / "pyvenv.cfg").write_text(cfg if cfg is not None else f"home = /usr/bin\nversion = {version}.9\n")
    return root, site


def as_bytes(content: bytes | str) -> bytes:
    return content.encode() if isinstance(content, str) else content


def install(site: Path, name: str, version: str, files: dict[str, bytes | str], *, installer: str | None = "pip",
            hashless: tuple[str, ...] = (), extra_rows: tuple[str, ...] = ()) -> Path:
    """Write ``files`` (paths relative to ``site``, ``../../../bin/x`` included) and a dist-info
    whose RECORD lists them with their sha256 and size (``hashless``: listed without either);
    ``extra_rows``: raw RECORD lines appended. Returns the dist-info directory."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    meta = {"METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n"}
    if installer is not None:
        meta["INSTALLER"] = installer + "\n"
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for rel, content in {**files, **{f"{info.name}/{k}": v for k, v in meta.items()}}.items():
        data = as_bytes(content)
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        if rel in hashless:
            writer.writerow([rel, "", ""])
        else:
            writer.writerow([rel, record_hash(data), len(data)])
    writer.writerow([f"{info.name}/RECORD", "", ""])
    (info / "RECORD").write_text(out.getvalue() + "".join(row + "\n" for row in extra_rows))
    return info
