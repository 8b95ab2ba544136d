"""Whole-body prioritized torque control with internal-force control (Sentis, Park, Khatib 2010).

docs/methods.md §4.2. Notation of the paper (A = M, U = S, Γ = τ), with the reaction forces f taken
on the robot (docs/methods.md §1; the paper's F_r is −f, see ``control.grasp``). Every control
step, from the measurement (q, v, wrenches) alone:

0. Start-up blend (our addition, ``control.startup``, ``startup_time``): after a reset, on a
   robot more than 1 cm (CoM) or 1° (base) from its reference, the CoM, posture and base
   targets and the commanded CoPs start from the measured state and reach the reference's
   along a minimum-jerk decay; no angular-momentum task meanwhile.
   Support set (``control.contact_set``): the reference's stance, with the contact
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
   is the Euclidean one of Ĵ_k = J*_k Φ* T, each level solved by the damped inverse of
   ``linalg.damped_factors_reference`` (exact while the task is independent of those above it, a
   capped gain on the directions that are nearly dependent, ``task_damping``; continuous in the
   data, where a Cholesky solve with a truncated pseudo-inverse fallback stepped the torques
   by 30–50 N·m when a pivot crossed its cut-off). A force row
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

   Load-share moment (our addition, with ``load_share``; ``internal_forces_kernels.
   moment_share``): eq. 82 holds both CoP coordinates of foot 1 and one of foot 2, so the
   moment M = e_12·(m_1 + m_2) the tasks ask of the ground about the line between the
   commanded CoPs (a resultant component Γ_int cannot change) lands on foot 2 alone, whose CoP
   leaves its sole when M is large (a robot leaning back: 55 N·m, a CoP 28 cm off a 22 cm foot).
   Foot 1's CoP-moment references gain α_1 M (u_0, u_1)/(u_0² + u_1²), u = R_1ᵀ e_12, so
   that e_12·m_k = α_k M: both CoPs move together.
5. Torque continuity at a change of support (our addition): the tasks' solution changes with
   the constrained space, so the difference to the last applied torques at the change decays
   along σ over ``transition_time`` (measured: ≤ 0.2 N·m per 1 ms step across a hand landing
   and leaving, against > 60 N·m without, ``test_wbc_multicontact``); a released body's pose
   target is blended from where it was released. τ clamped to the effort limits.

Stages 1–4 run as one compiled call (``wbc_kernels.wbc_step``) on the arrays pinocchio's
``computeAllTerms`` leaves in its Data; the Python layer turns the reference into the step's
tables (``_plan``) and reads the torques back. ``compiled = False`` runs the same tables
through the numpy/pinocchio stages (``wbc_stages``, ``linalg``), the reference the tests
compare the compiled step with. The internal-force reference of no-slip and of unloading
contacts is part of the compiled call.

Gains are checked against their discrete-time stability bounds (``wbc_settings``).
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin

from biped_contact_sim.control import wbc_kernels as wk
from biped_contact_sim.control.base import Controller, ControlOutput, LazyDict, Measurement
from biped_contact_sim.control.contact_set import ContactTransitions, blend_released
from biped_contact_sim.control.internal_forces import InternalForces
from biped_contact_sim.control.internal_forces_kernels import surface_resultant
from biped_contact_sim.control.linalg import constrained_space_reference, task_torques_reference
from biped_contact_sim.control.startup import StartupBlend, heading
from biped_contact_sim.control.wbc_plan import StepTables, drift_from_jacobians
from biped_contact_sim.control.wbc_settings import WBCSettings, check_pd, check_pi
from biped_contact_sim.control.wbc_stages import support_rows, task_rows
from biped_contact_sim.errors import ConfigError, InputError
from biped_contact_sim.jit import entry_point

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


def index_of(idx: np.ndarray) -> slice | np.ndarray:
    """A slice for a contiguous ascending index array (a view, no copy), else the array."""
    idx = np.asarray(idx, dtype=int)
    if idx.size and np.array_equal(idx, np.arange(idx[0], idx[0] + idx.size)):
        return slice(int(idx[0]), int(idx[0]) + idx.size)
    return idx


class WholeBodyController(StepTables, Controller):
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
        self._q_shape, self._v_shape, self._j_shape = (robot.nq,), (robot.nv,), \
            (robot.n_joints,)
        self._vi = index_of(robot.v_idx)
        self._qi = index_of(robot.q_idx)
        self._base_frame = robot.model.getFrameId(robot.base_link)
        self._R_base_ref = np.eye(3)
        self._g = float(np.linalg.norm(robot.model.gravity.linear))
        self._stances: dict[tuple[str, ...], tuple] = {}  # reference stance → sorted, bodies
        self.transitions = ContactTransitions(
            [b.name for b in robot.contact_bodies], s.add_force, s.release_force,
            s.unload_time, s.transition_time,
            surfaces={b.name: (self._sole_centre[b.name][:2],
                               0.5 * (b.offsets.max(axis=0) - b.offsets.min(axis=0))[:2])
                      for b in robot.contact_bodies},
            add_cop_fraction=s.add_cop_fraction, add_hold=s.add_hold)
        self.internal = InternalForces(s, self.dt, self.transitions, self._sole_centre, self._g)
        self._static_tables()
        #: stages 1–4 as one compiled call (``wbc_kernels.wbc_step``); False: the numpy stages
        self.compiled = (self._oMf is not None and self._j0 is not None
                         and drift_from_jacobians(robot.model))
        #: ``wbc_step``'s entry (``jit.entry_point``: every argument is built here, of the
        #: declared types), loaded at the first compiled step
        self._step_entry = None
        #: the start-up blend from the measured state (``control.startup``)
        self.startup = StartupBlend(
            s.startup_time, self._base_frame if s.kp_base > 0 else None, self._qi,
            {b.name: (b.offsets.min(axis=0)[:2], b.offsets.max(axis=0)[:2])
             for b in robot.contact_bodies}, self._sole_centre)
        self.reset()

    def reset(self) -> None:
        """Forget the integrals, the support set and its transition ramps; the next step
        starts a start-up blend from the state it measures."""
        self._force_integral: dict[str, float] = {}
        self._tau_prev: np.ndarray | None = None
        self._tau_offset: np.ndarray | None = None
        self._released: dict[str, tuple] = {}  # name → (t, p, R) at its release
        self.transitions.reset()
        self.internal.reset()
        self.startup.reset()

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

    # ------------------------------------------------------------------ control step
    def compute(self, meas: Measurement) -> ControlOutput:
        """Torques for the measurement (module docstring, steps 0–5).

        Raises:
            InputError: q or v has the wrong length, or a reference has the wrong size.
            ConfigError: the reference names an unknown contact body.
        """
        robot, model, data, s = self.robot, self.robot.model, self.data, self.settings
        q, v = meas.q, meas.v
        if not isinstance(q, np.ndarray) or q.dtype != float or not q.flags.c_contiguous:
            q = np.ascontiguousarray(q, float)
        if not isinstance(v, np.ndarray) or v.dtype != float or not v.flags.c_contiguous:
            v = np.ascontiguousarray(v, float)
        if q.shape != self._q_shape or v.shape != self._v_shape:
            raise InputError(f"measurement: q must have length {robot.nq} and v {robot.nv}; "
                             f"got {q.shape} and {v.shape}")
        t = meas.t
        # 0. Reference and support set (contact transitions).
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
        joints = self._j_shape
        for x in (ref.q_joints, ref.v_joints, ref.a_joints):
            if x is not None and getattr(x, "shape", None) != joints and np.shape(x) != joints:
                raise InputError(f"joint references must have length {joints[0]}")

        # Robot terms in one pass (computeAllTerms: A, h, the joint Jacobians J and J̇, J_com,
        # the centroidal momentum, the body accelerations at v̇ = 0 that the drifts read), A⁻¹
        # from pinocchio's sparse Cholesky, the frame placements and the CoM's drift.
        pin.computeAllTerms(model, data, q, v)
        pin.cholesky.decompose(model, data)
        Minv = pin.cholesky.computeMinv(model, data)
        pin.updateFramePlacements(model, data)
        pin.centerOfMass(model, data, pin.KinematicLevel.ACCELERATION, False)

        if self.startup.active:  # away from the reference at the start: ease into it
            ref = self.startup.apply(ref, t, q, data, bodies)
        plan = self._plan(ref, t, stance, bodies, requested, meas)
        if self.compiled:
            out = self._compiled_step(Minv, q, v, ref, t, stance, requested, bodies, measured,
                                      cops, plan)
            if out is not None:
                return out
        step = self._reference_step(Minv, q, v, ref, t, stance, bodies, measured, plan)
        return self._output(t, ref, stance, requested, cops, plan[-1], *step)

    def _compiled_step(self, Minv, q, v, ref, t, stance, requested, bodies, measured, cops,
                       plan) -> ControlOutput | None:
        """Steps 1–5 by ``wbc_kernels.wbc_step``. None where the support is singular (the numpy
        path then takes the step and counts its pseudo-inverse)."""
        s = self.settings
        sup, sup_local, tasks, par, post, flags, force_info = plan
        spec, name, ortho, m_int = self._layout(stance, bodies, ref)
        flags[wk.F_ORTHO] = ortho
        scal = np.zeros(wk.N_SCAL)
        scal[wk.S_RAMP] = self.transitions.ramp(t)
        tau_prev = self._tau_prev if self._tau_prev is not None else self._empty
        f_int_user, start, recompute = self._empty, self._empty, False
        unloading, known, unload = 0, 0, self.internal._no_unload
        contact_ok = measured is not None
        has_law = name is not None  # the whole internal-force law in the compiled step
        if has_law:
            labels = (self.internal.eq82_rows(stance, 0)[1] if name == "eq82"
                      else self.internal._linkage[2])
            f_int_user, start, recompute = self.internal.compiled_plan(
                t, ref, stance, m_int, name, labels, contact_ok, self._tau_prev)
            unloading, known, unload = self.internal.compiled_unloading(t, stance)
        if has_law:
            flags[wk.F_HAS_MEAS] = contact_ok
            flags[wk.F_PI_ON] = contact_ok and (s.kp_int > 0 or s.ki_int > 0)
            flags[wk.F_TORQUES_ON] = s.internal_forces
            flags[wk.F_START] = recompute
            if s.load_share and len(stance) == 2:
                flags[wk.F_SHARE] = self._share_inputs(ref, stance, scal)
            if ref.no_slip:
                flags[wk.F_NO_SLIP] = sum(1 << k for k, body in enumerate(stance)
                                          if body in ref.no_slip)
                scal[wk.S_PRELOAD] = ref.preload
            flags[wk.F_UNLOAD], flags[wk.F_UNLOAD_KNOWN] = unloading, known
        flags[wk.F_LAW] = has_law
        if self.startup.rotation is not None:
            flags[wk.F_EASE] = 1
            scal[wk.S_EASE:wk.S_EASE + 9] = self.startup.rotation.ravel()
        flags[wk.F_OFFSET_NEW] = (self.transitions.changed and self._tau_prev is not None
                                  and s.transition_time > 0.0)
        args = (Minv, *self._views, self._oMf, q, v, self._mask, self._fids, self._centres,
                self._consts, self._j0, self._qj0, sup, sup_local, tasks, par, post, flags,
                self._R_base_ref, spec, f_int_user,
                self._no_wrench if measured is None else measured,
                self.internal.integral if has_law else self._empty, tau_prev, start, scal,
                unload)
        step = self._step_entry
        if step is None:
            step = self._step_entry = entry_point(wk.wbc_step)
        code, damped, k82, saturated, has_offset, sizes, out, geo = step(
            *args, self.robot.effort_limit, (self._tau_offset if self._tau_offset is not None
                                             else self._empty), cops)
        if code == 1:
            return None
        if code == 2:
            raise InputError("two commanded CoPs coincide: no tension line between them")
        n, n_s = self._j_shape[0], len(stance)
        tau_cmd = out[:n]
        self._tau_offset = out[n:2 * n] if has_offset else None
        self._tau_prev = tau_cmd
        labels = None
        if has_law:
            if unloading:
                self.internal.keep_unloading(stance, unloading, known, unload)
            n_ref, n_meas, n_alpha, n_start = sizes
            if recompute:
                i = 2 * n + 6 * n_s + 6 * (n_s > 0) + m_int + 2 * n_ref + n_meas + n_alpha
                self.internal._f_int_start = out[i:i + n_start]
            labels = (self.internal.eq82_rows(stance, k82)[1] if name == "eq82"
                      else self.internal._linkage[2])
        else:
            self.internal.no_linkage(stance)
        # The figures of ``info``, built when first read: what they are made of is this
        # step's (``out``, ``geo`` are new arrays of each call; the state read is copied).
        com, com_vel = self._com.copy(), self._vcom.copy()
        stuck = self.transitions.stuck
        integral = self.internal.integral.copy() if has_law else None

        def info() -> dict:
            i = 2 * n
            f_pred, i = out[i:i + 6 * n_s], i + 6 * n_s
            F_com, i = out[i:i + 6 * (n_s > 0)], i + 6 * (n_s > 0)
            law = None
            if has_law:
                F_int, i = out[i:i + m_int], i + m_int
                f_int_ref, f_int_cmd = out[i:i + n_ref], out[i + n_ref:i + 2 * n_ref]
                i += 2 * n_ref
                f_int_meas, i = out[i:i + n_meas], i + n_meas
                alpha = out[i:i + n_alpha]
                law = (f_int_ref, f_int_cmd, f_int_meas if contact_ok else None,
                       alpha if n_alpha else None, F_int, labels, name)
            return self._info(ref, stance, requested, tau_cmd, saturated, damped, force_info,
                              geo[:n_s], f_pred if n_s else None, F_com, geo[n_s:], law, com,
                              com_vel, stuck, integral)

        return ControlOutput(tau_cmd, LazyDict(info))

    def _reference_step(self, Minv, q, v, ref, t, stance, bodies, measured, plan):
        """Stages 1–4 in numpy and pinocchio (``wbc_stages``, ``linalg``): the reference of
        ``_compiled_step``, on the same tables."""
        s, model, data = self.settings, self.robot.model, self.data
        sup, sup_local, tasks, par, post, flags, _ = plan
        vi = self._vi
        n_s = len(bodies)
        # 1. Support rows at the commanded CoPs (eq. 18).
        anchors, origins, rotations, J_s, gamma_s = support_rows(model, data, self._fids, sup,
                                                                 sup_local)
        if flags[wk.F_HEADING] and n_s:  # upright with the stance soles' mean heading
            self._R_base_ref = np.ascontiguousarray(heading(rotations))
            if self.startup.rotation is not None:  # the start-up blend: exp([e ρ₀]×) R_up
                self._R_base_ref = np.ascontiguousarray(
                    self.startup.rotation @ self._R_base_ref)
        h = data.nle.copy()
        J_up, e_up, sizes, i_am, J_force, F_force = task_rows(
            model, data, self._fids, self._consts, tasks, par, self._R_base_ref, h)
        # 2. Constrained dynamics (eqs. 20–26) and Φ* = G Gᵀ, T (eq. 29).
        D, B, a0, f0, G, T, _, fallbacks = constrained_space_reference(Minv, h, J_s, gamma_s, vi,
                                                             s.rcond)
        # the virtual linkage at the commanded CoPs (App. C eq. 82 for two feet, eqs. 12–17
        # for more; rebuilt at every change of support, its rows refilled every step)
        W_com, W_int, labels, name = self.internal.model(stance, anchors, rotations,
                                                         data.com[0].copy())
        # 3. Prioritized tasks (eqs. 27–31); the angular-momentum row (App. B, eqs. 68–74):
        # e_12·L̇_G = e_12·W_com[3:] f = −kd_am e_12·L_G, f = f0 − D Γ.
        w_am, e_am = None, 0.0
        if i_am >= 0:
            e12 = W_int[0, :3]  # (P_2 − P_1)/‖P_2 − P_1‖, the tension row
            w_am = e12 @ W_com[3:]
            e_am = -s.kd_am * (e12 @ data.hg.angular)
        qj, vj = q[self._qi], v[vi]
        e_post = -s.kd_posture * vj
        if flags[wk.F_POST_Q]:
            e_post += s.kp_posture * (post[0] - qj)
        if flags[wk.F_POST_V]:
            e_post += s.kd_posture * post[1]
        if flags[wk.F_POST_A]:
            e_post += post[2]
        tau, damped = task_torques_reference(B, G, T, D, f0, a0, vi, J_up, e_up, sizes, i_am, w_am,
                                             e_am,
                                   e_post, J_force, F_force, s.task_damping)
        fallbacks += damped
        # 4. Internal forces (eqs. 32–43, ``control.internal_forces``).
        law = None
        if W_int is not None:
            d_tau, fallback, f_int_ref, f_int_cmd, f_int_meas, alpha = self.internal.command(
                t, ref, stance, bodies, measured, origins, rotations, anchors, W_com, W_int,
                labels, name, f0, D, G, T, tau, self._tau_prev)
            fallbacks += fallback
            if d_tau is not None:
                tau = tau + d_tau
            law = (f_int_ref, f_int_cmd, f_int_meas, alpha)
        else:
            self.internal.no_linkage(stance)
        if not n_s:
            D = f0 = None
        return tau, fallbacks, anchors, origins, rotations, D, f0, W_com, W_int, labels, name, law

    def _output(self, t, ref, stance, requested, cops, force_info, tau, fallbacks, anchors,
                origins, rotations, D, f0, W_com, W_int, labels, name, law) -> ControlOutput:
        """Step 5 in numpy: torque continuity across a change of support, saturation, the
        figures of ``info`` (the reference of ``wbc_kernels.wbc_step``'s end)."""
        s, robot = self.settings, self.robot
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
        limit = robot.effort_limit
        tau_cmd = np.minimum(np.maximum(tau, -limit), limit)
        self._tau_prev = tau_cmd
        n_s = len(stance)
        f_pred = F_com = None
        if n_s:
            f_pred = f0 - D @ tau_cmd  # eq. 20 at the applied torques
            if W_int is None:  # one contact: the resultant map alone
                W_com = np.empty((6, 6 * n_s))
                surface_resultant(anchors, self.data.com[0].copy(), W_com)
            F_com = W_com @ f_pred
        for k in range(n_s):  # measured CoPs (sole frame → world)
            if cops[k, 2] == 0.0:
                cops[k] = origins[k] + rotations[k] @ cops[k]
        if law is not None:
            law = (*law, W_int @ f_pred, labels, name)
        info = self._info(ref, stance, requested, tau_cmd, int(np.count_nonzero(tau != tau_cmd)),
                          fallbacks, force_info, anchors, f_pred, F_com, cops, law,
                          self._com.copy(), self._vcom.copy(), self.transitions.stuck,
                          None if law is None else self.internal.integral.copy())
        return ControlOutput(tau_cmd, info)

    def _info(self, ref, stance, requested, tau_cmd, saturated, fallbacks, force_info, anchors,
              f_pred, F_com, cops, law, com, com_vel, stuck, integral) -> dict:
        """The torques' diagnostics (``ControlOutput.info``) from the figures of a step."""
        info: dict = {"com": com, "com_vel": com_vel}
        if ref.com is None:
            info["com_ref"], info["com_error"] = None, float("nan")
        else:
            info["com_ref"] = np.array(ref.com, float)
            d = info["com_ref"] - com
            info["com_error"] = math.sqrt(d @ d)
        info["saturated"] = int(saturated)
        info["fallbacks"] = int(fallbacks)
        info["stance"] = stance
        if stance != requested or stuck:
            info["requested_stance"] = requested
            info["stuck"] = stuck
        if force_info:
            info["force_tasks"] = force_info
        info["cop_refs"] = anchors
        if f_pred is not None:
            info["wrenches_pred"] = f_pred
            info["f_com_pred"] = F_com
        info["cops"] = cops
        if law is not None:
            f_int_ref, f_int_cmd, f_int_meas, alpha, F_int, labels, name = law
            info["load_share"] = alpha
            info["f_int_ref"] = f_int_ref
            info["f_int_cmd"] = f_int_cmd
            info["f_int_pred"] = F_int
            info["f_int"] = f_int_meas if f_int_meas is not None else np.full(len(F_int), np.nan)
            info["f_int_labels"] = labels
            info["int_integral"] = integral
            if name == "eq82":
                info["tension_ref"] = float(f_int_ref[0])
                info["tension"] = float(info["f_int"][0])
        return info

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
        n_s = len(stance)
        out = np.empty((n_s, 6))
        cops = np.empty((n_s, 3))
        cops.fill(np.nan)
        ok = True
        wrenches, least = meas.wrenches, self.settings.min_normal_force
        for k in range(n_s):
            w = wrenches.get(stance[k])
            if w is None or w[2] < least:
                ok = False
                continue
            out[k] = w
            cops[k, 0], cops[k, 1], cops[k, 2] = -w[4] / w[2], w[3] / w[2], 0.0
        return (out if ok else None), cops


TORSO_FRAME = "torso"  # the upper body's link (kp_torso)


__all__ = ["WBCSettings", "WholeBodyController"]
