"""Compiled dense solves of the whole-body controller: the numba twins of ``control.linalg``.

Each kernel ``<name>`` here has its numpy reference ``<name>_reference`` in ``control.linalg``
(the tests compare them); the docstrings there give the mathematics, those here what differs in the
implementation:

* ``certified_cholesky``: ``solvers.linalg_kernels.cholesky`` with a certified eigenvalue
  floor (the factorisation and ``cho_solve`` are the solvers layer's, shared with the contact
  models);
* ``psd_factor``: Φ* = G Gᵀ by pivoted Cholesky, greedy on the largest remaining diagonal and
  stopping below ``rcond · max diag`` (the same loop as the reference, so both choose the same
  pivots); ``whitening``: T = G (GᵀG)⁻¹;
* ``damped_factors``: the damped inverse from a thin SVD (``linalg.damped_factors_reference``),
  continuous in the matrix;
* ``prioritized``: the damped task-priority recursion of Sentis et al. eqs. 30–31 in whitened
  coordinates (``linalg.prioritized_reference``);
* ``constrained_space``: D, B, v̇₀, f₀ of a support (eqs. 20–26);
* ``internal_force_torques``, ``internal_force_law``: Γ_int of eq. 42 and the PI law around it;
* ``sole_centre_allocation``: ``ctc``'s internal-wrench allocation;
* ``closed_chain``: ``ctc``'s closed-chain accelerations (QR of J_b, the joint accelerations
  closest to the desired ones, the base's).
"""

from __future__ import annotations

import numpy as np

from biped_contact_sim.jit import F1, F2, F3, I1, F2s, b1, f8, i8, kernel, ro
from biped_contact_sim.solvers.linalg_kernels import cho_solve, cholesky, triangular_solve

#: relative floor below which a task direction leaves the null space only in part: a direction
#: a task reaches with s² below ``NULL_FLOOR`` times its scale is numerically one that the
#: levels above took (rounding leaves it ~1e-32), and stays free for the levels below
NULL_FLOOR = 1e-12


@kernel((F2, f8))
def certified_cholesky(X, c):  # pragma: no cover - compiled
    """(ok, C): X = C Cᵀ and every eigenvalue of X at least c, certified by
    λ_min ≥ 1/trace(X⁻¹) = 1/‖C⁻¹‖_F² (sufficient, not necessary: ok False sends the caller
    to the SVD)."""
    n = X.shape[0]
    ok, C = cholesky(X, 0.0, 0.0)
    if not ok:
        return False, C
    Ci = np.zeros((n, n))  # C⁻¹, lower
    trace = 0.0
    for j in range(n):
        Ci[j, j] = 1.0 / C[j, j]
        for i in range(j + 1, n):
            acc = 0.0
            for k in range(j, i):
                acc += C[i, k] * Ci[k, j]
            Ci[i, j] = -acc / C[i, i]
        for i in range(j, n):
            trace += Ci[i, j] * Ci[i, j]
    return trace * c <= 1.0, C


@kernel((F2, f8))
def psd_factor(X, rcond):  # pragma: no cover - compiled
    """G (n × r) with X = G Gᵀ (``linalg.psd_factor_reference``, the same pivots)."""
    n = X.shape[0]
    W = X.copy()
    for i in range(n):  # the reference reads the lower triangle only
        for j in range(i + 1, n):
            W[i, j] = W[j, i]
    scale = 0.0
    for i in range(n):
        scale = max(scale, W[i, i])
    G = np.zeros((n, n))
    if scale <= 0.0:
        return G[:, :0].copy()
    tol = rcond * scale
    done = np.zeros(n, np.bool_)
    r = 0
    for _ in range(n):
        p, best = -1, -np.inf
        for i in range(n):
            if not done[i] and W[i, i] > best:
                p, best = i, W[i, i]
        if not best > tol:
            break
        d = np.sqrt(best)
        done[p] = True
        for i in range(n):
            G[i, r] = 0.0 if done[i] else W[i, p] / d
        G[p, r] = d
        for i in range(n):
            if done[i]:
                continue
            gi = G[i, r]
            for j in range(n):
                if not done[j]:
                    W[i, j] -= gi * G[j, r]
        r += 1
    return G[:, :r].copy()


