"""The compiled control step of ``wbc`` (``wbc_kernels.wbc_step``) against its numpy stages.

Two controllers, one compiled and its twin with ``compiled = False`` (the numpy/pinocchio
stages of ``wbc_stages`` and ``linalg``, the internal-force law in numpy), read the same
measurements along closed loops that the compiled one drives: every behaviour of the biped in
the simulator (stand, sway, push, walk: double and single support, the swing-foot tasks, the
load-share tension and moment, the PI on measured wrenches; a takeover under the start-up
blend) and the humanoid's multicontact and
lean_on_table sequences against rigid contacts (hands joining, unloading and leaving, four
contacts, the unified force/position task on the panel, the no-slip hand, the torso task).
Their torques and the law's figures agree to 1e-10 of their size at every step.
"""

import numpy as np
import pytest
from test_wbc_multicontact import DT, FEET, _Harness

from biped_contact_sim.control import make_behavior, make_controller
from biped_contact_sim.robot import RobotModel

#: figures of ``info`` compared besides the torques
KEYS = ("f_int_ref", "f_int_cmd", "f_int", "f_int_pred", "wrenches_pred", "f_com_pred",
        "cop_refs", "int_integral")


def _twin(ctrl):
    """A controller like ``ctrl`` (same robot, behaviour, settings) on the numpy stages."""
    s = ctrl.settings
    twin = make_controller("wbc", ctrl.robot, ctrl.behavior, ctrl.dt,
                           **{k: getattr(s, k) for k in s.__dataclass_fields__})
    twin.compiled = False
    twin.internal.compiled = False
    assert ctrl.compiled
    return twin


def _same(out, ref) -> None:
    scale = max(1.0, np.abs(ref.tau).max())
    np.testing.assert_allclose(out.tau, ref.tau, rtol=0.0, atol=1e-10 * scale)
    assert out.info["stance"] == ref.info["stance"]
    # (the damped-level counts can differ where a singular value sits at the floor to
    # rounding: the solve is continuous there, the count is not)
    assert (out.info.get("f_int_labels") or ()) == (ref.info.get("f_int_labels") or ())
    for key in KEYS:
        a, b = out.info.get(key), ref.info.get(key)
        assert (a is None) == (b is None), key
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=0.0, equal_nan=True,
                                       atol=1e-10 * max(1.0, np.nanmax(np.abs(b), initial=0.0)))


@pytest.mark.parametrize(("scenario", "duration"), [("stand", 0.3), ("sway", 1.0),
                                                    ("push", 1.5), ("walk", 2.5)])
def test_biped_step_equals_numpy_stages(scenario, duration):
    """The biped in the simulator (penalty_fl, point contacts) under the compiled step; the
    twin fed the same measurements (state and the sole wrenches of the last step)."""
    from biped_contact_sim.control import Measurement
    from biped_contact_sim.session.builder import build
    from biped_contact_sim.session.config import SimConfig

    built = build(SimConfig.from_sets(scenario, "penalty_fl", "wbc",
                                      sets={"contacts": "points"}))
    sim, control = built.sim, built.control
    ctrl = control.controller
    twin = _twin(ctrl)
    stances = set()
    for _ in range(round(duration / sim.dt)):
        meas = Measurement(sim.t, sim.q.copy(), sim.v.copy(), dict(control.wrenches))
        out, ref = ctrl.compute(meas), twin.compute(meas)
        _same(out, ref)
        stances.add(out.info["stance"])
        q_prev = sim.q
        control.observe(q_prev, sim.step(out.tau))
    if scenario == "walk":
        assert len(stances) == 3  # double and both single supports


