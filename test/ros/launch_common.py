"""What the launch tests (test/ros/test_*_launch.py, run by ``colcon test`` on a ROS 2 install)
share: the package's launch files and nodes as launch actions, localhost discovery for them and
for the test's probe, and a unittest base class giving each test a fresh :class:`~harness.Probe`.
The checks themselves are those of the pytest node suite (checks.py)."""

import os
import unittest

from ament_index_python.packages import get_package_share_directory
from checks import wait_for_the_loop
from harness import LOCALHOST, PACKAGE, Probe
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch_ros.actions import Node
from std_srvs.srv import Trigger

# The launched nodes inherit the test's environment: all of them, and the probe, discover on
# localhost only (colcon test gives each test its own ROS_DOMAIN_ID).
os.environ.update(LOCALHOST)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
SHARE = get_package_share_directory(PACKAGE)


def share_file(*parts: str) -> str:
    return os.path.join(SHARE, *parts)


def include(launch_file: str, **arguments: str) -> IncludeLaunchDescription:
    """The package's launch file ``launch/<launch_file>`` with launch arguments."""
    return IncludeLaunchDescription(PythonLaunchDescriptionSource(
        share_file("launch", launch_file)), launch_arguments=arguments.items())


def node(kind: str, **parameters) -> Node:
    """``simulator_node``/``controller_node`` with the robot and node params files, then
    ``parameters`` (a dict, keyed by the node's full name since the namespace is given)."""
    executable = {"simulator": "simulator_node", "controller": "controller_node"}[kind]
    node_file = {"simulator": "sim_node.yaml", "controller": "controller_node.yaml"}[kind]
    robot = parameters.get("robot_config", "biped3d")
    return Node(package=PACKAGE, executable=executable, name=kind, namespace="",
                output="screen",
                parameters=[share_file("config", f"{robot}.yaml"),
                            share_file("config", node_file), parameters],
                additional_env={"PYTHONUNBUFFERED": "1"})


class ProbeTestCase(unittest.TestCase):
    """A fresh probe node per test (in the environment's ROS domain); with ``RESET`` the
    simulator is reset first, so that no test depends on what an earlier one did; with
    ``CLOSED_LOOP`` the test starts once the controller answers."""

    RESET = False
    CLOSED_LOOP = False  # wait for the controller's first command (its start-up) first

    def setUp(self):
        self.probe = Probe(None, name=f"probe_{self._testMethodName}"[:60])
        if self.RESET:
            response = self.probe.call(Trigger, "/simulator/reset", Trigger.Request(), 300.0)
            self.assertTrue(response is not None and response.success)
        if self.CLOSED_LOOP:
            wait_for_the_loop(self.probe)

    def tearDown(self):
        self.probe.close()
