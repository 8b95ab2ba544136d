"""Stance-constrained inverse dynamics of ``ctc`` (Bravo & Rengifo eqs. 28–38; steps 1, 3 and 4 of
``control.ctc``'s docstring, which gives the mathematics): from the desired joint accelerations,
the constraint-consistent accelerations, the joint torques and the stance wrenches, with the
sole-centre allocation of the internal wrenches in double support. The numpy form, the
reference of the compiled step (``ctc_kernels.ctc_step``); the controller that uses both is
``control.ctc.ComputedTorqueController``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from scipy.linalg import lapack

from biped_contact_sim.control.linalg import closed_chain_reference
from biped_contact_sim.control.linalg_kernels import closed_chain as closed_chain_kernel
from biped_contact_sim.errors import ConfigError

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED

#: Rows of a 6-D sole-frame Jacobian [vx, vy, vz, ωx, ωy, ωz] that constrain a flat foot.
CONSTRAINT_ROWS: dict[str, tuple[int, ...]] = {
    "free_flyer": (0, 1, 2, 3, 4, 5),
    "planar_xz": (0, 2, 4),  # x, z, pitch: the sagittal plane
    "translation": (0, 1, 2),
}


@dataclass
class ConstrainedDynamics:
    """Result of ``constrained_inverse_dynamics``.

    Attributes:
        a: generalized acceleration v̇ (nv,).
        tau: joint torques (n_joints,), not clamped.
        lam: per stance foot, the 6-D wrench [f; τ] on the foot about its sole origin, world
            axes (rows not constrained, e.g. y/roll/yaw of the planar biped, are 0) [N, N·m].
        constraint_residual: ‖q̈_a − q̈_aᵈ‖, the part of the desired joint acceleration the
            closed chain cannot realise (0 in single support).
        null_basis: orthonormal basis (columns) of the internal-force space, in the stacked
            constrained-row layout of λ (empty in single support).
    """

    a: np.ndarray
    tau: np.ndarray
    lam: dict[str, np.ndarray]
    constraint_residual: float
    null_basis: np.ndarray


def _stance_bodies(robot, stance) -> list:
    by_name = {b.name: b for b in robot.contact_bodies}
    try:
        return [by_name[name] for name in stance]
    except KeyError as exc:
        raise ConfigError(f"Unknown stance foot {exc.args[0]!r}; contact bodies of "
                          f"{robot.name}: {', '.join(by_name)}") from None


def _lstsq(A: np.ndarray, b: np.ndarray, rcond: float) -> np.ndarray:
    return np.linalg.lstsq(A, b, rcond=rcond)[0]


def constrained_inverse_dynamics(robot, data: pin.Data, q: np.ndarray, v: np.ndarray,
                                 a_joints: np.ndarray, stance, rcond: float = 1e-10,
                                 internal=None, kd_stance: float = 0.0,
                                 owner=None, compiled: bool = True) -> ConstrainedDynamics:
    """Steps 3–4 of the module docstring: v̇_b, λ and τ for given joint accelerations.

    Bravo & Rengifo eqs. 30–38 for any number of flat stance feet. Solves (for the free-flyer
    biped in double support: J_b is 12 × 6, J_a 12 × 14):

    * single support: J_b square (6 × 6 or, planar, 3 × 3, invertible: the foot Jacobian with
      respect to the base is an adjoint map): LU solves of J_b v̇_b = −J_a q̈_aᵈ − J̇_s v and
      J_bᵀ λ = (M v̇ + h)_b;
    * closed chain: a complete QR factorisation J_b = [Q_1 Q_2][R; 0] (LAPACK ``dgeqrf``/
      ``dorgqr``; with what follows, one compiled call, ``linalg_kernels.closed_chain``) splits the
      constraint into R v̇_b = Q_1ᵀ(−J̇_s v − J_a q̈_a) and
      A q̈_a = b, A = Q_2ᵀ J_a, b = −Q_2ᵀ J̇_s v; the joint accelerations closest to q̈_aᵈ are
      q̈_a = q̈_aᵈ + Aᵀ (A Aᵀ)⁻¹ (b − A q̈_aᵈ), A Aᵀ positive definite when the chain leaves
      every internal direction to the joints (Cholesky); the minimum-norm wrench solving
      J_bᵀ λ = (M v̇ + h)_b is λ₀ = Q_1 R⁻ᵀ (M v̇ + h)_b and Q_2 is an orthonormal basis of
      the internal wrenches (the null space of J_bᵀ). A J_b or A A ᵀ that is not numerically
      of full rank falls back to SVD least squares.

    Args:
        robot: the ``RobotModel``.
        data: a pinocchio Data of ``robot.model`` (overwritten).
        q, v: state.
        a_joints: actuated-joint accelerations q̈_a (n_joints,).
        stance: names of the stance feet (contact bodies).
        rcond: singular-value cut-off of the least-squares solves.
        internal: optional callable ``(λ₀, null_basis) -> c`` adding ``null_basis @ c`` to the
            minimum-norm λ₀ (double support internal forces).
        kd_stance: k_s of ``J_s v̇ + J̇_s v = −k_s J_s v`` (0: the rigid constraint, eq. 30).
        owner: if given, ``owner._Jb`` is set to J_b before ``internal`` is called.
        compiled: the closed chain's accelerations by ``linalg_kernels.closed_chain`` (default) or
            by its numpy/LAPACK reference ``linalg.closed_chain_reference`` (tests).

    Returns:
        The ``ConstrainedDynamics``.

    Raises:
        ConfigError: a stance name is not a contact body.
    """
    model = robot.model
    nb = robot.n_base_v
    bodies = _stance_bodies(robot, stance)
    rows = CONSTRAINT_ROWS[robot.config.base]
    nr = len(rows)
    all_rows = nr == 6
    a = np.zeros(model.nv)
    vi = robot.v_idx
    a[vi] = a_joints
    dot = np.dot
    if bodies:
        pin.computeJointJacobians(model, data, q)
        pin.forwardKinematics(model, data, q, v, np.zeros(model.nv))  # drift = J̇ v (a = 0)
        k_rows = nr * len(bodies)
        Js = np.empty((k_rows, model.nv))
        gamma = np.empty(k_rows)
        for k, body in enumerate(bodies):
            pin.updateFramePlacement(model, data, body.frame_id)
            J = pin.getFrameJacobian(model, data, body.frame_id, LWA)
            acc = pin.getFrameClassicalAcceleration(model, data, body.frame_id, LWA).vector
            Js[nr * k:nr * (k + 1)] = J if all_rows else J[list(rows)]
            gamma[nr * k:nr * (k + 1)] = acc if all_rows else acc[list(rows)]
        if kd_stance:
            gamma += kd_stance * dot(Js, v)
        Jb, Ja = Js[:, :nb], Js[:, vi]
        residual = 0.0
        if k_rows <= nb:  # single support: J_b square, q̈_a = q̈_aᵈ exactly (eq. 34)
            lu, piv, info = lapack.dgetrf(Jb)
            if info == 0 and k_rows == nb:
                a[:nb] = lapack.dgetrs(lu, piv, -dot(Ja, a_joints) - gamma)[0]
            else:
                lu = None
                a[:nb] = _lstsq(Jb, -dot(Ja, a_joints) - gamma, rcond)
            Q = R = None
        else:  # closed chain: min ‖q̈_a − q̈_aᵈ‖ subject to J_s v̇ + J̇_s v = 0
            lu = None
            chain = closed_chain_kernel if compiled else closed_chain_reference
            ok, a_b, a_vi, Q, R = chain(Js, gamma, np.asarray(a_joints, float), vi, nb, rcond)
            if ok:
                a[vi] = a_vi
                a[:nb] = a_b
            else:  # a singular chain: SVD least squares, as before
                Q = None
                U, sv, Vt = np.linalg.svd(Js)
                rank = int(np.sum(sv > rcond * sv[0]))
                a_p = Vt[:rank].T @ ((U[:, :rank].T @ -gamma) / sv[:rank])
                N = Vt[rank:].T
                z = _lstsq(N[vi], a_joints - a_p[vi], rcond)
                a = a_p + N @ z
            aa = a[vi] - a_joints
            residual = float(np.sqrt(dot(aa, aa)))
        tau_full = pin.rnea(model, data, q, v, a)
        tau_b = tau_full[:nb]
        if lu is not None:  # J_bᵀ λ = (M v̇ + h)_b
            lam = lapack.dgetrs(lu, piv, tau_b, trans=1)[0]
            null_basis = np.zeros((k_rows, 0))
        elif Q is not None:
            lam = dot(Q[:, :nb], lapack.dtrtrs(R, tau_b, trans=1)[0])
            null_basis = Q[:, nb:]
        else:
            U, sv, Vt = np.linalg.svd(Jb.T)  # minimum-norm λ
            rank = int(np.sum(sv > rcond * sv[0])) if sv.size else 0
            lam = Vt[:rank].T @ ((U[:, :rank].T @ tau_b) / sv[:rank])
            null_basis = Vt[rank:].T
        if internal is not None and null_basis.shape[1]:
            if owner is not None:
                owner._Jb = Jb
            lam = lam + dot(null_basis, np.asarray(internal(lam, null_basis), float))
        tau = tau_full[vi] - dot(Ja.T, lam)
    else:  # flight: the base rows of M v̇ + h = Sᵀτ give v̇_b
        M = pin.crba(model, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        tau0 = pin.rnea(model, data, q, v, a)  # M[:, a] q̈_a + h
        a[:nb] = np.linalg.solve(M[:nb, :nb], -tau0[:nb])
        tau = pin.rnea(model, data, q, v, a)[vi]
        lam, residual, null_basis = np.zeros(0), 0.0, np.zeros((0, 0))
    wrenches = {}
    for k, body in enumerate(bodies):
        if all_rows:
            wrenches[body.name] = lam[6 * k:6 * k + 6].copy()
        else:
            w = np.zeros(6)
            w[list(rows)] = lam[nr * k:nr * (k + 1)]
            wrenches[body.name] = w
    return ConstrainedDynamics(a, tau, wrenches, residual, null_basis)
