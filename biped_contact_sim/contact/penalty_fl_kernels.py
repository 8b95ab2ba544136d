"""Compiled ``penalty_fl`` (numba kernels with declared signatures, ``biped_contact_sim.jit``): eqs.
17–20 with the active sets of ``contact.penalty_fl``'s docstring, on a pivoted Cholesky
factorisation; the numpy reference is ``PenaltyFLContact.compute_reference``.
"""

from __future__ import annotations

import numpy as np

from biped_contact_sim.contact.base_kernels import delassus_from_factor
from biped_contact_sim.jit import B1, F1, F2, I1, F1s, Tuple, f8, i8, kernel
from biped_contact_sim.robot.model_kernels import unpack
from biped_contact_sim.solvers.linalg_kernels import cho_solve, cholesky

#: [m/s] a saturated point slipping faster than this gets friction opposite its slip, a slower
#: one along the demanded force (module docstring); the positive work the latter can do is at
#: most dt·μ f_n·VSLIP per point and step.
VSLIP = 0.1


@kernel((F2, f8), error_model="numpy")
def pivoted_cholesky(G, tol):
    """Upper pivoted Cholesky ``G[π][:, π] = Uᵀ U`` (LAPACK ``dpstrf``'s decomposition): at each
    step the largest diagonal of the remaining Schur complement is the pivot (first one on
    ties); it stops when that pivot is ≤ tol.

    Left-looking (as LAPACK's blocked dpstrf): row j of U is formed when it is needed,
    ``U[j, c] = (G[π_j, π_c] − Σ_{k<j} U[k, j] U[k, c]) / U[j, j]``, and only the diagonal of the
    Schur complement is kept up to date for the pivot choice. On a rank-k G this touches k rows
    instead of updating the whole trailing matrix k times (the biped's 24×24 G has rank 12),
    and each sum runs over k in the same order as the right-looking update, so the factor is
    the same to the last bit.

    Returns:
        U (n, n) (rows ≥ rank are zero), π (n,), rank.
    """
    n = G.shape[0]
    U = np.zeros((n, n))
    perm = np.arange(n)
    diag = np.empty(n)  # diagonal of the Schur complement, in pivoted order
    for i in range(n):
        diag[i] = G[i, i]
    rank = n
    for j in range(n):
        best, p = -np.inf, j
        for i in range(j, n):
            if diag[i] > best:
                best, p = diag[i], i
        if not best > tol:  # also NaN
            rank = j
            break
        if p != j:  # the symmetric swap of j and p: only U's finished rows hold them
            diag[j], diag[p] = diag[p], diag[j]
            perm[j], perm[p] = perm[p], perm[j]
            for k in range(j):
                U[k, j], U[k, p] = U[k, p], U[k, j]
        ujj = np.sqrt(best)
        U[j, j] = ujj
        pj = perm[j]
        for c in range(j + 1, n):
            U[j, c] = G[pj, perm[c]]
        for k in range(j):
            ukj = U[k, j]
            if ukj != 0.0:  # subtracting 0·x changes nothing: skipping it is exact
                for c in range(j + 1, n):
                    U[j, c] -= ukj * U[k, c]
        for c in range(j + 1, n):
            u = U[j, c] / ujj
            U[j, c] = u
            diag[c] -= u * u
    return U, perm, rank


@kernel((F2, F1, f8), error_model="numpy")
def min_norm_kernel(G, r, rtol):
    """``x = G⁺ r`` for a symmetric PSD G, the compiled ``solvers.min_norm_solve`` (same
    mathematics: ``G⁺ = B (BᵀB)⁻¹ (BᵀB)⁻¹ Bᵀ`` with the pivoted factor ``G = B Bᵀ``).

    Returns:
        x, rank, residual ``‖G x − r‖``.
    """
    n = G.shape[0]
    scale = 0.0
    for i in range(n):
        scale = max(scale, G[i, i])
    x = np.zeros(n)
    if n == 0 or not scale > 0.0:
        return x, 0, np.sqrt(np.sum(r * r))
    U, perm, k = pivoted_cholesky(G, rtol * scale)
    # B = U_kᵀ (n × k): x_π = B (BᵀB)⁻¹ (BᵀB)⁻¹ Bᵀ r_π; with k = n this is U⁻¹ U⁻ᵀ r_π. The
    # products go to BLAS (loops this short cost more in loop overhead than in arithmetic).
    Uk = U[:k]
    rp = np.empty(n)
    for j in range(n):
        rp[j] = r[perm[j]]
    ok, L = cholesky(Uk @ Uk.T, 0.0, 0.0)
    if not ok:  # the rank decision was too optimistic: the SVD route
        x = np.linalg.pinv(G, rcond=rtol) @ r
    else:
        y = cho_solve(L, cho_solve(L, (Uk @ rp).reshape(k, 1)))
        xp = Uk.T @ y.reshape(k)
        for j in range(n):
            x[perm[j]] = xp[j]
    Gx = G @ x
    res = 0.0
    for i in range(n):
        res += (Gx[i] - r[i]) ** 2
    return x, k, np.sqrt(res)


