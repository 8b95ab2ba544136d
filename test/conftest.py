"""Test configuration: what test/ros needs, the ``ros`` fixture of the node test suite, and
the same conditions on every machine: one BLAS/OpenMP/numba thread (set before numpy loads)
and the global random generators (pinocchio's, Python's) seeded before each test; numpy's are
explicit ``default_rng(seed)`` in the tests (ruff's NPY002 refuses the global one).

* test/ros/test_nodes_*.py (the node test suite: plain pytest + rclpy, node processes from the
  console entry points) need rclpy and the message packages: the ROS 2 Jazzy wheels that
  `make test` installs (requirements-ros.txt). Without them (a Python the wheels do not cover)
  the suite is skipped with the reason printed.
* test/ros/test_*_launch.py (launch_testing, for ``colcon test`` on a ROS 2 install) need
  launch_testing too; launch_testing's pytest plugin imports every test file while collecting,
  so they are left out of the collection, with the reason printed, where it is missing.
"""

import importlib.util
import os
import sys

# Before anything imports numpy: thread counts change the rounding of BLAS reductions.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import pytest  # noqa: E402

collect_ignore_glob = []


def _missing(*modules: str) -> list[str]:
    return [m for m in modules if importlib.util.find_spec(m) is None]


_no_ros = _missing("rclpy", "sensor_msgs", "nav_msgs", "geometry_msgs", "diagnostic_msgs",
                   "visualization_msgs", "rosgraph_msgs", "std_srvs", "rcl_interfaces")
if _no_ros:
    collect_ignore_glob.append("ros/*")
    print(f"test/ros skipped: {', '.join(_no_ros)} not importable on Python "
          f"{sys.version_info.major}.{sys.version_info.minor} (pip install -r "
          "requirements-ros.txt; ROS 2 Jazzy wheels exist for CPython 3.10-3.13 on Linux)")
elif _missing("launch_testing", "launch_ros"):
    collect_ignore_glob.append("ros/test_*_launch.py")
    print("test/ros/test_*_launch.py skipped: launch_testing/launch_ros not installed (they run "
          "under colcon test on a ROS 2 install; the node suite test/ros/test_nodes_*.py runs)")


SEED = 20261127


@pytest.fixture(autouse=True)
def _seeded_generators():
    """Each test draws the same ``pin.randomConfiguration`` samples (and Python ``random``
    numbers) whatever ran before it: the generators are global to the process, so without this
    a test's samples depend on the tests run before it."""
    import random

    import pinocchio as pin

    pin.seed(SEED)
    random.seed(SEED)


@pytest.fixture
def ros():
    """A :class:`harness.RosTest`; at the end every node gets SIGINT and must exit cleanly."""
    from harness import RosTest

    env = RosTest()
    yield env
    problems = env.close()
    assert not problems, "\n".join(problems)


def pytest_terminal_summary(terminalreporter):
    """One line for the node test suite (test/ros), so that CI logs show it ran and how."""
    counts = {}
    for outcome in ("passed", "failed", "error", "skipped"):
        reports = [r for r in terminalreporter.stats.get(outcome, [])
                   if getattr(r, "nodeid", "").startswith("test/ros/")]
        if reports:
            counts[outcome] = len({r.nodeid for r in reports})
    if _no_ros:
        terminalreporter.write_line(f"node test suite (test/ros): skipped, {', '.join(_no_ros)} "
                                    "not importable")
    elif counts:
        terminalreporter.write_line("node test suite (test/ros): " + ", ".join(
            f"{n} {outcome}" for outcome, n in counts.items()))
