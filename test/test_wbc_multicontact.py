"""Multi-contact whole-body control on the humanoid (Sentis et al. §III–V), against pinocchio's
dynamics with the contacts held as constraints (the simulator cannot collide hands yet).

* three contacts (feet and a hand on a table): the commanded CoM acceleration and all 12
  internal forces F_int = F_int,ref (eq. 43) hold exactly under rigid contacts (an independent
  KKT solve of M v̇ − J_cᵀ f = Sᵀτ − h, J_c v̇ = −J̇_c v); internal-force commands leave the
  net contact wrench and the accelerations unchanged;
* the unified force/position task (§V-A): a hand sliding on a frictionless vertical panel
  presses with the commanded normal force while it tracks its tangential motion;
* contact transitions: a hand lowered onto a table joins the support when its measured force
  passes the threshold, is unloaded before it leaves, and the torques stay continuous.

The closed loops integrate the rigid-contact dynamics at the velocity level (semi-implicit
Euler with bilateral constraints, J_c v⁺ = 0 through the KKT system); the wrenches the
controller reads are the constraint impulses divided by dt, in the body frames.
"""

import numpy as np
import pinocchio as pin
import pytest

from biped_contact_sim.control import (
    Behavior,
    FootTarget,
    Measurement,
    Reference,
    make_behavior,
    make_controller,
)
from biped_contact_sim.control.grasp import ContactAnchor, grasp_model
from biped_contact_sim.errors import ConfigError
from biped_contact_sim.robot import RobotModel

DT = 1e-3
LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
FEET = ("left_foot", "right_foot")


@pytest.fixture(scope="module")
def robot():
    return RobotModel.load("humanoid")


def _arm_forward(robot, q, side, pitch=-0.9, elbow=-0.6):
    """q with one arm reaching forward, palm level (shoulder + elbow + wrist pitches = 0)."""
    q = q.copy()
    for name, value in ((f"{side}_shoulder_pitch", pitch), (f"{side}_elbow", elbow),
                        (f"{side}_wrist_pitch", -pitch - elbow), (f"{side}_shoulder_roll", 0.0)):
        q[robot.q_idx[robot.actuated_joint_names.index(name)]] = value
    return q


class _Fixed(Behavior):
    name = "fixed"

    def __init__(self, ref):
        self.ref = ref

    def reference(self, t):
        return self.ref


class _Schedule(Behavior):
    """References from a function of time."""

    name = "schedule"

    def __init__(self, fn):
        self.fn = fn

    def reference(self, t):
        return self.fn(t)


def _constraint_rows(robot, data, q, v, constraints):
    """Stacked constraint Jacobian and drift J̇ v of {body: None (6-D) | normal (1-D)}."""
    model = robot.model
    pin.computeJointJacobians(model, data, q)
    pin.forwardKinematics(model, data, q, v, np.zeros(model.nv))
    pin.updateFramePlacements(model, data)
    bodies = {b.name: b for b in robot.contact_bodies}
    J, g = [], []
    for name, normal in constraints.items():
        fid = bodies[name].frame_id
        Jf = pin.getFrameJacobian(model, data, fid, LWA)
        acc = pin.getFrameClassicalAcceleration(model, data, fid, LWA).vector
        if normal is None:
            J.append(Jf)
            g.append(acc)
        else:
            J.append(normal[None] @ Jf[:3])
            g.append(np.array([normal @ acc[:3]]))
    return np.vstack(J), np.concatenate(g)


def _kkt(robot, q, v, tau, constraints):
    """Rigid-contact accelerations and reactions (world, at the body frames): an independent
    solve of M v̇ − J_cᵀ f = Sᵀτ − h, J_c v̇ = −J̇_c v."""
    model, data = robot.model, robot.create_data()
    M = pin.crba(model, data, q)
    M = np.triu(M) + np.triu(M, 1).T
    h = pin.nonLinearEffects(model, data, q, v)
    J, gamma = _constraint_rows(robot, data, q, v, constraints)
    k = len(J)
    K = np.block([[M, -J.T], [J, np.zeros((k, k))]])
    sol = np.linalg.solve(K, np.concatenate([robot.S.T @ tau - h, -gamma]))
    return sol[:model.nv], sol[model.nv:], data


