"""fleet.shipping: what to send to a node that lacks driftscan: driftscan's package directory,
and only the missing dependencies that are package directories here."""

from __future__ import annotations

import os

import driftscan
from driftscan.fleet.shipping import needed_modules, shipment


def test_needed_modules_are_the_runtime_dependencies():
    modules = needed_modules()
    assert "pydantic" in modules and "pydantic_core" in modules
    assert "driftscan" not in modules
    assert modules == sorted(modules) and all(m.isidentifier() for m in modules)
    assert "pytest" not in modules, "a test extra is not a runtime dependency"


def test_shipment_sends_package_directories_only():
    ship = shipment(["pydantic", "typing_extensions", "no_such_module_here"])
    assert ship.modules[0] == os.path.dirname(os.path.abspath(driftscan.__file__))
    assert ship.names[:2] == ("driftscan", "pydantic")
    assert os.path.basename(ship.modules[1]) == "pydantic"
    assert set(ship.unshippable) == {"typing_extensions", "no_such_module_here"}, \
        "a single-file module and an absent one cannot go as py_modules"


def test_nothing_a_node_names_is_imported_or_shipped():
    import sys

    sys.modules.pop("this", None)
    before = set(sys.modules)
    hostile = ["this.x", "email", "xml.etree", "xml/etree", "pip", "..", "os.path", "pydantic"]
    ship = shipment(hostile, needed=["pydantic", "xxhash"])
    assert set(sys.modules) == before and "this" not in sys.modules, "a node-chosen dotted name imports its parent"
    assert ship.names == ("driftscan", "pydantic")
    assert set(ship.unshippable) == set(hostile) - {"pydantic"}
    assert not any(os.path.basename(d) in ("email", "etree", "pip", "os") for d in ship.modules)
