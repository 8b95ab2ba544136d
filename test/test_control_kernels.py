"""The control layer's fast paths against their references.

* compiled kernels (control/*_kernels.py) against numpy/pinocchio: point Jacobians and drifts
  against pinocchio's own frame velocity and acceleration, W_com / W_int against the grasp
  module's numpy builders, sole wrenches against ``sole_wrench_at``, the joint-reference
  Hermite against scipy's ``CubicHermiteSpline``, the compiled task-priority recursion
  against its numpy reference;
* the whitened, damped task-priority recursion (control/linalg.py, control/linalg_kernels.py)
  against the projector form of Sentis et al. eqs. 29–31 written with eigen-decomposition
  pseudo-inverses, on random rank-deficient Φ*, and its continuity where a task becomes
  dependent on the tasks above it (where the truncated pseudo-inverse jumps);
* the pivoted-Cholesky factor of a PSD matrix against its definition;
* the compiled constrained dynamics of a support (D, B, a0, f0; then Φ* = G Gᵀ, T) and the
  internal-force torques of eq. 42 and the no-slip and unloading internal-force references
  against their numpy references (``control.linalg``, ``control.contact_set``), on the
  biped and the humanoid in flight, single, double, three- and four-contact support at random
  states, and their refusal (ok False, so that the counted reference runs) for a singular
  support.
"""

import numpy as np
import pinocchio as pin
import pytest
from scipy.interpolate import CubicHermiteSpline

from biped_contact_sim.control import body_tasks_kernels, internal_forces_kernels, walking_kernels
from biped_contact_sim.control import linalg as la
from biped_contact_sim.control import linalg_kernels as lk
from biped_contact_sim.control.grasp import (
    MOMENT,
    TENSION,
    ContactAnchor,
    linkage_rows,
    resultant_map,
    sole_wrench_at,
)
from biped_contact_sim.robot import RobotModel

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


def _rotation(rng):
    return pin.rpy.rpyToMatrix(*rng.uniform(-np.pi, np.pi, 3))


@pytest.fixture(scope="module")
def robot():
    return RobotModel.load("biped3d")


def test_point_rows_against_pinocchio(robot):
    """J_P and γ_P of a point at offset r from a sole frame: rigid transport of pinocchio's
    frame Jacobian and classical acceleration, ω from pinocchio's frame velocity."""
    rng = np.random.default_rng(3)
    model, data = robot.model, robot.create_data()
    for _ in range(5):
        q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
        q[3:7] /= np.linalg.norm(q[3:7])
        v = rng.normal(size=model.nv)
        pin.computeJointJacobians(model, data, q)
        pin.forwardKinematics(model, data, q, v, np.zeros(model.nv))
        fid = robot.contact_bodies[0].frame_id
        pin.updateFramePlacements(model, data)
        r = rng.normal(size=3) * 0.1
        J = pin.getFrameJacobian(model, data, fid, LWA)
        acc = pin.getFrameClassicalAcceleration(model, data, fid, LWA)
        w = pin.getFrameVelocity(model, data, fid, LWA).angular
        J_out, drift = np.empty((6, model.nv)), np.empty(6)
        body_tasks_kernels.point_rows(J, acc.vector, v, r, J_out, drift)
        J_ref = J.copy()
        J_ref[:3] -= pin.skew(r) @ J[3:]
        np.testing.assert_allclose(J_out, J_ref, atol=1e-12)
        np.testing.assert_allclose(drift[:3], acc.linear + np.cross(acc.angular, r)
                                   + np.cross(w, np.cross(w, r)), atol=1e-10)
        np.testing.assert_allclose(drift[3:], acc.angular, atol=1e-12)


def test_geometry_kernels_against_numpy():
    rng = np.random.default_rng(5)
    for n_s in (2, 3, 4):
        P = rng.normal(size=(n_s, 3))
        R = np.array([_rotation(rng) for _ in range(n_s)])
        com = rng.normal(size=3)
        W = np.empty((6, 6 * n_s))
        internal_forces_kernels.surface_resultant(P, com, W)
        ref = resultant_map(tuple(ContactAnchor(P[i], R[i]) for i in range(n_s)), com)
        np.testing.assert_allclose(W, ref, atol=1e-12)
        spec = [(TENSION, i, j) for i in range(n_s) for j in range(i + 1, n_s)]
        spec += [(MOMENT, i, a) for i in range(n_s) for a in range(3)]
        offsets = np.arange(n_s, dtype=np.int64) * 6
        W_int = np.empty((len(spec), 6 * n_s))
        assert internal_forces_kernels.linkage(np.array(spec, dtype=np.int64), P, R, offsets, W_int)
        np.testing.assert_allclose(W_int, linkage_rows(spec, P, R, offsets, 6 * n_s),
                                   atol=1e-12)
        w_sole = rng.normal(size=(n_s, 6))
        origins = rng.normal(size=(n_s, 3))
        out = np.empty(6 * n_s)
        internal_forces_kernels.wrenches_at(w_sole, R, origins, P, out)
        ref = np.concatenate([sole_wrench_at(w_sole[i], R[i], origins[i], P[i])
                              for i in range(n_s)])
        np.testing.assert_allclose(out, ref, atol=1e-12)
    same = np.zeros((2, 3))
    assert not internal_forces_kernels.linkage(np.array([[TENSION, 0, 1]], dtype=np.int64), same,
                               np.array([np.eye(3)] * 2), np.array([0, 6], dtype=np.int64),
                               np.empty((1, 12)))