class _Harness:
    """Velocity-level rigid-contact integration (module docstring)."""

    def __init__(self, robot, q, v=None):
        self.robot, self.q = robot, q.copy()
        self.v = np.zeros(robot.nv) if v is None else v.copy()
        self.data = robot.create_data()
        self.constraints: dict = {}
        self.wrenches: dict = {}
        self.t = 0.0

    def step(self, tau):
        robot, model, data = self.robot, self.robot.model, self.data
        M = pin.crba(model, data, self.q)
        M = np.triu(M) + np.triu(M, 1).T
        h = pin.nonLinearEffects(model, data, self.q, self.v)
        rhs = M @ self.v + DT * (robot.S.T @ tau - h)
        self.wrenches = {}
        if self.constraints:
            J, _ = _constraint_rows(robot, data, self.q, self.v, self.constraints)
            k = len(J)
            K = np.block([[M, -J.T], [J, np.zeros((k, k))]])
            sol = np.linalg.solve(K, np.concatenate([rhs, np.zeros(k)]))
            self.v, lam = sol[:model.nv], sol[model.nv:] / DT
            i = 0
            for name, normal in self.constraints.items():
                fid = next(b.frame_id for b in robot.contact_bodies if b.name == name)
                R = data.oMf[fid].rotation
                if normal is None:
                    f, m = lam[i:i + 3], lam[i + 3:i + 6]
                    i += 6
                else:
                    f, m = lam[i] * normal, np.zeros(3)
                    i += 1
                self.wrenches[name] = np.concatenate([R.T @ f, R.T @ m])
        else:
            self.v = np.linalg.solve(M, rhs)
        self.q = pin.integrate(model, self.q, DT * self.v)
        self.t += DT

    def frame(self, name):
        fid = next(b.frame_id for b in self.robot.contact_bodies if b.name == name)
        pin.framesForwardKinematics(self.robot.model, self.data, self.q)
        return self.data.oMf[fid]

    def measurement(self):
        return Measurement(self.t, self.q, self.v, dict(self.wrenches))


def _internal_at_anchors(robot, data, f, stance, com):
    """F_int of KKT wrenches (world, at the body frames) with anchors at the contact centres."""
    anchors, rows = [], []
    bodies = {b.name: b for b in robot.contact_bodies}
    for k, name in enumerate(stance):
        b = bodies[name]
        oMs = data.oMf[b.frame_id]
        P = oMs.translation + oMs.rotation @ (0.5 * (b.offsets.min(0) + b.offsets.max(0)))
        fk, mk = f[6 * k:6 * k + 3], f[6 * k + 3:6 * k + 6]
        rows.append(np.concatenate([fk, mk - np.cross(P - oMs.translation, fk)]))
        anchors.append(ContactAnchor(P, oMs.rotation, name=name))
    g = grasp_model(anchors, com)
    return g, g.internal(np.concatenate(rows))


def _net_wrench(robot, data, f, stance, point):
    """[Σ f_k; Σ (o_k − point) × f_k + m_k] of wrenches at the body frames o_k."""
    bodies = {b.name: b for b in robot.contact_bodies}
    net = np.zeros(6)
    for k, name in enumerate(stance):
        o = data.oMf[bodies[name].frame_id].translation
        net[:3] += f[6 * k:6 * k + 3]
        net[3:] += np.cross(o - point, f[6 * k:6 * k + 3]) + f[6 * k + 3:6 * k + 6]
    return net


# ---------------------------------------------------------------- three contacts, exact
def test_three_contacts_internal_forces_exact(robot):
    """Feet and the left hand held rigidly: CoM acceleration and the 12 internal forces of the
    general virtual linkage (3 tensions, 6 CoP moments, 3 normal moments) are those commanded
    (eq. 43); a second command with other internal forces changes neither the net contact
    wrench nor the accelerations."""
    q0 = _arm_forward(robot, robot.standing_configuration(), "l")
    stance = (*FEET, "left_hand")
    rng = np.random.default_rng(2)
    data = robot.create_data()
    J, _ = _constraint_rows(robot, data, q0, np.zeros(robot.nv), dict.fromkeys(stance))
    v = (np.eye(robot.nv) - np.linalg.pinv(J) @ J) @ rng.normal(size=robot.nv) * 0.05
    com = pin.centerOfMass(robot.model, data, q0).copy()
    outs = []
    for f_ref in (np.zeros(12), rng.normal(size=12) * np.r_[[10.0] * 3, [1.0] * 9]):
        ref = Reference(stance=stance, com=com + np.array([0.01, -0.01, 0.0]), com_vel=np.zeros(3),
                        com_acc=np.zeros(3), q_joints=q0[robot.q_idx], internal=f_ref)
        # the CoM error acts at once (no start-up blend): eq. 59's acceleration exactly
        ctrl = make_controller("wbc", robot, _Fixed(ref), DT, ki_int=0.0, startup_time=0.0)
        out = ctrl.compute(Measurement(0.0, q0, v, {}))
        assert out.info["saturated"] == 0 and out.info["fallbacks"] == 0
        assert len(out.info["f_int_labels"]) == 12
        a, f, kdata = _kkt(robot, q0, v, out.tau, dict.fromkeys(stance))
        pin.centerOfMass(robot.model, kdata, q0, v, a)
        s = ctrl.settings
        a_des = s.kp_com * (ref.com - kdata.com[0]) - s.kd_com * kdata.vcom[0]
        np.testing.assert_allclose(kdata.acom[0], a_des, atol=1e-8)
        g, f_int = _internal_at_anchors(robot, kdata, f, stance, kdata.com[0])
        assert g.labels == out.info["f_int_labels"]
        np.testing.assert_allclose(f_int, f_ref, atol=1e-6)
        outs.append((a, _net_wrench(robot, kdata, f, stance, com)))
    np.testing.assert_allclose(outs[0][0], outs[1][0], atol=1e-8)  # same accelerations
    np.testing.assert_allclose(outs[0][1], outs[1][1], atol=1e-6)  # same net wrench


