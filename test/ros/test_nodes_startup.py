"""Node test suite, start-up and stop: a node logs each phase of its start-up with the time it
took, and a signal ends it within a second at any moment — while it imports, while numba
compiles (a cache that ``biped-sim warm-up`` did not fill), and while it runs — with exit code
0 and no traceback (``ros/signals.py``)."""

import signal
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest
from harness import NodeProcess, fresh_domain, ros_env

# A stop request ends the process within this [s] (signals.GRACE bounds the clean shutdown of a
# running node at 1.5 s; start-up ends at once); ros2 launch escalates to SIGTERM after 5 s.
ANSWER = 2.0
PHASES = ("imported rclpy, pinocchio and numba (", "parameters declared and checked (",
          "compiled kernels loaded", "topics and services created (")


def stop_time(proc: NodeProcess, signum: int) -> float:
    """Seconds from sending ``signum`` to the process's exit (inf if it did not exit in 10 s)."""
    t0 = time.monotonic()
    proc.signal(signum)
    if proc.wait(10.0) is None:
        return float("inf")
    return time.monotonic() - t0


def test_start_up_phases_are_logged_and_sigint_stops_the_running_node(ros):
    proc = ros.start("simulator", real_time_factor=0.25)
    assert proc.wait_for_output("Simulating", 60.0), proc.output
    for phase in PHASES:
        assert phase in proc.output, (phase, proc.output)
    assert "from numba's cache" in proc.output  # make venv / the fixture warmed it
    took = stop_time(proc, signal.SIGINT)
    assert proc.returncode == 0 and took <= ANSWER, (proc.returncode, took, proc.output)
    assert "Traceback" not in proc.output


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_importing_ends_the_node_at_once(ros, signum):
    proc = ros.start("controller")
    time.sleep(0.3)  # rclpy, pinocchio and numba take seconds to import
    assert proc.alive() and "parameters declared" not in proc.output
    took = stop_time(proc, signum)
    assert proc.returncode == 0 and took <= ANSWER, (proc.returncode, took, proc.output)
    assert "during start-up (importing" in proc.output, proc.output
    assert "Traceback" not in proc.output


def test_sigint_while_numba_compiles_ends_the_node_at_once(ros, monkeypatch):
    """An empty numba cache (``NUMBA_CACHE_DIR``): the node announces the compile in its log,
    and SIGINT in the middle of it (numba is then inside LLVM for seconds at a time) ends it
    within a second."""
    with tempfile.TemporaryDirectory() as cache:
        monkeypatch.setenv("NUMBA_CACHE_DIR", cache)
        proc = ros.start("simulator")
        assert proc.wait_for_output("compiling the numba kernels of", 60.0), proc.output
        time.sleep(1.0)
        took = stop_time(proc, signal.SIGINT)
    assert proc.returncode == 0 and took <= ANSWER, (proc.returncode, took, proc.output)
    assert "stopped by SIGINT during start-up (" in proc.output, proc.output
    assert "Traceback" not in proc.output


# A node whose teardown blocks in a C call that keeps the GIL, as a middleware deadlock would: the
# signal thread cannot run Python then, so only faulthandler's C watchdog can end it.
STUCK_NODE = textwrap.dedent("""
    import ctypes, sys
    from biped_contact_sim.ros import signals
    stopper = signals.install("stuck")
    from rclpy.node import Node
    from biped_contact_sim.ros.node_common import NodeLoop, run_node

    class Stuck(Node):
        def __init__(self, phase=None):
            super().__init__("stuck")
            self.loop = NodeLoop(self, lambda: None)
            print("built", flush=True)

        def destroy_node(self):
            ctypes.PyDLL(None).sleep(60)  # PyDLL: the GIL is held through the call
            return super().destroy_node()

    sys.exit(run_node(Stuck, "stuck", stopper=stopper))
""")


def test_a_teardown_stuck_with_the_gil_held_still_ends_with_every_stack_printed():
    """ros/node_common.TEARDOWN_LIMIT: past it, faulthandler prints every thread's stack (what
    was stuck, for a bug report) and ends the process, long before ros2 launch's SIGKILL."""
    proc = subprocess.Popen([sys.executable, "-c", STUCK_NODE], env=ros_env(fresh_domain()),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "built", proc.stderr.read()
        time.sleep(0.5)  # the loop spins
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - t0
    finally:
        proc.kill()
    from biped_contact_sim.ros.node_common import TEARDOWN_LIMIT

    assert proc.returncode == 1 and TEARDOWN_LIMIT <= took < TEARDOWN_LIMIT + 3.0, (took, err)
    assert "Timeout" in err and "in destroy_node" in err, err
