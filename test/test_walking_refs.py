"""Walking references of the 3-D biped (control/walking.py): footsteps, ZMP preview CoM,
swing splines and IK joint references, checked against analytic properties."""

import re

import numpy as np
import pinocchio as pin
import pytest

from biped_contact_sim.control import make_behavior
from biped_contact_sim.control.walking import WalkBehavior, bump, quintic
from biped_contact_sim.errors import ConfigError
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.sim.observables import hull_2d_reference, in_polygon_reference


@pytest.fixture(scope="module")
def robot():
    return RobotModel.load("biped3d")


@pytest.fixture(scope="module")
def walk(robot):
    return make_behavior("walk", robot, robot.standing_configuration())


def test_footsteps_geometry(walk):
    p = walk.params
    steps = walk.footsteps
    assert len(steps) == 5
    assert [s.swing for s in steps] == ["right_foot", "left_foot"] * 2 + ["right_foot"]
    # Feet stay on their lines y = ±0.1 (the hips of biped3d), aimed touchdown_depth below ground.
    for s in steps:
        assert s.target[1] == pytest.approx(0.1 if s.swing == "left_foot" else -0.1, abs=1e-12)
        assert s.target[2] == pytest.approx(-p.touchdown_depth, abs=1e-12)
        assert s.t_land - s.t_lift == pytest.approx(p.ss_time)
    xs = [s.target[0] for s in steps]
    assert xs == pytest.approx([0.12, 0.24, 0.36, 0.48, 0.48], abs=1e-12)
    assert walk.planned_distance == pytest.approx(4 * 0.12)
    assert walk.duration == pytest.approx(1.5 + 5 * 0.8 + 1.0)


def test_spline_profiles_analytic():
    # s(σ) = 10σ³ − 15σ⁴ + 6σ⁵: s(0)=0, s(1)=1, s', s'' zero at both ends.
    assert quintic(0.0) == pytest.approx((0, 0, 0))
    assert quintic(1.0) == pytest.approx((1, 0, 0))
    assert quintic(0.5)[0] == pytest.approx(0.5)
    assert bump(0.0) == pytest.approx((0, 0, 0))
    assert bump(1.0) == pytest.approx((0, 0, 0), abs=1e-12)
    assert bump(0.5)[0] == pytest.approx(1.0)
    # Derivatives against central differences of the values.
    for f in (quintic, bump):
        for s in (0.2, 0.55, 0.9):
            h = 1e-5
            assert f(s)[1] == pytest.approx((f(s + h)[0] - f(s - h)[0]) / (2 * h), rel=1e-6)
            assert f(s)[2] == pytest.approx((f(s + h)[1] - f(s - h)[1]) / (2 * h), rel=1e-5)


def test_swing_boundary_conditions(walk):
    h = walk.params.swing_height
    for step in walk.footsteps:
        lift = walk.swing_target(step, step.t_lift)
        land = walk.swing_target(step, step.t_land)
        assert lift.p == pytest.approx(step.start, abs=1e-12)
        assert land.p == pytest.approx(step.target, abs=1e-12)
        for target in (lift, land):
            assert np.abs(target.v).max() < 1e-12 and np.abs(target.a).max() < 1e-12
        apex = walk.swing_target(step, 0.5 * (step.t_lift + step.t_land))
        mid = 0.5 * (step.start + step.target)  # the quintic is at 1/2 at mid-swing
        assert apex.p[2] == pytest.approx(mid[2] + h)
        assert apex.p[:2] == pytest.approx(mid[:2])
        # The reference gives the swing target and the stance foot during the step.
        ref = walk.reference(0.5 * (step.t_lift + step.t_land))
        assert ref.stance == (step.stance,) and set(ref.feet) == {step.swing}


def test_touchdown_depth_and_rise_back(walk):
    """The swing sole aims touchdown_depth below the ground at t_land, rises back to z = 0
    during the following double support (quintic; velocity and acceleration the derivatives)
    and every lift-off starts from the ground: both soles at z = 0 whenever a foot lifts."""
    p = walk.params
    d, T = p.touchdown_depth, p.ds_time
    assert d > 0.0
    for step in walk.footsteps:
        assert step.start[2] == pytest.approx(0.0, abs=1e-12)
        assert walk.foot_state(step.swing, step.t_land).p[2] == pytest.approx(-d, abs=1e-15)
        assert walk.foot_state(step.swing, step.t_land + T).p[2] == pytest.approx(0.0, abs=1e-12)
        assert walk.foot_state(step.swing, step.t_land + 0.5 * T).p[2] == pytest.approx(-d / 2)
        for frac in (0.0, 0.3, 0.7):
            t, h = step.t_land + frac * T + 1e-4, 1e-6
            st = walk.foot_state(step.swing, t)
            dp = (walk.foot_state(step.swing, t + h).p - walk.foot_state(step.swing, t - h).p)
            dv = (walk.foot_state(step.swing, t + h).v - walk.foot_state(step.swing, t - h).v)
            assert st.v == pytest.approx(dp / (2 * h), abs=1e-9)
            assert st.a == pytest.approx(dv / (2 * h), abs=1e-6)
        feet = walk.feet_at(step.t_lift)
        assert [pos[2] for pos in feet.values()] == pytest.approx([0.0, 0.0], abs=1e-12)