def test_hermite_against_scipy():
    rng = np.random.default_rng(8)
    dt = 0.005
    q, v, a = rng.normal(size=(3, 4, 7))
    for k in (0, 1, 2):
        for tau in (0.0, 0.3, 0.77, 1.0):
            out = np.empty((3, 7))
            walking_kernels.hermite(q, v, a, k, tau, dt, *out)
            spline = CubicHermiteSpline([0.0, dt], q[k:k + 2], v[k:k + 2])
            np.testing.assert_allclose(out[0], spline(tau * dt), atol=1e-12)
            np.testing.assert_allclose(out[1], spline(tau * dt, 1), atol=1e-9)
            np.testing.assert_allclose(out[2], (1 - tau) * a[k] + tau * a[k + 1], atol=1e-12)


def test_psd_factor_and_whitening():
    """Pivoted Cholesky of a PSD matrix of rank r: G Gᵀ = X with r columns; T = G (GᵀG)⁻¹
    gives X⁺ = T Tᵀ and Tᵀ X T = I; the compiled factor takes the same pivots (equal G)."""
    rng = np.random.default_rng(11)
    for n, r in ((14, 8), (14, 14), (9, 1), (26, 8)):
        A = rng.normal(size=(n, r))
        X = A @ A.T
        G = la.psd_factor_reference(X, 1e-10)
        assert G.shape == (n, r)
        np.testing.assert_allclose(G @ G.T, X, atol=1e-10 * np.abs(X).max())
        T = la.whitening_reference(G)
        np.testing.assert_allclose(T @ T.T, np.linalg.pinv(X, hermitian=True), atol=1e-8)
        np.testing.assert_allclose(T.T @ X @ T, np.eye(r), atol=1e-9)
        Gc = lk.psd_factor(X, 1e-10)
        np.testing.assert_allclose(Gc, G, rtol=0.0, atol=1e-12 * np.abs(G).max())
        np.testing.assert_allclose(lk.whitening(Gc), T, rtol=0.0, atol=1e-10 * np.abs(T).max())
    assert la.psd_factor_reference(np.zeros((3, 3)), 1e-10).shape == (3, 0)
    assert lk.psd_factor(np.zeros((3, 3)), 1e-10).shape == (3, 0)
    assert la.cholesky_reference(np.diag([1.0, 1e-12]), 1e-8) is None
    assert la.cholesky_reference(np.diag([1.0, -1.0]), 1e-8) is None


def _projector_cascade(tasks, Phi, rcond=1e-8):
    """Sentis et al. eqs. 29–31 as written: Φ*⁺ and Λ*⁺ by eigen-decomposition,
    J*_{k|prec} = Φ_k Φ*⁺ N*_prec, Γ += J*ᵀ Λ* (ẍ − c − Φ_k Γ), N* −= Φ* J*ᵀ Λ* J*; Λ*'s
    eigenvalues cut relative to the unprojected task's scale (a conflicting task's projection
    is uniformly small): the truncated pseudo-inverse the damped solve replaces."""
    Pp = np.linalg.pinv(Phi, rcond=rcond, hermitian=True)
    tau, N = np.zeros(len(Phi)), np.eye(len(Phi))
    for Phi_k, e_k in tasks:
        Jp = Phi_k @ Pp @ N
        PJ = Phi @ Jp.T
        X = Jp @ PJ
        w, V = np.linalg.eigh(X)
        scale = np.diag(Phi_k @ Pp @ Phi_k.T).max()
        keep = w > rcond * scale
        Lam = (V[:, keep] / w[keep]) @ V[:, keep].T
        tau = tau + Jp.T @ (Lam @ (e_k - Phi_k @ tau))
        N = N - PJ @ Lam @ Jp
    return tau


def _whitened(tasks, Phi, damping=1e-8, compiled=False):
    G = la.psd_factor_reference(Phi, 1e-8)
    T = la.whitening_reference(G)
    sizes = [len(e) for _, e in tasks[:-1]]
    J_up = np.vstack([Phi_k @ T for Phi_k, _ in tasks[:-1]]) if sizes else np.zeros((0, len(T.T)))
    e_up = np.concatenate([e for _, e in tasks[:-1]]) if sizes else np.zeros(0)
    args = (J_up, e_up, sizes, tasks[-1][0] @ T, tasks[-1][1], damping)
    if compiled:
        y, damped = lk.prioritized(J_up, e_up, np.array(sizes, dtype=np.int64), *args[3:],
                                   np.zeros((0, len(T.T))), np.zeros(0))
    else:
        y, damped = la.prioritized_reference(*args)
    return T @ y, damped


