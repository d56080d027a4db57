"""The shared vocabulary, no I/O: ``values`` (the enums and frozen values every stage passes
on: targets, distributions, RECORD rows, file checks, drifts, findings), ``datamodel`` (plain
dataclasses with pydantic's model API, serialised as pydantic does), ``errors`` (the exceptions a
user sees as one line)."""
