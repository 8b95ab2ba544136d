"""``time_stepping``: velocity–impulse LCP with a polyhedral friction cone, solved by Lemke.

docs/methods.md §2.4; Bravo & Rengifo §3 (eqs. 24–26: the Signorini condition replaced by a
complementarity between the impulse and the velocity at the end of the step); Anitescu–Potra and
Stewart–Trinkle (Chardonnet refs. [3], [4]). Per candidate point i (``φ_i ≤ margin``), in its
contact frame, unknowns: the normal impulse ``p_n``, d tangential impulses ``β`` along
``d_j = (cos 2πj/d, sin 2πj/d, 0)``, and a slack ``λ`` (≈ the sliding speed)::

    M (v⁺ − v) = dt (Sᵀτ − h) + J_nᵀ p_n + J_Dᵀ β
    0 ≤ p_n ⊥ J_n v⁺ + bias ≥ 0
    0 ≤ β   ⊥ λ e + J_D v⁺ ≥ 0
    0 ≤ λ   ⊥ μ p_n − eᵀβ ≥ 0

Substituting v⁺ in the contact space, ``v_c⁺ = J_c v⁺ = G (N p_n + T β) + dt·b_v + v_c`` with
the Delassus matrix ``G`` of ``state.delassus`` and ``b_v = J_c M⁻¹(Sᵀτ − h)`` (N puts p_n on
the normal rows, T maps β to ``Σ_j β_j d_j`` on the tangential rows). The constrained velocity
is ``J_c(q) v⁺``, as in Anitescu–Potra, so the impulse ``J_cᵀ(q) P`` and the velocity it
constrains use the same Jacobian: the impulse then does no work on the robot but that of the
stabilisation below. (An earlier version added the drift ``dt·γ_c`` to predict the contact
velocity at q⁺; the impulse then worked on the robot by ``−dt Pᵀγ_c`` per step, +221 J on a
limp biped dropped from 5 cm, whose whipping feet have large J̇v.) This ``v_c⁺`` gives the
LCP of size ``m(2 + d)`` (``lcp``)::

    z = [p_n; β; λ],   w = A z + q,
    A = [[NᵀGN, NᵀGT, 0], [TᵀGN, TᵀGT, E], [diag μ, −Eᵀ, 0]],
    q = [Nᵀ v_free + bias; Tᵀ v_free; 0],   v_free = v_c + dt·b_v,

with ``E`` the (md, m) block-diagonal matrix of ones. One formulation for impacts, sticking and
sliding: a landing is perfectly plastic (no restitution by construction).

``bias_i = max(φ_i, 0)/dt + β_s min(φ_i, 0)/dt`` (``stabilization`` β_s): the Anitescu–Potra
``φ/dt`` term for candidates inside the margin (they may close the gap exactly, never cross), and,
our choice, only a fraction β_s of a penetration removed per step so that the correction stays
gentle.

Energy: over a step the contact changes the kinetic energy by ``Pᵀv_c⁺ − ½PᵀGP``, at most
``Σᵢ P_n,i β_s max(−φ_i, 0)/dt`` (complementarity, maximal dissipation and the ε compliance
each contribute ≤ 0): at most the work of lifting the supported load out of its penetration by
the fraction β_s per step.

The pyramid is inscribed in the exact cone (vertices ``μ p_n d_j`` on the circle), so the
returned forces never violate ``‖f_t‖ ≤ μ f_n``; but it under-estimates friction between its
vertices: maximal dissipation over the polygon gives, for a point sliding at angle θ from the
nearest ``d_j``, a friction component against the motion of ``μ f_n cos θ`` (and a sideways
component that bends the path toward a facet direction). Worst case θ = π/d: −29.3 % for d = 4
(45°), −7.6 % for d = 8 (22.5°); test_constraint_models measures exactly these.
Along a ``d_j`` (the ramp brick slides along t₁ = d₀) the law is exact.

Our other addition: ``ε·I`` (``regularization`` ε_r, relative to the mean diagonal of G:
``ε = ε_r·mean(diag G)``) on the impulse blocks of A. Coplanar sole points and d > 2 facets
make the LCP degenerate (cond(A) ~ 1e18 on the standing biped). On such data Lemke's pivoting
loses every digit and ends on a ray or on a basis whose answer misses the LCP, although the LCP
has a solution: with ε_r = 1e-9, 37 % of the steps of a rigid box sliding on four corners and
4 % of the walk's did. ε makes the impulse blocks positive definite with cond ≲ 1/ε_r, so the
pivoting keeps ~10 digits; its price is a compliance ``ε·P`` in ``v_c⁺``: a sticking point may
creep at ``|v_t| ≤ ε‖P_t‖`` and a resting point settles ``ε P_n dt/β_s`` deeper. With the
default ε_r = 1e-6 both are negligible (box on a ramp: creep ~3 nm/s; biped: ~10⁻¹⁰ m).

Solving (``time_stepping_kernel``):

1. Warm start: the complementary basis of the previous step (stored per contact id) is
   re-solved on the new data, ``A_BB z_B = −q_B``; if that answer solves the LCP to the
   residual tolerance (``residual_tol``·‖q‖∞, the same test as Lemke's) it is taken. In steady
   contact the basis rarely changes, and this replaces the pivoting by one linear solve; only
   the basis's block of A is formed for it (``warm_basis_solve``; a Cholesky solve when no
   point of the basis slides: the block is then symmetric positive definite), the whole A only
   when the warm basis fails.
2. Lemke (lexicographic, compiled; ``solvers.lemke``), from scratch.
3. If Lemke fails (a ray, the pivot cap, or ``inaccurate``: counted by cause in
   ``ray_terminations``, ``pivot_caps``, ``inaccurate``), the second method: the
   Fischer–Burmeister semismooth Newton method (Bravo & Rengifo eqs. 17–18;
   ``solvers.fischer_burmeister_lcp``), warm started from the previous step's solution. It
   does not depend on a pivot sequence and solved every walk LCP Lemke failed on (``fb_solves``).
4. If that fails too (``fallbacks``): the exact-cone velocity-level law of docs/methods.md
   §2.3 step 3 (Gauss–Seidel, ``solvers.gauss_seidel_coulomb``) with the cone of the circle
   inscribed in the pyramid, ``μ cos(π/d)``, so the forces stay inside the pyramid and friction
   is kept. ``solver_failures`` counts the steps where even its sweeps hit their cap (its last
   forces are used).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from biped_contact_sim.contact.base import (
    ContactModel,
    ContactResult,
    ContactState,
    Stats,
    packed_delassus,
    positive,
)
from biped_contact_sim.contact.gauss_seidel import (
    candidates,
    gather_contacts,
    normal_bias,
    positive_count,
    unit_interval,
)
from biped_contact_sim.errors import ConfigError
from biped_contact_sim.solvers.fischer_burmeister_kernel import fischer_burmeister_kernel
from biped_contact_sim.solvers.gauss_seidel_kernel import gauss_seidel_kernel
from biped_contact_sim.solvers.lemke import RESIDUAL_TOL
from biped_contact_sim.solvers.lemke_kernel import lcp_residual, lemke_kernel, lu_solve
from biped_contact_sim.solvers.warm_start import KeyedRows, basic_flags, match_keys

DIRECTIONS = (4, 8)


def friction_directions(d: int) -> np.ndarray:
    """The (2, d) matrix D of the polyhedral cone: columns ``d_j = (cos 2πj/d, sin 2πj/d)``."""
    angles = 2.0 * np.pi * np.arange(d) / d
    return np.vstack([np.cos(angles), np.sin(angles)])


def polyhedral_maps(m: int, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``N`` (3m, m), ``T`` (3m, md) and ``E`` (md, m) of the module docstring."""
    N = np.zeros((3 * m, m))
    N[2::3, :] = np.eye(m)
    T = np.zeros((3 * m, m * d))
    D = friction_directions(d)
    E = np.zeros((m * d, m))
    for i in range(m):
        T[3 * i:3 * i + 2, d * i:d * (i + 1)] = D
        E[d * i:d * (i + 1), i] = 1.0
    return N, T, E


