"""Lemke's complementary pivoting algorithm for the linear complementarity problem.

Solves LCP(b, A): find z with

    w = A z + b,   z ≥ 0,   w ≥ 0,   zᵀ w = 0,

the problem of the impact step (Chardonnet et al. eq. 5, "solved using Lemke's algorithm") and
of the velocity–impulse time-stepping model (Bravo & Rengifo §3, eqs. 24–26; docs/methods.md §2.4).

Lemke's scheme (Cottle, Pang & Stone, *The Linear Complementarity Problem*, §4.4) adds an
artificial variable z0 along a covering vector d > 0,

    w = A z + b + d z0,

starts from the almost-complementary basis {w} with z0 = max_i(−b_i/d_i), and pivots the
complement of each leaving variable into the basis until z0 leaves (a solution) or the entering
column has no positive entry (a secondary ray). For a copositive-plus A (e.g. positive
semidefinite, or the Stewart–Trinkle / Anitescu–Potra time-stepping matrix) a ray termination
proves the LCP infeasible; for a P-matrix (e.g. positive definite) it cannot happen and the
solution is unique.
"""

from __future__ import annotations

import numpy as np

from biped_contact_sim.errors import InputError
from biped_contact_sim.solvers.lemke_kernels import POLISH_TOL as _POLISH_TOL
from biped_contact_sim.solvers.lemke_kernels import TIE_TOL as _TIE_TOL
from biped_contact_sim.solvers.lemke_kernels import lemke_kernel
from biped_contact_sim.solvers.linalg import gauss_solve
from biped_contact_sim.solvers.result import (
    BAD_VALUE,
    STATUS_CONVERGED,
    STATUS_INACCURATE,
    STATUS_MAX_PIVOTS,
    STATUS_RAY,
    SolverResult,
    as_square_matrix,
    as_vector,
    check_count,
    check_positive,
)

_WHO = "lemke"
#: Default of ``residual_tol``: a terminal basis is reported ``converged`` only when its answer
#: solves the LCP to ``max|min(z, w)| ≤ residual_tol · ‖b‖∞``; round-off in a near-singular
#: tableau (cond(A) ~ 1e18 for coplanar sole points) can leave a normally terminated pivoting
#: far from a solution, and that is reported ``inaccurate``.
RESIDUAL_TOL = 1e-9
# Integer status codes of the compiled kernel (solvers.lemke_kernels), in this order.
STATUSES = (STATUS_CONVERGED, STATUS_RAY, STATUS_MAX_PIVOTS, STATUS_INACCURATE)


def default_max_pivots(n: int) -> int:
    """Default pivot cap ``10·n²`` (at least 10).

    Lemke needs about n to 2n pivots on the problems of this package, but its worst case is
    exponential: Murty's n × n lower-triangular example (1 on the diagonal, 2 below, b = −1;
    ``test_lemke``) needs 2ⁿ pivots, 256 for n = 8. ``10·n²`` covers that example up to n = 9
    and bounds a solve at O(n⁴) operations (a pivot costs O(n²)).
    """
    return max(10, 10 * n * n)


