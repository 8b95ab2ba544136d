"""The simulator node's session without ROS (biped_contact_sim/ros/sim_session.py): the world
it builds, free running, watchdog, lockstep, model switch, pause/reset/divergence, status."""


import numpy as np
import pytest
from ros_logic_helpers import MS, FakeClock, make_session, pd_command

from biped_contact_sim.errors import ConfigError, DivergenceError
from biped_contact_sim.msgs import messages, stamps, topics
from biped_contact_sim.ros import params as ros_params
from biped_contact_sim.ros import sim_session


def test_build_world_matches_the_cli_factory():
    from biped_contact_sim.session.builder import build
    from biped_contact_sim.session.config import SimConfig

    config = ros_params.sim_config({"scenario_sets": "mu=0.6"})
    world = sim_session.build_world(config)
    built = build(SimConfig.from_sets("stand", "penalty_fl", "none", sets={"mu": 0.6}))
    robot, sim, q0, v0 = built.robot, built.sim, built.q0, built.v0
    assert world.robot.actuated_joint_names == robot.actuated_joint_names
    assert world.robot.mass == robot.mass
    np.testing.assert_array_equal(world.q0, q0)
    np.testing.assert_array_equal(world.v0, v0)
    assert world.sim.dt == sim.dt
    assert world.sim.terrain == sim.terrain
    assert world.sim.contact.settings == sim.contact.settings


@pytest.mark.parametrize(("values", "sets"), [
    ({"contacts": "geometry"}, {"contacts": "geometry"}),
    ({"world": "step"}, {"world": "step"}),
    ({"scenario_sets": "world=step", "contacts": "geometry"}, {"world": "step"}),
])
def test_build_world_has_the_world_and_contacts_of_the_cli(values, sets):
    """The node's world/contacts parameters give the Simulator biped-sim's --set gives."""
    from biped_contact_sim.session.builder import build
    from biped_contact_sim.session.config import SimConfig

    world = sim_session.build_world(ros_params.sim_config(values))
    sim = build(SimConfig.from_sets("stand", "penalty_fl", "none", sets=sets)).sim
    assert world.sim.contacts == sim.contacts == "geometry"
    assert repr(world.sim.world) == repr(sim.world)  # (World holds arrays: no ==)
    assert world.world_name == sets.get("world", "")
    assert world.sim.model.nq == sim.model.nq


def test_build_world_loads_an_overridden_robot():
    config = ros_params.sim_config({"robot_config": "planar_biped"})  # not stand's robot
    world = sim_session.build_world(config)
    assert world.robot.name == "planar_biped"
    assert world.q0.shape == (world.robot.nq,)
    moved = sim_session.build_world(ros_params.sim_config({}), {
        "robot.contacts.left_foot.offsets": [
        0.1, 0.05, 0.0, 0.1, -0.05, 0.0, -0.05, -0.05, 0.0, -0.05, 0.05, 0.0]})
    np.testing.assert_allclose(moved.robot.contact_bodies[0].offsets[-1], [-0.05, 0.05, 0.0])


# ------------------------------------------------------------------------------ sim session


def test_free_running_session_follows_the_wall_clock_and_publishes():
    clock = FakeClock()
    s = make_session(clock=clock)
    assert s.state_due  # the initial state
    topics = [t for t, _ in s.measurement_fields()]
    assert topics == ["/clock", "joint_states", "odom", "contact_wrench/left_foot",
                      "contact_wrench/right_foot"]
    assert s.tick() == 0
    clock.now += 0.0105
    assert s.tick() == 10
    assert s.sim.t == pytest.approx(0.010)
    assert s.state_due
    fields = dict(s.measurement_fields())
    assert fields["joint_states"]["header"]["stamp"] == stamps.stamp(s.sim.t)
    assert fields["odom"]["child_frame_id"] == s.robot.base_link
    assert fields["contact_wrench/left_foot"]["header"]["frame_id"] == "l_sole"
    assert fields["contact_wrench/left_foot"]["wrench"]["force"]["z"] > 50.0  # standing
    visual = [t for t, _ in s.visual_fields()]
    assert visual == ["cop/left_foot", "cop/right_foot", "zmp", "contact_markers"]
    assert s.tf_fields()["child_frame_id"] == s.robot.base_link