def test_start_up_blend_step_equals_numpy_stages():
    """A ``wbc`` taking over the biped leaning back after a soft joint hold (the start-up blend
    active: the CoM, posture, base and CoP targets from the measured state, no angular-momentum
    task; ``control.startup``), its first 1.2 s, the blend's end included."""
    from biped_contact_sim.control import Measurement
    from biped_contact_sim.ros.scheduling import SafeCommand
    from biped_contact_sim.session.builder import build
    from biped_contact_sim.session.config import SimConfig

    config = SimConfig.from_sets("stand", "penalty_fl", "wbc", sets={"contacts": "points"})
    built = build(config)
    sim, control = built.sim, built.control
    hold = SafeCommand(built.robot, "hold", 300.0, 30.0, 5.0, 1e-3)
    hold.start(sim.q)
    for _ in range(1000):
        q_prev = sim.q
        control.observe(q_prev, sim.step(hold.torque(sim.q, sim.v)))
    ctrl = build(config).control.controller
    twin = _twin(ctrl)
    blended = 0
    for _ in range(1200):
        meas = Measurement(sim.t, sim.q.copy(), sim.v.copy(), dict(control.wrenches))
        out, ref = ctrl.compute(meas), twin.compute(meas)
        _same(out, ref)
        blended += ctrl.startup.rotation is not None
        q_prev = sim.q
        control.observe(q_prev, sim.step(out.tau))
    assert 900 < blended < 1200  # the blend ran (1 s) and ended


def _humanoid_loop(robot, beh, on_step) -> set:
    """The rigid-contact loops of ``test_wbc_multicontact``: a palm joins when it reaches the
    table top over the table (multicontact: either palm before the right one's release;
    lean_on_table: the left one), the right one the panel (normal only) once it moves there,
    a hand the controller releases leaves."""
    p = beh.params
    sim = _Harness(robot, robot.standing_configuration())
    sim.constraints = {"left_foot": None, "right_foot": None}
    panel = np.array([0.0, 1.0, 0.0])
    multi = beh.name == "multicontact"
    stances = set()
    for _ in range(round(beh.duration / DT)):
        out = on_step(sim.measurement())
        stances.add(out.info["stance"])
        t = sim.t
        for hand in ("left_hand", "right_hand") if multi else ("left_hand",):
            palm = sim.frame(hand).translation
            if hand not in sim.constraints:
                if t >= beh.t_land and palm[2] <= p.table_height \
                        and (not multi or (t < beh.t_release and palm[0] > p.table_x - 0.1)):
                    sim.constraints[hand] = None
                elif multi and hand == "right_hand" and t >= beh.t_move \
                        and palm[1] <= p.panel_y:
                    sim.constraints[hand] = panel
            elif multi and hand == "right_hand" and sim.constraints[hand] is None \
                    and hand not in out.info["stance"]:
                del sim.constraints[hand]  # released by the controller
        sim.step(out.tau)
    return stances


@pytest.mark.parametrize("behavior", ["multicontact", "lean_on_table"])
def test_humanoid_step_equals_numpy_stages(behavior):
    """The humanoid's hand behaviours on a faster timeline (every phase, shorter), with the
    torso task on and contact transitions."""
    robot = RobotModel.load("humanoid")
    fast = (dict(reach_time=0.8, land_time=0.3, lean_time=0.5, release_time=0.4,
                 to_panel_time=0.8, touch_time=0.3, press_time=0.3, slide_time=0.6)
            if behavior == "multicontact" else {})
    beh = make_behavior(behavior, robot, robot.standing_configuration(), **fast)
    # the transition settings of ``test_wbc_multicontact``'s loops for each behaviour
    ctrl = make_controller("wbc", robot, beh, DT,
                           add_force=10.0 if behavior == "multicontact" else 1.0,
                           unload_time=0.5, transition_time=0.5, release_force=5.0,
                           add_cop_fraction=1.0, add_hold=0.0, kp_torso=100.0)
    twin = _twin(ctrl)

    def both(meas):
        out, ref = ctrl.compute(meas), twin.compute(meas)
        _same(out, ref)
        return out

    stances = _humanoid_loop(robot, beh, both)
    assert (*FEET, "left_hand") in stances
    if behavior == "multicontact":
        assert (*FEET, "left_hand", "right_hand") in stances
