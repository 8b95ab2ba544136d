"""Every launch argument of sim.launch.py reaches its node: each is given a value other than
its default and read back from the node's parameters (they used to be silently overridden by
the params files' node sections). composed:=false runs the two nodes as two processes (the
default, one process, is test_sim_launch.py's)."""

import atexit
import os
import shutil
import tempfile
import unittest

import launch_testing
import launch_testing.actions
import launch_testing.asserts
import pytest
from checks import check_parameters_reach_the_node
from harness import stamp_ns
from launch_common import ProbeTestCase, include
from sensor_msgs.msg import JointState

import launch

# A world file of the flat ground alone: with contacts:=points it changes nothing of the
# planar walk (a world with boxes or objects needs geometry contacts).
_FOLDER = tempfile.mkdtemp(prefix="biped_world_")
atexit.register(shutil.rmtree, _FOLDER, True)
FLAT_WORLD = os.path.join(_FOLDER, "flat.yaml")
with open(FLAT_WORLD, "w") as f:
    f.write("world:\n  ground: {height: 0.0}\n")
ARGUMENTS = {  # every argument of sim.launch.py, none at its default
    "robot": "planar_biped", "scenario": "planar_walk", "world": FLAT_WORLD,
    "contacts": "points", "contact_model": "gauss_seidel",
    "controller": "ctc", "behavior": "planar_walk", "rviz": "false", "lockstep": "false",
    "real_time_factor": "0.5", "use_sim_time": "false", "composed": "false",
}
EXPECTED = {
    "simulator": {"robot_config": "planar_biped", "scenario": "planar_walk",
                  "world": FLAT_WORLD, "contacts": "points", "contact_model": "gauss_seidel",
                  "lockstep": False, "real_time_factor": 0.5},
    "controller": {"robot_config": "planar_biped", "controller": "ctc",
                   "behavior": "planar_walk"},
    "robot_state_publisher": {"use_sim_time": False},
}


@pytest.mark.launch_test
def generate_test_description():
    return launch.LaunchDescription([include("sim.launch.py", **ARGUMENTS),
                                     launch_testing.actions.ReadyToTest()])


class TestLaunchArguments(ProbeTestCase):

    def test_each_argument_reaches_its_node(self):
        names = self.probe.node.get_node_names
        self.assertTrue(self.probe.spin_until(
            lambda: {"simulator", "controller", "robot_state_publisher"} <= set(names()), 120.0),
            names())
        self.assertNotIn("rviz2", names())  # rviz:=false
        for node, expected in EXPECTED.items():
            check_parameters_reach_the_node(self.probe, node, expected)
        # The closed loop runs (a first step of gauss_seidel on the planar robot compiles its
        # kernels for tens of seconds, during which a node cannot stop within launch's 5 s).
        states = self.probe.record("joint_states", JointState)
        self.assertTrue(self.probe.spin_until(
            lambda: states and stamp_ns(states[-1]) > 0, 600.0), "the loop does not run")


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):

    def test_every_process_exits_cleanly(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)
