"""Whole-body controller with internal forces (Sentis et al.), standing and sway behaviours.

Algebraic checks against an independent rigid-contact KKT solve (the paper's eqs. 19–20 and
43), then closed loop on the simulator with penalty_fl (and gauss_seidel when it exists):
stand, the Fig. 8 sway experiment, internal forces leaving the net wrench unchanged, a push.
"""

import numpy as np
import pinocchio as pin
import pytest

from biped_contact_sim.contact import CONTACT_MODELS, make_contact_model
from biped_contact_sim.control import (
    Behavior,
    FootTarget,
    Measurement,
    Reference,
    make_behavior,
    make_controller,
)
from biped_contact_sim.control.grasp import ContactAnchor, grasp_model, sole_wrench_at
from biped_contact_sim.errors import ConfigError
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.sim.observables import foot_wrenches
from biped_contact_sim.sim.simulator import ExternalForce, SimSettings, Simulator
from biped_contact_sim.sim.terrain import PlaneTerrain

DT = 1e-3
LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


@pytest.fixture(scope="module")
def robot():
    return RobotModel.load("biped3d")


def _sim(robot, contact="penalty_fl"):
    kw = dict(kp=500.0, kv=250.0, epsilon=1e-6) if contact == "penalty_fl" else {}
    sim = Simulator(robot, make_contact_model(contact, **kw), PlaneTerrain(mu=0.8),
                    SimSettings(dt=DT))
    sim.reset(robot.standing_configuration())
    return sim


def _run(robot, behavior, seconds, contact="penalty_fl", push=None, **settings):
    """Closed loop; returns per-step (t, info, step, wrenches). push = (F world, t0, t1)."""
    sim = _sim(robot, contact)
    data = robot.create_data()
    ctrl = make_controller("wbc", robot, behavior, DT, **settings)
    if push is not None:  # external force on the pelvis
        force, t0, t1 = push
        sim.add_external_force(ExternalForce("pelvis", tuple(force), t0, t1))
    log, wrenches = [], {}
    for _ in range(round(seconds / DT)):
        out = ctrl.compute(Measurement(sim.t, sim.q, sim.v, wrenches))
        q_prev = sim.q
        step = sim.step(out.tau)
        wrenches = foot_wrenches(robot, data, q_prev, step)
        log.append((step.t, out.info, step, wrenches))
    return log, sim


def _kkt_acceleration(robot, q, v, tau, stance):
    """Rigid flat-foot contact dynamics (eqs. 19, 64), solved independently of the controller:
    M v̇ − J_sᵀ f = Sᵀτ − h, J_s v̇ = −J̇_s v, with J_s the 6-D sole-frame Jacobians."""
    model, data = robot.model, robot.create_data()
    M = pin.crba(model, data, q)
    M = np.triu(M) + np.triu(M, 1).T
    h = pin.nonLinearEffects(model, data, q, v)
    pin.computeJointJacobians(model, data, q)
    pin.forwardKinematics(model, data, q, v, np.zeros(model.nv))
    pin.updateFramePlacements(model, data)
    bodies = [b for b in robot.contact_bodies if b.name in stance]
    J = np.vstack([pin.getFrameJacobian(model, data, b.frame_id, LWA) for b in bodies])
    drift = np.concatenate([np.concatenate([
        pin.getFrameClassicalAcceleration(model, data, b.frame_id, LWA).linear,
        pin.getFrameClassicalAcceleration(model, data, b.frame_id, LWA).angular])
        for b in bodies])
    k = J.shape[0]
    K = np.block([[M, -J.T], [J, np.zeros((k, k))]])
    rhs = np.concatenate([robot.S.T @ tau - h, -drift])
    sol = np.linalg.solve(K, rhs)
    return sol[:model.nv], sol[model.nv:], data  # v̇, f (sole frames' origins, world axes)


class _Fixed(Behavior):
    """A behaviour returning one fixed Reference."""

    name = "fixed"

    def __init__(self, ref):
        self.ref = ref

    def reference(self, t):
        return self.ref


class _Internal(Behavior):
    """Another behaviour with its internal-force reference replaced."""

    name = "internal"

    def __init__(self, inner, internal):
        self.inner, self.internal = inner, np.asarray(internal, float)

    def reference(self, t):
        ref = self.inner.reference(t)
        ref.internal = self.internal.copy()
        return ref


