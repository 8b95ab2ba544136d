"""Whole-body prioritized torque control with internal-force control (Sentis, Park, Khatib 2010).

docs/methods.md §4.2. Notation of the paper (A = M, U = S, Γ = τ), with the reaction forces f taken
on the robot (docs/methods.md §1; the paper's F_r is −f, see ``control.grasp``). Every control
step, from the measurement (q, v, wrenches) alone:

1. Support Jacobian at the commanded CoPs P_k of the stance feet (eq. 18), 6 rows per foot
   ``[ṗ_Pk; ω_k] = J_s v`` (LOCAL_WORLD_ALIGNED), drift γ_s = J̇_s v; rigid contacts (eq. 19).
2. Dynamically consistent inverse and null space (eqs. 21, 26):
       Λ_s = (J_s A⁻¹ J_sᵀ)⁻¹,  J̄_s = A⁻¹ J_sᵀ Λ_s,  N_s = I − J̄_s J_s.
   Reaction forces and constrained dynamics (eqs. 20, 25, App. A):
       f = −J̄_sᵀ Uᵀ Γ + J̄_sᵀ h − Λ_s γ_s,
       v̇ = N_s A⁻¹ Uᵀ Γ + v̇₀,   v̇₀ = −N_s A⁻¹ h − J̄_s γ_s      (A⁻¹ N_sᵀ = N_s A⁻¹).
3. Prioritized tasks (eqs. 27–31): constraints ≻ CoM ≻ [double support: angular momentum
   about the CoP line] ≻ swing foot ≻ base orientation ≻ joint posture. With
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
4. Internal forces (double support; eqs. 32–43): L* = I − U N_s \\overline{U N_s} = I − Φ*Φ*⁺
   (eq. 33; symmetric here, so equal to I − U N_s (U N_s)⁺), torques Γ = … + L*ᵀ Γ_int (eq. 35),
       F_int = W_int f = J*ᵀ_{i|l} Γ_int + F_int,{t,p} − μ_i − p_i,  J*ᵀ_{i|l} = −W_int J̄_sᵀ Uᵀ L*ᵀ
   (eqs. 38–41 in our sign), inverted by a pseudo-inverse (eq. 42):
       Γ_int = (J*ᵀ_{i|l})⁺ (F_int,cmd − F_int,{t,p} + μ_i + p_i).
   F_int uses the coplanar biped model of App. C, eq. 82 (``control.grasp``): tension between
   the foot CoPs, three tangential CoP moments (zero ⇔ CoPs at the commanded points, i.e. CoP
   control), two normal moments. Optional PI feedback on the measured wrenches (§IV-E):
       F_int,cmd = F_int,ref + kp_int e + ki_int ∫ e dt,   e = F_int,ref − W_int f_meas,
   with the integral clamped to ``int_limit`` and reset whenever a stance foot's measured normal
   force drops below ``min_normal_force`` or the stance changes (anti-windup, §IV-E).

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
5. τ clamped to the effort limits.

Discrete-time bounds (checked at construction, dt = control period): a PD task on a double
integrator under semi-implicit Euler is stable iff 0 < kd·dt < 2 and kp·dt² + 2·kd·dt < 4
(Jury test on z² − (2 − kp dt² − kd dt) z + 1 − kd dt); the internal-force PI acts on an
algebraic plant through the one-step-old measurement, e(k) = (1 − kp − ki dt) e(k−1) + kp e(k−2),
stable iff |kp_int| < 1 and 0 ≤ ki_int dt, 2 kp_int + ki_int dt < 2.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import pinocchio as pin

from biped_contact_sim.control.base import Controller, ControlOutput, Measurement, Reference
from biped_contact_sim.control.ctc import reference_load_shares
from biped_contact_sim.control.grasp import ContactAnchor, grasp_model, skew, sole_wrench_at
from biped_contact_sim.errors import ConfigError, InputError

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


@dataclass(frozen=True)
class WBCSettings:
    """Settings of the whole-body controller (gains in SI units, per axis).

    Attributes:
        kp_com, kd_com: CoM PD gains (eq. 59) [1/s², 1/s]. Soft by default (ω = 5 rad/s,
            ζ = 1): a stiffer CoM moves the ZMP more under a push (ZMP shift ≈ z_G c̈/g).
        kp_foot, kd_foot: swing-foot pose PD gains [1/s², 1/s].
        kp_base, kd_base: base (pelvis) orientation PD gains, upright with q0's yaw; kp_base = 0
            removes the task [1/s², 1/s].
        kp_posture, kd_posture: joint posture PD gains [1/s², 1/s].
        kp_int, ki_int: internal-force PI feedback on the measured wrenches (§IV-E) [-, 1/s].
        int_limit: clamp of each component of the internal-force integral [N or N·m].
        min_normal_force: a stance foot with less measured normal force counts as lost (the
            integral is reset, the feedback paused) [N].
        internal_forces: apply the internal-force controller (eq. 42); if False, the internal
            forces are whatever the task torques produce (for comparisons).
        kd_am: damping of the centroidal angular momentum about the line between the feet
            CoPs (double support; keeps the ZMP on that line, App. B) [1/s].
        load_share: add the load-share tension (module docstring, step 4; our addition).
        rcond: relative eigenvalue cutoff of the pseudo-inverses Φ*⁺ and Λ*⁺.
    """

    kp_com: float = 25.0
    kd_com: float = 10.0
    kp_foot: float = 400.0
    kd_foot: float = 40.0
    kp_base: float = 100.0
    kd_base: float = 20.0
    kp_posture: float = 100.0
    kd_posture: float = 20.0
    kp_int: float = 0.0
    ki_int: float = 20.0
    int_limit: float = 50.0
    min_normal_force: float = 5.0
    internal_forces: bool = True
    kd_am: float = 5.0
    load_share: bool = True
    rcond: float = 1e-8

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("internal_forces", "load_share"):
                if not isinstance(value, bool):
                    raise ConfigError(f"{f.name} = {value!r} must be true or false")
                continue
            if not (isinstance(value, (int, float)) and np.isfinite(value)):
                raise ConfigError(f"{f.name} = {value!r} must be a finite number")
        if self.kp_base < 0 or self.kd_base < 0:
            raise ConfigError(f"kp_base, kd_base = {self.kp_base!r}, {self.kd_base!r} must be "
                              ">= 0")
        for name in ("kp_com", "kd_com", "kp_foot", "kd_foot", "kp_posture", "kd_posture",
                     "int_limit", "min_normal_force", "kd_am", "rcond"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} = {getattr(self, name)!r} must be > 0")
        if not 0.0 <= self.kp_int < 1.0:
            raise ConfigError(f"kp_int = {self.kp_int!r} must be in [0, 1) (one-step-delayed "
                              "feedback on an algebraic plant)")
        if self.ki_int < 0:
            raise ConfigError(f"ki_int = {self.ki_int!r} must be >= 0")


def _check_pd(kp: float, kd: float, dt: float, kp_name: str, kd_name: str) -> None:
    """Jury bounds of a PD-controlled double integrator under semi-implicit Euler."""
    if kd * dt >= 2.0:
        raise ConfigError(f"{kd_name} = {kd!r} must be < 2/dt = {2.0 / dt:g} (dt = {dt:g} s)")
    if kp * dt * dt + 2.0 * kd * dt >= 4.0:
        raise ConfigError(f"{kp_name} = {kp!r} must be < (4 − 2·{kd_name}·dt)/dt² = "
                          f"{(4.0 - 2.0 * kd * dt) / dt ** 2:g} (dt = {dt:g} s)")


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """3-D cross product (np.cross costs ~30 µs per call through its axis handling)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]])


