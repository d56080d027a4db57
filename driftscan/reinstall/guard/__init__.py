"""``driftscan guard``: the checkpoint before a reinstall, automated — recognise the command,
predict, checkpoint, run it, and check every prediction against what happened.

``command.py`` reads an install command's argv; ``outcome.py`` decides the predictions, the
refusals and what happened; ``model.py`` is the result (its JSON Schema is published). The
pipeline runs are wired by ``driftscan.api.guard``.
"""

from __future__ import annotations

from .command import Change, Recognised, Requested, Tool, normalize, recognise, wheel_name
from .model import (GuardCheckpoint, GuardCommand, GuardExpectation, GuardPrediction, GuardReport, GuardSummary,
                    LeftArchive, LeftDump, Leftovers, NewDrift, Outcome, Refusal, VersionMove)
from .outcome import (Predicted, checkpoint_summary, command_source, debug_comes_back, exit_status, expectations, fingerprint,
                      fingerprints, installed_versions, judge, leftovers, missing_source, new_drifts, not_run,
                      other_environment, predict, reapply_line, reinstalled, summarise, unchecked, valid_source,
                      versions)
from .teampatches import left_to_reapply, rebase_lines, versions_after

__all__ = ["Change", "GuardCheckpoint", "GuardCommand", "GuardExpectation", "GuardPrediction", "GuardReport",
           "GuardSummary", "LeftArchive", "LeftDump", "Leftovers", "NewDrift", "Outcome", "Predicted", "Recognised",
           "Refusal", "Requested", "Tool", "VersionMove", "checkpoint_summary", "command_source", "debug_comes_back", "exit_status",
           "expectations", "fingerprint", "fingerprints", "installed_versions", "judge", "leftovers", "missing_source",
           "new_drifts", "normalize", "not_run", "other_environment", "predict", "reapply_line", "recognise", "reinstalled",
           "summarise", "unchecked", "valid_source", "versions", "wheel_name", "left_to_reapply", "rebase_lines",
           "versions_after"]
