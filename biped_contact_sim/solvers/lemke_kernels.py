"""Compiled (numba) Lemke pivoting and complementary-basis solves.

``lemke_kernel`` performs exactly the steps of the numpy reference ``solvers.lemke`` (with
``reference=True``; Cottle–Pang–Stone Algorithm 4.4.5 with the lexicographic ratio test, the
terminal-basis polish and the residual acceptance test) in the same floating-point order, so
the two agree to rounding; ``test_lemke`` checks it on random and captured problems.
``basis_solve`` is the terminal-basis re-solve on its own: given a guessed complementary basis
(e.g. the previous step's), it returns the LCP solution of that basis if it is one.

Inputs are trusted (the callers validate them): float64 C-contiguous arrays, no NaN.
Status codes: 0 converged, 1 ray termination, 2 pivot cap, 3 inaccurate (the order of
``solvers.lemke.STATUSES``).
"""

from __future__ import annotations

import numpy as np

from biped_contact_sim.jit import B1, F1, F2, I1, f8, i8, kernel

# Two ratios of the minimum-ratio test count as tied when they differ by less than this (in the
# scaled problem, where max|A| = max|b| = 1); ties go to the lexicographic rule.
TIE_TOL = 1e-12
# The final basis is re-solved from the original data when the residual exceeds this · max|b|.
POLISH_TOL = 1e-13

CONVERGED, RAY, MAX_PIVOTS, INACCURATE = 0, 1, 2, 3


@kernel((F2, F1, i8))
def lu_solve_inplace(M, y, k):
    """Solve ``M[:k, :k] x = y[:k]`` in place (y ← x; M overwritten) by Gaussian elimination
    with partial pivoting. False when a pivot is exactly zero or x is not finite.
    (A hand loop rather than LAPACK: the blocks are a few dozen unknowns, where numba's
    ``np.linalg.solve`` costs more in its calls and copies than in the arithmetic.)"""
    for c in range(k):
        p = c
        big = abs(M[c, c])
        for i in range(c + 1, k):
            if abs(M[i, c]) > big:
                big = abs(M[i, c])
                p = i
        if big == 0.0:
            return False
        if p != c:
            for j in range(c, k):
                M[c, j], M[p, j] = M[p, j], M[c, j]
            y[c], y[p] = y[p], y[c]
        piv = M[c, c]
        for i in range(c + 1, k):
            f = M[i, c] / piv
            if f != 0.0:  # subtracting 0·x changes nothing: skipping it is exact
                for j in range(c + 1, k):
                    M[i, j] -= f * M[c, j]
                y[i] -= f * y[c]
    for i in range(k - 1, -1, -1):  # column-oriented back substitution
        y[i] /= M[i, i]
        for j in range(i):
            y[j] -= M[j, i] * y[i]
    for i in range(k):
        if not np.isfinite(y[i]):
            return False
    return True


@kernel((F2, F1, F1))
def lu_solve(M, rhs, x):
    """Solve ``M x = rhs`` (M, rhs copied; ``lu_solve_inplace``).

    Returns False (x untouched) when a pivot is exactly zero or the result is not finite.
    """
    U = M.copy()
    y = rhs.copy()
    if not lu_solve_inplace(U, y, M.shape[0]):
        return False
    x[:] = y
    return True


@kernel((B1,))
def basic_indices(zmask):
    """The indices of the basic set ``B = {i : zmask_i}``, in order."""
    k = 0
    for i in range(zmask.shape[0]):
        if zmask[i]:
            k += 1
    idx = np.empty(k, dtype=np.int64)
    k = 0
    for i in range(zmask.shape[0]):
        if zmask[i]:
            idx[k] = i
            k += 1
    return idx


@kernel((F2, F1, B1))
def basis_block(A, b, zmask):
    """``(B, A_BB, −b_B)`` of the basic set ``B = {i : zmask_i}``."""
    idx = basic_indices(zmask)
    k = idx.shape[0]
    M = np.empty((k, k))
    rhs = np.empty(k)
    for a in range(k):
        rhs[a] = -b[idx[a]]
        for c in range(k):
            M[a, c] = A[idx[a], idx[c]]
    return idx, M, rhs


@kernel((F2, F1, F1, F1))
def affine_map(A, b, z, w):
    """``w ← A z + b``, each row summed from ``b[i]`` in column order (the residuals' w)."""
    n = b.shape[0]
    for i in range(n):
        s = b[i]
        for j in range(n):
            s += A[i, j] * z[j]
        w[i] = s


@kernel((F2, F1, F1, F1))
def lcp_residual(A, b, z, w):
    """``w ← A z + b`` and return ``maxᵢ |min(zᵢ, wᵢ)|``."""
    affine_map(A, b, z, w)
    res = 0.0
    for i in range(b.shape[0]):
        r = abs(min(z[i], w[i]))
        if r > res:
            res = r
    return res