@njit(cache=True)
def build_lcp_kernel(G, b, vc, phi, mu, dt, D, beta, eps, A, q):
    """The LCP ``(A, q)`` of the module docstring (``TimeSteppingContact.lcp``), compiled.

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


@njit(cache=True)
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


@njit(cache=True)
def spd_solve(M, rhs, x):
    """Solve ``M x = rhs`` for a symmetric positive definite M by Cholesky ``M = L Lᵀ`` (from
    M's lower triangle); False (x untouched) when a pivot is not positive or x is not finite."""
    n = M.shape[0]
    L = np.empty((n, n))
    for j in range(n):
        d = M[j, j]
        for t in range(j):
            d -= L[j, t] * L[j, t]
        if not d > 0.0:  # also NaN
            return False
        ljj = np.sqrt(d)
        L[j, j] = ljj
        for i in range(j + 1, n):
            s = M[i, j]
            for t in range(j):
                s -= L[i, t] * L[j, t]
            L[i, j] = s / ljj
    y = np.empty(n)
    for i in range(n):
        s = rhs[i]
        for t in range(i):
            s -= L[i, t] * y[t]
        y[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = y[i]
        for t in range(i + 1, n):
            s -= L[t, i] * y[t]
        y[i] = s / L[i, i]
        if not np.isfinite(y[i]):
            return False
    x[:] = y
    return True


@njit(cache=True)
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


@njit(cache=True)
def warm_basis_solve(G, D, mu, eps, q, cols, z, w):
    """The complementary basis ``cols`` of the LCP of the module docstring: ``A_BB z_B = −q_B``
    (``build_lcp_kernel``'s block, by Cholesky when it is symmetric positive definite, else by
    ``lemke_kernel.lu_solve`` as ``basis_solve`` on the whole A), ``z_N = 0``; then
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
_TS_STATS = ("candidates", "system_size", "solver_iterations", "warm_starts",
             "ray_terminations", "pivot_caps", "inaccurate", "fb_solves", "fallbacks",
             "solver_failures", "residual")
# How the LCP was solved (the kernel's return code).
_WARM, _LEMKE, _FB, _FALLBACK = 0, 1, 2, 3


@njit(cache=True)
def time_stepping_from_packed(W, m, nv, nj, vc_all, phi_all, mu_all, dt, D, params, warm_keys,
                              warm_rows, ids, f, active, keys, rows, stats):
    """``time_stepping_kernel`` on ``packed_delassus(W, m, nv, nj, all points, False)`` (b_v:
    the drift is not part of J_c v⁺) in one call."""
    G, b = packed_delassus(W, m, nv, nj, np.arange(m), False)
    time_stepping_kernel(G, b, vc_all, phi_all, mu_all, dt, D, params, warm_keys, warm_rows,
                         ids, f, active, keys, rows, stats)


@njit(cache=True)
def time_stepping_kernel(G_all, b_all, vc_all, phi_all, mu_all, dt, D, params, warm_keys,
                         warm_rows, keys_all, f_all, active_all, keys_out, rows_out, stats):
    """The solve of the module docstring (steps 1–4), compiled, over all m_all points.

    ``params`` = (margin, β_s, ε_r, pivot_tol, max_pivots (0: 10·n²), residual_tol,
    fb_max_iterations, gs_tolerance, gs_max_sweeps, warm_start). A warm-start row per contact
    (``2 + d`` values, then as many basis flags) holds its ``(p_n, β, λ)`` and whether each was
    basic; ``rows_out`` (m_all, 2(2 + d)) receives this step's. Writes the forces ``f_all``
    (m_all, 3) and ``stats`` (order of ``_TS_STATS``); returns how the LCP was solved.
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
        k = 0
        for i in range(n):
            if mask_warm[i]:
                k += 1
        cols = np.empty(k, dtype=np.int64)
        k = 0
        for i in range(n):
            if mask_warm[i]:
                cols[k] = i
                k += 1
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


@dataclass(frozen=True)
class TimeSteppingSettings:
    """Settings of ``time_stepping`` (Bravo & Rengifo §3; docs/methods.md §2.4).

    Attributes:
        directions: d, facets of the polyhedral cone (4 or 8).
        margin: candidates have φ ≤ margin [m].
        stabilization: β_s ∈ [0, 1], fraction of a penetration removed per step (our choice;
            0 keeps only the gap term of the candidates above the ground).
        pivot_tol: Lemke pivot tolerance.
        max_pivots: Lemke pivot cap; null (default) is ``10·n²`` for an LCP of size n
            (``solvers.lemke.default_max_pivots``).
        regularization: ε_r, relative diagonal compliance of the impulse blocks (our
            addition; module docstring: it keeps the degenerate LCP solvable by pivoting).
        residual_tol: an LCP answer is accepted iff ``max|min(z, w)| ≤ residual_tol·‖q‖∞``
            (Lemke's own convergence test, the warm start's and the second method's).
        fb_max_iterations: iteration cap of the second method (Fischer–Burmeister).
        warm_start: try the previous step's complementary basis first (per contact id).
        fallback_tolerance: tolerance of the friction-keeping fallback (Gauss–Seidel).
        fallback_max_sweeps: its sweep cap.
    """

    directions: int = 4
    margin: float = 1e-3
    stabilization: float = 0.2
    pivot_tol: float = 1e-12
    max_pivots: int | None = None
    regularization: float = 1e-6
    residual_tol: float = RESIDUAL_TOL
    fb_max_iterations: int = 200
    warm_start: bool = True
    fallback_tolerance: float = 1e-10
    fallback_max_sweeps: int = 200

    def __post_init__(self):
        p = "time_stepping."
        if isinstance(self.directions, bool) or self.directions not in DIRECTIONS:
            raise ConfigError(f"{p}directions = {self.directions!r} must be one of "
                              + ", ".join(map(str, DIRECTIONS)))
        positive(p + "margin", self.margin, allow_zero=True)
        unit_interval(p + "stabilization", self.stabilization)
        positive(p + "pivot_tol", self.pivot_tol)
        positive(p + "regularization", self.regularization, allow_zero=True)
        positive(p + "residual_tol", self.residual_tol)
        positive(p + "fallback_tolerance", self.fallback_tolerance)
        positive_count(p + "max_pivots", self.max_pivots, allow_none=True)
        positive_count(p + "fb_max_iterations", self.fb_max_iterations)
        positive_count(p + "fallback_max_sweeps", self.fallback_max_sweeps)
        if not isinstance(self.warm_start, bool):
            raise ConfigError(f"{p}warm_start = {self.warm_start!r} must be true or false")


class TimeSteppingContact(ContactModel):
    """Anitescu–Potra / Stewart–Trinkle time stepping with Lemke (docs/methods.md §2.4).

    Statistics per step: ``candidates``, ``system_size`` (LCP size m(2 + d)),
    ``solver_iterations`` (Lemke pivots plus Fischer–Burmeister iterations), ``warm_starts``
    (0/1: the previous basis solved it), Lemke's failures by cause ``ray_terminations``,
    ``pivot_caps``, ``inaccurate`` (0/1 each), ``fb_solves`` (0/1: the second method solved
    it), ``fallbacks`` (0/1: neither did; friction-keeping Gauss–Seidel), ``solver_failures``
    (0/1: the fallback hit its sweep cap), ``residual`` (``max |min(z, w)|`` of the LCP, or
    the Coulomb residual of the fallback).
    """

    name = "time_stepping"
    Settings = TimeSteppingSettings
    stat_names = _TS_STATS
    integrators = ("semi_implicit_euler",)
    #: statistics that count events a user must be warned about
    warning_stats = ("ray_terminations", "pivot_caps", "inaccurate", "fallbacks",
                     "solver_failures")

    def reset(self, n_points: int) -> None:
        s = self.settings
        self._all = np.arange(n_points)
        self._D = np.ascontiguousarray(friction_directions(s.directions))
        # Warm start per contact id: (p_n, β, λ) and their basis flags.
        self._warm = KeyedRows(2 * (2 + s.directions))
        # The buffers the next step writes its warm-start rows into (swapped with the stored
        # ones at each commit: no allocation per step).
        self._spare = (np.empty(n_points, dtype=np.int64),
                       np.empty((n_points, self._warm.width)))
        self._params = np.array([s.margin, s.stabilization, s.regularization, s.pivot_tol,
                                 s.max_pivots or 0, s.residual_tol, s.fb_max_iterations,
                                 s.fallback_tolerance, s.fallback_max_sweeps, s.warm_start],
                                dtype=float)

    def lcp(self, state: ContactState, idx: np.ndarray | None = None
            ) -> tuple[np.ndarray, np.ndarray]:
        """The LCP ``(A, q)`` of the module docstring over the candidates, size m(2 + d).

        The readable numpy form; the step uses the compiled ``build_lcp_kernel`` (tested equal).

        Args:
            state: the contact state.
            idx: candidate indices (default: ``φ ≤ margin``).
        """
        s = self.settings
        if idx is None:
            idx = np.flatnonzero(state.phi <= s.margin)
        m, d, dt = idx.size, s.directions, state.dt
        G, b = state.delassus(idx)
        rows = (3 * idx[:, None] + np.arange(3)).ravel()
        b = b - state.gamma_c[rows]  # b_v (module docstring)
        N, T, E = polyhedral_maps(m, d)
        v_free = state.vc[idx].ravel() + dt * b
        GN, GT = G @ N, G @ T
        A = np.zeros((m * (2 + d), m * (2 + d)))
        A[:m, :m] = N.T @ GN
        A[:m, m:m + m * d] = N.T @ GT
        A[m:m + m * d, :m] = T.T @ GN
        A[m:m + m * d, m:m + m * d] = T.T @ GT
        A[m:m + m * d, m + m * d:] = E
        A[m + m * d:, :m] = np.diag(state.mu[idx])
        A[m + m * d:, m:m + m * d] = -E.T
        q = np.concatenate([N.T @ v_free + normal_bias(state.phi[idx], dt, s.stabilization),
                            T.T @ v_free, np.zeros(m)])
        # Our addition: ε·I on the impulse blocks (relative to the mean diagonal of G).
        eps = s.regularization * max(float(np.mean(np.diag(G))), 0.0)
        A[np.arange(m + m * d), np.arange(m + m * d)] += eps
        return A, q

    def compute(self, state: ContactState, commit: bool = True) -> ContactResult:
        phi = np.ascontiguousarray(state.phi)  # one compiled signature (a view is strided)
        m_all = phi.shape[0]
        if getattr(self, "_warm", None) is None or len(self._all) != m_all:
            self.reset(m_all)
        # The outputs, new every step (the caller keeps the forces; the warm start keeps keys
        # and rows). The kernel copies the contact ids into ``keys`` (``contact_keys`` of all
        # points) and computes the active set, cheaper there than by numpy calls here.
        f = np.zeros((m_all, 3))
        active = np.empty(m_all, dtype=np.bool_)
        stats = np.empty(len(_TS_STATS))
        keys, rows = self._spare  # this step's warm-start rows: the buffers not in use
        ids = getattr(state, "ids", None)
        ids = self._all if ids is None else ids
        vc, packed, warm = np.ascontiguousarray(state.vc), state.packed, self._warm
        if packed is not None:  # G and b in the same compiled call
            time_stepping_from_packed(*packed, vc, phi, state.mu, state.dt, self._D,
                                      self._params, warm.keys, warm.rows, ids, f, active, keys,
                                      rows, stats)
        else:
            G, b = state.delassus(self._all, False)  # b_v: the drift is not part of J_c v⁺
            time_stepping_kernel(G, b, vc, phi, state.mu, state.dt, self._D, self._params,
                                 warm.keys, warm.rows, ids, f, active, keys, rows, stats)
        if commit:
            # KeyedRows.store without its conversions; the rows it held become the spare (the
            # model's own arrays: nothing else keeps them).
            if len(warm.keys) == m_all:
                self._spare = warm.keys, warm.rows
            else:
                self._spare = np.empty(m_all, dtype=np.int64), np.empty_like(rows)
            warm.keys, warm.rows = keys, rows
        return ContactResult(f, active, Stats(self.stat_names, stats))
