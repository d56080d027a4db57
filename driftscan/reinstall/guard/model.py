"""``driftscan guard``'s result: a pydantic model with a published JSON Schema
(``driftscan schema --for guard``, docs/guard-schema.json). Field names are a contract."""

from __future__ import annotations

import enum
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from ...core.datamodel import InlineEnum
from ...core.values import Verdict
from ...patches.apply import PatchApplyReport
from ...procs.model import RestartOut
from ..plan import PlanPatch


class Outcome(str, enum.Enum):
    """What happened to one drift while the command ran."""

    WIPED = "wiped"  # gone, or back to what its reference (RECORD, metadata) says
    SURVIVED = "survived"  # still there, the same content
    CHANGED = "changed"  # still drifted, with other content than before
    UNCHECKED = "unchecked"  # could not be told (unreadable, or the audit after could not check it)
    NOT_RUN = "not-run"  # the command was not run


class GuardCommand(BaseModel):
    argv: list[str]
    tool: str = Field(description="pip | uv pip | uv sync | conda | pixi | other")
    recognised: bool
    requested: list[str] = Field(default_factory=list, description="the distributions it names (normalized)")
    reinstalls: list[str] = Field(default_factory=list, description="installed distributions it reinstalls or may "
                                                                    "reinstall (what the prediction is for)")
    forced: bool = False
    no_deps: bool = False
    source: str | None = Field(default=None, description="what the prediction takes as the reinstall's source: a "
                                                         "wheel file, a find-links directory, index; null: as "
                                                         "installed")
    source_why: str = ""
    from_given: bool = Field(default=False, description="the source is --from's, not read from the command")
    environment: str | None = Field(default=None, description="the environment the command installs into, when it "
                                                              "names one")
    environment_unsure: str | None = Field(default=None, description="why guard could not tell for certain which "
                                                                     "environment the command changes (it then "
                                                                     "refuses unless --force); null: it could")
    notes: list[str] = Field(default_factory=list)


class Refusal(BaseModel):
    reason: str
    command: str | None = Field(default=None, description="what to run first (or instead)")


class GuardCheckpoint(BaseModel):
    path: str
    files: int
    patches: int
    partial: bool = Field(description="some modified package file has neither a patch nor an original, or some "
                                      "drifted file's content was not saved")
    without_original: list[str] = Field(default_factory=list, description="modified package files with neither a "
                                                                          "patch nor an original")
    not_saved: list[str] = Field(default_factory=list, description="drifted files whose content was not saved, "
                                                                   "with why")
    at_risk: list[str] = Field(default_factory=list, description="of those, the files the command may wipe (not "
                                                                 "predicted to survive it): guard refuses to start "
                                                                 "while there are any")
    complete_with: list[str] = Field(default_factory=list, description="how to get a whole checkpoint")


class GuardPrediction(BaseModel):
    path: str
    relpath: str
    kind: str
    scope: str
    distribution: str | None = None
    prediction: Annotated[Verdict, InlineEnum(Verdict)] = Field(title="Prediction")  # the schema's enum, as before
    reason: str
    outcome: Outcome
    detail: str = ""
    held: bool | None = Field(description="the prediction agrees with what happened (MAY SURVIVE holds either "
                                          "way); null: not judged (the command did not run or failed, or the "
                                          "outcome is unchecked)")


class VersionMove(BaseModel):
    name: str
    before: str | None
    after: str | None
    asked: bool = Field(description="the command names this distribution")


class NewDrift(BaseModel):
    """A drift the audit after the command found that was not there before: the command made it."""

    path: str
    relpath: str
    kind: str
    scope: str
    distribution: str | None = None
    findings: int = Field(default=0, description="debug findings in it")
    evidence: str = ""


class LeftDump(BaseModel):
    pattern: str
    files: list[str] = Field(description="the dump files listed before the command that are still there (lstat)")
    gone: int = Field(default=0, description="listed before, no longer there")
    bytes: int = 0
    remedy: str | None = None
    possible: bool = Field(default=False, description="possible dumps (older than the code's last change): listed "
                                                      "for review, never offered for deletion")


