"""Plain dataclasses with the part of pydantic's model API that the report promises.

The audit report (report.py) is built and rendered by every ``driftscan audit`` and ``diff``.
As pydantic models its classes cost each command 0.2-0.3 s and ~11 MB of start-up before a byte
was written; as stdlib dataclasses they cost nothing. Pydantic stays what it was good for, and
is imported only then: the JSON Schema (``model_json_schema``) and validating a document into the
classes (``model_validate``, ``model_validate_json``; pydantic fills stdlib dataclasses directly
and reads each field's ``metadata={"description": ...}``). Serialization is done here and is
pydantic's byte for byte: the fields in order, enums as their values, ``indent`` as
``json.dumps``', and floats as pydantic writes them (``_float``; tests/contract/test_report.py compares
both on random floats and real reports).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import typing
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from pydantic import TypeAdapter
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_):  # only type checkers read it
        return lambda func: func

T = TypeVar("T", bound="DataModel")


@dataclass_transform(kw_only_default=True, field_specifiers=(dataclasses.field,))
def datamodel(cls: type[T]) -> type[T]:
    """Make ``cls`` a keyword-only dataclass with the model API (``DataModel``)."""
    cls = dataclasses.dataclass(kw_only=True)(cls)
    cls.model_fields = {f.name: f for f in dataclasses.fields(cls)}
    return cls


def _enum_fields(cls: type) -> list[tuple[str, type[enum.Enum]]]:
    """The fields typed as an enum (or an optional one), with the enum: a value given as the
    enum's value (``kind="missing"``) becomes the member, as pydantic's validation did."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        members = [a for a in (hint, *typing.get_args(hint)) if isinstance(a, type) and issubclass(a, enum.Enum)]
        if len(members) == 1:
            out.append((f.name, members[0]))
    return out


class InlineEnum:
    """``Annotated[SomeEnum, InlineEnum(SomeEnum)]``: the field's JSON Schema lists the enum's values
    in place (``{"enum": [...], "type": "string"}``, what a ``Literal`` of them publishes), not a
    ``$ref`` to a definition of the enum: a field typed by a string ``Literal`` that becomes an enum
    keeps its published schema (give it its title: ``describe``). (pydantic's ``WithJsonSchema``,
    without importing pydantic.)"""

    def __init__(self, kind: type[enum.Enum]) -> None:
        self.kind = kind

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> dict[str, Any]:
        return {"enum": [m.value for m in self.kind], "type": "string"}


class AsString:
    """``Annotated[SomeEnum, AsString()]``: the field's JSON Schema stays ``{"type": "string"}``, what
    a plain ``str`` field published before its values became an enum (give it its title: pydantic
    leaves it out here too). (pydantic's ``WithJsonSchema``, without importing pydantic.)"""

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> dict[str, Any]:
        return {"type": "string"}


def describe(text: str, *, title: str | None = None) -> dict[str, str]:
    """A field's description in the JSON Schema: ``field(default=..., metadata=describe("..."))``;
    ``title``: the field's title, which pydantic leaves out of a field typed by an enum (even an
    ``InlineEnum`` one) and gives every other field."""
    return {"description": text} if title is None else {"description": text, "title": title}


