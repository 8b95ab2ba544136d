"""Closed-loop walks with computed-torque and whole-body control (issue acceptance numbers).

``walk``: the 3-D biped's five-step gait (docs/methods.md §4.3) tracked by ``ctc`` (§4.1) on
``penalty_fl`` (§2.2) and ``gauss_seidel`` (§2.3), and by ``wbc`` (§4.2) on ``penalty_fl``.
Acceptance: five steps completed, no fall, forward progress ≥ 90 % of the
planned 0.48 m, force ZMP inside the support polygon in ≥ 99 % of the samples, no stance-foot
slip above 2 mm, torques within the limits.

``planar_walk``: the planar 7-link biped's optimal cubic gait (Bravo & Rengifo §4), on
``penalty_fl`` and on ``gauss_seidel`` (§2.3). Acceptance: at least five steps, ZMP within
[−l_heel, l_toe] of the stance sole, joint tracking RMS < 1°.

Plus the pieces of the ctc the walks rely on, checked without simulating: the load-share
allocation of double support (derived from the ZMP, or planned and given), and the release of
a foot the reference is lifting.
"""

import numpy as np
import pinocchio as pin
import pytest

from biped_contact_sim.control import Measurement, Reference, make_behavior, make_controller
from biped_contact_sim.control.base import Behavior
from biped_contact_sim.control.ctc import MIN_SHARE
from biped_contact_sim.errors import ConfigError
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.session.runner import run_scenario


class Script(Behavior):
    """A behaviour returning ``now`` before ``t_switch`` and ``later`` from then on."""

    name = "script"

    def __init__(self, now, later, t_switch):
        self.now, self.later, self.t_switch = now, later, t_switch

    def reference(self, t):
        return self.now if t < self.t_switch else self.later


@pytest.fixture(scope="module")
def biped():
    return RobotModel.load("biped3d")


# ---------------------------------------------------------------------- ctc pieces
def test_load_share_unloads_the_foot_the_zmp_left(biped):
    """Reference cart-table ZMP at the right sole centre: the left foot's wrench (force and
    moment) is ~0 (α = MIN_SHARE), the right carries the weight; dynamics still exact."""
    robot = biped
    q0 = robot.standing_configuration()
    n = robot.n_joints
    data = robot.create_data()
    pin.framesForwardKinematics(robot.model, data, q0)
    right = next(b for b in robot.contact_bodies if b.name == "right_foot")
    centre = data.oMf[right.frame_id].act(right.offsets.mean(axis=0))
    com = pin.centerOfMass(robot.model, data, q0).copy()
    com[:2] = centre[:2]  # at rest: cart-table ZMP = CoM projection = right sole centre
    ref = Reference(stance=("left_foot", "right_foot"), com=com, com_acc=np.zeros(3),
                    q_joints=q0[robot.q_idx], v_joints=np.zeros(n), a_joints=np.zeros(n))
    ctrl = make_controller("ctc", robot, Script(ref, ref, np.inf), 1e-3, clamp=False)
    out = ctrl.compute(Measurement(0.0, q0, np.zeros(robot.nv)))
    assert out.info["load_share"] == pytest.approx([MIN_SHARE, 1 - MIN_SHARE])
    lam = out.info["lam"]
    mg = robot.mass * 9.81
    assert lam["left_foot"][2] + lam["right_foot"][2] == pytest.approx(mg, rel=1e-9)
    assert abs(lam["left_foot"][2]) < 0.01 * mg
    assert np.abs(lam["left_foot"][:2]).max() < 0.01 * mg
    # Without the CoM reference: the symmetric split of the minimum-norm allocation.
    ref_nc = Reference(stance=ref.stance, q_joints=ref.q_joints, v_joints=ref.v_joints,
                       a_joints=ref.a_joints)
    ctrl = make_controller("ctc", robot, Script(ref_nc, ref_nc, np.inf), 1e-3)
    out = ctrl.compute(Measurement(0.0, q0, np.zeros(robot.nv)))
    assert out.info["load_share"] is None
    assert out.info["lam"]["left_foot"][2] == pytest.approx(mg / 2, rel=1e-6)


def test_planned_load_share_used_as_given():
    """``Reference.load_share`` sets the split of the net force (planar biped at rest, feet
    together, so any split is consistent with the ZMP): 0.8 / 0.2 of m g; net force = m g;
    a share naming no stance foot is refused."""
    robot = RobotModel.load("planar_biped")
    q0 = robot.standing_configuration()
    n = robot.n_joints
    ref = Reference(stance=("left_foot", "right_foot"), q_joints=q0[robot.q_idx],
                    v_joints=np.zeros(n), a_joints=np.zeros(n),
                    load_share={"left_foot": 0.8, "right_foot": 0.2})
    ctrl = make_controller("ctc", robot, Script(ref, ref, np.inf), 1e-3, clamp=False)
    out = ctrl.compute(Measurement(0.0, q0, np.zeros(robot.nv)))
    mg = robot.mass * 9.81
    assert out.info["load_share"] == pytest.approx([0.8, 0.2])
    assert out.info["lam"]["left_foot"][2] == pytest.approx(0.8 * mg, rel=1e-9)
    assert out.info["lam"]["right_foot"][2] == pytest.approx(0.2 * mg, rel=1e-9)
    bad = Reference(stance=ref.stance, q_joints=ref.q_joints, load_share={"left_foot": 1.0})
    ctrl = make_controller("ctc", robot, Script(bad, bad, np.inf), 1e-3)
    with pytest.raises(ConfigError, match="needs the stance foot 'right_foot'"):
        ctrl.compute(Measurement(0.0, q0, np.zeros(robot.nv)))