def test_late_commands_slow_the_clock_and_a_silent_controller_gets_the_stale_action():
    clock = FakeClock()
    s = make_session(clock=clock, real_time_factor=1.0, max_command_delay=0.001,
                     command_timeout=0.5, stale_command_action="damping", stale_damping=2.0)
    names = s.robot.actuated_joint_names
    ones = np.ones(len(names))
    assert s.command(1 * MS, names, ones).startswith("joint_torque_cmd stamped 1000000 ns "
                                                     "answers no published state")
    assert s.command(0, names, ones) is None  # answers the initial state
    clock.now += 0.0021
    assert s.tick() == 2  # at t = 0 and 1 ms the command (for t = 0) is fresh
    np.testing.assert_allclose(s.tau_applied, np.minimum(1.0, s.robot.effort_limit))
    clock.now += 0.001
    assert s.tick() == 0 and s.late_commands == 1  # it answers a state 2 ms old: wait
    assert s.status()["message"] == "waiting for a late joint_torque_cmd"
    clock.now += 0.3  # the simulated clock stands still while waiting
    assert s.tick() == 0 and s.sim.t == pytest.approx(0.002)
    assert s.next_wakeup() == pytest.approx(clock.now - 0.3 + 0.5)  # the timeout
    assert pd_command(s, 2 * MS) is None
    assert s.tick() == 1  # runs at once, and the schedule goes on from now (no burst)
    assert s.wait_time == pytest.approx(0.3)
    assert s.tick() == 0
    clock.now += 0.0011
    assert s.tick() == 1  # from 3 ms with the command for 2 ms: fresh
    clock.now += 0.0011
    assert s.tick() == 0 and s.late_commands == 2  # from 4 ms: late again
    clock.now += 0.6  # the controller went silent: after 0.5 s the stale action, running on
    assert s.tick() == 1
    assert s.tracker.state == "stale"
    np.testing.assert_allclose(s.tau_applied, -2.0 * s.v_prev[s.robot.v_idx], atol=1e-9)
    stale = [e.text for e in s.events if "No joint_torque_cmd answering a recent state" in e.text]
    assert len(stale) == 1 and "joint damping 2 N m s/rad" in stale[0]
    assert s.status()["level"] == bytes([messages.DIAG_WARN])
    clock.now += 0.0011
    assert s.tick() == 1 and len([e for e in s.events if "No joint_torque_cmd" in e.text]) == 1


def test_wait_for_first_command_holds_the_initial_state():
    clock = FakeClock()
    s = make_session(clock=clock, wait_for_first_command=True)
    clock.now += 1.0
    assert s.tick() == 0 and s.sim.t == 0.0 and s.next_wakeup() is None
    assert pd_command(s, 0) is None
    assert s.tick() == 1


def test_lockstep_counts_late_commands_and_catches_up_with_the_wall_clock():
    clock = FakeClock()
    s = make_session(clock=clock, lockstep=True, real_time_factor=1.0)
    assert s.next_wakeup() is None  # waits for the command
    clock.now += 0.0005
    assert pd_command(s, 0) is None
    assert s.next_wakeup() == pytest.approx(clock.now + 0.0005)
    assert s.tick() == 0  # the command is here, the period is not due yet
    clock.now += 0.0006
    assert s.tick() == 1 and s.late_commands == 0
    clock.now += 0.0030  # the next command comes 2.1 ms after its period was due
    assert pd_command(s, 1 * MS) is None
    assert s.tick() == 1 and s.late_commands == 1
    assert s.wait_time == pytest.approx(0.0021)
    assert s.next_wakeup() == pytest.approx(clock.now + 5.0)  # lockstep_timeout, then the hold
    # behind the wall clock (4.1 ms at t = 2 ms): the periods due run as their commands come
    # (each counted late: it ran after its due time; none waited past its state)
    for k, ran in ((2, 1), (3, 1), (4, 0)):  # the periods ending at 3 and 4 ms were due
        assert pd_command(s, k * MS) is None
        assert s.tick() == ran, k
    assert s.late_commands == 3 and s.wait_time == pytest.approx(0.0021)
    clock.now += 0.0010  # caught up: the period ending at 5 ms is due at 5 ms
    assert s.tick() == 1 and s.late_commands == 3
    clock.now += 0.2  # a command 0.2 s late: more than max_lag behind, the schedule restarts
    assert pd_command(s, 5 * MS) is None
    assert s.tick() == 1 and s.sim.t == pytest.approx(0.006) and s.pacer.resyncs == 1
    assert s.late_commands == 4 and s.wait_time == pytest.approx(0.0021 + 0.1991)  # from 6 ms
    assert pd_command(s, 6 * MS) is None
    assert s.tick() == 0  # no burst of 0.2 s: the next period is due one period from now
    clock.now += 0.0011
    assert s.tick() == 1


