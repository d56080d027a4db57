"""The report contract: ``contract`` (the versioned report a CI reads: its classes,
``schema_version``, the atomic write) and ``accept`` (accepted drift: entries matched to a
report's drifts, stale and unused entries)."""