# ---------------------------------------------------------------- algebraic properties
def test_double_support_tasks_and_internal_forces_exact(robot):
    """With rigid contacts the commanded CoM acceleration and F_int = F_int,ref (eq. 43) hold
    exactly; the CoPs sit at the commanded points (zero tangential moments). Without the
    load shares: the paper's law, whose reference is F_int,ref alone."""
    q0 = robot.standing_configuration()
    stand = make_behavior("stand", robot, q0)
    f_ref = np.array([15.0, 0, 0, 0, 0.3, -0.2])
    ctrl = make_controller("wbc", robot, _Internal(stand, f_ref), DT, ki_int=0.0,
                           load_share=False)
    rng = np.random.default_rng(1)
    # A motion with both feet at rest (v in the null space of the support Jacobian).
    data = robot.create_data()
    J_s = np.vstack([pin.computeFrameJacobian(robot.model, data, q0, b.frame_id, LWA)
                     for b in robot.contact_bodies])
    v = (np.eye(robot.nv) - np.linalg.pinv(J_s) @ J_s) @ rng.normal(size=robot.nv) * 0.05
    out = ctrl.compute(Measurement(0.0, q0, v, {}))
    a, f, data = _kkt_acceleration(robot, q0, v, out.tau, stand.stance)
    # CoM acceleration: J_com v̇ + J̇_com v against the PD law of eq. 59.
    pin.centerOfMass(robot.model, data, q0, v, a)
    s = ctrl.settings
    ref = stand.reference(0.0)
    a_des = s.kd_com * (ref.com_vel - data.vcom[0]) + s.kp_com * (ref.com - data.com[0])
    np.testing.assert_allclose(data.acom[0], a_des, atol=1e-8)
    # Internal forces of the KKT wrenches, moved to the commanded CoPs.
    anchors, rows = [], []
    for k, body in enumerate(robot.contact_bodies):
        oMs = data.oMf[body.frame_id]
        P = oMs.translation + oMs.rotation @ np.array([0.02, 0.0, 0.0])
        wrench_sole = np.concatenate([oMs.rotation.T @ f[6 * k:6 * k + 3],
                                      oMs.rotation.T @ f[6 * k + 3:6 * k + 6]])
        rows.append(sole_wrench_at(wrench_sole, oMs.rotation, oMs.translation, P))
        anchors.append(ContactAnchor(P, oMs.rotation, name=body.name))
    g = grasp_model(anchors, data.com[0], biped="eq82")
    np.testing.assert_allclose(g.internal(np.concatenate(rows)), f_ref, atol=1e-7)
    np.testing.assert_allclose(out.info["f_int_pred"], f_ref, atol=1e-7)


def _zmp_reference(robot, q0, along: float, ahead: float, internal=None) -> Reference:
    """Both feet in support at q0, the CoM where it is, and the CoM acceleration whose
    cart-table ZMP p = c − h c̈ / g lies ``along`` of the way from the left to the right sole
    centre and ``ahead`` [m] in front of that line (horizontal, perpendicular to it)."""
    data = robot.create_data()
    pin.framesForwardKinematics(robot.model, data, q0)
    c1, c2 = (data.oMf[b.frame_id].act(0.5 * (b.offsets.min(axis=0) + b.offsets.max(axis=0)))
              for b in robot.contact_bodies)
    com = pin.centerOfMass(robot.model, data, q0).copy()
    height = com[2] - 0.5 * (c1[2] + c2[2])
    line = (c2 - c1) / np.linalg.norm(c2 - c1)
    zmp = c1 + along * (c2 - c1) + ahead * np.cross([0.0, 0.0, 1.0], line)
    acc = np.zeros(3)
    acc[:2] = (com[:2] - zmp[:2]) * 9.81 / height
    return Reference(stance=tuple(b.name for b in robot.contact_bodies), com=com,
                     com_vel=np.zeros(3), com_acc=acc, q_joints=q0[robot.q_idx],
                     internal=internal)


@pytest.mark.parametrize("tension", [0.0, 10.0])
def test_load_share_tension_splits_force_along_the_feet(robot, tension):
    """Reference cart-table ZMP ¾ of the way from the left to the right sole centre: the
    predicted wrenches give each foot its load share (α = ¼, ¾) of the net force along the
    foot line e_12, and a commanded tension adds (f_1 − f_2)·e_12 = t_ref on top (step 4)."""
    q0 = robot.standing_configuration()
    ref = _zmp_reference(robot, q0, 0.75, 0.0, internal=np.array([tension, 0, 0, 0, 0, 0]))
    out = make_controller("wbc", robot, _Fixed(ref), DT).compute(
        Measurement(0.0, q0, np.zeros(robot.nv), {}))
    assert out.info["load_share"] == pytest.approx([0.25, 0.75], abs=1e-9)
    assert out.info["saturated"] == 0
    f = out.info["wrenches_pred"]
    f1, f2 = f[:3], f[6:9]
    P1, P2 = out.info["cop_refs"]
    e12 = (P2 - P1) / np.linalg.norm(P2 - P1)
    F = (f1 + f2) @ e12
    assert abs(F) > 10.0  # the lateral acceleration needs a real force along the feet
    assert (f1 - f2) @ e12 == pytest.approx((0.25 - 0.75) * F + tension, abs=1e-6)
    assert f1 @ e12 == pytest.approx(0.25 * F + 0.5 * tension, abs=1e-6)


