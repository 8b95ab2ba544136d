"""RK4 on the configuration manifold for the force-based contact models (Runge–Kutta–Munthe-Kaas:
H. Munthe-Kaas, "Runge-Kutta methods on Lie groups", BIT 38, 1998, doi:10.1007/BF02510919).

The configuration is ``q = q₀ ⊕ ξ`` with ξ in the tangent space at q₀ (``pin.integrate``), whose
rate is ``ξ̇ = J(ξ)⁻¹ v`` (``pin.dIntegrate``); the classical tableau runs on (ξ, v), both vectors
of one space, and ``q⁺ = q₀ ⊕ ξ⁺``. (Adding the stage velocities, which live in the tangent
spaces of different base poses, without J⁻¹ makes it second order on a free flyer.) Contact
forces are re-evaluated at every stage (``Simulator.contact_state`` with the step's contact
set, uncommitted); the reported force is the RK4-weighted mean, the impulse over the step
divided by dt.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from biped_contact_sim.robot.model_kernels import euler_velocity


def chart_velocity(model: pin.Model, q: np.ndarray, xi: np.ndarray,
                   v: np.ndarray) -> np.ndarray:
    """ξ̇ = J(ξ)⁻¹ v: the rate of the chart coordinate ξ (q = q₀ ⊕ ξ) of a configuration
    moving with velocity v, J = ∂(q₀ ⊕ ξ)/∂ξ (pinocchio ``dIntegrate``, ARG1)."""
    J = pin.dIntegrate(model, q, xi, pin.ArgumentPosition.ARG1)
    return np.linalg.solve(J, v)


def rk4_step(sim, q: np.ndarray, v: np.ndarray, tau: np.ndarray, state, res) -> tuple:
    """One RK4 step of ``sim`` from (q, v) under the clamped τ, its first stage's contact state
    and result given (the step's, committed).

    Returns:
        (q⁺, v⁺, mean v̇, J_c v⁺ (m, 3), mean contact force (m, 3), max |v⁺| (NaN if not
        finite)).
    """
    model, dt = sim.model, sim.dt

    def stage(xi: np.ndarray, v_stage: np.ndarray):
        _, stage_state = sim.contact_state(pin.integrate(model, q, xi), v_stage, tau,
                                           sim.last_contacts)
        r = sim.contact.compute(stage_state, commit=False)
        return stage_state.contact_acceleration(r.f), r

    a1 = state.contact_acceleration(res.f)
    v2, xi2 = v + 0.5 * dt * a1, 0.5 * dt * v
    a2, r2 = stage(xi2, v2)
    k2 = chart_velocity(model, q, xi2, v2)
    v3, xi3 = v + 0.5 * dt * a2, 0.5 * dt * k2
    a3, r3 = stage(xi3, v3)
    k3 = chart_velocity(model, q, xi3, v3)
    v4, xi4 = v + dt * a3, dt * k3
    a4, r4 = stage(xi4, v4)
    k4 = chart_velocity(model, q, xi4, v4)
    a = (a1 + 2 * a2 + 2 * a3 + a4) / 6.0
    v_new, vc_next, speed = euler_velocity(v, a, dt, state.Jc)
    f = (res.f + 2 * r2.f + 2 * r3.f + r4.f) / 6.0
    q_new = pin.integrate(model, q, dt / 6.0 * (v + 2 * k2 + 2 * k3 + k4))
    return q_new, v_new, a, vc_next, f, speed
