"""``walk``: five-step references for the 3-D biped (docs/methods.md §4.3; Rengifo et al. §V).

Pipeline, all computed at construction on a planning grid of period ``dt``:

1. Footsteps. Feet start where q0 puts them (step width = their lateral distance). Step k
   (k = 1..n) swings the right foot on odd k, the left on even k, to ``min(k, n − 1) ·
   step_length`` ahead of the start: the first step is a half stride, the middle ones full
   strides (2 × step_length of swing), the last one brings the feet side by side. Planned
   distance = (n − 1) · step_length.
2. ZMP reference p_ref(t) (piecewise linear): at q0's CoM projection, then moved during the
   last ``ds_time`` of the initial hold to the first stance sole's centre; at the stance sole
   centre during single support; linearly from the old to the new stance sole centre during
   double support; finally to the midpoint of the two sole centres.
3. CoM from ZMP preview control (Kajita et al., ICRA 2003, "Biped walking pattern generation
   by using preview control of zero-moment point"; cart-table model at constant height z_c):

       x_{k+1} = A x_k + B u_k,  x = [c, ċ, c̈],  u = jerk,  p_k = C x_k,  C = [1, 0, −z_c/g],

   with the integral-action form of Katayama et al. (1985): minimise Σ Q_e e_k² + R Δu_k²,
   e = p − p_ref. P solves the DARE of the augmented system (Ã, B̃) = ([1, CA; 0, A],
   [CB; B]) (``scipy.linalg.solve_discrete_are``); K̃ = (R + B̃ᵀPB̃)⁻¹B̃ᵀPÃ = [G_i, G_x];
   preview gains G_p(1) = −G_i, G_p(j) = (R + B̃ᵀPB̃)⁻¹B̃ᵀX_{j−1}, X_1 = −Ã_cᵀPĨ,
   X_j = Ã_cᵀX_{j−1}, Ã_c = Ã − B̃K̃, Ĩ = [1, 0, 0, 0]ᵀ; and

       u_k = −G_i Σ_{i≤k} e_i − G_x x_k − Σ_{j=1}^{N} G_p(j) p_ref(k + j).

   x and y use the same gains; between grid points the CoM is the exact cubic of constant jerk.
4. Swing feet: x, y by the quintic s(σ) = 10σ³ − 15σ⁴ + 6σ⁵ (zero velocity and acceleration at
   lift-off and touch-down), z by the bump 64 h σ³(1 − σ)³ (apex h = ``swing_height`` at
   mid-swing, zero velocity and acceleration at both ends) minus d s(σ). Soles stay flat, yaw 0.
   Touch-down (our addition): the swing sole aims d = ``touchdown_depth`` below the ground, so
   that a tracking error of a few µm cannot leave it hovering, unloaded, while the ZMP moves
   onto it; during the following double support the landed sole's reference rises back to
   the ground, z = −d (1 − s(σ_ds)), σ_ds = (t − t_land)/ds_time, so that the references are
   again a consistent closed chain (both soles at z = 0) when the next foot lifts off. A depth
   kept for good made every later lift-off start from an inconsistent chain: the joint errors
   the closed chain had absorbed were released at once into the swing leg (seen: the second
   lift-off of ``walk`` rolled the stance foot onto an edge).

   The depth sets the touch-down speed: h b(σ) − d s(σ) crosses z = 0 where
   64 h (1 − σ)³ ≈ d, at a speed ≈ 192 h (1 − σ)² / T ∝ h^⅓ d^⅔. The default d = 40 µm lands
   at ≈ 8 mm/s ≈ 15 ms early. Measured on ``walk`` with ``ctc``: a deeper aim (d = 0.1–0.2 mm,
   20–26 mm/s) makes the rigid contact models' plastic impact throw the unloaded sole back up
   by ~0.17 mm, and the ctc, holding it as a stance constraint from t_land, rolls the other
   foot; a shallower one (d ≤ 20 µm) leaves ``penalty_fl``'s sole hovering at the switch. The
   window that suits the four models tried (not spring_damper) is narrow (30–50 µm).
5. Joint references by inverse kinematics (damped least-squares CLIK, warm-started) of the
   stacked task [CoM (3); left sole (6); right sole (6); pelvis orientation (3, upright);
   waist joints (2, q0's)] — 20 rows for the 20 DoF, so the solution is exact. Velocities
   and accelerations solve J v = ẋ_task and J v̇ = ẍ_task − J̇v at every grid point;
   ``reference(t)`` interpolates (cubic Hermite in q from (q, v), linear in v̇).

Default timing for the 40 kg biped (CoM 0.71 m high, LIPM time constant √(z_c/g) ≈ 0.27 s):
0.6 s single support + 0.2 s double support = 0.8 s per step, 0.12 m per step (0.15 m/s),
swing apex 4 cm — a slow, statically comfortable gait: the CoM sways ≈ 6 cm laterally, well
inside the 0.2 m step width, and the legs stay bent (no knee singularity).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pinocchio as pin
from scipy.linalg import solve_discrete_are

from biped_contact_sim.control.base import (
    Behavior,
    FootTarget,
    LazyValues,
    Reference,
    behavior_params,
    range_checker,
)
from biped_contact_sim.control.walking_kernels import walk_state
from biped_contact_sim.errors import ConfigError

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


_check = range_checker("walk")


@dataclass(frozen=True)
class WalkParams:
    """Parameters of ``walk``.

    Attributes:
        n_steps: number of steps (≥ 2).
        step_length: foothold advance per step [m].
        step_width: lateral distance of the feet [m]; None: q0's.
        ss_time: single-support duration [s].
        ds_time: double-support duration [s] (also the initial ZMP shift).
        swing_height: apex of the swing sole [m].
        touchdown_depth: the swing sole aims this far below the ground at touch-down, and its
            reference rises back to the ground during the following double support [m]
            (module docstring, step 4): tracking errors of a few tens of µm otherwise leave
            the landing foot hovering, unloaded, while the ZMP reference moves onto it.
        t_init: initial double-support hold, ≥ ds_time [s]; the ZMP starts moving at
            t_init − ds_time, keep that ≥ preview_time for a transient-free start.
        t_final: final double-support hold [s].
        dt: planning grid period [s].
        preview_time: preview horizon N·dt [s].
        qe, r: preview-control weights Q_e [1/m²] and R [s⁶/m²] (Kajita 2003: 1 and 1e-6).
        ik_tol: CLIK residual tolerance [m, rad].
        ik_damping: λ of the damped least squares.
    """

    n_steps: int = 5
    step_length: float = 0.12
    step_width: float | None = None
    ss_time: float = 0.6
    ds_time: float = 0.2
    swing_height: float = 0.04
    touchdown_depth: float = 4e-5
    t_init: float = 1.5
    t_final: float = 1.0
    dt: float = 0.005
    preview_time: float = 1.2
    qe: float = 1.0
    r: float = 1e-6
    ik_tol: float = 1e-10
    ik_damping: float = 1e-8

    def __post_init__(self):
        _check("n_steps", self.n_steps, 2, 100, lo_open=False)
        _check("step_length", self.step_length, 0.0, 0.4, lo_open=False)
        if self.step_width is not None:
            _check("step_width", self.step_width, 0.0, 1.0)
        _check("ss_time", self.ss_time, 0.05, 10.0)
        _check("ds_time", self.ds_time, 0.0, 10.0)
        _check("swing_height", self.swing_height, 0.0, 0.3)
        _check("touchdown_depth", self.touchdown_depth, 0.0, 0.02, lo_open=False)
        _check("t_init", self.t_init, self.ds_time, 60.0, lo_open=False)
        _check("t_final", self.t_final, 0.0, 60.0, lo_open=False)
        _check("dt", self.dt, 0.0, 0.05)
        _check("preview_time", self.preview_time, self.dt, 10.0)
        _check("qe", self.qe, 0.0)
        _check("r", self.r, 0.0)
        _check("ik_tol", self.ik_tol, 0.0, 1e-3)
        _check("ik_damping", self.ik_damping, 0.0, 1.0, lo_open=False)


def preview_gains(dt: float, z_c: float, g: float, n_preview: int, qe: float, r: float):
    """Cart-table model and ZMP preview gains (Kajita 2003 with Katayama's integral action).

    Returns:
        (A, B, C, G_i, G_x (3,), G_p (n_preview,)).
    """
    A = np.array([[1.0, dt, dt * dt / 2], [0.0, 1.0, dt], [0.0, 0.0, 1.0]])
    B = np.array([dt ** 3 / 6, dt * dt / 2, dt])
    C = np.array([1.0, 0.0, -z_c / g])
    At = np.zeros((4, 4))
    At[0, 0], At[0, 1:], At[1:, 1:] = 1.0, C @ A, A
    Bt = np.concatenate([[C @ B], B])[:, None]
    Q = np.diag([qe, 0.0, 0.0, 0.0])
    P = solve_discrete_are(At, Bt, Q, np.array([[r]]))
    denom = float(r + (Bt.T @ P @ Bt)[0, 0])
    K = (Bt.T @ P @ At).ravel() / denom
    Ac = At - Bt @ K[None, :]
    I1 = np.array([1.0, 0.0, 0.0, 0.0])
    Gp = np.empty(n_preview)
    Gp[0] = -K[0]
    X = -Ac.T @ P @ I1
    for j in range(1, n_preview):
        Gp[j] = float(Bt[:, 0] @ X) / denom
        X = Ac.T @ X
    return A, B, C, K[0], K[1:], Gp


def preview_com(p_ref: np.ndarray, x0: np.ndarray, dt: float, z_c: float, g: float,
                n_preview: int, qe: float, r: float) -> tuple[np.ndarray, np.ndarray]:
    """Run the preview controller along one axis.

    Args:
        p_ref: ZMP reference on the grid, including n_preview samples beyond the horizon.
        x0: initial [c, ċ, c̈].

    Returns:
        (states (K, 3) at the grid points, jerks (K,)) for K = len(p_ref) − n_preview.
    """
    A, B, C, Gi, Gx, Gp = preview_gains(dt, z_c, g, n_preview, qe, r)
    K = len(p_ref) - n_preview
    states, jerks = np.empty((K, 3)), np.empty(K)
    # Work relative to the initial reference: with a truncated preview the law is not exactly
    # translation invariant, and a start at rest on p_ref(0) must stay at rest.
    origin = float(p_ref[0])
    p_ref = np.asarray(p_ref, float) - origin
    x, e_sum = np.asarray(x0, float) - np.array([origin, 0.0, 0.0]), 0.0
    for k in range(K):
        states[k] = x
        e_sum += C @ x - p_ref[k]
        u = -Gi * e_sum - Gx @ x - Gp @ p_ref[k + 1:k + 1 + n_preview]
        jerks[k] = u
        x = A @ x + B * u
    states[:, 0] += origin
    return states, jerks


def quintic(sigma: float) -> tuple[float, float, float]:
    """s(σ) = 10σ³ − 15σ⁴ + 6σ⁵ and its first two derivatives (zero at σ = 0, 1)."""
    s2 = sigma * sigma
    return (s2 * sigma * (10 - 15 * sigma + 6 * s2), 30 * s2 * (1 - sigma) ** 2,
            60 * sigma * (1 - sigma) * (1 - 2 * sigma))


def bump(sigma: float) -> tuple[float, float, float]:
    """b(σ) = 64 σ³(1 − σ)³ (b(½) = 1) and its first two derivatives (zero at σ = 0, 1)."""
    u = sigma * (1 - sigma)
    du = 1 - 2 * sigma
    return 64 * u ** 3, 192 * u * u * du, 192 * (2 * u * du * du - 2 * u * u)


@dataclass
class Footstep:
    """Step k: the swing foot moves from ``start`` to ``target`` (sole origins, world) during
    [t_lift, t_land]; ``stance`` supports meanwhile."""

    swing: str
    stance: str
    start: np.ndarray
    target: np.ndarray
    t_lift: float
    t_land: float


class WalkBehavior(Behavior):
    """Footsteps → ZMP preview CoM → swing splines → IK joint references (module docstring).

    Args:
        robot: the 3-D biped ``RobotModel`` (free-flyer base, two feet).
        q0: initial configuration, both soles flat on the ground, at rest.
        **params: fields of ``WalkParams``.

    Attributes:
        footsteps: the ``Footstep`` list; planned_distance: advance of the feet midpoint [m];
        times: the planning grid; com, com_vel, com_acc (K, 3); q_ref (K, nq), v_ref, a_ref
        (K, nv): the IK solution on the grid; ik_residual: worst task residual of the IK.

    Raises:
        ConfigError: unknown/invalid parameters, a robot that is not a free-flyer biped, or an
            IK that does not converge.
    """

    name = "walk"

    def __init__(self, robot, q0, **params: Any):
        self.params = p = behavior_params("walk", WalkParams, params)
        if robot.config.base != "free_flyer" or len(robot.contact_bodies) != 2:
            raise ConfigError(f"walk needs a free-flyer biped with two feet; {robot.name} has "
                              f"base {robot.config.base!r}")
        self.robot = robot
        model = robot.model
        self.data = data = robot.create_data()
        self.q0 = q0 = np.asarray(q0, float).copy()
        self.g = float(np.linalg.norm(model.gravity.linear))
        self.names = tuple(b.name for b in robot.contact_bodies)
        self.frames = {b.name: b.frame_id for b in robot.contact_bodies}
        self.sole_centre = {b.name: 0.5 * (b.offsets.min(axis=0) + b.offsets.max(axis=0))
                            for b in robot.contact_bodies}
        self.sole_corners = {b.name: b.offsets[:, :2].copy() for b in robot.contact_bodies}
        self._cop_ref = {}  # the references' CoPs: the sole centres, shared and read-only
        for name, centre in self.sole_centre.items():
            self._cop_ref[name] = centre[:2].copy()
            self._cop_ref[name].flags.writeable = False
        pin.framesForwardKinematics(model, data, q0)
        start = {n: data.oMf[f].translation.copy() for n, f in self.frames.items()}
        self.com0 = pin.centerOfMass(model, data, q0).copy()
        self.z_c = float(self.com0[2])
        left, right = self.names  # left foot first in the config
        if p.step_width is not None:
            mid = 0.5 * (start[left] + start[right])
            start[left][1], start[right][1] = mid[1] + p.step_width / 2, mid[1] - p.step_width / 2
        self.start_feet = start
        self._plan_footsteps(start)
        self._plan_zmp()
        self._plan_com()
        self._solve_ik()

    # ------------------------------------------------------------------ 1. footsteps
    def _plan_footsteps(self, start: dict[str, np.ndarray]) -> None:
        p = self.params
        left, right = self.names
        pos = {n: v.copy() for n, v in start.items()}
        x_start = 0.5 * (start[left][0] + start[right][0])
        self.footsteps: list[Footstep] = []
        t = p.t_init
        for k in range(1, p.n_steps + 1):
            swing, stance = (right, left) if k % 2 else (left, right)
            target = pos[swing].copy()
            target[0] = x_start + min(k, p.n_steps - 1) * p.step_length
            target[2] = -p.touchdown_depth  # aim slightly below the ground: a firm touch-down
            self.footsteps.append(Footstep(swing, stance, pos[swing].copy(), target, t,
                                           t + p.ss_time))
            pos[swing] = target.copy()
            pos[swing][2] = 0.0  # back on the ground by the end of the double support
            t += p.ss_time + p.ds_time
        self.final_feet = pos
        self.t_walk_end = t
        self.duration = t + p.t_final
        self.planned_distance = float(0.5 * (pos[left][0] + pos[right][0]) - x_start)

    def _centre(self, name: str, sole_origin: np.ndarray) -> np.ndarray:
        return sole_origin[:2] + self.sole_centre[name][:2]  # soles flat, yaw 0

    # ------------------------------------------------------------------ 2. ZMP reference
    def _plan_zmp(self) -> None:
        p = self.params
        fs = self.footsteps
        knots_t = [0.0, p.t_init - p.ds_time]
        knots_p = [self.com0[:2], self.com0[:2]]
        pos = {n: v.copy() for n, v in self.start_feet.items()}
        for step in fs:
            centre = self._centre(step.stance, pos[step.stance])
            knots_t += [step.t_lift, step.t_land]
            knots_p += [centre, centre]
            pos[step.swing] = step.target
        left, right = self.names
        final = 0.5 * (self._centre(left, pos[left]) + self._centre(right, pos[right]))
        knots_t.append(self.t_walk_end)
        knots_p.append(final)
        self._zmp_t = np.array(knots_t)
        self._zmp_p = np.array(knots_p)

    def zmp_reference(self, t) -> np.ndarray:
        """Planned ZMP p_ref(t) (x, y) [m]; t scalar or array."""
        t = np.asarray(t, float)
        return np.stack([np.interp(t, self._zmp_t, self._zmp_p[:, i]) for i in range(2)],
                        axis=-1)

    def phase(self, t: float) -> tuple[tuple[str, ...], Footstep | None]:
        """(stance feet, running footstep or None) at t."""
        for step in self.footsteps:
            if step.t_lift <= t < step.t_land:
                return (step.stance,), step
        return self.names, None

    def stance_at(self, t: float) -> tuple[str, ...]:
        """Stance feet at t (``phase``, with t clipped like ``reference``)."""
        return self.phase(min(max(float(t), 0.0), self._t_end))[0]

    def feet_at(self, t: float) -> dict[str, np.ndarray]:
        """Sole-origin positions (world) of both feet at t (module docstring, step 4)."""
        return {n: self.foot_state(n, t).p for n in self.names}

    def foot_state(self, name: str, t: float) -> FootTarget:
        """Sole-origin position, velocity and acceleration (world) of foot ``name`` at t: the
        swing spline, the rise back from touchdown_depth after landing, or at rest."""
        p = self.params
        pos, vel, acc = self.start_feet[name].copy(), np.zeros(3), np.zeros(3)
        for step in self.footsteps:
            if step.swing != name or t < step.t_lift:
                continue
            if t < step.t_land:
                return self.swing_target(step, t)
            pos = step.target.copy()
            if p.ds_time > 0.0 and t < step.t_land + p.ds_time:
                s, ds, dds = quintic((t - step.t_land) / p.ds_time)
                d = step.target[2]
                pos[2] = d * (1.0 - s)
                vel[2], acc[2] = -d * ds / p.ds_time, -d * dds / p.ds_time ** 2
            else:
                pos[2] = 0.0
                vel[:], acc[:] = 0.0, 0.0
        return FootTarget(pos, vel, acc, 0.0)

    def support_polygon(self, t: float) -> np.ndarray:
        """Planned support polygon at t: corners (k, 2) of the stance sole(s), world."""
        stance, _ = self.phase(t)
        feet = self.feet_at(t)
        return np.vstack([feet[n][:2] + self.sole_corners[n] for n in stance])

    # ------------------------------------------------------------------ 3. CoM
    def _plan_com(self) -> None:
        p = self.params
        n_prev = round(p.preview_time / p.dt)
        K = int(np.floor(self.duration / p.dt + 1e-9)) + 1
        self.times = np.arange(K) * p.dt
        t_ext = np.arange(K + n_prev) * p.dt
        zmp = self.zmp_reference(t_ext)
        self.com = np.empty((K, 3))
        self.com_vel = np.zeros((K, 3))
        self.com_acc = np.zeros((K, 3))
        self._jerk = np.zeros((K, 3))
        self.com[:, 2] = self.z_c
        for i in range(2):
            states, jerks = preview_com(zmp[:, i], [self.com0[i], 0.0, 0.0], p.dt, self.z_c,
                                        self.g, n_prev, p.qe, p.r)
            self.com[:, i], self.com_vel[:, i], self.com_acc[:, i] = states.T
            self._jerk[:, i] = jerks

    def com_state(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """CoM position, velocity, acceleration at t (exact constant-jerk cubic)."""
        k = min(max(math.floor(t / self.params.dt), 0), len(self.times) - 1)
        tau = t - k * self.params.dt
        c, dc, ddc, j = self.com[k], self.com_vel[k], self.com_acc[k], self._jerk[k]
        t2 = tau * tau / 2
        return (c + dc * tau + ddc * t2 + j * (t2 * tau / 3), dc + ddc * tau + j * t2,
                ddc + j * tau)

    def cart_table_zmp(self) -> np.ndarray:
        """ZMP of the planned CoM by the cart-table model, p = c − z_c c̈/g, on the grid."""
        return self.com[:, :2] - self.z_c * self.com_acc[:, :2] / self.g

    # ------------------------------------------------------------------ 4. swing feet
    def swing_target(self, step: Footstep, t: float) -> FootTarget:
        """Swing sole-origin position, velocity, acceleration at t ∈ [t_lift, t_land]."""
        T = step.t_land - step.t_lift
        sigma = min(max((t - step.t_lift) / T, 0.0), 1.0)
        s, ds, dds = quintic(sigma)
        b, db, ddb = bump(sigma)
        d = step.target - step.start
        h = self.params.swing_height
        pos = step.start + s * d  # z: start 0 → target −touchdown_depth
        vel = ds / T * d
        acc = dds / T ** 2 * d
        pos[2] += h * b
        vel[2] += h * db / T
        acc[2] += h * ddb / T ** 2
        return FootTarget(pos, vel, acc, 0.0)

    # ------------------------------------------------------------------ 5. IK
    def _task_jacobian(self, q: np.ndarray) -> np.ndarray:
        model, data, robot = self.robot.model, self.data, self.robot
        J = np.empty((20, model.nv))
        J[:3] = pin.jacobianCenterOfMass(model, data, q)  # also runs forward kinematics
        pin.computeJointJacobians(model, data, q)
        pin.updateFramePlacements(model, data)
        for k, name in enumerate(self.names):
            J[3 + 6 * k:9 + 6 * k] = pin.getFrameJacobian(model, data, self.frames[name], LWA)
        J[15:18] = pin.getFrameJacobian(model, data, self._base_frame, LWA)[3:]
        J[18:20] = robot.S[self._waist_rows]
        return J

    def _task_error(self, q: np.ndarray, com: np.ndarray, feet: dict) -> np.ndarray:
        data = self.data
        e = np.empty(20)
        e[:3] = com - data.com[0]
        for k, name in enumerate(self.names):
            oMf = data.oMf[self.frames[name]]
            e[3 + 6 * k:6 + 6 * k] = feet[name] - oMf.translation
            e[6 + 6 * k:9 + 6 * k] = -oMf.rotation @ pin.log3(oMf.rotation)  # target R = I
        Rb = data.oMf[self._base_frame].rotation
        e[15:18] = -Rb @ pin.log3(Rb)
        e[18:20] = self.q0[self.robot.q_idx[self._waist_rows]] - q[self.robot.q_idx[
            self._waist_rows]]
        return e

    def _solve_ik(self) -> None:
        robot, model, data, p = self.robot, self.robot.model, self.data, self.params
        self._base_frame = model.getFrameId(robot.base_link)
        waist = [i for i, n in enumerate(robot.actuated_joint_names)
                 if not any(n in self._leg_joints(b) for b in robot.contact_bodies)]
        if len(waist) + 18 != model.nv:
            raise ConfigError(f"walk: the IK task needs {model.nv - 18} non-leg joints held at "
                              f"q0; {robot.name} has {len(waist)}")
        self._waist_rows = np.array(waist, dtype=int)
        K = len(self.times)
        self.q_ref = np.empty((K, model.nq))
        self.v_ref = np.empty((K, model.nv))
        self.a_ref = np.empty((K, model.nv))
        q = self.q0.copy()
        worst = 0.0
        lam2 = p.ik_damping ** 2
        for k, t in enumerate(self.times):
            com, dcom, ddcom = self.com[k], self.com_vel[k], self.com_acc[k]
            states = {n: self.foot_state(n, t) for n in self.names}
            feet = {n: st.p for n, st in states.items()}
            fv = {n: st.v for n, st in states.items()}
            fa = {n: st.a for n, st in states.items()}
            for _ in range(50):
                J = self._task_jacobian(q)
                e = self._task_error(q, com, feet)
                if np.abs(e).max() < p.ik_tol:
                    break
                dq = J.T @ np.linalg.solve(J @ J.T + lam2 * np.eye(20), e)
                q = pin.integrate(model, q, dq)
            else:
                raise ConfigError(f"walk: IK did not converge at t = {t:.3f} s "
                                  f"(residual {np.abs(e).max():.3g})")
            worst = max(worst, float(np.abs(e).max()))
            xd = np.concatenate([dcom, fv[self.names[0]], np.zeros(3), fv[self.names[1]],
                                 np.zeros(8)])
            v = np.linalg.solve(J, xd)
            pin.forwardKinematics(model, data, q, v, np.zeros(model.nv))
            drift = np.empty(20)
            pin.centerOfMass(model, data, q, v, np.zeros(model.nv), False)
            drift[:3] = data.acom[0]
            for j, name in enumerate(self.names):
                drift[3 + 6 * j:9 + 6 * j] = pin.getFrameClassicalAcceleration(
                    model, data, self.frames[name], LWA).vector
            drift[15:18] = pin.getFrameClassicalAcceleration(model, data, self._base_frame,
                                                             LWA).angular
            drift[18:20] = 0.0
            xdd = np.concatenate([ddcom, fa[self.names[0]], np.zeros(3), fa[self.names[1]],
                                  np.zeros(8)])
            self.q_ref[k], self.v_ref[k] = q, v
            self.a_ref[k] = np.linalg.solve(J, xdd - drift)
        self.ik_residual = worst
        # joint columns, contiguous, for ``reference`` (no fancy indexing per control step)
        self._q_j = np.ascontiguousarray(self.q_ref[:, robot.q_idx])
        self._v_j = np.ascontiguousarray(self.v_ref[:, robot.v_idx])
        self._a_j = np.ascontiguousarray(self.a_ref[:, robot.v_idx])
        self._t_end = float(self.times[-1])

    def _leg_joints(self, body) -> set[str]:
        model = self.robot.model
        return {model.names[j] for j in model.supports[model.frames[body.frame_id].parentJoint]}

    # ------------------------------------------------------------------ reference
    def reference(self, t: float) -> Reference:
        """CoM, swing foot, CoP and joint references at t (module docstring)."""
        p = self.params
        t = min(max(float(t), 0.0), self._t_end)
        stance, step = self.phase(t)
        k = min(math.floor(t / p.dt), len(self.times) - 2)
        kc = min(max(math.floor(t / p.dt), 0), len(self.times) - 1)  # com_state's row
        n = self.robot.n_joints
        # one compiled call fills one new array (the Reference's arrays are views of it)
        out = np.empty(3 * n + 9)
        walk_state(self._q_j, self._v_j, self._a_j, k, (t - k * p.dt) / p.dt, p.dt, self.com,
                   self.com_vel, self.com_acc, self._jerk, kc, t - kc * p.dt, out)
        i = 3 * n
        feet = {} if step is None else LazyValues((step.swing,),
                                                  lambda name: self.swing_target(step, t))
        cop = {name: self._cop_ref[name] for name in stance}
        return Reference(stance=stance, com=out[i:i + 3], com_vel=out[i + 3:i + 6],
                         com_acc=out[i + 6:i + 9], feet=feet, q_joints=out[:n],
                         v_joints=out[n:2 * n], a_joints=out[2 * n:3 * n], cop=cop)

