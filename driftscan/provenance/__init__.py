"""Provenance: the wheel a distribution was installed from, found by a sha256 given from outside
the audited tree (a lockfile's hash, direct_url.json's ``archive_info``), and the installed RECORD
compared with that wheel's own RECORD row by row (docs/provenance.md).

The installed RECORD is a file of the tree: an edit whose row was re-hashed to match passes every
check against it. The wheel's RECORD does not rest on the tree once the wheel's digest matches.
"""

# Nothing is imported here: an audit whose every verdict is remembered (provenance/verdicts.py)
# loads no wheel-reading code. Import from the modules: check, expected, find, model, rows.