@kernel((F2, F1, B1, F1, F1))
def basis_solve(A, b, zmask, z, w):
    """Solve the complementary basis ``zmask``: ``A_BB z_B = −b_B``, ``z_N = 0``.

    Fills z (clipped at 0) and ``w = A z + b``; returns ``(ok, residual)`` with ok False when
    ``A_BB`` is singular (z = 0 then) and ``residual = maxᵢ |min(zᵢ, wᵢ)|``.
    """
    idx, M, rhs = basis_block(A, b, zmask)
    k = idx.shape[0]
    zb = np.empty(k)
    z[:] = 0.0
    ok = lu_solve(M, rhs, zb)
    if ok:
        for a in range(k):
            z[idx[a]] = max(zb[a], 0.0)
    return ok, lcp_residual(A, b, z, w)


@kernel((F2, F1, F1, i8, B1, i8))
def _leaving_row(T, q, col, n, candidates, z0_row):
    """Minimum-ratio test with the lexicographic tie-break (Cottle–Pang–Stone §4.9).

    ``candidates`` marks the rows with ``col_i`` above the pivot tolerance. Returns -1 if none.
    """
    best = np.inf
    for i in range(n):
        if candidates[i]:
            ratio = q[i] / col[i]
            if ratio < best:
                best = ratio
    if best == np.inf:
        return -1
    lim = best + TIE_TOL * max(1.0, abs(best))
    rows = np.empty(n, dtype=np.int64)
    k = 0
    for i in range(n):
        if candidates[i] and q[i] / col[i] <= lim:
            rows[k] = i
            k += 1
    if k == 1:
        return rows[0]
    for a in range(k):
        if rows[a] == z0_row:  # z0 leaves: a solution, so no cycling can follow
            return z0_row
    # Lexicographic minimum of the rows of B⁻¹ (the identity block of the tableau) over col.
    for j in range(n):
        best = np.inf
        for a in range(k):
            r = T[rows[a], j] / col[rows[a]]
            if r < best:
                best = r
        lim = best + TIE_TOL * max(1.0, abs(best))
        kk = 0
        for a in range(k):
            if T[rows[a], j] / col[rows[a]] <= lim:
                rows[kk] = rows[a]
                kk += 1
        k = kk
        if k == 1:
            break
    return rows[0]


@kernel((F2, F1, F1, f8, i8, f8, F1, F1, B1))
def lemke_kernel(A, b, d, pivot_tol, max_pivots, residual_tol, z, w, zmask):
    """Lemke's algorithm on ``0 ≤ z ⊥ A z + b ≥ 0`` (see ``solvers.lemke``).

    Fills z (clipped at 0), ``w = A z + b`` and ``zmask`` (the z variables of the terminal
    basis); returns ``(status, pivots, residual)``.
    """
    n = b.shape[0]
    zmask[:] = False
    bmin = 0.0
    for i in range(n):
        bmin = min(bmin, b[i])
    if bmin >= 0.0:  # z = 0 is a solution: w = b ≥ 0 (also n = 0)
        z[:] = 0.0
        return CONVERGED, 0, lcp_residual(A, b, z, w)
    alpha = 0.0
    for i in range(n):
        for j in range(n):
            alpha = max(alpha, abs(A[i, j]))
    if alpha == 0.0:
        alpha = 1.0
    beta = 0.0
    dmax = 0.0
    for i in range(n):
        beta = max(beta, abs(b[i]))
        dmax = max(dmax, abs(d[i]))
    m = 2 * n + 2
    T = np.zeros((n, m))
    inv_alpha = -1.0 / alpha
    inv_beta = 1.0 / beta
    for i in range(n):
        T[i, i] = 1.0
        for j in range(n):
            T[i, n + j] = A[i, j] * inv_alpha
        T[i, 2 * n] = -d[i] / dmax
        T[i, 2 * n + 1] = b[i] * inv_beta
    basis = np.arange(n)
    z0_col = 2 * n
    rhs = 2 * n + 1
    q = np.empty(n)
    col = np.empty(n)
    prow = np.empty(m)
    cand = np.empty(n, dtype=np.bool_)
    for i in range(n):
        q[i] = T[i, rhs]
        col[i] = -T[i, z0_col]
        cand[i] = True
    r = _leaving_row(T, q, col, n, cand, -1)
    entering = z0_col
    pivots = 0
    status = MAX_PIVOTS
    z0_row = -1
    while pivots < max_pivots:
        for i in range(n):
            col[i] = T[i, entering]
            q[i] = T[i, rhs]
        if pivots:  # the first pivot is forced (z0 on row r)
            for i in range(n):
                cand[i] = col[i] > pivot_tol
            r = _leaving_row(T, q, col, n, cand, z0_row)
            if r < 0:  # no positive entry: secondary ray
                status = RAY
                break
        inv = 1.0 / col[r]
        for j in range(m):
            prow[j] = T[r, j] * inv
        col[r] = 0.0
        for i in range(n):
            c = col[i]
            if c != 0.0:  # subtracting 0·x changes nothing: skipping it is exact
                for j in range(m):
                    T[i, j] -= c * prow[j]
        for j in range(m):
            T[r, j] = prow[j]
        leaving = basis[r]
        basis[r] = entering
        pivots += 1
        if entering == z0_col:
            z0_row = r
        if leaving == z0_col:
            status = CONVERGED
            break
        entering = leaving + n if leaving < n else leaving - n

    scale = beta / alpha
    z[:] = 0.0
    for i in range(n):
        if n <= basis[i] < 2 * n:
            z[basis[i] - n] = max(T[i, rhs] * scale, 0.0)
            zmask[basis[i] - n] = True
    res = lcp_residual(A, b, z, w)
    if status == CONVERGED and res > POLISH_TOL * beta:
        z2 = np.empty(n)
        w2 = np.empty(n)
        ok, res2 = basis_solve(A, b, zmask, z2, w2)
        if ok and res2 < res:
            z[:] = z2
            w[:] = w2
            res = res2
    if status == CONVERGED and res > residual_tol * beta:
        status = INACCURATE
    return status, pivots, res


