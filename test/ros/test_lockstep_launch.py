"""Lockstep makes a closed loop over ROS deterministic.

The test node is the controller: for every state the simulator publishes it answers a joint PD
command stamped with that state's stamp. Two runs of 300 control periods (the second after
~/reset, with a deliberate delay before some answers) give bit-identical joint states.
"""

import os
import sys
import time
import unittest

import launch_testing
import launch_testing.actions
import launch_testing.asserts
import numpy as np
import pytest
import rclpy
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

import launch

sys.path.insert(0, os.path.dirname(__file__))
from ros_helpers import call, simulator_node, spin_until, stamp_ns

PERIODS = 300
KP, KD = 200.0, 5.0


@pytest.mark.launch_test
def generate_test_description():
    sim = simulator_node(lockstep=True, real_time_factor=0.0, control_period=0.002,
                         contact_model="penalty_fl")
    return launch.LaunchDescription([sim, launch_testing.actions.ReadyToTest()]), {"sim": sim}


class TestLockstep(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        rclpy.init()

    @classmethod
    def tearDownClass(cls):
        rclpy.shutdown()

    def setUp(self):
        self.node = rclpy.create_node("test_lockstep")
        self.pub = self.node.create_publisher(JointState, "joint_torque_cmd", 10)
        self.node.create_subscription(JointState, "joint_states", self.on_state, 10)
        self.states = []
        self.answered = set()
        self.q_ref = None
        self.delay = False

    def tearDown(self):
        self.node.destroy_node()

    def on_state(self, msg):
        stamp = stamp_ns(msg)
        if stamp in self.answered or len(self.states) >= PERIODS:
            return  # a re-sent state, or done
        self.answered.add(stamp)
        q, v = np.array(msg.position), np.array(msg.velocity)
        if self.q_ref is None:
            self.q_ref = q.copy()
        self.states.append((stamp, q, v))
        if self.delay and len(self.states) % 50 == 0:
            time.sleep(0.2)  # a slow controller must change nothing
        cmd = JointState(name=list(msg.name), effort=list(KP * (self.q_ref - q) - KD * v))
        cmd.header.stamp = msg.header.stamp
        self.pub.publish(cmd)

    def run_loop(self):
        self.assertTrue(spin_until(self.node, lambda: len(self.states) >= PERIODS, 300.0),
                        f"only {len(self.states)} periods")
        return self.states

    def test_two_runs_give_identical_states(self):
        first = self.run_loop()
        self.assertEqual(first[0][0], 0)
        self.assertEqual(first[-1][0], (PERIODS - 1) * 2_000_000)  # one period per command
        reset = self.node.create_client(Trigger, "/simulator/reset")
        self.states, self.answered, self.q_ref, self.delay = [], set(), None, True
        self.assertTrue(call(self.node, reset, Trigger.Request()).success)
        second = self.run_loop()
        for (sa, qa, va), (sb, qb, vb) in zip(first, second, strict=True):
            self.assertEqual(sa, sb)
            np.testing.assert_array_equal(qa, qb)
            np.testing.assert_array_equal(va, vb)


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):

    def test_exit_code(self, proc_info, sim):
        launch_testing.asserts.assertExitCodes(proc_info, process=sim)
