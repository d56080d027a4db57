"""driftscan's own caches, all in the user cache directory, never in the audited tree:
``location`` (where, and the one atomic write of a cache file), ``racy`` (the one rule by which
any of them trusts a file's timestamps), ``statcache`` (the stat cache and the parsed-RECORD
cache, ``StatCache``; ``NoCache`` is the null one ``--no-cache`` uses; both are a ``DigestCache``),
``keys`` (``cache_key``: the one way a key is made from several parts).
The linter's scan cache is
``lint/scancache.py``."""
