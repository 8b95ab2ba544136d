"""Compiled (numba) step of ``time_stepping`` (contact/time_stepping.py, whose module docstring
gives the method: the velocity–impulse LCP of Bravo & Rengifo eqs. 24–26 with a polyhedral
cone, its warm-started basis, Lemke, Fischer–Burmeister and the Gauss–Seidel fallback).

``build_lcp_kernel`` is tested equal to the readable numpy
``TimeSteppingContact.build_lcp_reference``; ``warm_basis_solve`` against
``lemke_kernels.basis_solve``; the solvers it calls against their
numpy references (test_lemke, test_gauss_seidel_fb).
"""

from __future__ import annotations

import math

import numpy as np

from biped_contact_sim.contact.base_kernels import packed_delassus
from biped_contact_sim.contact.gauss_seidel_kernels import candidates, gather_contacts
from biped_contact_sim.jit import B1, F1, F2, I1, F1s, I1s, f8, i8, kernel
from biped_contact_sim.solvers.fischer_burmeister_kernels import fischer_burmeister_kernel
from biped_contact_sim.solvers.gauss_seidel_kernels import gauss_seidel_kernel
from biped_contact_sim.solvers.lemke_kernels import (
    basic_indices,
    lcp_residual,
    lemke_kernel,
    lu_solve,
)
from biped_contact_sim.solvers.linalg_kernels import cho_solve, cholesky
from biped_contact_sim.solvers.warm_start_kernels import basic_flags, match_keys


@kernel((F2, F1, F2, F1, F1s, f8, F2, f8, f8, F2, F1))
def build_lcp_kernel(G, b, vc, phi, mu, dt, D, beta, eps, A, q):
    """The LCP ``(A, q)`` of the module docstring (``TimeSteppingContact.build_lcp_reference``),
    compiled.

    ``G`` (3m, 3m), ``b`` (3m,), ``vc`` (m, 3), ``phi``/``mu`` (m,), ``D`` (2, d); ``eps`` is
    the absolute regularisation. Fills A (m(2+d), m(2+d)) and q.
    """
    m = phi.shape[0]
    d = D.shape[1]
    nb = m + m * d  # impulse unknowns p_n, β
    A[:, :] = 0.0
    # Tangential rows of G mapped by D: GD[r, i*d + j] = G[r, 3i:3i+2]·d_j (contact rows r).
    GD = np.empty((3 * m, m * d))
    for r in range(3 * m):
        for i in range(m):
            g0, g1 = G[r, 3 * i], G[r, 3 * i + 1]
            for j in range(d):
                GD[r, i * d + j] = g0 * D[0, j] + g1 * D[1, j]
    for i in range(m):
        for k in range(m):
            A[i, k] = G[3 * i + 2, 3 * k + 2]
        for c in range(m * d):
            A[i, m + c] = GD[3 * i + 2, c]
        for j in range(d):
            row = m + i * d + j
            for k in range(m):
                A[row, k] = D[0, j] * G[3 * i, 3 * k + 2] + D[1, j] * G[3 * i + 1, 3 * k + 2]
            for c in range(m * d):
                A[row, m + c] = D[0, j] * GD[3 * i, c] + D[1, j] * GD[3 * i + 1, c]
            A[row, nb + i] = 1.0
            A[nb + i, m + i * d + j] = -1.0
        A[nb + i, i] = mu[i]
    for r in range(nb):
        A[r, r] += eps
    lcp_rhs(b, vc, phi, dt, D, beta, q)


@kernel((F1, F2, F1, f8, F2, f8, F1))
def lcp_rhs(b, vc, phi, dt, D, beta, q):
    """The vector q of the LCP of the module docstring (``build_lcp_kernel``'s q)."""
    m = phi.shape[0]
    d = D.shape[1]
    nb = m + m * d
    for i in range(m):
        vf0 = vc[i, 0] + dt * b[3 * i]
        vf1 = vc[i, 1] + dt * b[3 * i + 1]
        vfn = vc[i, 2] + dt * b[3 * i + 2]
        ph = phi[i]
        q[i] = vfn + (max(ph, 0.0) + beta * min(ph, 0.0)) / dt
        for j in range(d):
            q[m + i * d + j] = D[0, j] * vf0 + D[1, j] * vf1
        q[nb + i] = 0.0


