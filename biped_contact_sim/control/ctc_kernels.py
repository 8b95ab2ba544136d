"""The compiled control step of ``ctc``: one call from pinocchio's arrays to the torques.

``ctc_step`` runs steps 1, 3 and 4 of ``control.ctc`` (Bravo & Rengifo eqs. 28–38, generalised
to a free-floating base and double support) on what ``computeAllTerms`` leaves in pinocchio's
Data — the joint-space inertia M (upper triangle), h, the joint Jacobians J and J̇ (world
frame) and the frame placements, read as views:

1. the stance rows J_s, J̇_s v of every stance sole (``wbc_kernels.frame_rows`` at the sole
   origin, the constrained rows ``rows`` of each; plus k_s J_s v, Baumgarte);
3. single support: the LU solve of J_b v̇_b = −J_a q̈_aᵈ − J̇_s v; a closed chain: the joint
   accelerations closest to q̈_aᵈ (``linalg_kernels.closed_chain``);
4. M v̇ + h (pinocchio's RNEA in the numpy path: the same), λ from the base rows J_bᵀ λ =
   (M v̇ + h)_b (LU, or R⁻ᵀ through the chain's QR) plus the internal wrenches of the
   sole-centre allocation (``linalg_kernels.sole_centre_allocation``), τ = (M v̇ + h)_a − J_aᵀ λ.

The load shares of two stance soles (``ctc.reference_load_shares``), the clamp of τ to the
effort limits and the count of clamped joints are the call's too.

Anything else — flight, a J_b or chain that is not of full rank, an allocation that refuses —
returns code 1 and ``ctc`` takes its numpy path for the step.
"""

from __future__ import annotations

import numpy as np

from biped_contact_sim.control.linalg_kernels import closed_chain, sole_centre_allocation
from biped_contact_sim.control.wbc_kernels import frame_rows, load_shares, placement
from biped_contact_sim.jit import B2, F1, F2, I1, F2f, F2s, b1, f8, i8, kernel, ro
from biped_contact_sim.solvers.linalg_kernels import triangular_solve


@kernel((F2f, F1, F2f, F2f, ro(F2s), B2, I1, F1, I1, I1, F1, i8, f8, f8, f8, F2, I1, i8, F1,
         F1, F1, b1))
def ctc_step(M, h, J, dJ, oMf, mask, fids, v, slots, rows, a_des, nb, rcond, kd_stance, rho,
             centres, force_rows, share_mode, share_in, share_consts, limit,
             clamp):  # pragma: no cover - compiled
    """One control step of ``ctc`` (module docstring) for the stance soles ``slots`` (frame
    slots of ``fids``, columns ``mask``), the actuated coordinates v[nb:]: (code, out),
    ``out`` = [v̇ (nv), τ (clamped to ±``limit`` when ``clamp``), λ (stacked constrained rows),
    ‖q̈_a − q̈_aᵈ‖, the number of joints at their limit, α (2 or none)]; code 1 where the
    numpy path must take the step (``out`` empty).

    Two stance soles and ``share_mode`` ≠ 0: their load shares α (``ctc.reference_load_shares``
    by ``wbc_kernels.load_shares``, the reference's figures in ``share_in``, layout
    ``wbc_kernels.S_*``; g in ``share_consts[C_G]``) weigh the sole-centre allocation, which
    runs in a closed chain when ρ = ``rho`` > 0 or α is defined (sole centres ``centres`` per
    slot)."""
    nv = J.shape[1]
    nj = nv - nb
    n_s, nr = slots.size, rows.size
    k_rows = nr * n_s
    a = np.zeros(nv)
    a[nb:] = a_des
    fail = (1, np.zeros(0))
    if n_s == 0:
        return fail
    Js, gamma = np.empty((k_rows, nv)), np.empty(k_rows)
    J6, g6, vel = np.empty((6, nv)), np.empty(6), np.empty(6)
    rotations, origins = np.empty((n_s, 3, 3)), np.empty((n_s, 3))
    for k in range(n_s):
        R, o = placement(oMf, fids[slots[k]])
        rotations[k] = R
        origins[k] = o
        frame_rows(J, dJ, mask[slots[k]], v, o, J6, g6, vel)
        for i in range(nr):
            Js[nr * k + i] = J6[rows[i]]
            gamma[nr * k + i] = g6[rows[i]]
    alpha = np.zeros(0)
    if n_s == 2:
        alpha = load_shares(centres, slots, rotations, origins, share_in, share_consts,
                            share_mode)
    if kd_stance != 0.0:
        gamma += kd_stance * (Js @ v)
    Jb = np.ascontiguousarray(Js[:, :nb])
    Ja = np.ascontiguousarray(Js[:, nb:])
    residual = 0.0
    vi = np.arange(nb, nv)
    chain = k_rows > nb
    if not chain:
        if k_rows != nb:
            return fail
        a[:nb] = np.linalg.solve(Jb, -(Ja @ a_des) - gamma)
        Q, R = np.zeros((0, 0)), np.zeros((0, 0))
    else:
        ok, a_b, a_vi, Q, R = closed_chain(Js, gamma, a_des, vi, nb, rcond)
        if not ok:
            return fail
        a[nb:] = a_vi
        a[:nb] = a_b
        d = a_vi - a_des
        residual = np.sqrt(np.dot(d, d))
    Mv = h.copy()  # M v̇ + h, M from its upper triangle
    for i in range(nv):
        s = 0.0
        for j in range(nv):
            s += (M[i, j] if i <= j else M[j, i]) * a[j]
        Mv[i] += s
    tau_b = Mv[:nb].copy()
    if not chain:
        lam = np.linalg.solve(np.ascontiguousarray(Jb.T), tau_b)
    else:  # λ₀ = Q_1 R⁻ᵀ (M v̇ + h)_b, then the internal wrenches along Q_2
        z = triangular_solve(R, tau_b.reshape(nb, 1), True, True).reshape(nb)
        lam = np.ascontiguousarray(Q[:, :nb]) @ z
        if rho != 0.0 or alpha.size:
            null = np.ascontiguousarray(Q[:, nb:])
            cents = np.empty((n_s, 3))
            for k in range(n_s):
                cents[k] = centres[slots[k]]
            ok, c = sole_centre_allocation(lam, Jb, null, rotations, cents, rho, alpha, rows,
                                           force_rows)
            if not ok:
                return fail
            lam = lam + null @ c
    tau = Mv[nb:] - np.ascontiguousarray(Ja.T) @ lam
    if nj != tau.size:
        return fail
    out = np.empty(nv + nj + k_rows + 2 + alpha.size)
    out[:nv] = a
    saturated = 0
    for j in range(nj):
        x = min(max(tau[j], -limit[j]), limit[j])
        if x != tau[j]:
            saturated += 1
        out[nv + j] = x if clamp else tau[j]
    i = nv + nj
    out[i:i + k_rows] = lam
    out[i + k_rows] = residual
    out[i + k_rows + 1] = saturated
    out[i + k_rows + 2:] = alpha
    return 0, out


__all__ = ["ctc_step"]
