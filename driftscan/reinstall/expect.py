"""Expectations: the assertions a user checks before acting (``grep -c kv_cache_scheme config.json``).

An expectations file (TOML) lists checks on files; each is evaluated now and predicted after a
reinstall: a package file that the reinstall rewrites goes back to its pristine content, any
other file (a model directory, an added file, a file that survives) stays as it is.

    [[expect]]
    name = "SM120: no FP8 KV-cache scheme"
    file = "/shared/kimi-k2.5-nvfp4/config.json"
    json_lacks = "quantization_config.kv_cache_scheme"     # dotted path or JSON pointer
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..formats.tomlfile import load_toml_model

CHECKS = ("json_has", "json_lacks", "contains", "lacks", "unchanged")


class Expectation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    file: str
    json_has: str | None = None
    json_lacks: str | None = None
    contains: str | None = Field(default=None, description="a regular expression that must match")
    lacks: str | None = Field(default=None, description="a regular expression that must not match")
    unchanged: bool | None = Field(default=None, description="the file matches its reference (RECORD, metadata, git)")

    @model_validator(mode="after")
    def _one_check(self) -> Expectation:
        given = [c for c in CHECKS if getattr(self, c) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of {', '.join(CHECKS)} (got {', '.join(given) or 'none'})")
        for key in ("contains", "lacks"):
            pattern = getattr(self, key)
            if pattern is not None:
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise ValueError(f"{key}: invalid regular expression: {exc}") from None
        return self

    @property
    def check(self) -> str:
        return next(c for c in CHECKS if getattr(self, c) is not None)

    @property
    def label(self) -> str:
        return self.name or f"{self.file}: {self.check} {getattr(self, self.check)!r}"


class ExpectationsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    expect: list[Expectation] = Field(default_factory=list)


def load_expectations(path: str, placeholders: dict[str, str] | None = None) -> list[Expectation]:
    """Read and validate a TOML expectations file; relative ``file`` paths are relative to it."""
    parsed = load_toml_model(path, ExpectationsFile)
    base = os.path.dirname(os.path.abspath(path))
    out = []
    for item in parsed.expect:
        file = item.file
        for key, value in (placeholders or {}).items():
            file = file.replace("{" + key + "}", value)
        out.append(item.model_copy(update={"file": os.path.normpath(os.path.join(base, file))}))
    return out


def split_pointer(path: str) -> list[str]:
    """A JSON pointer (``/a/b~1c``) or a dotted path (``a.b``) as a list of keys."""
    if path.startswith("/"):
        return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]
    return path.split(".")


def _lookup(doc: Any, keys: list[str]) -> bool:
    for key in keys:
        if isinstance(doc, dict) and key in doc:
            doc = doc[key]
        elif isinstance(doc, list) and key.isdigit() and int(key) < len(doc):
            doc = doc[int(key)]
        else:
            return False
    return True


def evaluate(expectation: Expectation, content: bytes | None, drifted: bool | None) -> tuple[bool | None, str]:
    """Does the expectation hold for ``content`` (None: the file does not exist)? → (holds, why)."""
    check = expectation.check
    if check == "unchanged":
        if drifted is None:
            return None, "driftscan has no reference for this file"
        return (not drifted), ("matches its reference" if not drifted else "differs from its reference")
    if content is None:
        return False, "the file does not exist"
    text = content.decode("utf-8", "replace")
    if check in ("contains", "lacks"):
        pattern = getattr(expectation, check)
        found = re.search(pattern, text, re.MULTILINE) is not None
        holds = found if check == "contains" else not found
        return holds, f"pattern {'found' if found else 'not found'}"
    try:
        doc = json.loads(text)
    except ValueError as exc:
        return False, f"not valid JSON: {exc}"
    except RecursionError:
        return False, "not usable JSON: nested too deeply"
    present = _lookup(doc, split_pointer(getattr(expectation, check)))
    holds = present if check == "json_has" else not present
    return holds, f"key {'present' if present else 'absent'}"
