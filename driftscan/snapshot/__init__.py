"""``driftscan snapshot`` and ``driftscan diff``: whole trees (venvs, model directories) hashed
into manifests and compared with them later (``run``), with the two-process walk that hashes
them (``sharedwalk``) and the warm diff's index (``treeindex``)."""
