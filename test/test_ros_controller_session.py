"""Measurement assembly and the controller session (biped_contact_sim/ros/controller_session.py),
and the closed loop session → fields → assembler → controller → lockstep gate."""

import dataclasses

import numpy as np
import pinocchio as pin
import pytest
from ros_logic_helpers import MS, FakeClock, feed, make_session

from biped_contact_sim.control.base import Behavior, Controller, ControlOutput, Reference
from biped_contact_sim.errors import ConfigError
from biped_contact_sim.msgs import messages, stamps
from biped_contact_sim.msgs.topics import CONTROLLER_STATUS_NAME
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.ros import controller_session, sim_session
from biped_contact_sim.ros import params as ros_params


@pytest.fixture(scope="module")
def biped():
    return RobotModel.load("biped3d")


# ------------------------------------------------------------------------------ assembly





def test_measurement_from_the_simulators_messages_is_its_state():
    clock = FakeClock()
    s = make_session(clock=clock, real_time_factor=0.0)
    for _ in range(5):
        s.tick()
    a = controller_session.MeasurementAssembler(s.robot)
    stamp = feed(a, s)
    m = a.pop()
    assert m.stamp == stamp
    np.testing.assert_allclose(m.q, s.sim.q, atol=1e-12)
    np.testing.assert_allclose(m.v, s.sim.v, atol=1e-12)
    from biped_contact_sim.sim.observables import foot_wrenches
    expected = foot_wrenches(s.robot, s.robot.create_data(), s.q_prev, s.last_step)
    for foot, w in expected.items():
        np.testing.assert_allclose(m.wrenches[foot], w, atol=1e-9)
    assert a.pop() is None  # each stamp once


def test_a_sample_handed_over_in_process_is_the_measurement_its_messages_give():
    """composed_node's handoff (``MeasurementAssembler.state``) against the two-process path
    (the simulator's serialized messages read back by cdr.py): the same q, v and wrenches, to
    the bit."""
    from biped_contact_sim.msgs import cdr
    from biped_contact_sim.ros.writers import StateWriter

    s = make_session(clock=FakeClock(), real_time_factor=0.0)
    for _ in range(5):
        s.tick()
    robot, sample = s.robot, s.sample()
    bodies = [b.name for b in robot.contact_bodies]
    names = list(robot.actuated_joint_names)
    local = controller_session.MeasurementAssembler(robot)
    assert local.state(sample, names, bodies) == []
    wire = controller_session.MeasurementAssembler(robot)
    data = StateWriter(names, "world", robot.base_link,
                       [b.frame for b in robot.contact_bodies]).write(sample)
    stamp, js_names, position, velocity, _ = cdr.JointStateReader().read(data[1])
    assert wire.joint_state(stamp, js_names, position, velocity) is None
    stamp, pose, twist = cdr.read_odometry(data[2])
    assert wire.odometry(stamp, pose[:3], pose[3:], twist[:3], twist[3:]) is None
    for body, raw in zip(bodies, data[3:], strict=True):
        stamp, wrench = cdr.read_wrench_stamped(raw)
        assert wire.wrench(body, stamp, wrench[:3], wrench[3:]) is None
    a, b = local.pop(), wire.pop()
    assert a.stamp == b.stamp == sample.stamp
    assert np.array_equal(a.q, b.q) and np.array_equal(a.v, b.v)
    assert all(np.array_equal(a.wrenches[f], b.wrenches[f]) for f in bodies)
    assert np.abs(a.wrenches[bodies[0]]).max() > 10.0  # standing: the soles carry weight
    bad = dataclasses.replace(sample, quat_xyzw=2.0 * sample.quat_xyzw)
    assert "unit quaternion" in local.state(bad, names, bodies)[0]  # checked as a message


def test_a_slow_controller_gets_the_newest_state_and_the_skipped_ones_are_counted(biped):
    """Three complete states arrive before the controller asks: it gets the newest, the two
    older ones are dropped (never a queue of stale states) and counted."""
    clock = FakeClock()
    a = controller_session.MeasurementAssembler(biped, clock=clock)
    names = biped.actuated_joint_names
    zeros = np.zeros(len(names))
    for k in range(3):
        clock.now += 0.001
        a.joint_state(k * MS, names, zeros, zeros)
        a.odometry(k * MS, [0, 0, 0.8], [0.0, 0.0, 0.0, 1.0], [0] * 3, [0] * 3)
        for foot in ("left_foot", "right_foot"):
            a.wrench(foot, k * MS, [0, 0, 200], [0] * 3)
    m = a.pop()
    assert m.stamp == 2 * MS and m.arrival == pytest.approx(clock.now) and a.skipped == 2
    assert a.pop() is None


