"""driftscan's own caches, all in the user cache directory, never in the audited tree:
``location`` (where, and the one atomic write of a cache file), ``statcache`` (the stat cache and
the parsed-RECORD cache). The linter's scan cache is ``lint/scancache.py``."""
