"""Whole-body prioritized torque control with internal-force control (Sentis, Park, Khatib 2010).

docs/methods.md §4.2. Notation of the paper (A = M, U = S, Γ = τ), with the reaction forces f taken
on the robot (docs/methods.md §1; the paper's F_r is −f, see ``control.grasp``). Every control
step, from the measurement (q, v, wrenches) alone:

0. Support set (``control.contact_set``): the reference's stance, with the contact
   transitions — a requested body (foot, hand) joins at ``add_force`` measured normal force,
   a dropped one is unloaded over ``unload_time`` first; the virtual linkage is rebuilt at
   every change.
1. Support Jacobian at the commanded CoPs P_k of the n_s support bodies (eq. 18), 6 rows each
   ``[ṗ_Pk; ω_k] = J_s v`` (LOCAL_WORLD_ALIGNED), drift γ_s = J̇_s v; rigid contacts (eq. 19).
2. Dynamically consistent inverse and null space (eqs. 21, 26):
       Λ_s = (J_s A⁻¹ J_sᵀ)⁻¹,  J̄_s = A⁻¹ J_sᵀ Λ_s,  N_s = I − J̄_s J_s.
   Reaction forces and constrained dynamics (eqs. 20, 25, App. A):
       f = −J̄_sᵀ Uᵀ Γ + J̄_sᵀ h − Λ_s γ_s,
       v̇ = N_s A⁻¹ Uᵀ Γ + v̇₀,   v̇₀ = −N_s A⁻¹ h − J̄_s γ_s      (A⁻¹ N_sᵀ = N_s A⁻¹).
3. Prioritized tasks (eqs. 27–31): constraints ≻ CoM ≻ [double support: angular momentum
   about the CoP line] ≻ bodies outside the support (pose of swing feet and reaching hands;
   the unified force/position task of a hand pressing on a surface, §V-A: motion along the
   surface and orientation, and a force row ``body_tasks``) ≻ base orientation ≻ joint
   posture. With
   Φ* = U N_s A⁻¹ (U N_s)ᵀ and the U N_s-consistent inverse \\overline{U N_s} = A⁻¹(U N_s)ᵀΦ*⁺,
   task k (ẍ_k = J_k v̇ + J̇_k v) has the constrained Jacobian J*_k = J_k \\overline{U N_s}
   (eq. 29), so that ẍ_k = J*_k Φ* Γ + c_k. Recursively, with N*_prec the prioritized null
   space of the tasks above (N* = I at the top):
       J*_{k|prec} = J*_k N*_prec,   Λ*_{k|prec} = (J*_{k|prec} Φ* J*_{k|prec}ᵀ)⁺,
       F_k = Λ*_{k|prec} (ẍ_k,des − c_k − J*_k Φ* Γ_{<k}),   Γ += J*_{k|prec}ᵀ F_k,
       N*_prec ← N*_prec − Φ* J*_{k|prec}ᵀ Λ*_{k|prec} J*_{k|prec}                (eqs. 30–31)
   The two tasks the paper does not list: (a) the ZMP must stay on the line between the foot
   CoPs for all four CoP coordinates to be met (App. B, eq. 74: only three are internal forces),
   which fixes e_12·L̇_G; holding it exactly lets e_12·L_G integrate CoM errors and the body
   spins, so e_12·L_G is damped instead (``kd_am``); (b) the joint posture alone cannot be met
   in support (14 targets, 5 free DoF after the CoM), and its least-squares compromise pitches
   pelvis and torso; an upright base orientation task ahead of it makes the posture consistent.
   Desired task accelerations are PD laws with feed-forward (eq. 59); the posture task is the
   joint coordinates (Γ_posture of eq. 30, last priority).
   Computed in whitened coordinates (``control.linalg``): Φ* is positive semi-definite of rank
   n − 6(n_s − 1) (its null space: the torques that only change internal forces), factored
   by pivoted Cholesky Φ* = G Gᵀ; with Γ = T y, T = G (GᵀG)⁻¹ (Φ*⁺ = T Tᵀ) the recursion above
   is the Euclidean one of Ĵ_k = J*_k Φ* T, solved by Cholesky while the tasks do not
   conflict (eigen-decomposition pseudo-inverses only as a counted fallback). A force row
   (operational force −F n on a pressing body, F the commanded reaction: reference plus PI
   on the measured one, ``kp_force``, ``ki_force``) acts through J*ᵀ_{f|prec} F in the null
   space of the motion tasks and takes its direction from the posture; that body's measured
   wrench enters the model as a known external force (h ← h − J_bᵀ w_b).
4. Internal forces (n_s ≥ 2; eqs. 32–43; ``control.internal_forces``):
   L* = I − U N_s \\overline{U N_s} = I − Φ*Φ*⁺
   (eq. 33; symmetric here, so equal to I − U N_s (U N_s)⁺), torques Γ = … + L*ᵀ Γ_int (eq. 35),
       F_int = W_int f = J*ᵀ_{i|l} Γ_int + F_int,{t,p} − μ_i − p_i,  J*ᵀ_{i|l} = −W_int J̄_sᵀ Uᵀ L*ᵀ
   (eqs. 38–41 in our sign), inverted by a pseudo-inverse (eq. 42):
       Γ_int = (J*ᵀ_{i|l})⁺ (F_int,cmd − F_int,{t,p} + μ_i + p_i).
   F_int uses the coplanar biped model of App. C, eq. 82 for two feet (``control.grasp``):
   tension between the foot CoPs, three tangential CoP moments (zero ⇔ CoPs at the commanded
   points, i.e. CoP control), two normal moments; for n_s ≥ 3 the general virtual linkage
   (eqs. 10–17, App. D: 3(n_s − 2) edge tensions, 2 n_s CoP moments, n_s normal moments),
   its rows chosen when the support changes. Optional PI feedback on the measured wrenches
   (§IV-E):
       F_int,cmd = F_int,ref + kp_int e + ki_int ∫ e dt,   e = F_int,ref − W_int f_meas,
   with the integral clamped to ``int_limit`` and reset whenever a support body's measured
   normal force drops below ``min_normal_force`` or the support changes (anti-windup, §IV-E).
   Transitions (our addition, ``control.contact_set``): after a change of support F_int,ref
   starts from the internal forces the last applied torques make in the new support and
   reaches the reference along σ over ``transition_time``; a body being unloaded gets the
   F_int,ref closest to the reference that gives it the wrench (1 − σ) w₀ (G⁻¹ of eq. 47).

   Load-share tension (our addition, ``load_share``): a zero tension reference gives both feet
   the same force along e_12 whatever their normal loads, so a foot that has just landed and
   carries nothing is asked for ~20 N of tangential force outside its friction cone (seen on
   ``walk``: the landed sole rolled 0.24 rad and the robot fell). With two stance feet and load
   shares α_k (``ctc.reference_load_shares``: the behaviour's planned shares or the
   reference's cart-table ZMP between the sole centres) the tension reference becomes

       t_12,ref = t_12,ref(Reference.internal) + (α_1 − α_2) F·e_12,

   F the net ground force the tasks command: each foot then carries its own share of the
   force along the foot line (f_k·e_12 = α_k F·e_12 when the reference tension is zero), and
   the commanded tension is a squeeze on top of that split. Standing symmetric (α = ½) it
   adds nothing.
5. Torque continuity at a change of support (our addition): the tasks' solution changes with
   the constrained space, so the difference to the last applied torques at the change decays
   along σ over ``transition_time`` (measured: ≤ 0.2 N·m per 1 ms step across a hand landing
   and leaving, against > 60 N·m without, ``test_wbc_multicontact``); a released body's pose
   target is blended from where it was released. τ clamped to the effort limits.

Gains are checked against their discrete-time stability bounds (``wbc_settings``).
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin

from biped_contact_sim.control.base import Controller, ControlOutput, Measurement
from biped_contact_sim.control.body_tasks import pose_task_rows, tangents
from biped_contact_sim.control.contact_set import (
    ContactTransitions,
    blend_released,
)
from biped_contact_sim.control.internal_forces import InternalForces
from biped_contact_sim.control.kernels import (
    constrained_space,
    point_rows,
    surface_resultant,
    task_torques,
)
from biped_contact_sim.control.linalg import constrained_space as constrained_space_reference
from biped_contact_sim.control.linalg import factor_phi, psd_factor
from biped_contact_sim.control.linalg import task_torques as task_torques_reference
from biped_contact_sim.control.wbc_settings import WBCSettings, check_pd, check_pi
from biped_contact_sim.errors import ConfigError, InputError

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """3-D cross product (np.cross costs ~30 µs per call through its axis handling)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]])


