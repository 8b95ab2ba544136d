"""Torque-command validation, watchdog, lockstep gate, real-time pacing
(biped_contact_sim/ros/scheduling.py)."""


import numpy as np
import pytest
from ros_logic_helpers import MS, run_steps

from biped_contact_sim.errors import ConfigError
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.ros import scheduling


@pytest.fixture(scope="module")
def biped():
    return RobotModel.load("biped3d")


# ------------------------------------------------------------------------------ commands


def test_command_validator(biped):
    v = scheduling.CommandValidator(biped.actuated_joint_names)
    names = list(biped.actuated_joint_names)
    tau = np.arange(len(names), dtype=float)
    ok, reason = v.check(names[::-1], tau[::-1])
    assert reason is None
    np.testing.assert_array_equal(ok, tau)  # reordered to the robot's joint order
    assert v.check(names, tau[:-1])[1] == (f"joint_torque_cmd has {len(names)} names but "
                                          f"{len(names) - 1} efforts")
    assert v.check(["elbow", *names[1:]], tau)[1].startswith(
        "joint_torque_cmd names unknown joint(s) 'elbow'; actuated joints: ")
    assert v.check([names[0], *names[:-1]], tau)[1] == (
        f"joint_torque_cmd names joint(s) twice: {names[0]}")
    assert v.check(names[:-1], tau[:-1])[1].endswith(f"missing: {names[-1]}")
    bad = tau.copy()
    bad[2] = np.nan
    bad[3] = np.inf
    assert v.check(names, bad)[1] == (f"joint_torque_cmd effort is NaN or Inf for {names[2]}, "
                                      f"{names[3]}")
    assert v.check([], [])[1].startswith("joint_torque_cmd has 0 joints")
    # after a valid command with the same names (the fast path): a wrong length is a reason
    assert v.check(names, tau)[1] is None
    assert v.check(names, tau[:-2])[1] == (f"joint_torque_cmd has {len(names)} names but "
                                           f"{len(names) - 2} efforts")


def test_command_tracker_fresh_late_stale_and_transitions_reported_once():
    tr = scheduling.CommandTracker(max_delay=0.002, timeout=0.5)
    assert tr.decide(0, wall=0.0) == "none" and tr.transition() == "none"
    assert tr.transition() is None
    assert tr.feed(0, np.ones(2)) is None
    assert tr.decide(2 * MS, wall=0.0) == "fresh"  # answers a state 2 ms old: still fresh
    assert tr.transition() == "fresh"
    assert tr.decide(3 * MS, wall=1.0) == "late" and tr.late_periods == 1
    assert tr.decide(3 * MS, wall=1.3) == "late" and tr.late_periods == 1  # the same wait
    assert tr.feed(3 * MS, np.zeros(2)) is None
    assert tr.decide(3 * MS, wall=1.4) == "fresh"
    assert tr.wait_time == pytest.approx(0.4)
    assert tr.feed(2 * MS, np.zeros(2)).startswith("joint_torque_cmd stamped 2000000 ns "
                                                   "answers an older state")
    assert tr.decide(10 * MS, wall=2.0) == "late"
    assert tr.decide(10 * MS, wall=2.5001) == "stale"  # waited longer than the timeout
    assert tr.decide(11 * MS, wall=2.6) == "stale"  # runs on without waiting
    assert tr.feed(11 * MS, np.zeros(2)) is None
    assert tr.decide(11 * MS, wall=2.7) == "fresh"
    forever = scheduling.CommandTracker(max_delay=0.0, timeout=0.0)
    forever.feed(0, np.zeros(2))
    assert forever.decide(1 * MS, wall=0.0) == "late"
    assert forever.decide(1 * MS, wall=1e6) == "late"  # timeout 0: waits without limit


def test_safe_commands(biped):
    rng = np.random.default_rng(2)
    q = biped.standing_configuration()
    v = rng.standard_normal(biped.nv)
    zero = scheduling.SafeCommand(biped, "zero", 300.0, 30.0, 5.0, 1e-3)
    np.testing.assert_array_equal(zero.torque(q, v), np.zeros(biped.n_joints))
    damping = scheduling.SafeCommand(biped, "damping", 300.0, 30.0, 5.0, 1e-3)
    np.testing.assert_array_equal(damping.torque(q, v), -5.0 * v[biped.v_idx])
    hold = scheduling.SafeCommand(biped, "hold", 300.0, 30.0, 5.0, 1e-3)
    hold.start(q)
    q2 = q.copy()
    q2[biped.q_idx] += 0.01
    tau = hold.torque(q2, np.zeros(biped.nv))
    np.testing.assert_allclose(tau, -300.0 * 0.01)  # back to the posture it started on
    assert hold.periods == 1 and "joint hold" in hold.describe()
    with pytest.raises(ConfigError, match="stale_command_action = 'brake' is not one of: hold"):
        scheduling.SafeCommand(biped, "brake", 1.0, 1.0, 1.0, 1e-3)


@pytest.mark.parametrize(("scenario", "hold_s"), [("stand", 1.0), ("stand", 5.0),
                                                 ("multicontact", 5.0)])
