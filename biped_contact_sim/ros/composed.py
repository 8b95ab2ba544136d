"""Simulator and controller nodes in one process: ``ros2 run biped_contact_sim composed_node``
(``sim.launch.py composed:=true``).

The same two nodes, the same topics and parameters (each node declares its own; the params
files and launch arguments keyed ``/**`` reach both), spun by one wait set
(:meth:`~biped_contact_sim.ros.node_common.NodeLoop.add`): in lockstep a period is then the
simulator's publish, the controller's computation and its command within one process, without
the two wake-ups of the two-process form. Stopping and the start-up log are those of the
separate nodes (``ros/signals.py``).
"""

from __future__ import annotations

import sys

from biped_contact_sim.ros.controller_node import ControllerNode
from biped_contact_sim.ros.node_common import run_node
from biped_contact_sim.ros.sim_node import SimulatorNode

NODE_NAME = "composed"


def make_nodes(phase) -> list:
    """The simulator node, then the controller node (its measurements come from the first)."""
    return [SimulatorNode(phase), ControllerNode(phase)]


def main(args=None, stopper=None) -> int:
    """Entry point of ``ros2 run biped_contact_sim composed_node``."""
    return run_node(make_nodes, NODE_NAME, args, stopper)


if __name__ == "__main__":
    sys.exit(main())
