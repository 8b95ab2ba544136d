"""Block Gauss–Seidel for 3-D Coulomb friction with exact cones (Chardonnet et al. §II-C).

The velocity-level contact problem of Chardonnet et al. eqs. 9–10 (docs/methods.md §2.3 step 3) is

    v = G f + c,     G = T_e Λ_c⁻¹ (3m × 3m, symmetric PSD),   c = B_c T_e + v_c,

with, for each contact i (components ordered t1, t2, n) and friction coefficient μ_i, one of

    separating:  f_i = 0,                               v_n ≥ 0
    sticking:    v_i = 0,        f_n ≥ 0,  ‖f_t‖ ≤ μ f_n
    sliding:     v_n = 0,        f_n > 0,  f_t = −μ f_n v_t / ‖v_t‖.

Algorithm 1 of the paper sweeps the contacts: contact i sees the others frozen,
``v_i = W f_i + r_i`` with ``W = G_ii`` and ``r_i = c_i + Σ_{j≠i} G_ij f_j``, and its 3-D law is
solved exactly ("Newton–Coulomb", Jean 1993): separate if ``r_n ≥ 0``; else stick if the force
that zeroes ``v_i`` is in the cone; else slide. The sliding case is one equation in the sliding
angle θ (see :func:`_slide`), solved by Newton's method with a polynomial-root fallback that
finds every solution, so the local law holds to rounding error.
"""

from __future__ import annotations

import math

import numpy as np

from biped_contact_sim.errors import InputError
from biped_contact_sim.solvers.gauss_seidel_kernels import (
    NEWTON_MAX,
    angle_gap,
    gauss_seidel_kernel,
)
from biped_contact_sim.solvers.gauss_seidel_kernels import REG as _REG
from biped_contact_sim.solvers.result import (
    BAD_LENGTH,
    BAD_VALUE,
    NOT_FINITE,
    STATUS_CONVERGED,
    STATUS_MAX_ITER,
    SolverResult,
    as_square_matrix,
    as_vector,
    check_count,
    check_open_interval,
    check_positive,
)

_WHO = "gauss_seidel_coulomb"
# A diagonal block is singular when a contact point cannot move in some direction (e.g.
# sideways in a planar model). Blocks with det W ≤ _REG·trace(W)³ are inverted as
# W + _REG·trace(W)·I (the stick candidate only; the sliding solve uses W itself); the others
# exactly, so the law holds to rounding error on well-posed problems. (The constants live with
# the compiled kernel, which must use the same ones.)
_UPPER = (np.array([0, 0, 0, 1, 1, 2]), np.array([0, 1, 2, 1, 2, 2]))


def gauss_seidel_coulomb(G, c, mu, *, f0=None, tol: float = 1e-10, max_sweeps: int = 200,
                         omega: float = 1.0, reference: bool = False) -> SolverResult:
    """Solve the 3-D Coulomb contact problem ``v = G f + c`` by block Gauss–Seidel.

    Chardonnet et al. eqs. 9–10 and Algorithm 1; local solver after Jean (1993, the paper's
    ref. [12]). Per sweep, for each contact i in order: ``r_i = c_i + G_i f − G_ii f_i``
    (current forces of the others), ``f_i ← solution of the local law`` (see module doc),
    relaxed as ``f_i ← P_K((1 − ω) f_i + ω f_i_local)`` when ω ≠ 1 (the projection keeps a
    relaxed force in its cone; a fixed point is the same for every ω).

    Args:
        G: (3m, 3m) symmetric positive semidefinite Delassus matrix (may be singular, e.g.
            four coplanar vertices of one rigid foot: rank 6 of 12). Only its diagonal blocks
            need to be nonsingular for an exact local solve; a (near-)singular block,
            det ≤ 1e-12·trace³, is shifted by 1e-12·trace for the stick candidate.
        c: (3m,) free velocity, per contact (t1, t2, n).
        mu: (m,) friction coefficients, ≥ 0.
        f0: (3m,) warm start (e.g. the previous step's forces); default zeros.
        tol: stop when ``max |Δf| ≤ tol · max(1, max |f|)`` over one sweep.
        max_sweeps: cap on sweeps.
        omega: relaxation factor in (0, 2); 1 is plain Gauss–Seidel.
        reference: run the numpy reference instead of the compiled kernel
            (``solvers.gauss_seidel_kernels``, the same steps; the tests compare the two).

    Returns:
        SolverResult with ``x = f`` (3m,), ``w = v = G f + c``, ``iterations`` = sweeps,
        ``residual = coulomb_residual(f, v, mu)``; status ``converged`` or ``max_iterations``.

    Raises:
        InputError: G not square or not 3m × 3m, c, mu or f0 of the wrong length, NaN/Inf,
            mu < 0, tol ≤ 0, max_sweeps not an integer ≥ 0, omega outside (0, 2).
    """
    G = as_square_matrix(G, _WHO, "G")
    n3 = G.shape[0]
    if n3 % 3:
        raise InputError(BAD_VALUE.format(who=_WHO, name="G.shape", value=G.shape,
                                          expected="(3m, 3m): three rows per contact"))
    m = n3 // 3
    c = as_vector(c, n3, _WHO, "c", "G")
    mu = _check_mu(mu, m, _WHO)
    f = np.zeros(n3) if f0 is None else as_vector(f0, n3, _WHO, "f0", "G").copy()
    tol = check_positive(tol, _WHO, "tol")
    max_sweeps = check_count(max_sweeps, _WHO, "max_sweeps")
    omega = check_open_interval(omega, _WHO, "omega", 0.0, 2.0)
    if m == 0:
        return SolverResult(f, c.copy(), True, STATUS_CONVERGED, 0, 0.0)
    if not reference:
        v = np.empty(n3)
        converged, sweeps, res = gauss_seidel_kernel(np.ascontiguousarray(G), c, mu, f, tol,
                                                     max_sweeps, omega, v)
        status = STATUS_CONVERGED if converged else STATUS_MAX_ITER
        return SolverResult(f, v, converged, status, sweeps, res)
    return gauss_seidel_reference(G, c, mu, f, tol, max_sweeps, omega)


