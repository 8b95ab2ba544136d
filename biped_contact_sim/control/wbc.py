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
   is the Euclidean one of Ĵ_k = J*_k Φ* T, each level solved by the damped inverse of
   ``linalg.damped_factors`` (exact while the task is independent of those above it, a capped
   gain on the directions that are nearly dependent, ``task_damping``; continuous in the
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
5. Torque continuity at a change of support (our addition): the tasks' solution changes with
   the constrained space, so the difference to the last applied torques at the change decays
   along σ over ``transition_time`` (measured: ≤ 0.2 N·m per 1 ms step across a hand landing
   and leaving, against > 60 N·m without, ``test_wbc_multicontact``); a released body's pose
   target is blended from where it was released. τ clamped to the effort limits.

Stages 1–4 run as one compiled call (``wbc_kernels.wbc_step``) on the arrays pinocchio's
``computeAllTerms`` leaves in its Data; the Python layer turns the reference into the step's
tables (``_plan``) and reads the torques back. ``compiled = False`` runs the same tables
through the numpy/pinocchio stages (``wbc_stages``, ``linalg``), the reference the tests
compare the compiled step with. Where the internal-force reference needs a numpy step (a
contact being unloaded, a no-slip contact), the compiled call stops after stage 3 and
``InternalForces.command`` finishes with the compiled law.

Gains are checked against their discrete-time stability bounds (``wbc_settings``).
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin

from biped_contact_sim.control import wbc_kernels as wk
from biped_contact_sim.control.base import Controller, ControlOutput, Measurement
from biped_contact_sim.control.body_tasks import target_rotation
from biped_contact_sim.control.contact_set import ContactTransitions, blend_released
from biped_contact_sim.control.grasp import NORMAL_FORCE
from biped_contact_sim.control.internal_forces import InternalForces
from biped_contact_sim.control.kernels import surface_resultant
from biped_contact_sim.control.linalg import constrained_space, task_torques
from biped_contact_sim.control.wbc_settings import WBCSettings, check_pd, check_pi
from biped_contact_sim.control.wbc_stages import support_rows, task_rows
from biped_contact_sim.errors import ConfigError, InputError

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


def index_of(idx: np.ndarray) -> slice | np.ndarray:
    """A slice for a contiguous ascending index array (a view, no copy), else the array."""
    idx = np.asarray(idx, dtype=int)
    if idx.size and np.array_equal(idx, np.arange(idx[0], idx[0] + idx.size)):
        return slice(int(idx[0]), int(idx[0]) + idx.size)
    return idx


def frame_placements_view(model, data) -> np.ndarray | None:
    """A read-only (nframes, 12) view of ``data.oMf`` (each row: R column-major, then the
    translation), or None where pinocchio's layout is not the one checked here.

    pinocchio keeps the frame placements in one aligned vector of SE3 (9 + 3 doubles, 96
    bytes each) and returns each rotation as a view into it; a view of the whole vector saves
    a Python call per frame and step. Checked against ``data.oMf`` after a random placement,
    so that a pinocchio laying them out otherwise gets the numpy path.
    """
    n = model.nframes
    first = data.oMf[0].rotation
    if n < 2 or not first.flags.f_contiguous:
        return None
    base = first.__array_interface__["data"][0]
    stride = data.oMf[1].rotation.__array_interface__["data"][0] - base
    view = np.lib.stride_tricks.as_strided(first, shape=(n, 12), strides=(stride, 8),
                                           writeable=False)
    q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
    pin.framesForwardKinematics(model, data, q)
    for k in range(n):
        oMf = data.oMf[k]
        if oMf.rotation.__array_interface__["data"][0] != base + k * stride \
                or not np.array_equal(view[k, :9], oMf.rotation.ravel(order="F")) \
                or not np.array_equal(view[k, 9:], oMf.translation):
            return None
    return view


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
        self.compiled = self._oMf is not None and self._j0 is not None
        self.reset()

    def _static_tables(self) -> None:
        """The step's constant tables: frame slots (contact bodies, base, torso), the columns
        that move each slot's frame, sole centres, gains; pinocchio's arrays as views."""
        robot, s, data = self.robot, self.settings, self.data
        model = robot.model
        frames = [b.frame_id for b in robot.contact_bodies] + [self._base_frame]
        if s.kp_torso > 0:
            frames.append(self._torso_frame)
        self._slot = {b.name: k for k, b in enumerate(robot.contact_bodies)}
        self._base_slot = len(robot.contact_bodies)
        self._torso_slot = self._base_slot + 1
        self._fids = np.array(frames, dtype=np.int64)
        self._mask = np.zeros((len(frames), model.nv), dtype=bool)
        for k, fid in enumerate(frames):  # columns of the joints supporting the frame's joint
            for j in model.supports[model.frames[fid].parentJoint]:
                if j > 0:
                    self._mask[k, model.idx_vs[j]:model.idx_vs[j] + model.nvs[j]] = True
        self._centres = np.zeros((len(frames), 3))
        for b in robot.contact_bodies:
            self._centres[self._slot[b.name]] = self._sole_centre[b.name]
        consts = np.zeros(wk.N_CONSTS)
        consts[[wk.C_KP_COM, wk.C_KD_COM, wk.C_KP_POST, wk.C_KD_POST, wk.C_KD_AM, wk.C_RCOND,
                wk.C_DAMP, wk.C_KP_INT, wk.C_KI_DT, wk.C_INT_LIMIT, wk.C_G]] = (
            s.kp_com, s.kd_com, s.kp_posture, s.kd_posture, s.kd_am, s.rcond, s.task_damping,
            s.kp_int, s.ki_int * self.dt, s.int_limit, self._g)
        self._consts = consts
        # the compiled step takes the actuated coordinates as v[j0:], q[qj0:]
        vi, qi = self._vi, self._qi
        contiguous = (isinstance(vi, slice) and vi.stop == robot.nv and isinstance(qi, slice)
                      and qi.stop == robot.nq)
        self._j0 = vi.start if contiguous else None
        self._qj0 = qi.start if contiguous else None
        self._oMf = frame_placements_view(model, data)
        self._views = (data.nle, data.J, data.dJ, data.Jcom, data.com[0], data.vcom[0],
                       data.acom[0], data.hg.angular)
        self._empty = np.zeros(0)
        self._no_wrench = np.zeros((0, 6))
        self._no_spec = np.zeros((0, 3), dtype=np.int64)
        self._post = np.zeros((3, robot.n_joints))

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
        if q.shape != (robot.nq,) or v.shape != (robot.nv,):
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
        n = robot.n_joints
        for x in (ref.q_joints, ref.v_joints, ref.a_joints):
            if x is not None and np.shape(x) != (n,):
                raise InputError(f"joint references must have length {n}")

        # Robot terms in one pass (computeAllTerms: A, h, the joint Jacobians J and J̇, J_com,
        # the centroidal momentum, the body accelerations at v̇ = 0 that the drifts read), A⁻¹
        # from pinocchio's sparse Cholesky, the frame placements and the CoM's drift.
        pin.computeAllTerms(model, data, q, v)
        pin.cholesky.decompose(model, data)
        Minv = pin.cholesky.computeMinv(model, data)
        pin.updateFramePlacements(model, data)
        pin.centerOfMass(model, data, pin.KinematicLevel.ACCELERATION, False)

        plan = self._plan(ref, t, stance, bodies, requested, meas)
        if self.compiled:
            step = self._compiled_step(Minv, q, v, ref, t, stance, bodies, measured, plan)
        else:
            step = None
        if step is None:
            step = self._reference_step(Minv, q, v, ref, t, stance, bodies, measured, plan)
        tau, fallbacks, anchors, origins, rotations, D, f0, W_com, W_int, labels, name, law = step
        return self._output(t, ref, stance, requested, bodies, tau, fallbacks, anchors, origins,
                            rotations, D, f0, W_com, W_int, labels, name, law, cops, plan[-1])

    def _plan(self, ref, t: float, stance, bodies, requested, meas: Measurement) -> tuple:
        """The step's tables (``wbc_kernels`` layout) from the reference: the support slots and
        commanded CoPs (body frames), the task table in priority order — CoM ≻ [angular
        momentum, double support] ≻ bodies outside the support (pose; force/position) ≻ base ≻
        torso — with its targets, the posture references; and the force tasks' figures."""
        s, data = self.settings, self.data
        n_s = len(bodies)
        sup = np.array([self._slot[b.name] for b in bodies], dtype=np.int64)
        sup_local = np.empty((n_s, 3))
        for k, b in enumerate(bodies):
            cop = ref.cop.get(b.name)
            if cop is None:
                sup_local[k] = self._sole_centre[b.name]
            else:
                sup_local[k] = (cop[0], cop[1], 0.0)
        # bodies outside the support with a task: pose targets (swing feet, reaching hands; a
        # requested body not yet loaded keeps its target, or is damped), force/position tasks
        pose_tasks, force_tasks = [], []
        for name in requested:
            if name not in stance:
                pose_tasks.append((self._bodies[name], ref.feet.get(name)))
        for name, target in ref.feet.items():
            if name in stance or name in requested:
                continue
            body = self._body(name)
            (force_tasks if target.normal is not None else pose_tasks).append((body, target))
        am = n_s == 2 and s.am_task
        kinds = ([wk.COM] if ref.com is not None else []) + ([wk.AM] if am else []) \
            + [wk.POSE] * len(pose_tasks) + [wk.FORCE] * len(force_tasks) \
            + ([wk.ORIENT] if s.kp_base > 0 else []) + ([wk.ORIENT] if s.kp_torso > 0 else [])
        tasks = np.zeros((len(kinds), 2), dtype=np.int64)
        tasks[:, 0] = kinds
        par = np.zeros((len(kinds), wk.PAR))
        k = 0
        if ref.com is not None:
            par[0, wk.P_P:wk.P_P + 3] = ref.com
            if ref.com_vel is not None:
                par[0, wk.P_V:wk.P_V + 3] = ref.com_vel
            if ref.com_acc is not None:
                par[0, wk.P_A:wk.P_A + 3] = ref.com_acc
            k = 1
        k += am
        for body, target in pose_tasks:
            self._pose_par(tasks[k], par[k], body, self._blend(body.name, target, t))
            k += 1
        force_info = {}
        for body, target in force_tasks:
            self._pose_par(tasks[k], par[k], body, self._blend(body.name, target, t))
            n_hat = np.asarray(target.normal, float)
            n_hat = n_hat / math.sqrt(n_hat @ n_hat)
            par[k, wk.P_N:wk.P_N + 3] = n_hat
            # F: the commanded reaction; the task applies the operational force −F n on the
            # body (``task_torques``), pushing it into its surface
            par[k, wk.P_F], force_info[body.name] = self._normal_force(body, target, n_hat,
                                                                       meas, data)
            w = meas.wrenches.get(body.name)
            if w is not None and w[2] > 0.0:  # a known external force on the robot
                par[k, wk.P_WR:wk.P_WR + 6] = w
                par[k, wk.P_HASW] = 1.0
            k += 1
        for slot, kp, kd, on in ((self._base_slot, s.kp_base, s.kd_base, s.kp_base > 0),
                                 (self._torso_slot, s.kp_torso, s.kd_torso, s.kp_torso > 0)):
            if on:  # base: upright with the stance's heading; torso: the same (our addition)
                tasks[k, 1] = slot
                par[k, wk.P_KP], par[k, wk.P_KD] = kp, kd
                k += 1
        post = self._post
        flags = np.zeros(wk.N_FLAGS, dtype=np.int64)
        for row, (i, x) in enumerate(((wk.F_POST_Q, ref.q_joints), (wk.F_POST_V, ref.v_joints),
                                      (wk.F_POST_A, ref.a_joints))):
            if x is not None:
                post[row] = x
                flags[i] = 1
        flags[wk.F_HEADING] = int(s.kp_base > 0)
        return sup, sup_local, tasks, par, post, flags, force_info

    def _pose_par(self, task: np.ndarray, par: np.ndarray, body, target) -> None:
        """A pose task's slot, gains and target (``body_tasks``: no target, only damped)."""
        s = self.settings
        task[1] = self._slot[body.name]
        par[wk.P_KP], par[wk.P_KD] = s.kp_foot, s.kd_foot
        if target is None:
            return
        par[wk.P_HAS] = 1.0
        par[wk.P_P:wk.P_P + 3] = target.p
        par[wk.P_V:wk.P_V + 3] = target.v
        par[wk.P_A:wk.P_A + 3] = target.a
        par[wk.P_R:wk.P_R + 9] = target_rotation(target).ravel()
        if target.omega is not None:
            par[wk.P_W:wk.P_W + 3] = target.omega
        if target.alpha is not None:
            par[wk.P_AL:wk.P_AL + 3] = target.alpha

    def _layout(self, stance, bodies, ref) -> tuple:
        """(row specs (n_s ≥ 3; eq. 82's are chosen in the step), model name, orthogonalize,
        m_int) of the virtual linkage, for the compiled step."""
        n_s = len(stance)
        if n_s < 2:
            return self._no_spec, None, 0, 0
        if n_s == 2:
            return self._no_spec, "eq82", 0, 6
        data = self.data
        if self.internal._linkage is None or self.internal._linkage[0] != stance:
            anchors, rotations = [], []
            for b in bodies:  # the anchors, for the layout chosen at a change of support
                cop = ref.cop.get(b.name)
                local = self._sole_centre[b.name] if cop is None else np.array([*cop[:2], 0.0])
                oMs = data.oMf[b.frame_id]
                anchors.append(oMs.translation + oMs.rotation @ local)
                rotations.append(oMs.rotation.copy())
            self.internal.general_rows(stance, np.array(anchors), np.array(rotations),
                                       data.com[0].copy())
        spec = self.internal._spec = self.internal._linkage[1]
        ortho = int(n_s > 3 and bool((spec[:, 0] == NORMAL_FORCE).any()))
        return spec, "general", ortho, len(spec)

    def _compiled_step(self, Minv, q, v, ref, t, stance, bodies, measured, plan):
        """Stages 1–4 by ``wbc_kernels.wbc_step`` (the internal-force law too unless its
        reference needs a numpy step); None where the support is singular (the numpy path then
        takes the step and counts its pseudo-inverse)."""
        s = self.settings
        sup, sup_local, tasks, par, post, flags, _ = plan
        spec, name, ortho, m_int = self._layout(stance, bodies, ref)
        flags[wk.F_ORTHO] = ortho
        scal = np.zeros(wk.N_SCAL)
        tau_prev = self._tau_prev if self._tau_prev is not None else self._empty
        mode, f_int_user, start, recompute = 0, self._empty, self._empty, False
        contact_ok = measured is not None
        if name is not None:
            labels = (self.internal.eq82_rows(stance, 0)[1] if name == "eq82"
                      else self.internal._linkage[2])
            mode, f_int_user, start, recompute = self.internal.compiled_plan(
                t, ref, stance, m_int, name, labels, contact_ok, self._tau_prev)
            if mode == 2:
                f_int_user, start = self._empty, self._empty
        if mode == 1:
            flags[wk.F_HAS_MEAS] = contact_ok
            flags[wk.F_PI_ON] = contact_ok and (s.kp_int > 0 or s.ki_int > 0)
            flags[wk.F_TORQUES_ON] = s.internal_forces
            flags[wk.F_START] = recompute
            scal[wk.S_RAMP] = self.transitions.ramp(t)
            if s.load_share and len(stance) == 2:
                flags[wk.F_SHARE] = self._share_inputs(ref, stance, scal)
        flags[wk.F_LAW] = mode
        h, J, dJ, Jcom, com, vcom, acom, L_G = self._views
        integral = self.internal.integral if mode == 1 else self._empty
        (code, tau, damped, anchors, origins, rotations, D, f0, G, T, W_com, W_int, k82, _,
         f_int_ref, f_int_cmd, f_int_meas, alpha, start) = wk.wbc_step(
            Minv, h, J, dJ, Jcom, com, vcom, acom, L_G, self._oMf, q, v, self._mask,
            self._fids, self._centres, self._consts, self._j0, self._qj0, sup, sup_local, tasks,
            par, post, flags, self._R_base_ref, spec, f_int_user,
            self._no_wrench if measured is None else measured, integral, tau_prev, start, scal)
        if code == 1:
            return None
        if code == 2:
            raise InputError("two commanded CoPs coincide: no tension line between them")
        labels = None
        if name == "eq82":
            labels = self.internal.eq82_rows(stance, k82)[1]
        elif name is not None:
            labels = self.internal._linkage[2]
        law = None
        if mode == 1:
            if recompute:
                self.internal._f_int_start = start
            law = (f_int_ref, f_int_cmd, f_int_meas if contact_ok else None,
                   alpha if alpha.size else None)
        elif mode == 2:
            d_tau, fallback, f_int_ref, f_int_cmd, f_int_meas, alpha = self.internal.command(
                t, ref, stance, bodies, measured, origins, rotations, anchors, W_com, W_int,
                labels, name, f0, D, G, T, tau, self._tau_prev)
            damped += fallback
            if d_tau is not None:
                tau = tau + d_tau
            law = (f_int_ref, f_int_cmd, f_int_meas, alpha)
        else:
            self.internal.no_linkage(stance)
            W_com = W_int = None
        if not len(stance):
            D = f0 = None
        return (tau, damped, anchors, origins, rotations, D, f0, W_com, W_int, labels, name,
                law)

    def _share_inputs(self, ref, stance, scal: np.ndarray) -> int:
        """Load-share mode of the compiled step (``ctc.reference_load_shares``): 1 planned
        (α_2 in scal), 2 from the reference's cart-table ZMP (its CoM and acceleration in
        scal), 0 none.

        Raises:
            ConfigError: ``Reference.load_share`` lacks a stance foot.
        """
        if ref.load_share is not None:
            try:
                scal[wk.S_A2] = float(ref.load_share[stance[1]])
            except KeyError:
                raise ConfigError(f"Reference.load_share names {sorted(ref.load_share)}; "
                                  f"it needs the stance foot {stance[1]!r}") from None
            return 1
        if ref.com is None or ref.com_acc is None:
            return 0
        scal[wk.S_CX:wk.S_CX + 3] = ref.com
        scal[wk.S_AX:wk.S_AX + 3] = ref.com_acc
        return 2

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
            x_axis = rotations[:, :, 0].sum(axis=0)
            self._R_base_ref = np.ascontiguousarray(
                pin.rpy.rpyToMatrix(0.0, 0.0, math.atan2(x_axis[1], x_axis[0])))
        h = data.nle.copy()
        J_up, e_up, sizes, i_am, J_force, F_force = task_rows(
            model, data, self._fids, self._consts, tasks, par, self._R_base_ref, h)
        # 2. Constrained dynamics (eqs. 20–26) and Φ* = G Gᵀ, T (eq. 29).
        D, B, a0, f0, G, T, _, fallbacks = constrained_space(Minv, h, J_s, gamma_s, vi,
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
        tau, damped = task_torques(B, G, T, D, f0, a0, vi, J_up, e_up, sizes, i_am, w_am, e_am,
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

    def _output(self, t, ref, stance, requested, bodies, tau, fallbacks, anchors, origins,
                rotations, D, f0, W_com, W_int, labels, name, law, cops, force_info):
        """Step 5: torque continuity across a change of support, saturation, diagnostics."""
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
        data = self.data
        com = data.com[0].copy()
        info: dict = {"com": com, "com_vel": data.vcom[0].copy()}
        if ref.com is None:
            info["com_ref"], info["com_error"] = None, float("nan")
        else:
            info["com_ref"] = np.array(ref.com, float)
            d = info["com_ref"] - com
            info["com_error"] = math.sqrt(d @ d)
        info["saturated"] = int(np.count_nonzero(tau != tau_cmd))
        info["fallbacks"] = int(fallbacks)
        info["stance"] = stance
        if stance != requested or self.transitions.stuck:
            info["requested_stance"] = requested
            info["stuck"] = self.transitions.stuck
        if force_info:
            info["force_tasks"] = force_info
        info["cop_refs"] = anchors
        n_s = len(stance)
        if n_s:
            f_pred = f0 - D @ tau_cmd  # eq. 20 at the applied torques
            info["wrenches_pred"] = f_pred
            if W_com is None or W_int is None:
                W_com = np.empty((6, 6 * n_s))
                surface_resultant(anchors, com, W_com)
            info["f_com_pred"] = W_com @ f_pred
        for k in range(n_s):  # measured CoPs (sole frame → world)
            if cops[k, 2] == 0.0:
                cops[k] = origins[k] + rotations[k] @ cops[k]
        info["cops"] = cops
        if law is not None:
            f_int_ref, f_int_cmd, f_int_meas, alpha = law
            info["load_share"] = alpha
            info["f_int_ref"] = f_int_ref
            info["f_int_cmd"] = f_int_cmd
            info["f_int_pred"] = W_int @ f_pred
            info["f_int"] = (f_int_meas if f_int_meas is not None
                             else np.full(W_int.shape[0], np.nan))
            info["f_int_labels"] = labels
            info["int_integral"] = self.internal.integral.copy()
            if name == "eq82":
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


TORSO_FRAME = "torso"  # the upper body's link (kp_torso)


__all__ = ["WBCSettings", "WholeBodyController"]
