"""``driftscan fleet``'s result: every node's status and the comparison of their reports.

Field names are a contract: add fields, rename none.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from ..compare.model import CompareReport, OutlierOut, VersionSkewOut
from ..report.contract import Report


class NodeOut(BaseModel):
    node_id: str
    hostname: str | None = None
    status: Literal["ok", "unreachable", "failed"]
    summary: dict[str, Any] | None = Field(default=None, description="the report's summary (a snapshot: {files})")
    error: str | None = None
    target: str | None = Field(default=None, description="the environment audited on the node")
    chosen_because: str | None = Field(default=None, description="--venv, the node's VIRTUAL_ENV, or the Ray "
                                                                 "worker's interpreter")
    python: str | None = None
    driftscan: str | None = Field(default=None, description="the driftscan version that ran there")
    shipped: list[str] = Field(default_factory=list, description="modules sent with the job (runtime_env "
                                                                 "py_modules) because the node lacked them")
    report_file: str | None = Field(default=None, description="with --reports DIR: where its full report is")
    report: Report | None = Field(default=None, exclude=True, description="the node's full report (API only)")


class FleetResult(BaseModel):
    schema_version: Literal["1"] = "1"
    address: str | None = None
    kind: Literal["report", "snapshot"] = "report"
    nodes: list[NodeOut] = Field(default_factory=list)
    outliers: list[OutlierOut] = Field(default_factory=list)
    version_skew: list[VersionSkewOut] = Field(default_factory=list)
    agree: int = 0
    compared: int = 0
    notes: list[str] = Field(default_factory=list)
    comparison: CompareReport | None = Field(default=None, exclude=True)

    @property
    def differs(self) -> bool:
        return bool(self.outliers or self.version_skew)

    @property
    def incomplete(self) -> bool:
        return any(n.status != "ok" for n in self.nodes)