class LeftArchive(BaseModel):
    distribution: str
    relpath: str
    edited_copy: str = Field(description="the edited file in uv's cache")
    archive: str | None = Field(default=None, description="the unpacked wheel in uv's cache it belongs to")
    command: str = Field(description="the uv cache clean line that removes it")


class Leftovers(BaseModel):
    dumps: list[LeftDump] = Field(default_factory=list)
    uv_cache: list[LeftArchive] = Field(default_factory=list, description="edited archives in uv's cache: a new "
                                                                          "install from that source gets the edit")
    added: list[str] = Field(default_factory=list, description="files no RECORD lists, still in the environment")


class GuardExpectation(BaseModel):
    name: str
    file: str
    check: str
    before: bool | None
    predicted_after: bool | None
    after: bool | None
    held: bool | None
    reason: str


class GuardSummary(BaseModel):
    predictions: int = 0
    held: int = 0
    failed: int = 0
    unjudged: int = 0
    unchecked: int = 0


class GuardReport(BaseModel):
    schema_version: Literal["1"] = "1"
    target: str | None = Field(description="the audited environment")
    chosen_because: str | None = Field(default=None, description="when no target was named: why this one")
    command: GuardCommand
    ran: bool = Field(description="the command was started")
    refused: list[Refusal] = Field(default_factory=list, description="why guard did not start the command (or, "
                                                                     "with --force, what it overrode)")
    forced: bool = False
    exit_code: int | None = Field(default=None, description="the command's exit status (128+N: killed by signal N)")
    command_seconds: float | None = None
    checkpoint: GuardCheckpoint | None = None
    predictions: list[GuardPrediction] = Field(default_factory=list)
    versions: list[VersionMove] = Field(default_factory=list, description="distributions whose version moved")
    leftovers: Leftovers = Field(default_factory=Leftovers)
    new_drifts: list[NewDrift] = Field(default_factory=list, description="drift that appeared while the command ran "
                                                                         "(e.g. an edited uv cache copy linked into "
                                                                         "a venv that was clean)")
    expectations: list[GuardExpectation] = Field(default_factory=list)
    reapply: str | None = Field(default=None, description="the line that brings the kept work back (null after a "
                                                          "failed command: see reapply_dry_run)")
    reapply_dry_run: str | None = Field(default=None, description="after a failed command, instead of reapply: the "
                                                                  "dry run (no --yes) that shows what reapply would do "
                                                                  "once the environment is whole again")
    summary: GuardSummary = Field(default_factory=GuardSummary)
    notes: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list, description="what could not be checked")
    duration_seconds: float | None = None
    patch_plan: list[PlanPatch] = Field(default_factory=list, description=(
        "the team's patches for the distributions the command reinstalls: re-applied by `driftscan patch apply`, "
        "or unused on the version after (docs/patches.md)"))
    patch_apply: PatchApplyReport | None = Field(default=None, description=(
        "with --reapply-patches, after the command exited 0 and the audit after it: what `driftscan patch apply "
        "--yes` did (null: not asked, or not run: patch_apply_skipped says why)"))
    patch_apply_exit: int | None = Field(default=None, description=(
        "the exit status `driftscan patch apply` gives for patch_apply, with the --allow-unused / --allow-conflicts "
        "given: non-zero makes guard's non-zero"))
    patch_apply_skipped: str | None = Field(default=None, description="with --reapply-patches: why the team's "
                                                                      "patches were not applied")
    patch_rebase: list[str] = Field(default_factory=list, description=(
        "for each unused patch whose distribution is installed at another version now: the "
        "`driftscan patch rebase DIST --to VERSION` line"))
    restart_needed: list[RestartOut] | None = Field(default=None, description=(
        "after the writes: the processes of the environment that still run the old code, each with what to "
        "restart (docs/procs.md); null when the command did not run or /proc could not be read (notes say why)"))