def test_bad_command_is_rejected_and_the_simulation_keeps_running():
    clock = FakeClock()
    s = make_session(clock=clock)
    names = s.robot.actuated_joint_names
    reason = s.command(0, names, [np.nan] * len(names))
    assert "NaN or Inf" in reason and s.rejected == 1 and s.last_rejection == reason
    assert s.command(0, ["bogus"], [1.0]) is not None
    clock.now += 0.0051
    assert s.tick() == 5
    values = {kv["key"]: kv["value"] for kv in s.status()["values"]}
    assert values["commands_rejected"] == "2"
    assert values["commands_accepted"] == "0"





def run_lockstep(periods, answer_late=False):
    clock = FakeClock()
    s = make_session(clock=clock, lockstep=True, real_time_factor=0.0, control_period=0.002)
    states = []
    for _ in range(periods):
        fields = dict(s.measurement_fields())
        stamp = stamps.ns_from_stamp(**fields["joint_states"]["header"]["stamp"])
        assert s.tick() == 0  # no command yet: the simulator waits
        if answer_late:
            clock.now += 0.5  # a slow controller changes nothing
            assert s.tick() == 0
        assert pd_command(s, stamp + 1, kp=0.0) is not None  # a wrong stamp does not count
        assert pd_command(s, stamp) is None
        assert s.tick() == 1
        assert s.tick() == 0  # one period per command
        states.append((s.sim.t, s.sim.q.copy(), s.sim.v.copy()))
    return states


def test_lockstep_advances_one_period_per_command_and_is_deterministic():
    a = run_lockstep(30)
    b = run_lockstep(30, answer_late=True)
    assert a[-1][0] == pytest.approx(0.060)
    for (ta, qa, va), (tb, qb, vb) in zip(a, b, strict=True):
        assert ta == tb
        np.testing.assert_array_equal(qa, qb)
        np.testing.assert_array_equal(va, vb)


def test_a_silent_controller_gets_the_hold_on_the_posture_it_left():
    """Free running: before the first command, and after command_timeout without a fresh one,
    the safe command is a joint hold on the posture the robot had then (not zero torque): the
    robot stands; the count of its periods is reported."""
    clock = FakeClock()
    s = make_session(clock=clock, real_time_factor=1.0, command_timeout=0.05)
    robot = s.robot
    for _ in range(2000):  # 2 s on the hold alone: it stands
        clock.now += 0.001
        s.tick()
    assert s.sim.t == pytest.approx(2.0, abs=0.002)
    assert s.sim.q[2] > 0.8 * s.world.q0[2]  # the pelvis did not drop
    q_hold = s.world.q0[robot.q_idx]
    tau = s.tau_applied
    expected = s.safe._hold.kp * (q_hold - s.q_prev[robot.q_idx]) \
        - s.safe._hold.kd * s.v_prev[robot.v_idx]
    np.testing.assert_allclose(tau, np.clip(expected, -robot.effort_limit, robot.effort_limit),
                               atol=1e-9)
    values = {kv["key"]: kv["value"] for kv in s.status()["values"]}
    assert values["safe_command"] == "hold" and int(values["safe_command_periods"]) >= 1999
    assert s.status()["level"] == bytes([messages.DIAG_WARN])


