"""Where a model directory's files came from, one module per kind of record: download
metadata (``localdir``), a hub cache snapshot (``hubcache``), git (``gitclone``), a driftscan
manifest (``manifestdir``)."""
