"""Simulator and controller in one process: ``ros2 run biped_contact_sim composed_node``
(``sim.launch.py``'s default, ``composed:=true``).

The same two nodes, with the same topics and parameters (each node declares its own; the params
files and launch arguments keyed ``/**`` reach both), spun by one wait set
(:meth:`~biped_contact_sim.ros.node_common.NodeLoop.add`). The state and the command pass
between them in process: each state the simulator publishes goes, as its sample, to
``ControllerNode.deliver``, which takes it as the ``joint_states``, ``odom`` and
``contact_wrench`` messages would be taken (the same float64 values, the same checks) and
answers at once, and the command goes to ``SimulatorNode.on_local_command``, which checks it
as a message. A lockstep period is then the simulation and the control law without the
middleware (the two-process form serializes, publishes, wakes up for and reads five messages
one way and one the other). The topics still carry both for anyone listening (a bag,
``ros2 topic hz``, RViz); the simulator drops the copies of its own controller's commands that
come back over ``joint_torque_cmd`` and still reads (and checks) the commands of other nodes.
Stopping and the start-up log are those of the separate nodes (``ros/signals.py``).
"""

from __future__ import annotations

import sys

from biped_contact_sim.ros.controller_node import ControllerNode
from biped_contact_sim.ros.node_common import run_node
from biped_contact_sim.ros.sim_node import SimulatorNode

NODE_NAME = "composed"


def make_nodes(phase) -> list:
    """The simulator node, then the controller node, joined in process: each state sample
    the simulator publishes goes to the controller, and the command the controller answers
    with goes back to the simulator, within the simulator's period (module docstring)."""
    sim = SimulatorNode(phase, composed=True)
    controller = ControllerNode(phase, composed=True)
    sim.deliver = controller.deliver
    controller.state_names = list(sim.robot.actuated_joint_names)
    controller.state_bodies = [body.name for body in sim.robot.contact_bodies]
    controller.command_sink = sim.on_local_command
    return [sim, controller]


def main(args=None, stopper=None) -> int:
    """Entry point of ``ros2 run biped_contact_sim composed_node``."""
    return run_node(make_nodes, NODE_NAME, args, stopper)


if __name__ == "__main__":
    sys.exit(main())
