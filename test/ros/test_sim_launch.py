"""sim.launch.py with its defaults (the README's demo: lockstep with real-time pacing, wbc,
stand): the topic contract at its rates with the robot standing, sole wrenches carrying its
weight, bad commands rejected with the node alive, a run-time contact-model switch, pause and
reset, and every process exiting cleanly when the launch stops (SIGINT)."""

import unittest

import launch_testing
import launch_testing.actions
import launch_testing.asserts
import pytest
from checks import (
    Recorder,
    check_bad_commands_are_rejected,
    check_contact_model_switch,
    check_messages_agree_with_the_model,
    check_pause_and_reset,
    check_standing_wrenches_carry_the_weight,
    check_topics_at_their_rates,
)
from harness import robot_joint_names
from launch_common import ProbeTestCase, include

import launch


@pytest.mark.launch_test
def generate_test_description():
    return launch.LaunchDescription([include("sim.launch.py", rviz="false"),
                                     launch_testing.actions.ReadyToTest()])


class TestDefaultDemo(ProbeTestCase):

    RESET = True
    CLOSED_LOOP = True

    def test_contract_topics_at_their_rates_with_the_robot_standing(self):
        rec = Recorder(self.probe)
        rates = check_topics_at_their_rates(rec, 0.001, 20.0, 1.0, window=5.0)
        check_messages_agree_with_the_model(rec, robot_joint_names())
        ratio = check_standing_wrenches_carry_the_weight(rec, 40.0)
        print(f"rates {rates}, sole forces / m g = {ratio:.4f}")

    def test_bad_commands_are_rejected_and_the_node_keeps_running(self):
        check_bad_commands_are_rejected(Recorder(self.probe), robot_joint_names(),
                                       closed_loop=True)

    def test_contact_model_switch_at_run_time(self):
        check_contact_model_switch(Recorder(self.probe), "gauss_seidel")

    def test_pause_and_reset(self):
        check_pause_and_reset(Recorder(self.probe))


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):

    def test_every_process_exits_cleanly(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)
