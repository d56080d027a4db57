"""``driftscan compare``: audit reports or snapshots of several machines, the odd one out named.

    from driftscan.compare import compare_files
    result = compare_files(["node1.json", "node2.json", "node3.json"])
    for o in result.outliers: print(o.machine, o.kind, o.path)
"""

from .engine import CompareError, compare_files
from .model import SCHEMA_VERSION, CompareReport, OutlierOut, VersionSkewOut, compare_schema

__all__ = ["CompareError", "CompareReport", "OutlierOut", "SCHEMA_VERSION", "VersionSkewOut", "compare_files",
           "compare_schema"]
