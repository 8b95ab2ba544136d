"""Compiled loops of the walk's references (numba kernels with declared signatures,
``biped_contact_sim.jit``).

* ``hermite``: joint references between two grid points, cubic Hermite in q from (q, v),
  linear in v̇; ``walk_state``: those and the CoM's constant-jerk cubic in one call
  (``walking.WalkBehavior.reference``).
"""

from __future__ import annotations

from biped_contact_sim.jit import F1, F1s, F2s, f8, i8, kernel, ro


@kernel((ro(F2s), ro(F2s), ro(F2s), i8, f8, f8, F1s, F1s, F1s))
def hermite(q, v, a, k, tau, dt, q_out, v_out, a_out):  # pragma: no cover - compiled
    """q_out, v_out, a_out at the fraction tau ∈ [0, 1] between grid rows k and k + 1:
    h00 q_k + h10 dt v_k + h01 q_k+1 + h11 dt v_k+1 and its derivative, (1 − tau) a_k +
    tau a_k+1."""
    t2 = tau * tau
    t3 = t2 * tau
    h00, h10 = 2.0 * t3 - 3.0 * t2 + 1.0, (t3 - 2.0 * t2 + tau) * dt
    h01, h11 = -2.0 * t3 + 3.0 * t2, (t3 - t2) * dt
    d00, d10 = (6.0 * t2 - 6.0 * tau) / dt, 3.0 * t2 - 4.0 * tau + 1.0
    d11 = 3.0 * t2 - 2.0 * tau
    for i in range(q.shape[1]):
        q0, q1, v0, v1 = q[k, i], q[k + 1, i], v[k, i], v[k + 1, i]
        q_out[i] = h00 * q0 + h10 * v0 + h01 * q1 + h11 * v1
        v_out[i] = d00 * (q0 - q1) + d10 * v0 + d11 * v1
        a_out[i] = (1.0 - tau) * a[k, i] + tau * a[k + 1, i]


@kernel((ro(F2s), ro(F2s), ro(F2s), i8, f8, f8, ro(F2s), ro(F2s), ro(F2s), ro(F2s), i8, f8,
         F1))
def walk_state(q, v, a, k, tau, dt, c, dc, ddc, jerk, kc, tau_c,
               out):  # pragma: no cover - compiled
    """``out`` = [q, v, v̇ (``hermite`` between rows k and k + 1 at the fraction tau); the
    CoM's constant-jerk cubic from row kc at tau_c seconds: c + ċ τ + c̈ τ²/2 + j τ³/6, its
    velocity ċ + c̈ τ + j τ²/2 and acceleration c̈ + j τ] (``walking.WalkBehavior.reference``,
    whose numpy form ``com_state`` is the same expressions)."""
    n = q.shape[1]
    hermite(q, v, a, k, tau, dt, out[:n], out[n:2 * n], out[2 * n:3 * n])
    t2 = tau_c * tau_c / 2
    t3 = t2 * tau_c / 3
    i = 3 * n
    for d in range(3):
        x0, x1, x2, x3 = c[kc, d], dc[kc, d], ddc[kc, d], jerk[kc, d]
        out[i + d] = x0 + x1 * tau_c + x2 * t2 + x3 * t3
        out[i + 3 + d] = x1 + x2 * tau_c + x3 * t2
        out[i + 6 + d] = x2 + x3 * tau_c
