"""System package managers (conda, dpkg) as the owners of what they installed: one module per
manager, registered in ``registry.py``."""