def lemke(A, b, *, covering=None, pivot_tol: float = 1e-12, max_pivots: int | None = None,
          residual_tol: float = RESIDUAL_TOL, reference: bool = False) -> SolverResult:
    """Solve ``0 ≤ z ⊥ A z + b ≥ 0`` by Lemke's complementary pivoting.

    Chardonnet et al. eq. 5 / Bravo & Rengifo eqs. 24–26; Cottle–Pang–Stone Algorithm 4.4.5.
    A dense tableau ``[I | −A | −d | b]`` (n × 2n+2) is updated by one rank-1 operation per
    pivot. The problem is first scaled to ``max|A| = max|b| = 1`` (z scales by
    ``max|b|/max|A|``, complementarity is unchanged) so that the tolerances are relative.

    Leaving variable: minimum-ratio test over the rows whose entering-column entry exceeds
    ``pivot_tol``; ties (within 1e-12) are broken by the lexicographic rule — among the tied
    rows take the lexicographic minimum of ``(B⁻¹)_i / col_i``, read from the identity block of
    the tableau — which visits no basis twice, so degenerate problems cannot cycle. If z0's
    row is among the tied rows it leaves at once (this ends the run with a solution).

    At termination the complementary basis is re-solved directly, ``A_BB z_B = −b_B`` on the
    original data, which removes the rounding accumulated over the pivots; the better of the
    two (by residual) is returned. The answer is reported ``converged`` only if its residual
    is at most ``residual_tol·‖b‖∞``; otherwise ``inaccurate``.

    The work is done by the compiled kernel ``solvers.lemke_kernels.lemke_kernels`` (numba);
    ``reference=True`` runs the numpy implementation of the same steps, which the tests
    compare it with (equal forces and statuses).

    Args:
        A: (n, n) matrix; n may be 0.
        b: (n,) vector.
        covering: covering vector d (n,), every entry > 0; default ones.
        pivot_tol: entering-column entries ≤ pivot_tol (scaled problem) are not pivots.
        max_pivots: cap on pivots, including the first one that brings z0 in; default
            :func:`default_max_pivots` (``10·n²``). Hitting it is reported.
        residual_tol: a terminal basis is ``converged`` iff
            ``max|min(z, w)| ≤ residual_tol·‖b‖∞`` (default :data:`RESIDUAL_TOL` = 1e-9).
        reference: run the numpy reference instead of the compiled kernel.

    Returns:
        SolverResult with ``x = z`` (clipped at 0) and ``w = A z + b`` recomputed from it;
        ``iterations`` = pivots; ``residual = maxᵢ |min(zᵢ, wᵢ)|``, zero iff z solves the LCP
        (it bounds the negativity too: ``|min(zᵢ, wᵢ)| ≥ max(−zᵢ, −wᵢ, 0)``). Status
        ``converged``, ``ray_termination`` (the entering column had no positive entry; x is
        the current almost-complementary point with z0 dropped), ``max_pivots`` or
        ``inaccurate`` (normal termination whose answer misses the residual tolerance).

    Raises:
        InputError: A not square, b or covering of the wrong length, NaN/Inf, covering not
            > 0, pivot_tol or residual_tol not > 0, max_pivots not a non-negative integer.
    """
    A = as_square_matrix(A, _WHO)
    n = A.shape[0]
    b = as_vector(b, n, _WHO, "b", "A")
    if covering is None:
        d = np.ones(n)
    else:
        d = as_vector(covering, n, _WHO, "covering", "A")
        if n and d.min() <= 0.0:
            raise InputError(BAD_VALUE.format(who=_WHO, name="covering", value=d.min(),
                                              expected="> 0 in every entry"))
    pivot_tol = check_positive(pivot_tol, _WHO, "pivot_tol")
    residual_tol = check_positive(residual_tol, _WHO, "residual_tol")
    max_pivots = default_max_pivots(n) if max_pivots is None else check_count(
        max_pivots, _WHO, "max_pivots")
    if reference:
        return lemke_reference(A, b, d, pivot_tol, max_pivots, residual_tol)
    A, b, d = (np.ascontiguousarray(x) for x in (A, b, d))
    z, w = np.empty(n), np.empty(n)
    status, pivots, res = lemke_kernel(A, b, d, pivot_tol, max_pivots, residual_tol, z, w,
                                       np.empty(n, dtype=np.bool_))
    return SolverResult(z, w, status == 0, STATUSES[status], pivots, res)