def _block_inverses(W: np.ndarray) -> np.ndarray:
    """Upper triangles (m, 6) of the inverses of symmetric 3×3 blocks W (m, 3, 3).

    Closed form (adjugate over determinant, as ``gauss_seidel_kernel.block_inverse``); a
    block with det ≤ _REG·trace³ is shifted by _REG·trace·I first (module comment).
    """
    w00, w01, w02 = W[:, 0, 0], W[:, 0, 1], W[:, 0, 2]
    w11, w12, w22 = W[:, 1, 1], W[:, 1, 2], W[:, 2, 2]
    tr = np.maximum(w00 + w11 + w22, 1e-300)

    def det(w00, w11, w22):
        return w00 * (w11 * w22 - w12 * w12) - w01 * (w01 * w22 - w02 * w12) \
            + w02 * (w01 * w12 - w11 * w02)

    shift = np.where(det(w00, w11, w22) <= _REG * tr * tr * tr, _REG * tr, 0.0)
    w00, w11, w22 = w00 + shift, w11 + shift, w22 + shift
    d = det(w00, w11, w22)
    return np.stack([(w11 * w22 - w12 * w12) / d, (w02 * w12 - w01 * w22) / d,
                     (w01 * w12 - w02 * w11) / d, (w00 * w22 - w02 * w02) / d,
                     (w01 * w02 - w00 * w12) / d, (w00 * w11 - w01 * w01) / d], axis=1)


def gauss_seidel_reference(G, c, mu, f, tol, max_sweeps, omega) -> SolverResult:
    """The numpy reference of :func:`gauss_seidel_coulomb` (validated input, m > 0)."""
    m = len(mu)
    # Diagonal blocks W_i (m, 3, 3), symmetrised, and their inverses, as Python floats: the
    # local solves run on scalars, which is several times faster than numpy on 3-vectors.
    ar = np.arange(m)
    W = G.reshape(m, 3, m, 3)[ar, :, ar, :]
    W = 0.5 * (W + W.transpose(0, 2, 1))
    Wl = W[:, _UPPER[0], _UPPER[1]].tolist()
    Wil = _block_inverses(W).tolist()
    rows = [G[3 * i:3 * i + 3] for i in range(m)]
    cl = c.reshape(m, 3).tolist()
    mul = mu.tolist()
    fl = f.reshape(m, 3).tolist()

    converged = False
    sweeps = 0
    while sweeps < max_sweeps:
        sweeps += 1
        delta = 0.0
        fmax = 0.0
        for i in range(m):
            w00, w01, w02, w11, w12, w22 = Wl[i]
            a0, a1, a2 = fl[i]
            g0, g1, g2 = (rows[i] @ f).tolist()
            ci = cl[i]
            # r_i = c_i + Σ_j G_ij f_j − G_ii f_i
            r0 = ci[0] + g0 - (w00 * a0 + w01 * a1 + w02 * a2)
            r1 = ci[1] + g1 - (w01 * a0 + w11 * a1 + w12 * a2)
            r2 = ci[2] + g2 - (w02 * a0 + w12 * a1 + w22 * a2)
            b0, b1, b2 = _local(Wl[i], Wil[i], r0, r1, r2, mul[i], a0, a1)
            if omega != 1.0:
                b0, b1, b2 = _project(a0 + omega * (b0 - a0), a1 + omega * (b1 - a1),
                                      a2 + omega * (b2 - a2), mul[i])
            delta = max(delta, abs(b0 - a0), abs(b1 - a1), abs(b2 - a2))
            fmax = max(fmax, abs(b0), abs(b1), abs(b2))
            fl[i] = [b0, b1, b2]
            f[3 * i:3 * i + 3] = b0, b1, b2
        if delta <= tol * max(1.0, fmax):
            converged = True
            break
    v = G @ f + c
    status = STATUS_CONVERGED if converged else STATUS_MAX_ITER
    return SolverResult(f, v, converged, status, sweeps, coulomb_residual(f, v, mu))