def test_lockstep_controller_dies_the_hold_runs_and_a_new_controller_resumes_it():
    """Lockstep: a controller silent for lockstep_timeout after commands had come: the hold
    runs the robot on (its states published and awaited); a command answering an older state
    stops it and lockstep resumes with the answer to the state now published — no reset."""
    clock = FakeClock()
    s = make_session(clock=clock, lockstep=True, real_time_factor=1.0, lockstep_timeout=0.5)
    for _ in range(10):  # a controller answers 10 periods
        assert pd_command(s, s.stamp) is None
        clock.now += 0.001
        assert s.tick() == 1
    t_died, stamp_died = s.sim.t, s.stamp
    clock.now += 0.4
    assert s.tick() == 0 and s.sim.t == t_died  # within lockstep_timeout: waits
    clock.now += 0.2
    for _ in range(300):
        clock.now += 0.001
        s.tick()
    assert s.holding and s.sim.t > t_died + 0.25
    assert any("lockstep_timeout" in e.text for e in s.events)
    assert s.sim.q[2] > 0.8 * s.world.q0[2]
    # a restarted controller answers a state it saw (older than the newest): lockstep resumes
    assert pd_command(s, stamp_died + 1 * MS) is None and not s.holding
    t_resumed = s.sim.t
    clock.now += 0.01
    assert s.tick() == 0 and s.sim.t == t_resumed  # waits for the newest state's answer
    assert pd_command(s, s.stamp) is None
    assert s.tick() == 1 and s.sim.t == pytest.approx(t_resumed + 0.001)


def test_contact_model_switch_keeps_the_state():
    clock = FakeClock()
    s = make_session(clock=clock, real_time_factor=0.0)
    s.pacer.max_batch = 1
    for _ in range(20):
        s.tick()
    q, v, t = s.sim.q.copy(), s.sim.v.copy(), s.sim.t
    assert t == pytest.approx(0.020)
    new = ros_params.apply_sim_update(s.config, {"contact_model": "spring_damper"})
    s.update_config(new)
    assert s.sim.contact.name == "spring_damper"
    assert s.sim.t == t
    np.testing.assert_array_equal(s.sim.q, q)
    np.testing.assert_array_equal(s.sim.v, v)
    assert any("Contact model is now 'spring_damper'" in e.text for e in s.events)
    assert s.tick() == 1 and s.error is None
    assert s.sim.t > t
    with pytest.raises(ConfigError):
        s.switch_contact_model("nope", {})
    assert s.sim.contact.name == "spring_damper"


def test_contact_model_switch_uses_the_model_its_check_built():
    s = make_session(clock=FakeClock(), real_time_factor=0.0)
    changes = {"contact_model": "gauss_seidel"}
    built: dict = {}
    assert ros_params.check_sim_update(s.config, changes, built) is None
    s.update_config(ros_params.apply_sim_update(s.config, changes), built["contact_model"])
    assert s.sim.contact is built["contact_model"]  # built once, by the check
    assert s.tick() >= 1 and s.error is None and s.sim.t > 0


def test_pause_reset_and_divergence():
    clock = FakeClock()
    s = make_session(clock=clock, real_time_factor=0.0)
    s.tick()
    s.set_paused(True)
    t = s.sim.t
    assert s.tick() == 0 and s.sim.t == t
    assert s.status()["message"] == "paused"
    s.set_paused(False)
    assert s.tick() > 0

    def diverge(tau):
        raise DivergenceError("Simulation diverged at t = 1.000000 s: state is NaN or Inf")

    s.sim.step = diverge
    assert s.tick() == 0
    assert s.error.startswith("Simulation diverged")
    assert s.status()["level"] == bytes([messages.DIAG_ERROR])
    assert "call ~/reset" in s.events[-1].text
    assert s.tick() == 0  # stays stopped, node stays up
    del s.sim.step  # back to the class method
    s.reset()
    assert s.error is None and s.sim.t == 0.0 and s.steps == 0
    np.testing.assert_array_equal(s.sim.q, s.world.q0)
    assert s.tick() > 0


def test_status_layout():
    s = make_session()
    status = s.status()
    assert status["name"] == topics.SIM_STATUS_NAME
    assert status["hardware_id"] == "biped3d"
    keys = [kv["key"] for kv in status["values"]]
    assert keys == ["sim_time_s", "steps", "contact_model", "contacts", "world", "dt_s",
                    "control_period_s",
                    "real_time_factor_target", "real_time_factor_measured",
                    "real_time_factor_overall", "overruns", "resyncs", "late_commands",
                    "wait_time_s", "mean_step_us", "lockstep", "paused", "command_state",
                    "safe_command", "safe_command_periods", "commands_accepted",
                    "commands_rejected", "last_rejection", "diverged"]
    array = messages.diagnostic_array(1.5, [status])
    assert array["header"]["stamp"] == {"sec": 1, "nanosec": 500_000_000}
