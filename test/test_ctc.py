"""Computed-torque control (control/ctc.py) and the planar optimal gait (control/planar_gait.py).

The ctc is checked against pinocchio's independent RNEA and frame kinematics; the gait against
its boundary conditions, the ZMP of the centroidal dynamics (Bravo & Rengifo §4.3, computed
by pinocchio from the planned motion, not from the planner's wrenches) and its cost.
"""

import re

import numpy as np
import pinocchio as pin
import pytest

from biped_contact_sim.control import Measurement, Reference, make_behavior, make_controller
from biped_contact_sim.control.base import Behavior
from biped_contact_sim.control.planar_gait_plan import PlanarGaitParams, hermite
from biped_contact_sim.errors import ConfigError
from biped_contact_sim.robot import RobotModel

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
ROWS = {"biped3d": [0, 1, 2, 3, 4, 5], "planar_biped": [0, 2, 4]}


class Fixed(Behavior):
    """A behaviour returning one fixed reference."""

    name = "fixed"

    def __init__(self, ref):
        self.ref = ref

    def reference(self, t):
        return self.ref


def random_state(robot, rng):
    q = robot.standing_configuration()
    q[robot.q_idx] += 0.2 * rng.standard_normal(robot.n_joints)
    if robot.config.base == "free_flyer":
        q[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(*(0.1 * rng.standard_normal(3)))).coeffs()
    v = rng.standard_normal(robot.nv)
    return q, v


@pytest.mark.parametrize("name", ["biped3d", "planar_biped"])
@pytest.mark.parametrize("stance", [("left_foot",), ("left_foot", "right_foot")])
def test_ctc_matches_rnea_with_contact_wrench(name, stance):
    """Sᵀτ + J_sᵀλ = rnea(q, v, v̇), J_s v̇ + J̇_s v = 0, and q̈_a = q̈_aᵈ in single support."""
    robot = RobotModel.load(name)
    rng = np.random.default_rng(7)
    q, v = random_state(robot, rng)
    n = robot.n_joints
    ref = Reference(stance=stance, q_joints=q[robot.q_idx] + 0.05 * rng.standard_normal(n),
                    v_joints=rng.standard_normal(n), a_joints=rng.standard_normal(n))
    kp, kd = 400.0, 40.0
    ctrl = make_controller("ctc", robot, Fixed(ref), 1e-3, kp=kp, kd=kd, clamp=False)
    out = ctrl.compute(Measurement(0.0, q, v))
    a_des = ref.a_joints + kd * (ref.v_joints - v[robot.v_idx]) + kp * (ref.q_joints
                                                                        - q[robot.q_idx])
    # The controller's v̇ is not exposed to the test: rebuild it from τ and λ through the
    # dynamics, M v̇ = Sᵀτ + J_sᵀλ − h (pinocchio's crba/nonLinearEffects, independent of RNEA).
    model, data = robot.model, robot.create_data()
    pin.computeJointJacobians(model, data, q)
    pin.updateFramePlacements(model, data)
    gen = robot.S.T @ out.tau
    Js = []
    for body in robot.contact_bodies:
        if body.name in stance:
            J = pin.getFrameJacobian(model, data, body.frame_id, LWA)
            gen = gen + J.T @ out.info["lam"][body.name]
            Js.append(J[ROWS[name]])
    M = pin.crba(model, data, q)
    M = np.triu(M) + np.triu(M, 1).T
    a = np.linalg.solve(M, gen - pin.nonLinearEffects(model, data, q, v))
    # Independent RNEA with that v̇ gives back the generalized forces.
    assert pin.rnea(model, robot.create_data(), q, v, a) == pytest.approx(gen, abs=1e-8)
    # Stance constraint J_s v̇ + J̇_s v = 0 (drift from the classical acceleration, a = 0).
    pin.forwardKinematics(model, data, q, v, np.zeros(model.nv))
    for body, J in zip([b for b in robot.contact_bodies if b.name in stance], Js, strict=True):
        drift = pin.getFrameClassicalAcceleration(model, data, body.frame_id, LWA).vector
        assert J @ a + drift[ROWS[name]] == pytest.approx(0.0, abs=1e-8)
    if len(stance) == 1:  # single support: square system, the joints get exactly q̈_aᵈ
        assert a[robot.v_idx] == pytest.approx(a_des, abs=1e-8)
        assert out.info["constraint_residual"] < 1e-8
    else:  # closed chain: q̈_a is the constraint-consistent one closest to q̈_aᵈ
        assert np.linalg.norm(a[robot.v_idx] - a_des) == pytest.approx(
            out.info["constraint_residual"], rel=1e-9, abs=1e-9)
    assert out.info["tracking_error"] == pytest.approx(
        np.sqrt(np.mean((ref.q_joints - q[robot.q_idx]) ** 2)))


