"""hardware.launch.py: every launch argument reaches the controller (or robot_state_publisher),
and the controller alone answers a driver's recorded stream (the hardware swap): no simulator
in the graph, commands in the robot's joint order stamped with the measurement they answer."""

import unittest

import launch_testing
import launch_testing.actions
import launch_testing.asserts
import pytest
from checks import check_controller_answers_a_recorded_stream, check_parameters_reach_the_node
from harness import robot_joint_names
from launch_common import ProbeTestCase, include

import launch

ARGUMENTS = {"robot": "biped3d", "controller": "ctc", "behavior": "sway", "sync": "latest",
             "control_period": "0.002", "rviz": "false", "use_sim_time": "false"}


@pytest.mark.launch_test
def generate_test_description():
    # The defaults sync:=latest and use_sim_time:=false are what a driver needs; the other
    # arguments are changed from their defaults.
    return launch.LaunchDescription([include("hardware.launch.py", **ARGUMENTS),
                                     launch_testing.actions.ReadyToTest()])


class TestHardwareSwap(ProbeTestCase):

    def test_arguments_reach_the_controller(self):
        check_parameters_reach_the_node(self.probe, "controller", {
            "controller": "ctc", "behavior": "sway", "sync": "latest", "control_period": 0.002,
            "robot_config": "biped3d"})
        check_parameters_reach_the_node(self.probe, "robot_state_publisher",
                                        {"use_sim_time": False})

    def test_controller_answers_a_recorded_stream(self):
        check_controller_answers_a_recorded_stream(self.probe, robot_joint_names())


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):

    def test_every_process_exits_cleanly(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)