@kernel((F2, F1, F1))
def spd_solve(M, rhs, x):
    """Solve ``M x = rhs`` for a symmetric positive definite M by Cholesky ``M = L Lᵀ`` (from
    M's lower triangle); False (x untouched) when a pivot is not positive or x is not finite."""
    n = M.shape[0]
    ok, L = cholesky(M, 0.0, 0.0)
    if not ok:  # a pivot not positive (or NaN)
        return False
    y = cho_solve(L, rhs.reshape(n, 1))
    for i in range(n):
        if not np.isfinite(y[i, 0]):
            return False
    x[:] = y[:, 0]
    return True


@kernel((i8, i8, I1, I1, I1, I1))
def lcp_unknowns(m, d, cols, kind, point, direction):
    """Kind (0: p_n, 1: β, 2: λ), point and direction of the LCP unknowns ``cols`` (the
    ordering ``z = [p_n; β; λ]`` of the module docstring, β point-major)."""
    nb = m + m * d
    for t in range(cols.shape[0]):
        c = cols[t]
        if c < m:
            kind[t], point[t], direction[t] = 0, c, 0
        elif c < nb:
            kind[t], point[t], direction[t] = 1, (c - m) // d, (c - m) % d
        else:
            kind[t], point[t], direction[t] = 2, c - nb, 0


@kernel((F2, F2, F1s, f8, F1, I1, F1, F1))
def warm_basis_solve(G, D, mu, eps, q, cols, z, w):
    """The complementary basis ``cols`` of the LCP of the module docstring: ``A_BB z_B = −q_B``
    (``build_lcp_kernel``'s block, by Cholesky when it is symmetric positive definite, else by
    ``lemke_kernels.lu_solve`` as ``basis_solve`` on the whole A), ``z_N = 0``; then
    ``w = A z + q`` in the contact space, without A: the impulse ``P = N p_n + T β``,
    ``v = G P`` and ``w = [Nᵀv + ε p_n; Tᵀv + ε β + E λ; μ p_n − Eᵀβ] + q`` (the same numbers
    as ``A z + q`` up to rounding).

    Returns:
        ``(ok, residual)`` with ``residual = maxᵢ |min(zᵢ, wᵢ)|``; ok False when ``A_BB`` is
        singular (z = 0 then).
    """
    m = mu.shape[0]
    d = D.shape[1]
    nb = m + m * d
    n = q.shape[0]
    k = cols.shape[0]
    kind = np.empty(k, dtype=np.int64)
    point = np.empty(k, dtype=np.int64)
    direction = np.empty(k, dtype=np.int64)
    lcp_unknowns(m, d, cols, kind, point, direction)  # the integer divisions, once
    # A_BB: build_lcp_kernel's entries by the same operations (so the same to the last bit),
    # written out here (a function call per entry, passing G, costs ~20× the entry).
    M = np.empty((k, k))
    rhs = np.empty(k)
    for a in range(k):
        rhs[a] = -q[cols[a]]
        kr, i, j = kind[a], point[a], direction[a]
        for c in range(k):
            kc, p, jj = kind[c], point[c], direction[c]
            if kr == 2:  # λ row of point i: [diag μ, −Eᵀ, 0]
                if kc == 0:
                    v = mu[i] if p == i else 0.0
                else:
                    v = -1.0 if kc == 1 and p == i else 0.0
            elif kc == 2:  # λ column: E
                v = 1.0 if kr == 1 and p == i else 0.0
            elif kr == 0:
                if kc == 0:
                    v = G[3 * i + 2, 3 * p + 2]
                else:
                    v = G[3 * i + 2, 3 * p] * D[0, jj] + G[3 * i + 2, 3 * p + 1] * D[1, jj]
            elif kc == 0:
                v = D[0, j] * G[3 * i, 3 * p + 2] + D[1, j] * G[3 * i + 1, 3 * p + 2]
            else:
                gd0 = G[3 * i, 3 * p] * D[0, jj] + G[3 * i, 3 * p + 1] * D[1, jj]
                gd1 = G[3 * i + 1, 3 * p] * D[0, jj] + G[3 * i + 1, 3 * p + 1] * D[1, jj]
                v = D[0, j] * gd0 + D[1, j] * gd1
            M[a, c] = v + eps if a == c and kr != 2 else v
    zb = np.empty(k)
    z[:] = 0.0
    # Without a λ in the basis (no point sliding) A_BB = H_Bᵀ G H_B + εI is symmetric positive
    # definite (ε > 0): Cholesky, half the work of the LU and as accurate; otherwise (or if a
    # pivot is not positive, ε = 0) the LU with partial pivoting.
    ok = False
    for a in range(k):
        if kind[a] == 2:
            break
    else:
        ok = spd_solve(M, rhs, zb)
    if not ok:
        ok = lu_solve(M, rhs, zb)
    if ok:
        for t in range(k):
            z[cols[t]] = max(zb[t], 0.0)
    P = np.zeros(3 * m)
    for i in range(m):
        P[3 * i + 2] = z[i]
        for j in range(d):
            bj = z[m + i * d + j]
            P[3 * i] += D[0, j] * bj
            P[3 * i + 1] += D[1, j] * bj
    v = G @ P
    for i in range(m):
        w[i] = v[3 * i + 2] + eps * z[i] + q[i]
        lam = z[nb + i]
        bsum = 0.0
        for j in range(d):
            r = m + i * d + j
            w[r] = D[0, j] * v[3 * i] + D[1, j] * v[3 * i + 1] + eps * z[r] + lam + q[r]
            bsum += z[r]
        w[nb + i] = mu[i] * z[i] - bsum + q[nb + i]
    res = 0.0
    for i in range(n):
        r = abs(min(z[i], w[i]))
        if r > res:
            res = r
    return ok, res