@pytest.mark.parametrize("load_share", [True, False])
def test_load_share_moment_splits_the_moment_about_the_foot_line(robot, load_share):
    """Reference ZMP ¾ of the way from the left to the right sole centre and 3 cm in front of
    that line: the ground must carry a moment M about the line P_1P_2 between the commanded
    CoPs. Eq. 82 holds both CoP coordinates of the first foot, so the second carries all of M;
    with the load shares each foot k carries α_k M (e_12·m_k, moments about the anchors, from
    the rigid-contact dynamics solved independently of the controller)."""
    q0 = robot.standing_configuration()
    ref = _zmp_reference(robot, q0, 0.75, 0.03)
    ctrl = make_controller("wbc", robot, _Fixed(ref), DT, load_share=load_share)
    out = ctrl.compute(Measurement(0.0, q0, np.zeros(robot.nv), {}))
    assert out.info["saturated"] == 0
    _, f, data = _kkt_acceleration(robot, q0, np.zeros(robot.nv), out.tau, ref.stance)
    P = out.info["cop_refs"]
    e12 = (P[1] - P[0]) / np.linalg.norm(P[1] - P[0])
    m = []
    for k, body in enumerate(robot.contact_bodies):  # about the anchor: m_P = m_o − (P − o) × f
        origin = data.oMf[body.frame_id].translation
        m.append(f[6 * k + 3:6 * k + 6] - np.cross(P[k] - origin, f[6 * k:6 * k + 3]))
    M = e12 @ (m[0] + m[1])
    assert abs(M) > 5.0  # the ZMP 3 cm off the line needs a real moment about it
    alpha = (0.25, 0.75) if load_share else (0.0, 1.0)
    if load_share:
        assert out.info["load_share"] == pytest.approx([0.25, 0.75], abs=1e-9)
    assert e12 @ m[0] == pytest.approx(alpha[0] * M, abs=1e-6)
    assert e12 @ m[1] == pytest.approx(alpha[1] * M, abs=1e-6)


def test_no_load_shares_without_a_com_reference_on_either_path(robot):
    """A double-support reference without a CoM has no load shares (``reference_load_shares``
    needs the CoM): neither the tension nor the moment is shared, and the numpy stages give the
    compiled step's torques (the numpy path indexed the missing shares once)."""
    q0 = robot.standing_configuration()
    ref = Reference(stance=tuple(b.name for b in robot.contact_bodies), com=None,
                    q_joints=q0[robot.q_idx])
    outs = []
    for compiled in (True, False):
        ctrl = make_controller("wbc", robot, _Fixed(ref), DT)
        ctrl.compiled = ctrl.internal.compiled = compiled
        outs.append(ctrl.compute(Measurement(0.0, q0, np.zeros(robot.nv), {})))
    assert outs[0].info["load_share"] is None and outs[1].info["load_share"] is None
    np.testing.assert_allclose(outs[1].tau, outs[0].tau, rtol=0.0,
                               atol=1e-10 * np.abs(outs[0].tau).max())


def test_single_support_swing_foot_task_exact(robot):
    """Single support: CoM and swing-foot accelerations are those commanded (eqs. 28–31)."""
    q0 = robot.standing_configuration()
    data = robot.create_data()
    com = pin.centerOfMass(robot.model, data, q0).copy()
    pin.framesForwardKinematics(robot.model, data, q0)
    right = robot.contact_bodies[1]
    p_r = data.oMf[right.frame_id].translation.copy()
    target = FootTarget(p_r + np.array([0.0, 0.0, 0.02]), np.zeros(3), np.array([0.0, 0.0, 0.5]))
    com_ref = com + np.array([0.0, 0.05, 0.0])
    ref = Reference(stance=("left_foot",), com=com_ref, com_vel=np.zeros(3),
                    com_acc=np.zeros(3), feet={"right_foot": target},
                    q_joints=q0[robot.q_idx])
    # the 5 cm CoM error acts at once (no start-up blend): eq. 59's acceleration exactly
    ctrl = make_controller("wbc", robot, _Fixed(ref), DT, startup_time=0.0)
    out = ctrl.compute(Measurement(0.0, q0, np.zeros(robot.nv), {}))
    assert out.info["saturated"] == 0
    a, _, data = _kkt_acceleration(robot, q0, np.zeros(robot.nv), out.tau, ("left_foot",))
    pin.centerOfMass(robot.model, data, q0, np.zeros(robot.nv), a)
    s = ctrl.settings
    np.testing.assert_allclose(data.acom[0], s.kp_com * (com_ref - com), atol=1e-8)
    pin.forwardKinematics(robot.model, data, q0, np.zeros(robot.nv), a)
    acc = pin.getFrameClassicalAcceleration(robot.model, data, right.frame_id, LWA)
    np.testing.assert_allclose(acc.linear, target.a + s.kp_foot * (target.p - p_r), atol=1e-8)
    np.testing.assert_allclose(acc.angular, 0.0, atol=1e-8)