def index_of(idx: np.ndarray) -> slice | np.ndarray:
    """A slice for a contiguous ascending index array (a view, no copy), else the array."""
    idx = np.asarray(idx, dtype=int)
    if idx.size and np.array_equal(idx, np.arange(idx[0], idx[0] + idx.size)):
        return slice(int(idx[0]), int(idx[0]) + idx.size)
    return idx


class WholeBodyController(Controller):
    """Prioritized whole-body torque controller with internal-force control (module docstring).

    Args:
        robot: the ``RobotModel``.
        behavior: reference generator (``stand``, ``sway``, ``walk``, ...).
        dt: control period [s].
        **settings: fields of ``WBCSettings``.

    Raises:
        ConfigError: unknown or invalid settings, or gains outside the discrete-time bounds.
    """

    name = "wbc"
    Settings = WBCSettings

    def __init__(self, robot, behavior, dt: float, **settings):
        super().__init__(robot, behavior, dt, **settings)
        s = self.settings
        if not (np.isfinite(self.dt) and self.dt > 0):
            raise ConfigError(f"dt = {dt!r} must be > 0")
        check_pd(s.kp_com, s.kd_com, self.dt, "kp_com", "kd_com")
        check_pd(s.kp_foot, s.kd_foot, self.dt, "kp_foot", "kd_foot")
        check_pd(s.kp_posture, s.kd_posture, self.dt, "kp_posture", "kd_posture")
        if s.kp_base > 0:
            check_pd(s.kp_base, s.kd_base, self.dt, "kp_base", "kd_base")
        if s.kp_torso > 0:
            check_pd(s.kp_torso, s.kd_torso, self.dt, "kp_torso", "kd_torso")
            if not robot.model.existFrame(TORSO_FRAME):
                raise ConfigError(f"kp_torso > 0 needs a frame {TORSO_FRAME!r}; robot "
                                  f"{robot.name} has none (set kp_torso = 0)")
            self._torso_frame = robot.model.getFrameId(TORSO_FRAME)
        check_pi(s.kp_int, s.ki_int, self.dt, "kp_int", "ki_int")
        check_pi(s.kp_force, s.ki_force, self.dt, "kp_force", "ki_force")
        self.data = robot.create_data()
        self._bodies = {b.name: b for b in robot.contact_bodies}
        self._order = {b.name: k for k, b in enumerate(robot.contact_bodies)}
        # Sole centres (sole frame): the middle of each foot's contact points.
        self._sole_centre = {b.name: 0.5 * (b.offsets.min(axis=0) + b.offsets.max(axis=0))
                             for b in robot.contact_bodies}
        self._no_row = np.zeros(0)
        self._vi = index_of(robot.v_idx)
        self._qi = index_of(robot.q_idx)
        # the compiled constrained dynamics take the actuated coordinates as v[j0:]
        self._j0 = (self._vi.start if isinstance(self._vi, slice) and self._vi.stop == robot.nv
                    else None)
        self._base_frame = robot.model.getFrameId(robot.base_link)
        self._R_base_ref = np.eye(3)
        self._g = float(np.linalg.norm(robot.model.gravity.linear))
        self._stances: dict[tuple[str, ...], tuple] = {}  # reference stance → sorted, bodies
        self._J6, self._drift6 = np.empty((6, robot.nv)), np.empty(6)
        self.transitions = ContactTransitions(
            [b.name for b in robot.contact_bodies], s.add_force, s.release_force,
            s.unload_time, s.transition_time,
            surfaces={b.name: (self._sole_centre[b.name][:2],
                               0.5 * (b.offsets.max(axis=0) - b.offsets.min(axis=0))[:2])
                      for b in robot.contact_bodies},
            add_cop_fraction=s.add_cop_fraction, add_hold=s.add_hold)
        self.internal = InternalForces(s, self.dt, self.transitions, self._sole_centre, self._g)
        self.reset()

    def reset(self) -> None:
        """Forget the integrals, the support set and its transition ramps."""
        self._force_integral: dict[str, float] = {}
        self._tau_prev: np.ndarray | None = None
        self._tau_offset: np.ndarray | None = None
        self._released: dict[str, tuple] = {}  # name → (t, p, R) at its release
        self.transitions.reset()
        self.internal.reset()

    # ------------------------------------------------------------------ kinematics
    def _body(self, name: str):
        if name not in self._bodies:
            raise ConfigError(f"Unknown foot {name!r} in the reference. Contact bodies: "
                              + ", ".join(self._bodies))
        return self._bodies[name]

    def _stance_of(self, names) -> tuple:
        """(stance names in ``robot.contact_bodies`` order, their bodies), cached per stance."""
        key = tuple(names)
        hit = self._stances.get(key)
        if hit is None:
            bodies = [self._body(name) for name in key]
            bodies.sort(key=lambda b: self._order[b.name])
            hit = (tuple(b.name for b in bodies), tuple(bodies))
            self._stances[key] = hit
        return hit

    def _frame_rows(self, frame_id: int, v: np.ndarray, r: np.ndarray, J_out: np.ndarray,
                    drift_out: np.ndarray) -> None:
        """6-D Jacobian and drift of the point at world offset r from a frame's origin (same
        axes), into ``J_out`` (6, nv) and ``drift_out`` (6,) (``kernels.point_rows``)."""
        model, data = self.robot.model, self.data
        point_rows(pin.getFrameJacobian(model, data, frame_id, LWA),
                   pin.getFrameClassicalAcceleration(model, data, frame_id, LWA).vector,
                   v, r, J_out, drift_out)

    # ------------------------------------------------------------------ control step
    def compute(self, meas: Measurement) -> ControlOutput:
        """Torques for the measurement (module docstring, steps 1–5).

        Raises:
            InputError: q or v has the wrong length, or a reference has the wrong size.
            ConfigError: the reference names an unknown contact body.
        """
        robot, model, data, s = self.robot, self.robot.model, self.data, self.settings
        q, v = meas.q, meas.v
        if not isinstance(q, np.ndarray) or q.dtype != float:
            q = np.asarray(q, float)
        if not isinstance(v, np.ndarray) or v.dtype != float:
            v = np.asarray(v, float)
        if q.shape != (robot.nq,) or v.shape != (robot.nv,):
            raise InputError(f"measurement: q must have length {robot.nq} and v {robot.nv}; "
                             f"got {q.shape} and {v.shape}")
        t = meas.t
        ref = self.behavior.reference(t)
        requested, _ = self._stance_of(ref.stance)
        previous = self.transitions.support
        stance = self.transitions.update(t, requested, meas.wrenches)
        stance, bodies = self._stance_of(stance)
        if self.transitions.changed and previous and s.transition_time > 0.0:
            pin.framesForwardKinematics(model, data, q)
            for name in set(previous) - set(stance):  # its pose task starts where it is
                oMs = data.oMf[self._bodies[name].frame_id]
                self._released[name] = (t, oMs.translation.copy(), oMs.rotation.copy())
        measured, cops = self._measured(meas, stance)
        n = robot.n_joints
        for x in (ref.q_joints, ref.v_joints, ref.a_joints):
            if x is not None and np.shape(x) != (n,):
                raise InputError(f"joint references must have length {n}")
        vi = self._vi
        nv, n_s = robot.nv, len(bodies)
        rcond = s.rcond
        fallbacks = 0
        dot = np.dot

        # Robot terms: A⁻¹ (pinocchio's sparse Cholesky of CRBA's A), h = b + g, frame
        # kinematics with v̇ = 0 (classical accelerations = drifts J̇ v), CoM, its Jacobian
        # and drift.
        # One pass (computeAllTerms: A, h, joint Jacobians, J_com, the body accelerations at
        # v̇ = 0 that the frames' drifts read) instead of crba, nonLinearEffects,
        # computeJointJacobians, forwardKinematics and jacobianCenterOfMass each walking the
        # tree; the CoM's drift from those accelerations.
        pin.computeAllTerms(model, data, q, v)
        pin.cholesky.decompose(model, data)
        Minv = pin.cholesky.computeMinv(model, data)
        h = data.nle.copy()
        pin.updateFramePlacements(model, data)
        J_com = data.Jcom
        com = pin.centerOfMass(model, data, pin.KinematicLevel.ACCELERATION, False).copy()
        com_vel, com_drift = data.vcom[0].copy(), data.acom[0]

        # Bodies outside the support with a task: pose targets (swing feet, reaching hands; a
        # requested body not yet loaded keeps its target, or is damped), force/position tasks.
        pose_tasks, force_tasks = [], []
        for name in requested:
            if name not in stance:
                pose_tasks.append((self._bodies[name], ref.feet.get(name)))
        for name, target in ref.feet.items():
            if name in stance or name in requested:
                continue
            body = self._body(name)
            (force_tasks if target.normal is not None else pose_tasks).append((body, target))
        # The measured wrench of a body under a force task acts on the robot: a known external
        # force, h ← h − J_bᵀ w_b (world, about the body frame's origin). Not for a body under
        # a pose task (one pressing towards a surface it is asked to join): its task would then
        # cancel the reaction it causes, and the reaction grow step after step.
        for body, _ in force_tasks:
            w = meas.wrenches.get(body.name)
            if w is not None and w[2] > 0.0:
                R = data.oMf[body.frame_id].rotation
                J = pin.getFrameJacobian(model, data, body.frame_id, LWA)
                h -= dot(J[:3].T, dot(R, w[:3])) + dot(J[3:].T, dot(R, w[3:]))

        # 1. Support Jacobian at the commanded CoPs (eq. 18) and its drift.
        anchors = np.empty((n_s, 3))
        origins = np.empty((n_s, 3))
        rotations = np.empty((n_s, 3, 3))
        J_s = np.empty((6 * n_s, nv))
        gamma_s = np.empty(6 * n_s)
        for k, body in enumerate(bodies):
            oMs = data.oMf[body.frame_id]
            R = rotations[k] = oMs.rotation
            origins[k] = oMs.translation
            cop = ref.cop.get(body.name)
            r = dot(R, self._sole_centre[body.name] if cop is None
                    else np.array([cop[0], cop[1], 0.0]))
            anchors[k] = origins[k] + r
            self._frame_rows(body.frame_id, v, r, J_s[6 * k:6 * k + 6], gamma_s[6 * k:6 * k + 6])

        # 2. Constrained dynamics (eqs. 20–26): f = f0 − D Γ, v̇ = B Γ + a0, and Φ* = U B,
        # positive semi-definite of rank n − 6(n_s − 1) with n_s ≥ 2 surface contacts (its null
        # space: the torques that only change internal forces, eqs. 32–34), as Φ* = G Gᵀ with
        # Φ*⁺ = T Tᵀ, T = G (GᵀG)⁻¹; BT = B T gives task k's Ĵ_k = J_k BT. D, B, a0, f0
        # compiled, the numpy reference (``linalg.constrained_space``) where a pseudo-inverse
        # is needed; G by LAPACK's pivoted Cholesky in both. (A compiled pivoted Cholesky gave
        # another G of the same G Gᵀ, and the Fig. 6 sequence of ``test_wbc_multicontact``
        # then saturated the left shoulder while the right hand was unloaded: the law is not
        # invariant to G → G Q somewhere; not yet found.)
        # The whitening T, the tasks' Ĵ_k and the recursion then run in one compiled call
        # (``kernels.task_torques``) when the support is regular; T = None until then.
        compiled = False
        if self._j0 is not None:
            compiled, D, B, a0, f0 = constrained_space(Minv, h, J_s, gamma_s, self._j0, rcond)
            if compiled:
                G, T = psd_factor(B[vi], rcond), None
        if not compiled:
            D, B, a0, f0, G, T, BT, fallback = constrained_space_reference(
                Minv, h, J_s, gamma_s, vi, rcond)
            fallbacks += fallback

        # Virtual-linkage model at the commanded CoPs (App. C eq. 82 for two feet, eqs. 12–17
        # for more; rebuilt at every change of support, its rows refilled every step).
        W_com, W_int, labels, grasp_name = self.internal.model(stance, anchors, rotations,
                                                               com)

        # 3. Prioritized tasks (eqs. 27–31), each ẍ_k = Φ_k Γ + c_k, in the whitened
        # coordinates y of Γ = T y: ẍ_k = Ĵ_k y + c_k (``control.linalg.prioritized``). The
        # operational tasks are stacked as rows J_k of J_up (nv columns), Ĵ_k = J_k BT and
        # c_k = J_k v̇₀ + γ_k; the angular-momentum row is not a J_k-task and comes apart.
        am = grasp_name == "eq82" and s.am_task
        sizes = ([3] if ref.com is not None else []) + ([1] if am else []) \
            + [6] * len(pose_tasks) + [5] * len(force_tasks) + ([3] if s.kp_base > 0 else []) \
            + ([3] if s.kp_torso > 0 else [])
        m_up = sum(sizes)
        J_up = np.empty((m_up, nv))
        e_up = np.empty(m_up)  # ẍ_des − J̇ v, then − J_k v̇₀
        i = 0
        if ref.com is not None:
            a_des = e_up[0:3]
            np.subtract(ref.com, com, out=a_des)
            a_des *= s.kp_com
            if ref.com_vel is not None:
                a_des += s.kd_com * (ref.com_vel - com_vel)
            else:
                a_des -= s.kd_com * com_vel
            if ref.com_acc is not None:
                a_des += ref.com_acc
            a_des -= com_drift
            J_up[0:3] = J_com
            i = 3
        i_am = i
        if am:
            J_up[i] = 0.0  # its Ĵ row is filled below (J_up is uninitialised memory)
            e_up[i] = 0.0
            i += 1
        for body, target in pose_tasks:
            self._pose_task(body, self._blend(body.name, target, t), v, J_up[i:i + 6],
                            e_up[i:i + 6])
            i += 6
        J_force = np.empty((len(force_tasks), nv))
        F_force = np.empty(len(force_tasks))
        force_info = {}
        for k, (body, target) in enumerate(force_tasks):
            J6, e6 = np.empty((6, nv)), np.empty(6)
            self._pose_task(body, self._blend(body.name, target, t), v, J6, e6)
            n_hat = np.asarray(target.normal, float)
            n_hat = n_hat / np.sqrt(dot(n_hat, n_hat))
            tangent = tangents(n_hat)
            J_up[i:i + 2] = dot(tangent, J6[:3])  # motion along the surface (§V-A)
            e_up[i:i + 2] = dot(tangent, e6[:3])
            J_up[i + 2:i + 5] = J6[3:]
            e_up[i + 2:i + 5] = e6[3:]
            i += 5
            J_force[k] = dot(n_hat, J6[:3])
            F_force[k], force_info[body.name] = self._normal_force(body, target, n_hat, meas, data)
        if s.kp_base > 0:
            # Base (pelvis) orientation held at q0's (posture part of eq. 31): keeps the joint
            # posture task, which cannot be met exactly in support, from pitching the body.
            base_id = self._base_frame
            if n_s:  # heading: the mean of the stance soles' x axes
                x_axis = rotations[:, :, 0].sum(axis=0).tolist()
                self._R_base_ref = pin.rpy.rpyToMatrix(0.0, 0.0, math.atan2(x_axis[1],
                                                                             x_axis[0]))
            self._orientation_rows(base_id, s.kp_base, s.kd_base, J_up[i:i + 3], e_up[i:i + 3])
            i += 3
        if s.kp_torso > 0:
            # Torso upright with the base's heading (our addition, after the base): with a hand
            # in the support, the posture task acts in a few directions only, and the CoM task
            # alone moves the CoM by pitching the heavy torso, which folds the arm.
            self._orientation_rows(self._torso_frame, s.kp_torso, s.kd_torso, J_up[i:i + 3],
                                   e_up[i:i + 3])
        w_am, e_am = None, 0.0
        if am:
            # Angular momentum about the CoP line (App. B, eqs. 68–74). With coplanar feet the
            # four CoP coordinates can sit at their anchors only if the ZMP is on the line
            # P_1P_2, i.e. if the ground moment about that line vanishes; by the centroidal
            # dynamics that moment is e_12·L̇_G + e_12·((G − P_1) × m(c̈ − g)), so with the CoM
            # task met it fixes e_12·L̇_G. Holding that moment at zero exactly lets the
            # angular momentum e_12·L_G integrate any CoM error (L̇ = δ m g, δ the CoM offset
            # from the line) and the body spins; so this task damps it instead,
            #     e_12·L̇_G = e_12·W_com[3:] f = −kd_am e_12·L_G      (L̇_G from eq. 12),
            # which keeps the motion reversible and the dependent CoP coordinate at its anchor
            # up to (z_G m c̈ + kd_am L)·e_12 / f_z. Priority: right after the CoM.
            e12 = W_int[0, :3]  # (P_2 − P_1)/‖P_2 − P_1‖, the tension row
            w_am = dot(e12, W_com[3:])
            L_G = pin.computeCentroidalMomentum(model, data).angular
            e_am = -s.kd_am * dot(e12, L_G)
        qj, vj = q[self._qi], v[vi]
        e_post = -s.kd_posture * vj
        if ref.q_joints is not None:
            e_post += s.kp_posture * (ref.q_joints - qj)
        if ref.v_joints is not None:
            e_post += s.kd_posture * ref.v_joints
        if ref.a_joints is not None:
            e_post += ref.a_joints
        # Force rows push the body into its surface: operational force −F n on the body.
        i_am = i_am if am else -1
        if compiled:
            ok, T, tau, levels = task_torques(
                B, G, D, f0, a0, self._j0, J_up, e_up, np.array(sizes, dtype=np.int64), i_am,
                self._no_row if w_am is None else w_am, e_am, e_post, J_force, F_force, rcond)
            if not ok:  # GᵀG not numerically PD: the eigen-decomposition, counted
                G, T, fallback = factor_phi(B[vi], rcond)
                fallbacks += fallback
        if not compiled or not ok:
            tau, levels = task_torques_reference(B, G, T, D, f0, a0, vi, J_up, e_up, sizes, i_am,
                                                 w_am, e_am, e_post, J_force, F_force, rcond)
        fallbacks += levels
        if not n_s:
            D = f0 = None

        # 4. Internal forces (eqs. 32–43, ``control.internal_forces``).
        info: dict = {}
        f_int_ref = f_int_meas = f_int_cmd = None
        if W_int is not None:
            m_int = W_int.shape[0]
            d_tau, fallback, f_int_ref, f_int_cmd, f_int_meas, info["load_share"] = \
                self.internal.command(t, ref, stance, bodies, measured, origins, rotations,
                                      anchors, W_com, W_int, labels, grasp_name, f0, D, G, T,
                                      tau, self._tau_prev)
            fallbacks += fallback
            if d_tau is not None:
                tau += d_tau
        else:
            self.internal.no_linkage(stance)

        # Torque continuity across a change of support (our addition, ``contact_set``): the
        # tasks' solution changes with the constrained space, so the offset to the last
        # applied torques at the change decays along σ over ``transition_time``.
        if self.transitions.changed and self._tau_prev is not None \
                and s.transition_time > 0.0:
            self._tau_offset = self._tau_prev - tau
        if self._tau_offset is not None:
            ramp = self.transitions.ramp(t)
            if ramp < 1.0:
                tau = tau + (1.0 - ramp) * self._tau_offset
            else:
                self._tau_offset = None

        # 5. Saturation and diagnostics.
        limit = robot.effort_limit
        tau_cmd = np.minimum(np.maximum(tau, -limit), limit)
        self._tau_prev = tau_cmd
        info["com"] = com
        info["com_vel"] = com_vel
        if ref.com is None:
            info["com_ref"], info["com_error"] = None, float("nan")
        else:
            info["com_ref"] = np.array(ref.com, float)
            d = info["com_ref"] - com
            info["com_error"] = float(np.sqrt(dot(d, d)))
        info["saturated"] = int(np.count_nonzero(tau != tau_cmd))
        info["fallbacks"] = fallbacks
        info["stance"] = stance
        if stance != requested or self.transitions.stuck:
            info["requested_stance"] = requested
            info["stuck"] = self.transitions.stuck
        if force_info:
            info["force_tasks"] = force_info
        info["cop_refs"] = anchors
        if n_s:
            f_pred = f0 - dot(D, tau_cmd)  # eq. 20 at the applied torques
            info["wrenches_pred"] = f_pred
            if W_com is None:
                W_com = np.empty((6, 6 * n_s))
                surface_resultant(anchors, com, W_com)
            info["f_com_pred"] = dot(W_com, f_pred)
        for k in range(n_s):  # measured CoPs (sole frame → world)
            if cops[k, 2] == 0.0:
                cops[k] = origins[k] + dot(rotations[k], cops[k])
        info["cops"] = cops
        if W_int is not None:
            info["f_int_ref"] = f_int_ref
            info["f_int_cmd"] = f_int_cmd
            info["f_int_pred"] = dot(W_int, f_pred)
            info["f_int"] = f_int_meas if f_int_meas is not None else np.full(m_int, np.nan)
            info["f_int_labels"] = labels
            info["int_integral"] = self.internal.integral.copy()
            if grasp_name == "eq82":
                info["tension_ref"] = float(f_int_ref[0])
                info["tension"] = float(info["f_int"][0])
        return ControlOutput(tau_cmd, info)

    # ------------------------------------------------------------------ task helpers
    def _blend(self, name: str, target, t: float):
        """A released body's pose target, blended from its pose at the release
        (``contact_set.blend_released``); the reference's own otherwise."""
        released = self._released.get(name)
        if released is None or target is None:
            return target
        blended = blend_released(released, target, t, self.settings.transition_time)
        if blended is None:
            del self._released[name]
            return target
        return blended

    def _orientation_rows(self, frame_id: int, kp: float, kd: float, J_out: np.ndarray,
                          e_out: np.ndarray) -> None:
        """Rows of a frame's orientation task towards ``_R_base_ref`` (upright, the stance's
        heading): J = its angular Jacobian (world axes), e = kp log(R_ref Rᵀ) − kd ω − J̇ v."""
        model, data = self.robot.model, self.data
        J_out[:] = pin.getFrameJacobian(model, data, frame_id, LWA)[3:]
        alpha = pin.getFrameClassicalAcceleration(model, data, frame_id, LWA).angular
        omega = pin.getFrameVelocity(model, data, frame_id, LWA).angular
        e_out[:] = kp * pin.log3(np.dot(self._R_base_ref, data.oMf[frame_id].rotation.T)) \
            - kd * omega - alpha

    def _pose_task(self, body, target, v: np.ndarray, J_out: np.ndarray,
                   e_out: np.ndarray) -> None:
        s = self.settings
        pose_task_rows(self.robot.model, self.data, body.frame_id, v, target, s.kp_foot,
                       s.kd_foot, J_out, e_out)

    def _normal_force(self, body, target, n_hat: np.ndarray, meas: Measurement,
                      data) -> tuple[float, tuple[float, float, float]]:
        """F of a unified force/position task: the commanded normal reaction, the reference
        plus PI feedback on the measured one (``kp_force``, ``ki_force``; the integral is
        reset while the body carries less than ``min_normal_force``). Returns (F, (reference,
        measured, F))."""
        s = self.settings
        F_ref = float(target.force)
        w = meas.wrenches.get(body.name)
        F_meas = float("nan")
        F = F_ref
        if w is not None:
            F_meas = float(np.dot(n_hat, np.dot(data.oMf[body.frame_id].rotation, w[:3])))
        if w is not None and F_meas >= s.min_normal_force:
            e = F_ref - F_meas
            integral = self._force_integral.get(body.name, 0.0) + s.ki_force * self.dt * e
            integral = min(max(integral, -s.int_limit), s.int_limit)
            self._force_integral[body.name] = integral
            F += s.kp_force * e + integral
        else:
            self._force_integral.pop(body.name, None)
        return F, (F_ref, F_meas, F)

    def _measured(self, meas: Measurement, stance) -> tuple[np.ndarray | None, np.ndarray]:
        """Measured sole wrenches of the stance bodies, (n_s, 6), or None if one is missing or
        carries less than ``min_normal_force``; and their CoPs in the sole frames
        (−τ_y/f_z, τ_x/f_z, 0) (Sentis eqs. 6–7), NaN where unloaded."""
        out = np.empty((len(stance), 6))
        cops = np.full((len(stance), 3), np.nan)
        ok = True
        for k, name in enumerate(stance):
            w = meas.wrenches.get(name)
            if w is None or w[2] < self.settings.min_normal_force:
                ok = False
                continue
            out[k] = w
            cops[k] = (-w[4] / w[2], w[3] / w[2], 0.0)
        return (out if ok else None), cops


_ZERO3 = np.zeros(3)
TORSO_FRAME = "torso"  # the upper body's link (kp_torso)


__all__ = ["WBCSettings", "WholeBodyController"]
