"""Compiled loops of the control layer's per-step geometry and of ``ctc`` (numba kernels with
declared signatures, ``biped_contact_sim.jit``).

Each kernel fills a preallocated output from pinocchio's frame quantities; written in numpy
each is 10–30 calls on 3-vectors whose interpreter overhead, not arithmetic, made most of a
control step. The tests compare every kernel with its numpy/pinocchio reference.

* ``point_rows``: rigid transport of a frame's 6-D Jacobian and drift (LOCAL_WORLD_ALIGNED,
  classical acceleration at v̇ = 0) to a point at world offset r from its origin,
      J_P = [J_lin − [r]× J_ang; J_ang],   γ_P = [a + α × r + ω × (ω × r); α],   ω = J_ang v;
* ``surface_resultant``: W_com of n_s surface contacts about the CoM (Sentis et al. eq. 16),
  blocks [[I, 0], [[P_i − P_com]×, I]];
* ``linkage``: the rows of W_int named by specs (``control.grasp``): tensions
  (f_i − f_j)·e_ij (eq. 10) and moment components R_i[:, a]ᵀ m_i (eqs. 8, 11);
* ``wrenches_at``: measured sole wrenches (sole frame, about the sole origin) to world
  wrenches about the anchors P_k, f = R f_s, m_P = R τ_s − (P − o) × f;
* ``hermite``: joint references between two grid points, cubic Hermite in q from (q, v),
  linear in v̇; ``walk_state``: those and the CoM's constant-jerk cubic in one call
  (``walking.WalkBehavior.reference``);
* ``sole_centre_allocation``: ``ctc``'s internal-wrench allocation (its numpy reference
  ``control.linalg.sole_centre_allocation``);
* ``closed_chain``: ``ctc``'s closed-chain accelerations (QR of J_b, the joint accelerations
  closest to the desired ones, the base's), against ``control.linalg.closed_chain``.

The dense solves of ``wbc`` are in ``control.linalg_kernels``, its compiled step in
``control.wbc_kernels``.
"""

from __future__ import annotations

import numpy as np

from biped_contact_sim.control.linalg_kernels import cho_solve, cholesky
from biped_contact_sim.jit import F1, F2, F3, I1, F1s, F2s, F3s, I1s, I2s, f8, i8, kernel, ro


@kernel((ro(F2s), ro(F1s), ro(F1s), ro(F1s), F2s, F1s))
def point_rows(J, acc, v, r, J_out, drift_out):  # pragma: no cover - compiled
    """J_out (6, nv), drift_out (6,) of the point at offset r (module docstring); the frame's
    angular velocity ω = J_ang v."""
    nv = J.shape[1]
    r0, r1, r2 = r[0], r[1], r[2]
    w0 = w1 = w2 = 0.0
    for j in range(nv):
        j3, j4, j5 = J[3, j], J[4, j], J[5, j]
        J_out[0, j] = J[0, j] - (r1 * j5 - r2 * j4)
        J_out[1, j] = J[1, j] - (r2 * j3 - r0 * j5)
        J_out[2, j] = J[2, j] - (r0 * j4 - r1 * j3)
        J_out[3, j] = j3
        J_out[4, j] = j4
        J_out[5, j] = j5
        w0 += j3 * v[j]
        w1 += j4 * v[j]
        w2 += j5 * v[j]
    a0, a1, a2 = acc[3], acc[4], acc[5]
    # ω × r, then α × r + ω × (ω × r)
    c0, c1, c2 = w1 * r2 - w2 * r1, w2 * r0 - w0 * r2, w0 * r1 - w1 * r0
    drift_out[0] = acc[0] + (a1 * r2 - a2 * r1) + (w1 * c2 - w2 * c1)
    drift_out[1] = acc[1] + (a2 * r0 - a0 * r2) + (w2 * c0 - w0 * c2)
    drift_out[2] = acc[2] + (a0 * r1 - a1 * r0) + (w0 * c1 - w1 * c0)
    drift_out[3] = a0
    drift_out[4] = a1
    drift_out[5] = a2