def test_release_only_a_foot_the_reference_lifts(biped):
    """Double support with the right foot measured unloaded: released when the reference
    lifts it within ``lookahead``; kept when it has just landed (stays in the stance)."""
    robot = biped
    q0 = robot.standing_configuration()
    n = robot.n_joints
    both = Reference(stance=("left_foot", "right_foot"), q_joints=q0[robot.q_idx],
                     v_joints=np.zeros(n), a_joints=np.zeros(n))
    left = Reference(stance=("left_foot",), q_joints=both.q_joints, v_joints=both.v_joints,
                     a_joints=both.a_joints)
    mg = robot.mass * 9.81
    wrenches = {"left_foot": np.array([0, 0, mg - 2.0, 0, 0, 0]),
                "right_foot": np.array([0, 0, 2.0, 0, 0, 0])}
    meas = Measurement(0.0, q0, np.zeros(robot.nv), wrenches)
    lifting = make_controller("ctc", robot, Script(both, left, 0.01), 1e-3)  # lifts at 10 ms
    assert lifting.compute(meas).info["stance"] == ("left_foot",)
    landed = make_controller("ctc", robot, Script(both, both, np.inf), 1e-3)
    assert landed.compute(meas).info["stance"] == ("left_foot", "right_foot")
    later = make_controller("ctc", robot, Script(both, left, 0.5), 1e-3)  # beyond lookahead
    assert later.compute(meas).info["stance"] == ("left_foot", "right_foot")


def test_penalty_fl_sole_on_the_ground_is_in_contact():
    """A sole placed on the ground (φ = +round-off) is active from the first step: the planar
    biped's hold starts supported, not in a one-step free fall."""
    result = run_scenario("planar_walk", "penalty_fl", controller="ctc", duration=0.02)
    first = result.samples[0].step
    assert first.active.all()
    assert first.f_contact[:, 2].sum() == pytest.approx(RobotModel.load(
        "planar_biped").mass * 9.81, rel=0.05)


# ---------------------------------------------------------------------- closed-loop walks
@pytest.mark.parametrize("model, controller", [("penalty_fl", "ctc"), ("gauss_seidel", "ctc"),
                                               ("penalty_fl", "wbc")])
def test_walk_five_steps(model, controller):
    """Acceptance of ``walk`` (module docstring) with the scenario's contact defaults
    (``penalty_fl``: separation damping)."""
    result = run_scenario("walk", model, controller=controller)
    assert result.controller == controller
    if model == "penalty_fl":
        assert result.contact_settings["separation_damping"] is True
    summary = result.summary()
    m = summary["metrics"]
    assert summary["error"] is None and not summary["fell"]
    assert m["steps_completed"] == 5
    assert m["planned_distance_m"] == pytest.approx(0.48)
    assert m["progress_fraction"] >= 0.90
    assert summary["zmp_in_support_fraction"] >= 0.99
    assert m["stance_slip_max_m"] <= 2e-3
    assert m["torque_saturation_fraction"] == 0.0  # no joint ever at its limit
    assert m["max_torque_ratio"] < 1.0


@pytest.mark.parametrize("model", ["penalty_fl", "gauss_seidel"])
def test_planar_walk_ctc(model):
    """Acceptance of ``planar_walk`` with the penalty model and a constraint model: five steps,
    no fall, joint tracking RMS < 1°, force ZMP within [−l_heel, l_toe] of the stance sole in
    single support and between the rear heel and the front toe in double support, torques
    within limits."""
    robot = RobotModel.load("planar_biped")
    behavior = make_behavior("planar_walk", robot, robot.standing_configuration())
    p = behavior.params
    result = run_scenario("planar_walk", model, controller="ctc")
    summary = result.summary()
    m = summary["metrics"]
    assert summary["error"] is None and not summary["fell"]
    assert m["steps_completed"] >= 5
    assert m["progress_fraction"] >= 0.90
    assert m["max_torque_ratio"] < 1.0 and m["torque_saturation_fraction"] == 0.0
    errors = [s.info["q_err"] for s in result.samples]
    assert np.degrees(np.sqrt(np.mean(np.square(errors)))) < 1.0
    single, double = [], []
    for smp in result.samples:
        t, zmp = smp.step.t, smp.obs.zmp
        if zmp is None:
            continue
        step, ds = behavior.phase_at(t), behavior.double_at(t)
        if step is not None:
            single.append(zmp[0] - step.x)
        elif ds is not None:
            x_lift, x_land = ds.x[ds.lifting], ds.x[ds.landing]
            double.append((zmp[0] - (x_lift - p.l_heel), (x_land + p.l_toe) - zmp[0]))
    assert single and -p.l_heel <= min(single) and max(single) <= p.l_toe
    assert double and np.min(double) >= 0.0
