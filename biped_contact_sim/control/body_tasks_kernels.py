"""Compiled loop of the body tasks (a numba kernel with a declared signature,
``biped_contact_sim.jit``).

* ``point_rows``: rigid transport of a frame's 6-D Jacobian and drift (LOCAL_WORLD_ALIGNED,
  classical acceleration at v̇ = 0) to a point at world offset r from its origin,
      J_P = [J_lin − [r]× J_ang; J_ang],   γ_P = [a + α × r + ω × (ω × r); α],   ω = J_ang v.
"""

from __future__ import annotations

from biped_contact_sim.jit import F1s, F2s, kernel, ro


@kernel((ro(F2s), ro(F1s), ro(F1s), ro(F1s), F2s, F1s))
def point_rows(J, acc, v, r, J_out, drift_out):  # pragma: no cover - compiled
    """J_out (6, nv), drift_out (6,) of the point at offset r (module docstring); the frame's
    angular velocity ω = J_ang v."""
    nv = J.shape[1]
    r0, r1, r2 = r[0], r[1], r[2]
    w0 = w1 = w2 = 0.0
    for j in range(nv):
        j3, j4, j5 = J[3, j], J[4, j], J[5, j]
        J_out[0, j] = J[0, j] - (r1 * j5 - r2 * j4)
        J_out[1, j] = J[1, j] - (r2 * j3 - r0 * j5)
        J_out[2, j] = J[2, j] - (r0 * j4 - r1 * j3)
        J_out[3, j] = j3
        J_out[4, j] = j4
        J_out[5, j] = j5
        w0 += j3 * v[j]
        w1 += j4 * v[j]
        w2 += j5 * v[j]
    a0, a1, a2 = acc[3], acc[4], acc[5]
    # ω × r, then α × r + ω × (ω × r)
    c0, c1, c2 = w1 * r2 - w2 * r1, w2 * r0 - w0 * r2, w0 * r1 - w1 * r0
    drift_out[0] = acc[0] + (a1 * r2 - a2 * r1) + (w1 * c2 - w2 * c1)
    drift_out[1] = acc[1] + (a2 * r0 - a0 * r2) + (w2 * c0 - w0 * c2)
    drift_out[2] = acc[2] + (a0 * r1 - a1 * r0) + (w0 * c1 - w1 * c0)
    drift_out[3] = a0
    drift_out[4] = a1
    drift_out[5] = a2