@kernel((ro(F2s), ro(F1s), F2s))
def surface_resultant(positions, com, W):  # pragma: no cover - compiled
    """W (6, 6 n_s) ← W_com of surface contacts at ``positions`` (n_s, 3) about ``com``."""
    W[:] = 0.0
    for i in range(positions.shape[0]):
        c = 6 * i
        r0 = positions[i, 0] - com[0]
        r1 = positions[i, 1] - com[1]
        r2 = positions[i, 2] - com[2]
        for a in range(3):
            W[a, c + a] = 1.0
            W[3 + a, c + 3 + a] = 1.0
        W[3, c + 1], W[3, c + 2] = -r2, r1
        W[4, c + 0], W[4, c + 2] = r2, -r0
        W[5, c + 0], W[5, c + 1] = -r1, r0


@kernel((ro(I2s), ro(F2s), ro(F3s), ro(I1s), F2s))
def linkage(spec, positions, rotations, offsets, W):  # pragma: no cover - compiled
    """W (m, N) ← W_int of the row specs (m, 3) = (kind, i, j), kind 0 tension, 1 moment, 2
    normal force (``control.grasp``).

    Returns False (W partly filled) if a tension joins two anchors closer than 1e-9 m.
    """
    W[:] = 0.0
    for row in range(spec.shape[0]):
        kind, i, j = spec[row, 0], spec[row, 1], spec[row, 2]
        if kind == 0:
            e0 = positions[j, 0] - positions[i, 0]
            e1 = positions[j, 1] - positions[i, 1]
            e2 = positions[j, 2] - positions[i, 2]
            length = np.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
            if length < 1e-9:
                return False
            oi, oj = offsets[i], offsets[j]
            W[row, oi], W[row, oi + 1], W[row, oi + 2] = e0 / length, e1 / length, e2 / length
            W[row, oj], W[row, oj + 1], W[row, oj + 2] = (-e0 / length, -e1 / length,
                                                          -e2 / length)
        else:  # moment (kind 1) or normal force (kind 2): a column of R_i on m_i or f_i
            o = offsets[i] + (3 if kind == 1 else 0)
            W[row, o] = rotations[i, 0, j]
            W[row, o + 1] = rotations[i, 1, j]
            W[row, o + 2] = rotations[i, 2, j]
    return True


@kernel((ro(F2s), ro(F3s), ro(F2s), ro(F2s), F1s))
def wrenches_at(wrench_sole, rotations, origins, points, out):  # pragma: no cover - compiled
    """out (6 n,) ← world wrenches [f; m_P] about ``points`` of sole wrenches (n, 6)."""
    for k in range(wrench_sole.shape[0]):
        R = rotations[k]
        w = wrench_sole[k]
        f0 = R[0, 0] * w[0] + R[0, 1] * w[1] + R[0, 2] * w[2]
        f1 = R[1, 0] * w[0] + R[1, 1] * w[1] + R[1, 2] * w[2]
        f2 = R[2, 0] * w[0] + R[2, 1] * w[1] + R[2, 2] * w[2]
        d0 = points[k, 0] - origins[k, 0]
        d1 = points[k, 1] - origins[k, 1]
        d2 = points[k, 2] - origins[k, 2]
        o = 6 * k
        out[o], out[o + 1], out[o + 2] = f0, f1, f2
        for a in range(3):
            out[o + 3 + a] = R[a, 0] * w[3] + R[a, 1] * w[4] + R[a, 2] * w[5]
        out[o + 3] -= d1 * f2 - d2 * f1
        out[o + 4] -= d2 * f0 - d0 * f2
        out[o + 5] -= d0 * f1 - d1 * f0


