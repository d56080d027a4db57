"""``driftscan fleet``: audit every node of a Ray cluster and name the odd one out.

    import driftscan.fleet
    result = driftscan.fleet.run("ray://head:10001")   # or an address for ray.init, or None: auto
    for node in result.nodes: print(node.node_id, node.hostname, node.status)
    for o in result.outliers: print(o.machine, o.kind, o.path)

Needs the ``fleet`` extra (``pip install 'driftscan[fleet]'``, which brings Ray), installed in
the environment the cluster runs from.
"""

from .driver import FleetError, run
from .model import FleetResult, NodeOut

__all__ = ["FleetError", "FleetResult", "NodeOut", "run"]