# ---------------------------------------------------------------- unified force/position task
def test_hand_presses_a_panel_while_sliding(robot):
    """Feet and left hand in support; the right hand on a frictionless vertical panel (normal
    +y, held along its normal only) is commanded 60 N of normal force while it slides 4 cm
    back and forth along the panel: the panel's reaction tracks 60 N, the hand its path."""
    q0 = _arm_forward(robot, robot.standing_configuration(), "l")
    q0[robot.q_idx[robot.actuated_joint_names.index("r_shoulder_roll")]] = -1.5
    sim = _Harness(robot, q0)
    normal = np.array([0.0, 1.0, 0.0])
    sim.constraints = {"left_foot": None, "right_foot": None, "left_hand": None,
                       "right_hand": normal}
    palm0 = sim.frame("right_hand")
    p0, R0 = palm0.translation.copy(), palm0.rotation.copy()
    com0 = pin.centerOfMass(robot.model, sim.data, q0).copy()
    w = 2 * np.pi / 1.5

    def reference(t):
        path = 0.02 * np.array([np.sin(w * t), 0.0, 0.0])
        target = FootTarget(p0 + path, 0.02 * w * np.array([np.cos(w * t), 0.0, 0.0]),
                            -w * w * path, rotation=R0, normal=normal, force=60.0)
        return Reference(stance=(*FEET, "left_hand"), com=com0, com_vel=np.zeros(3),
                         com_acc=np.zeros(3), q_joints=q0[robot.q_idx],
                         feet={"right_hand": target})

    ctrl = make_controller("wbc", robot, _Schedule(reference), DT)
    forces, slide, com_err = [], [], []
    for _ in range(1500):
        out = ctrl.compute(sim.measurement())
        sim.step(out.tau)
        assert out.info["saturated"] == 0
        if sim.t > 0.5:
            forces.append(sim.wrenches["right_hand"][2])  # palm z = panel normal
            ref = reference(sim.t)
            slide.append(np.linalg.norm((sim.frame("right_hand").translation
                                         - ref.feet["right_hand"].p)[[0, 2]]))
            com_err.append(np.linalg.norm(out.info["com"] - com0))
    assert abs(np.mean(forces) - 60.0) < 0.5 and np.max(np.abs(np.subtract(forces, 60))) < 2.0
    assert max(slide) < 3e-3 and max(com_err) < 3e-3


# ---------------------------------------------------------------- contact transitions
TRANSITIONS = dict(add_force=10.0, release_force=5.0, unload_time=0.3, transition_time=0.2)


def _lean_and_release(robot, **settings):
    """Feet support; the left hand is lowered onto a table 2 cm below it (reached at rest at
    0.5 s), asked into support and pressed (its target 3 cm into the table) from 0.5 s, takes
    load while the CoM shifts 2 cm towards it (0.8–1.2 s), then is dropped from the stance at
    1.4 s and lifted 3 cm. Returns per-step (t, τ, stance, left-hand normal force)."""
    q0 = _arm_forward(robot, robot.standing_configuration(), "l")
    sim = _Harness(robot, q0)
    sim.constraints = {"left_foot": None, "right_foot": None}
    palm0 = sim.frame("left_hand")
    p0, R0 = palm0.translation.copy(), palm0.rotation.copy()
    table_z = p0[2] - 0.02
    com0 = pin.centerOfMass(robot.model, sim.data, q0).copy()

    def smooth(x):
        x = min(max(x, 0.0), 1.0)
        return x * x * x * (10 - 15 * x + 6 * x * x)

    def reference(t):
        depth = 0.02 * smooth(t / 0.5) + 0.03 * smooth((t - 0.5) / 0.3)
        if t >= 1.4:
            depth = 0.05 - 0.08 * smooth((t - 1.4) / 0.5)
        stance = (*FEET, "left_hand") if 0.5 <= t < 1.4 else FEET
        com = com0 + np.array([0.0, 0.02 * smooth((t - 0.8) / 0.4), 0.0])
        return Reference(stance=stance, com=com, com_vel=np.zeros(3), com_acc=np.zeros(3),
                         q_joints=q0[robot.q_idx],
                         feet={"left_hand": FootTarget(p0 - [0.0, 0.0, depth], np.zeros(3),
                                                       np.zeros(3), rotation=R0)})

    ctrl = make_controller("wbc", robot, _Schedule(reference), DT, **settings)
    log = []
    for _ in range(2300):
        out = ctrl.compute(sim.measurement())
        hand = "left_hand" in sim.constraints
        if not hand and sim.t < 1.4 and sim.frame("left_hand").translation[2] <= table_z:
            sim.constraints["left_hand"] = None  # touched: plastic contact, held from now on
        elif hand and "left_hand" not in out.info["stance"] and sim.t >= 1.4:
            del sim.constraints["left_hand"]  # released by the controller
        sim.step(out.tau)
        f_n = sim.wrenches.get("left_hand", np.zeros(6))[2]
        log.append((sim.t, out.tau.copy(), out.info["stance"], f_n))
    return log


