"""A package with no debug code at all."""

VERSION = "1.0"


def add(a, b):
    return a + b
