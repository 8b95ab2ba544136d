"""Compiled (numba) block Gauss–Seidel sweeps with the exact 3-D Coulomb law.

``gauss_seidel_kernel`` performs the steps of the numpy reference ``solvers.gauss_seidel``
(``gauss_seidel_coulomb(..., reference=True)``; Chardonnet et al. Algorithm 1 with Jean's
local solver) in the same order: diagonal blocks and their closed-form inverses, the sweeps,
the local separate / stick / slide decision and the sliding-angle equation (Newton, then the
roots of the quartic). ``test_gauss_seidel_fb`` checks it against the reference.

Inputs are trusted (the callers validate them): float64 C-contiguous arrays.
"""

from __future__ import annotations

import math

import numpy as np

from biped_contact_sim.jit import C1, F1, F2, f8, i8, kernel

# A diagonal block is singular when a contact point cannot move in some direction (e.g.
# sideways in a planar model). Blocks with det W ≤ REG·trace(W)³ are inverted as
# W + REG·trace(W)·I (the stick candidate only; the sliding solve uses W itself).
REG = 1e-12
NEWTON_MAX = 30


@kernel((f8, f8, f8, f8, f8, f8))
def block_inverse(w00, w01, w02, w11, w12, w22):
    """Upper triangle of the inverse of a symmetric 3×3 block (regularised when singular).

    Closed form (adjugate over determinant); ``gauss_seidel._block_inverses`` is the same.
    """
    tr = max(w00 + w11 + w22, 1e-300)
    det = w00 * (w11 * w22 - w12 * w12) - w01 * (w01 * w22 - w02 * w12) \
        + w02 * (w01 * w12 - w11 * w02)
    if det <= REG * tr * tr * tr:
        s = REG * tr
        w00 += s
        w11 += s
        w22 += s
        det = w00 * (w11 * w22 - w12 * w12) - w01 * (w01 * w22 - w02 * w12) \
            + w02 * (w01 * w12 - w11 * w02)
    return ((w11 * w22 - w12 * w12) / det, (w02 * w12 - w01 * w22) / det,
            (w01 * w12 - w02 * w11) / det, (w00 * w22 - w02 * w02) / det,
            (w01 * w02 - w00 * w12) / det, (w00 * w11 - w01 * w01) / det)


@kernel((f8, f8, f8, f8))
def project(f0, f1, fn, mu):
    """Euclidean projection of one force onto the cone ``‖f_t‖ ≤ μ f_n``."""
    rt = math.hypot(f0, f1)
    if rt <= mu * fn:
        return f0, f1, fn
    if mu * rt <= -fn:
        return 0.0, 0.0, 0.0
    n = (mu * rt + fn) / (1.0 + mu * mu)
    k = mu * n / rt
    return k * f0, k * f1, n


@kernel((f8, f8))
def angle_gap(a, b):
    """``|a − b|`` modulo 2π, in [0, π] (the reference computes it the same way)."""
    x = (a - b) / (2.0 * math.pi)
    return abs(x - round(x)) * (2.0 * math.pi)


@kernel((f8, f8, f8, f8, f8, f8))
def _h(h0, h2c, h2s, h1c, h1s, th):
    c1, s1 = math.cos(th), math.sin(th)
    c2, s2 = c1 * c1 - s1 * s1, 2.0 * s1 * c1
    return h0 + h2c * c2 + h2s * s2 + h1c * c1 + h1s * s1, \
        2.0 * (h2s * c2 - h2c * s2) + h1s * c1 - h1c * s1


@kernel((f8, f8, f8, f8, f8, f8, f8))
def _newton_theta(h0, h2c, h2s, h1c, h1s, th, scale):
    """Newton's method on H(θ); returns (ok, root)."""
    for _ in range(NEWTON_MAX):
        h, dh = _h(h0, h2c, h2s, h1c, h1s, th)
        if dh == 0.0:
            return abs(h) <= 1e-15 * scale, th
        step = h / dh
        step = max(-0.5, min(0.5, step))  # a trust region: H has up to four roots per turn
        th -= step
        if abs(step) <= 1e-15 * (1.0 + abs(th)):
            return True, th
    h, _ = _h(h0, h2c, h2s, h1c, h1s, th)
    return abs(h) <= 1e-12 * scale, th


@kernel((f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, f8))
def _sliding_force(w00, w01, w02, w11, w12, w22, r0, r1, r2, mu, th):
    """(ok, f) of sliding angle θ if it is a valid sliding solution (D > 0, σ ≥ 0)."""
    e0, e1 = math.cos(th), math.sin(th)
    u0, u1 = -mu * e0, -mu * e1
    d = w02 * u0 + w12 * u1 + w22
    if d <= 0.0:
        return False, 0.0, 0.0, 0.0
    fn = -r2 / d
    vt0 = fn * (w00 * u0 + w01 * u1 + w02) + r0
    vt1 = fn * (w01 * u0 + w11 * u1 + w12) + r1
    if vt0 * e0 + vt1 * e1 < -1e-12 * (abs(r0) + abs(r1) + abs(r2)):
        return False, 0.0, 0.0, 0.0
    return True, fn * u0, fn * u1, fn


