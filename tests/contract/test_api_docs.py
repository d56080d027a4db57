"""The library's audit() documents every setting it takes, as the command line's --help does."""

from __future__ import annotations

import inspect

from driftscan import api
from driftscan.pipeline.options import AuditSettings


def test_audit_documents_every_setting():
    doc = inspect.getdoc(api.audit) or ""
    missing = [name for name in AuditSettings.__annotations__ if f"``{name}" not in doc]
    assert missing == [], f"api.audit's docstring does not document: {missing}"
    assert "``venv``" in doc and "``site_packages``" in doc and "``options``" in doc