@pytest.mark.parametrize("conflict", [False, True])
def test_prioritized_matches_projector_form(conflict):
    """Random Φ* of rank 8 in 14 joints (double support) and 14 (single support): tasks
    Φ_k = J_k Φ* (rows in the range of Φ*), a posture task Φ_k = Φ* last. Independent tasks
    (even nearly conflicting ones, a row close to one of a task above, but above the damping
    floor): the damped recursion is the exact one of eqs. 29–31, numpy and compiled alike,
    and no level is damped."""
    rng = np.random.default_rng(21 + conflict)
    for rank in (8, 14):
        for _ in range(20):  # spectrum in [0.25, 4]: the comparison is not one of conditioning
            A = np.linalg.qr(rng.normal(size=(14, rank)))[0] * rng.uniform(0.5, 2.0, rank)
            Phi = A @ A.T
            tasks = []
            for m in (3, 1, 3):
                tasks.append((rng.normal(size=(m, 14)) @ Phi, rng.normal(size=m)))
            if conflict:
                tasks[2] = (np.vstack([tasks[0][0][:1] + 0.1 * tasks[2][0][0],
                                       tasks[2][0][1:]]), tasks[2][1])
            tasks.append((Phi, rng.normal(size=14)))
            ref = _projector_cascade(tasks, Phi)
            tau, damped = _whitened(tasks, Phi)
            tau_c, damped_c = _whitened(tasks, Phi, compiled=True)
            tol = 1e-6 if conflict else 1e-9
            np.testing.assert_allclose(tau, ref, rtol=tol, atol=tol * np.abs(ref).max())
            np.testing.assert_allclose(tau_c, tau, rtol=1e-10, atol=1e-10 * np.abs(ref).max())
            assert damped == damped_c == 0


def test_prioritized_dependent_level_damped_and_counted():
    """An exactly repeated task row leaves nothing to its level: the damping acts (counted
    alike by the numpy and compiled recursions) and the result is the projector form's, which
    drops the dependent direction."""
    rng = np.random.default_rng(2)
    A = np.linalg.qr(rng.normal(size=(14, 8)))[0]
    Phi = A @ A.T
    J = rng.normal(size=(3, 14)) @ Phi
    tasks = [(J, rng.normal(size=3)), (J[:1].copy(), rng.normal(size=1)),
             (Phi, rng.normal(size=14))]
    tau, damped = _whitened(tasks, Phi)
    tau_c, damped_c = _whitened(tasks, Phi, compiled=True)
    assert damped == damped_c == 1
    ref = _projector_cascade(tasks, Phi)
    np.testing.assert_allclose(tau, ref, atol=1e-6 * np.abs(ref).max())
    np.testing.assert_allclose(tau_c, ref, atol=1e-6 * np.abs(ref).max())


def test_prioritized_is_continuous_where_the_truncation_jumps():
    """A task row turning into a copy of a row of the task above it, J_2 = J_1,0 + ε d, ε
    swept over four decades through the damping floor (steps of 2 %): the damped recursion's
    torques change by at most 5 % of their size between neighbouring ε and stay bounded, numpy
    and compiled alike; the truncated pseudo-inverse it replaces (cut-off at the same floor)
    jumps by more than the torques' size where its eigenvalue crosses the cut-off."""
    rng = np.random.default_rng(4)
    A = np.linalg.qr(rng.normal(size=(14, 8)))[0]
    Phi = A @ A.T
    J1, d = rng.normal(size=(3, 14)) @ Phi, rng.normal(size=14) @ Phi
    e1, e2, e_post = rng.normal(size=3), rng.normal(size=1), rng.normal(size=14)
    damping = 1e-6
    runs = {"damped": [], "compiled": [], "truncated": []}
    for eps in np.geomspace(1e-1, 1e-5, 466):
        tasks = [(J1, e1), ((J1[0] + eps * d)[None], e2), (Phi, e_post)]
        runs["damped"].append(_whitened(tasks, Phi, damping)[0])
        runs["compiled"].append(_whitened(tasks, Phi, damping, compiled=True)[0])
        runs["truncated"].append(_projector_cascade(tasks, Phi, damping))
    size = max(np.abs(t).max() for t in runs["damped"])
    for key in ("damped", "compiled"):
        steps = np.abs(np.diff(runs[key], axis=0)).max()
        assert steps < 0.05 * size, (key, steps, size)
    np.testing.assert_allclose(runs["compiled"], runs["damped"], atol=1e-9 * size)
    assert np.abs(np.diff(runs["truncated"], axis=0)).max() > size


def _support_problem(robot, names, rng):
    """A random state's A⁻¹, h, 6-D support Jacobian J_s and drift γ_s of the named bodies."""
    model, data = robot.model, robot.create_data()
    q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
    q[3:7] /= np.linalg.norm(q[3:7])
    v = rng.normal(size=model.nv)
    pin.crba(model, data, q)
    M = np.triu(data.M) + np.triu(data.M, 1).T
    h = pin.nonLinearEffects(model, data, q, v)
    pin.computeJointJacobians(model, data, q)
    pin.forwardKinematics(model, data, q, v, np.zeros(model.nv))
    pin.updateFramePlacements(model, data)
    bodies = {b.name: b for b in robot.contact_bodies}
    J_s = np.zeros((6 * len(names), model.nv))
    gamma = np.zeros(6 * len(names))
    for k, name in enumerate(names):
        fid = bodies[name].frame_id
        J_s[6 * k:6 * k + 6] = pin.getFrameJacobian(model, data, fid, LWA)
        gamma[6 * k:6 * k + 6] = pin.getFrameClassicalAcceleration(model, data, fid, LWA).vector
    return np.linalg.inv(M), h.copy(), J_s, gamma


