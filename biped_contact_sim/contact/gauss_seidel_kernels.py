"""Compiled loops of the ``gauss_seidel`` contact model (numba kernels with declared signatures,
``biped_contact_sim.jit``): the candidates, their Delassus blocks, the impact LCP and the
whole step on the simulator's buffer; the mathematics is in ``contact.gauss_seidel``.
"""

from __future__ import annotations

import numpy as np

from biped_contact_sim.contact.base_kernels import packed_delassus
from biped_contact_sim.jit import B1, F1, F2, I1, F1s, I1s, b1, f8, i8, kernel
from biped_contact_sim.solvers.gauss_seidel_kernels import gauss_seidel_kernel
from biped_contact_sim.solvers.lemke_kernels import lemke_kernel
from biped_contact_sim.solvers.warm_start_kernels import match_keys


@kernel((F1, F2, f8, f8))
def candidates(phi, vc, dt, margin):
    """Indices of the candidate points: ``φ_i + dt·min(v_n,i, 0) ≤ margin`` (step 1).

    A point that would reach the surface within the step is a candidate even if it starts
    above the margin, so that it is stopped before it crosses instead of being pushed out of
    a penetration afterwards.
    """
    n = phi.shape[0]
    out = np.empty(n, dtype=np.int64)
    k = 0
    for i in range(n):
        if phi[i] + dt * min(vc[i, 2], 0.0) <= margin:
            out[k] = i
            k += 1
    return out[:k]


@kernel((I1, F2, F1, F2, F1, F1s))
def gather_contacts(idx, G, b, vc, phi, mu):
    """The sub-problem of the points ``idx``: ``G[idx, idx]`` (3×3 blocks of the Delassus
    operator), ``b``, ``v_c``, ``φ``, ``μ`` restricted to them, and ``tr G[idx, idx]`` (the
    scale of the regularisation).
    """
    m = idx.shape[0]
    Gs = np.empty((3 * m, 3 * m))
    bs = np.empty(3 * m)
    vs = np.empty((m, 3))
    ps = np.empty(m)
    ms = np.empty(m)
    trace = 0.0
    for a in range(m):
        i = idx[a]
        ps[a] = phi[i]
        ms[a] = mu[i]
        for r in range(3):
            vs[a, r] = vc[i, r]
            bs[3 * a + r] = b[3 * i + r]
            for c in range(m):
                for s in range(3):
                    Gs[3 * a + r, 3 * c + s] = G[3 * i + r, 3 * idx[c] + s]
            trace += Gs[3 * a + r, 3 * a + r]
    return Gs, bs, vs, ps, ms, trace