def test_hand_contact_added_loaded_unloaded_removed_with_continuous_torques(robot):
    """The hand joins the support once its measured normal force passes 10 N (at its landing
    impulse), takes load while the CoM shifts, is unloaded over 0.3 s before leaving (below
    5 N), and the torque change per 1 ms step around either transition stays below 1 N·m —
    the bound of the transitions; with none (added and dropped at once, no ramps) the same
    motion jumps by more than 30 N·m."""
    log = _lean_and_release(robot, **TRANSITIONS)
    stances = [s for _, _, s, _ in log]
    added = next(k for k, s in enumerate(stances) if "left_hand" in s)
    removed = next(k for k in range(added, len(log)) if "left_hand" not in stances[k])
    assert log[added - 1][3] >= 10.0 or log[added][3] >= 10.0
    assert log[removed - 1][3] < 5.0 and log[removed][0] >= 1.4
    assert max(f for _, _, s, f in log if "left_hand" in s) > 30.0  # it carried load
    jumps = np.array([np.abs(log[k][1] - log[k - 1][1]).max() for k in range(1, len(log))])
    near = np.zeros(len(jumps), bool)
    for k in (added, removed):
        near[max(k - 5, 0):k + 5] = True
    assert jumps[near].max() < 1.0
    abrupt = _lean_and_release(robot, add_force=10.0)
    assert max(np.abs(abrupt[k][1] - abrupt[k - 1][1]).max() for k in range(1, len(abrupt))) \
        > 30.0


# ---------------------------------------------------------------- the Fig. 6 sequence
FIG6 = dict(slide_time=2.0)  # one slide period; the default timeline otherwise (a faster one
# saturates the waist and shoulder while the right hand's load moves to the left hand)


