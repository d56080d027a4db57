"""Lockfiles read as data: which packages a lock pins for one target environment.

``read.read_lock`` parses uv.lock, pylock.toml, pdm.lock, poetry.lock and hashed requirements
files into one ``model.Lock``; ``select.select`` says which of its packages a default install
puts in a given environment (``markers.marker_environment``). Nothing a lock names is opened,
fetched or run.
"""