@pytest.mark.parametrize("robot_name,supports", [
    ("biped3d", ((), ("left_foot",), ("left_foot", "right_foot"))),
    ("humanoid", (("left_foot", "right_foot", "left_hand"),
                  ("left_foot", "right_foot", "left_hand", "right_hand"))),
])
def test_constrained_space_against_reference(robot_name, supports):
    """D, B, a0, f0 equal, the factors of Φ* = U B equal and of rank n − 6(n_s − 1); the
    internal-force torques of eq. 42 equal."""
    robot = RobotModel.load(robot_name)
    rng = np.random.default_rng(5)
    vi = slice(6, robot.nv)
    for names in supports:
        for _ in range(3):
            Minv, h, J_s, gamma = _support_problem(robot, names, rng)
            ok, D, B, a0, f0 = lk.constrained_space(Minv, h, J_s, gamma, 6, 1e-9)
            ref = la.constrained_space_reference(Minv, h, J_s, gamma, vi, 1e-9)
            assert ok and ref[-1] == 0
            Dr, Br, a0r, f0r, Gr, Tr, BTr, _ = ref
            G = lk.psd_factor(np.ascontiguousarray(B[vi]), 1e-9)
            T = lk.whitening(G)
            for x, y in ((B, Br), (a0, a0r), (G, Gr), (T, Tr)):
                np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-10 * np.abs(y).max())
            # rank of Φ*: n − 6(n_s − 1) (Sentis et al. §III-B)
            assert G.shape == (robot.n_joints, robot.n_joints - 6 * max(len(names) - 1, 0))
            if names:
                np.testing.assert_allclose(D, Dr, rtol=1e-9, atol=1e-10 * np.abs(Dr).max())
                np.testing.assert_allclose(f0, f0r, rtol=1e-9, atol=1e-10 * np.abs(f0r).max())
            if len(names) >= 2:  # eq. 42, 6(n_s − 1) random internal rows
                W_int = rng.normal(size=(6 * (len(names) - 1), 6 * len(names)))
                f_cmd, f_task = rng.normal(size=len(W_int)), rng.normal(size=6 * len(names))
                d_tau, damped = lk.internal_force_torques(W_int, D, G, T, f_cmd, f_task, 1e-8)
                d_ref, damped_r = la.internal_force_torques_reference(W_int, Dr, Gr, Tr, f_cmd,
                                                                      f_task,
                                                            1e-8)
                assert not damped and not damped_r
                np.testing.assert_allclose(d_tau, d_ref, rtol=1e-8,
                                           atol=1e-10 * np.abs(d_ref).max())


def test_compiled_paths_refuse_a_singular_support():
    """The same body twice in the support: Λ_s⁻¹ is singular; the kernel says so (the
    controller then takes the reference, which counts one pseudo-inverse fallback)."""
    robot = RobotModel.load("biped3d")
    Minv, h, J_s, gamma = _support_problem(robot, ("left_foot", "left_foot"),
                                           np.random.default_rng(2))
    assert not lk.constrained_space(Minv, h, J_s, gamma, 6, 1e-9)[0]
    assert la.constrained_space_reference(Minv, h, J_s, gamma, slice(6, robot.nv), 1e-9)[-1] == 1


@pytest.mark.parametrize("robot_name,supports", [
    ("biped3d", ((), ("left_foot",), ("left_foot", "right_foot"))),
    ("humanoid", (("left_foot", "right_foot", "left_hand"),)),
])
def test_task_torques_against_reference(robot_name, supports):
    """Stage 3 compiled (Ĵ_k = J_k B T, the angular-momentum row, the recursion, Γ = T y)
    equals the numpy reference to 1e-10 on random states, and its torques meet every task of
    a feasible stack: Ĵ_k y = e_k, i.e. ẍ_k = ẍ_k,des (Sentis et al. eqs. 27–31)."""
    robot = RobotModel.load(robot_name)
    rng = np.random.default_rng(11)
    vi = slice(6, robot.nv)
    n = robot.n_joints
    for names in supports:
        for _ in range(3):
            Minv, h, J_s, gamma = _support_problem(robot, names, rng)
            D, B, a0, f0, G, T, _, _ = la.constrained_space_reference(Minv, h, J_s, gamma, vi, 1e-9)
            if D is None:
                D, f0 = np.zeros((0, n)), np.zeros(0)
            B, D = np.ascontiguousarray(B), np.ascontiguousarray(D)
            sizes = [3, 1, 2] if len(names) == 2 else [3, 2]
            J_up = rng.normal(size=(sum(sizes), robot.nv))
            e_up = rng.normal(size=sum(sizes))
            i_am = 3 if len(names) == 2 else -1
            w_am = rng.normal(size=6 * len(names)) if i_am >= 0 else np.zeros(6 * len(names))
            J_up[max(i_am, 0)] *= 0.0 if i_am >= 0 else 1.0
            e_post = rng.normal(size=n)
            J_force, F_force = rng.normal(size=(1, robot.nv)), rng.normal(size=1)
            for Jf, Ff in ((J_force, F_force), (np.zeros((0, robot.nv)), np.zeros(0))):
                tau, lev = lk.task_torques(
                    B, G, T, D, f0, a0, 6, J_up, e_up, np.array(sizes, dtype=np.int64), i_am,
                    w_am, 0.3, e_post, Jf, Ff, 1e-8)
                tau_r, lev_r = la.task_torques_reference(B, G, T, D, f0, a0, vi, J_up, e_up, sizes,
                                                         i_am,
                                               w_am, 0.3, e_post, Jf, Ff, 1e-8)
                assert lev == lev_r
                np.testing.assert_allclose(tau, tau_r, rtol=1e-10,
                                           atol=1e-10 * np.abs(tau_r).max())
                if lev == 0 and len(Jf) == 0:
                    # the upper tasks are met exactly: J_k v̇ = e_up with v̇ = B Γ + a0
                    acc = B @ tau + a0
                    got = J_up @ acc
                    want = e_up.copy()
                    if i_am >= 0:  # the angular-momentum row: w_am f = e_am, f = f0 − D Γ
                        got[i_am] = w_am @ (f0 - D @ tau)
                        want[i_am] = 0.3
                    np.testing.assert_allclose(got, want, atol=1e-7 * np.abs(want).max())