def test_missed_deadlines_are_the_commands_later_than_a_control_period():
    clock = FakeClock()
    s = make_session(clock=clock)
    config = ros_params.controller_config({"sync": "latest"})
    ctrl = controller_session.ControllerSession(s.robot, config, clock=clock)
    a = controller_session.MeasurementAssembler(s.robot, sync="latest", clock=clock)
    for delay in [0.0002, 0.0004, 0.003, 0.0005]:  # the third is 3 ms late
        feed(a, s)
        m = a.pop()
        assert ctrl.step(m) is not None
        ctrl.published(m, m.arrival + delay)
        clock.now += 0.001
        s.tick()
    values = {kv["key"]: kv["value"] for kv in ctrl.status()["status"][0]["values"]}
    assert values["missed_deadlines"] == "1" and values["skipped_measurements"] == "0"
    assert float(values["max_latency_us"]) == pytest.approx(3000.0)
    assert float(values["missed_fraction"]) == pytest.approx(0.25)
    assert ctrl.status()["status"][0]["level"] == bytes([messages.DIAG_WARN])


def test_exact_sync_waits_for_every_part_with_the_same_stamp(biped):
    a = controller_session.MeasurementAssembler(biped)
    names = biped.actuated_joint_names
    zeros = np.zeros(len(names))
    quat = [0.0, 0.0, 0.0, 1.0]
    a.joint_state(2 * MS, names, zeros, zeros)
    a.odometry(2 * MS, [0, 0, 0.8], quat, [0] * 3, [0] * 3)
    a.wrench("left_foot", 2 * MS, [0, 0, 200], [0] * 3)
    assert a.pop() is None and a.missing() == ["contact_wrench/right_foot"]
    a.wrench("right_foot", 1 * MS, [0, 0, 200], [0] * 3)  # another stamp
    assert a.pop() is None
    a.wrench("right_foot", 2 * MS, [0, 0, 190], [0] * 3)
    m = a.pop()
    assert m.stamp == 2 * MS and m.wrenches["right_foot"][2] == 190
    # an older stamp completing later is not handed out
    a.joint_state(1 * MS, names, zeros, zeros)
    a.odometry(1 * MS, [0, 0, 0.8], quat, [0] * 3, [0] * 3)
    a.wrench("left_foot", 1 * MS, [0, 0, 200], [0] * 3)
    assert a.pop() is None
    # a whole older state is a reset of the simulator (time jumped back): handed out, once
    for _ in range(2):  # the second time: a re-sent state, answered already
        a.joint_state(0, names, zeros, zeros)
        a.odometry(0, [0, 0, 0.8], quat, [0] * 3, [0] * 3)
        a.wrench("left_foot", 0, [0, 0, 200], [0] * 3)
        assert a.pop() is None or a.last_stamp == 0
        a.wrench("right_foot", 0, [0, 0, 180], [0] * 3)
        m = a.pop()
        if _ == 0:
            assert m.stamp == 0 and m.wrenches["right_foot"][2] == 180
        else:
            assert m is None


def test_joint_states_are_matched_by_name(biped):
    a = controller_session.MeasurementAssembler(biped, sync="latest")
    names = list(biped.actuated_joint_names)
    pos = np.arange(len(names), dtype=float)
    # reversed order plus an extra joint: fine
    assert a.joint_state(0, ["gripper", *names[::-1]], [9.0, *pos[::-1]],
                         [0.0] * (len(names) + 1)) is None
    assert a.joint_state(0, names[1:], pos[1:], pos[1:]).startswith(
        f"joint_states lacks actuated joint(s): {names[0]}")
    assert a.joint_state(0, names, pos, []).startswith(f"joint_states has {len(names)} names")
    assert a.wrench("hand", 0, [0] * 3, [0] * 3).startswith("unknown foot 'hand'")
    a.odometry(0, [0, 0, 1], [0, 0, 0, 1], [0] * 3, [0] * 3)
    a.wrench("left_foot", 0, [0] * 3, [0] * 3)
    a.wrench("right_foot", 0, [0] * 3, [0] * 3)
    m = a.pop()
    np.testing.assert_array_equal(m.q[biped.q_idx], pos)


