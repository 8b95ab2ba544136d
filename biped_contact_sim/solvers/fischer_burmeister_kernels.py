"""Compiled (numba) semismooth Newton method on the Fischer–Burmeister reformulation.

``fischer_burmeister_kernel`` performs the steps of the numpy reference
``solvers.fischer_burmeister`` (``fischer_burmeister_lcp(..., reference=True)``; Bravo &
Rengifo eqs. 17–18, De Luca–Facchinei–Kanzow with our proximal and Levenberg–Marquardt
directions) in the same order; ``test_gauss_seidel_fb`` checks it against the reference.

Inputs are trusted (the callers validate them): float64 C-contiguous arrays.
Status codes: 0 converged, 1 iteration cap, 2 line search failed.
"""

from __future__ import annotations

import math

import numpy as np

from biped_contact_sim.jit import F1, F2, f8, i8, kernel
from biped_contact_sim.solvers.lemke_kernels import lu_solve

# Sufficient descent: ∇Ψᵀd ≤ −ANGLE ‖∇Ψ‖ ‖d‖ (see solvers.fischer_burmeister).
ANGLE = 1e-12
CONVERGED, MAX_ITER, LINE_SEARCH = 0, 1, 2


@kernel((F1, F1, F1))
def _fb_merit(z, w, phi):
    """``phi ← Φ(z, w)``; returns ``(Ψ = ½‖Φ‖², ‖Φ‖∞)``."""
    psi = 0.0
    res = 0.0
    for i in range(z.shape[0]):
        p = z[i] + w[i] - math.hypot(z[i], w[i])
        phi[i] = p
        psi += p * p
        res = max(res, abs(p))
    return 0.5 * psi, res


@kernel((F2, F1, F1, F2, F1))
def _jacobian(A, z, w, H, db):
    """``H = D_a + D_b A`` (DFK choice at the kinks); fills H and db."""
    n = z.shape[0]
    da = np.empty(n)
    kink = np.empty(n, dtype=np.bool_)
    any_kink = False
    for i in range(n):
        kink[i] = math.hypot(z[i], w[i]) == 0.0
        any_kink = any_kink or kink[i]
    for i in range(n):
        a, bb = z[i], w[i]
        if kink[i]:
            a = 1.0
            bb = 0.0
            for j in range(n):
                if kink[j]:
                    bb += A[i, j]
        r = math.hypot(a, bb)
        da[i] = 1.0 - a / r
        db[i] = 1.0 - bb / r
    for i in range(n):
        for j in range(n):
            H[i, j] = db[i] * A[i, j]
        H[i, i] += da[i]


@kernel((F2, F1, F1, f8, f8, F1, f8, f8, i8, F1, F1, F1))
def _armijo(A, z, w, psi, slope, d, sigma, beta, kmax, zt, wt, phit):
    """Backtracking on Ψ; on success zt, wt, phit hold the step and Ψ is returned, else -1."""
    if not slope < 0.0:
        return -1.0
    n = z.shape[0]
    Ad = A @ d
    t = 1.0
    for _ in range(kmax):
        for i in range(n):
            zt[i] = z[i] + t * d[i]
            wt[i] = w[i] + t * Ad[i]
        psit, _ = _fb_merit(zt, wt, phit)
        if psit <= psi + sigma * t * slope:
            return psit
        t *= beta
    return -1.0


@kernel((F2, F1, F1, f8, i8, i8, f8, f8, F1))
def fischer_burmeister_kernel(A, b, z, tol, max_iter, line_search_max, sigma, beta, w):
    """Semismooth Newton on ``Φ(z) = 0`` for ``0 ≤ z ⊥ A z + b ≥ 0``.

    ``z`` is the start on entry and the iterate on return; ``w ← A z + b``. Returns
    ``(status, iterations, ‖Φ‖∞)`` (see ``solvers.fischer_burmeister_lcp``).
    """
    n = b.shape[0]
    w[:] = A @ z + b
    phi = np.empty(n)
    psi, res = _fb_merit(z, w, phi)
    H = np.empty((n, n))
    db = np.empty(n)
    M = np.empty((n, n))
    d = np.empty(n)
    rhs = np.empty(n)
    zt, wt, phit = np.empty(n), np.empty(n), np.empty(n)
    it = 0
    status = MAX_ITER
    while True:
        if res <= tol:
            status = CONVERGED
            break
        if it >= max_iter:
            break
        it += 1
        _jacobian(A, z, w, H, db)
        grad = H.T @ phi
        gnorm = math.sqrt(grad @ grad)
        accepted = -1.0
        # Directions, best first (solvers.fischer_burmeister._directions): Newton, proximal
        # Newton, Levenberg–Marquardt, steepest descent.
        for kind in range(4):
            if kind == 3:
                for i in range(n):
                    d[i] = -grad[i]
            else:
                if kind == 2:
                    M[:, :] = H.T @ H
                    for i in range(n):
                        M[i, i] += 2.0 * psi
                        rhs[i] = -grad[i]
                else:
                    M[:, :] = H
                    for i in range(n):
                        if kind == 1:
                            M[i, i] += res * db[i]
                        rhs[i] = -phi[i]
                if not lu_solve(M, rhs, d):
                    continue
            slope = grad @ d
            if not slope <= -ANGLE * gnorm * math.sqrt(d @ d):
                continue  # not a sufficient descent direction (angle test)
            accepted = _armijo(A, z, w, psi, slope, d, sigma, beta, line_search_max, zt, wt,
                               phit)
            if accepted >= 0.0:
                break
        if accepted < 0.0:
            status = LINE_SEARCH
            break
        z[:] = zt
        w[:] = wt
        phi[:] = phit
        psi = accepted
        res = 0.0
        for i in range(n):
            res = max(res, abs(phi[i]))
    return status, it, res
