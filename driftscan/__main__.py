"""``python -m driftscan``. Python put the working directory first on ``sys.path``; an audit is
often run from inside the tree it audits, so a ``click.py`` or ``pydantic/`` there must not be
imported in place of the real one. Only ``driftscan`` itself was found before this line runs."""

import os
import sys

if not getattr(sys.flags, "safe_path", False) and sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from driftscan.cli import entry  # noqa: E402

entry()