def test_latest_sync_skips_old_inputs_and_repeated_joint_states(biped):
    a = controller_session.MeasurementAssembler(biped, sync="latest", max_age=0.01)
    names = biped.actuated_joint_names
    zeros = np.zeros(len(names))
    a.odometry(0, [0, 0, 1], [0, 0, 0, 1], [0] * 3, [0] * 3)
    a.wrench("left_foot", 0, [0] * 3, [0] * 3)
    a.wrench("right_foot", 5 * MS, [0] * 3, [0] * 3)
    a.joint_state(20 * MS, names, zeros, zeros)
    assert a.pop() is None  # odom is 20 ms older than the joint states
    a.odometry(18 * MS, [0, 0, 1], [0, 0, 0, 1], [0] * 3, [0] * 3)
    a.wrench("left_foot", 19 * MS, [0] * 3, [0] * 3)
    a.wrench("right_foot", 19 * MS, [0] * 3, [0] * 3)
    assert a.pop().stamp == 20 * MS
    assert a.pop() is None  # no new joint states


def test_latest_sync_says_when_the_newest_state_is_whole(biped):
    """The controller answers a whole state at once: every newest message carries the stamp of
    the newest joint states, not handed out yet. Parts of different stamps are complete (the
    timer takes them) but never whole."""
    a = controller_session.MeasurementAssembler(biped, sync="latest")
    names = biped.actuated_joint_names
    zeros = np.zeros(len(names))
    for k in (1, 2):
        a.joint_state(k * MS, names, zeros, zeros)
        a.odometry(k * MS, [0, 0, 1], [0, 0, 0, 1], [0] * 3, [0] * 3)
        a.wrench("left_foot", k * MS, [0] * 3, [0] * 3)
        assert not a.whole()  # the right foot's wrench of this period is still missing
        a.wrench("right_foot", k * MS, [0] * 3, [0] * 3)
        assert a.whole()
        assert a.pop().stamp == k * MS
        assert not a.whole()  # handed out
    a.joint_state(3 * MS, names, zeros, zeros)  # the others keep stamp 2 ms
    assert not a.whole() and a.pop().stamp == 3 * MS
    # a driver faster than the control period: a whole state only a period after the last
    for stamp in (3.5 * MS, 4 * MS):
        a.joint_state(int(stamp), names, zeros, zeros)
        a.odometry(int(stamp), [0, 0, 1], [0, 0, 0, 1], [0] * 3, [0] * 3)
        for foot in ("left_foot", "right_foot"):
            a.wrench(foot, int(stamp), [0] * 3, [0] * 3)
        assert a.whole() and a.whole(int(0.75 * MS)) == (stamp == 4 * MS)


# ------------------------------------------------------------------------------ controller


class HoldBehavior(Behavior):
    name = "hold"

    def __init__(self, robot, q0, **params):
        self.q0 = np.asarray(q0)
        self.robot = robot

    def reference(self, t):
        return Reference(stance=("left_foot", "right_foot"), com=np.array([0.0, 0.0, 0.7 + t]),
                         q_joints=self.q0[self.robot.q_idx], internal=np.zeros(6))


@dataclasses.dataclass(frozen=True)
class HoldSettings:
    """Settings of the test controller.

    Attributes:
        kp: stiffness [N m/rad].
    """

    kp: float = 10.0


class HoldController(Controller):
    name = "hold"
    Settings = HoldSettings

    def compute(self, meas):
        ref = self.behavior.reference(meas.t)
        if meas.t > 0.5:
            raise ConfigError("test failure")
        tau = self.settings.kp * (ref.q_joints - meas.q[self.robot.q_idx])
        return ControlOutput(tau, {"internal": np.ones(6), "t_seen": meas.t})


@pytest.fixture
def hold(monkeypatch):
    monkeypatch.setattr(controller_session, "make_behavior",
                        lambda name, robot, q0, **p: HoldBehavior(robot, q0))
    monkeypatch.setattr(controller_session, "make_controller",
                        lambda name, robot, behavior, dt, **s:
                        HoldController(robot, behavior, dt, **s))


def measurement(robot, stamp, q=None):
    q = robot.standing_configuration() if q is None else q
    return controller_session.AssembledMeasurement(stamp, q, np.zeros(robot.nv),
                                   {b.name: np.zeros(6) for b in robot.contact_bodies})


