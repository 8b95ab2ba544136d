"""sim.launch.py end to end: the controller keeps the biped standing for 5 s over ROS.

Simulator, controller and robot_state_publisher from the package's launch file, in lockstep
and as fast as possible; the base height (odom) must stay near its initial value for 5 s of
simulated time, and the controller publishes its diagnostics.
"""

import os
import sys
import unittest

import launch_testing
import launch_testing.actions
import launch_testing.asserts
import pytest
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PointStamped
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState

import launch

sys.path.insert(0, os.path.dirname(__file__))
from ros_helpers import share_file, spin_until, stamp_ns

DURATION_NS = 5_000_000_000


@pytest.mark.launch_test
@launch_testing.parametrize("controller", ["ctc", "wbc"])
def generate_test_description(controller):
    sim = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(share_file("launch", "sim.launch.py")),
        launch_arguments={"controller": controller, "behavior": "stand", "rviz": "false",
                          "lockstep": "true", "real_time_factor": "0.0",
                          "contact_model": "penalty_fl"}.items())
    return launch.LaunchDescription([sim, launch_testing.actions.ReadyToTest()])


class TestStanding(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        rclpy.init()

    @classmethod
    def tearDownClass(cls):
        rclpy.shutdown()

    def setUp(self):
        self.node = rclpy.create_node("test_closed_loop")
        self.heights = []
        self.commands = []
        self.com = []
        self.diagnostics = []
        self.node.create_subscription(Odometry, "odom", lambda m: self.heights.append(
            (stamp_ns(m), m.pose.pose.position.z)), 100)
        self.node.create_subscription(JointState, "joint_torque_cmd",
                                      lambda m: self.commands.append(m), 100)
        self.node.create_subscription(PointStamped, "/controller/com",
                                      lambda m: self.com.append(m), 10)
        self.node.create_subscription(DiagnosticArray, "/diagnostics",
                                      lambda m: self.diagnostics.append(m), 10)

    def tearDown(self):
        self.node.destroy_node()

    def test_robot_stands_for_5_s(self, controller):
        self.assertTrue(spin_until(
            self.node, lambda: self.heights and self.heights[-1][0] >= DURATION_NS, 900.0),
            f"simulated time reached {self.heights[-1][0] / 1e9 if self.heights else 0} s")
        z0 = self.heights[0][1]
        lowest = min(z for _, z in self.heights)
        self.assertGreater(lowest, z0 - 0.05, f"base dropped from {z0:.3f} to {lowest:.3f} m")
        self.assertTrue(self.commands)
        self.assertTrue(all(len(c.effort) == len(c.name) for c in self.commands))
        self.assertTrue(self.com, "no ~/com diagnostics")
        names = {s.name for d in self.diagnostics for s in d.status}
        self.assertIn("biped_contact_sim: controller", names)
        self.assertIn("biped_contact_sim: simulator", names)


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):

    def test_exit_codes(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)