@kernel((F2,))
def whitening(G):  # pragma: no cover - compiled
    """T = G (GᵀG)⁻¹ for G of full column rank (``linalg.whitening_reference``)."""
    GtG = G.T @ G
    ok, C = cholesky(GtG, 0.0, 0.0)
    if not ok:
        return np.zeros_like(G)
    return np.ascontiguousarray(cho_solve(C, np.ascontiguousarray(G.T)).T)


@kernel((F2, f8, f8))
def damped_factors(Jt, c, c_null):  # pragma: no cover - compiled
    """(U, V, s a(s²), 1 − √(1 − w(s)), damped) of the damped inverse of J_t from its thin SVD
    (``linalg.damped_factors_reference``)."""
    U, sv, Vt = np.linalg.svd(Jt, full_matrices=False)
    k = sv.size
    a, b = np.empty(k), np.empty(k)
    damped = False
    for i in range(k):
        lam = sv[i] * sv[i]
        a[i] = sv[i] / max(lam, c)
        damped = damped or lam < c
        x = min(lam / c_null, 1.0)
        b[i] = x / (1.0 + np.sqrt(1.0 - x))
    return U, np.ascontiguousarray(Vt.T), a, b, damped


@kernel((F2, F1, F2, F1, b1, b1, f8, b1))
def damped_level(Jk, ek, Z, y, force, update, damping, exact):  # pragma: no cover - compiled
    """One level of ``prioritized`` on y and Z in place (``linalg.damped_level_reference``):
    (damped, exact), ``exact`` telling whether Z is still an orthogonal projector.

    Where the floor cannot matter the SVD is skipped: a level with m ≤ r rows whose J_t J_tᵀ
    is certified above the floor (``certified_cholesky``) takes the exact recursion
    y += Z J_tᵀ X⁻¹ e, Z −= Z J_tᵀ X⁻¹ J_t; the last level with more rows (the posture), Z a
    projector, the exact least squares (J_tᵀ J_t + σ (I − Z))⁻¹ J_tᵀ e, certified alike. The
    damped factors are then 1/s and 1: the same result as the SVD's to rounding."""
    m = Jk.shape[0]
    r = Z.shape[0]
    scale = 0.0
    for i in range(m):
        s = 0.0
        for j in range(Jk.shape[1]):
            s += Jk[i, j] * Jk[i, j]
        scale = max(scale, s)
    if scale <= 0.0:
        return False, exact
    c = damping * scale
    Jt = Jk @ Z
    JtT = np.ascontiguousarray(Jt.T)
    if m <= r:
        ok, C = certified_cholesky(Jt @ JtT, c)
        if ok:
            W = cho_solve(C, Jt)  # X⁻¹ J_t
            if force:
                y += Z @ (JtT @ ek)
            else:
                y += Z @ (np.ascontiguousarray(W.T) @ (ek - Jk @ y))
            if update:
                Z -= (Z @ JtT) @ W
            return False, exact
    elif exact and not update and not force:
        X = JtT @ Jt
        for i in range(r):
            for j in range(r):
                X[i, j] += scale * ((1.0 if i == j else 0.0) - Z[i, j])
        ok, C = certified_cholesky(X, c)
        if ok:
            x = JtT @ (ek - Jk @ y)
            y += Z @ cho_solve(C, x.reshape(r, 1).copy())[:, 0]
            return False, exact
    U, V, a, b, damped = damped_factors(Jt, c, NULL_FLOOR * scale)
    ZV = Z @ V
    if force:
        y += Z @ (JtT @ ek)
    else:
        y += ZV @ (a * (np.ascontiguousarray(U.T) @ (ek - Jk @ y)))
    if update:
        ZVb = ZV.copy()
        for i in range(b.size):
            ZVb[:, i] *= b[i]
            if 1e-12 < b[i] < 1.0 - 1e-12:
                exact = False  # a direction left in part: Z is no longer a projector
        Z -= ZVb @ np.ascontiguousarray(V.T)
    return damped, exact