def _local(Wu, Wi, r0, r1, r2, mu, a0, a1):
    """Exact solution of one contact's Coulomb law for ``v = W f + r`` (Jean's local solver).

    ``Wu``/``Wi``: upper triangles of W and of its regularised inverse; ``(a0, a1)``: the
    previous tangential force, used as the initial guess of the sliding direction.
    """
    if r2 >= 0.0:  # f = 0 gives v = r with v_n ≥ 0: separating
        return 0.0, 0.0, 0.0
    i00, i01, i02, i11, i12, i22 = Wi
    # Sticking candidate: the force that zeroes v.
    s0 = -(i00 * r0 + i01 * r1 + i02 * r2)
    s1 = -(i01 * r0 + i11 * r1 + i12 * r2)
    s2 = -(i02 * r0 + i12 * r1 + i22 * r2)
    if s2 >= 0.0 and math.hypot(s0, s1) <= mu * s2:
        return s0, s1, s2
    w22 = Wu[5]
    if mu == 0.0:  # frictionless: v_n = 0 with f_t = 0
        return (0.0, 0.0, -r2 / w22) if w22 > 0.0 else (0.0, 0.0, 0.0)
    # Sliding: guess the direction from the previous force, else from the stick candidate
    # (exact when W is isotropic): f_t = −μ f_n e(θ).
    g0, g1 = (-a0, -a1) if (a0 or a1) else (-s0, -s1)
    sol = _slide(Wu, r0, r1, r2, mu, math.atan2(g1, g0))
    if sol is None:  # no sliding solution found (not expected for W SPD): nearest cone point
        return _project(s0, s1, s2, mu)
    return sol


def _slide(Wu, r0, r1, r2, mu, theta0):
    """Sliding solution: ``f = f_n (−μ cos θ, −μ sin θ, 1)``, ``v_n = 0``, ``v_t = σ e(θ)``.

    With ``u(θ) = (−μ cos θ, −μ sin θ, 1)`` and ``D(θ) = (W u)_n``, ``v_n = 0`` gives
    ``f_n = −r_n / D``, and ``v_t ∥ e(θ)`` is ``H(θ) = D · (v_t × e) = 0`` with

        H(θ) = −r_n [(W u)_t × e] + D (r_t × e)
             = h0 + h2c cos 2θ + h2s sin 2θ + h1c cos θ + h1s sin θ,

    a trigonometric polynomial of degree 2. A solution needs ``D > 0`` (so f_n > 0) and a
    slip speed ``σ = v_t · e ≥ 0``. Newton's method on H from ``theta0``; if it fails or lands
    on an invalid root, all roots come from the quartic ``z² H`` in ``z = e^{iθ}`` (companion
    eigenvalues), each polished by Newton, and the valid one nearest ``theta0`` is taken.
    Returns ``(f_t1, f_t2, f_n)`` or None.
    """
    w00, w01, w02, w11, w12, w22 = Wu
    acc = -r2 * mu * w01 + mu * w02 * r1
    ass = r2 * mu * w01 - mu * w12 * r0
    acs = -r2 * mu * (w11 - w00) - mu * w02 * r0 + mu * w12 * r1
    h1c = r2 * w12 - w22 * r1
    h1s = -r2 * w02 + w22 * r0
    h0, h2c, h2s = 0.5 * (acc + ass), 0.5 * (acc - ass), 0.5 * acs
    coef = (h0, h2c, h2s, h1c, h1s)
    scale = abs(h0) + abs(h2c) + abs(h2s) + abs(h1c) + abs(h1s)
    if scale == 0.0:
        return None

    th = _newton_theta(coef, theta0, scale)
    if th is not None:
        sol = _sliding_force(Wu, r0, r1, r2, mu, th)
        if sol is not None:
            return sol
    roots = np.roots([0.5 * (h2c - 1j * h2s), 0.5 * (h1c - 1j * h1s), h0,
                      0.5 * (h1c + 1j * h1s), 0.5 * (h2c + 1j * h2s)])
    best, best_gap = None, math.inf
    for z in roots.tolist():
        th = _newton_theta(coef, math.atan2(z.imag, z.real), scale)
        if th is None:
            continue
        sol = _sliding_force(Wu, r0, r1, r2, mu, th)
        gap = angle_gap(th, theta0)
        if sol is not None and gap < best_gap:
            best, best_gap = sol, gap
    return best