def _float(x: float) -> str:
    """A float as pydantic-core writes it: Python's shortest repr, except that exponents below
    -5 lose their zero padding (``1e-7``, not ``1e-07``) and -5 itself is written out
    (``0.00001``); NaN and the infinities as ``json.dumps`` writes them."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    r = repr(x)
    if "e-" not in r:
        return r
    mantissa, exponent = r.split("e-")
    if int(exponent) == 5:
        sign = "-" if mantissa.startswith("-") else ""
        return f"{sign}0.0000{mantissa.lstrip('-').replace('.', '')}"
    return f"{mantissa}e-{int(exponent)}"


def _fields(value: DataModel, json_mode: bool) -> dict[str, Any]:
    return {f.name: _plain(getattr(value, f.name), json_mode) for f in dataclasses.fields(value)}


def _plain(value: Any, json_mode: bool) -> Any:
    if isinstance(value, DataModel):
        return _fields(value, json_mode)
    if isinstance(value, enum.Enum):
        return value.value if json_mode else value
    if isinstance(value, dict):
        return {k: _plain(v, json_mode) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, json_mode) for v in value]
    return value


def _write(value: Any, out: list[str], indent: int | None, level: int) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(_float(value))
    elif isinstance(value, (dict, list)):
        items = list(value.items()) if isinstance(value, dict) else list(value)
        opening, closing = ("{", "}") if isinstance(value, dict) else ("[", "]")
        if not items:
            out.append(opening + closing)
            return
        inner = "" if indent is None else "\n" + " " * (indent * (level + 1))
        out.append(opening)
        for k, item in enumerate(items):
            out.append(("," if k else "") + inner)
            if isinstance(value, dict):
                key, item = item
                out.append(json.dumps(str(key), ensure_ascii=False) + (":" if indent is None else ": "))
            _write(item, out, indent, level + 1)
        out.append(("" if indent is None else "\n" + " " * (indent * level)) + closing)
    else:
        raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


def to_json(value: Any, indent: int | None = None) -> str:
    """``value`` (plain data, as ``model_dump(mode="json")`` gives) as pydantic writes it."""
    out: list[str] = []
    _write(value, out, indent, 0)
    return "".join(out)


_ADAPTERS: dict[type, TypeAdapter[Any]] = {}


def _adapter(cls: type[T]) -> TypeAdapter[T]:
    """pydantic's TypeAdapter of ``cls``: imported, and built, only for a schema or a validation."""
    adapter: TypeAdapter[T] | None = _ADAPTERS.get(cls)
    if adapter is None:
        # pydantic costs 0.2-0.3 s and ~11 MB at start-up; only a schema or a validation needs it.
        from pydantic import TypeAdapter

        adapter = _ADAPTERS[cls] = TypeAdapter(cls)
    return adapter


class DataModel:
    """The model API, on classes made with ``@datamodel``."""

    model_fields: typing.ClassVar[dict[str, dataclasses.Field[Any]]]
    # Set by @datamodel: every DataModel is a dataclass (dataclasses.fields and replace accept it).
    __dataclass_fields__: typing.ClassVar[dict[str, dataclasses.Field[Any]]]
    _enums: typing.ClassVar[list[tuple[str, type[enum.Enum]]] | None] = None

    def __post_init__(self) -> None:
        cls = type(self)
        enums = cls.__dict__.get("_enums")
        if enums is None:
            enums = cls._enums = _enum_fields(cls)
        for name, kind in enums:
            value = getattr(self, name)
            if value is not None and not isinstance(value, kind):
                setattr(self, name, kind(value))

    def model_dump(self, *, mode: str = "python", exclude: Iterable[str] | None = None) -> dict[str, Any]:
        """The fields as plain data (``mode="json"``: enums as values); ``exclude``: top-level fields left out."""
        data = _fields(self, mode == "json")
        for name in exclude or ():
            data.pop(name, None)
        return data

    def model_dump_json(self, *, indent: int | None = None, exclude: Iterable[str] | None = None) -> str:
        return to_json(self.model_dump(mode="json", exclude=exclude), indent)

    def model_copy(self: T, *, update: dict[str, Any] | None = None) -> T:
        return dataclasses.replace(self, **(update or {}))

    @classmethod
    def model_validate(cls: type[T], data: Any) -> T:
        return _adapter(cls).validate_python(data)

    @classmethod
    def model_validate_json(cls: type[T], data: str | bytes) -> T:
        return _adapter(cls).validate_json(data)

    @classmethod
    def model_json_schema(cls) -> dict[str, Any]:
        return _adapter(cls).json_schema()
