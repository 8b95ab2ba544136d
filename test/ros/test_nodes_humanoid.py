"""Node test suite, the humanoid (feet and hands, config/humanoid.yaml): every contact body of
the robot config has its ``contact_wrench/<body>`` topic, published by the simulator every
period and read by the controller, and its contact points in ``contact_markers``. Set-up as in
test_nodes_simulator.py."""

import pytest
from checks import (
    Recorder,
    check_a_wrench_of_every_contact_body_every_period,
    check_closed_loop,
    check_controller_waits_for_every_contact_wrench,
)

from biped_contact_sim.robot.config import load_robot_config

ROBOT = "humanoid"
CONFIG = load_robot_config(ROBOT)
BODIES = [b.name for b in CONFIG.contact_bodies]


def test_config_has_feet_and_hands():
    assert BODIES == ["left_foot", "right_foot", "left_hand", "right_hand"]


def test_simulator_publishes_a_wrench_of_every_contact_body_every_period(ros):
    ros.start("simulator", robot=ROBOT, robot_config=ROBOT, lockstep=True,
              real_time_factor=0.0, markers_rate=20.0)
    frames = {b.name: b.frame for b in CONFIG.contact_bodies}
    mean_fz, markers = check_a_wrench_of_every_contact_body_every_period(
        Recorder(ros.probe, tuple(BODIES)), frames, grounded=("left_foot", "right_foot"))
    # One force arrow per contact point (4 corners of each sole and palm), a CoP per body.
    n_points = sum(len(b.offsets) for b in CONFIG.contact_bodies)
    assert markers["forces"] == set(range(n_points)) and n_points == 16
    assert markers["cop"] == set(range(len(BODIES)))
    print("\nhumanoid, mean f_z over the periods after the first ten [N]: " + ", ".join(
        f"{b} {f:.1f}" for b, f in mean_fz.items()))


def test_controller_reads_the_wrench_of_every_contact_body(ros):
    ros.start("controller", robot=ROBOT, robot_config=ROBOT, controller="ctc",
              behavior="stand", diagnostics_rate=5.0)
    check_controller_waits_for_every_contact_wrench(ros.probe, ROBOT, BODIES)


@pytest.mark.parametrize(("scenario", "duration"), [("lean_on_table", 8.5),
                                                    ("multicontact", 12.1)])
def test_hand_scenarios_over_ros_in_lockstep(ros, scenario, duration):
    """``lean_on_table`` and ``multicontact`` over ROS (lockstep, as fast as possible): the
    simulator node with the scenario's world and the controller node with the behaviour of
    the same name, which brings its own ``wbc`` settings; the whole sequence without
    divergence or fall, one command per period, every command accepted (the controller reads
    the wrenches of all four contact bodies: it computes only once all have arrived)."""
    ros.start("simulator", robot=ROBOT, robot_config=ROBOT, scenario=scenario,
              lockstep=True, real_time_factor=0.0)
    ros.start("controller", robot=ROBOT, robot_config=ROBOT, controller="wbc",
              behavior=scenario)
    r = check_closed_loop(ros.probe, duration, 0.6, timeout=900.0)
    assert r.commands >= round(r.sim_time / 0.001) - 1  # counted at sim_time (≥ duration)
    print(f"\n{scenario} over ROS: {r.sim_time:.2f} s simulated in {r.wall_time:.1f} s wall, "
          f"{r.commands} commands, lowest base {r.min_base_height:.3f} m")
