"""Compiled loops of the integrators (numba kernels with declared signatures,
``biped_contact_sim.jit``); the mathematics is in ``sim.integrator``'s docstring.
"""

from __future__ import annotations

import math

import numpy as np

from biped_contact_sim.jit import F1, F2, I1, F2s, f8, i8, kernel
from biped_contact_sim.robot.model_kernels import solve_udut_into, unpack


@kernel((F2, F1, F1, F1), error_model="numpy")
def mul_udut(U, D, x, out):
    """``out = M x`` with ``M = U D Uᵀ`` (U unit upper triangular)."""
    n = x.shape[0]
    y = np.empty(n)
    for j in range(n):  # y = Uᵀ x (column j of U has rows ≤ j)
        s = x[j]
        for i in range(j):
            s += U[i, j] * x[i]
        y[j] = s * D[j]
    for i in range(n):  # out = U y
        s = y[i]
        for j in range(i + 1, n):
            s += U[i, j] * y[j]
        out[i] = s


@kernel((f8, f8, f8, f8), error_model="numpy")
def quaternion_matrix(x, y, z, w):
    """The rotation of the unit quaternion (x, y, z, w) (pinocchio's order in q)."""
    R = np.empty((3, 3))
    R[0, 0] = 1.0 - 2.0 * (y * y + z * z)
    R[0, 1] = 2.0 * (x * y - z * w)
    R[0, 2] = 2.0 * (x * z + y * w)
    R[1, 0] = 2.0 * (x * y + z * w)
    R[1, 1] = 1.0 - 2.0 * (x * x + z * z)
    R[1, 2] = 2.0 * (y * z - x * w)
    R[2, 0] = 2.0 * (x * z - y * w)
    R[2, 1] = 2.0 * (y * z + x * w)
    R[2, 2] = 1.0 - 2.0 * (x * x + y * y)
    return R


@kernel((f8, f8, f8), error_model="numpy")
def exp3(a, b, c):
    """``exp([θ]×)`` of θ = (a, b, c) (Rodrigues; the series below 1e-4 rad)."""
    t2 = a * a + b * b + c * c
    if t2 < 1e-8:
        s = 1.0 - t2 / 6.0  # sin θ / θ
        k = 0.5 - t2 / 24.0  # (1 − cos θ) / θ²
    else:
        t = math.sqrt(t2)
        s = math.sin(t) / t
        k = (1.0 - math.cos(t)) / t2
    R = np.empty((3, 3))
    R[0, 0] = 1.0 - k * (b * b + c * c)
    R[1, 1] = 1.0 - k * (a * a + c * c)
    R[2, 2] = 1.0 - k * (a * a + b * b)
    R[0, 1] = k * a * b - s * c
    R[1, 0] = k * a * b + s * c
    R[0, 2] = k * a * c + s * b
    R[2, 0] = k * a * c - s * b
    R[1, 2] = k * b * c - s * a
    R[2, 1] = k * b * c + s * a
    return R


@kernel((F1, i8, i8, i8, F1, I1, F2, F1), error_model="numpy")
def momentum_terms(W, m, nv, nj, v, ff, com, out):
    """Step 1 of the module docstring on the per-step buffer W (``robot.model_kernels.unpack``):
    ``τ_free += ĉ``, ``a_free += M⁻¹ĉ``, ``γ_c −= J_c M⁻¹ĉ``; ``out`` = [M⁻¹ĉ | d_k ...].

    Args:
        W, m, nv, nj: the step's buffer and its sizes.
        v: (nv,) the velocity at the start of the step.
        ff, com: the velocity index and the centre of mass of each free body (``free_bodies``).
        out: (``momentum_size``,) output.
    """
    Jc, gc, X, U, D, tf, af, tc = unpack(W, m, nv, nj)
    Mv = np.empty(nv)
    mul_udut(U, D, v, Mv)
    c = np.zeros(nv)
    for k in range(ff.shape[0]):
        o = ff[k]
        v0, v1, v2, w0, w1, w2 = v[o], v[o + 1], v[o + 2], v[o + 3], v[o + 4], v[o + 5]
        l0, l1, l2, a0, a1, a2 = Mv[o], Mv[o + 1], Mv[o + 2], Mv[o + 3], Mv[o + 4], Mv[o + 5]
        c0, c1, c2 = com[k, 0], com[k, 1], com[k, 2]
        h0 = a0 - (c1 * l2 - c2 * l1)  # h_c = h_a − c × h_l
        h1 = a1 - (c2 * l0 - c0 * l2)
        h2 = a2 - (c0 * l1 - c1 * l0)
        g0 = 0.5 * (w1 * h2 - w2 * h1)  # d = ½ ω × h_c: the half of the gyroscopic term kept
        g1 = 0.5 * (w2 * h0 - w0 * h2)
        g2 = 0.5 * (w0 * h1 - w1 * h0)
        c[o] = w1 * l2 - w2 * l1  # ĉ = (ω × h_l, ω × h_a + v × h_l − d)
        c[o + 1] = w2 * l0 - w0 * l2
        c[o + 2] = w0 * l1 - w1 * l0
        c[o + 3] = w1 * a2 - w2 * a1 + v1 * l2 - v2 * l1 - g0
        c[o + 4] = w2 * a0 - w0 * a2 + v2 * l0 - v0 * l2 - g1
        c[o + 5] = w0 * a1 - w1 * a0 + v0 * l1 - v1 * l0 - g2
        d = nv + 6 * k
        out[d], out[d + 1], out[d + 2] = 0.0, 0.0, 0.0
        out[d + 3], out[d + 4], out[d + 5] = g0, g1, g2
    a = out[:nv]
    solve_udut_into(U, D, c, a)
    for r in range(nv):
        tf[r] += c[r]
        af[r] += a[r]
    for r in range(3 * m):
        s = 0.0
        for j in range(nv):
            s += Jc[r, j] * a[j]
        gc[r] -= s