@kernel((F2, F1, I1, F2, F1, f8, F2, F1))
def prioritized(J_up, e_up, sizes, J_last, e_last, damping, J_force,
                F_force):  # pragma: no cover - compiled
    """``linalg.prioritized_reference``: (y, number of damped levels); no force rows: J_force (0,
    r)."""
    r = J_last.shape[1]
    y = np.zeros(r)
    Z = np.eye(r)
    damped = 0
    start = 0
    exact = True
    for k in range(sizes.size):
        stop = start + sizes[k]
        d, exact = damped_level(np.ascontiguousarray(J_up[start:stop]),
                                np.ascontiguousarray(e_up[start:stop]), Z, y, False, True,
                                damping, exact)
        if d:
            damped += 1
        start = stop
    if J_force.shape[0] > 0:
        exact = damped_level(J_force, F_force, Z, y, True, True, damping, exact)[1]
    damped_level(J_last, e_last, Z, y, False, False, damping, exact)  # not counted
    return y, damped


@kernel((F2, F2, F2, F2, F1, F1, i8, F2, F1, I1, i8, F1, f8, F1, F2, F1, f8))
def task_torques(B, G, T, D, f0, a0, j0, J_up, e_up, sizes, i_am, w_am, e_am, e_post, J_force,
                 F_force, damping):  # pragma: no cover - compiled
    """``linalg.task_torques_reference`` (U = rows j0: of v, i_am < 0 without an angular-momentum
    row): (Γ, damped levels) of the prioritized tasks, Ĵ_k = J_k B T (Sentis et al. eqs. 27–31)."""
    BT = B @ T
    Jh = J_up @ BT
    e = e_up - J_up @ a0
    if i_am >= 0:
        Jh[i_am] = -((w_am @ D) @ T)
        e[i_am] = e_am - w_am @ f0
    y, damped = prioritized(Jh, e, sizes, G, e_post - a0[j0:], damping, J_force @ BT, -F_force)
    return T @ y, damped


@kernel((F2, F1, F2, F1, i8, f8))
def constrained_space(Minv, h, J_s, gamma_s, j0, rcond):  # pragma: no cover - compiled
    """D, B, v̇₀, f₀ of a support (``linalg.constrained_space_reference``, Sentis et al. eqs.
    20–26), the actuated coordinates being v[j0:]: (ok, D, B, a0, f0); ok False where Λ_s⁻¹ = J_s
    A⁻¹ J_sᵀ
    is not numerically positive definite (the reference then takes the pseudo-inverse and
    counts it)."""
    nv = Minv.shape[0]
    n = nv - j0
    m = J_s.shape[0]
    Mh = Minv @ h
    if m == 0:
        return True, np.zeros((0, n)), np.ascontiguousarray(Minv[:, j0:]), -Mh, np.zeros(0)
    MJt = Minv @ np.ascontiguousarray(J_s.T)
    ok, C = cholesky(J_s @ MJt, rcond, 0.0)
    if not ok:
        z = np.zeros((0, 0))
        return False, z, z, h, h
    JbarT = cho_solve(C, np.ascontiguousarray(MJt.T))  # J̄_sᵀ = Λ_s J_s A⁻¹ (eq. 21)
    Lg = cho_solve(C, gamma_s.reshape(m, 1).copy())[:, 0]
    D = np.ascontiguousarray(JbarT[:, j0:])
    B = Minv[:, j0:] - np.ascontiguousarray(JbarT.T) @ np.ascontiguousarray(MJt[j0:].T)
    a0 = np.ascontiguousarray(JbarT.T) @ (J_s @ Mh - gamma_s) - Mh
    f0 = JbarT @ h - Lg
    return True, D, B, a0, f0