@kernel((F1, i8, i8, i8, F1, F2, F1s, F1, F2, B1, F1), error_model="numpy")
def penalty_from_packed(W, m, nv, nj, phi, vc, mu, params, f, active, stats):
    """``penalty_forces`` with ``G = X_Aᵀ X_A`` and ``b = J_c,A a_free (+ γ_c,A if params[9])``
    formed for the active set A only, from the simulator's buffer (``ContactState.packed``).
    Writes the forces ``f`` (m, 3, zero on entry), ``active`` (m,) and ``stats``."""
    Jc, gc, X, U, D, tf, af, tc = unpack(W, m, nv, nj)
    for i in range(phi.shape[0]):
        active[i] = phi[i] <= params[3]
    idx = np.flatnonzero(active)
    G, b = delassus_from_factor(X, Jc, af, gc, idx, params[9] != 0.0)
    if idx.shape[0] == phi.shape[0]:  # every point active (a standing robot): no copies
        _scatter(penalty_forces(G, b, phi, vc, mu, params), idx, f, stats)
    else:
        _scatter(penalty_forces(G, b, phi[idx], vc[idx], mu[idx], params), idx, f, stats)


@kernel((F2, F1, F1, F2, F1, F1, F2, B1, F1), error_model="numpy")
def penalty_from_delassus(G, b, phi, vc, mu, params, f, active, stats):
    """``penalty_forces`` from the Delassus operator and free acceleration of all points
    (outputs as ``penalty_from_packed``)."""
    for i in range(phi.shape[0]):
        active[i] = phi[i] <= params[3]
    idx = np.flatnonzero(active)
    k = idx.shape[0]
    Ga = np.empty((3 * k, 3 * k))
    ba = np.empty(3 * k)
    for r in range(3 * k):
        ir = 3 * idx[r // 3] + r % 3
        ba[r] = b[ir]
        for c in range(3 * k):
            Ga[r, c] = G[ir, 3 * idx[c // 3] + c % 3]
    _scatter(penalty_forces(Ga, ba, phi[idx], vc[idx], mu[idx], params), idx, f, stats)


@kernel((Tuple((F2, F1)), I1, F2, F1), error_model="numpy")
def _scatter(out, idx, f, stats):
    fa, st = out
    for t in range(idx.shape[0]):
        f[idx[t], 0] = fa[t, 0]
        f[idx[t], 1] = fa[t, 1]
        f[idx[t], 2] = fa[t, 2]
    stats[:] = st


@kernel((F2, F1, B1, B1, F2, F1s, f8), error_model="numpy")
def _reduced_solve(G, rhs, keep, sliding, d, mu, rtol):
    """Eq. 18 on the points ``keep``, the tangential force of each ``sliding`` point fixed at
    ``μ f_n d`` (its normal row kept, its tangential rows dropped): the minimum-norm least-squares
    solution of the reduced system, by ``min_norm_kernel`` when nothing slides (G symmetric) and
    by LAPACK's SVD least squares (gelsd, ``rcond = rtol``) otherwise.

    Returns:
        f' (a, 3) (zero off ``keep``), rank, residual ‖M x − r‖ of the reduced system.
    """
    a = keep.shape[0]
    sel = np.flatnonzero(keep)
    k = sel.shape[0]
    col = np.empty(k, dtype=np.int64)  # first column (= first row) of each kept point
    n = 0
    any_sliding = False
    for t in range(k):
        col[t] = n
        if sliding[sel[t]]:
            n += 1
            any_sliding = True
        else:
            n += 3
    if k == a and not any_sliding:  # the first solve: M = G and r = rhs, no copy needed
        x, rank, residual = min_norm_kernel(G, rhs, rtol)
        return x.reshape((a, 3)), rank, residual
    M = np.empty((n, n))
    r = np.empty(n)
    for t in range(k):
        i = sel[t]
        for ci in range(3):
            if sliding[i] and ci < 2:
                continue
            row = col[t] + (0 if sliding[i] else ci)
            gi = 3 * i + ci
            r[row] = rhs[gi]
            for u in range(k):
                j = sel[u]
                if sliding[j]:
                    M[row, col[u]] = (G[gi, 3 * j] * mu[j] * d[j, 0]
                                      + G[gi, 3 * j + 1] * mu[j] * d[j, 1] + G[gi, 3 * j + 2])
                else:
                    for c in range(3):
                        M[row, col[u] + c] = G[gi, 3 * j + c]
    if any_sliding:
        x, _, rank, _ = np.linalg.lstsq(M, r, rcond=rtol)
        res = 0.0
        for i in range(n):
            e = -r[i]
            for j in range(n):
                e += M[i, j] * x[j]
            res += e * e
        residual = np.sqrt(res)
    else:
        x, rank, residual = min_norm_kernel(M, r, rtol)
    fp = np.zeros((a, 3))
    for t in range(k):
        i = sel[t]
        if sliding[i]:
            fn = x[col[t]]
            fp[i, 0] = mu[i] * d[i, 0] * fn
            fp[i, 1] = mu[i] * d[i, 1] * fn
            fp[i, 2] = fn
        else:
            for c in range(3):
                fp[i, c] = x[col[t] + c]
    return fp, rank, residual


@kernel((F2, F1, F1, F2, F1s, F1), error_model="numpy")
def penalty_forces(G, b, phi, vc, mu, params):
    """Eqs. 17–20 of Rengifo et al. over the active points, with our active sets (the module
    docstring).

    Args:
        G, b: Delassus operator and free acceleration over the active points (3a, 3a), (3a,).
        phi, vc, mu: their gaps, contact velocities (a, 3) and friction coefficients.
        params: k_p, k_v, ε, δ, rank_rtol, separation_damping, clip, max solves, coupled
            friction.

    Returns:
        f (a, 3) contact-frame forces and the statistics (rank, residual, saturated,
        active-set solves, dropped points, sliding points).
    """
    kp, kv, eps, rtol = params[0], params[1], params[2], params[4]
    separation_damping, clip, max_solves = params[5] != 0.0, params[6] != 0.0, int(params[7])
    coupled = params[8] != 0.0
    a = phi.shape[0]
    if a == 0:
        return np.zeros((0, 3)), np.zeros(6)
    rhs = np.empty(3 * a)
    for i in range(a):  # eq. 17 (ε variant): p̈ᵈ − b
        vn = vc[i, 2] if separation_damping else min(0.0, vc[i, 2])
        rhs[3 * i] = -kv * vc[i, 0] - b[3 * i]
        rhs[3 * i + 1] = -kv * vc[i, 1] - b[3 * i + 1]
        rhs[3 * i + 2] = -kp * (phi[i] + eps) - kv * vn - b[3 * i + 2]
    keep = np.ones(a, dtype=np.bool_)
    sliding = np.zeros(a, dtype=np.bool_)
    d = np.zeros((a, 2))
    solves = 0
    while True:
        fp, rank, residual = _reduced_solve(G, rhs, keep, sliding, d, mu, rtol)
        solves += 1
        if solves >= max_solves:
            break
        if coupled:  # points beyond their cone slide: f_t = μ f_n opposite the slip
            n_new = 0
            for i in range(a):
                if keep[i] and not sliding[i]:
                    ft = np.hypot(fp[i, 0], fp[i, 1])
                    if ft > 0.0 and ft > mu[i] * max(fp[i, 2], 0.0) * (1.0 + 1e-12):
                        sliding[i] = True
                        vt = np.hypot(vc[i, 0], vc[i, 1])
                        if vt > VSLIP:  # sliding: Coulomb's maximum dissipation
                            d[i, 0], d[i, 1] = -vc[i, 0] / vt, -vc[i, 1] / vt
                        else:  # eq. 20's direction, the demanded force's
                            d[i, 0], d[i, 1] = fp[i, 0] / ft, fp[i, 1] / ft
                        n_new += 1
            if n_new:
                continue
        n_keep, n_pull = 0, 0
        for i in range(a):
            if keep[i]:
                n_keep += 1
                if fp[i, 2] < 0.0:
                    n_pull += 1
        if not clip and 0 < n_pull < n_keep:  # eq. 18 again without the points that pull
            for i in range(a):
                if keep[i] and fp[i, 2] < 0.0:
                    keep[i] = False
                    sliding[i] = False
            continue
        break
    f = np.zeros((a, 3))
    saturated, n_sliding = 0, 0
    for i in range(a):  # eqs. 19–20 (what is left to clip after the active sets)
        fn = max(0.0, fp[i, 2])
        theta = np.arctan2(fp[i, 1], fp[i, 0])
        l1 = mu[i] * fn * abs(np.cos(theta))
        l2 = mu[i] * fn * abs(np.sin(theta))
        f1 = np.sign(fp[i, 0]) * min(abs(fp[i, 0]), l1)
        f2 = np.sign(fp[i, 1]) * min(abs(fp[i, 1]), l2)
        f[i, 0], f[i, 1], f[i, 2] = f1, f2, fn
        if sliding[i] and keep[i]:
            n_sliding += 1
            saturated += 1
        elif fp[i, 2] < 0.0 or abs(f1) < abs(fp[i, 0]) or abs(f2) < abs(fp[i, 1]):
            saturated += 1
    n_kept = 0
    for i in range(a):
        if keep[i]:
            n_kept += 1
    stats = np.array([float(rank), residual, float(saturated), float(solves), float(a - n_kept),
                      float(n_sliding)])
    return f, stats