@pytest.mark.parametrize("rows", [(0, 1, 2, 3, 4, 5), (0, 2, 4)])
def test_sole_centre_allocation_against_reference(rows):
    """ctc's internal-wrench allocation: the kernel equals the numpy reference to 1e-10, and
    λ = λ₀ + N c keeps the base equation J_bᵀ λ = J_bᵀ λ₀ (it only adds internal wrenches)."""
    rng = np.random.default_rng(3)
    nr = len(rows)
    nb = 6 if nr == 6 else 3
    for shares in (None, np.array([0.3, 0.7])):
        for rho in (0.0, 0.05):
            if rho == 0.0 and shares is None:
                continue
            Jb = rng.normal(size=(2 * nr, nb))
            null_basis = np.linalg.svd(Jb)[0][:, nb:]  # orthonormal basis of ker J_bᵀ
            lam0 = rng.normal(size=2 * nr)
            rotations = np.array([_rotation(rng) for _ in range(2)])
            centres = rng.normal(size=(2, 3)) * 0.05
            fr = [i for i, r in enumerate(rows) if r < 3]
            ok, c = lk.sole_centre_allocation(
                lam0, Jb, null_basis, rotations, centres, rho,
                np.zeros(0) if shares is None else shares, np.array(rows, dtype=np.int64),
                np.array(fr, dtype=np.int64))
            ref = la.sole_centre_allocation_reference(lam0, Jb, null_basis, rotations, centres, rho,
                                            shares, list(rows), fr)
            assert ok
            np.testing.assert_allclose(c, ref, rtol=1e-10, atol=1e-10 * np.abs(ref).max())
            lam = lam0 + null_basis @ c
            np.testing.assert_allclose(Jb.T @ lam, Jb.T @ lam0, atol=1e-10)


@pytest.mark.parametrize(("k_rows", "nb", "nj"), [(12, 6, 14), (6, 3, 6), (18, 6, 14)])
def test_closed_chain_against_reference(k_rows, nb, nj):
    """ctc's closed-chain accelerations: the kernel equals the LAPACK reference to 1e-10 (v̇_b,
    q̈_a, the complete Q and R), both refuse the same rank-deficient chains, and the result
    meets J_s v̇ = −γ with q̈_a the closest to q̈_aᵈ (A(q̈_a − q̈_aᵈ) in the row space)."""
    rng = np.random.default_rng(7)
    nv = nb + nj
    vi = np.arange(nb, nv, dtype=np.int64)
    refused = 0
    for trial in range(200):
        Js = rng.normal(size=(k_rows, nv))
        if trial % 10 == 1:  # J_b rank-deficient
            Js[:, nb - 1] = Js[:, 0]
        if trial % 10 == 2:  # J_a too: nothing left to the joints for one direction
            Js[:, nb:] = 0.0
        gamma, a_des = rng.normal(size=k_rows), rng.normal(size=nj)
        got = lk.closed_chain(Js, gamma, a_des, vi, nb, 1e-10)
        want = la.closed_chain_reference(Js, gamma, a_des, vi, nb, 1e-10)
        assert got[0] == want[0]
        if not want[0]:
            refused += 1
            continue
        for g, w in zip(got[1:], want[1:], strict=True):
            np.testing.assert_allclose(g, w, rtol=0.0, atol=1e-10 * max(1.0, np.abs(w).max()))
        a = np.concatenate([got[1], got[2]])
        np.testing.assert_allclose(Js @ a, -gamma, atol=1e-9)
    assert refused >= 20  # both kinds of rank loss reached the fallback


