"""Console entry points of the nodes: ``simulator_node``, ``controller_node`` and
``composed_node`` (both in one process).

The first thing each does, before importing anything heavy, is :func:`signals.install`: from
then on SIGINT and SIGTERM are answered at any moment, also while rclpy, pinocchio and numba
load (``ros/signals.py``). The last is :func:`exit_now`: once the node is destroyed and rclpy
shut down there is nothing left to clean up, and the interpreter's own teardown of hundreds of
modules and of numba's compiled code took seconds, which ros2 launch counts against its 5 s.
"""

import os
import sys

from biped_contact_sim.ros import signals


def exit_now(code: int) -> None:
    """Flush the output streams and end the process with ``code``, without the interpreter's
    teardown."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def simulator(args=None) -> None:
    """``ros2 run biped_contact_sim simulator_node``."""
    stopper = signals.install("simulator_node")
    from biped_contact_sim.ros.sim_node import main

    exit_now(main(args, stopper))


def controller(args=None) -> None:
    """``ros2 run biped_contact_sim controller_node``."""
    stopper = signals.install("controller_node")
    from biped_contact_sim.ros.controller_node import main

    exit_now(main(args, stopper))


def composed(args=None) -> None:
    """``ros2 run biped_contact_sim composed_node``: simulator and controller in one process."""
    stopper = signals.install("composed_node")
    from biped_contact_sim.ros.composed import main

    exit_now(main(args, stopper))


if __name__ == "__main__":
    sys.exit(simulator() if "simulator" in sys.argv[0] else controller())
