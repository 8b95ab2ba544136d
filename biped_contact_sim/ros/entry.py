"""Console entry points of the nodes: ``simulator_node`` and ``controller_node``.

A node spends seconds importing rclpy, pinocchio and numba before it can run. ``ros2 launch``
stops its processes with SIGINT whenever it ends, also during that time; Python's default
handler would then raise KeyboardInterrupt inside some import and print a traceback. So this
module, which imports nothing heavy, first replaces the SIGINT and SIGTERM handlers with one
that only records the request; :func:`~biped_contact_sim.ros.node_common.run_node` takes it
over and stops at once, cleanly (exit code 0).
"""

import signal
import sys

STOP_REQUESTED: list[int] = []  # signals received before the node's own handler was installed


def _record(signum, _frame) -> None:
    STOP_REQUESTED.append(signum)


def _early_handlers() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _record)


def simulator(args=None) -> int:
    """``ros2 run biped_contact_sim simulator_node``."""
    _early_handlers()
    from biped_contact_sim.ros.sim_node import main

    return main(args)


def controller(args=None) -> int:
    """``ros2 run biped_contact_sim controller_node``."""
    _early_handlers()
    from biped_contact_sim.ros.controller_node import main

    return main(args)


if __name__ == "__main__":
    sys.exit(simulator() if "simulator" in sys.argv[0] else controller())
