"""driftscan.runtime: which module files a running process imported, for ``driftscan procs``.

``start()`` records them (``recorder.py``); ``read_records()`` and ``changed()`` read another
process's records and compare them with the files now on disk (``records.py``). Standard library
only, and no other driftscan package: it runs inside other programs (a vLLM general plugin, a
``sitecustomize.py`` line, ``python -m driftscan.runtime``). Nothing here costs a process that
does not call ``start()``; the reader's modules are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .recorder import flush, record_path, recording, start

if TYPE_CHECKING:
    from .records import ChangedModule, ChangeKind, ModuleRecord, ProcessRecords, RecordsError, changed, read_records

__all__ = ["ChangeKind", "ChangedModule", "ModuleRecord", "ProcessRecords", "RecordsError", "changed", "flush",
           "read_records", "record_path", "recording", "start"]

_READER = {"ChangeKind", "ChangedModule", "ModuleRecord", "ProcessRecords", "RecordsError", "changed",
           "read_records", "remove_stale"}


def __getattr__(name: str) -> Any:
    if name in _READER:
        from . import records
        return getattr(records, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
