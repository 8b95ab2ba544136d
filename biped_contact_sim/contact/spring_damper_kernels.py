"""Compiled spring–damper law (numba kernels with declared signatures, ``biped_contact_sim.jit``):
the forces of every point in one call, its stiction anchors looked up by contact id. The
numpy reference is ``SpringDamperContact.compute_reference`` (``contact.spring_damper``).
"""

from __future__ import annotations

import numpy as np

from biped_contact_sim.jit import B1, F1, F2, I1, F1s, F2s, I1s, b1, f8, kernel


@kernel((I1s, F1, F1, F2, F2s, F1s, F1, F1, B1), error_model="numpy")
def spring_step(ids, table, phi, vc, pt, mu, params, out, active_out):
    """``spring_forces`` with the elongations looked up by contact id in ``table`` (rows (id,
    e₁, e₂) sorted by id, flat; ids are integers, exact in float64 below 2⁵³) and advanced by
    ``dt ṗ_t`` (``params[8]`` = dt), into ``out`` (6m + 2) = [f (3m) | statistics (2) | the new
    table: the points that keep an anchor, sorted by id (3k) | unused] and ``active_out`` (m,)
    (given: each array numba returns costs a boxing); ``pt`` is not read.

    Returns:
        k, the rows of the new table.
    """
    ids = ids.astype(np.int64)
    k = table.shape[0] // 3
    known_ids = np.empty(k, dtype=np.int64)
    anchors = np.empty((k, 2))
    for j in range(k):
        known_ids[j] = np.int64(table[3 * j])
        anchors[j, 0] = table[3 * j + 1]
        anchors[j, 1] = table[3 * j + 2]
    elongation = lookup_anchors(known_ids, anchors, ids)
    dt = params[8]
    for i in range(elongation.shape[0]):  # e_k = e_{k−1} + dt ṗ_t (NaN stays NaN: new)
        elongation[i, 0] += dt * vc[i, 0]
        elongation[i, 1] += dt * vc[i, 1]
    f, active, new, stats = spring_forces(phi, vc, mu, elongation, params[0], params[1],
                                          params[2] != 0.0, params[3] != 0.0, params[4],
                                          params[5], params[6], params[7])
    keep = np.flatnonzero(~np.isnan(new[:, 0]))
    order = keep[np.argsort(ids[keep], kind="mergesort")]
    m = phi.shape[0]
    for i in range(m):
        out[3 * i], out[3 * i + 1], out[3 * i + 2] = f[i, 0], f[i, 1], f[i, 2]
        active_out[i] = active[i]
    out[3 * m], out[3 * m + 1] = stats[0], stats[1]
    o = 3 * m + 2
    for t in range(order.shape[0]):
        out[o + 3 * t] = np.float64(ids[order[t]])
        out[o + 3 * t + 1] = new[order[t], 0]
        out[o + 3 * t + 2] = new[order[t], 1]
    return order.shape[0]


@kernel((I1, F2, I1), error_model="numpy")
def lookup_anchors(known_ids, anchors, ids):
    """The rows (m, 2) of the points with ``ids`` (NaN where a point has none); ``known_ids``
    sorted."""
    m = ids.shape[0]
    out = np.full((m, 2), np.nan)
    n = known_ids.shape[0]
    if n == 0:
        return out
    pos = np.searchsorted(known_ids, ids)
    for i in range(m):
        j = pos[i]
        if j < n and known_ids[j] == ids[i]:
            out[i, 0] = anchors[j, 0]
            out[i, 1] = anchors[j, 1]
    return out


@kernel((F1, F2, F1s, F2, f8, f8, b1, b1, f8, f8, f8, f8), error_model="numpy")
def spring_forces(phi, vc, mu, elongation, kp, kv, linear, clamp, hc_n, hc_c, kt, ct):
    """Normal law (eq. 2 or Hunt–Crossley) and the stiction spring of the module docstring.

    Args:
        elongation: (m, 2) the springs' elongations e_k of this step (NaN: touch-down, e = 0);
            a copy is updated.

    Returns:
        f (m, 3), active (m,), the elongations after the step (NaN off contact) and the
        statistics (sliding points, smallest normal force of the active points or 0).
    """
    m = phi.shape[0]
    f = np.zeros((m, 3))
    active = phi < 0.0
    out = elongation.copy()
    sliding = 0
    fmin = np.inf
    for i in range(m):
        if not active[i]:
            out[i, 0] = np.nan
            out[i, 1] = np.nan
            continue
        delta, ddot = -phi[i], -vc[i, 2]
        if linear:
            fn = kp * delta + kv * ddot
        else:
            fn = kp * delta ** hc_n * (1.0 + hc_c * ddot)
        if clamp:
            fn = max(fn, 0.0)
        if np.isnan(out[i, 0]):  # touch-down: anchor where the point entered
            out[i, 0], out[i, 1] = 0.0, 0.0
        f1 = -kt * out[i, 0] - ct * vc[i, 0]
        f2 = -kt * out[i, 1] - ct * vc[i, 1]
        limit = mu[i] * max(fn, 0.0)
        norm = np.sqrt(f1 * f1 + f2 * f2)
        if norm > limit:
            scale = limit / norm if norm > 0.0 else limit
            f1 *= scale
            f2 *= scale
            out[i, 0] = -(f1 + ct * vc[i, 0]) / kt
            out[i, 1] = -(f2 + ct * vc[i, 1]) / kt
            sliding += 1
        f[i, 0], f[i, 1], f[i, 2] = f1, f2, fn
        fmin = min(fmin, fn)
    stats = np.array([float(sliding), fmin if fmin < np.inf else 0.0])
    return f, active, out, stats