def test_multicontact_sequence_of_fig6(robot):
    """``multicontact`` (Sentis et al. Fig. 6, one slide period) with the contacts held
    as constraints — hands on a table (6-D, from the moment a palm reaches the table top over
    it), the right hand on a frictionless panel (normal only): both hands join (four
    contacts), the right one is unloaded and leaves (three contacts), presses 60 N on the
    panel while sliding and the CoM sways vertically; the acceptance figures of the issue,
    rigid-contact version: panel force within 5 N of 60 N while sliding, tensions and normal
    moments within 5 N / 0.5 N·m of zero and CoPs within 10 mm in steady phases, CoM error
    below 5 mm, no torque saturated. With the torso task on (``kp_torso``, nearly dependent
    on the tasks above it once the right hand is on the panel; the damped solve keeps the
    torques continuous: no step above 5 N·m per 1 ms, 1.8 N·m measured, at the panel's touch)."""
    q0 = robot.standing_configuration()
    beh = make_behavior("multicontact", robot, q0, **FIG6)
    ctrl = make_controller("wbc", robot, beh, DT, add_force=10.0, unload_time=0.5,
                           transition_time=0.5, release_force=5.0, add_cop_fraction=1.0,
                           add_hold=0.0, kp_torso=100.0)
    p = beh.params
    sim = _Harness(robot, q0)
    sim.constraints = {"left_foot": None, "right_foot": None}
    panel = np.array([0.0, 1.0, 0.0])
    log = []
    for _ in range(round(beh.duration / DT)):
        out = ctrl.compute(sim.measurement())
        t = sim.t
        for hand in ("left_hand", "right_hand"):
            palm = sim.frame(hand).translation
            if hand not in sim.constraints:
                if beh.t_land <= t < beh.t_release and palm[2] <= p.table_height \
                        and palm[0] > p.table_x - 0.1:
                    sim.constraints[hand] = None
                elif hand == "right_hand" and t >= beh.t_move and palm[1] <= p.panel_y:
                    sim.constraints[hand] = panel
            elif hand == "right_hand" and sim.constraints[hand] is None \
                    and hand not in out.info["stance"]:
                del sim.constraints[hand]  # released by the controller
        sim.step(out.tau)
        panel_force = (sim.wrenches["right_hand"][2]
                       if sim.constraints.get("right_hand") is panel else np.nan)
        log.append((sim.t, out.info, panel_force, out.tau.copy()))
    taus = np.array([tau for *_, tau in log])
    assert np.abs(np.diff(taus, axis=0)).max() < 5.0
    log = [entry[:3] for entry in log]
    stances = [info["stance"] for _, info, _ in log]
    changes = [stances[k] for k in range(1, len(log)) if stances[k] != stances[k - 1]]
    # the hands join in either order or together, then the right one leaves
    assert changes[-2:] == [(*FEET, "left_hand", "right_hand"), (*FEET, "left_hand")]
    assert len(changes) <= 3 and all(len(c) == 3 for c in changes[:-2])
    assert all(info["saturated"] == 0 for _, info, _ in log)
    assert max(info["com_error"] for _, info, _ in log) < 5e-3
    sliding = [f for t, _, f in log if t > beh.t_slide + 0.2]
    assert np.isfinite(sliding).all() and np.max(np.abs(np.subtract(sliding, 60.0))) < 5.0
    for a, b in ((beh.t_lean + 0.7 * p.lean_time, beh.t_release),
                 (beh.t_slide + 0.2, beh.duration)):
        steady = [info for t, info, _ in log if a <= t < b]
        labels = steady[0]["f_int_labels"]
        F = np.array([info["f_int"] for info in steady])
        ten = [k for k, lab in enumerate(labels) if lab.startswith("tension")]
        mom = [k for k, lab in enumerate(labels) if lab.startswith("m_")]
        assert np.abs(F[:, ten]).max() < 5.0 and np.abs(F[:, mom]).max() < 0.5
        cop = np.array([np.linalg.norm(info["cops"] - info["cop_refs"], axis=1)
                        for info in steady])
        assert cop.max() < 0.01


def test_multicontact_references_are_smooth(robot):
    """The hand and CoM references of ``multicontact`` are continuous and their velocities
    are the time derivatives of their positions (central differences), across every phase
    boundary; the normal-force reference ramps from 0 to the panel force; bad parameters are
    refused by name."""
    beh = make_behavior("multicontact", robot, robot.standing_configuration())
    h = 1e-5
    for t in np.arange(0.0, beh.duration, 0.013):
        ref, a, b = beh.reference(t), beh.reference(t - h), beh.reference(t + h)
        np.testing.assert_allclose((b.com - a.com) / (2 * h), ref.com_vel, atol=1e-5)
        for name in ("left_hand", "right_hand"):
            fa, fb, f = a.feet[name], b.feet[name], ref.feet[name]
            if (fa.normal is None) != (fb.normal is None):
                continue  # the switch to the force task: position along the normal no longer
            np.testing.assert_allclose((fb.p - fa.p) / (2 * h), f.v, atol=1e-5)
            w = pin.log3(fa.rotation.T @ fb.rotation) / (2 * h)
            np.testing.assert_allclose(fa.rotation @ w, f.omega if f.omega is not None
                                       else np.zeros(3), atol=1e-4)
    forces = [beh.reference(t).feet["right_hand"].force for t in (beh.t_press, beh.t_slide)]
    assert forces == [0.0, pytest.approx(60.0)]
    with pytest.raises(ConfigError, match="panel_force"):
        make_behavior("multicontact", robot, robot.standing_configuration(), panel_force=-1.0)
    with pytest.raises(ConfigError, match="contact bodies"):
        biped = RobotModel.load("biped3d")
        make_behavior("multicontact", biped, biped.standing_configuration())