@kernel((ro(F2s), ro(F2s), ro(F2s), i8, f8, f8, F1s, F1s, F1s))
def hermite(q, v, a, k, tau, dt, q_out, v_out, a_out):  # pragma: no cover - compiled
    """q_out, v_out, a_out at the fraction tau ∈ [0, 1] between grid rows k and k + 1:
    h00 q_k + h10 dt v_k + h01 q_k+1 + h11 dt v_k+1 and its derivative, (1 − tau) a_k +
    tau a_k+1."""
    t2 = tau * tau
    t3 = t2 * tau
    h00, h10 = 2.0 * t3 - 3.0 * t2 + 1.0, (t3 - 2.0 * t2 + tau) * dt
    h01, h11 = -2.0 * t3 + 3.0 * t2, (t3 - t2) * dt
    d00, d10 = (6.0 * t2 - 6.0 * tau) / dt, 3.0 * t2 - 4.0 * tau + 1.0
    d11 = 3.0 * t2 - 2.0 * tau
    for i in range(q.shape[1]):
        q0, q1, v0, v1 = q[k, i], q[k + 1, i], v[k, i], v[k + 1, i]
        q_out[i] = h00 * q0 + h10 * v0 + h01 * q1 + h11 * v1
        v_out[i] = d00 * (q0 - q1) + d10 * v0 + d11 * v1
        a_out[i] = (1.0 - tau) * a[k, i] + tau * a[k + 1, i]


@kernel((ro(F2s), ro(F2s), ro(F2s), i8, f8, f8, ro(F2s), ro(F2s), ro(F2s), ro(F2s), i8, f8,
         F1))
def walk_state(q, v, a, k, tau, dt, c, dc, ddc, jerk, kc, tau_c,
               out):  # pragma: no cover - compiled
    """``out`` = [q, v, v̇ (``hermite`` between rows k and k + 1 at the fraction tau); the
    CoM's constant-jerk cubic from row kc at tau_c seconds: c + ċ τ + c̈ τ²/2 + j τ³/6, its
    velocity ċ + c̈ τ + j τ²/2 and acceleration c̈ + j τ] (``walking.WalkBehavior.reference``,
    whose numpy form ``com_state`` is the same expressions)."""
    n = q.shape[1]
    hermite(q, v, a, k, tau, dt, out[:n], out[n:2 * n], out[2 * n:3 * n])
    t2 = tau_c * tau_c / 2
    t3 = t2 * tau_c / 3
    i = 3 * n
    for d in range(3):
        x0, x1, x2, x3 = c[kc, d], dc[kc, d], ddc[kc, d], jerk[kc, d]
        out[i + d] = x0 + x1 * tau_c + x2 * t2 + x3 * t3
        out[i + 3 + d] = x1 + x2 * tau_c + x3 * t2
        out[i + 6 + d] = x2 + x3 * tau_c


@kernel((ro(F1), ro(F2s), ro(F2s), ro(F3), ro(F2), f8, ro(F1), ro(I1), ro(I1)))
def sole_centre_allocation(lam0, Jb, null_basis, rotations, centres, rho, shares, rows,
                           force_rows):  # pragma: no cover - compiled
    """Compiled ``control.linalg.sole_centre_allocation`` (same arguments, ``rows`` and
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
    """Compiled ``control.linalg.closed_chain`` (same arguments, ``vi`` an int array): (ok,
    v̇_b, q̈_a, Q, R), empty arrays where the reference returns None. The complete Q of J_b is
    numpy's QR of [J_b 0] (LAPACK ``dgeqrf``/``dorgqr``: the zero columns add identity
    reflectors); Cholesky and the triangular solves are ``_cholesky``/``_cho_solve`` and
    back substitution."""
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
    a_b = np.empty(nb)
    for i in range(nb - 1, -1, -1):  # R v̇_b = Q_1ᵀ e
        s = 0.0
        for r in range(k):
            s += Q[r, i] * e[r]
        for c in range(i + 1, nb):
            s -= R[i, c] * a_b[c]
        a_b[i] = s / R[i, i]
    return True, a_b, a_vi, Q, R


__all__ = ["closed_chain", "hermite", "linkage", "point_rows", "sole_centre_allocation",
           "surface_resultant", "walk_state", "wrenches_at"]