def lemke_reference(A, b, d, pivot_tol, max_pivots, residual_tol) -> SolverResult:
    """The numpy reference of :func:`lemke` (validated input)."""
    n = A.shape[0]
    if n == 0 or b.min() >= 0.0:  # z = 0 is a solution: w = b ≥ 0
        z = np.zeros(n)
        return SolverResult(z, b.copy(), True, STATUS_CONVERGED, 0, _residual(z, b))

    # Scale to max|A| = max|b| = 1: with A = α A', b = β b', z = (β/α) z' solves the original.
    alpha = float(np.abs(A).max()) or 1.0
    beta = float(np.abs(b).max())
    # Tableau rows: w − A' z − d z0 = b'. Columns: w 0..n−1, z n..2n−1, z0 2n, rhs 2n+1.
    T = np.empty((n, 2 * n + 2))
    T[:, :n] = np.eye(n)
    T[:, n:2 * n] = A * (-1.0 / alpha)
    T[:, 2 * n] = -d / np.abs(d).max()
    T[:, 2 * n + 1] = b * (1.0 / beta)
    q = T[:, 2 * n + 1]  # view: the values of the basic variables
    basis = np.arange(n)
    z0_col = 2 * n

    # First pivot: z0 enters at the level that makes every w ≥ 0; the row leaving is the
    # lexicographic minimum of (b'_i, e_iᵀ)/d_i, i.e. the ratio rule below with col = d.
    r = _leaving_row(T, q / -T[:, z0_col], -T[:, z0_col], n, z0_row=-1)
    entering = z0_col
    pivots = 0
    status = STATUS_MAX_PIVOTS
    z0_row = -1
    with np.errstate(divide="ignore", invalid="ignore"):  # q/col on col ≤ 0 is discarded
        while pivots < max_pivots:
            col = T[:, entering].copy()
            if pivots:  # the first pivot is forced (z0 on row r)
                ratios = q / col
                ratios[col <= pivot_tol] = np.inf
                r = int(ratios.argmin())
                best = ratios[r]
                if best == np.inf:  # no positive entry: secondary ray
                    status = STATUS_RAY
                    break
                ratios[r] = np.inf  # a tie iff the second smallest ratio equals the smallest
                if ratios[ratios.argmin()] <= best + _TIE_TOL * max(1.0, abs(best)):
                    ratios[r] = best
                    r = _leaving_row(T, ratios, col, n, z0_row)
            # Pivot on (r, entering): T ← T − col·prowᵀ, then row r ← prow. (Elementwise, no
            # BLAS: the compiled kernel does the same operations, so the two agree bitwise.)
            prow = T[r] * (1.0 / col[r])
            col[r] = 0.0
            T -= np.multiply.outer(col, prow)
            T[r] = prow
            leaving = basis[r]
            basis[r] = entering
            pivots += 1
            if entering == z0_col:
                z0_row = r
            if leaving == z0_col:
                status = STATUS_CONVERGED
                break
            # Complementary rule: the complement of the leaving variable enters.
            entering = leaving + n if leaving < n else leaving - n

    z = np.zeros(n)
    is_z = (basis >= n) & (basis < 2 * n)
    z[basis[is_z] - n] = T[is_z, 2 * n + 1] * (beta / alpha)
    z = np.maximum(z, 0.0)
    w = A @ z + b
    res = _residual(z, w)
    if status == STATUS_CONVERGED and res > _POLISH_TOL * beta:
        z, w, res = _polish(A, b, basis[is_z] - n, z, w, res)
    if status == STATUS_CONVERGED and res > residual_tol * beta:
        status = STATUS_INACCURATE
    return SolverResult(z, w, status == STATUS_CONVERGED, status, pivots, res)


def _leaving_row(T: np.ndarray, ratios: np.ndarray, col: np.ndarray, n: int,
                 z0_row: int) -> int:
    """Minimum-ratio test with the lexicographic tie-break (Cottle–Pang–Stone §4.9).

    ``ratios`` holds ``q_i / col_i`` on the candidate rows (``col_i`` > 0) and +inf elsewhere.
    """
    best = ratios.min()
    rows = np.flatnonzero(ratios <= best + _TIE_TOL * max(1.0, abs(best)))
    if rows.size == 1:
        return int(rows[0])
    if z0_row in rows:  # z0 leaves: a solution, so no cycling can follow
        return z0_row
    # Lexicographic minimum of the rows of B⁻¹ (the identity block of the tableau) over col.
    # The rows of B⁻¹ are linearly independent, so the minimum is unique in exact arithmetic.
    c = col[rows]
    for j in range(n):
        r = T[rows, j] / c
        best = r.min()
        tied = r <= best + _TIE_TOL * max(1.0, abs(best))
        rows, c = rows[tied], c[tied]
        if rows.size == 1:
            break
    return int(rows[0])


def _polish(A, b, zb, z, w, res):
    """Re-solve the final complementary basis ``A_BB z_B = −b_B``; keep it if it is better."""
    if zb.size == 0:
        return z, w, res
    zb = np.sort(zb)
    zB = gauss_solve(A[np.ix_(zb, zb)], -b[zb])
    if zB is None:
        return z, w, res
    z2 = np.zeros_like(z)
    z2[zb] = np.maximum(zB, 0.0)
    w2 = A @ z2 + b
    res2 = _residual(z2, w2)
    return (z2, w2, res2) if res2 < res else (z, w, res)


def _residual(z: np.ndarray, w: np.ndarray) -> float:
    """``maxᵢ |min(zᵢ, wᵢ)|`` (0 for n = 0)."""
    return float(np.abs(np.minimum(z, w)).max()) if z.size else 0.0
