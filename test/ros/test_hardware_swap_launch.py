"""The hardware swap: hardware.launch.py's controller runs on a recorded stream, no simulator.

The stream is recorded first, without ROS, by the simulator core (the same messages the
simulator node publishes: joint_states, odom, contact_wrench/<foot>); the test then plays it
like a driver would (joint names in another order, an extra joint) and checks that the
controller answers every measurement with a valid joint_torque_cmd carrying its stamp, and
that no simulator node exists.
"""

import os
import sys
import unittest

import launch_testing
import launch_testing.actions
import launch_testing.asserts
import numpy as np
import pytest
import rclpy
from geometry_msgs.msg import WrenchStamped
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState

import launch
from biped_contact_sim.record.messages import fill_message
from biped_contact_sim.ros import node_core

sys.path.insert(0, os.path.dirname(__file__))
from ros_helpers import share_file, spin_until, stamp_ns

SAMPLES = 200


def record_stream():
    """Measurement message fields of 200 control periods of the standing biped (no ROS)."""
    config = node_core.sim_config({"real_time_factor": 0.0})
    session = node_core.SimSession(node_core.build_world(config), config)
    session.pacer.max_batch = 1
    stream = [session.measurement_fields()]
    while len(stream) < SAMPLES:
        session.tick()
        stream.append(session.measurement_fields())
    return stream


@pytest.mark.launch_test
def generate_test_description():
    hardware = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(share_file("launch", "hardware.launch.py")),
        launch_arguments={"controller": "ctc", "behavior": "stand", "sync": "exact",
                          "rviz": "false"}.items())
    return launch.LaunchDescription([hardware, launch_testing.actions.ReadyToTest()])


class TestHardwareSwap(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        rclpy.init()
        cls.stream = record_stream()

    @classmethod
    def tearDownClass(cls):
        rclpy.shutdown()

    def setUp(self):
        self.node = rclpy.create_node("test_driver")
        types = {"joint_states": JointState, "odom": Odometry}
        for body in ("left_foot", "right_foot"):
            types[f"contact_wrench/{body}"] = WrenchStamped
        self.types = types
        self.pubs = {t: self.node.create_publisher(m, t, 10) for t, m in types.items()}
        self.commands = {}
        self.node.create_subscription(JointState, "joint_torque_cmd",
                                      lambda m: self.commands.setdefault(stamp_ns(m), m), 100)

    def tearDown(self):
        self.node.destroy_node()

    def test_controller_answers_a_recorded_stream(self):
        self.assertTrue(spin_until(self.node, lambda: all(
            p.get_subscription_count() > 0 for p in self.pubs.values()), 30.0))
        self.assertNotIn("simulator", self.node.get_node_names())
        stamps = []
        for fields in self.stream:
            for topic, data in fields:
                if topic not in self.pubs:
                    continue  # /clock: a driver does not publish it
                msg = fill_message(self.types[topic](), data)
                if topic == "joint_states":  # a driver's order and an extra joint
                    msg.name = ["gripper", *reversed(msg.name)]
                    msg.position = [0.0, *reversed(msg.position)]
                    msg.velocity = [0.0, *reversed(msg.velocity)]
                    msg.effort = [0.0, *reversed(msg.effort)]
                    stamps.append(stamp_ns(msg))
                self.pubs[topic].publish(msg)
            rclpy.spin_once(self.node, timeout_sec=0.005)
        self.assertTrue(spin_until(self.node, lambda: len(self.commands) >= 0.9 * SAMPLES, 60.0),
                        f"{len(self.commands)} commands for {SAMPLES} measurements")
        self.assertTrue(set(self.commands) <= set(stamps))  # each answers a measurement
        expected = [n for n in self.stream[0][1][1]["name"]]
        for cmd in self.commands.values():
            self.assertEqual(list(cmd.name), expected)
            self.assertTrue(np.all(np.isfinite(cmd.effort)))


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):

    def test_exit_codes(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)