def test_zmp_preview_in_support_and_tracks(walk):
    """Cart-table ZMP p = c − z_c c̈/g of the planned CoM: inside the planned support polygon
    (stance sole in single support, hull of both in double support) and close to p_ref."""
    zmp = walk.cart_table_zmp()
    ref = walk.zmp_reference(walk.times)
    assert np.abs(zmp - ref).max() < 0.01  # [m]
    assert np.sqrt(np.mean(np.sum((zmp - ref) ** 2, axis=1))) < 2e-3
    for t, p in zip(walk.times, zmp, strict=True):
        poly = hull_2d_reference(walk.support_polygon(t))
        assert in_polygon_reference(p, poly), f"ZMP {p} outside the support at t = {t:.3f}"
    # The reference itself: sole centre (x offset 0.02 of biped3d's soles) in single support.
    step = walk.footsteps[1]
    t_mid = 0.5 * (step.t_lift + step.t_land)
    assert walk.zmp_reference(t_mid) == pytest.approx([0.12 + 0.02, -0.1], abs=1e-12)
    # CoM: constant height, ends above the final feet midpoint, at rest.
    assert np.ptp(walk.com[:, 2]) == 0.0
    assert walk.com[-1, :2] == pytest.approx([0.48 + 0.02, 0.0], abs=2e-3)
    assert np.abs(walk.com_vel[-1]).max() < 5e-3  # settling after the 1 s final hold


def test_ik_reproduces_com_and_feet(robot, walk):
    """Forward kinematics of the IK configurations against the planned CoM and feet."""
    model, data = robot.model, robot.create_data()
    worst_com = worst_foot = worst_rot = 0.0
    for k in range(0, len(walk.times), 7):
        t, q = walk.times[k], walk.q_ref[k]
        com = pin.centerOfMass(model, data, q)
        pin.updateFramePlacements(model, data)
        worst_com = max(worst_com, np.abs(com - walk.com[k]).max())
        for name, p in walk.feet_at(t).items():
            oMf = data.oMf[walk.frames[name]]
            worst_foot = max(worst_foot, np.abs(oMf.translation - p).max())
            worst_rot = max(worst_rot, np.abs(pin.log3(oMf.rotation)).max())
    assert worst_com < 1e-3 and worst_foot < 1e-3 and worst_rot < 1e-3
    # Velocities: the CoM velocity of the IK joint velocities is the planned one.
    k = int(2.9 / walk.params.dt)
    pin.centerOfMass(model, data, walk.q_ref[k], walk.v_ref[k])
    assert data.vcom[0] == pytest.approx(walk.com_vel[k], abs=1e-6)
    # Joint references within the URDF limits.
    qj = walk.q_ref[:, robot.q_idx]
    assert np.all(qj >= robot.q_lower) and np.all(qj <= robot.q_upper)


def test_reference_interpolation_consistent(robot, walk):
    # Between grid points q_joints is the Hermite cubic: its derivative matches v_joints.
    t, h = 2.8123, 1e-6
    r0, r1, r2 = walk.reference(t - h), walk.reference(t), walk.reference(t + h)
    assert r1.v_joints == pytest.approx((r2.q_joints - r0.q_joints) / (2 * h), abs=1e-5)
    assert r1.com_vel == pytest.approx((r2.com - r0.com) / (2 * h), abs=1e-6)
    assert walk.reference(0.0).q_joints == pytest.approx(
        robot.standing_configuration()[robot.q_idx], abs=1e-9)


def test_params_validated(robot):
    q0 = robot.standing_configuration()
    with pytest.raises(ConfigError, match=re.escape("walk.step_length = -0.1 must be")):
        WalkBehavior(robot, q0, step_length=-0.1)
    with pytest.raises(ConfigError, match="Unknown parameter"):
        WalkBehavior(robot, q0, stride=0.1)
    with pytest.raises(ConfigError, match="free-flyer biped"):
        WalkBehavior(RobotModel.load("planar_biped"), RobotModel.load(
            "planar_biped").standing_configuration())