@kernel((C1,))
def poly_roots(coeffs):
    """All roots of the complex polynomial ``Σ coeffs[k] x^(n−k)`` (leading zeros dropped), by
    the Weierstrass (Durand–Kerner) iteration, then polished by Newton's method.

    Replaces ``np.roots`` (companion-matrix eigenvalues through LAPACK, seconds of compile
    time); the roots only seed the Newton solve on θ of :func:`_slide`, which fixes their
    last digits, so a root needs only to lie in the right basin.
    """
    first = 0
    while first < coeffs.shape[0] - 1 and coeffs[first] == 0.0:
        first += 1
    deg = coeffs.shape[0] - 1 - first
    roots = np.empty(deg, dtype=np.complex128)
    if deg == 0:
        return roots
    c = coeffs[first:] / coeffs[first]  # monic
    # Start on a circle of the Cauchy bound, at angles that are not symmetric.
    radius = 0.0
    for k in range(1, deg + 1):
        radius = max(radius, abs(c[k]))
    radius = 1.0 + radius
    for k in range(deg):
        angle = 2.0 * math.pi * k / deg + 0.4
        roots[k] = radius * (math.cos(angle) + 1j * math.sin(angle))
    for _ in range(500):
        change = 0.0
        for k in range(deg):
            x = roots[k]
            p = c[0]
            for j in range(1, deg + 1):
                p = p * x + c[j]
            den = 1.0 + 0.0j
            for j in range(deg):
                if j != k:
                    den *= x - roots[j]
            if den == 0.0:
                den = 1e-300 + 0.0j
            step = p / den
            roots[k] = x - step
            change = max(change, abs(step) / max(1.0, abs(x)))
        if change <= 1e-15:
            break
    for k in range(deg):  # Newton polish on p itself
        x = roots[k]
        for _ in range(3):
            p = c[0]
            dp = 0.0 + 0.0j
            for j in range(1, deg + 1):
                dp = dp * x + p
                p = p * x + c[j]
            if dp == 0.0:
                break
            x = x - p / dp
        roots[k] = x
    return roots


@kernel((f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, f8))
def _slide(w00, w01, w02, w11, w12, w22, r0, r1, r2, mu, theta0):
    """Sliding solution of one contact (``gauss_seidel._slide``); (ok, f0, f1, fn)."""
    acc = -r2 * mu * w01 + mu * w02 * r1
    ass = r2 * mu * w01 - mu * w12 * r0
    acs = -r2 * mu * (w11 - w00) - mu * w02 * r0 + mu * w12 * r1
    h1c = r2 * w12 - w22 * r1
    h1s = -r2 * w02 + w22 * r0
    h0, h2c, h2s = 0.5 * (acc + ass), 0.5 * (acc - ass), 0.5 * acs
    scale = abs(h0) + abs(h2c) + abs(h2s) + abs(h1c) + abs(h1s)
    if scale == 0.0:
        return False, 0.0, 0.0, 0.0
    ok, th = _newton_theta(h0, h2c, h2s, h1c, h1s, theta0, scale)
    if ok:
        ok, f0, f1, fn = _sliding_force(w00, w01, w02, w11, w12, w22, r0, r1, r2, mu, th)
        if ok:
            return True, f0, f1, fn
    coeffs = np.empty(5, dtype=np.complex128)
    coeffs[0] = 0.5 * (h2c - 1j * h2s)
    coeffs[1] = 0.5 * (h1c - 1j * h1s)
    coeffs[2] = h0
    coeffs[3] = 0.5 * (h1c + 1j * h1s)
    coeffs[4] = 0.5 * (h2c + 1j * h2s)
    roots = poly_roots(coeffs)
    found = False
    best_gap = np.inf
    b0 = b1 = b2 = 0.0
    for z in roots:
        ok, th = _newton_theta(h0, h2c, h2s, h1c, h1s, math.atan2(z.imag, z.real), scale)
        if not ok:
            continue
        ok, f0, f1, fn = _sliding_force(w00, w01, w02, w11, w12, w22, r0, r1, r2, mu, th)
        gap = angle_gap(th, theta0)
        if ok and gap < best_gap:
            found, best_gap = True, gap
            b0, b1, b2 = f0, f1, fn
    return found, b0, b1, b2


