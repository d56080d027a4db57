"""RECORD-driven verification of Python environments: every installed file against its
distribution's RECORD, files no RECORD owns, editable source trees, uv cache links."""
