"""Semismooth Newton method for the LCP via the Fischer–Burmeister function.

Bravo & Rengifo §2.1 eqs. 17–18 (docs/methods.md §2.5) write each complementarity pair
``0 ≤ a ⊥ b ≥ 0`` as ``Φ(a, b) = a + b − √(a² + b²) = 0``; for the LCP
``w = A z + b, 0 ≤ z ⊥ w ≥ 0`` this is the square nonsmooth system ``Φ(z) = 0`` with
``Φ_i(z) = Φ(z_i, (A z + b)_i)``. It is solved by the globalised semismooth Newton method of
De Luca, Facchinei & Kanzow (Math. Programming 75, 1996): Newton steps on a generalized
Jacobian, an Armijo line search on the merit function ``Ψ = ½‖Φ‖²`` (continuously
differentiable, ∇Ψ = Hᵀ Φ for any element H of the generalized Jacobian), and fallback
directions (ending with the steepest descent step ``−∇Ψ``) when the Newton direction does not
exist or is not a descent direction.
"""

from __future__ import annotations

import numpy as np

from biped_contact_sim.solvers.fischer_burmeister_kernels import fischer_burmeister_kernel
from biped_contact_sim.solvers.linalg import gauss_solve
from biped_contact_sim.solvers.result import (
    STATUS_CONVERGED,
    STATUS_LINE_SEARCH,
    STATUS_MAX_ITER,
    SolverResult,
    as_square_matrix,
    as_vector,
    check_count,
    check_open_interval,
    check_positive,
)

_WHO = "fischer_burmeister_lcp"
# Sufficient descent: a direction d is used only if ∇Ψᵀd ≤ −_ANGLE ‖∇Ψ‖ ‖d‖ (its angle with
# −∇Ψ is below arccos 1e-12). DFK's test ∇Ψᵀd ≤ −1e-8 ‖d‖^2.1 is not scale invariant: it
# rejects every Newton step of an impulse LCP with entries ~1e-7; this angle test is.
_ANGLE = 1e-12
_STATUSES = (STATUS_CONVERGED, STATUS_MAX_ITER, STATUS_LINE_SEARCH)  # the kernel's codes