# ---------------------------------------------------------------- lean on a table (Chardonnet)
def test_lean_on_table_with_a_hand_that_must_not_slip(robot):
    """``lean_on_table`` (Chardonnet et al. Figs. 3, 6) with the left palm held on the table
    once it reaches it: the hand joins the support, the CoM leans past the toes (the feet
    alone cannot hold it) and the right hand makes its push stroke. The hand's contact force
    stays in a μ = 0.4 cone after the 0.5 s transition ramp (``Reference.no_slip``: tangential
    force 0; bound 0.4 while it carries > 20 N) and never drops below the
    preload once it has
    reached it; its final normal force balances the lean by statics (m g (x_G − x_feet) =
    f_n (x_hand − x_feet) within 2 %, x_feet the feet's CoP reference), CoM error < 1 cm
    (6 mm measured, as the hand joins), no torque saturated but within 0.1 s of the hand
    joining, 20 steps at most (11 measured: the welded palm, pressed by its pose task, reacts
    as no table would), the push stroke tracked within 5 mm. (The welded hand reports any CoP,
    so the flat-palm rule of adding is left off here; the behaviour's other ``wbc`` defaults,
    torso task and no angular-momentum task, apply.)"""
    q0 = robot.standing_configuration()
    beh = make_behavior("lean_on_table", robot, q0)
    ctrl = make_controller("wbc", robot, beh, DT, add_force=1.0, unload_time=0.5,
                           transition_time=0.5, release_force=5.0, add_cop_fraction=1.0,
                           add_hold=0.0)
    p = beh.params
    sim = _Harness(robot, q0)
    sim.constraints = {"left_foot": None, "right_foot": None}
    log = []
    for _ in range(round(beh.duration / DT)):
        out = ctrl.compute(sim.measurement())
        if "left_hand" not in sim.constraints and sim.t >= beh.t_land \
                and sim.frame("left_hand").translation[2] <= p.table_height:
            sim.constraints["left_hand"] = None
        sim.step(out.tau)
        log.append((sim.t, out.info, sim.wrenches.get("left_hand"),
                    sim.frame("right_hand").translation.copy()))
    stances = [info["stance"] for _, info, _, _ in log]
    assert stances[-1] == (*FEET, "left_hand")
    joined = next(t for t, info, _, _ in log if "left_hand" in info["stance"])
    saturated = [t for t, info, _, _ in log if info["saturated"]]
    # the welded palm, pressed by its pose task as it joins, reacts as no table would
    assert len(saturated) <= 20 and all(abs(t - joined) <= 0.1 for t in saturated), \
        (joined, saturated[-3:])
    assert max(info["com_error"] for _, info, _, _ in log) < 1e-2
    toe = max(b.offsets[:, 0].max() for b in robot.contact_bodies if b.name in FEET)
    x_feet = beh.reference(beh.duration).cop["left_foot"][0]  # sole frames at x = 0
    com = log[-1][1]["com"]
    assert com[0] > toe  # past the toes
    loaded = [w for t, _, w, _ in log if w is not None and w[2] > 20.0 and t > joined + 0.5]
    assert loaded
    ratio = max(np.hypot(w[0], w[1]) / w[2] for w in loaded)
    assert ratio < 0.4
    reached = next(t for t, _, w, _ in log
                   if t > joined + 0.5 and w is not None and w[2] >= p.hand_load - 0.1)
    assert min(w[2] for t, _, w, _ in log if t >= reached) > p.hand_load - 0.5
    m = sum(i.mass for i in robot.model.inertias)
    f_n = log[-1][2][2]
    statics = m * 9.81 * (com[0] - x_feet) / (p.table_x - x_feet)
    assert abs(f_n - statics) < 0.02 * statics
    stroke = [np.linalg.norm(r - beh.reference(t).feet["right_hand"].p)
              for t, _, _, r in log if t > beh.t_push]
    assert max(stroke) < 5e-3
    with pytest.raises(ConfigError, match=r"lean_on_table\.push_time"):
        make_behavior("lean_on_table", robot, q0, push_time=-1.0)
    with pytest.raises(ConfigError, match=r"Unknown parameter.*'lean_on_table'"):
        make_behavior("lean_on_table", robot, q0, table=1.0)


@pytest.mark.parametrize("behavior", ["multicontact", "lean_on_table"])
def test_behaviors_need_feet_and_hands(behavior):
    """The biped has no hands: refused, naming the behaviour and the missing bodies."""
    biped = RobotModel.load("biped3d")
    with pytest.raises(ConfigError, match=f"{behavior} needs .*biped3d lacks left_hand, "
                                          "right_hand"):
        make_behavior(behavior, biped, biped.standing_configuration())


def _static_wrenches(anchors, com, weight):
    """Contact wrenches whose resultant about the CoM is the weight's reaction (0, 0, W, 0, 0,
    0): a static F_com, whatever G distributes of it."""
    from biped_contact_sim.control.grasp import grasp_model

    g = grasp_model([ContactAnchor(p, np.eye(3), name=n) for n, p in anchors.items()], com)
    f_task = np.linalg.pinv(g.W_com) @ np.array([0.0, 0.0, weight, 0.0, 0.0, 0.0])
    return g, f_task


