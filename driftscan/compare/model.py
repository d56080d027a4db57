"""The result of ``driftscan compare``: a pydantic model with its own versioned schema.

Field names are a contract with CI jobs and fleet tooling: add fields, rename none.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, Field

from ..core.datamodel import InlineEnum
from .inputs import InputKind

SCHEMA_VERSION: Final = "1"


class MachineOut(BaseModel):
    name: str = Field(description="the report or snapshot file as given on the command line")
    hostname: str | None = Field(default=None, description="as the report or snapshot recorded it")
    # The enum's values in place, as the Literal it replaced published them (and its title).
    source: Annotated[InputKind, InlineEnum(InputKind)] = Field(title="Source")
    python_version: str | None = None
    files: int | None = Field(default=None, description="files the audit checked, or the snapshot holds")


class OutlierOut(BaseModel):
    """One path on one machine that is not as the majority of comparable machines has it."""

    machine: str
    path: str = Field(description="the path on this machine (absolute when its report or snapshot tells)")
    root: str = Field(description="what the path is relative to: site-packages, venv, model:NAME, or external")
    relpath: str = Field(description="the path the machines are grouped by, relative to root")
    kind: str = Field(description="modified | missing | added (relative to the majority), or this machine's "
                                  "drift kind when it is another one (type-changed, debug-artifacts, ...); "
                                  "record-rewritten: the distribution's RECORD is not the one most machines with "
                                  "that version have (path: the RECORD)")
    scope: str | None = Field(default=None, description="package | environment | data | external ...")
    distribution: dict[str, str] | None = Field(default=None, description="{name, version} of the owner")
    majority: dict[str, Any] | None = Field(
        default=None, description="the state most machines have: {state, hash?, size?, machines, of}; with "
                                  "two machines that differ, the other machine's; null when no state has most")
    this: dict[str, Any] = Field(description="this machine's state: {state, hash?, size?}")
    tie: bool = Field(default=False, description="no state has a strict majority among the comparable machines")
    files: list[str] | None = Field(
        default=None, description="record-rewritten: this machine's files of the distribution that differ from the "
                                  "majority's, relative to site-packages (snapshots; a report lists no file its "
                                  "RECORD vouches for, so null there)")


class SkewMachineOut(BaseModel):
    machine: str
    hostname: str | None = None
    version: str | None = Field(default=None, description="null: not installed")
    drifts: int | None = Field(default=None, description="drifts its own report lists for this distribution "
                                                         "(not compared with the other machines)")


class VersionSkewOut(BaseModel):
    """Machines whose version of a distribution (or of Python) is not the majority's: their files
    of it are not compared path by path (that would be a flood of differences)."""

    distribution: str
    kind: Literal["distribution", "python"] = "distribution"
    majority: dict[str, Any] | None = Field(default=None, description="{version (null: not installed), machines};"
                                                                      " null when no version has most")
    machines: list[SkewMachineOut] = Field(description="the machines that differ from the majority (all of them "
                                                       "on a tie)")


class MissingRootOut(BaseModel):
    machine: str
    root: str = Field(description="e.g. model:Llama-3-8B: a model directory the majority audited, this one not")


class InputErrorOut(BaseModel):
    path: str
    message: str


class DriftStateOut(BaseModel):
    """One drift as one report of the environment lists it."""

    kind: str
    hash: str | None = Field(default=None, description="the content's digest (sha256=…, RECORD's notation), or "
                                                       "size=N from an older report; null when the report gives none")
    prediction: str | None = Field(default=None, description="wiped | survives | may-survive, as the report says")
    accepted: bool = Field(default=False, description="an accept entry of the configuration accepted it")
    dumps: list[str] = Field(default_factory=list, description="debug-artifacts: the dump files found")


class TimedChangeOut(BaseModel):
    """One path of one environment between two of its reports: absent from one side when it
    appeared or went away."""

    path: str
    scope: str | None = None
    distribution: dict[str, str] | None = Field(default=None, description="{name, version} of the owner, as the "
                                                                          "newer report that lists it says")
    before: DriftStateOut | None = Field(default=None, description="null: the earlier report lists no drift here")
    after: DriftStateOut | None = Field(default=None, description="null: the later report lists no drift here")
    changes: list[Literal["kind", "hash", "prediction", "accepted", "dumps"]] = Field(
        default_factory=list, description="what differs between before and after (changed only)")
    dumps_still_there: int = Field(0, description="dump files listed by both reports")
    dumps_since: str | None = Field(default=None, description="generated_at of the earliest report of this "
                                                              "environment from which those dump files have been "
                                                              "listed in every report")


class ReportAtOut(BaseModel):
    name: str = Field(description="the report as given on the command line")
    generated_at: str | None = None


class BeforeAfterOut(BaseModel):
    """Two reports of one environment on one machine, earlier and later."""

    hostname: str
    venv: str | None = None
    roots: dict[str, str] = Field(default_factory=dict, description="what the reports audited: venv, "
                                                                    "site-packages, model:NAME -> directory")
    before: ReportAtOut
    after: ReportAtOut
    order: Literal["generated_at", "command line"] = Field(
        description="how before and after were told apart: by the reports' generated_at, or (missing or equal) by "
                    "their order on the command line")
    appeared: list[TimedChangeOut] = Field(default_factory=list, description="drifts only the later report lists")
    went_away: list[TimedChangeOut] = Field(default_factory=list, description="drifts only the earlier report "
                                                                              "lists")
    changed: list[TimedChangeOut] = Field(default_factory=list, description="listed by both, with another kind, "
                                                                            "content, prediction, accepted or dumps")
    stayed: list[TimedChangeOut] = Field(default_factory=list, description="listed by both, the same")

    @property
    def differs(self) -> bool:
        return bool(self.appeared or self.went_away or self.changed)


class CompareReport(BaseModel):
    schema_version: Literal["1"] = SCHEMA_VERSION
    mode: Literal["majority", "before-after", "mixed"] = Field(
        default="majority", description="majority: different machines or environments, the odd one out; "
                                        "before-after: reports of one environment on one machine, in time order; "
                                        "mixed: before-after for each environment with several reports, and the "
                                        "majority view across environments (the newest report of each)")
    machines: list[MachineOut] = Field(default_factory=list)
    outliers: list[OutlierOut] = Field(default_factory=list)
    version_skew: list[VersionSkewOut] = Field(default_factory=list)
    agree: int = Field(0, description="paths compared on which every comparable machine agrees")
    compared: int = Field(0, description="paths compared (for reports: the paths any machine's report lists)")
    missing_roots: list[MissingRootOut] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list, description="what could not be compared, and why")
    errors: list[InputErrorOut] = Field(default_factory=list, description="inputs that could not be read")
    before_after: list[BeforeAfterOut] = Field(default_factory=list, description=(
        "before-after and mixed: one entry per pair of consecutive reports of one environment"))

    @property
    def differs(self) -> bool:
        return bool(self.outliers or self.version_skew or self.missing_roots
                    or any(step.differs for step in self.before_after))


def compare_schema() -> dict[str, Any]:
    return CompareReport.model_json_schema()