def test_closed_chain_on_captured_walk_states():
    """constrained_inverse_dynamics with the compiled closed chain and with its reference give
    the same v̇, τ and λ (1e-10) along a walk under ctc, single and double support."""
    from biped_contact_sim.control.ctc_dynamics import constrained_inverse_dynamics
    from biped_contact_sim.session.config import SimConfig
    from biped_contact_sim.session.runner import Run

    run = Run(SimConfig.from_sets("walk", "penalty_fl", "ctc", duration=1.2,
                                  sets={"contacts": "points"}))
    ctl = run.control.controller
    data = run.robot.create_data()
    double = 0
    while not run.done:
        q, v = run.sim.q.copy(), run.sim.v.copy()
        run.advance(7)
        stance = ctl.behavior.stance_at(run.sim.t)
        a_des = np.random.default_rng(run.k).normal(size=run.robot.n_joints)
        def internal(lam0, null_basis):  # some internal wrench, through the basis Q_2
            return null_basis.T @ np.linspace(-50.0, 50.0, len(lam0))

        got, want = (constrained_inverse_dynamics(run.robot, data, q, v, a_des, stance,
                                                  internal=internal, compiled=compiled)
                     for compiled in (True, False))
        double += len(stance) == 2
        for g, w in ((got.a, want.a), (got.tau, want.tau), (got.null_basis, want.null_basis)):
            np.testing.assert_allclose(g, w, rtol=0.0, atol=1e-10 * max(1.0, np.abs(w).max()))
        assert got.constraint_residual == pytest.approx(want.constraint_residual, abs=1e-10)
        for name in want.lam:
            np.testing.assert_allclose(got.lam[name], want.lam[name], rtol=0.0,
                                       atol=1e-10 * max(1.0, np.abs(want.lam[name]).max()))
    assert double > 10


def test_internal_force_law_against_reference():
    """The end of the wbc internal-force law (load-share tension, measured internal forces,
    PI with its clamped integral, Γ_int): compiled equals numpy to 1e-10 on random problems,
    with and without a measurement, tension, PI and torques."""
    from biped_contact_sim.control.internal_forces import internal_force_law_reference

    rng = np.random.default_rng(5)
    for trial in range(200):
        m, n, nj = (6, 12, 14) if trial % 2 else (9, 18, 14)
        W_int, D = rng.normal(size=(m, n)), rng.normal(size=(n, nj))
        G = np.linalg.qr(rng.normal(size=(nj, 8)))[0]
        T = G.copy()
        f_task, F_meas = rng.normal(size=n) * 50.0, rng.normal(size=n) * 50.0
        has_meas, pi_on, torques_on = trial % 3 != 0, trial % 5 != 0, trial % 7 != 0
        f_int_ref = rng.normal(size=m) * 10.0
        tension = 0.0 if trial % 4 == 0 else float(rng.uniform(-1, 1))
        integral = rng.normal(size=m) * 30.0
        args = (W_int, D, G, T, f_task, F_meas if has_meas else np.zeros(0), has_meas, f_int_ref,
                tension)
        tail = (1e-3 * trial % 0.7, 0.02, 50.0, pi_on, torques_on, 1e-8)
        i_got, i_want = integral.copy(), integral.copy()
        got = lk.internal_force_law(*args, i_got, *tail)
        want = internal_force_law_reference(*args, i_want, *tail)
        assert got[1] == want[1]
        np.testing.assert_allclose(i_got, i_want, rtol=0.0, atol=1e-10)
        assert not (has_meas and pi_on) or np.abs(i_got).max() <= 50.0  # clamped
        for g, w in zip(got[:1] + got[2:], want[:1] + want[2:], strict=True):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=0.0,
                                       atol=1e-10 * max(1.0, np.abs(w).max(initial=0.0)))


def test_no_slip_kernel_against_reference():
    """The no-slip internal-force reference (``internal_forces_kernels.no_slip``) equals its
    numpy form ``contact_set.no_slip_reference`` to 1e-10 on random supports of 2–4 contacts:
    fewer and more free rows than no-slip equations (least squares and least norm), with and
    without the preload (whose second solve must run in some of them), and no free row for
    the preload."""
    from biped_contact_sim.control.contact_set import no_slip_reference

    rng = np.random.default_rng(11)
    second_solves = 0
    for trial in range(300):
        n_s = int(rng.integers(2, 5))
        m_int = 6 * n_s - 6
        W_com, W_int = rng.normal(size=(6, 6 * n_s)), rng.normal(size=(m_int, 6 * n_s))
        free = np.sort(rng.choice(m_int, size=int(rng.integers(1, m_int + 1)),
                                  replace=False)).astype(np.int64)
        rotations = np.stack([_rotation(rng) for _ in range(n_s)])
        contacts = np.sort(rng.choice(n_s, size=int(rng.integers(1, n_s)), replace=False))
        f_task, f_int_ref = rng.normal(size=6 * n_s) * 100.0, rng.normal(size=m_int) * 10.0
        preload = (0.0, 50.0, 5000.0)[trial % 3]
        preload_free = (np.zeros(0, dtype=np.int64) if trial % 17 == 0 else
                        np.sort(rng.choice(m_int, size=int(rng.integers(1, m_int + 1)),
                                           replace=False)).astype(np.int64))
        args = (rotations, W_com, W_int, f_task, f_int_ref)
        want = no_slip_reference(list(contacts), *args, free=free, preload=preload,
                                 preload_free=preload_free)
        got = np.empty(m_int)
        internal_forces_kernels.no_slip(contacts.astype(np.int64), *args, free, preload,
                                        preload_free, got)
        np.testing.assert_allclose(got, want, rtol=0.0, atol=1e-10 * max(1.0, np.abs(want).max()))
        if preload and not np.allclose(want, no_slip_reference(list(contacts), *args, free=free)):
            second_solves += 1
    assert second_solves > 50