@kernel((F2, F2, F1, f8, F1, f8, f8, i8, f8, F1, F2, B1))
def impact_kernel(G, vc, phi, dt, e, threshold, pivot_tol, max_pivots, residual_tol, p, vc_out,
                  impacting):
    """Compiled body of :func:`newton_impact`; fills p, vc_out, impacting.

    Returns the Lemke status code (``solvers.lemke.STATUSES``), or −1 when there is no
    impact in this step.
    """
    m = phi.shape[0]
    p[:] = 0.0
    vc_out[:, :] = vc
    hit = False
    for i in range(m):
        vn = vc[i, 2]
        impacting[i] = vn < -threshold
        if impacting[i] and phi[i] + dt * vn <= 0.0:
            hit = True
    if not hit:
        impacting[:] = False
        return -1
    Gnn = np.empty((m, m))
    q = np.empty(m)
    for i in range(m):
        vn = vc[i, 2]
        q[i] = (1.0 + e[i]) * vn if impacting[i] else vn
        for k in range(m):
            Gnn[i, k] = G[3 * i + 2, 3 * k + 2]
    w = np.empty(m)
    zmask = np.empty(m, dtype=np.bool_)
    status, _, _ = lemke_kernel(Gnn, q, np.ones(m), pivot_tol, max_pivots, residual_tol, p, w,
                                zmask)
    if status != 0:
        p[:] = 0.0
        return status
    for r in range(3 * m):
        s = 0.0
        for k in range(m):
            s += G[r, 3 * k + 2] * p[k]
        vc_out[r // 3, r % 3] += s
    return status


@kernel((F1, i8, i8, i8, b1, F2, F1, F1s, f8, F1, I1, F2, I1s, F2, B1, I1, F2, F1))
def gauss_seidel_from_packed(W, m, nv, nj, drift, vc_all, phi_all, mu_all, dt, params,
                             warm_keys, warm_rows, ids, f, active, keys, rows, stats):
    """``gauss_seidel_contact_kernel`` on ``packed_delassus(W, m, nv, nj, all points, drift)``
    (the Delassus operator and b made and used in one call)."""
    G, b = packed_delassus(W, m, nv, nj, np.arange(m), drift)
    gauss_seidel_contact_kernel(G, b, vc_all, phi_all, mu_all, dt, params, warm_keys,
                                warm_rows, ids, f, active, keys, rows, stats)


@kernel((F2, F1, F2, F1, F1s, f8, F1, I1, F2, I1s, F2, B1, I1, F2, F1))
def gauss_seidel_contact_kernel(G_all, b_all, vc_all, phi_all, mu_all, dt, params, warm_keys,
                                warm_rows, keys_all, f_all, active_all, keys_out, rows_out,
                                stats):
    """Steps 1–3 of the module docstring (compiled), from the Delassus matrix ``G_all`` and
    free acceleration ``b_all`` over all m_all points.

    ``params`` = (margin, e, v_thr, β, tolerance, max_sweeps, ω, pivot_tol, residual_tol,
    warm_start). Warm start: the forces stored under ``warm_keys`` (``warm_rows``) for the
    points' ``keys_all``. Writes the forces ``f_all`` (m_all, 3, zero on entry) and
    ``active_all`` of every point, the step-3 forces into ``rows_out`` (m_all, 3: the next warm
    start) under ``keys_out`` (a copy of ``keys_all``) and ``stats`` in the order of
    ``_GS_STATS``.
    """
    margin, e_r, threshold, beta, tol = params[0], params[1], params[2], params[3], params[4]
    max_sweeps, omega, pivot_tol = int(params[5]), params[6], params[7]
    residual_tol, warm = params[8], params[9] != 0.0
    idx = candidates(phi_all, vc_all, dt, margin)  # step 1
    m = idx.shape[0]
    stats[:] = 0.0
    rows_out[:, :] = 0.0
    active_all[:] = False
    keys_out[:] = keys_all
    if m == 0:
        return
    max_pivots = max(10, 10 * m * m)  # solvers.lemke.default_max_pivots
    keys = np.empty(m, dtype=np.int64)
    for a in range(m):
        keys[a] = keys_all[idx[a]]
    if m == phi_all.shape[0]:  # every point a candidate (a standing robot): no copies
        G, b, vc, phi = G_all, b_all, vc_all, phi_all
    else:
        G = np.empty((3 * m, 3 * m))
        b = np.empty(3 * m)
        for a in range(m):
            for r in range(3):
                b[3 * a + r] = b_all[3 * idx[a] + r]
                for c in range(m):
                    for s in range(3):
                        G[3 * a + r, 3 * c + s] = G_all[3 * idx[a] + r, 3 * idx[c] + s]
        vc = np.empty((m, 3))
        phi = np.empty(m)
        for a in range(m):
            i = idx[a]
            phi[a] = phi_all[i]
            for r in range(3):
                vc[a, r] = vc_all[i, r]
    e = np.full(m, e_r)
    vc1 = np.empty((m, 3))
    p_imp = np.empty(m)
    impacting = np.empty(m, dtype=np.bool_)
    code = impact_kernel(G, vc, phi, dt, e, threshold, pivot_tol, max_pivots, residual_tol,
                         p_imp, vc1, impacting)
    keep = np.empty(m, dtype=np.int64)
    k = 0
    n_imp = 0
    for a in range(m):
        if impacting[a]:
            n_imp += 1
        # Rebounding points separate: step 3 must not see them (no cancelled restitution).
        if not (impacting[a] and vc1[a, 2] > threshold):
            keep[k] = a
            k += 1
    stats[0] = m
    stats[1] = 3 * k
    stats[2] = n_imp
    stats[3] = 1.0 if code > 0 else 0.0
    pos = np.empty(m, dtype=np.int64)
    match_keys(warm_keys, keys, pos)
    if k == m:  # every candidate kept (no rebound): G itself
        Gs = G
    else:
        Gs = np.empty((3 * k, 3 * k))
        for a in range(k):
            for r in range(3):
                for bb in range(k):
                    for s in range(3):
                        Gs[3 * a + r, 3 * bb + s] = G[3 * keep[a] + r, 3 * keep[bb] + s]
    c = np.empty(3 * k)
    f = np.zeros(3 * k)
    mus = np.empty(k)
    for a in range(k):
        i = keep[a]
        mus[a] = mu_all[idx[i]]
        for r in range(3):
            ra = 3 * a + r
            c[ra] = dt * b[3 * i + r] + vc1[i, r]
            if warm and pos[i] >= 0:
                f[ra] = dt * warm_rows[pos[i], r]  # impulse of the stored force
        ph = phi[i]
        c[3 * a + 2] += (max(ph, 0.0) + beta * min(ph, 0.0)) / dt
    if k:
        v = np.empty(3 * k)
        converged, sweeps, res = gauss_seidel_kernel(Gs, c, mus, f, tol, max_sweeps, omega, v)
        stats[4] = sweeps
        stats[5] = 0.0 if converged else 1.0
        stats[6] = res
    for a in range(k):
        for r in range(3):
            rows_out[idx[keep[a]], r] = f[3 * a + r] / dt
    for a in range(m):
        i = idx[a]
        for r in range(3):
            f_all[i, r] = rows_out[i, r]
        f_all[i, 2] += p_imp[a] / dt  # the impact impulse is normal only (eq. 5)
        active_all[i] = f_all[i, 2] > 0.0 or phi[a] <= 0.0
