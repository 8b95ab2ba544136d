"""Simulator node under launch_testing, once per contact model.

It starts, publishes the docs/architecture.md topics at their rates, rejects malformed torque
commands with a log line and keeps running, switches contact model at run time (refusing unknown
names), and serves ~/pause and ~/reset. Runs under ``colcon test`` (test/conftest.py skips
test/ros where rclpy or launch_testing is missing).
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
from geometry_msgs.msg import PointStamped, WrenchStamped
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_srvs.srv import SetBool, Trigger
from visualization_msgs.msg import MarkerArray

import launch
from biped_contact_sim.contact import CONTACT_MODELS

sys.path.insert(0, os.path.dirname(__file__))
from ros_helpers import call, simulator_node, spin_until, stamp_ns

MODELS = sorted(CONTACT_MODELS)
WINDOW = 5.0  # [s] wall time over which the rates are measured


@pytest.mark.launch_test
@launch_testing.parametrize("contact_model", MODELS)
def generate_test_description(contact_model):
    sim = simulator_node(contact_model=contact_model, real_time_factor=1.0, publish_rate=20.0,
                         diagnostics_rate=2.0)
    return launch.LaunchDescription([sim, launch_testing.actions.ReadyToTest()]), {"sim": sim}


class TestSimulatorNode(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        rclpy.init()

    @classmethod
    def tearDownClass(cls):
        rclpy.shutdown()

    def setUp(self):
        self.node = rclpy.create_node("test_simulator_node")
        self.received = {}
        topics = {
            "joint_states": JointState, "odom": Odometry, "/clock": Clock,
            "contact_wrench/left_foot": WrenchStamped, "contact_wrench/right_foot": WrenchStamped,
            "cop/left_foot": PointStamped, "zmp": PointStamped, "contact_markers": MarkerArray,
            "/diagnostics": DiagnosticArray,
        }
        for topic, msg_type in topics.items():
            self.received[topic] = []
            self.node.create_subscription(
                msg_type, topic, lambda msg, t=topic: self.received[t].append(msg), 10)

    def tearDown(self):
        self.node.destroy_node()

    def wait_for(self, topic, count=1, timeout=30.0):
        return spin_until(self.node, lambda: len(self.received[topic]) >= count, timeout)

    def test_topics_appear_at_their_rates(self, contact_model):
        self.assertTrue(self.wait_for("joint_states"), "no joint_states")
        for topic in self.received:
            self.received[topic].clear()
        spin_until(self.node, lambda: False, WINDOW)
        rate = {topic: len(msgs) / WINDOW for topic, msgs in self.received.items()}
        # Measurement topics every control period (1 kHz at real time; Python over DDS and the
        # slower models may not keep up, so only a floor is asserted).
        for topic in ("joint_states", "odom", "/clock", "contact_wrench/left_foot",
                      "contact_wrench/right_foot"):
            self.assertGreater(rate[topic], 20.0, f"{topic} at {rate[topic]:.1f} Hz")
        # Visual topics at publish_rate = 20 Hz, diagnostics at 2 Hz.
        self.assertGreater(rate["contact_markers"], 5.0)
        self.assertLess(rate["contact_markers"], 25.0)
        self.assertGreater(rate["zmp"], 5.0)  # the biped stands: the ZMP is defined
        self.assertGreater(rate["cop/left_foot"], 5.0)
        self.assertGreaterEqual(len(self.received["/diagnostics"]), 5)
        status = self.received["/diagnostics"][-1].status[0]
        values = {kv.key: kv.value for kv in status.values}
        self.assertEqual(values["contact_model"], contact_model)
        for key in ("real_time_factor_measured", "overruns", "resyncs", "commands_rejected"):
            self.assertIn(key, values)
        js = self.received["joint_states"][-1]
        self.assertEqual(len(js.name), len(js.position))
        self.assertEqual(len(js.name), len(js.velocity))
        self.assertEqual(self.received["contact_wrench/left_foot"][-1].header.frame_id, "l_sole")
        self.assertEqual(self.received["odom"][-1].header.frame_id, "world")

    def test_bad_torque_command_is_rejected_and_the_node_keeps_running(self, proc_output,
                                                                       sim, contact_model):
        self.assertTrue(self.wait_for("joint_states"))
        names = list(self.received["joint_states"][-1].name)
        pub = self.node.create_publisher(JointState, "joint_torque_cmd", 10)
        spin_until(self.node, lambda: pub.get_subscription_count() > 0, 10.0)
        for bad in (JointState(name=["no_such_joint"], effort=[1.0]),
                    JointState(name=names, effort=[float("nan")] * len(names)),
                    JointState(name=names, effort=[0.0] * (len(names) - 1))):
            pub.publish(bad)
        proc_output.assertWaitFor("Rejected joint_torque_cmd", process=sim, timeout=10)

        def rejected():
            for msg in self.received["/diagnostics"]:
                values = {kv.key: kv.value for kv in msg.status[0].values}
                if int(values["commands_rejected"]) >= 3:
                    return values
            return None

        self.assertTrue(spin_until(self.node, lambda: rejected() is not None, 10.0))
        self.assertEqual(rejected()["commands_accepted"], "0")
        for topic in self.received:
            self.received[topic].clear()
        self.assertTrue(self.wait_for("joint_states", count=10), "node stopped publishing")

    def test_contact_model_switch_at_run_time(self, contact_model):
        self.assertTrue(self.wait_for("joint_states"))
        client = self.node.create_client(SetParameters, "/simulator/set_parameters")
        other = next(m for m in MODELS if m != contact_model) if len(MODELS) > 1 \
            else contact_model

        def request(value):
            req = SetParameters.Request()
            req.parameters = [ParameterMsg(name="contact_model", value=ParameterValue(
                type=ParameterType.PARAMETER_STRING, string_value=value))]
            return call(self.node, client, req)

        before = self.received["/clock"][-1].clock.sec
        result = request(other)
        self.assertIsNotNone(result)
        self.assertTrue(result.results[0].successful, result.results[0].reason)
        bad = request("no_such_model")
        self.assertFalse(bad.results[0].successful)
        self.assertIn("no_such_model", bad.results[0].reason)
        self.received["/clock"].clear()
        self.assertTrue(self.wait_for("/clock", count=5))
        self.assertGreaterEqual(self.received["/clock"][-1].clock.sec, before)  # state kept

    def test_pause_and_reset_services(self, contact_model):
        self.assertTrue(self.wait_for("joint_states"))
        pause = self.node.create_client(SetBool, "/simulator/pause")
        reset = self.node.create_client(Trigger, "/simulator/reset")
        self.assertTrue(call(self.node, pause, SetBool.Request(data=True)).success)
        spin_until(self.node, lambda: False, 0.5)
        self.received["joint_states"].clear()
        spin_until(self.node, lambda: False, 1.0)
        self.assertEqual(self.received["joint_states"], [])  # nothing while paused
        self.assertTrue(call(self.node, pause, SetBool.Request(data=False)).success)
        self.assertTrue(self.wait_for("joint_states", count=5))
        self.received["joint_states"].clear()
        self.assertTrue(call(self.node, reset, Trigger.Request()).success)
        self.assertTrue(self.wait_for("joint_states"))
        self.assertLess(stamp_ns(self.received["joint_states"][0]), 500_000_000)


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):

    def test_exit_code(self, proc_info, sim):
        launch_testing.asserts.assertExitCodes(proc_info, process=sim)