def _pinv_psd(X: np.ndarray, rcond: float) -> tuple[np.ndarray, np.ndarray]:
    """Pseudo-inverse of a symmetric PSD matrix and the orthonormal basis of its range."""
    if X.shape == (1, 1):  # 1-D tasks: no eigendecomposition
        x = X[0, 0]
        return (np.array([[1.0 / x]]), np.ones((1, 1))) if x > 0 else (np.zeros((1, 1)),
                                                                        np.zeros((1, 0)))
    X = 0.5 * (X + X.T)
    w, V = np.linalg.eigh(X)
    top = w[-1] if w.size else 0.0
    keep = w > rcond * max(top, 1e-300)
    Vk = V[:, keep]
    return (Vk / w[keep]) @ Vk.T, Vk


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
        _check_pd(s.kp_com, s.kd_com, self.dt, "kp_com", "kd_com")
        _check_pd(s.kp_foot, s.kd_foot, self.dt, "kp_foot", "kd_foot")
        _check_pd(s.kp_posture, s.kd_posture, self.dt, "kp_posture", "kd_posture")
        if s.kp_base > 0:
            _check_pd(s.kp_base, s.kd_base, self.dt, "kp_base", "kd_base")
        if 2.0 * s.kp_int + s.ki_int * self.dt >= 2.0:
            raise ConfigError(f"ki_int = {s.ki_int!r} must be < (2 − 2·kp_int)/dt = "
                              f"{(2.0 - 2.0 * s.kp_int) / self.dt:g} (dt = {self.dt:g} s)")
        self.data = robot.create_data()
        self._bodies = {b.name: b for b in robot.contact_bodies}
        self._order = {b.name: k for k, b in enumerate(robot.contact_bodies)}
        # Sole centres (sole frame): the middle of each foot's contact points.
        self._sole_centre = {b.name: 0.5 * (b.offsets.min(axis=0) + b.offsets.max(axis=0))
                             for b in robot.contact_bodies}
        self._zero_v = np.zeros(robot.nv)
        self._eye_n = np.eye(robot.n_joints)
        self._base_frame = robot.model.getFrameId(robot.base_link)
        self._R_base_ref = np.eye(3)
        self._lower = np.tril_indices(robot.nv, -1)
        self._g = float(np.linalg.norm(robot.model.gravity.linear))
        self.reset()

    def reset(self) -> None:
        """Forget the internal-force integral and the previous stance."""
        self._integral: np.ndarray | None = None
        self._stance: tuple[str, ...] | None = None

    # ------------------------------------------------------------------ kinematics
    def _body(self, name: str):
        if name not in self._bodies:
            raise ConfigError(f"Unknown foot {name!r} in the reference. Contact bodies: "
                              + ", ".join(self._bodies))
        return self._bodies[name]

    def _anchor(self, ref: Reference, foot: str) -> np.ndarray:
        """Commanded CoP of a stance foot in its sole frame (x, y, 0)."""
        cop = ref.cop.get(foot)
        if cop is None:
            return self._sole_centre[foot].copy()
        return np.array([cop[0], cop[1], 0.0])

    def _point_jacobian(self, frame_id: int, r: np.ndarray):
        """6-D Jacobian and drift of a point at world offset r from a frame (same axes)."""
        model, data = self.robot.model, self.data
        J = pin.getFrameJacobian(model, data, frame_id, LWA)
        acc = pin.getFrameClassicalAcceleration(model, data, frame_id, LWA)
        vel = pin.getFrameVelocity(model, data, frame_id, LWA)
        Jp = J.copy()
        Jp[:3] -= skew(r) @ J[3:]
        w, alpha = vel.angular, acc.angular
        drift = np.concatenate([acc.linear + _cross(alpha, r) + _cross(w, _cross(w, r)),
                                alpha])
        return Jp, drift

    # ------------------------------------------------------------------ control step
    def compute(self, meas: Measurement) -> ControlOutput:
        """Torques for the measurement (module docstring, steps 1–5).

        Raises:
            InputError: q or v has the wrong length, or a reference has the wrong size.
            ConfigError: the reference names an unknown foot.
        """
        robot, model, data, s = self.robot, self.robot.model, self.data, self.settings
        q = np.asarray(meas.q, float)
        v = np.asarray(meas.v, float)
        if q.shape != (robot.nq,) or v.shape != (robot.nv,):
            raise InputError(f"measurement: q must have length {robot.nq} and v {robot.nv}; "
                             f"got {q.shape} and {v.shape}")
        ref = self.behavior.reference(meas.t)
        stance = tuple(sorted(ref.stance, key=lambda n: self._order.get(n, -1)))
        bodies = [self._body(name) for name in stance]
        vi = robot.v_idx
        n = robot.n_joints

        # Robot terms: A, A⁻¹, h (= b + g), CoM and its Jacobian/drift, frame kinematics.
        M = pin.crba(model, data, q)
        M[self._lower] = M.T[self._lower]
        pin.cholesky.decompose(model, data)
        Minv = pin.cholesky.computeMinv(model, data)
        h = pin.nonLinearEffects(model, data, q, v).copy()
        J_com = pin.jacobianCenterOfMass(model, data, q, False).copy()
        pin.computeJointJacobians(model, data, q)
        pin.centerOfMass(model, data, q, v, self._zero_v)  # FK with a = 0: drifts J̇ v
        pin.updateFramePlacements(model, data)
        com, com_vel, com_drift = data.com[0].copy(), data.vcom[0].copy(), data.acom[0].copy()

        # 1. Support Jacobian at the commanded CoPs (eq. 18) and its drift.
        anchors, sole_poses, Js_rows, gs_rows = [], [], [], []
        for body in bodies:
            oMs = data.oMf[body.frame_id]
            P = oMs.translation + oMs.rotation @ self._anchor(ref, body.name)
            Jp, drift = self._point_jacobian(body.frame_id, P - oMs.translation)
            anchors.append(P)
            sole_poses.append((oMs.rotation.copy(), oMs.translation.copy()))
            Js_rows.append(Jp)
            gs_rows.append(drift)

        # 2. Constrained dynamics (eqs. 20–26).
        if bodies:
            J_s = np.vstack(Js_rows)
            gamma_s = np.concatenate(gs_rows)
            MJt = Minv @ J_s.T
            Lambda_s = np.linalg.inv(J_s @ MJt)
            Jbar_s = MJt @ Lambda_s  # eq. 21
            Minv_St = Minv[:, vi]
            B = Minv_St - Jbar_s @ (J_s @ Minv_St)  # N_s A⁻¹ Uᵀ
            a0 = -(Minv @ h - Jbar_s @ (J_s @ (Minv @ h))) - Jbar_s @ gamma_s
            f0 = Jbar_s.T @ h - Lambda_s @ gamma_s  # f at Γ = 0 (eq. 20, our sign)
        else:
            B = Minv[:, vi]
            a0 = -Minv @ h
        Phi = B[vi, :]  # Φ* = U N_s A⁻¹ (U N_s)ᵀ
        Phi_pinv, range_basis = _pinv_psd(Phi, s.rcond)

        # Double support: virtual-linkage model at the commanded CoPs (App. C, eq. 82).
        grasp = None
        if len(bodies) >= 2:
            grasp = grasp_model([ContactAnchor(P, R, "6d", b.name)
                                 for P, (R, _), b in zip(anchors, sole_poses, bodies,
                                                         strict=True)], com,
                                biped="eq82")
        D = Jbar_s[vi, :].T if bodies else None  # J̄_sᵀ Uᵀ: f = f0 − D Γ (eq. 20)

        # 3. Prioritized tasks (eqs. 27–31), each as ẍ_k = Φ_k Γ + c_k, Φ_k = J_k N_s A⁻¹ Uᵀ.
        tasks = []
        if ref.com is not None:
            c_vel = np.zeros(3) if ref.com_vel is None else np.asarray(ref.com_vel, float)
            c_acc = np.zeros(3) if ref.com_acc is None else np.asarray(ref.com_acc, float)
            a_des = c_acc + s.kd_com * (c_vel - com_vel) + s.kp_com * (ref.com - com)
            tasks.append((J_com @ B, J_com @ a0 + com_drift, a_des))
        if grasp is not None and grasp.model == "eq82":
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
            e12 = anchors[1] - anchors[0]
            e12 /= np.linalg.norm(e12)
            w_am = e12 @ grasp.W_com[3:]
            L_G = pin.computeCentroidalMomentum(model, data).angular
            tasks.append(((-w_am @ D)[None, :], np.array([w_am @ f0]),
                          np.array([-s.kd_am * (e12 @ L_G)])))
        for foot, target in ref.feet.items():
            if foot in stance:
                continue
            body = self._body(foot)
            oMs = data.oMf[body.frame_id]
            Jf, drift = self._point_jacobian(body.frame_id, np.zeros(3))
            w = pin.getFrameVelocity(model, data, body.frame_id, LWA)
            R_ref = pin.rpy.rpyToMatrix(0.0, 0.0, float(target.yaw))
            e_rot = pin.log3(R_ref @ oMs.rotation.T)
            a_des = np.concatenate([
                target.a + s.kd_foot * (target.v - w.linear) + s.kp_foot * (target.p
                                                                           - oMs.translation),
                -s.kd_foot * w.angular + s.kp_foot * e_rot])
            tasks.append((Jf @ B, Jf @ a0 + drift, a_des))
        if s.kp_base > 0:
            # Base (pelvis) orientation held at q0's (posture part of eq. 31): keeps the joint
            # posture task, which cannot be met exactly in support, from pitching the body.
            base_id = self._base_frame
            if bodies:  # heading: the mean of the stance soles' x axes
                x_axis = sum(data.oMf[b.frame_id].rotation[:, 0] for b in bodies)
                self._R_base_ref = pin.rpy.rpyToMatrix(0.0, 0.0, np.arctan2(x_axis[1],
                                                                             x_axis[0]))
            oMb = data.oMf[base_id]
            Jb, drift_b = self._point_jacobian(base_id, np.zeros(3))
            wb = pin.getFrameVelocity(model, data, base_id, LWA).angular
            a_des = s.kp_base * pin.log3(self._R_base_ref @ oMb.rotation.T) - s.kd_base * wb
            tasks.append((Jb[3:] @ B, Jb[3:] @ a0 + drift_b[3:], a_des))
        qj, vj = q[robot.q_idx], v[vi]
        q_ref = qj if ref.q_joints is None else np.asarray(ref.q_joints, float)
        v_ref = np.zeros(n) if ref.v_joints is None else np.asarray(ref.v_joints, float)
        a_ref = np.zeros(n) if ref.a_joints is None else np.asarray(ref.a_joints, float)
        if q_ref.shape != (n,) or v_ref.shape != (n,) or a_ref.shape != (n,):
            raise InputError(f"joint references must have length {n}")
        a_post = a_ref + s.kd_posture * (v_ref - vj) + s.kp_posture * (q_ref - qj)
        tasks.append((Phi, a0[vi], a_post))  # posture: J = U

        tau, N_prec = np.zeros(n), self._eye_n
        for k, (Phi_k, c_k, a_k) in enumerate(tasks):  # one level of eqs. 30–31 each
            Jp = Phi_k @ Phi_pinv @ N_prec  # J*_{k|prec}, J*_k = Φ_k Φ*⁺ (eq. 29)
            PhiJt = Phi @ Jp.T
            Lam_p, _ = _pinv_psd(Jp @ PhiJt, s.rcond)
            tau = tau + Jp.T @ (Lam_p @ (a_k - c_k - Phi_k @ tau))
            if k < len(tasks) - 1:
                N_prec = N_prec - PhiJt @ (Lam_p @ Jp)

        # 4. Internal forces (eqs. 32–43) and the measured contact state.
        info: dict = {}
        f_int_ref = f_int_meas = f_int_cmd = None
        F_meas = None
        if grasp is not None:
            W_int = grasp.W_int
            m_int = W_int.shape[0]
            f_int_ref = np.zeros(m_int) if ref.internal is None else np.asarray(ref.internal,
                                                                                float)
            if f_int_ref.shape != (m_int,):
                raise InputError(f"internal-force reference has shape {f_int_ref.shape}; the "
                                 f"{grasp.model} model has {m_int} rows: {', '.join(grasp.labels)}")
            contact_ok = True
            rows = []
            for P, (R, o), b in zip(anchors, sole_poses, bodies, strict=True):
                w = meas.wrenches.get(b.name)
                if w is None or w[2] < s.min_normal_force:
                    contact_ok = False
                    break
                rows.append(sole_wrench_at(np.asarray(w, float), R, o, P))
            if contact_ok:
                F_meas = np.concatenate(rows)
                f_int_meas = W_int @ F_meas
            if self._stance != stance or self._integral is None \
                    or self._integral.shape != (m_int,) or not contact_ok:
                self._integral = np.zeros(m_int)  # anti-windup: reset when a contact is lost
            alpha = None
            if s.load_share and len(bodies) == 2:
                centres = [data.oMf[b.frame_id].act(self._sole_centre[b.name]) for b in bodies]
                alpha = reference_load_shares(ref, stance, centres, self._g)
            if alpha is not None:
                e12 = anchors[1] - anchors[0]
                e12 /= np.linalg.norm(e12)
                F_net = grasp.W_com[:3] @ (f0 - D @ tau)  # Σ f_k the tasks command (eq. 20)
                f_int_ref = f_int_ref.copy()
                f_int_ref[0] += (alpha[0] - alpha[1]) * (F_net @ e12)
            info["load_share"] = alpha
            f_int_cmd = f_int_ref.copy()
            if contact_ok and (s.kp_int > 0 or s.ki_int > 0):
                e = f_int_ref - f_int_meas
                self._integral = np.clip(self._integral + s.ki_int * self.dt * e,
                                         -s.int_limit, s.int_limit)
                f_int_cmd += s.kp_int * e + self._integral
            if s.internal_forces:
                L_star = self._eye_n - range_basis @ range_basis.T  # eq. 33
                J_il_T = -W_int @ D @ L_star  # eq. 39 (our sign)
                F_tp = W_int @ (f0 - D @ tau)  # F_int,{t,p} − μ_i − p_i (eqs. 40–41)
                tau = tau + L_star @ (np.linalg.pinv(J_il_T, rcond=1e-10) @ (f_int_cmd - F_tp))
        else:
            self._integral = None
        self._stance = stance

        # 5. Saturation and diagnostics.
        tau_cmd = np.clip(tau, -robot.effort_limit, robot.effort_limit)
        info["com"] = com
        info["com_vel"] = com_vel
        info["com_ref"] = None if ref.com is None else np.asarray(ref.com, float).copy()
        info["com_error"] = float("nan") if ref.com is None else float(
            np.linalg.norm(ref.com - com))
        info["saturated"] = int(np.count_nonzero(np.abs(tau) > robot.effort_limit))
        info["stance"] = stance
        info["cop_refs"] = np.array(anchors) if anchors else np.zeros((0, 3))
        if bodies:
            f_pred = f0 - Jbar_s[vi, :].T @ tau_cmd  # eq. 20 at the applied torques
            info["wrenches_pred"] = f_pred
            com_wrench = np.zeros((6, 6 * len(bodies)))
            for k, P in enumerate(anchors):
                com_wrench[:3, 6 * k:6 * k + 3] = np.eye(3)
                com_wrench[3:, 6 * k:6 * k + 3] = skew(P - com)
                com_wrench[3:, 6 * k + 3:6 * k + 6] = np.eye(3)
            info["f_com_pred"] = com_wrench @ f_pred
        cops = np.full((len(bodies), 3), np.nan)
        for k, b in enumerate(bodies):
            w = meas.wrenches.get(b.name)
            if w is not None and w[2] >= s.min_normal_force:
                R, o = sole_poses[k]
                cops[k] = o + R @ np.array([-w[4] / w[2], w[3] / w[2], 0.0])
        info["cops"] = cops
        if grasp is not None:
            info["f_int_ref"] = f_int_ref
            info["f_int_cmd"] = f_int_cmd
            info["f_int_pred"] = grasp.W_int @ info["wrenches_pred"]
            info["f_int"] = f_int_meas if f_int_meas is not None else np.full(len(f_int_ref),
                                                                              np.nan)
            info["f_int_labels"] = grasp.labels
            info["int_integral"] = self._integral.copy()
            if grasp.model == "eq82":
                info["tension_ref"] = float(f_int_ref[0])
                info["tension"] = float(info["f_int"][0])
        return ControlOutput(tau_cmd, info)


__all__ = ["WBCSettings", "WholeBodyController"]