@kernel((F2, F2, F2, F2, F1, F1, f8))
def internal_force_torques(W_int, D, G, T, f_int_cmd, f_task,
                           damping):  # pragma: no cover - compiled
    """Γ_int of Sentis et al. eq. 42 (``linalg.internal_force_torques_reference``): (Γ_int,
    damped)."""
    A = W_int @ D
    AL = A - (A @ G) @ np.ascontiguousarray(T.T)
    rhs = f_int_cmd - W_int @ f_task
    scale = 0.0
    for i in range(AL.shape[0]):
        scale = max(scale, np.dot(AL[i], AL[i]))
    if scale <= 0.0:
        return np.zeros(D.shape[1]), False
    ok, C = certified_cholesky(AL @ np.ascontiguousarray(AL.T), damping * scale)
    if ok:  # the exact pseudo-inverse L* Aᵀ (A L* Aᵀ)⁻¹, as the SVD's above the floor
        x = cho_solve(C, rhs.reshape(rhs.size, 1).copy())[:, 0]
        return -(x @ AL), False
    U, V, a, _, damped = damped_factors(AL, damping * scale, NULL_FLOOR * scale)
    return -(V @ (a * (np.ascontiguousarray(U.T) @ rhs))), damped


@kernel((F2, F2, F2, F2, F1, F1, b1, F1, f8, F1, f8, f8, f8, b1, b1, f8))
def internal_force_law(W_int, D, G, T, f_task, F_meas, has_meas, f_int_ref, tension,
                       integral, kp_int, ki_dt, int_limit, pi_on, torques_on,
                       damping):  # pragma: no cover - compiled
    """The end of ``InternalForces.command`` (its numpy form
    ``internal_forces.internal_force_law_reference``): the load-share tension
    ``f_int_ref[0] += tension · W_int[0, :3]·(f_task[0:3] + f_task[6:9])``, the measured
    internal forces ``W_int F_meas`` (when ``has_meas``), the PI law (``pi_on``; the integral
    updated in place, ``ki_dt`` = k_i dt, clamped to ±``int_limit``) and Γ_int
    (``internal_force_torques``, when ``torques_on``).

    Returns:
        (Γ_int, damped, f_int_ref, f_int_cmd, f_int_meas): Γ_int empty without
        ``torques_on``, f_int_meas empty without a measurement.
    """
    m = W_int.shape[0]
    ref = f_int_ref.copy()
    if tension != 0.0:
        s = 0.0
        for c in range(3):
            s += W_int[0, c] * (f_task[c] + f_task[6 + c])
        ref[0] += tension * s
    meas = np.zeros(m if has_meas else 0)
    if has_meas:
        for i in range(m):
            s = 0.0
            for c in range(W_int.shape[1]):
                s += W_int[i, c] * F_meas[c]
            meas[i] = s
    cmd = ref.copy()
    if has_meas and pi_on:
        for i in range(m):
            e = ref[i] - meas[i]
            x = integral[i] + ki_dt * e
            integral[i] = min(max(x, -int_limit), int_limit)
            cmd[i] += kp_int * e + integral[i]
    if not torques_on:
        return np.zeros(0), False, ref, cmd, meas
    d_tau, damped = internal_force_torques(W_int, D, G, T, cmd, f_task, damping)
    return d_tau, damped, ref, cmd, meas


__all__ = ["certified_cholesky", "closed_chain", "constrained_space", "damped_factors",
           "damped_level", "internal_force_law", "internal_force_torques", "prioritized",
           "psd_factor", "sole_centre_allocation", "task_torques", "whitening"]


