"""Built-in driftscan rules, one per module (found by ``driftscan.lint.registry``).

``DBG0xx``: files that could not be inspected. ``DBG1xx``: debug code.
"""
