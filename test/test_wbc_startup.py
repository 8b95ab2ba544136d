"""The start-up blend of ``wbc`` (biped_contact_sim/control/startup.py): a controller started
away from its reference starts from the measured state and eases into the reference."""

import numpy as np
import pinocchio as pin
import pytest
from ros_logic_helpers import run_steps

from biped_contact_sim.control import make_behavior, make_controller
from biped_contact_sim.control.base import Measurement
from biped_contact_sim.control.startup import decay
from biped_contact_sim.errors import DivergenceError
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.ros import scheduling
from biped_contact_sim.session.builder import build
from biped_contact_sim.session.config import SimConfig


def test_decay_is_the_minimum_jerk_profile():
    """e(τ) = 1 − (10τ³ − 15τ⁴ + 6τ⁵): from 1 to 0 with zero velocity and acceleration at both
    ends, monotonic; ė and ë are its derivatives in time (central differences)."""
    T = 0.8
    assert decay(0.0, T) == pytest.approx((1.0, 0.0, 0.0), abs=1e-12)
    assert decay(1.0, T) == pytest.approx((0.0, 0.0, 0.0), abs=1e-12)
    taus = np.linspace(0.0, 1.0, 201)
    e = np.array([decay(x, T)[0] for x in taus])
    assert np.all(np.diff(e) < 0.0)
    h = 1e-5
    for x in (0.1, 0.37, 0.5, 0.81):
        _, de, dde = decay(x, T)
        assert de == pytest.approx((decay(x + h, T)[0] - decay(x - h, T)[0]) / (2 * h * T),
                                   rel=1e-6, abs=1e-6)
        assert dde == pytest.approx((decay(x + h, T)[1] - decay(x - h, T)[1]) / (2 * h * T),
                                    rel=1e-5, abs=1e-6)  # ë(½) = 0


@pytest.fixture(scope="module")
def biped():
    return RobotModel.load("biped3d")


def test_the_first_step_tracks_the_measured_state_and_the_reference_after_the_blend(biped):
    """The robot 3 cm behind where the stand's reference has it (the base moved back, the
    joints the reference's): the first step's CoM target is the measured CoM (no error to
    correct at once); after ``startup_time`` it is the reference's again. With
    ``startup_time`` 0 the first step already targets the reference."""
    q0 = biped.standing_configuration()
    stand = make_behavior("stand", biped, q0)
    q = q0.copy()
    q[0] -= 0.03
    com_ref = stand.reference(0.0).com
    com = pin.centerOfMass(biped.model, biped.create_data(), q).copy()
    assert np.linalg.norm(com - com_ref) > 0.02
    v = np.zeros(biped.nv)
    ctrl = make_controller("wbc", biped, stand, 1e-3, startup_time=0.5)
    first = ctrl.compute(Measurement(0.0, q, v, {}))
    np.testing.assert_allclose(first.info["com_ref"], com, atol=1e-12)
    assert first.info["com_error"] == pytest.approx(0.0, abs=1e-12)
    later = ctrl.compute(Measurement(0.5, q, v, {}))
    np.testing.assert_allclose(later.info["com_ref"], com_ref, atol=1e-12)
    at_once = make_controller("wbc", biped, stand, 1e-3, startup_time=0.0)
    np.testing.assert_allclose(at_once.compute(Measurement(0.0, q, v, {})).info["com_ref"],
                               com_ref, atol=1e-12)


@pytest.mark.parametrize("startup_time", [1.0, 0.0])
def test_a_new_wbc_takes_over_a_biped_leaning_after_a_soft_joint_hold(startup_time):
    """A ``wbc`` stand for 0.5 s, then a driver's joint hold at 300 N·m/rad for 1 s (the biped
    settles leaning back more than 4°, its CoM ~4 cm behind the reference), then a new ``wbc``.
    With the blend (1 s) it brings the robot back upright (within 0.5°, pelvis within 1.5 cm of
    its height, the waist within its joint limits) and holds it for 3 s; taking the reference at
    once (``startup_time`` 0), the waist pitches back past its limit and the robot falls."""
    config = SimConfig.from_sets("stand", "penalty_fl", "wbc")
    built = build(config)
    sim, robot = built.sim, built.robot

    def pitch():
        return pin.rpy.matrixToRpy(pin.Quaternion(sim.q[3:7]).toRotationMatrix())[1]

    run_steps(sim, built.control, 500)
    hold = scheduling.SafeCommand(robot, "hold", 300.0, 30.0, 5.0, 1e-3)
    hold.start(sim.q)
    run_steps(sim, lambda t, q, v: hold.torque(q, v), 1000, closed=False)
    assert abs(pitch()) > np.radians(4.0)
    fresh = build(SimConfig.from_sets("stand", "penalty_fl", "wbc", sets={
        "controller.startup_time": startup_time})).control
    waist = robot.model.joints[robot.model.getJointId("waist_pitch")].idx_q
    lo, hi = robot.model.lowerPositionLimit[waist], robot.model.upperPositionLimit[waist]
    if startup_time == 0.0:
        with pytest.raises(DivergenceError):
            run_steps(sim, fresh, 3000)
        return
    worst = 0.0
    for _ in range(30):
        run_steps(sim, fresh, 100)
        assert lo <= sim.q[waist] <= hi
        worst = max(worst, abs(sim.q[2] - built.q0[2]))
    assert abs(pitch()) < np.radians(0.5)
    assert worst < 0.015
