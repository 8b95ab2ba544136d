"""``multicontact``: the Fig. 6 sequence of Sentis, Park, Khatib (2010) for the humanoid.

References for ``wbc`` (with contact transitions: ``add_force``, ``unload_time``,
``transition_time``), all times relative to the start, each motion a quintic blend
σ(s) = 10s³ − 15s⁴ + 6s⁵ (zero velocity and acceleration at both ends):

1. reach (``reach_time``): both palms from their pose at q0 to 3 cm above their table points
   (x = ``table_x``, y = ±``hand_y``, z = ``table_height``), level (normal up), rising before
   they advance; the CoM pre-leans ``pre_lean`` forward on the feet, their CoPs under it;
2. land (``land_time``): the palms descend to 5 mm below the table top; both hands are asked
   into the support from the start of the descent (the controller adds each once flat and
   loaded); in the second half of ``settle`` the feet's CoPs return to the soles' centres;
3. lean (``lean_time``): four-contact support, the CoM moves ``lean`` towards the table and
   ``lean_y`` towards the left hand;
4. release: the right hand is dropped from the stance (the controller unloads it first) and,
   ``release_time`` later, moves (``to_panel_time``) to 2 cm off a vertical panel on the right
   (plane y = ``panel_y``, normal +y, at x = ``panel_x``, z = ``panel_z``), palm facing it,
   then (``touch_time``) to 5 mm into it: three-contact support (feet, left hand);
5. press (``press_time``): the right hand's target becomes the unified force/position task,
   normal force ramped to ``panel_force``;
6. slide (``slide_time``): the hand tracks x(t) = panel_x + A_s (1 − cos(2πt/slide_period))/2
   along the panel (from rest, back and forth over A_s) while the CoM follows a vertical
   sinusoid z₀ − A_c(1 − cos(2πt/com_period)).

Posture references: the arms' configurations with the palms on the table and on the panel
(``arm_posture``). Internal forces: all zero (F_int,ref = 0, the paper's 0₁₂ for three
contacts); CoPs at the contact centres. Scenario ``multicontact`` runs it in the world of
``config/worlds/multicontact.yaml``; ``test_wbc_multicontact`` also with the contacts held as
constraints.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pinocchio as pin

from biped_contact_sim.control.base import (
    Behavior,
    FootTarget,
    LazyValues,
    Reference,
    behavior_params,
    range_checker,
)
from biped_contact_sim.errors import ConfigError

FEET = ("left_foot", "right_foot")
HANDS = ("left_hand", "right_hand")
APPROACH, PRESS = 0.03, 0.005  # above the table before landing; into a surface when landing
# (height's share, start of the horizontal move) of the hands' moves from below a table top
# (``_move``): the palms clear the table's front edge; off the table towards the panel, the
# palm rises before it turns far enough to dig its edge into the table.
REACH_RISE = (0.6, 0.0)
PANEL_RISE = (0.3, 0.0)
# What ``wbc`` needs for hands in the support (docs/methods.md §4.2): a hand joins once it
# lies flat and carries load and leaves unloaded (``control.contact_set``); the torso is held
# upright and the double-support angular-momentum task is off (a reaching arm would make it
# pitch the torso back).
HAND_SUPPORT = {"add_force": 1.0, "add_cop_fraction": 0.8, "add_hold": 0.03,
                "unload_time": 0.3, "transition_time": 0.2, "kp_torso": 100.0,
                "am_task": False}


_check = range_checker("multicontact")


def require_feet_and_hands(robot, behavior: str) -> dict:
    """The robot's contact bodies by name, after checking it is a free-flyer with joints and
    the contact bodies ``FEET + HANDS`` (``humanoid``).

    Raises:
        ConfigError: naming the behaviour and what the robot lacks.
    """
    names = {b.name: b for b in robot.contact_bodies}
    missing = [n for n in FEET + HANDS if n not in names]
    if robot.config.base != "free_flyer" or missing or robot.n_joints == 0:
        lacks = ", ".join(missing) or ("a free-flyer base" if robot.config.base != "free_flyer"
                                       else "joints")
        raise ConfigError(f"{behavior} needs a free-flyer robot with joints and contact bodies "
                          f"{', '.join(FEET + HANDS)}; {robot.name} lacks {lacks}")
    return names


@dataclass(frozen=True)
class MultiContactParams:
    """Parameters of ``multicontact`` (module docstring) [m, s, N].

    Attributes:
        table_height: height of the table top [m].
        table_x: x of the palms' points on the table [m].
        hand_y: |y| of the palms' points on the table [m].
        panel_y: y of the vertical panel's face (normal +y) [m].
        panel_x: x of the right palm's point on the panel [m].
        panel_z: z of the right palm's point on the panel [m].
        panel_force: normal force of the right hand on the panel [N].
        lean: CoM shift towards the table in four-contact support [m].
        pre_lean: CoM shift forward during the reach, on the feet (their CoPs under it) [m]:
            the table is out of the arms' reach from q0.
        lean_y: CoM shift towards the left hand during the lean [m]: with the right hand
            gone, zero internal forces then load the three contacts nearly vertically.
        reach_time: duration of the hands' reach [s].
        land_time: duration of the hands' descent onto the table [s].
        settle: pause before the lean [s].
        lean_time: duration of the lean [s].
        release_time: unloading of the right hand before it moves [s].
        to_panel_time: duration of the right hand's move to the panel [s].
        touch_time: duration of the right hand's approach onto the panel [s].
        press_time: ramp of the panel force [s].
        slide_time: duration of the slide along the panel [s].
        slide_amplitude: stroke of the slide along x [m].
        slide_period: period of the slide [s].
        com_amplitude: amplitude of the CoM's vertical sinusoid [m].
        com_period: period of the CoM's vertical sinusoid [s].
    """

    table_height: float = 0.85
    table_x: float = 0.32
    hand_y: float = 0.22
    panel_y: float = -0.50
    panel_x: float = 0.25
    panel_z: float = 1.0
    panel_force: float = 60.0
    lean: float = 0.04
    pre_lean: float = 0.05
    lean_y: float = 0.05
    reach_time: float = 2.5
    land_time: float = 0.5
    settle: float = 1.0
    lean_time: float = 1.0
    release_time: float = 0.6
    to_panel_time: float = 1.5
    touch_time: float = 0.5
    press_time: float = 0.5
    slide_time: float = 4.0
    slide_amplitude: float = 0.05
    slide_period: float = 2.0
    com_amplitude: float = 0.01
    com_period: float = 2.0

    def __post_init__(self):
        check_hand_params(self, _check, ("settle",), ("panel_force",),
                          ("lean", "pre_lean", "lean_y", "slide_amplitude", "com_amplitude"), 0.2)


def check_hand_params(params, check, durations: tuple[str, ...], forces: tuple[str, ...],
                      offsets: tuple[str, ...], offset_bound: float) -> None:
    """The range checks of a hands behaviour's parameters (``check`` its ``range_checker``):
    the durations (``*_time``, ``*_period`` and ``durations``) in (0, 60] s, ``forces`` in
    [0, 500] N, ``offsets`` within ±``offset_bound`` m and the other positions within ±2 m."""
    for f in dataclasses.fields(params):
        value = getattr(params, f.name)
        if f.name.endswith(("_time", "_period")) or f.name in durations:
            check(f.name, value, 0.0, 60.0)
        elif f.name in forces:
            check(f.name, value, 0.0, 500.0, lo_open=False)
        elif f.name in offsets:
            check(f.name, value, -offset_bound, offset_bound, lo_open=False)
        else:
            check(f.name, value, -2.0, 2.0, lo_open=False)


def _sigma(s: float) -> tuple[float, float, float]:
    """σ(s) and its first two derivatives with respect to s, s clipped to [0, 1]."""
    if s <= 0.0 or s >= 1.0:
        return (0.0 if s <= 0.0 else 1.0), 0.0, 0.0
    s2 = s * s
    return s2 * s * (10 - 15 * s + 6 * s2), 30 * s2 * (1 - s) ** 2, \
        60 * s * (1 - s) * (1 - 2 * s)


def _move(t: float, t0: float, duration: float, a: np.ndarray, b: np.ndarray,
          Ra: np.ndarray, Rb: np.ndarray,
          rise: tuple[float, float] | None = None) -> FootTarget:
    """Pose target moving from (a, Ra) to (b, Rb) during [t0, t0 + duration] along σ.

    ``rise = (r, h)``: the height moves along σ over the first fraction r of the duration and
    the horizontal position over the last 1 − h (the rotation over all of it), so that a hand
    coming from below a table top clears its edge instead of cutting through it."""
    log = pin.log3(Ra.T @ Rb)  # body-frame rotation vector; ω = Ra log σ̇ (world)
    s, ds, dds = _sigma((t - t0) / duration)
    ds, dds = ds / duration, dds / duration ** 2
    if rise is None:
        return FootTarget(a + s * (b - a), ds * (b - a), dds * (b - a),
                          rotation=Ra @ pin.exp3(s * log), omega=ds * (Ra @ log),
                          alpha=dds * (Ra @ log))
    up, late = rise[0] * duration, rise[1] * duration
    sz, dsz, ddsz = _sigma((t - t0) / up)
    sh, dsh, ddsh = _sigma((t - t0 - late) / (duration - late))
    w = np.array([sh, sh, sz])
    dw = np.array([dsh / (duration - late)] * 2 + [dsz / up])
    ddw = np.array([ddsh / (duration - late) ** 2] * 2 + [ddsz / up ** 2])
    return FootTarget(a + w * (b - a), dw * (b - a), ddw * (b - a),
                      rotation=Ra @ pin.exp3(s * log), omega=ds * (Ra @ log),
                      alpha=dds * (Ra @ log))


def arm_posture(robot, q: np.ndarray, frame_id: int, side: str, p: np.ndarray,
                R: np.ndarray, shift: np.ndarray | None = None,
                iterations: int = 200) -> np.ndarray:
    """Joint posture with the arm ``side`` ('l' or 'r') placing frame ``frame_id`` at (p, R)
    and every other joint as in q, the base translated by ``shift``: damped least-squares
    closed-loop inverse kinematics on the arm's joints (q_arm ← q_arm + J⁺ log(oMf⁻¹ oMd),
    pinocchio's frame Jacobian in the frame, λ = 1e-6), clipped to the joint limits.

    The posture task is the lowest priority of ``wbc``: with a hand in the support it acts only
    in the few directions the other tasks leave, and there it pulls towards its reference; a
    reference with the arms hanging (q0) then pulls the torso back and the wrist to its limit.
    Returns the actuated joints (``robot.q_idx`` order)."""
    model, data = robot.model, robot.create_data()
    q = np.array(q, float)
    if shift is not None:
        q[:3] += shift
    arm = [k for k, n in enumerate(robot.actuated_joint_names) if n.startswith(f"{side}_")
           and n.split("_")[1] in ("shoulder", "elbow", "wrist")]
    qi = robot.q_idx[arm]
    vi = robot.v_idx[arm]
    goal = pin.SE3(R, p)
    for _ in range(iterations):
        pin.framesForwardKinematics(model, data, q)
        err = pin.log6(data.oMf[frame_id].actInv(goal)).vector
        if np.dot(err, err) < 1e-16:
            break
        J = pin.computeFrameJacobian(model, data, q, frame_id, pin.ReferenceFrame.LOCAL)[:, vi]
        dq = np.linalg.solve(np.dot(J.T, J) + 1e-6 * np.eye(len(vi)), np.dot(J.T, err))
        q[qi] = np.clip(q[qi] + dq, robot.q_lower[arm], robot.q_upper[arm])
    return q[robot.q_idx].copy()


class HandsBehavior(Behavior):
    """Common start of the humanoid's behaviours with hands in the support (``multicontact``,
    ``lean_on_table``).

    Args:
        robot: a free-flyer humanoid with contact bodies ``left_foot``, ``right_foot``,
            ``left_hand``, ``right_hand`` (``humanoid``).
        q0: initial configuration, feet flat on the ground.
        **params: the fields of the behaviour's parameters dataclass.

    Raises:
        ConfigError: unknown or invalid parameters, or a robot without those contact bodies.
    """

    def _start(self, robot, q0, params_class, params) -> tuple[Any, dict, pin.Data]:
        """Set ``params``, ``q0``, ``com0``, the hands' ``start`` poses and ``q_joints`` from
        q0 after checking the parameters and the robot's contact bodies.

        Returns:
            (the parameters, the contact bodies by name, a Data at q0's frames).
        """
        self.params = p = behavior_params(self.name, params_class, params)
        names = require_feet_and_hands(robot, self.name)
        self.q0 = np.asarray(q0, float).copy()
        data = robot.create_data()
        pin.framesForwardKinematics(robot.model, data, self.q0)
        self.com0 = pin.centerOfMass(robot.model, data, self.q0).copy()
        self.start = {n: (data.oMf[names[n].frame_id].translation.copy(),
                          data.oMf[names[n].frame_id].rotation.copy()) for n in HANDS}
        self.q_joints = self.q0[robot.q_idx].copy()
        return p, names, data


class MultiContactBehavior(HandsBehavior):
    """The Fig. 6 multi-contact sequence (module docstring). Arguments and errors:
    ``HandsBehavior``'s, with ``**params`` the fields of ``MultiContactParams``.
    """

    name = "multicontact"
    # The torso task is on (``HAND_SUPPORT``). It was off: it stepped the torques by 30–50 N·m
    # where the prioritized solve switched between a Cholesky and a truncated pseudo-inverse
    # (now a damped solve, continuous), and then, in the world on penalty_fl, the panel force
    # fell by 41 N for one step at t = 9.686 s — a palm corner leaving penalty_fl's active set
    # on a micrometre tilt (the scenario's ε is now 10 µm, ``sim.scenarios``).
    controller_defaults: ClassVar[dict[str, dict[str, Any]]] = {"wbc": HAND_SUPPORT}

    def __init__(self, robot, q0, **params: Any):
        p, names, data = self._start(robot, q0, MultiContactParams, params)
        self.robot = robot
        level = np.eye(3)
        self.table = {n: np.array([p.table_x, y, p.table_height])
                      for n, y in zip(HANDS, (p.hand_y, -p.hand_y), strict=True)}
        self.level = level
        if robot.n_joints == 0:
            raise ConfigError("multicontact needs actuated joints")
        self.facing_panel = pin.rpy.rpyToMatrix(-np.pi / 2, 0.0, 0.0)  # palm z = +y
        self.panel_point = np.array([p.panel_x, p.panel_y, p.panel_z])
        self.panel_normal = np.array([0.0, 1.0, 0.0])
        # phase boundaries
        self.t_land = p.reach_time
        self.t_lean = self.t_land + p.land_time + p.settle
        self.t_release = self.t_lean + p.lean_time
        self.t_move = self.t_release + p.release_time
        self.t_touch = self.t_move + p.to_panel_time
        self.t_press = self.t_touch + p.touch_time
        self.t_slide = self.t_press + p.press_time
        self.duration = self.t_slide + p.slide_time
        # steady phases of the acceptance figures (``cli.metrics``): four contacts after
        # most of the lean, three contacts while sliding; the force task's slide
        self.steady_phases = ((self.t_lean + 0.7 * p.lean_time, self.t_release),
                              (self.t_slide + 0.2, self.duration))
        self.force_phase = (self.t_slide + 0.2, self.duration, "right_hand", p.panel_force)
        self.t_settle = self.t_land + p.land_time
        # x of the sole frames at q0 (the feet's CoPs under the CoM while it pre-leans) and
        # the soles' centres in their frames (the CoP references once the hands carry load)
        self.sole_x = {n: float(data.oMf[names[n].frame_id].translation[0]) for n in FEET}
        self.sole_centre = {n: 0.5 * (names[n].offsets.min(axis=0) + names[n].offsets.max(
            axis=0))[:2] for n in FEET}
        # posture references (``arm_posture``): both palms on the table with the body
        # pre-leaned and leaned; the right palm on the panel
        shift = np.array([p.pre_lean, 0.0, 0.0])
        leaned = shift + np.array([p.lean, p.lean_y, 0.0])
        pressed = {n: self.table[n] - np.array([0.0, 0.0, PRESS]) for n in HANDS}
        self.q_on_table = self._both_arms(robot, names, pressed, shift)
        self.q_leaned = self._both_arms(robot, names, pressed, leaned)
        self.q_panel = arm_posture(robot, self._with(robot, self.q_leaned),
                                   names["right_hand"].frame_id, "r", self.panel_point,
                                   self.facing_panel, shift=leaned)

    def _with(self, robot, q_joints: np.ndarray) -> np.ndarray:
        q = self.q0.copy()
        q[robot.q_idx] = q_joints
        return q

    def _both_arms(self, robot, names, pressed: dict, shift: np.ndarray) -> np.ndarray:
        q = self.q0
        for n, side in zip(HANDS, ("l", "r"), strict=True):
            q = self._with(robot, arm_posture(robot, q, names[n].frame_id, side, pressed[n],
                                              self.level, shift=shift))
        return q[robot.q_idx].copy()

    def stance_at(self, t: float) -> tuple[str, ...]:
        """Feet; both hands from the landing; the left hand only from the release."""
        if t < self.t_land:
            return FEET
        if t < self.t_release:
            return FEET + HANDS
        return (*FEET, "left_hand")

    def _hand(self, name: str, t: float) -> FootTarget:
        p = self.params
        p0, R0 = self.start[name]
        above = self.table[name] + np.array([0.0, 0.0, APPROACH])
        pressed = self.table[name] - np.array([0.0, 0.0, PRESS])
        if t < self.t_land or name == "left_hand" or t < self.t_move:
            if t < self.t_land:
                return _move(t, 0.0, p.reach_time, p0, above, R0, self.level,
                             rise=REACH_RISE)
            return _move(t, self.t_land, p.land_time, above, pressed, self.level, self.level)
        off = self.panel_point + np.array([0.0, 0.02, 0.0])
        into = self.panel_point - np.array([0.0, PRESS, 0.0])
        if t < self.t_touch:
            return _move(t, self.t_move, p.to_panel_time, pressed, off, self.level,
                         self.facing_panel, rise=PANEL_RISE)
        if t < self.t_press:
            return _move(t, self.t_touch, p.touch_time, off, into, self.facing_panel,
                         self.facing_panel)
        s, _, _ = _sigma((t - self.t_press) / p.press_time)
        w = 2 * np.pi / p.slide_period
        tau = max(t - self.t_slide, 0.0)
        A = p.slide_amplitude / 2  # x = A_s (1 − cos wτ)/2: starts at rest, back and forth
        slide = np.array([A * (1 - np.cos(w * tau)), 0.0, 0.0])
        v = np.array([A * w * np.sin(w * tau), 0.0, 0.0])
        a = np.array([A * w * w * np.cos(w * tau), 0.0, 0.0]) * (tau > 0)
        return FootTarget(into + slide, v, a, rotation=self.facing_panel,
                          normal=self.panel_normal, force=s * p.panel_force)

    def reference(self, t: float) -> Reference:
        """Stance, CoM, hand targets (module docstring)."""
        p = self.params
        t = max(float(t), 0.0)
        s0, ds0, dds0 = _sigma(t / p.reach_time)
        s, ds, dds = _sigma((t - self.t_lean) / p.lean_time)
        # com0 + (pre_lean σ₀, 0, 0) + σ (lean, lean_y, 0) and its derivatives, by component
        # (the same operations as the vector form, without its temporaries)
        c0x, c0y, c0z = self.com0
        k1, k2 = ds / p.lean_time, dds / p.lean_time ** 2
        com = np.array([c0x + p.pre_lean * s0 + s * p.lean, c0y + 0.0 + s * p.lean_y,
                        c0z + 0.0 + s * 0.0])
        vel = np.array([p.pre_lean * ds0 / p.reach_time + k1 * p.lean, 0.0 + k1 * p.lean_y,
                        0.0 + k1 * 0.0])
        acc = np.array([p.pre_lean * dds0 / p.reach_time ** 2 + k2 * p.lean,
                        0.0 + k2 * p.lean_y, 0.0 + k2 * 0.0])
        if t > self.t_slide:
            w = 2 * np.pi / p.com_period
            tau = t - self.t_slide
            com[2] -= p.com_amplitude * (1 - np.cos(w * tau))
            vel[2] = -p.com_amplitude * w * np.sin(w * tau)
            acc[2] = -p.com_amplitude * w * w * np.cos(w * tau)
        hands = LazyValues(HANDS, lambda name: self._hand(name, t))  # built when read
        # The feet's CoPs under the CoM while it pre-leans on them (a quasi-static ZMP); back
        # to the soles' centres in the second half of the settle, the hands loaded by then.
        x = self.com0[0] + p.pre_lean * s0
        back = _sigma((t - self.t_settle - 0.5 * p.settle) / (0.5 * p.settle))[0]
        cop = {}
        for n in FEET:
            centre = self.sole_centre[n]
            cop[n] = np.array([(1 - back) * (x - self.sole_x[n]) + back * centre[0],
                               (1 - back) * 0.0 + back * centre[1]])
        # postures: the arms towards the table with the hands, then leaned; the right arm
        # towards the panel with its hand
        if t < self.t_land:
            posture = self.q_joints + s0 * (self.q_on_table - self.q_joints)
        else:
            posture = self.q_on_table + s * (self.q_leaned - self.q_on_table)
        if t >= self.t_move:
            sp = _sigma((t - self.t_move) / p.to_panel_time)[0]
            posture = posture + sp * (self.q_panel - posture)
        return Reference(stance=self.stance_at(t), com=com, com_vel=vel, com_acc=acc,
                         feet=hands, q_joints=posture, cop=cop)


__all__ = ["HAND_SUPPORT", "MultiContactBehavior", "MultiContactParams", "arm_posture"]