@kernel((ro(F1), ro(F2s), ro(F2s), ro(F3), ro(F2), f8, ro(F1), ro(I1), ro(I1)))
def sole_centre_allocation(lam0, Jb, null_basis, rotations, centres, rho, shares, rows,
                           force_rows):  # pragma: no cover - compiled
    """Compiled ``control.linalg.sole_centre_allocation_reference`` (same arguments, ``rows`` and
    ``force_rows`` int arrays, ``shares`` of length 0 for none): (ok, c); ok False where the
    reference takes its least-squares form."""
    nk = rotations.shape[0]
    nr = rows.size
    n = nr * nk
    Winv = np.zeros((n, n))
    target = np.zeros(n)
    total = np.zeros(force_rows.size)
    for k in range(nk):
        for i in range(force_rows.size):
            total[i] += lam0[nr * k + force_rows[i]]
    for k in range(nk):
        Ti = np.eye(6)
        if rho > 0.0:
            d = rotations[k] @ centres[k]
            Ti[3, 1], Ti[3, 2] = -d[2], d[1]
            Ti[4, 0], Ti[4, 2] = d[2], -d[0]
            Ti[5, 0], Ti[5, 1] = -d[1], d[0]
            for i in range(3, 6):
                Ti[i, i] = rho
        scale = shares[k] if shares.size else 1.0
        for a in range(nr):
            for b in range(nr):
                Winv[nr * k + a, nr * k + b] = Ti[rows[a], rows[b]] * scale
        if shares.size:
            for i in range(force_rows.size):
                target[nr * k + force_rows[i]] = total[i]
    JbT = np.ascontiguousarray(Jb.T)
    B = JbT @ Winv
    BT = np.ascontiguousarray(B.T)
    ok, C = cholesky(B @ BT, 1e-14, 0.0)
    if not ok:
        return False, np.zeros(null_basis.shape[1])
    rhs = JbT @ lam0 - B @ target
    mu = target + BT @ cho_solve(C, rhs.reshape(rhs.size, 1))[:, 0].copy()
    return True, np.ascontiguousarray(null_basis.T) @ (Winv @ mu - lam0)


@kernel((ro(F2), ro(F1), ro(F1), ro(I1), i8, f8))
def closed_chain(Js, gamma, a_joints, vi, nb, rcond):  # pragma: no cover - compiled
    """Compiled ``control.linalg.closed_chain_reference`` (same arguments, ``vi`` an int array):
    (ok, v̇_b, q̈_a, Q, R), empty arrays where the reference returns None. The complete Q of J_b is
    numpy's QR of [J_b 0] (LAPACK ``dgeqrf``/``dorgqr``: the zero columns add identity
    reflectors); Cholesky and the triangular solves are ``solvers.linalg_kernels``'."""
    k, nv = Js.shape
    nj = vi.shape[0]
    m = k - nb
    none = np.zeros(0)
    Z = np.zeros((k, k))
    for r in range(k):
        for c in range(nb):
            Z[r, c] = Js[r, c]
    Q, Rf = np.linalg.qr(Z)
    R = np.zeros((nb, nb))
    dmin, dmax = np.inf, 0.0
    for r in range(nb):
        for c in range(r, nb):
            R[r, c] = Rf[r, c]
        d = abs(Rf[r, r])
        dmin = min(dmin, d)
        dmax = max(dmax, d)
    if not dmin > rcond * dmax:
        return False, none, none, np.zeros((0, 0)), np.zeros((0, 0))
    A = np.zeros((m, nj))  # Q_2ᵀ J_a
    for i in range(m):
        for j in range(nj):
            s = 0.0
            for r in range(k):
                s += Q[r, nb + i] * Js[r, vi[j]]
            A[i, j] = s
    X = np.empty((m, m))
    for i in range(m):
        for j in range(m):
            s = 0.0
            for c in range(nj):
                s += A[i, c] * A[j, c]
            X[i, j] = s
    ok, C = cholesky(X, rcond * rcond, 0.0)
    if not ok:
        return False, none, none, np.zeros((0, 0)), np.zeros((0, 0))
    rhs = np.empty((m, 1))
    for i in range(m):
        s = 0.0
        for r in range(k):
            s -= Q[r, nb + i] * gamma[r]
        for j in range(nj):
            s -= A[i, j] * a_joints[j]
        rhs[i, 0] = s
    y = cho_solve(C, rhs)
    a_vi = a_joints.copy()
    for j in range(nj):
        for i in range(m):
            a_vi[j] += A[i, j] * y[i, 0]
    e = np.empty(k)  # −γ − J_a q̈_a
    for r in range(k):
        s = -gamma[r]
        for j in range(nj):
            s -= Js[r, vi[j]] * a_vi[j]
        e[r] = s
    Qe = np.empty((nb, 1))  # R v̇_b = Q_1ᵀ e
    for i in range(nb):
        s = 0.0
        for r in range(k):
            s += Q[r, i] * e[r]
        Qe[i, 0] = s
    return True, triangular_solve(R, Qe, False, False).reshape(nb), a_vi, Q, R
