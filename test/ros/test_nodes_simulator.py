"""Node test suite, simulator alone: the ``simulator_node`` process over real DDS.

Plain pytest + rclpy (the ROS 2 Jazzy wheels of requirements-ros.txt); each test has its own
``ROS_DOMAIN_ID`` with localhost discovery and its own node processes, started from the console
entry point with the package's params files and a ``/**`` overrides file (what launch_ros
writes), stopped with SIGINT: every process must exit with code 0 and no traceback. The checks
are those of the launch tests (checks.py).
"""

import pytest
from checks import (
    Recorder,
    check_bad_commands_are_rejected,
    check_contact_model_switch,
    check_divergence_is_reported_and_the_node_stays_up,
    check_every_contact_model_runs,
    check_lockstep_is_deterministic,
    check_parameters_reach_the_node,
    check_pause_and_reset,
    check_silent_controller_gets_the_stale_action,
    check_wrong_length_after_a_valid_command_is_counted,
)
from harness import robot_joint_names

from biped_contact_sim.contact import CONTACT_MODELS

# Without a controller the simulator runs on its safe command (a joint hold); the tests of a
# simulator alone run it slowly, so that a check sees the periods it waits for.
SLOW = {"real_time_factor": 0.25}


def test_every_override_reaches_the_simulator(ros):
    """Values given after the params files win over both files (the /** ordering)."""
    values = {"contact_model": "spring_damper", "scenario_sets": "mu=0.6", "dt": 0.0005,
              "control_period": 0.002, "publish_rate": 10.0, "diagnostics_rate": 4.0,
              "real_time_factor": 0.5, "lockstep": True, "max_command_delay": 0.004,
              "command_timeout": 1.5, "wait_for_first_command": True,
              "stale_command_action": "damping", "stale_damping": 3.0, "start_paused": True,
              "max_speed": 500.0, "integrator": "rk4"}
    ros.start("simulator", **values)
    check_parameters_reach_the_node(ros.probe, "simulator", values)


def test_bad_commands_are_rejected_and_the_node_keeps_running(ros):
    ros.start("simulator", **SLOW)
    check_bad_commands_are_rejected(Recorder(ros.probe), robot_joint_names())


def test_wrong_length_after_a_valid_command_is_rejected_and_counted(ros):
    ros.start("simulator", **SLOW)
    check_wrong_length_after_a_valid_command_is_counted(Recorder(ros.probe),
                                                        robot_joint_names())


def test_silent_controller_gets_the_stale_action_after_the_timeout(ros):
    ros.start("simulator", **SLOW, command_timeout=0.5)
    check_silent_controller_gets_the_stale_action(Recorder(ros.probe), robot_joint_names())


def test_contact_model_switch_at_run_time_keeps_the_state(ros):
    ros.start("simulator", **SLOW)
    check_contact_model_switch(Recorder(ros.probe), "gauss_seidel")


def test_every_contact_model_runs_in_the_node(ros):
    ros.start("simulator", **SLOW)
    ran = check_every_contact_model_runs(Recorder(ros.probe), sorted(CONTACT_MODELS))
    print("\nsimulated seconds in ~1 s of wall time at real_time_factor 0.25: "
          + ", ".join(f"{m} {t:.3f}" for m, t in ran.items()))


def test_pause_and_reset_services(ros):
    ros.start("simulator", **SLOW)
    check_pause_and_reset(Recorder(ros.probe))


def test_bad_parameters_are_refused_at_start_up_naming_each(ros):
    proc = ros.start("simulator", expect_exit=1, dt=-1.0, contact_model="bogus",
                     control_period=0.0015, world="moon")
    assert proc.wait(120.0) == 1, proc.output
    text = proc.output
    assert "dt = -1.0 must be in [1e-05, 0.1] s" in text
    assert "contact_model = 'bogus' is not one of:" in text
    assert "world = 'moon': Unknown world: 'moon'. Valid names:" in text
    assert "Traceback" not in text


def test_divergence_is_reported_and_the_node_stays_up(ros):
    # Zero torque: the collapsing legs pass max_speed = 2 rad/s, which counts as divergence.
    ros.start("simulator", real_time_factor=0.0, max_speed=2.0)
    message = check_divergence_is_reported_and_the_node_stays_up(Recorder(ros.probe))
    print(f"\nsimulator status after the divergence: {message}")


@pytest.mark.parametrize("control_period", [0.002])
def test_lockstep_runs_are_deterministic(ros, control_period):
    ros.start("simulator", lockstep=True, real_time_factor=0.0, control_period=control_period)
    rate = check_lockstep_is_deterministic(ros.probe, 300, control_period)
    print(f"\nlockstep with a Python PD answering over DDS: {rate:.0f} periods/s")