def test_internal_forces_leave_net_wrench_unchanged(robot):
    """Same state, two internal-force references: the resultant contact wrench is unchanged
    (L* torques cause no motion, eqs. 32–34) and the internal forces differ by the command —
    predicted (eq. 20) and measured after one simulated step."""
    q0 = robot.standing_configuration()
    sway = make_behavior("sway", robot, q0)
    log, sim = _run(robot, sway, 0.3)
    q, v, t = sim.q.copy(), sim.v.copy(), sim.t
    refs = [np.zeros(6), np.array([25.0, 0, 0, 0, 1.0, -1.0])]
    predicted, measured = [], []
    for f_ref in refs:
        ctrl = make_controller("wbc", robot, _Internal(sway, f_ref), DT, ki_int=0.0)
        out = ctrl.compute(Measurement(t, q, v, log[-1][3]))
        predicted.append((out.info["f_com_pred"], out.info["f_int_pred"]))
        sim.reset(q, v, t)
        step = sim.step(out.tau)
        w = foot_wrenches(robot, robot.create_data(), q, step)
        data = robot.create_data()
        pin.framesForwardKinematics(robot.model, data, q)
        anchors, rows = [], []
        for body in robot.contact_bodies:
            oMs = data.oMf[body.frame_id]
            P = oMs.translation + oMs.rotation @ np.array([0.02, 0.0, 0.0])
            rows.append(sole_wrench_at(w[body.name], oMs.rotation, oMs.translation, P))
            anchors.append(ContactAnchor(P, oMs.rotation, name=body.name))
        g = grasp_model(anchors, pin.centerOfMass(robot.model, data, q), biped="eq82")
        measured.append((g.resultant(np.concatenate(rows)), g.internal(np.concatenate(rows))))
    d_cmd = refs[1] - refs[0]
    np.testing.assert_allclose(predicted[1][0], predicted[0][0], atol=1e-6)
    np.testing.assert_allclose(predicted[1][1] - predicted[0][1], d_cmd, atol=1e-6)
    np.testing.assert_allclose(measured[1][0], measured[0][0], atol=0.05)  # N, N·m
    np.testing.assert_allclose(measured[1][1] - measured[0][1], d_cmd, atol=0.05)


def test_integral_anti_windup(robot):
    """The internal-force integral is clamped and reset when a stance foot loses contact."""
    q0 = robot.standing_configuration()
    ctrl = make_controller("wbc", robot, make_behavior("stand", robot, q0), DT,
                           ki_int=100.0, int_limit=3.0)
    w = {"left_foot": np.array([0.0, -30.0, 196, 0, 0, 0]),
         "right_foot": np.array([0.0, 30.0, 196, 0, 0, 0])}  # tension 60 N, reference 0
    for k in range(50):
        out = ctrl.compute(Measurement(k * DT, q0, np.zeros(robot.nv), w))
    assert out.info["f_int"][0] == pytest.approx(60.0)
    assert out.info["int_integral"][0] == pytest.approx(-3.0)  # clamped at int_limit
    lost = {**w, "right_foot": np.array([0.0, 0.0, 1.0, 0, 0, 0])}  # below min_normal_force
    out = ctrl.compute(Measurement(0.05, q0, np.zeros(robot.nv), lost))
    assert np.all(out.info["int_integral"] == 0.0)
    assert np.all(np.isnan(out.info["f_int"]))


