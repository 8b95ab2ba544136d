"""The compiled control step of ``ctc``: one call from pinocchio's arrays to the torques.

``ctc_step`` runs steps 1, 3 and 4 of ``control.ctc`` (Bravo & Rengifo eqs. 28–38, generalised
to a free-floating base and double support) on what ``computeAllTerms`` leaves in pinocchio's
Data — the joint-space inertia M (upper triangle), h, the joint Jacobians J and J̇ (world
frame) and the frame placements, read as views:

1. the stance rows J_s, J̇_s v of every stance sole (``wbc_kernels.frame_rows`` at the sole
   origin, the constrained rows ``rows`` of each; plus k_s J_s v, Baumgarte);
3. single support: the LU solve of J_b v̇_b = −J_a q̈_aᵈ − J̇_s v; a closed chain: the joint
   accelerations closest to q̈_aᵈ (``kernels.closed_chain``);
4. M v̇ + h (pinocchio's RNEA in the numpy path: the same), λ from the base rows J_bᵀ λ =
   (M v̇ + h)_b (LU, or R⁻ᵀ through the chain's QR) plus the internal wrenches of the
   sole-centre allocation (``kernels.sole_centre_allocation``), τ = (M v̇ + h)_a − J_aᵀ λ.

Anything else — flight, a J_b or chain that is not of full rank, an allocation that refuses —
returns code 1 and ``ctc`` takes its numpy path for the step.
"""

from __future__ import annotations

import numpy as np

from biped_contact_sim.control.kernels import closed_chain, sole_centre_allocation
from biped_contact_sim.control.wbc_kernels import frame_rows, placement
from biped_contact_sim.jit import B2, F1, F2, I1, F2f, F2s, b1, f8, i8, kernel, ro


@kernel((F2f, F1, F2f, F2f, ro(F2s), B2, I1, F1, I1, I1, F1, i8, f8, f8, b1, f8, F2, F1, I1))
def ctc_step(M, h, J, dJ, oMf, mask, fids, v, slots, rows, a_des, nb, rcond, kd_stance,
             allocate, rho, centres, shares, force_rows):  # pragma: no cover - compiled
    """(code, v̇, τ, λ (stacked constrained rows), ‖q̈_a − q̈_aᵈ‖) of the module docstring for
    the stance soles ``slots`` (frame slots of ``fids``, columns ``mask``), the actuated
    coordinates v[nb:]; the allocation when ``allocate`` (``shares`` empty for none, sole
    centres ``centres`` per slot); code 1 where the numpy path must take the step."""
    nv = J.shape[1]
    nj = nv - nb
    n_s, nr = slots.size, rows.size
    k_rows = nr * n_s
    a = np.zeros(nv)
    a[nb:] = a_des
    none = np.zeros(0)
    if n_s == 0:
        return 1, a, none, none, 0.0
    Js, gamma = np.empty((k_rows, nv)), np.empty(k_rows)
    J6, g6, vel = np.empty((6, nv)), np.empty(6), np.empty(6)
    rotations = np.empty((n_s, 3, 3))
    for k in range(n_s):
        R, o = placement(oMf, fids[slots[k]])
        rotations[k] = R
        frame_rows(J, dJ, mask[slots[k]], v, o, J6, g6, vel)
        for i in range(nr):
            Js[nr * k + i] = J6[rows[i]]
            gamma[nr * k + i] = g6[rows[i]]
    if kd_stance != 0.0:
        gamma += kd_stance * (Js @ v)
    Jb = np.ascontiguousarray(Js[:, :nb])
    Ja = np.ascontiguousarray(Js[:, nb:])
    residual = 0.0
    vi = np.arange(nb, nv)
    chain = k_rows > nb
    if not chain:
        if k_rows != nb:
            return 1, a, none, none, 0.0
        a[:nb] = np.linalg.solve(Jb, -(Ja @ a_des) - gamma)
        Q, R = np.zeros((0, 0)), np.zeros((0, 0))
    else:
        ok, a_b, a_vi, Q, R = closed_chain(Js, gamma, a_des, vi, nb, rcond)
        if not ok:
            return 1, a, none, none, 0.0
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
        z = np.empty(nb)
        for i in range(nb):
            s = tau_b[i]
            for c in range(i):
                s -= R[c, i] * z[c]
            z[i] = s / R[i, i]
        lam = np.ascontiguousarray(Q[:, :nb]) @ z
        if allocate:
            null = np.ascontiguousarray(Q[:, nb:])
            cents = np.empty((n_s, 3))
            for k in range(n_s):
                cents[k] = centres[slots[k]]
            ok, c = sole_centre_allocation(lam, Jb, null, rotations, cents, rho, shares, rows,
                                           force_rows)
            if not ok:
                return 1, a, none, none, 0.0
            lam = lam + null @ c
    tau = Mv[nb:] - np.ascontiguousarray(Ja.T) @ lam
    if nj != tau.size:
        return 1, a, none, none, 0.0
    return 0, a, tau, lam, residual


__all__ = ["ctc_step"]
