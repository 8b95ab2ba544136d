"""The simulator node in lockstep as fast as possible, the test's probe as its controller (a
joint PD): two runs of 300 control periods, the second after ~/reset with slow answers, give
identical states, one period per answer."""

import unittest

import launch_testing
import launch_testing.actions
import launch_testing.asserts
import pytest
from checks import check_lockstep_is_deterministic
from launch_common import ProbeTestCase, node

import launch


@pytest.mark.launch_test
def generate_test_description():
    sim = node("simulator", lockstep=True, real_time_factor=0.0, control_period=0.002)
    return launch.LaunchDescription([sim, launch_testing.actions.ReadyToTest()]), {"sim": sim}


class TestLockstep(ProbeTestCase):

    def test_two_runs_give_identical_states(self):
        rate = check_lockstep_is_deterministic(self.probe, 300, 0.002)
        print(f"lockstep with a Python PD over DDS: {rate:.0f} periods/s")


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):

    def test_exit_code(self, proc_info, sim):
        launch_testing.asserts.assertExitCodes(proc_info, process=sim)
