"""Compiled Delassus operators of the contact models (numba kernels with declared signatures,
``biped_contact_sim.jit``): G = J_c M⁻¹ J_cᵀ and b of a subset of the points, from the
simulator's packed step buffer (``robot.model_kernels.step_terms``) or from its factors.
"""

from __future__ import annotations

import numpy as np

from biped_contact_sim.jit import F1, F2, I1, b1, i8, kernel
from biped_contact_sim.robot.model_kernels import (
    unpack,
)


@kernel((F1, i8, i8, i8, I1, b1), error_model="numpy")
def packed_delassus(W, m, nv, nj, idx, drift):
    """``delassus_from_factor`` on the buffer of ``robot.model_kernels.step_terms``."""
    Jc, gc, X, U, D, tf, af, tc = unpack(W, m, nv, nj)
    return delassus_from_factor(X, Jc, af, gc, idx, drift)


@kernel((F2, F2, F1, F1, I1, b1), error_model="numpy")
def delassus_from_factor(X, Jc, a_free, gamma_c, idx, drift):
    """``G = X_Iᵀ X_I`` and ``b = J_c,I a_free + γ_c,I`` over the rows I of points idx
    (``drift=False``: ``b − γ_c,I``, as numpy would subtract it from b)."""
    k = idx.shape[0]
    nv = X.shape[0]
    n = 3 * k
    Xa = np.empty((nv, n))  # the columns of the points idx, contiguous for BLAS
    b = np.empty(n)
    for t in range(k):
        for c in range(3):
            col = 3 * idx[t] + c
            for j in range(nv):
                Xa[j, 3 * t + c] = X[j, col]
            s = gamma_c[col]
            for j in range(nv):
                s += Jc[col, j] * a_free[j]
            b[3 * t + c] = s if drift else s - gamma_c[col]
    return Xa.T @ Xa, b
