"""Which rules exist, and which of them run.

Rules come from three places: the built-in ``driftscan.lint.rules`` package (one module per rule),
installed plugins (entry-point group ``driftscan.rules``; an entry point may name a rule
class, a module, or a list of classes), and modules named in configuration
(``"mypkg.rules"`` or ``"mypkg.rules:MyRule"``).

Selection follows ruff: ``select``/``ignore`` hold code prefixes (``DBG1``, ``DBG105``) or rule
names (``torch-save-call``, as specific as the full code), and for each rule the most specific
matching entry wins; on a tie ``ignore`` wins. ``ALL`` matches everything, least specifically.
An empty ``select`` means every rule.
"""

from __future__ import annotations

import importlib
import inspect as pyinspect
import pkgutil
from collections.abc import Iterable, Sequence
from functools import lru_cache
from importlib.metadata import entry_points
from types import ModuleType

from ..core.errors import ConfigError
from .rule import Rule

ENTRY_POINT_GROUP = "driftscan.rules"
BUILTIN_PACKAGE = "driftscan.lint.rules"


def rules_in_module(module: ModuleType) -> list[type[Rule]]:
    """Concrete rules defined (not merely imported) in ``module``."""
    return [
        obj
        for _, obj in sorted(vars(module).items())
        if pyinspect.isclass(obj) and issubclass(obj, Rule) and obj is not Rule
        and obj.__module__ == module.__name__ and obj.CODE
    ]


def builtin_rules() -> list[type[Rule]]:
    package = importlib.import_module(BUILTIN_PACKAGE)
    found: list[type[Rule]] = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if not info.name.startswith("_"):
            found += rules_in_module(importlib.import_module(f"{BUILTIN_PACKAGE}.{info.name}"))
    return found


def _from_object(obj: object, origin: str) -> list[type[Rule]]:
    if isinstance(obj, ModuleType):
        return rules_in_module(obj)
    if pyinspect.isclass(obj) and issubclass(obj, Rule):
        return [obj]
    if isinstance(obj, (list, tuple)) and all(pyinspect.isclass(o) and issubclass(o, Rule) for o in obj):
        return list(obj)
    raise ConfigError(f"{origin}: not a driftscan rule, a list of rules or a module of rules")


def rules_from_spec(spec: str) -> list[type[Rule]]:
    """``"pkg.module"`` (all rules in it) or ``"pkg.module:RuleClass"``."""
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
        obj = getattr(module, attr) if attr else module
    except (ImportError, AttributeError) as e:
        raise ConfigError(f"rule module {spec!r} could not be loaded: {e}") from e
    rules = _from_object(obj, spec)
    if not rules:  # a typo'd or wrong module ("json") would otherwise add nothing, silently
        raise ConfigError(f"module {module_name} defines no driftscan rules" if not attr
                          else f"{spec}: an empty list of rules")
    return rules


def plugin_rules() -> list[type[Rule]]:
    found: list[type[Rule]] = []
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            obj = ep.load()
        except Exception as e:  # a broken plugin must not look like a crash of driftscan
            raise ConfigError(f"rule plugin {ep.name!r} ({ep.value}) could not be loaded: {e}") from e
        found += _from_object(obj, f"rule plugin {ep.name!r}")
    return found


def load_rules(extra_modules: Iterable[str] = (), *, plugins: bool = True) -> list[type[Rule]]:
    """Every available rule, sorted by code; malformed rules and clashes raise ConfigError."""
    rules = builtin_rules()
    if plugins:
        rules += plugin_rules()
    for spec in extra_modules:
        rules += rules_from_spec(spec)
    return validate(rules)


def validate(rules: Iterable[type[Rule]]) -> list[type[Rule]]:
    by_code: dict[str, type[Rule]] = {}
    by_name: dict[str, type[Rule]] = {}
    for rule in rules:
        if by_code.get(rule.CODE) is rule:
            continue  # the same class reached twice (e.g. a plugin and a config entry)
        problems = rule.problems()
        if problems:
            raise ConfigError(f"rule {rule.__module__}.{rule.__qualname__}: " + "; ".join(problems))
        for table, key in ((by_code, rule.CODE), (by_name, rule.NAME)):
            if key in table:
                other = table[key]
                raise ConfigError(f"rules {other.__module__}.{other.__qualname__} and "
                                  f"{rule.__module__}.{rule.__qualname__} both use {key!r}")
            table[key] = rule
    return sorted(by_code.values(), key=lambda r: r.CODE)


def _specificity(selector: str, rule: type[Rule]) -> int | None:
    if selector == "ALL":
        return 0
    if selector == rule.NAME:
        return len(rule.CODE)
    if rule.CODE.startswith(selector.upper()):
        return len(selector)
    return None


def select_rules(
    rules: Sequence[type[Rule]], select: Iterable[str] = (), ignore: Iterable[str] = ()
) -> list[type[Rule]]:
    select = [s.strip() for s in select if s.strip()]
    ignore = [s.strip() for s in ignore if s.strip()]
    unknown = [s for s in (*select, *ignore) if all(_specificity(s, r) is None for r in rules)]
    if unknown:
        raise ConfigError("unknown rule code or name: " + ", ".join(sorted(set(unknown))))
    chosen = []
    for rule in rules:
        picked = [n for n in (_specificity(s, rule) for s in select) if n is not None]
        dropped = [n for n in (_specificity(s, rule) for s in ignore) if n is not None]
        best_select = max(picked) if picked else (-1 if not select and rule.DEFAULT_ENABLED else None)
        if best_select is None:
            continue
        if dropped and max(dropped) >= best_select:
            continue
        chosen.append(rule)
    return chosen


@lru_cache(maxsize=1)
def _default_rules() -> tuple[type[Rule], ...]:
    return tuple(load_rules())


def default_rules() -> tuple[type[Rule], ...]:
    """Every rule (built-in and plugins), loaded once per process."""
    return _default_rules()
