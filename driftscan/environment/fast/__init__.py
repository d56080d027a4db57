"""What makes a venv audit fast: the clean index, the prehash of large files, forked helpers
and the small-files share. Each has an in-process equivalent; none changes a verdict."""