def test_unloading_kernel_against_reference():
    """The unloading internal-force reference (``internal_forces_kernels.unloading``) equals
    its numpy form ``contact_set.unloading_reference`` to 1e-10 on random supports of 2–4
    contacts with 1–2 contacts unloading: free rows that can meet the targets (the least-norm
    change of those rows), too few to meet them (every row then), and no free rows given
    (every row)."""
    from biped_contact_sim.control.contact_set import unloading_reference

    rng = np.random.default_rng(12)
    branches = {"free": 0, "every": 0}
    for trial in range(300):
        n_s = int(rng.integers(2, 5))
        m_int = 6 * n_s - 6
        W_com, W_int = rng.normal(size=(6, 6 * n_s)), rng.normal(size=(m_int, 6 * n_s))
        u = int(rng.integers(1, min(n_s - 1, 2) + 1))
        contacts = np.sort(rng.choice(n_s, size=u, replace=False))
        targets = rng.normal(size=(u, 6)) * 50.0
        f_task, f_int_ref = rng.normal(size=6 * n_s) * 100.0, rng.normal(size=m_int) * 10.0
        size = int(rng.integers(1, m_int + 1)) if trial % 7 else 0
        free = np.sort(rng.choice(m_int, size=size, replace=False)).astype(np.int64)
        want = unloading_reference(dict(zip(contacts.tolist(), targets, strict=True)), W_com,
                                   W_int, f_task, f_int_ref, free=free if size else None)
        got = np.empty(m_int)
        internal_forces_kernels.unloading(contacts.astype(np.int64), targets, W_com, W_int,
                                          f_task, f_int_ref, free, got)
        np.testing.assert_allclose(got, want, rtol=0.0, atol=1e-10 * max(1.0, np.abs(want).max()))
        if size:
            outside = np.setdiff1d(np.arange(m_int), free)
            kept = np.allclose(want[outside], f_int_ref[outside], rtol=0.0, atol=1e-12)
            branches["free" if kept else "every"] += 1
    assert branches["free"] > 20 and branches["every"] > 20, branches


def test_compiled_step_picks_the_rows_internal_forces_picks():
    """The rows the compiled ``wbc`` step frees for the no-slip and the unloading references
    (``internal_forces_kernels.no_slip_rows``, ``unloading_rows``) are those of
    ``InternalForces.command`` (its tensions, ``_cop_rows_towards``, the unloading's free
    rows), on the model's rows of the two-contact model (App. C eq. 82, both axes k) and of
    the general model of 3 and 4 contacts, at random anchors and sole rotations; the
    unloading targets are (1 − σ) w₀ with w₀ = f₀ − D Γ_prev kept in the table where it was
    not known."""
    from biped_contact_sim.control import internal_forces_kernels as ik
    from biped_contact_sim.control import make_behavior, make_controller

    robot = RobotModel.load("humanoid")
    beh = make_behavior("stand", robot, robot.standing_configuration())
    internal = make_controller("wbc", robot, beh, 1e-3).internal
    names = ("left_foot", "right_foot", "left_hand", "right_hand")
    rng = np.random.default_rng(13)
    cases = 0
    for trial in range(120):
        n_s = (2, 2, 3, 4)[trial % 4]
        stance = names[:n_s]
        anchors = rng.uniform(-0.5, 0.5, size=(n_s, 3))
        rotations = np.stack([_rotation(rng) for _ in range(n_s)])
        if n_s == 2:
            k82 = trial % 8 // 4  # both axes of contact 2
            spec, _ = internal.eq82_rows(stance, k82)
            given = np.zeros((0, 3), dtype=np.int64)  # linkage_model builds eq. 82's itself
        else:
            k82 = -1
            spec, _ = internal.general_rows(stance, anchors, rotations, anchors.mean(axis=0))
            given = spec
        m_int = len(spec)
        for mask in range(1, 2 ** n_s - 1):  # every proper subset of the support
            chosen = [k for k in range(n_s) if (mask >> k) & 1]
            contacts, free, preload_free = ik.no_slip_rows(mask, anchors, rotations, given,
                                                           k82, m_int)
            tensions = np.flatnonzero(spec[:, 0] == TENSION)
            assert contacts.tolist() == chosen
            assert free.tolist() == (tensions.tolist() if len(tensions) else list(range(m_int)))
            assert preload_free.tolist() == [*tensions.tolist(), *internal._cop_rows_towards(
                chosen, anchors, rotations).tolist()]
            # unloading: w₀ of the first chosen contact known, the others taken at this step
            known = 1 << chosen[0]
            table = np.zeros((n_s, ik.U_COLS))
            table[:, ik.U_SIGMA] = rng.uniform(0.0, 1.0, n_s)
            table[chosen[0], :6] = rng.normal(size=6)
            before = table.copy()
            f_task, f0 = rng.normal(size=6 * n_s), rng.normal(size=6 * n_s)
            D, tau_prev = rng.normal(size=(6 * n_s, 5)), rng.normal(size=5)
            contacts, targets, free = ik.unloading_rows(mask, known, table, given, k82, f_task,
                                                        f0, tau_prev, D)
            source = f0 - D @ tau_prev
            for i, k in enumerate(chosen):
                w0 = before[k, :6] if k == chosen[0] else source[6 * k:6 * k + 6]
                np.testing.assert_allclose(table[k, :6], w0, rtol=0.0, atol=1e-12)
                np.testing.assert_allclose(targets[i], (1.0 - before[k, ik.U_SIGMA]) * w0,
                                           rtol=0.0, atol=1e-12)
            own = np.flatnonzero((spec[:, 0] != MOMENT) | np.isin(spec[:, 1], chosen))
            assert contacts.tolist() == chosen and free.tolist() == own.tolist()
            cases += 1
    assert cases > 300