def test_the_default_hold_keeps_the_robot_upright_for_a_new_controller(scenario, hold_s):
    """The simulator node's default joint hold (``SimNodeConfig``'s stiffness and damping),
    started 0.5 s into a ``wbc`` stand, keeps the biped and the humanoid upright for
    ``hold_s`` (base pitch and roll within 2°, pelvis within 1.5 cm of its height); on the
    biped, a newly started ``wbc`` stand takes the robot over from there and holds it for
    2 s (``multicontact``'s own timeline has moved on to its hand phases by then). At
    300 N·m/rad the biped settled 4–5° leaning back, a new controller without the start-up
    blend diverged from that lean after a 1 s or a 5 s hold (``test_wbc_startup``), and the
    humanoid fell."""
    import pinocchio as pin

    from biped_contact_sim.ros.params import SimNodeConfig
    from biped_contact_sim.session.builder import build
    from biped_contact_sim.session.config import SimConfig

    config = SimConfig.from_sets(scenario, "penalty_fl", "wbc")
    built = build(config)
    sim, robot = built.sim, built.robot

    run_steps(sim, built.control, 500)
    node = SimNodeConfig()
    hold = scheduling.SafeCommand(robot, "hold", node.hold_stiffness, node.hold_damping,
                                  node.stale_damping, 1e-3)
    hold.start(sim.q)
    run_steps(sim, lambda t, q, v: hold.torque(q, v), round(hold_s * 1000), closed=False)
    roll, pitch, _ = pin.rpy.matrixToRpy(pin.Quaternion(sim.q[3:7]).toRotationMatrix())
    assert max(abs(roll), abs(pitch)) < np.radians(2.0), np.degrees([roll, pitch])
    assert abs(sim.q[2] - built.q0[2]) < 0.015
    if scenario == "stand":
        run_steps(sim, build(config).control, 2000)  # raises DivergenceError if the takeover fails
        assert abs(sim.q[2] - built.q0[2]) < 0.015


def test_lockstep_gate_sequence():
    g = scheduling.LockstepGate()
    assert g.offer(0, [1.0]) == "lockstep: no state awaits a command"
    g.expect(1 * MS)
    assert not g.ready
    assert g.offer(0, [1.0]).startswith("lockstep: command stamped 0 ns ignored, waiting for "
                                        "the state stamped 1000000 ns")
    assert g.offer(1 * MS, [2.0], wall=5.0) is None and g.ready and g.arrival == 5.0
    assert g.offer(1 * MS, [3.0]) == "lockstep: second command for stamp 1000000 ns ignored"
    np.testing.assert_array_equal(g.take(), [2.0])
    assert not g.ready and g.expected is None
    with pytest.raises(RuntimeError):
        g.take()


# ------------------------------------------------------------------------------ pacing


def test_pacer_real_time_and_slower_factors():
    p = scheduling.Pacer(0.001, 1.0)
    p.hold(10.0, 0.0)
    assert p.due(10.0, 0.0) == 0
    assert p.due(10.0035, 0.0) == 3
    assert p.due(10.0035, 0.003) == 0
    half = scheduling.Pacer(0.001, 0.5)
    half.hold(0.0, 0.0)
    assert half.due(0.004, 0.0) == 2  # 4 ms of wall time = 2 ms of simulated time
    fast = scheduling.Pacer(0.001, 0.0, max_batch=7)
    assert fast.due(0.0, 0.0) == 7


def test_pacer_next_due_and_restart_after_a_wait():
    p = scheduling.Pacer(0.001, 0.5)
    p.hold(10.0, 0.0)
    assert p.next_due(0.0) == pytest.approx(10.002)  # 1 ms of simulated time at factor 0.5
    assert p.next_due(0.001) == pytest.approx(10.004)
    p.restart(20.0, 0.001)  # waited for a command: due now, no catching up afterwards
    assert p.due(20.0, 0.001) == 1
    assert p.next_due(0.002) == pytest.approx(20.002)
    assert scheduling.Pacer(0.001, 0.0).next_due(0.0) is None


def test_pacer_resyncs_instead_of_bursting_and_counts_overruns():
    p = scheduling.Pacer(0.001, 1.0, max_lag=0.1)
    p.hold(0.0, 0.0)
    assert p.due(0.5, 0.0) == 1 and p.resyncs == 1  # 0.5 s behind: drop the schedule
    assert p.due(0.5, 0.001) == 0
    assert p.due(0.501, 0.001) == 1
    assert not p.record(0.0009)
    assert p.record(0.0011) and p.overruns == 1
    assert not scheduling.Pacer(0.001, 0.0).record(10.0)  # no budget: as fast as possible


def test_real_time_meter():
    m = scheduling.RealTimeMeter(window=1.0)
    assert m.value is None
    for k in range(50):
        m.add(0.1 * k, 0.05 * k)
    assert m.value == pytest.approx(0.5)
    assert m.overall == pytest.approx(0.5)
    m.reset()
    assert m.value is None and m.overall is None
