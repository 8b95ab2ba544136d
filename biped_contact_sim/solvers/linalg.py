"""Minimum-norm least-squares solve of a symmetric positive semidefinite system.

The penalty contact model solves ``G f' = r`` (Rengifo et al. eq. 18) with ``G = J_c M⁻¹ J_cᵀ``
singular whenever the contact points of one rigid foot are more than its 6 DoF can move
independently (four coplanar sole vertices give rank 6 out of 12). The paper takes the
Moore–Penrose solution ``f' = G⁺ r``.

An SVD or eigendecomposition gives ``G⁺`` but costs ~70 µs for 24×24 through numpy. A pivoted
Cholesky factorisation (LAPACK ``dpstrf``, ~3 µs) reveals the rank k and a factor
``G = B Bᵀ`` with ``B`` (n×k) of full column rank; then

    G⁺ = (B Bᵀ)⁺ = B (BᵀB)⁻¹ (BᵀB)⁻¹ Bᵀ,

which is exact (not a regularisation): ``(Bᵀ)⁺ = B (BᵀB)⁻¹`` for full column rank B.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.linalg import lapack


@dataclass
class MinNormSolution:
    """``x = G⁺ r``, the numerical rank of G and the least-squares residual ``‖G x − r‖``."""

    x: np.ndarray
    rank: int
    residual: float


def min_norm_solve(G: np.ndarray, r: np.ndarray, rtol: float = 1e-10) -> MinNormSolution:
    """Minimum-norm least-squares solution ``x = G⁺ r`` of a symmetric PSD system.

    Args:
        G: (n, n) symmetric positive semidefinite matrix.
        r: (n,) right-hand side (need not lie in the range of G).
        rtol: pivots below ``rtol · max(diag G)`` count as zero (rank detection).

    Returns:
        The solution, the rank found and the residual norm.

    Raises:
        ValueError: G is not square or r has the wrong length.
    """
    n = G.shape[0]
    if G.shape != (n, n) or r.shape != (n,):
        raise ValueError(f"min_norm_solve: G must be (n, n) and r (n,); got {G.shape} and "
                         f"{r.shape}")
    scale = G.diagonal().max() if n else 0.0
    if scale <= 0.0:
        return MinNormSolution(np.zeros(n), 0, float(np.sqrt(r @ r)))
    # Upper pivoted Cholesky: G[piv][:, piv] = Uᵀ U, U upper triangular, rows ≥ rank are zero.
    # dpstrf leaves the strictly lower triangle as it found it: zero it (cached mask, no triu).
    U, piv, rank, _ = lapack.dpstrf(G, lower=0, tol=rtol * scale)
    piv -= 1  # LAPACK pivots are 1-based
    U[_strict_lower(n)] = 0.0
    rp = r[piv]
    if rank == n:  # full rank: ordinary Cholesky solve with the factor U
        xp = lapack.dpotrs(U, rp, lower=0)[0]
    else:
        Uk = U[:rank]  # (k, n): G_pp = U_kᵀ U_k, i.e. B = U_kᵀ (permuted)
        c, info = lapack.dpotrf(Uk @ Uk.T, lower=0)  # BᵀB, (k, k) SPD
        if info != 0:  # the rank decision was too optimistic; take the SVD route
            x = np.linalg.pinv(G, rcond=rtol, hermitian=True) @ r
            d = G @ x - r
            return MinNormSolution(x, int(rank), float(np.sqrt(d @ d)))
        z = lapack.dpotrs(c, Uk @ rp, lower=0)[0]
        xp = Uk.T @ lapack.dpotrs(c, z, lower=0)[0]
    x = np.empty(n)
    x[piv] = xp
    d = G @ x - r
    return MinNormSolution(x, int(rank), float(np.sqrt(d @ d)))


@lru_cache(maxsize=64)
def _strict_lower(n: int) -> np.ndarray:
    return np.tril(np.ones((n, n), dtype=bool), -1)


def gauss_solve(M: np.ndarray, rhs: np.ndarray) -> np.ndarray | None:
    """``M⁻¹ rhs`` by Gaussian elimination with partial pivoting; None if a pivot is exactly
    zero or the result is not finite.

    The numpy twin of the compiled ``lemke_kernel.lu_solve``: the same operations in the same
    order, so that the numpy references of the solvers and their compiled kernels resolve a
    nearly singular system (a degenerate LCP basis, whose solution is not unique) alike.
    """
    U, y = M.copy(), rhs.copy()
    n = len(y)
    for k in range(n):
        p = k + int(np.abs(U[k:, k]).argmax())
        if U[p, k] == 0.0:
            return None
        if p != k:
            U[[k, p], k:] = U[[p, k], k:]
            y[[k, p]] = y[[p, k]]
        f = U[k + 1:, k] / U[k, k]
        U[k + 1:, k + 1:] -= np.multiply.outer(f, U[k, k + 1:])
        y[k + 1:] -= f * y[k]
    for i in range(n - 1, -1, -1):
        y[i] /= U[i, i]
        y[:i] -= U[:i, i] * y[i]
    return y if np.isfinite(y).all() else None