@kernel((f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, f8))
def local_solve(w00, w01, w02, w11, w12, w22, i00, i01, i02, i11, i12, i22,
                r0, r1, r2, mu, a0, a1):
    """Exact solution of one contact's Coulomb law for ``v = W f + r`` (Jean's local solver)."""
    if r2 >= 0.0:  # f = 0 gives v = r with v_n ≥ 0: separating
        return 0.0, 0.0, 0.0
    s0 = -(i00 * r0 + i01 * r1 + i02 * r2)
    s1 = -(i01 * r0 + i11 * r1 + i12 * r2)
    s2 = -(i02 * r0 + i12 * r1 + i22 * r2)
    if s2 >= 0.0 and math.hypot(s0, s1) <= mu * s2:
        return s0, s1, s2
    if mu == 0.0:  # frictionless: v_n = 0 with f_t = 0
        if w22 > 0.0:
            return 0.0, 0.0, -r2 / w22
        return 0.0, 0.0, 0.0
    if a0 != 0.0 or a1 != 0.0:
        g0, g1 = -a0, -a1
    else:
        g0, g1 = -s0, -s1
    ok, f0, f1, fn = _slide(w00, w01, w02, w11, w12, w22, r0, r1, r2, mu, math.atan2(g1, g0))
    if not ok:  # no sliding solution found (not expected for W SPD): nearest cone point
        return project(s0, s1, s2, mu)
    return f0, f1, fn


@kernel((F1, F1, F1))
def coulomb_residual_kernel(f, v, mu):
    """Natural-map residual of the 3-D Coulomb law (``gauss_seidel.coulomb_residual``)."""
    m = mu.shape[0]
    res = 0.0
    for i in range(m):
        f0, f1, f2 = f[3 * i], f[3 * i + 1], f[3 * i + 2]
        v0, v1, v2 = v[3 * i], v[3 * i + 1], v[3 * i + 2]
        v2 += mu[i] * math.hypot(v0, v1)
        p0, p1, p2 = project(f0 - v0, f1 - v1, f2 - v2, mu[i])
        d = math.sqrt((f0 - p0) ** 2 + (f1 - p1) ** 2 + (f2 - p2) ** 2)
        if d > res:
            res = d
    return res


@kernel((F2, F1, F1, F1, f8, i8, f8, F1))
def gauss_seidel_kernel(G, c, mu, f, tol, max_sweeps, omega, v):
    """Block Gauss–Seidel on ``v = G f + c`` with the exact Coulomb law per contact.

    ``f`` (3m,) is the warm start on entry and the solution on return; ``v ← G f + c``.
    Returns ``(converged, sweeps, residual)`` (see ``solvers.gauss_seidel_coulomb``).
    """
    n3 = c.shape[0]
    m = n3 // 3
    W = np.empty((m, 6))
    Wi = np.empty((m, 6))
    for i in range(m):
        k = 3 * i
        w00, w11, w22 = G[k, k], G[k + 1, k + 1], G[k + 2, k + 2]
        w01 = 0.5 * (G[k, k + 1] + G[k + 1, k])
        w02 = 0.5 * (G[k, k + 2] + G[k + 2, k])
        w12 = 0.5 * (G[k + 1, k + 2] + G[k + 2, k + 1])
        W[i, 0], W[i, 1], W[i, 2], W[i, 3], W[i, 4], W[i, 5] = w00, w01, w02, w11, w12, w22
        Wi[i, 0], Wi[i, 1], Wi[i, 2], Wi[i, 3], Wi[i, 4], Wi[i, 5] = block_inverse(
            w00, w01, w02, w11, w12, w22)
    converged = False
    sweeps = 0
    while sweeps < max_sweeps:
        sweeps += 1
        delta = 0.0
        fmax = 0.0
        for i in range(m):
            k = 3 * i
            w00, w01, w02, w11, w12, w22 = W[i, 0], W[i, 1], W[i, 2], W[i, 3], W[i, 4], W[i, 5]
            a0, a1, a2 = f[k], f[k + 1], f[k + 2]
            g0 = 0.0
            g1 = 0.0
            g2 = 0.0
            for j in range(n3):
                fj = f[j]
                g0 += G[k, j] * fj
                g1 += G[k + 1, j] * fj
                g2 += G[k + 2, j] * fj
            r0 = c[k] + g0 - (w00 * a0 + w01 * a1 + w02 * a2)
            r1 = c[k + 1] + g1 - (w01 * a0 + w11 * a1 + w12 * a2)
            r2 = c[k + 2] + g2 - (w02 * a0 + w12 * a1 + w22 * a2)
            b0, b1, b2 = local_solve(w00, w01, w02, w11, w12, w22, Wi[i, 0], Wi[i, 1],
                                     Wi[i, 2], Wi[i, 3], Wi[i, 4], Wi[i, 5], r0, r1, r2,
                                     mu[i], a0, a1)
            if omega != 1.0:
                b0, b1, b2 = project(a0 + omega * (b0 - a0), a1 + omega * (b1 - a1),
                                     a2 + omega * (b2 - a2), mu[i])
            delta = max(delta, abs(b0 - a0), abs(b1 - a1), abs(b2 - a2))
            fmax = max(fmax, abs(b0), abs(b1), abs(b2))
            f[k], f[k + 1], f[k + 2] = b0, b1, b2
        if delta <= tol * max(1.0, fmax):
            converged = True
            break
    for i in range(n3):
        s = c[i]
        for j in range(n3):
            s += G[i, j] * f[j]
        v[i] = s
    return converged, sweeps, coulomb_residual_kernel(f, v, mu)