# Statistics of one time_stepping step, in the order of the kernel's stats array.
TS_STATS = ("candidates", "system_size", "solver_iterations", "warm_starts",
             "ray_terminations", "pivot_caps", "inaccurate", "fb_solves", "fallbacks",
             "solver_failures", "residual")
# How the LCP was solved (the kernel's return code).
_WARM, _LEMKE, _FB, _FALLBACK = 0, 1, 2, 3


@kernel((F1, i8, i8, i8, F2, F1, F1s, f8, F2, F1, I1, F2, I1s, F2, B1, I1, F2, F1))
def time_stepping_from_packed(W, m, nv, nj, vc_all, phi_all, mu_all, dt, D, params, warm_keys,
                              warm_rows, ids, f, active, keys, rows, stats):
    """``time_stepping_kernel`` on ``packed_delassus(W, m, nv, nj, all points, False)`` (b_v:
    the drift is not part of J_c v⁺) in one call."""
    G, b = packed_delassus(W, m, nv, nj, np.arange(m), False)
    time_stepping_kernel(G, b, vc_all, phi_all, mu_all, dt, D, params, warm_keys, warm_rows,
                         ids, f, active, keys, rows, stats)


@kernel((F2, F1, F2, F1, F1s, f8, F2, F1, I1, F2, I1s, F2, B1, I1, F2, F1))
def time_stepping_kernel(G_all, b_all, vc_all, phi_all, mu_all, dt, D, params, warm_keys,
                         warm_rows, keys_all, f_all, active_all, keys_out, rows_out, stats):
    """The solve of the module docstring (steps 1–4), compiled, over all m_all points.

    ``params`` = (margin, β_s, ε_r, pivot_tol, max_pivots (0: 10·n²), residual_tol,
    fb_max_iterations, gs_tolerance, gs_max_sweeps, warm_start). A warm-start row per contact
    (``2 + d`` values, then as many basis flags) holds its ``(p_n, β, λ)`` and whether each was
    basic; ``rows_out`` (m_all, 2(2 + d)) receives this step's. Writes the forces ``f_all``
    (m_all, 3) and ``stats`` (order of ``TS_STATS``); returns how the LCP was solved.
    """
    margin, beta, eps_r, pivot_tol = params[0], params[1], params[2], params[3]
    max_pivots, residual_tol, fb_max = int(params[4]), params[5], int(params[6])
    gs_tol, gs_max, warm = params[7], int(params[8]), params[9] != 0.0
    d = D.shape[1]
    width = 2 + d
    stats[:] = 0.0
    rows_out[:, :] = 0.0
    active_all[:] = False
    keys_out[:] = keys_all
    idx = candidates(phi_all, vc_all, dt, margin)
    m = idx.shape[0]
    if m == 0:
        return -1
    n = m * width
    if max_pivots <= 0:
        max_pivots = max(10, 10 * n * n)  # solvers.lemke.default_max_pivots
    if m == phi_all.shape[0]:  # every point a candidate (a standing robot): no copies
        G, b, vc, phi, mu = G_all, b_all, vc_all, phi_all, mu_all
        diag = 0.0
        for r in range(3 * m):
            diag += G[r, r]
    else:
        G, b, vc, phi, mu, diag = gather_contacts(idx, G_all, b_all, vc_all, phi_all, mu_all)
    eps = eps_r * max(diag / (3 * m), 0.0)
    q = np.empty(n)
    lcp_rhs(b, vc, phi, dt, D, beta, q)
    stats[0] = m
    stats[1] = n
    # Warm start (per contact id): the previous z and basis, if every candidate has one.
    pos = np.empty(m, dtype=np.int64)
    keys = np.empty(m, dtype=np.int64)
    for a in range(m):
        keys[a] = keys_all[idx[a]]
    found = match_keys(warm_keys, keys, pos) if warm else 0
    z_warm = np.zeros(n)
    mask_warm = np.zeros(n, dtype=np.bool_)
    for a in range(m):
        if pos[a] >= 0 and warm:
            row = warm_rows[pos[a]]
            z_warm[a] = row[0]
            mask_warm[a] = row[width] != 0.0
            for j in range(d):
                z_warm[m + a * d + j] = row[1 + j]
                mask_warm[m + a * d + j] = row[width + 1 + j] != 0.0
            z_warm[m + m * d + a] = row[1 + d]
            mask_warm[m + m * d + a] = row[width + 1 + d] != 0.0
    qn = np.abs(q).max()
    tol = residual_tol * qn
    z = np.empty(n)
    w = np.empty(n)
    zmask = np.empty(n, dtype=np.bool_)
    how = _LEMKE
    res = 0.0
    solved = False
    if found == m:  # 1. the previous basis, from its block of A only
        cols = basic_indices(mask_warm)
        ok, res = warm_basis_solve(G, D, mu, eps, q, cols, z, w)
        if ok and res <= tol:
            solved = True
            how = _WARM
            zmask[:] = mask_warm
            stats[3] = 1.0
    if not solved:  # the whole LCP matrix, for the pivoting and the second method
        A = np.empty((n, n))
        build_lcp_kernel(G, b, vc, phi, mu, dt, D, beta, eps, A, q)
    if not solved:  # 2. Lemke
        status, pivots, res = lemke_kernel(A, q, np.ones(n), pivot_tol, max_pivots,
                                           residual_tol, z, w, zmask)
        stats[2] = pivots
        if status == 0:
            solved = True
        else:
            stats[3 + status] = 1.0  # ray_terminations, pivot_caps or inaccurate
    if not solved:  # 3. Fischer–Burmeister from the previous solution
        z[:] = z_warm
        code, its, _ = fischer_burmeister_kernel(A, q, z, (2.0 - math.sqrt(2.0)) * tol,
                                                 fb_max, 30, 1e-4, 0.5, w)
        stats[2] += its
        for k in range(n):
            z[k] = max(z[k], 0.0)
        basic_flags(z, zmask, (2.0 - math.sqrt(2.0)) * tol)
        res = lcp_residual(A, q, z, w)
        if code == 0 and res <= tol:
            solved = True
            how = _FB
            stats[7] = 1.0
    if solved:
        stats[10] = res
        for a in range(m):
            i = idx[a]
            p_n = z[a]
            f_all[i, 2] = p_n / dt
            ft0 = 0.0
            ft1 = 0.0
            row = rows_out[i]
            row[0] = p_n
            row[width] = 1.0 if zmask[a] else 0.0
            for j in range(d):
                bj = z[m + a * d + j]
                ft0 += D[0, j] * bj
                ft1 += D[1, j] * bj
                row[1 + j] = bj
                row[width + 1 + j] = 1.0 if zmask[m + a * d + j] else 0.0
            row[1 + d] = z[m + m * d + a]
            row[width + 1 + d] = 1.0 if zmask[m + m * d + a] else 0.0
            f_all[i, 0] = ft0 / dt
            f_all[i, 1] = ft1 / dt
            active_all[i] = f_all[i, 2] > 0.0
        return how
    # 4. Friction kept: exact-cone Gauss–Seidel with the circle inscribed in the pyramid.
    stats[8] = 1.0
    c = np.empty(3 * m)
    mus = np.empty(m)
    shrink = math.cos(math.pi / d)
    for a in range(m):
        mus[a] = mu[a] * shrink
        for r in range(3):
            c[3 * a + r] = dt * b[3 * a + r] + vc[a, r]
        ph = phi[a]
        c[3 * a + 2] += (max(ph, 0.0) + beta * min(ph, 0.0)) / dt
    P = np.zeros(3 * m)
    v = np.empty(3 * m)
    converged, sweeps, gres = gauss_seidel_kernel(G, c, mus, P, gs_tol, gs_max, 1.0, v)
    stats[9] = 0.0 if converged else 1.0
    stats[10] = gres
    for a in range(m):
        for r in range(3):
            f_all[idx[a], r] = P[3 * a + r] / dt
        active_all[idx[a]] = f_all[idx[a], 2] > 0.0
    return _FALLBACK
