"""Fixed-step simulator: one data flow per step.

    state, τ → robot terms → contact model → integrator → StepResult

Dynamics (docs/methods.md §1): ``M v̇ = Sᵀτ − h + J_cᵀ f``. Integrators:

* ``semi_implicit_euler`` (default, symplectic): ``v⁺ = v + dt v̇``, ``q⁺ = integrate(q, dt v⁺)``;
* ``rk4`` (force-based models only): classical RK4 with every stage's configuration obtained by
  ``pin.integrate`` from q, contact forces re-evaluated at every stage; the reported force is
  the RK4-weighted mean (the impulse over the step divided by dt).

Torques are a zero-order hold over the step, clamped to the URDF effort limits. A state that
becomes NaN/Inf or faster than ``max_speed`` raises ``DivergenceError`` and is not committed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pinocchio as pin

from biped_contact_sim.contact import ContactModel, ContactState
from biped_contact_sim.errors import DIVERGED, ConfigError, DivergenceError, InputError
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.sim.terrain import PlaneTerrain

INTEGRATORS = ("semi_implicit_euler", "rk4")


@dataclass(frozen=True)
class SimSettings:
    """Simulator settings.

    Attributes:
        dt: physics step [s].
        integrator: one of ``INTEGRATORS``.
        max_speed: any |v| component above this [m/s or rad/s] counts as divergence.
    """

    dt: float = 1e-3
    integrator: str = "semi_implicit_euler"
    max_speed: float = 1e3

    def __post_init__(self):
        if not (np.isfinite(self.dt) and 0 < self.dt <= 0.1):
            raise ConfigError(f"dt = {self.dt!r} must be in (0, 0.1] s")
        if self.integrator not in INTEGRATORS:
            raise ConfigError(f"Unknown integrator: {self.integrator!r}. Valid names: "
                              + ", ".join(INTEGRATORS))


@dataclass(frozen=True)
class ExternalForce:
    """A world-frame force applied at the origin of a frame for ``t_start ≤ t < t_end``.

    Enters the dynamics as ``J_frame,linᵀ F`` (a push on the pelvis, a disturbance).
    """

    frame: str
    force: tuple[float, float, float]
    t_start: float = 0.0
    t_end: float = float("inf")


@dataclass
class StepResult:
    """Everything one step produced (state after the step, forces over the step)."""

    t: float
    q: np.ndarray
    v: np.ndarray
    a: np.ndarray  # mean v̇ over the step, (v⁺ − v)/dt
    tau: np.ndarray  # applied (clamped) torques
    p: np.ndarray  # (m, 3) point positions at the start of the step
    phi: np.ndarray  # (m,) gaps at the start of the step
    vc: np.ndarray  # (m, 3) contact-frame point velocities at the start of the step
    f_contact: np.ndarray  # (m, 3) forces in contact frames
    f_world: np.ndarray  # (m, 3) forces in the world frame
    active: np.ndarray  # (m,) bool
    stats: dict[str, Any] = field(default_factory=dict)
    vc_next: np.ndarray | None = None  # (m, 3) contact-frame velocities J_c v⁺ after the step
    f_external: np.ndarray | None = None  # (3,) external force applied over the step (world)


class Simulator:
    """Steps a ``RobotModel`` on a ``PlaneTerrain`` with a contact model.

    Args:
        robot: the robot model (its pinocchio model is shared, never mutated).
        contact: a contact model from ``biped_contact_sim.contact.make_contact_model``.
        terrain: the ground or ramp.
        settings: step size and integrator.

    Raises:
        ConfigError: the contact model refuses dt/integrator (e.g. penalty_fl with dt·k_v ≥ 2).
    """

    def __init__(self, robot: RobotModel, contact: ContactModel,
                 terrain: PlaneTerrain | None = None, settings: SimSettings | None = None):
        self.robot = robot
        self.contact = contact
        self.terrain = terrain or PlaneTerrain()
        self.settings = settings or SimSettings()
        contact.check(self.settings.dt, self.settings.integrator)
        self.data = robot.create_data()
        self._external: list[tuple[ExternalForce, int]] = []
        self._R = self.terrain.R
        self._flat = self.terrain.flat
        self._origin = np.array([0.0, 0.0, self.terrain.height])
        self._limit = robot.effort_limit
        self._mu = np.full(robot.n_points, self.terrain.mu)
        self.reset(pin.neutral(robot.model))

    @property
    def dt(self) -> float:
        return self.settings.dt

    def reset(self, q: np.ndarray, v: np.ndarray | None = None, t: float = 0.0) -> None:
        """Set the state (and forget the contact model's internal state)."""
        q = np.asarray(q, float)
        v = np.zeros(self.robot.nv) if v is None else np.asarray(v, float)
        if q.shape != (self.robot.nq,) or v.shape != (self.robot.nv,):
            raise InputError(f"reset: q must have length {self.robot.nq} and v {self.robot.nv}; "
                             f"got {q.shape} and {v.shape}")
        self.q, self.v, self.t = q.copy(), v.copy(), float(t)
        self.contact.reset(self.robot.n_points)

    def add_external_force(self, external: ExternalForce) -> None:
        """Schedule an external force (kept across ``reset``; ``clear_external_forces``).

        Raises:
            ConfigError: unknown frame (listing the model's frames) or a malformed force.
        """
        model = self.robot.model
        if not model.existFrame(external.frame):
            raise ConfigError(f"Unknown frame {external.frame!r} for an external force. "
                              f"Frames: {', '.join(f.name for f in model.frames)}")
        force = np.asarray(external.force, float)
        if force.shape != (3,) or not np.isfinite(force).all():
            raise ConfigError(f"external force {external.force!r} must be 3 finite numbers [N]")
        self._external.append((external, model.getFrameId(external.frame)))

    def clear_external_forces(self) -> None:
        self._external = []

    def _external_force(self, t: float, tau_free: np.ndarray) -> np.ndarray | None:
        """Add ``Σ J_linᵀ F`` of the forces active at t to ``tau_free`` (after ``terms``)."""
        total = None
        for ext, frame_id in self._external:
            if ext.t_start <= t < ext.t_end:
                force = np.asarray(ext.force, float)
                J = pin.getFrameJacobian(self.robot.model, self.data, frame_id,
                                         pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)[:3]
                tau_free += J.T @ force
                total = force if total is None else total + force
        return total

    def clamp_torque(self, tau) -> np.ndarray:
        """Validate τ (length n, finite) and clamp it to the effort limits.

        Raises:
            InputError: wrong length or NaN/Inf; the state is unchanged.
        """
        tau = np.asarray(tau, dtype=float)
        n = self.robot.n_joints
        if tau.shape != (n,):
            raise InputError(f"torque command has shape {tau.shape}; expected ({n},) for joints "
                             + ", ".join(self.robot.actuated_joint_names))
        if not np.isfinite(tau).all():
            raise InputError("torque command contains NaN or Inf")
        return np.minimum(np.maximum(tau, -self._limit), self._limit)

    def contact_state(self, q: np.ndarray, v: np.ndarray, tau: np.ndarray):
        """Robot terms at (q, v) and the contact model's view of them (contact frames)."""
        robot = self.robot
        terms = robot.terms(self.data, q, v)
        m = robot.n_points
        local = terms.p - self._origin
        if self._flat:  # contact frame = world frame: no rotation to apply
            Jc, gamma_c = terms.J, terms.gamma
        else:
            local = local @ self._R
            Jc = np.einsum("ji,mjn->min", self._R, terms.J.reshape(m, 3, -1)).reshape(3 * m, -1)
            gamma_c = (terms.gamma.reshape(m, 3) @ self._R).ravel()
        tau_free = -terms.h
        tau_free[robot.v_idx] += tau
        self._f_ext = self._external_force(self.t, tau_free) if self._external else None
        state = ContactState(self.dt, local[:, 2], (Jc @ v).reshape(m, 3), Jc, gamma_c,
                             terms.Minv, tau_free, local[:, :2], self._mu)
        return terms, state

    def _acceleration(self, q, v, tau, commit):
        terms, state = self.contact_state(q, v, tau)
        res = self.contact.compute(state, commit=commit)
        a = state.a_free + terms.Minv @ (state.Jc.T @ res.f.ravel())
        return a, terms, state, res

    def step(self, tau) -> StepResult:
        """Advance one step under the zero-order-hold torque τ.

        Raises:
            InputError: malformed τ (nothing changes).
            DivergenceError: the new state is NaN/Inf or too fast (not committed).
        """
        tau = self.clamp_torque(tau)
        dt, model, q, v = self.dt, self.robot.model, self.q, self.v
        a1, terms, state, res = self._acceleration(q, v, tau, commit=True)
        f_ext = self._f_ext
        if self.settings.integrator == "semi_implicit_euler":
            v_new = v + dt * a1
            q_new = pin.integrate(model, q, dt * v_new)
            f = res.f
        else:  # rk4
            v2 = v + 0.5 * dt * a1
            a2, *_, r2 = self._acceleration(pin.integrate(model, q, 0.5 * dt * v), v2, tau, False)
            v3 = v + 0.5 * dt * a2
            a3, *_, r3 = self._acceleration(pin.integrate(model, q, 0.5 * dt * v2), v3, tau, False)
            v4 = v + dt * a3
            a4, *_, r4 = self._acceleration(pin.integrate(model, q, dt * v3), v4, tau, False)
            v_new = v + dt / 6.0 * (a1 + 2 * a2 + 2 * a3 + a4)
            q_new = pin.integrate(model, q, dt / 6.0 * (v + 2 * v2 + 2 * v3 + v4))
            f = (res.f + 2 * r2.f + 2 * r3.f + r4.f) / 6.0
        t_new = self.t + dt
        if not (np.isfinite(q_new).all() and np.isfinite(v_new).all()):
            raise DivergenceError(DIVERGED.format(t=t_new, what="state is NaN or Inf"))
        speed = np.abs(v_new).max()
        if speed > self.settings.max_speed:
            raise DivergenceError(DIVERGED.format(
                t=t_new, what=f"|v| = {speed:.3g} exceeds max_speed {self.settings.max_speed:g}"))
        result = StepResult(t_new, q_new, v_new, (v_new - v) / dt, tau, terms.p, state.phi,
                            state.vc, f, f @ self._R.T, res.active, res.stats,
                            (state.Jc @ v_new).reshape(-1, 3), f_ext)
        self.q, self.v, self.t = q_new, v_new, t_new
        return result