@kernel((F2, F1, F1, F1))
def fb_residual(A, b, z, w):
    """``w ← A z + b`` and return ``‖Φ(z, w)‖∞``, ``Φᵢ = zᵢ + wᵢ − √(zᵢ² + wᵢ²)`` (the
    Fischer–Burmeister measure, Bravo & Rengifo eq. 17)."""
    affine_map(A, b, z, w)
    res = 0.0
    for i in range(b.shape[0]):
        res = max(res, abs(z[i] + w[i] - np.hypot(z[i], w[i])))
    return res


@kernel((F1, F1, B1, f8), (F1, F1, I1, f8))
def most_violated(zb, w, zmask, flip_tol):
    """The unknown whose sign is violated most, by more than ``flip_tol`` (−1: none): a basic
    ``zb_i < 0`` or a non-basic ``w_i < 0`` (``pivoting_basis_solve``'s pivot rule)."""
    worst = -1
    big = flip_tol
    for i in range(zb.shape[0]):
        viol = -zb[i] if zmask[i] else -w[i]
        if viol > big:
            big = viol
            worst = i
    return worst


@kernel((F2, F1, B1, F1, F1, f8, i8))
def pivoting_basis_solve(A, b, zmask, z, w, tol, max_flips):
    """A guessed complementary basis ``zmask``, repaired by principal pivoting.

    Solves ``A_BB z_B = −b_B, z_N = 0`` (``basis_solve``); if the point (z clipped at 0,
    ``w = A z + b``) misses ``‖Φ(z, w)‖∞ ≤ tol`` (Fischer–Burmeister's convergence test), the
    variable that violates its sign most (by more than ``tol/10``) changes side — a basic
    ``z_i < 0`` leaves, a non-basic ``w_i < 0`` enters (a single principal pivot, Murty's rule
    with the largest violation; ``w`` of the clipped point) — and the basis is solved again, at
    most ``max_flips`` times. (Flipping every violator at once, Júdice & Pires' block rule,
    cycled on the near-singular friction block of a standing biped.)
    Why: a warm basis that is right up to a variable at rounding level of zero (an unused
    friction facet whose force the previous step left at ~tol) misses the test by ~tol; one
    flip finds the exact basis where a Newton iteration on the whole LCP costs ten times more.

    Updates zmask to the last basis tried; fills z and w. Returns ``(ok, flips, residual)``:
    ok when the point meets the test (z, w then hold it), ``residual = ‖Φ‖∞`` of the last point.
    """
    n = b.shape[0]
    zb = np.empty(n)
    flip_tol = 0.1 * tol
    res = np.inf
    for flips in range(max_flips + 1):
        idx, M, rhs = basis_block(A, b, zmask)
        k = idx.shape[0]
        sol = np.empty(k)
        if not lu_solve(M, rhs, sol):
            return False, flips, res
        zb[:] = 0.0
        for a in range(k):
            zb[idx[a]] = sol[a]
        for i in range(n):
            z[i] = max(zb[i], 0.0)
        res = fb_residual(A, b, z, w)
        if res <= tol:
            return True, flips, res
        if flips == max_flips:
            return False, flips, res
        worst = most_violated(zb, w, zmask, flip_tol)
        if worst < 0:
            return False, flips, res
        zmask[worst] = not zmask[worst]
    return False, max_flips, res