def test_ctc_static_double_support_splits_weight():
    """At rest on both feet with a consistent reference: the wrenches carry m g, symmetric
    feet carry half each (minimum-norm internal forces), τ within limits."""
    robot = RobotModel.load("biped3d")
    q0 = robot.standing_configuration()
    n = robot.n_joints
    ref = Reference(stance=("left_foot", "right_foot"), q_joints=q0[robot.q_idx],
                    v_joints=np.zeros(n), a_joints=np.zeros(n))
    out = make_controller("ctc", robot, Fixed(ref), 1e-3).compute(
        Measurement(0.0, q0, np.zeros(robot.nv)))
    lam = out.info["lam"]
    mg = robot.mass * 9.81
    assert lam["left_foot"][2] + lam["right_foot"][2] == pytest.approx(mg, rel=1e-9)
    assert lam["left_foot"][2] == pytest.approx(mg / 2, rel=1e-6)
    assert np.all(np.abs(out.tau) <= robot.effort_limit)


def test_ctc_settings_validated():
    robot = RobotModel.load("planar_biped")
    beh = Fixed(Reference(stance=()))
    with pytest.raises(ConfigError, match=re.escape("ctc.kp = -1.0 must be finite and >= 0")):
        make_controller("ctc", robot, beh, 1e-3, kp=-1.0)
    with pytest.raises(ConfigError, match="Unknown setting"):
        make_controller("ctc", robot, beh, 1e-3, gain=1.0)
    with pytest.raises(ConfigError, match="Unknown stance foot 'toe'"):
        make_controller("ctc", robot, Fixed(Reference(stance=("toe",), q_joints=np.zeros(6))),
                        1e-3).compute(Measurement(0.0, robot.standing_configuration(),
                                                  np.zeros(robot.nv)))


# ---------------------------------------------------------------------- planar gait
@pytest.fixture(scope="module")
def planar():
    robot = RobotModel.load("planar_biped")
    return robot, make_behavior("planar_walk", robot, robot.standing_configuration())


def test_hermite_boundary_values():
    q0, v0, q1, v1, T = 0.3, -1.0, 1.2, 0.5, 0.7
    for t, (q, v) in ((0.0, (q0, v0)), (T, (q1, v1))):
        p, dp, _ = hermite(t, T, q0, v0, q1, v1)
        assert (p, dp) == pytest.approx((q, v))
    h = 1e-6
    p_m, _, _ = hermite(0.3 - h, T, q0, v0, q1, v1)
    p_p, _, _ = hermite(0.3 + h, T, q0, v0, q1, v1)
    assert hermite(0.3, T, q0, v0, q1, v1)[1] == pytest.approx((p_p - p_m) / (2 * h), rel=1e-7)


def _soles_fixed(robot, q, v, a, footholds, data):
    """Both soles flat on their footholds (z = 0), at rest, not accelerating (pinocchio)."""
    pin.forwardKinematics(robot.model, data, q, v, a)
    pin.updateFramePlacements(robot.model, data)
    for body in robot.contact_bodies:
        oMf = data.oMf[body.frame_id]
        assert oMf.translation[[0, 2]] == pytest.approx([footholds[body.name], 0.0], abs=1e-9)
        assert abs(pin.log3(oMf.rotation)[1]) < 1e-9
        vel = pin.getFrameVelocity(robot.model, data, body.frame_id, LWA).vector
        acc = pin.getFrameClassicalAcceleration(robot.model, data, body.frame_id, LWA).vector
        assert np.abs(vel).max() < 1e-8 and np.abs(acc).max() < 1e-6