def _newton_theta(coef, th, scale):
    """Newton's method on H(θ); returns the root or None (no convergence / H' = 0)."""
    h0, h2c, h2s, h1c, h1s = coef
    for _ in range(NEWTON_MAX):
        c1, s1 = math.cos(th), math.sin(th)
        c2, s2 = c1 * c1 - s1 * s1, 2.0 * s1 * c1
        h = h0 + h2c * c2 + h2s * s2 + h1c * c1 + h1s * s1
        dh = 2.0 * (h2s * c2 - h2c * s2) + h1s * c1 - h1c * s1
        if dh == 0.0:
            return th if abs(h) <= 1e-15 * scale else None
        step = h / dh
        step = max(-0.5, min(0.5, step))  # a trust region: H has up to four roots per turn
        th -= step
        if abs(step) <= 1e-15 * (1.0 + abs(th)):
            return th
    c1, s1 = math.cos(th), math.sin(th)
    h = h0 + h2c * (c1 * c1 - s1 * s1) + h2s * 2.0 * s1 * c1 + h1c * c1 + h1s * s1
    return th if abs(h) <= 1e-12 * scale else None


def _sliding_force(Wu, r0, r1, r2, mu, th):
    """The force of sliding angle θ if it is a valid sliding solution (D > 0, σ ≥ 0)."""
    w00, w01, w02, w11, w12, w22 = Wu
    e0, e1 = math.cos(th), math.sin(th)
    u0, u1 = -mu * e0, -mu * e1
    d = w02 * u0 + w12 * u1 + w22
    if d <= 0.0:
        return None
    fn = -r2 / d
    vt0 = fn * (w00 * u0 + w01 * u1 + w02) + r0
    vt1 = fn * (w01 * u0 + w11 * u1 + w12) + r1
    # σ = v_t · e must be ≥ 0; allow rounding at the stick/slip boundary where σ → 0.
    if vt0 * e0 + vt1 * e1 < -1e-12 * (abs(r0) + abs(r1) + abs(r2)):
        return None
    return fn * u0, fn * u1, fn


def _project(f0, f1, fn, mu):
    """Scalar version of :func:`project_cone` for one contact."""
    rt = math.hypot(f0, f1)
    if rt <= mu * fn:
        return f0, f1, fn
    if mu * rt <= -fn:
        return 0.0, 0.0, 0.0
    n = (mu * rt + fn) / (1.0 + mu * mu)
    k = mu * n / rt
    return k * f0, k * f1, n


