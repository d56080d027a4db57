"""TOML files validated by a pydantic model, with every failure as one ConfigError line."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, TypeVar

from ..core.errors import ConfigError
from ..fs.reader import read_regular

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

if TYPE_CHECKING:
    from pydantic import BaseModel

M = TypeVar("M", bound="BaseModel")
TOML_MAX = 16 << 20  # configuration and expectation files are a few lines


def read_toml(path: str, limit: int | None = None, what: str = "configuration file") -> dict[str, Any]:
    """A TOML file's content (at most ``limit`` bytes, default ``TOML_MAX``); every failure one
    ConfigError line naming the file."""
    try:
        raw = read_regular(path, TOML_MAX if limit is None else limit, what=what)
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror or exc}") from None
    try:
        doc: dict[str, Any] = tomllib.loads(raw.decode("utf-8"))  # (tomli, on 3.10, is untyped)
        return doc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 (byte {exc.start}): TOML files are UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: not usable TOML: nested too deeply") from None


def load_toml_model(path: str, model: type[M]) -> M:
    from pydantic import ValidationError  # only to validate: reading TOML (config discovery) needs none

    data = read_toml(path)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ConfigError(f"{path}: {'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None