def test_planar_gait_boundary_conditions(planar):
    """Impact-free exchange: at every step end both soles are flat, on their footholds and at
    rest; each double support keeps both soles fixed while the load share moves from the
    lifting to the landing foot, and joins its neighbouring steps continuously in q and v;
    at least five steps."""
    robot, beh = planar
    p = beh.params
    assert p.n_steps >= 5 and len(beh.phases) == p.n_steps
    data = robot.create_data()
    for k, ph in enumerate(beh.phases):
        for t in (0.0, ph.T):
            q, v, _ = beh.gm.phase_state(ph, t)
            pin.forwardKinematics(robot.model, data, q, v)
            pin.updateFramePlacements(robot.model, data)
            for body in robot.contact_bodies:
                oMf = data.oMf[body.frame_id]
                assert oMf.translation[2] == pytest.approx(0.0, abs=1e-9)
                assert abs(pin.log3(oMf.rotation)[1]) < 1e-9  # flat
                vel = pin.getFrameVelocity(robot.model, data, body.frame_id, LWA)
                assert np.abs(vel.vector).max() < 1e-8  # at rest: no impact
        # Swing foot lands step_length ahead (feet together after the last step).
        q, _, _ = beh.gm.phase_state(ph, ph.T)
        pin.framesForwardKinematics(robot.model, data, q)
        swing = next(b for b in robot.contact_bodies if b.name != ph.stance[0])
        assert data.oMf[swing.frame_id].translation[0] == pytest.approx(beh.footsteps[k + 1])
        if k + 1 < len(beh.phases):  # double support, continuity across it
            ds, nxt = beh.doubles[k], beh.phases[k + 1]
            assert ds.t0 == pytest.approx(ph.t0 + ph.T)
            assert nxt.t0 == pytest.approx(ds.t0 + p.ds_time)
            assert (ds.lifting, ds.landing) == (ph.stance[0], nxt.stance[0])
            assert ds.x == pytest.approx({ph.stance[0]: ph.x, nxt.stance[0]: nxt.x})
            for (q1, v1, _), (q2, v2, _) in (
                    (beh.gm.phase_state(ph, ph.T), beh.gm.double_state(ds, 0.0)),
                    (beh.gm.double_state(ds, ds.T), beh.gm.phase_state(nxt, 0.0))):
                assert q2 == pytest.approx(q1, abs=1e-9)
                assert v2 == pytest.approx(v1, abs=1e-8)
            for t in np.linspace(0.0, ds.T, 5):
                _soles_fixed(robot, *beh.gm.double_state(ds, t), ds.x, data)
                shares = ds.shares(t)
                assert sum(shares.values()) == pytest.approx(1.0)
            assert ds.shares(0.0)[ds.landing] == 0.0 and ds.shares(ds.T)[ds.landing] == 1.0
    assert beh.planned_distance == pytest.approx((p.n_steps - 1) * p.step_length)
    # Stance leg: one cubic; its reference derivative is the reference velocity.
    t, h = p.t_start + 1.5 * p.step_time + 0.0123, 1e-6
    r0, r1, r2 = beh.reference(t - h), beh.reference(t), beh.reference(t + h)
    assert r1.v_joints == pytest.approx((r2.q_joints - r0.q_joints) / (2 * h), abs=1e-6)
    assert r1.a_joints == pytest.approx((r2.v_joints - r0.v_joints) / (2 * h), abs=1e-4)
    # Double support: closed-chain references, also consistent, with the planned shares.
    ds = beh.doubles[1]
    t = ds.t0 + 0.37 * ds.T
    r0, r1, r2 = beh.reference(t - h), beh.reference(t), beh.reference(t + h)
    assert r1.stance == ("left_foot", "right_foot") and r1.load_share == ds.shares(t - ds.t0)
    assert r1.v_joints == pytest.approx((r2.q_joints - r0.q_joints) / (2 * h), abs=1e-6)
    assert r1.a_joints == pytest.approx((r2.v_joints - r0.v_joints) / (2 * h), abs=1e-4)
    # Holds: equal shares, all on the first stance foot when the walk starts, equal again
    # after the final load transfer.
    first = beh.phases[0].stance[0]
    assert beh.reference(0.0).load_share == {"left_foot": 0.5, "right_foot": 0.5}
    assert beh.reference(p.t_start - 1e-9).load_share[first] == pytest.approx(1.0)
    assert beh.reference(beh.duration).load_share == {"left_foot": 0.5, "right_foot": 0.5}


def test_planar_gait_zmp_bound_and_clearance(planar):
    """Centroidal ZMP of the planned motion (pinocchio, Bravo & Rengifo §4.3) within
    [−l_heel, l_toe] of the stance sole; swing sole above the ground between the ends; in
    double support within reach of the planned load shares."""
    robot, beh = planar
    p = beh.params
    model, data = robot.model, robot.create_data()
    g, m = 9.81, robot.mass
    zmps = []
    for ph in beh.phases:
        for sigma in np.linspace(0.0, 1.0, 41):
            q, v, a = beh.gm.phase_state(ph, sigma * ph.T)
            pin.computeCentroidalMomentumTimeVariation(model, data, q, v, a)
            com, ddc, dL = data.com[0], data.dhg.linear / m, data.dhg.angular
            x_zmp = com[0] - com[2] * ddc[0] / (ddc[2] + g) - dL[1] / (m * (ddc[2] + g))
            zmps.append(x_zmp - ph.x)
            if 0.0 < sigma < 1.0:
                pin.framesForwardKinematics(model, data, q)
                swing = next(b for b in robot.contact_bodies if b.name != ph.stance[0])
                heights = [data.oMf[robot.point_frame_ids[i]].translation[2]
                           for i in swing.points]
                assert min(heights) > 0.0
    zmps = np.array(zmps)
    assert zmps.min() >= -p.l_heel and zmps.max() <= p.l_toe
    # The planner's own margin holds too (up to interpolation between its 11 nodes).
    assert zmps.min() >= -p.l_heel + 0.5 * p.zmp_margin
    assert zmps.max() <= p.l_toe - 0.5 * p.zmp_margin
    # Double support: the ZMP is reachable with the planned shares, i.e. within
    # (1 − α)[x_lift − l_heel, x_lift + l_toe] + α[x_land − l_heel, x_land + l_toe].
    for ds in beh.doubles:
        x_lift, x_land = ds.x[ds.lifting], ds.x[ds.landing]
        for sigma in np.linspace(0.0, 1.0, 41):
            q, v, a = beh.gm.double_state(ds, sigma * ds.T)
            pin.computeCentroidalMomentumTimeVariation(model, data, q, v, a)
            com, ddc, dL = data.com[0], data.dhg.linear / m, data.dhg.angular
            x_zmp = com[0] - com[2] * ddc[0] / (ddc[2] + g) - dL[1] / (m * (ddc[2] + g))
            alpha = ds.shares(sigma * ds.T)[ds.landing]
            mid = (1 - alpha) * x_lift + alpha * x_land
            assert mid - p.l_heel + 0.5 * p.zmp_margin <= x_zmp
            assert x_zmp <= mid + p.l_toe - 0.5 * p.zmp_margin


