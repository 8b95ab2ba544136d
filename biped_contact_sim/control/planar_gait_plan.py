"""Gait planning of ``planar_walk`` (Bravo & Rengifo §4.2; the method is in
``control.planar_gait``'s docstring): its parameters, the planar biped's stance and closed-chain
kinematics and constrained inverse dynamics (``PlanarGaitModel``), and the optimisation of the 24
unknowns under the ZMP, friction, clearance and knee constraints (``PlanarGaitPlanner``). The
behaviour that plays the planned gait is ``control.planar_gait.PlanarWalkBehavior``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from scipy.optimize import minimize

from biped_contact_sim.control.base import range_checker
from biped_contact_sim.control.walking import quintic
from biped_contact_sim.errors import ConfigError

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


PLANAR_ROWS = (0, 2, 4)  # x, z, pitch rows of a 6-D frame Jacobian [vx vy vz ωx ωy ωz]


_check = range_checker("planar_walk")


@dataclass(frozen=True)
class PlanarGaitParams:
    """Parameters of ``planar_walk``.

    Attributes:
        n_steps: number of steps (≥ 3: start, n − 2 periodic, stop).
        step_length: advance of the footholds per step [m] (a periodic step swings 2×).
        step_time: T, duration of each step [s].
        clearance: apex of the swing-sole clearance envelope [m].
        l_toe, l_heel: toe / heel distance from the sole origin (eq. 45) [m].
        zmp_margin: planned ZMP stays this far inside [−l_heel, l_toe] [m].
        mu: friction coefficient used for planning (keep it below the ground's).
        n_nodes: quadrature and constraint nodes per step (odd, Simpson's rule).
        ds_time: T_ds, double support after every step but the last, also the duration of the
            load transfers in the holds [s] (0: the paper's instantaneous exchange).
        t_start, t_end: double-support holds before the first / after the last step, each
            ≥ ds_time [s].
        optimize: True: always run SLSQP; False: use ``DEFAULT_SOLUTION`` when it applies
            (default parameters, robot and q0), else optimise.
        max_iter: SLSQP iteration cap.
    """

    n_steps: int = 5
    step_length: float = 0.12
    step_time: float = 0.6
    clearance: float = 0.02
    l_toe: float = 0.13
    l_heel: float = 0.07
    zmp_margin: float = 0.015
    mu: float = 0.6
    n_nodes: int = 11
    ds_time: float = 0.1
    t_start: float = 0.3
    t_end: float = 0.5
    optimize: bool = False
    max_iter: int = 300

    def __post_init__(self):
        _check("n_steps", self.n_steps, 3, 100, lo_open=False)
        _check("step_length", self.step_length, 0.0, 0.4)
        _check("step_time", self.step_time, 0.1, 5.0)
        _check("clearance", self.clearance, 0.0, 0.2, lo_open=False)
        _check("l_toe", self.l_toe, 0.0, 1.0)
        _check("l_heel", self.l_heel, 0.0, 1.0)
        _check("zmp_margin", self.zmp_margin, 0.0, min(self.l_toe, self.l_heel), lo_open=False)
        _check("mu", self.mu, 0.0, 10.0)
        _check("n_nodes", self.n_nodes, 3, 201, lo_open=False)
        if self.n_nodes % 2 == 0:
            raise ConfigError(f"planar_walk.n_nodes = {self.n_nodes} must be odd (Simpson)")
        _check("ds_time", self.ds_time, 0.0, 5.0, lo_open=False)
        _check("t_start", self.t_start, self.ds_time, 60.0, lo_open=False)
        _check("t_end", self.t_end, self.ds_time, 60.0, lo_open=False)
        _check("max_iter", self.max_iter, 1, 10000, lo_open=False)


def _solve3(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x with A x = b for a 3 × 3 A (Cramer's rule in plain floats: ~20× faster than LAPACK
    through numpy at this size)."""
    (a, b_, c), (d, e, f), (g, h, i) = A.tolist()
    x, y, z = b.tolist()
    ei_fh, fg_di, dh_eg = e * i - f * h, f * g - d * i, d * h - e * g
    det = a * ei_fh + b_ * fg_di + c * dh_eg
    return np.array([
        (x * ei_fh + b_ * (f * z - y * i) + c * (y * h - e * z)),
        (a * (y * i - f * z) + x * fg_di + c * (d * z - y * g)),
        (a * (e * z - y * h) + b_ * (y * g - d * z) + x * dh_eg)]) / det


def hermite(t: float, T: float, q0, v0, q1, v1):
    """Cubic through (q0, v0) at 0 and (q1, v1) at T (eqs. 41–43): position, velocity, accel."""
    s = t / T
    s2, s3 = s * s, s * s * s
    p = ((2 * s3 - 3 * s2 + 1) * q0 + (s3 - 2 * s2 + s) * T * v0
         + (-2 * s3 + 3 * s2) * q1 + (s3 - s2) * T * v1)
    dp = ((6 * s2 - 6 * s) * q0 + (3 * s2 - 4 * s + 1) * T * v0
          + (-6 * s2 + 6 * s) * q1 + (3 * s2 - 2 * s) * T * v1) / T
    ddp = ((12 * s - 6) * q0 + (6 * s - 4) * T * v0 + (-12 * s + 6) * q1
           + (6 * s - 2) * T * v1) / (T * T)
    return p, dp, ddp


@dataclass
class _Leg:
    name: str
    frame_id: int
    cols: np.ndarray  # positions of hip, knee, ankle in the actuated vector
    points: list[int]  # sole point frame ids


@dataclass
class Phase:
    """One single-support step: ``stance`` (one foot) on its foothold x from ``t0`` for ``T``.

    ``a = (q, q̇)`` and ``b = (q, q̇)`` are the actuated-joint boundary values; ``knot =
    (q, q̇)`` the mid-step values of the swing-leg joints (indices ``swing_cols``).
    """

    stance: tuple[str, ...]
    t0: float
    T: float
    x: float
    a: tuple[np.ndarray, np.ndarray]
    b: tuple[np.ndarray, np.ndarray]
    knot: tuple[np.ndarray, np.ndarray]
    swing_cols: np.ndarray

    def joints(self, t: np.ndarray):
        """Joint positions, velocities, accelerations at times t (n,) from the phase start:
        one cubic for the stance leg, two (split at T/2) for the swing leg."""
        t = np.asarray(t, float)[:, None]
        pos, vel, acc = hermite(t, self.T, *self.a, *self.b)
        c = self.swing_cols
        h = 0.5 * self.T
        first = t < h
        p1, v1, a1 = hermite(t, h, self.a[0][c], self.a[1][c], *self.knot)
        p2, v2, a2 = hermite(t - h, h, *self.knot, self.b[0][c], self.b[1][c])
        pos[:, c] = np.where(first, p1, p2)
        vel[:, c] = np.where(first, v1, v2)
        acc[:, c] = np.where(first, a1, a2)
        return pos, vel, acc


@dataclass
class DoublePhase:
    """Double support after a step (module docstring): both soles on their footholds ``x``
    (foot → x) from ``t0`` for ``T``; the torso moves at constant velocity from ``base`` =
    [x, z, pitch, ẋ, ż, pitch rate]; the load share of ``landing`` rises from 0 to 1."""

    stance: tuple[str, ...]
    t0: float
    T: float
    x: dict[str, float]
    base: np.ndarray
    landing: str
    lifting: str

    def shares(self, t: float) -> dict[str, float]:
        """Planned load shares α at time t from the phase start (quintic ramp)."""
        alpha = quintic(min(max(t / self.T, 0.0), 1.0))[0]
        return {self.lifting: 1.0 - alpha, self.landing: alpha}


@dataclass
class NodeResult:
    """Planned state and dynamics at one node (full q, v, v̇; τ; per-sole wrench [f_x, f_z,
    τ_y] about its origin; swing point heights)."""

    q: np.ndarray
    v: np.ndarray
    a: np.ndarray
    tau: np.ndarray
    wrench: dict[str, np.ndarray]
    heights: np.ndarray


class PlanarGaitModel:
    """Kinematics and constrained dynamics of the planar biped used by the gait planner.

    Args:
        robot: a ``RobotModel`` with base ``planar_xz`` and two feet of three pitch joints each
            (hip, knee, ankle), leg segments along −z at the zero configuration.

    Raises:
        ConfigError: the robot is not such a planar biped.
    """

    def __init__(self, robot):
        if robot.config.base != "planar_xz" or len(robot.contact_bodies) != 2:
            raise ConfigError(f"planar_walk needs a planar_xz biped with two feet; "
                              f"{robot.name} has base {robot.config.base!r}")
        self.robot = robot
        self.model = model = robot.model
        self.data = robot.create_data()
        self.legs: dict[str, _Leg] = {}
        for body in robot.contact_bodies:
            frame = model.frames[body.frame_id]
            chain = [j for j in model.supports[frame.parentJoint] if j >= 2]
            if len(chain) != 3:
                raise ConfigError(f"planar_walk: foot {body.name} hangs on {len(chain)} "
                                  "actuated joints; expected hip, knee, ankle")
            hip = model.jointPlacements[chain[0]].translation
            segs = [model.jointPlacements[chain[1]].translation,
                    model.jointPlacements[chain[2]].translation, frame.placement.translation]
            if any(abs(s[0]) > 1e-12 or s[2] >= 0 for s in segs):
                raise ConfigError(f"planar_walk: the leg of {body.name} is not a chain along −z")
            self.hip_x, self.hip_z = hip[0], hip[2]
            self.l1, self.l2, self.l3 = -segs[0][2], -segs[1][2], -segs[2][2]
            cols = np.array([robot.actuated_joint_names.index(model.names[j]) for j in chain])
            self.legs[body.name] = _Leg(body.name, body.frame_id, cols,
                                        [robot.point_frame_ids[i] for i in body.points])
        self.names = tuple(self.legs)
        self.nb = robot.n_base_v
        self.g = float(np.linalg.norm(model.gravity.linear))

    def other(self, name: str) -> str:
        return self.names[1] if name == self.names[0] else self.names[0]

    # ------------------------------------------------------------------ kinematics
    def leg_ik(self, base: np.ndarray, x_foot: float) -> np.ndarray:
        """Hip, knee, ankle angles putting a flat sole at (x_foot, z = 0) under the torso pose
        ``base`` = (x, z, pitch); knee bent forward (knee ≥ 0).

        Raises:
            ConfigError: the foothold is out of reach.
        """
        x, z, th = base
        c, s = np.cos(th), np.sin(th)
        ux = x + c * self.hip_x + s * self.hip_z - x_foot  # hip minus ankle
        uz = z - s * self.hip_x + c * self.hip_z - self.l3
        l1, l2 = self.l1, self.l2
        ck = (ux * ux + uz * uz - l1 * l1 - l2 * l2) / (2 * l1 * l2)
        if not -1.0 <= ck <= 1.0:
            raise ConfigError(f"planar_walk: foothold x = {x_foot:.3f} m out of reach of the "
                              f"torso at {np.round(base, 4)}")
        knee = np.arccos(ck)
        a1 = np.arctan2(ux, uz) - np.arctan2(l2 * np.sin(knee), l1 + l2 * np.cos(knee))
        return np.array([a1 - th, knee, -(a1 + knee)])

    def _jacobian(self, name: str) -> np.ndarray:
        return pin.getFrameJacobian(self.model, self.data, self.legs[name].frame_id,
                                    LWA)[PLANAR_ROWS, :]

    def _drift(self, name: str) -> np.ndarray:
        acc = pin.getFrameClassicalAcceleration(self.model, self.data, self.legs[name].frame_id,
                                                LWA)
        return acc.vector[list(PLANAR_ROWS)]

    def boundary(self, state: np.ndarray, x_stance: float, x_swing: float,
                 stance: str) -> tuple[np.ndarray, np.ndarray]:
        """Joint positions and velocities of a boundary state: torso ``state`` = [x, z, pitch,
        ẋ, ż, pitch rate] (world), both soles flat and at rest on their footholds."""
        q, v, _ = self.closed_chain(state[:3], state[3:], np.zeros(3),
                                    {stance: x_stance, self.other(stance): x_swing}, drift=False)
        idx = self.robot.v_idx
        return q[self.robot.q_idx], v[idx]

    def closed_chain(self, base_q, base_v, base_a, footholds: dict[str, float],
                     drift: bool = True):
        """Full (q, v, v̇) with both soles fixed flat at ``footholds`` and the torso motion
        given: joints from leg IK, q̇_leg = −J_leg⁻¹ J_b v_b, q̈_leg = −J_leg⁻¹ (J_b v̇_b + J̇ v)."""
        robot, model, data, nb = self.robot, self.model, self.data, self.nb
        q = np.zeros(model.nq)
        q[:nb] = base_q
        for name, x_foot in footholds.items():
            q[robot.q_idx[self.legs[name].cols]] = self.leg_ik(base_q, x_foot)
        pin.computeJointJacobians(model, data, q)
        v, a = np.zeros(model.nv), np.zeros(model.nv)
        v[:nb], a[:nb] = base_v, base_a
        jac = {}
        for name in footholds:
            pin.updateFramePlacement(model, data, self.legs[name].frame_id)
            J = jac[name] = self._jacobian(name)
            cols = robot.v_idx[self.legs[name].cols]
            v[cols] = -_solve3(J[:, cols], J[:, :nb] @ base_v)
        if drift:
            pin.forwardKinematics(model, data, q, v, np.zeros(model.nv))
            for name in footholds:
                J, cols = jac[name], robot.v_idx[self.legs[name].cols]
                pin.updateFramePlacement(model, data, self.legs[name].frame_id)
                a[cols] = -_solve3(J[:, cols], J[:, :nb] @ base_a + self._drift(name))
        return q, v, a

    def single_support(self, q_a, v_a, a_a, stance: str, x_stance: float):
        """Full (q, v, v̇) with the stance sole fixed flat at x_stance and the joints given."""
        robot, model, data, nb = self.robot, self.model, self.data, self.nb
        leg = self.legs[stance]
        q = np.zeros(model.nq)
        q[robot.q_idx] = q_a
        pin.forwardKinematics(model, data, q)
        bMs = pin.updateFramePlacement(model, data, leg.frame_id)
        th = -np.arctan2(bMs.rotation[0, 2], bMs.rotation[0, 0])
        c, s = np.cos(th), np.sin(th)
        px, pz = bMs.translation[0], bMs.translation[2]
        q[:3] = x_stance - (c * px + s * pz), s * px - c * pz, th
        pin.computeJointJacobians(model, data, q)
        pin.updateFramePlacement(model, data, leg.frame_id)
        J = self._jacobian(stance)
        v, a = np.zeros(model.nv), np.zeros(model.nv)
        v[robot.v_idx], a[robot.v_idx] = v_a, a_a
        Jb, Ja = J[:, :nb], J[:, robot.v_idx]
        v[:nb] = -_solve3(Jb, Ja @ v_a)
        pin.forwardKinematics(model, data, q, v, np.zeros(model.nv))
        pin.updateFramePlacement(model, data, leg.frame_id)
        a[:nb] = -_solve3(Jb, Ja @ a_a + self._drift(stance))
        return q, v, a

    def phase_state(self, phase: Phase, t: float):
        """Full (q, v, v̇) at time t from the phase start."""
        return self.phase_states(phase, np.array([t]))[0]

    def phase_states(self, phase: Phase, t: np.ndarray) -> list:
        """Full (q, v, v̇) at several times of a single-support phase."""
        pos, vel, acc = phase.joints(np.asarray(t, float))
        return [self.single_support(*x, phase.stance[0], phase.x)
                for x in zip(pos, vel, acc, strict=True)]

    def double_state(self, phase: DoublePhase, t: float):
        """Full (q, v, v̇) at time t from the start of a double support: base at constant
        velocity, joints from the closed chain."""
        base = phase.base
        return self.closed_chain(base[:3] + base[3:] * t, base[3:], np.zeros(3), phase.x)

    def dynamics(self, q, v, a, stance: tuple[str, ...]) -> NodeResult:
        """τ and stance wrenches from ``M v̇ + h = Sᵀτ + J_sᵀλ`` (Bravo & Rengifo eqs. 35–38;
        minimum-norm λ with two stance feet), and the heights of the swing sole points."""
        robot, model, data, nb = self.robot, self.model, self.data, self.nb
        tau_full = pin.rnea(model, data, q, v, a)  # also places the joints at q
        for name in stance:
            pin.updateFramePlacement(model, data, self.legs[name].frame_id)
        pin.computeJointJacobians(model, data, q)
        Js = np.vstack([self._jacobian(name) for name in stance])
        B = Js[:, :nb]  # J_bᵀ λ = (M v̇ + h)_b; minimum-norm λ = B (BᵀB)⁻¹ (M v̇ + h)_b
        lam = B @ _solve3(B.T @ B, tau_full[:nb])
        tau = tau_full[robot.v_idx] - Js[:, robot.v_idx].T @ lam
        wrench = {name: lam[3 * k:3 * k + 3] for k, name in enumerate(stance)}
        heights = np.array([pin.updateFramePlacement(model, data, f).translation[2]
                            for name in self.names if name not in stance
                            for f in self.legs[name].points])
        return NodeResult(q, v, a, tau, wrench, heights)


class PlanarGaitPlanner:
    """Builds the gait of the module docstring from its 24 unknowns and optimises them.

    Cost and constraint terms are keyed: 0 start step, 1 periodic step, 2 stop step, 3 double
    support (``mult`` gives how often each occurs in the gait).

    Args:
        gm: the ``PlanarGaitModel``.
        q0: initial configuration (feet together, flat).
        params: the ``PlanarGaitParams``.
    """

    def __init__(self, gm: PlanarGaitModel, q0: np.ndarray, params: PlanarGaitParams):
        self.gm, self.p = gm, params
        robot = gm.robot
        pin.framesForwardKinematics(robot.model, gm.data, q0)
        xs = [gm.data.oMf[leg.frame_id].translation[0] for leg in gm.legs.values()]
        if abs(xs[0] - xs[1]) > 1e-6:
            raise ConfigError(f"planar_walk starts with the feet together; q0 has soles at "
                              f"x = {xs[0]:.4f} and {xs[1]:.4f} m")
        self.x0 = float(np.mean(xs))
        self.qa0 = q0[robot.q_idx].copy()
        self.knees = [leg.cols[1] for leg in gm.legs.values()]
        self.knee_min = robot.q_lower[self.knees]
        self.mg = robot.mass * gm.g
        self.z0 = float(q0[1])
        self.base0 = q0[:3].copy()
        self.base0[0] -= self.x0

    @property
    def mult(self) -> dict[int, float]:
        """How many times each keyed term occurs in the gait (class docstring)."""
        n = self.p.n_steps
        return {0: 1.0, 1: n - 2.0, 2: 1.0, 3: n - 1.0 if self.p.ds_time > 0.0 else 0.0}

    def gait(self, x: np.ndarray) -> tuple[list[Phase], list[DoublePhase]]:
        """The steps and the double supports between them for unknowns
        x = [E; knot_start; knot_periodic; knot_stop]."""
        gm, p = self.gm, self.p
        x = np.asarray(x, float)
        E = x[:6]
        s, T, Td, n = p.step_length, p.step_time, p.ds_time, p.n_steps
        carried = np.concatenate([E[3:] * Td, np.zeros(3)])  # torso drift over the support
        rest = (self.qa0, np.zeros_like(self.qa0))
        steps, doubles, x_st = [], [], self.x0
        for k in range(n):
            stance = gm.names[k % 2]
            swing = gm.other(stance)
            t0 = p.t_start + k * (T + Td)
            start = E + carried
            start[0] += x_st - s
            end = E.copy()
            end[0] += x_st
            a = rest if k == 0 else gm.boundary(start, x_st, x_st - s, stance)
            b = rest if k == n - 1 else gm.boundary(end, x_st, x_st + s, stance)
            kind = 0 if k == 0 else (2 if k == n - 1 else 1)
            knot = x[6 + 6 * kind:12 + 6 * kind]
            steps.append(Phase((stance,), t0, T, x_st, a, b, (knot[:3], knot[3:]),
                               gm.legs[swing].cols))
            if k < n - 1 and Td > 0.0:
                doubles.append(DoublePhase(gm.names, t0 + T, Td, {stance: x_st, swing: x_st + s},
                                           end, landing=swing, lifting=stance))
            x_st += s
        return steps, doubles

    def evaluate_phase(self, phase: Phase, n_nodes: int | None = None):
        """Nodes of a step: (sigma, list of NodeResult)."""
        sigma = np.linspace(0.0, 1.0, n_nodes or self.p.n_nodes)
        gm = self.gm
        return sigma, [gm.dynamics(*x, phase.stance)
                       for x in gm.phase_states(phase, sigma * phase.T)]

    @staticmethod
    def _effort(T: float, nodes: list[NodeResult]) -> float:
        """∫₀ᵀ τᵀτ dt by Simpson's rule on equally spaced nodes (odd count)."""
        n = len(nodes)
        w = np.ones(n)
        w[1:-1:2], w[2:-1:2] = 4.0, 2.0
        return T / (3.0 * (n - 1)) * w @ np.array([nd.tau @ nd.tau for nd in nodes])

    def _knee_margin(self, nodes: list[NodeResult]) -> np.ndarray:
        """Knee angle minus its URDF lower limit at every node (≥ 0 when feasible)."""
        q_idx = self.gm.robot.q_idx
        return (np.array([nd.q[q_idx][self.knees] for nd in nodes]) - self.knee_min).ravel()

    def phase_terms(self, phase: Phase):
        """(∫ τᵀτ dt by Simpson's rule, constraint values ≥ 0) of one step."""
        p = self.p
        sigma, nodes = self.evaluate_phase(phase)
        cost = self._effort(phase.T, nodes)
        fx, fz, my = np.array([nd.wrench[phase.stance[0]] for nd in nodes]).T
        zmp = -my / np.maximum(fz, 1e-9)
        env = p.clearance * (4 * sigma * (1 - sigma)) ** 2
        cons = [p.l_toe - p.zmp_margin - zmp, zmp + p.l_heel - p.zmp_margin,
                fz / self.mg - 0.2, (p.mu * fz - np.abs(fx)) / self.mg,
                (np.array([nd.heights for nd in nodes[1:-1]]) - env[1:-1, None]).ravel(),
                self._knee_margin(nodes)]
        return cost, np.concatenate(cons)

    def double_terms(self, phase: DoublePhase):
        """(∫ τᵀτ dt, constraint values ≥ 0) of a double support (module docstring)."""
        p, gm = self.p, self.gm
        sigma = np.linspace(0.0, 1.0, p.n_nodes)
        nodes = [gm.dynamics(*gm.double_state(phase, sg * phase.T), phase.stance)
                 for sg in sigma]
        x_lift, x_land = phase.x[phase.lifting], phase.x[phase.landing]
        w = {name: np.array([nd.wrench[name] for nd in nodes]) for name in phase.stance}
        fx = sum(w[name][:, 0] for name in phase.stance)
        fz = sum(w[name][:, 1] for name in phase.stance)
        # net moment about the lifting sole's origin: m_y − (x_k − x_lift) f_z,k per foot
        my = sum(w[name][:, 2] - (phase.x[name] - x_lift) * w[name][:, 1]
                 for name in phase.stance)
        zmp = x_lift - my / np.maximum(fz, 1e-9)
        alpha = np.array([quintic(sg)[0] for sg in sigma])
        lo = (1 - alpha) * x_lift + alpha * x_land - p.l_heel + p.zmp_margin
        hi = (1 - alpha) * x_lift + alpha * x_land + p.l_toe - p.zmp_margin
        cons = [hi - zmp, zmp - lo, fz / self.mg - 0.2, (p.mu * fz - np.abs(fx)) / self.mg,
                self._knee_margin(nodes)]
        return self._effort(phase.T, nodes), np.concatenate(cons)

    def _terms(self, x: np.ndarray, only: int | None = None):
        """Cost terms and constraints keyed as in the class docstring (only: just that key;
        the double support depends on E alone, so a knot never perturbs it)."""
        steps, doubles = self.gait(x)
        picked = {0: steps[0], 1: steps[1], 2: steps[-1]}
        out = {i: self.phase_terms(ph) for i, ph in picked.items() if only in (None, i)}
        if doubles and only is None:
            out[3] = self.double_terms(doubles[0])
        return out

    def evaluate(self, x: np.ndarray):
        """(total cost J of eq. 40, all constraints ≥ 0) for unknowns x, or None when a
        foothold is out of reach."""
        try:
            terms = self._terms(x)
        except ConfigError:
            return None
        mult = self.mult
        return (sum(mult[i] * terms[i][0] for i in terms),
                np.concatenate([terms[i][1] for i in sorted(terms)]))

    def initial_guess(self) -> np.ndarray:
        """Hand-picked start: torso upright 1 cm below q0's height, 0.8 step_length ahead of
        the stance sole at the exchange (near the landing foot), moving at the mean speed
        step_length / step_time; swing knot = the mid-step
        value of the straight cubic with the knee bent 0.5 rad more, the hip 0.25 rad more
        flexed and the ankle compensating (sole kept parallel), at the cubic's velocity."""
        p = self.p
        E = np.array([0.8 * p.step_length, self.z0 - 0.01, 0.0, p.step_length / p.step_time,
                      0.0, 0.0])
        x = np.concatenate([E, np.zeros(18)])
        bump = np.array([-0.25, 0.5, -0.25])
        for kind, ph in enumerate(self._picked(x)):
            pos, vel, _ = hermite(0.5 * ph.T, ph.T, *ph.a, *ph.b)
            c = ph.swing_cols
            x[6 + 6 * kind:12 + 6 * kind] = np.concatenate([pos[c] + bump, vel[c]])
        return x

    def _picked(self, x):
        phases = self.gait(x)[0]
        return [phases[0], phases[1], phases[-1]]

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Box on the unknowns: torso within ±step_length of the stance sole, 8 cm below to
        1 cm above q0's height, pitch ±0.3 rad, speeds ±0.6 m/s, pitch rate ±2 rad/s; knots
        within the joint limits and ±5 rad/s."""
        s, robot = self.p.step_length, self.gm.robot
        lo = [np.array([-s, self.z0 - 0.08, -0.3, -0.6, -0.6, -2.0])]
        hi = [np.array([s, self.z0 + 0.01, 0.3, 0.6, 0.6, 2.0])]
        c = self.gm.legs[self.gm.names[0]].cols
        for _ in range(3):
            lo.append(np.concatenate([robot.q_lower[c], -5.0 * np.ones(3)]))
            hi.append(np.concatenate([robot.q_upper[c], 5.0 * np.ones(3)]))
        return np.concatenate(lo), np.concatenate(hi)

    def optimize(self, x0: np.ndarray | None = None):
        """SLSQP on the 24 unknowns (scaled). Forward-difference gradients; a knot perturbs
        only its own step, so only that step is re-evaluated.

        Returns:
            (x, scipy OptimizeResult).

        Raises:
            ConfigError: the starting point has a foothold out of reach.
        """
        x0 = self.initial_guess() if x0 is None else np.asarray(x0, float)
        scale = np.concatenate([[0.02, 0.02, 0.05, 0.1, 0.1, 0.3], np.tile([0.1] * 3 + [0.5] * 3,
                                                                           3)])
        n = x0.size
        mult = self.mult
        start = self.evaluate(x0)
        if start is None:
            raise ConfigError("planar_walk: the initial guess puts a foothold out of reach")
        f_ref, n_cons = start[0], start[1].size
        cache: dict[bytes, tuple] = {}

        def split(terms):
            return sum(mult[i] * terms[i][0] for i in terms), terms

        def full(y):
            key = y.tobytes()
            if key in cache:
                return cache[key]
            x = x0 + scale * y
            try:
                f0, base = split(self._terms(x))
            except ConfigError:  # out of reach: infeasible by every constraint
                out = (10.0, -np.ones(n_cons), np.zeros(n), np.zeros((n_cons, n)))
                cache.clear()
                cache[key] = out
                return out
            keys = sorted(base)
            c0 = np.concatenate([base[i][1] for i in keys])
            ends = np.cumsum([base[i][1].size for i in keys])
            rows = {i: slice(e - base[i][1].size, e) for i, e in zip(keys, ends, strict=True)}
            gf, gc = np.zeros(n), np.zeros((n_cons, n))
            h = 1e-6
            for j in range(n):
                xj = x.copy()
                xj[j] += h * scale[j]
                only = None if j < 6 else (j - 6) // 6
                try:
                    terms = self._terms(xj, only)
                except ConfigError:
                    continue
                for i, (ci, gi) in terms.items():
                    gf[j] += mult[i] * (ci - base[i][0]) / h
                    gc[rows[i], j] = (gi - base[i][1]) / h
            out = (f0 / f_ref, c0, gf / f_ref, gc)
            cache.clear()
            cache[key] = out
            return out

        lo, hi = self.bounds()
        res = minimize(lambda y: full(y)[0], np.zeros(n), jac=lambda y: full(y)[2],
                       method="SLSQP",
                       bounds=list(zip((lo - x0) / scale, (hi - x0) / scale, strict=True)),
                       constraints=[{"type": "ineq", "fun": lambda y: full(y)[1],
                                     "jac": lambda y: full(y)[3]}],
                       options={"maxiter": self.p.max_iter, "ftol": 1e-7})
        return x0 + scale * res.x, res