def test_settings_and_params_validated(robot):
    q0 = robot.standing_configuration()
    stand = make_behavior("stand", robot, q0)
    with pytest.raises(ConfigError, match=r"kd_com = 2500\.0 must be < 2/dt = 2000"):
        make_controller("wbc", robot, stand, DT, kd_com=2500.0)
    with pytest.raises(ConfigError, match="kp_com"):
        make_controller("wbc", robot, stand, DT, kp_com=-1.0)
    with pytest.raises(ConfigError, match="ki_int"):
        make_controller("wbc", robot, stand, DT, ki_int=5000.0)
    with pytest.raises(ConfigError, match="Unknown setting"):
        make_controller("wbc", robot, stand, DT, kp_cmo=1.0)
    with pytest.raises(ConfigError, match="Accepted: amplitude, com_height, cop_x"):
        make_behavior("sway", robot, q0, amplitud=0.01)
    with pytest.raises(ConfigError, match="period"):
        make_behavior("sway", robot, q0, period=0.0)
    with pytest.raises(ConfigError, match="cop_x"):
        make_behavior("stand", robot, q0, cop_x=0.5)
    assert make_behavior("sway", robot, q0).duration == 10.0


# ---------------------------------------------------------------- closed loop
def _vertex_drift(robot, sim):
    q0 = robot.standing_configuration()
    p0 = robot.point_positions(robot.create_data(), q0)
    p = robot.point_positions(robot.create_data(), sim.q)
    return np.abs(p - p0)[:, :2].max()


def _cop_errors(info):
    return np.abs(info["cops"][:, :2] - info["cop_refs"][:, :2]).max()


@pytest.mark.parametrize("contact", ["penalty_fl", "gauss_seidel"])
def test_stand(robot, contact):
    if contact not in CONTACT_MODELS:
        pytest.skip(f"{contact} not available")
    q0 = robot.standing_configuration()
    log, sim = _run(robot, make_behavior("stand", robot, q0), 1.5, contact)
    late = [info for t, info, *_ in log if t > 1.2]
    assert max(i["com_error"] for i in late) < 1e-3
    assert max(_cop_errors(i) for i in late) < 5e-3
    assert _vertex_drift(robot, sim) < 1e-4  # feet do not slip
    assert np.abs(sim.v).max() < 1e-2
    assert min(step.f_contact[:, 2].min() for *_, step, _ in log[100:]) > 0


@pytest.fixture(scope="module")
def sway_run(robot):
    q0 = robot.standing_configuration()
    sway = make_behavior("sway", robot, q0)
    log, sim = _run(robot, sway, 6.0)
    return sway, log, sim


def test_sway_tracks_tension_cops_com(robot, sway_run):
    """Fig. 8 on our biped: the tension (f_1 − f_2)·e_12 measured from the foot wrenches tracks
    20 sin(πt) N; CoPs stay at the sole centres; the CoM follows its vertical sinusoid."""
    sway, log, sim = sway_run
    tension_err, cop_err, com_err = [], [], []
    data = robot.create_data()
    for (_t, info, step, w), (t_prev, *_) in zip(log[1:], log[:-1], strict=True):
        # Wrenches of the step [t_prev, t]: compare with the reference applied over it.
        pin.framesForwardKinematics(robot.model, data, step.q)
        f = [data.oMf[b.frame_id].rotation @ w[b.name][:3] for b in robot.contact_bodies]
        P = [data.oMf[b.frame_id].translation for b in robot.contact_bodies]
        e12 = (P[1] - P[0]) / np.linalg.norm(P[1] - P[0])
        tension_err.append(abs((f[0] - f[1]) @ e12 - sway.tension(t_prev)))
        cop_err.append(_cop_errors(info))
        com_err.append(info["com_error"])
    assert max(tension_err[50:]) < 2.0  # N (paper: 0.3 N)
    assert max(cop_err[50:]) < 5e-3
    assert max(com_err) < 5e-3
    assert _vertex_drift(robot, sim) < 1e-4
    # Periodic: the posture returns (no drift of the torso from cycle to cycle).
    q_2s, q_6s = log[1999][2].q, log[5999][2].q
    np.testing.assert_allclose(q_6s[robot.q_idx], q_2s[robot.q_idx], atol=0.02)


def test_push_recovery_without_lifting_a_foot(robot):
    """50 N lateral on the pelvis for 0.1 s while standing: all 8 vertices stay loaded, the
    feet stay put and the CoM returns."""
    q0 = robot.standing_configuration()
    log, sim = _run(robot, make_behavior("stand", robot, q0), 3.0,
                    push=(np.array([0.0, 50.0, 0.0]), 1.0, 1.1))
    fn_min = min(step.f_contact[:, 2].min() for *_, step, _ in log[200:])
    assert fn_min > 0
    assert all(step.active.all() for *_, step, _ in log[200:])
    assert _vertex_drift(robot, sim) < 1e-4
    assert max(info["com_error"] for _, info, _, _ in log) < 0.02
    assert log[-1][1]["com_error"] < 1e-3