@kernel((F1, i8, i8, i8, F1, F1, F1, F1, f8, I1, I1, F2, F1, F1), error_model="numpy")
def transport(W, m, nv, nj, q, q_new, v_s, a, dt, ff, ffq, com, mt, v_new):
    """Steps 2 and 3 of the module docstring, after ``q_new = integrate(q, dt ν_s)``: the free
    bodies' positions in ``q_new`` set to ``p + R Δp`` (in place), ``v_new`` = ν⁺, and ``a``
    (v̇ of the step, ``(ν_s − ν)/dt`` on entry) made pinocchio's ``M⁻¹(Sᵀτ − h + J_cᵀ f)`` by
    subtracting ``M⁻¹ĉ`` (``mt``, from ``momentum_terms``, which also holds the d_k).
    """
    Jc, gc, X, U, D, tf, af, tc = unpack(W, m, nv, nj)
    for r in range(nv):
        v_new[r] = v_s[r]
        a[r] -= mt[r]
    Ms = np.empty(nv)
    mul_udut(U, D, v_s, Ms)
    lam = np.zeros(nv)
    dp = np.empty(3)
    for k in range(ff.shape[0]):
        o, p = ff[k], ffq[k]
        R = quaternion_matrix(q[p + 3], q[p + 4], q[p + 5], q[p + 6])
        w0, w1, w2 = v_s[o + 3], v_s[o + 4], v_s[o + 5]
        dR = exp3(dt * w0, dt * w1, dt * w2)
        c0, c1, c2 = com[k, 0], com[k, 1], com[k, 2]
        # Δp = dt (v_s + ω_s × c) + (I − ΔR) c: the centre straight, the body turning about it
        dp[0] = dt * (v_s[o] + w1 * c2 - w2 * c1) + c0 - (dR[0, 0] * c0 + dR[0, 1] * c1
                                                            + dR[0, 2] * c2)
        dp[1] = dt * (v_s[o + 1] + w2 * c0 - w0 * c2) + c1 - (dR[1, 0] * c0 + dR[1, 1] * c1
                                                                + dR[1, 2] * c2)
        dp[2] = dt * (v_s[o + 2] + w0 * c1 - w1 * c0) + c2 - (dR[2, 0] * c0 + dR[2, 1] * c1
                                                                + dR[2, 2] * c2)
        for r in range(3):
            q_new[p + r] = q[p + r] + R[r, 0] * dp[0] + R[r, 1] * dp[1] + R[r, 2] * dp[2]
        d = nv + 6 * k
        hl = np.empty(3)
        ha = np.empty(3)
        for r in range(3):  # h' = I ν_s + dt d
            hl[r] = Ms[o + r] + dt * mt[d + r]
            ha[r] = Ms[o + 3 + r] + dt * mt[d + 3 + r]
        ha[0] -= dp[1] * hl[2] - dp[2] * hl[1]  # h_a − Δp × h_l
        ha[1] -= dp[2] * hl[0] - dp[0] * hl[2]
        ha[2] -= dp[0] * hl[1] - dp[1] * hl[0]
        for r in range(3):  # λ_k = ΔRᵀ h − I ν_s
            lam[o + r] = dR[0, r] * hl[0] + dR[1, r] * hl[1] + dR[2, r] * hl[2] - Ms[o + r]
            lam[o + 3 + r] = dR[0, r] * ha[0] + dR[1, r] * ha[1] + dR[2, r] * ha[2] \
                - Ms[o + 3 + r]
    dv = np.empty(nv)
    solve_udut_into(U, D, lam, dv)
    for r in range(nv):
        v_new[r] += dv[r]


@kernel((F1, i8, i8, i8, F2s, F2s, f8, F1), error_model="numpy")
def contact_energy(W, m, nv, nj, f, vc_next, dt, out):
    """The kinetic energy the contact impulse ``P = dt f`` gives the bodies over the step, at
    the step's configuration, and its part that pushes points off their surfaces:

        ΔT_c = ½ν_sᵀMν_s − ½ν_fᵀMν_f = Pᵀ v_c⁺ − ½ PᵀGP,      W_sep = Σᵢ P_n,i max(v_n,i⁺, 0),

    with ``ν_s = ν_f + M⁻¹J_cᵀP`` the step velocity, ``v_c⁺ = J_c ν_s`` (``vc_next``) and
    ``PᵀGP = ‖X P‖²`` (``G = XᵀX``, the buffer's factor). Friction never adds energy
    (``P_t·v_t⁺ ≤ 0``, maximum dissipation) and ``−½PᵀGP ≤ 0``, so ``ΔT_c ≤ W_sep``: W_sep is the
    restitution of the contact law (Newton's e, a penalty spring's rebound, penalty_fl's k_p)
    and the constraint models' penetration recovery. ``out`` = [ΔT_c, W_sep].
    """
    Jc, gc, X, U, D, tf, af, tc = unpack(W, m, nv, nj)
    work = 0.0
    sep = 0.0
    for i in range(m):
        for c in range(3):
            work += dt * f[i, c] * vc_next[i, c]
        if f[i, 2] > 0.0 and vc_next[i, 2] > 0.0:
            sep += dt * f[i, 2] * vc_next[i, 2]
    gpp = 0.0
    for r in range(nv):
        s = 0.0
        for i in range(m):
            for c in range(3):
                s += X[r, 3 * i + c] * f[i, c]
        gpp += s * s
    out[0] = work - 0.5 * dt * dt * gpp
    out[1] = sep
