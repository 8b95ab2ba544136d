"""The simulator node alone under launch_testing (real_time_factor 0.25: a limp biped diverges
after ~1.75 s of simulated time): every contact model runs (switched at run time), bad commands
are rejected with the node alive, a controller that goes silent gets the stale action."""

import unittest

import launch_testing
import launch_testing.actions
import launch_testing.asserts
import pytest
from checks import (
    Recorder,
    check_bad_commands_are_rejected,
    check_every_contact_model_runs,
    check_silent_controller_gets_the_stale_action,
)
from harness import robot_joint_names
from launch_common import ProbeTestCase, node

import launch
from biped_contact_sim.contact import CONTACT_MODELS


@pytest.mark.launch_test
def generate_test_description():
    sim = node("simulator", real_time_factor=0.25, command_timeout=0.5)
    return launch.LaunchDescription([sim, launch_testing.actions.ReadyToTest()]), {"sim": sim}


class TestSimulatorNode(ProbeTestCase):

    RESET = True

    def test_every_contact_model_runs(self):
        check_every_contact_model_runs(Recorder(self.probe), sorted(CONTACT_MODELS))

    def test_bad_commands_are_rejected(self):
        check_bad_commands_are_rejected(Recorder(self.probe), robot_joint_names())

    def test_silent_controller_gets_the_stale_action(self):
        check_silent_controller_gets_the_stale_action(Recorder(self.probe), robot_joint_names())


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):

    def test_exit_code(self, proc_info, sim):
        launch_testing.asserts.assertExitCodes(proc_info, process=sim)