def test_controller_session_commands_and_diagnostics(biped, hold):
    cfg = ros_params.controller_config({"diagnostics_decimation": 2,
                                        "controller_settings": "kp=3.0"})
    s = controller_session.ControllerSession(biped, cfg)
    waiting = s.status(["odom"])["status"][0]
    assert waiting["message"] == "waiting for odom" and waiting["level"] == b"\x01"
    t0 = 1_700_000_000_123_456_789  # hardware time: the behaviour still starts at t = 0
    cycle = s.step(measurement(biped, t0))
    assert cycle.command["header"]["stamp"] == stamps.stamp_fields(t0)  # exact echo
    assert cycle.command["name"] == list(biped.actuated_joint_names)
    assert cycle.command["position"] == [] and len(cycle.command["effort"]) == biped.n_joints
    assert s.last_output.info["t_seen"] == 0.0
    topics = [t for t, _ in cycle.diagnostics]
    assert topics == ["~/com", "~/com_ref", "~/internal_forces", "~/internal_forces_ref"]
    d = dict(cycle.diagnostics)
    com = pin.centerOfMass(biped.model, biped.create_data(), biped.standing_configuration())
    assert d["~/com"]["point"] == pytest.approx(dict(zip("xyz", com, strict=True)))
    assert d["~/com_ref"]["point"]["z"] == pytest.approx(0.7)
    assert d["~/internal_forces"]["layout"]["dim"][0]["label"] == "internal"
    array = s.status()
    assert array["header"]["stamp"] == stamps.stamp_fields(t0)
    status = array["status"][0]
    assert status["level"] == b"\x00" and status["name"] == CONTROLLER_STATUS_NAME
    keys = [kv["key"] for kv in status["values"]]
    assert keys[:16] == ["t_s", "controller", "behavior", "stance", "cycles", "failures",
                         "mean_compute_us", "max_compute_us", "mean_latency_us",
                         "max_latency_us", "missed_deadlines", "skipped_measurements",
                         "missed_fraction", "inputs_rejected", "last_input_rejection", "com"]
    assert "info.internal" in keys and "info.t_seen" in keys
    second = s.step(measurement(biped, t0 + 100 * MS))
    assert second.diagnostics == []  # decimation 2
    assert s.last_output.info["t_seen"] == pytest.approx(0.1)


def test_controller_session_restarts_when_time_jumps_back(biped, hold):
    s = controller_session.ControllerSession(biped, ros_params.controller_config({}))
    s.step(measurement(biped, 300 * MS))
    first = s.controller
    s.step(measurement(biped, 0))
    assert s.controller is not first
    assert any("Time jumped back" in e.text for e in s.events)
    assert s.last_output.info["t_seen"] == 0.0


def test_controller_failure_publishes_nothing_and_is_reported(biped, hold):
    s = controller_session.ControllerSession(biped, ros_params.controller_config({}))
    assert s.step(measurement(biped, 0)) is not None
    assert s.step(measurement(biped, 600 * MS)) is None
    assert s.failures == 1 and "ConfigError: test failure" in s.last_error
    assert s.events[-1].severity == "error"
    status = s.status()["status"][0]
    assert status["level"] == b"\x01" and "ConfigError: test failure" in status["message"]


def test_check_controller_refuses_unknown_names(biped, monkeypatch):
    monkeypatch.setattr(controller_session, "make_behavior",
                        lambda name, robot, q0, **p: HoldBehavior(robot, q0))
    with pytest.raises(ConfigError, match="Unknown controller: 'pid'"):
        controller_session.check_controller(biped, dataclasses.replace(
            ros_params.controller_config({}),
                                                       controller="pid"))


def test_closed_loop_through_message_fields_keeps_the_biped_standing():
    """Simulator session → fields → assembler → ctc → command fields → lockstep gate."""
    config = ros_params.sim_config({"lockstep": True, "real_time_factor": 0.0})
    sim = sim_session.SimSession(sim_session.build_world(config), config)
    robot = sim.robot
    ctrl = controller_session.ControllerSession(
        robot, ros_params.controller_config({"controller": "ctc"}))
    assembler = controller_session.MeasurementAssembler(robot)
    z0 = sim.sim.q[2]
    while sim.sim.t < 0.2 - 1e-9:
        feed(assembler, sim)
        cycle = ctrl.step(assembler.pop())
        assert cycle is not None, ctrl.last_error
        cmd = cycle.command
        assert sim.command(stamps.ns_from_stamp(**cmd["header"]["stamp"]), cmd["name"],
                           cmd["effort"]) is None
        assert sim.tick() == 1
        assert sim.sim.q[2] > z0 - 0.01
    assert sim.error is None and ctrl.cycles == 200