@pytest.mark.parametrize("preload", [0.0, 60.0])
def test_no_slip_reference_by_tensions_meets_statics(preload):
    """Two feet with their CoPs at x_f = 0.07 m (y = ±0.1) and a hand on a table at
    (0.38, 0.22, 0.85), the CoM at x_c = 0.14: cancelling the hand's tangential force through
    the tensions leaves every CoP and normal moment at its reference and gives the hand the
    normal force of statics about the feet's CoP line, W (x_c − x_f)/(x_h − x_f); with a
    preload above that, the hand carries exactly the preload (still no tangential force, its
    own CoP and normal moment still at their references: the feet's CoPs moved)."""
    from biped_contact_sim.control.contact_set import no_slip_reference

    anchors = {"lf": np.array([0.07, 0.1, 0.0]), "rf": np.array([0.07, -0.1, 0.0]),
               "lh": np.array([0.38, 0.22, 0.85])}
    W, x_c = 466.9, 0.14
    g, f_task = _static_wrenches(anchors, np.array([x_c, 0.0, 0.76]), W)
    tensions = np.array([k for k, lab in enumerate(g.labels) if lab.startswith("tension_")])
    moving = [g.labels.index(lab) for lab in ("m_cop_lf_y", "m_cop_rf_y")]
    out = no_slip_reference([2], np.stack([np.eye(3)] * 3), g.W_com, g.W_int, f_task,
                            np.zeros(12), free=tensions, preload=preload,
                            preload_free=np.concatenate([tensions, moving]))
    f = np.linalg.solve(np.vstack([g.W_com, g.W_int]),
                        np.concatenate([g.W_com @ f_task, out])).reshape(3, 6)
    assert np.abs(f[2, :2]).max() < 1e-9  # no tangential force at the hand
    assert np.abs(f[2, 3:]).max() < 1e-9  # its CoP at its anchor, no normal moment
    statics = W * (x_c - 0.07) / (0.38 - 0.07)  # 105.4 N, above either preload
    assert abs(f[2, 2] - statics) < 1e-6 * statics
    others = [k for k in range(12) if k not in tensions]
    assert np.abs(out[others]).max() < 1e-12
    # the preload case: CoM over the feet (x_c = x_f): statics gives the hand nothing
    g, f_task = _static_wrenches(anchors, np.array([0.07, 0.0, 0.76]), W)
    out = no_slip_reference([2], np.stack([np.eye(3)] * 3), g.W_com, g.W_int, f_task,
                            np.zeros(12), free=tensions, preload=preload,
                            preload_free=np.concatenate([tensions, moving]))
    f = np.linalg.solve(np.vstack([g.W_com, g.W_int]),
                        np.concatenate([g.W_com @ f_task, out])).reshape(3, 6)
    assert np.abs(f[2, :2]).max() < 1e-9 and np.abs(f[2, 3:]).max() < 1e-9
    assert abs(f[2, 2] - preload) < 1e-9 * max(preload, 1.0)
    assert abs(f[:, 2].sum() - W) < 1e-9 * W


def test_a_hand_joins_flat_and_loaded_for_the_hold_time():
    """``ContactTransitions``: a requested palm (half-extents 0.05 × 0.04 m) on one edge
    (CoP 4.5 cm forward, beyond 0.6 of 5 cm) is not added however long it presses; flat and
    loaded it is added exactly ``add_hold`` after the conditions start, not before; a
    light touch (below ``add_force``) restarts the hold; the CoP is measured from the surface's
    centre."""
    from biped_contact_sim.control.contact_set import ContactTransitions

    tr = ContactTransitions(["lf", "rf", "lh"], add_force=1.0,
                            surfaces={"lh": ((0.0, 0.0), (0.05, 0.04))},
                            add_cop_fraction=0.6, add_hold=0.03)
    feet = {"lf": np.array([0, 0, 200.0, 0, 0, 0]), "rf": np.array([0, 0, 200.0, 0, 0, 0])}
    req = ("lf", "rf", "lh")
    tr.update(0.0, ("lf", "rf"), feet)
    edge = np.array([0.0, 0.0, 10.0, 0.0, -0.045 * 10.0, 0.0])  # CoP x = −τ_y/f_z = 4.5 cm
    for k in range(100):
        assert tr.update(0.001 * (k + 1), req, {**feet, "lh": edge}) == ("lf", "rf")
    flat = np.array([0.0, 0.0, 10.0, 0.01 * 10.0, 0.0, 0.0])  # CoP y = 1 cm
    t0 = 0.2
    light = np.array([0.0, 0.0, 0.5, 0.0, 0.0, 0.0])
    for k in range(29):
        assert "lh" not in tr.update(t0 + 0.001 * k, req, {**feet, "lh": flat})
    assert "lh" not in tr.update(t0 + 0.029, req, {**feet, "lh": light})  # restarts
    t1 = t0 + 0.03
    for k in range(30):
        assert "lh" not in tr.update(t1 + 0.001 * k, req, {**feet, "lh": flat})
    assert tr.update(t1 + 0.030, req, {**feet, "lh": flat}) == req
    # the CoP counts from the surface's centre, not from its frame's origin (a sole's frame
    # sits at the ankle): centre 4 cm ahead of the origin, CoP 7 cm ahead: 0.6 of a_x
    tr = ContactTransitions(["lf", "rf", "lh"], add_force=1.0,
                            surfaces={"lh": ((0.04, 0.0), (0.05, 0.04))},
                            add_cop_fraction=0.6, add_hold=0.0)
    tr.update(0.0, ("lf", "rf"), feet)
    ahead = np.array([0.0, 0.0, 10.0, 0.0, -0.07 * 10.0, 0.0])
    assert tr.update(0.001, req, {**feet, "lh": ahead}) == req