@pytest.mark.parametrize(("scenario", "steps", "sets"),
                         [("stand", 800, {"contacts": "points"}),
                          ("walk", 800, {"contacts": "points"}),
                          ("lean_on_table", 2600, {})])
def test_internal_force_law_along_a_wbc_run(scenario, steps, sets):
    """``InternalForces.command`` with its compiled kernels (the law, the no-slip reference)
    and a twin with their numpy forms, both after the numpy stages of ``wbc`` (the compiled
    step runs the law inside its one call: ``test_wbc_compiled``), fed the same measurements
    along a run (the twin's integral follows its own law): the same torques and internal
    forces to 1e-10; ``lean_on_table`` reaches its no-slip hand."""
    from biped_contact_sim.session.builder import build
    from biped_contact_sim.session.config import SimConfig

    built = build(SimConfig.from_sets(scenario, "penalty_fl", "wbc", sets=sets))
    sim, control = built.sim, built.control
    twin = build(SimConfig.from_sets(scenario, "penalty_fl", "wbc", sets=sets)).control
    control.controller.compiled = twin.controller.compiled = False
    twin.controller.internal.compiled = False
    assert control.controller.internal.compiled
    checked = no_slip = 0
    for _ in range(steps):
        twin.wrenches = control.wrenches
        tau, tau_ref = control(sim.t, sim.q, sim.v), twin(sim.t, sim.q, sim.v)
        np.testing.assert_allclose(tau, tau_ref, rtol=0.0,
                                   atol=1e-10 * max(1.0, np.abs(tau_ref).max()))
        for key in ("f_int_ref", "f_int_cmd", "f_int", "int_integral"):
            if control.info.get(key) is not None:
                np.testing.assert_allclose(control.info[key], twin.info[key], rtol=0.0,
                                           atol=1e-9, equal_nan=True)
                checked += 1
        no_slip += "left_hand" in control.info["stance"]
        q_prev = sim.q
        control.observe(q_prev, sim.step(tau))
    assert checked > 1000  # the law ran, with measurements, all along
    assert scenario != "lean_on_table" or no_slip > 100


@pytest.mark.parametrize("robot_name", ["biped3d", "humanoid"])
def test_frame_rows_from_joint_jacobians_against_pinocchio(robot_name):
    """``wbc_kernels.frame_rows`` (a point's Jacobian, classical acceleration at v̇ = 0 and
    velocity from computeAllTerms' J and J̇) equals pinocchio's LOCAL_WORLD_ALIGNED frame
    Jacobian, classical acceleration and velocity transported to the point, on random
    states, for every contact body at its origin and at an offset; a robot with a composite
    (planar) base joint, whose bias acceleration J̇ v misses, is refused."""
    from biped_contact_sim.control import wbc_kernels as wk
    from biped_contact_sim.control.wbc_plan import drift_from_jacobians
    from biped_contact_sim.control.wbc_stages import point_terms

    robot = RobotModel.load(robot_name)
    model, data = robot.model, robot.create_data()
    assert drift_from_jacobians(model)
    rng = np.random.default_rng(9)
    for _ in range(4):
        q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
        q[3:7] /= np.linalg.norm(q[3:7])
        v = rng.normal(size=model.nv)
        pin.computeAllTerms(model, data, q, v)
        pin.updateFramePlacements(model, data)
        for body in robot.contact_bodies:
            mask = np.zeros(model.nv, dtype=bool)
            for j in model.supports[model.frames[body.frame_id].parentJoint]:
                if j > 0:
                    mask[model.idx_vs[j]:model.idx_vs[j] + model.nvs[j]] = True
            for r in (np.zeros(3), rng.normal(size=3) * 0.1):
                oMf = data.oMf[body.frame_id]
                p = oMf.translation + r
                J6, g6, vel = np.empty((6, model.nv)), np.empty(6), np.empty(6)
                wk.frame_rows(data.J, data.dJ, mask, v, p, J6, g6, vel)
                J_ref, g_ref, vel_ref = point_terms(model, data, body.frame_id, r)
                np.testing.assert_allclose(J6, J_ref, atol=1e-12)
                np.testing.assert_allclose(g6, g_ref, atol=1e-10 * max(1.0, np.abs(g_ref).max()))
                np.testing.assert_allclose(vel, vel_ref, atol=1e-12)
    assert not drift_from_jacobians(RobotModel.load("planar_biped").model)