def project_cone(f, mu) -> np.ndarray:
    """Euclidean projection onto the Coulomb cone ``K_μ = {‖f_t‖ ≤ μ f_n}``, (t1, t2, n) order.

    Exact second-order-cone projection (e.g. Fukushima, Luo & Tseng 2002): with
    ``ρ = ‖f_t‖``,

        f              if ρ ≤ μ f_n                 (inside K_μ),
        0              if μ ρ ≤ −f_n                (inside the polar cone −K_{1/μ}),
        (μ n f_t/ρ, n) with n = (μ ρ + f_n)/(1 + μ²)   otherwise (nearest boundary ray).

    μ = 0 gives ``(0, 0, max(f_n, 0))``.

    Args:
        f: one force (3,), a stack (..., 3), or a flat stacked vector (3m,) of m contacts.
        mu: scalar or array broadcasting to the number of contacts, ≥ 0.

    Returns:
        The projection, same shape as ``f``.

    Raises:
        InputError: the length is not a multiple of 3, NaN/Inf, mu < 0 or of the wrong shape.
    """
    f = np.asarray(f, dtype=float)
    if f.ndim == 0 or f.shape[-1] % 3 or (f.ndim > 1 and f.shape[-1] != 3):
        raise InputError(BAD_VALUE.format(who="project_cone", name="f.shape", value=f.shape,
                                          expected="(3,), (..., 3) or (3m,)"))
    if not np.isfinite(f).all():
        raise InputError(NOT_FINITE.format(who="project_cone", name="f"))
    F = f.reshape(-1, 3) if f.ndim == 1 else f
    mu = np.asarray(mu, dtype=float)
    if not np.isfinite(mu).all() or (mu < 0).any():
        raise InputError(BAD_VALUE.format(who="project_cone", name="mu", value=mu,
                                          expected="finite and >= 0"))
    try:
        mu = np.broadcast_to(mu, F.shape[:-1])
    except ValueError:
        raise InputError(BAD_VALUE.format(who="project_cone", name="mu.shape", value=mu.shape,
                                          expected=f"broadcastable to {F.shape[:-1]}")) from None
    return _project_cone(F, mu).reshape(f.shape)


def _project_cone(F: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """:func:`project_cone` without input checks; F (..., 3), mu broadcast to F.shape[:-1]."""
    rt = np.hypot(F[..., 0], F[..., 1])
    fn = F[..., 2]
    n = (mu * rt + fn) / (1.0 + mu * mu)
    k = np.divide(mu * n, rt, out=np.zeros_like(rt), where=rt > 0.0)
    P = np.stack([k * F[..., 0], k * F[..., 1], n], axis=-1)
    inside = rt <= mu * fn
    P[inside] = F[inside]
    P[mu * rt <= -fn] = 0.0
    return P


def coulomb_residual(f, v, mu) -> float:
    """Natural-map residual of the 3-D Coulomb law, maxed over contacts.

    De Saxcé's modified velocity ``v̂_i = v_i + μ_i ‖v_t,i‖ e_n`` turns the law into a cone
    complementarity ``K_μ ∋ f_i ⊥ v̂_i ∈ K_μ*`` (``K_μ* = K_{1/μ}``), equivalent (Moreau) to
    the fixed point ``f_i = P_K(f_i − ρ v̂_i)`` for any ρ > 0 (Alart–Curnier form). With ρ = 1:

        residual = maxᵢ ‖ f_i − P_{K_μᵢ}( f_i − v_i − μᵢ ‖v_t,i‖ e_n ) ‖₂,

    zero iff every contact separates, sticks or slides as the law says. f and v are added
    with ρ = 1, so the number mixes force and velocity units: compare it with the scale of
    the problem.

    Args:
        f: (3m,) stacked contact forces, (t1, t2, n) per contact.
        v: (3m,) stacked contact velocities.
        mu: (m,) friction coefficients ≥ 0.

    Returns:
        The residual (0.0 for m = 0).

    Raises:
        InputError: lengths that do not match, NaN/Inf, mu < 0.
    """
    who = "coulomb_residual"
    f = np.asarray(f, dtype=float)
    if f.ndim != 1 or f.size % 3:
        raise InputError(BAD_VALUE.format(who=who, name="f.shape", value=f.shape,
                                          expected="(3m,)"))
    m = f.size // 3
    f = as_vector(f, 3 * m, who, "f", "3m")
    v = as_vector(v, 3 * m, who, "v", "f")
    mu = _check_mu(mu, m, who)
    if m == 0:
        return 0.0
    F = f.reshape(m, 3)
    V = v.reshape(m, 3)
    Vhat = V.copy()
    Vhat[:, 2] += mu * np.hypot(V[:, 0], V[:, 1])
    D = F - _project_cone(F - Vhat, mu)
    return float(np.sqrt((D * D).sum(axis=1)).max())


def _check_mu(mu, m: int, who: str) -> np.ndarray:
    mu = np.asarray(mu, dtype=float)
    if mu.shape != (m,):
        raise InputError(BAD_LENGTH.format(who=who, name="mu", n=m,
                                           other="one coefficient per contact", shape=mu.shape))
    if not np.isfinite(mu).all() or (mu < 0).any():
        raise InputError(BAD_VALUE.format(who=who, name="mu", value=mu.tolist(),
                                          expected="finite and >= 0 for every contact"))
    return mu