def test_reach_over_a_table_edge_and_arm_posture(robot):
    """``lean_on_table``'s reach: the palm's height is at its target after the first 60 % of
    the reach (``REACH_RISE``) and the palm's front edge is over the table only above its
    top; velocities and accelerations are the central differences of the positions. The arm
    postures of the palm on the table (``arm_posture``, the body at q0 translated by the
    pre-lean and by the lean) put the palm frame at its target (forward kinematics, 1e-6),
    within the joint limits, every other joint as at q0. (At q0 itself the table point is out
    of the arm's reach.)"""
    from biped_contact_sim.control.lean_on_table import PALM_HALF_LENGTH
    from biped_contact_sim.control.multicontact import PRESS, REACH_RISE, arm_posture

    q0 = robot.standing_configuration()
    beh = make_behavior("lean_on_table", robot, q0)
    p = beh.params
    front_edge = 0.30  # world lean_on_table
    h = 1e-5
    for t in np.linspace(0.0, p.reach_time, 301):
        ref = beh.reference(t).feet["left_hand"]
        if ref.p[0] + PALM_HALF_LENGTH > front_edge:
            assert ref.p[2] > p.table_height
        if 2 * h < t < p.reach_time - 2 * h:
            a, b = beh.reference(t - h).feet["left_hand"], beh.reference(t + h).feet["left_hand"]
            assert np.allclose((b.p - a.p) / (2 * h), ref.v, atol=1e-6)
            assert np.allclose((b.v - a.v) / (2 * h), ref.a, atol=1e-4)
    top = beh.reference(REACH_RISE[0] * p.reach_time).feet["left_hand"].p[2]
    assert abs(top - (p.table_height + 0.03)) < 1e-12
    palm = robot.model.getFrameId("l_palm")
    target = beh.table_point - np.array([0.0, 0.0, PRESS])
    arm = [k for k, n in enumerate(robot.actuated_joint_names) if n.startswith("l_")
           and n.split("_")[1] in ("shoulder", "elbow", "wrist")]
    rest = [k for k in range(robot.n_joints) if k not in arm]
    data = robot.create_data()
    # the behaviour's postures: the body pre-leaned (landing) and leaned
    pre, leaned = np.array([p.pre_lean, 0.0, 0.0]), np.array([p.lean, p.lean_y, 0.0])
    for shift, qj in ((pre, beh.q_on_table), (leaned, beh.q_leaned),
                      (pre, arm_posture(robot, q0, palm, "l", target, np.eye(3), shift=pre))):
        q = q0.copy()
        q[:3] += shift
        q[robot.q_idx] = qj
        pin.framesForwardKinematics(robot.model, data, q)
        assert np.linalg.norm(data.oMf[palm].translation - target) < 1e-6
        assert np.linalg.norm(pin.log3(data.oMf[palm].rotation)) < 1e-6
        assert (qj >= robot.q_lower - 1e-12).all() and (qj <= robot.q_upper + 1e-12).all()
        assert np.array_equal(qj[rest], q0[robot.q_idx][rest])


@pytest.mark.parametrize("behavior", ["multicontact", "lean_on_table"])
def test_hand_behaviors_bring_their_wbc_settings_under_the_users(robot, behavior):
    """``make_controller`` (the CLI and the controller node alike) puts the behaviour's
    ``controller_defaults`` under the user's settings: the torso task and no angular-momentum
    task for hands in the support, unless the user says otherwise; other behaviours keep the
    controller's own defaults."""
    from biped_contact_sim.control.multicontact import HAND_SUPPORT

    beh = make_behavior(behavior, robot, robot.standing_configuration())
    s = make_controller("wbc", robot, beh, DT).settings
    assert all(getattr(s, k) == v for k, v in HAND_SUPPORT.items())
    s = make_controller("wbc", robot, beh, DT, kp_torso=50.0, am_task=True).settings
    assert (s.kp_torso, s.am_task, s.add_force) == (50.0, True, HAND_SUPPORT["add_force"])
    plain = make_controller("wbc", robot, make_behavior("stand", robot,
                                                        robot.standing_configuration()), DT)
    assert (plain.settings.kp_torso, plain.settings.am_task) == (0.0, True)
