"""The configuration file: ``find`` (where a configuration is looked for, from the working
directory upward, and what is trusted) and ``settings`` (the pydantic model read from it, and
``driftscan accept``'s format-keeping append)."""