def test_planar_gait_optimisation_lowers_cost(planar):
    """SLSQP from the hand-picked guess: the guess is feasible, the optimum is feasible and
    cheaper (eq. 40), and the stored default solution is that optimum (cost to 0.1 %)."""
    robot, beh = planar
    planner = beh.planner
    guess = planner.initial_guess()
    cost_guess, cons_guess = planner.evaluate(guess)
    assert cons_guess.min() >= 0.0
    stored_cost = beh.cost
    assert stored_cost < 0.5 * cost_guess
    fresh = make_behavior("planar_walk", robot, robot.standing_configuration(), optimize=True)
    assert fresh.result is not None and fresh.result.success
    assert fresh.cost < cost_guess
    assert fresh.cost == pytest.approx(stored_cost, rel=1e-3)
    assert planner.evaluate(fresh.solution)[1].min() > -1e-5


def test_planar_params_validated():
    with pytest.raises(ConfigError, match=re.escape("planar_walk.n_nodes = 10 must be odd")):
        PlanarGaitParams(n_nodes=10)
    with pytest.raises(ConfigError, match=re.escape("planar_walk.n_steps = 2 must be >= 3")):
        PlanarGaitParams(n_steps=2)
    robot = RobotModel.load("planar_biped")
    with pytest.raises(ConfigError, match="Unknown parameter"):
        make_behavior("planar_walk", robot, robot.standing_configuration(), speed=1.0)


def test_compiled_step_equals_numpy_path():
    """``ctc`` with its compiled step (``ctc_kernels.ctc_step``) and a twin on the numpy path
    (pinocchio's RNEA, LAPACK, ``constrained_inverse_dynamics``), fed the same measurements
    along a walk it drives: the same torques, stance wrenches (1e-10 of their size) and load
    shares, in single and double support. The planar biped (a composite base joint, whose
    bias acceleration J̇ v does not hold) keeps the numpy path."""
    from biped_contact_sim.control import Measurement, make_controller
    from biped_contact_sim.session.builder import build
    from biped_contact_sim.session.config import SimConfig

    planar = build(SimConfig.from_sets("planar_walk", "penalty_fl", "ctc",
                                       sets={"contacts": "points"})).control
    assert not planar.controller.compiled
    built = build(SimConfig.from_sets("walk", "penalty_fl", "ctc",
                                      sets={"contacts": "points"}))
    sim, control = built.sim, built.control
    ctrl = control.controller
    s = ctrl.settings
    twin = make_controller("ctc", ctrl.robot, ctrl.behavior, ctrl.dt,
                           **{k: getattr(s, k) for k in s.__dataclass_fields__})
    twin.compiled = False
    assert ctrl.compiled
    stances = set()
    for _ in range(1500):
        meas = Measurement(sim.t, sim.q.copy(), sim.v.copy(), dict(control.wrenches))
        out, ref = ctrl.compute(meas), twin.compute(meas)
        scale = max(1.0, np.abs(ref.tau).max())
        np.testing.assert_allclose(out.tau, ref.tau, rtol=0.0, atol=1e-10 * scale)
        assert out.info["stance"] == ref.info["stance"]
        for name, w in ref.info["lam"].items():
            np.testing.assert_allclose(out.info["lam"][name], w, rtol=0.0,
                                       atol=1e-10 * max(1.0, np.abs(w).max()))
        a, b = out.info["load_share"], ref.info["load_share"]
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=0.0, atol=1e-12)
        stances.add(len(out.info["stance"]))
        control.observe(sim.q, sim.step(out.tau))
    assert stances == {1, 2}
