"""Provenance: the wheel a distribution was installed from, found by a sha256 given from outside
the audited tree (a lockfile's hash, direct_url.json's ``archive_info``), and the installed RECORD
compared with that wheel's own RECORD row by row (docs/provenance.md).

The installed RECORD is a file of the tree: an edit whose row was re-hashed to match passes every
check against it. The wheel's RECORD does not rest on the tree once the wheel's digest matches.
"""

from .check import check_provenance
from .expected import Expected, from_direct_url
from .find import find_wheel
from .model import FileState, Provenance, ProvenanceSource, RowChange, RowChangeKind
from .rows import compare_rows

__all__ = ["Expected", "FileState", "Provenance", "ProvenanceSource", "RowChange", "RowChangeKind",
           "check_provenance", "compare_rows", "find_wheel", "from_direct_url"]
