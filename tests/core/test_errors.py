"""core.errors: every error driftscan raises on purpose is a DriftscanError; a RecordError says
which file and every issue found."""

from __future__ import annotations

import pytest

from driftscan.core.errors import ConfigError, DriftscanError, RecordError, TargetError


@pytest.mark.parametrize("cls", [TargetError, ConfigError, RecordError])
def test_every_error_is_a_driftscan_error(cls):
    assert issubclass(cls, DriftscanError)
    assert not issubclass(cls, OSError), "callers catching OSError must not swallow these"


def test_record_error_names_path_and_all_issues():
    issues = ["line 3: bad hash", "line 9: bad size"]
    err = RecordError("/venv/lib/x.dist-info/RECORD", issues)
    assert err.path == "/venv/lib/x.dist-info/RECORD"
    assert str(err) == "/venv/lib/x.dist-info/RECORD: line 3: bad hash; line 9: bad size"
    issues.append("later")
    assert err.issues == ["line 3: bad hash", "line 9: bad size"], "the error keeps its own copy"
    with pytest.raises(DriftscanError):
        raise err
