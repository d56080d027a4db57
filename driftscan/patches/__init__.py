"""``driftscan patch``: the fixes a team keeps, as reviewable patch files (docs/patches.md).

``patchfile.py`` is the file format; ``export.py`` writes patch files from an environment's drift;
``manifest.py`` says which patch applies to which installed distribution; ``apply.py`` applies them.
"""