def fb(a, b) -> np.ndarray:
    """Fischer–Burmeister function ``Φ(a, b) = a + b − √(a² + b²)``, elementwise.

    Bravo & Rengifo eq. 17: ``Φ(a, b) = 0 ⟺ a ≥ 0, b ≥ 0, a b = 0``. ``np.hypot`` avoids
    overflow for large arguments.
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    return a + b - np.hypot(a, b)


def fischer_burmeister_lcp(A, b, *, z0=None, tol: float = 1e-10, max_iter: int = 100,
                           line_search_max: int = 30, sigma: float = 1e-4,
                           beta: float = 0.5, reference: bool = False) -> SolverResult:
    """Solve ``0 ≤ z ⊥ A z + b ≥ 0`` by semismooth Newton on ``Φ(z) = 0``.

    Bravo & Rengifo eqs. 17–18; De Luca, Facchinei & Kanzow (1996) Algorithm. Each iteration:

    1. Generalized Jacobian ``H = D_a + D_b A`` with, for ``(z_i, w_i) ≠ (0, 0)``,
       ``D_a,ii = 1 − z_i/√(z_i² + w_i²)``, ``D_b,ii = 1 − w_i/√(z_i² + w_i²)``; at the kink
       ``z_i = w_i = 0`` the DFK choice: with ``y`` the indicator vector of the kink set
       β, ``D_a,ii = 1 − y_i/√(y_i² + (A y)_i²)``, ``D_b,ii = 1 − (A y)_i/√(y_i² + (A y)_i²)``.
    2. Directions, tried in order until one passes the descent test
       ``∇Ψᵀd ≤ −10⁻¹² ‖∇Ψ‖ ‖d‖`` and its Armijo search: Newton ``H d = −Φ``; proximal
       Newton ``(H + ‖Φ‖∞ D_b) d = −Φ``; Levenberg–Marquardt; ``−∇Ψ = −HᵀΦ``
       (see :func:`_directions`). DFK use Newton then ``−∇Ψ`` with the test
       ``∇Ψᵀd ≤ −10⁻⁸‖d‖^2.1``; that test is not scale invariant and the two middle
       directions fix the stalls of a singular H at degenerate solutions of PSD problems.
    3. Armijo: largest ``t = βᵏ`` (k < line_search_max) with
       ``Ψ(z + t d) ≤ Ψ(z) + σ t ∇Ψᵀd``.

    For a P-matrix every H is nonsingular and convergence is locally quadratic; a PSD A may
    make H singular, which the proximal direction handles.

    Args:
        A: (n, n) matrix; n may be 0.
        b: (n,) vector.
        z0: (n,) starting point; default zeros.
        tol: converged when ``‖Φ‖∞ ≤ tol``.
        max_iter: cap on Newton iterations.
        line_search_max: cap on backtracking steps per iteration.
        sigma: Armijo sufficient-decrease constant, in (0, 1/2).
        beta: backtracking factor, in (0, 1).
        reference: run the numpy reference instead of the compiled kernel
            (``solvers.fischer_burmeister_kernels``, the same steps; the tests compare them).

    Returns:
        SolverResult with ``x = z`` (not clipped), ``w = A z + b``, ``iterations`` = Newton
        iterations, ``residual = ‖Φ‖∞`` (which bounds ``max|min(z, w)|`` by ``/(2 − √2)``);
        status ``converged``, ``max_iterations`` or ``line_search_failed``.

    Raises:
        InputError: A not square, b or z0 of the wrong length, NaN/Inf, tol ≤ 0, counts not
            integers, sigma outside (0, 1/2), beta outside (0, 1).
    """
    A = as_square_matrix(A, _WHO)
    n = A.shape[0]
    b = as_vector(b, n, _WHO, "b", "A")
    z = np.zeros(n) if z0 is None else as_vector(z0, n, _WHO, "z0", "A").copy()
    tol = check_positive(tol, _WHO, "tol")
    max_iter = check_count(max_iter, _WHO, "max_iter")
    line_search_max = check_count(line_search_max, _WHO, "line_search_max", minimum=1)
    sigma = check_open_interval(sigma, _WHO, "sigma", 0.0, 0.5)
    beta = check_open_interval(beta, _WHO, "beta", 0.0, 1.0)

    if n == 0:
        return SolverResult(z, b.copy(), True, STATUS_CONVERGED, 0, 0.0)
    if not reference:
        w = np.empty(n)
        code, it, res = fischer_burmeister_kernel(np.ascontiguousarray(A), b, z, tol, max_iter,
                                                  line_search_max, sigma, beta, w)
        return SolverResult(z, w, code == 0, _STATUSES[code], it, res)
    w = A @ z + b
    phi = fb(z, w)
    res = float(np.abs(phi).max())
    psi = 0.5 * float(phi @ phi)
    it = 0
    status = STATUS_MAX_ITER
    while True:
        if res <= tol:
            status = STATUS_CONVERGED
            break
        if it >= max_iter:
            break
        it += 1
        H, db = _jacobian(A, z, w)
        grad = H.T @ phi
        gnorm = float(np.sqrt(grad @ grad))
        step = None
        for d in _directions(H, db, phi, grad, res, psi):
            slope = grad @ d
            if not slope <= -_ANGLE * gnorm * np.sqrt(d @ d):
                continue  # not a sufficient descent direction (angle test)
            step = _armijo(A, z, w, psi, slope, d, sigma, beta, line_search_max)
            if step is not None:
                break
        if step is None:
            status = STATUS_LINE_SEARCH
            break
        z, w, phi, psi = step
        res = float(np.abs(phi).max())
    return SolverResult(z, w, status == STATUS_CONVERGED, status, it, res)


def _directions(H, db, phi, grad, res, psi):
    """Candidate search directions, best first (generated lazily: most steps use the first).

    1. Newton: ``H d = −Φ``.
    2. Proximal Newton: ``(H + ε D_b) d = −Φ`` with ``ε = ‖Φ‖∞``, the Newton step of the
       proximal subproblem ``LCP(A + εI, b − ε z)`` at its centre z. Nonsingular for A PSD;
       it gets off the flat regions of Ψ where a singular H (degenerate, non-unique solutions
       of a PSD LCP) makes the Newton step huge. As ε → 0 it tends to the Newton step.
    3. Levenberg–Marquardt: ``(HᵀH + ‖Φ‖² I) d = −∇Ψ`` (Yamashita–Fukushima), always descent.
    4. Steepest descent ``−∇Ψ`` (DFK's fallback).
    """
    diag = np.diag_indices_from(H)
    for shift, lm in ((None, False), (res * db, False), (2.0 * psi, True)):
        M = H.T @ H if lm else H.copy()
        if shift is not None:
            M[diag] += shift
        d = gauss_solve(M, -grad if lm else -phi)  # None: singular or not finite
        if d is not None:
            yield d
    yield -grad


def _jacobian(A: np.ndarray, z: np.ndarray, w: np.ndarray) -> np.ndarray:
    """An element ``H = D_a + D_b A`` of the generalized Jacobian of Φ (DFK choice at kinks)."""
    r = np.hypot(z, w)
    kink = r == 0.0
    a = z.copy()
    bb = w.copy()
    if kink.any():
        y = kink.astype(float)
        a[kink] = 1.0
        bb[kink] = (A @ y)[kink]
        r[kink] = np.hypot(a[kink], bb[kink])
    da = 1.0 - a / r
    db = 1.0 - bb / r
    H = db[:, None] * A
    H[np.diag_indices_from(H)] += da
    return H, db


def _armijo(A, z, w, psi, slope, d, sigma, beta, kmax):
    """Backtracking line search on Ψ; returns (z, w, Φ, Ψ) at the accepted step or None."""
    if not slope < 0.0:
        return None
    t = 1.0
    Ad = A @ d
    for _ in range(kmax):
        zt = z + t * d
        wt = w + t * Ad
        phi = fb(zt, wt)
        psit = 0.5 * float(phi @ phi)
        if psit <= psi + sigma * t * slope:
            return zt, wt, phi, psit
        t *= beta
    return None
