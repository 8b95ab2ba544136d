"""Compiled dense factorisations and triangular solves shared by the contact models and the
controllers (numba has no triangular solve).

* ``cholesky``: X = C Cᵀ from X's lower triangle, refusing a pivot that is not positive or
  below a relative floor (its numpy reference is ``control.linalg.cholesky_reference``, LAPACK
  ``dpotrf``);
* ``triangular_solve``: A X = B for a triangular A given as T or Tᵀ, by substitution;
* ``cho_solve``: X⁻¹ B from the factor of ``cholesky`` (the reference's LAPACK ``dpotrs``).

Each substitution subtracts the terms in increasing (forward) or decreasing (back) order of
the column, one row of B at a time, so a solve of a single right-hand side (a (n, 1) B) does
the same operations in the same order as the loops it replaces.
"""

from __future__ import annotations

import numpy as np

from biped_contact_sim.jit import F2, b1, f8, kernel


@kernel((F2, f8, f8))
def cholesky(X, rcond, scale):  # pragma: no cover - compiled
    """(ok, lower C) with X = C Cᵀ from X's lower triangle; ok False where
    ``control.linalg.cholesky_reference`` returns None (a pivot ≤ 0 or NaN, or C_ii² <
    rcond · scale; scale ≤ 0: max X_ii). rcond = 0: any positive pivot is taken."""
    n = X.shape[0]
    if scale <= 0.0:
        for i in range(n):
            scale = max(scale, X[i, i])
    C = np.zeros((n, n))
    for j in range(n):
        d = X[j, j]
        for k in range(j):
            d -= C[j, k] * C[j, k]
        if not d > 0.0 or d < rcond * scale:
            return False, C
        c = np.sqrt(d)
        C[j, j] = c
        for i in range(j + 1, n):
            s = X[i, j]
            for k in range(j):
                s -= C[i, k] * C[j, k]
            C[i, j] = s / c
    return True, C


@kernel((F2, F2, b1, b1))
def triangular_solve(T, B, lower, transposed):  # pragma: no cover - compiled
    """X with A X = B, A = T (``transposed`` False) or Tᵀ, A lower triangular when ``lower``
    (forward substitution) else upper (back substitution); B of shape (n, m), a row at a time
    (contiguous inner loops). Only A's triangle is read."""
    n, m = B.shape
    X = B.copy()
    for step in range(n):
        i = step if lower else n - 1 - step
        lo, hi = (0, i) if lower else (i + 1, n)
        for k in range(lo, hi):
            a = T[k, i] if transposed else T[i, k]
            for c in range(m):
                X[i, c] -= a * X[k, c]
        d = T[i, i]
        for c in range(m):
            X[i, c] /= d
    return X


@kernel((F2, F2))
def cho_solve(C, B):  # pragma: no cover - compiled
    """X⁻¹ B for X = C Cᵀ (C lower, from ``cholesky``), B of shape (n, m): C Y = B forward,
    then Cᵀ X = Y back."""
    return triangular_solve(C, triangular_solve(C, B, True, False), False, True)


__all__ = ["cho_solve", "cholesky", "triangular_solve"]
