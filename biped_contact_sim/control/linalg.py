"""Small dense solves of the controllers: the numpy references of the compiled ones.

The control laws (docs/methods.md §4.1–4.2) invert three kinds of symmetric matrices:

* positive definite by construction, e.g. the inverse operational-space inertia
  Λ_s⁻¹ = J_s A⁻¹ J_sᵀ of a full-row-rank support Jacobian (Sentis et al. eq. 21):
  ``cholesky_reference`` (LAPACK ``dpotrf``, then ``dpotrs`` solves), the eigen-decomposition
  pseudo-inverse ``pinv_psd`` for a singular support (counted by the caller);
* positive *semi*-definite with a rank the physics fixes, e.g. Φ* = U N_s A⁻¹ (U N_s)ᵀ
  (eq. 29), of rank n − 6(n_s − 1) with n_s surface contacts (its null space is spanned by
  the torques that only change internal forces, eqs. 32–34): ``psd_factor_reference``, a pivoted
  Cholesky factorisation Φ = G Gᵀ with G of full column rank, which reveals the rank with a
  relative cut-off (the gap is structural: ~1e-16 against O(1)) and from which Φ⁺ follows
  exactly: Φ⁺ = T Tᵀ with T = G (GᵀG)⁻¹ (``whitening_reference``);
* matrices that lose rank continuously as the robot moves — a task's Λ*⁻¹ = J* Φ* J*ᵀ as it
  becomes dependent on the tasks above it (eq. 30), the internal forces' A L* Aᵀ (eq. 42):
  the damped solve of ``damped_factors_reference`` (squared singular values floored, continuous in
  the matrix).

Each function that has a compiled twin (``control.linalg_kernels``) is
its reference: same arguments, same results to rounding, and the tests compare them. The
LAPACK wrappers of ``scipy.linalg.lapack`` are called directly: numpy's ``linalg`` costs
~20 µs per call on 6×6 to 14×14 matrices, mostly argument handling, against 3–5 µs here.
"""

from __future__ import annotations

from functools import cache

import numpy as np
from scipy.linalg import lapack

from biped_contact_sim.control.linalg_kernels import NULL_FLOOR

_potrf, _potrs = lapack.dpotrf, lapack.dpotrs


@cache
def eye(n: int) -> np.ndarray:
    """A cached, read-only n × n identity (np.eye costs ~3 µs a call)."""
    out = np.eye(n)
    out.flags.writeable = False
    return out


def cholesky_reference(X: np.ndarray, rcond: float,
                       scale: float | None = None) -> np.ndarray | None:
    """Lower Cholesky factor C of a symmetric positive definite X (X = C Cᵀ), or None.

    None when X is not numerically positive definite: ``dpotrf`` fails, or a pivot C_ii² is
    below ``rcond · scale`` (default scale: max X_ii; the matrix is then too close to
    singular for the law's relative cut-off, and the caller takes the pseudo-inverse
    ``pinv_psd``). Only the lower triangle of X is read; the strict upper triangle of C is not
    zeroed (``solve`` ignores it). The compiled twin is ``solvers.linalg_kernels.cholesky``
    (shared with the contact models).
    """
    C, info = _potrf(X, lower=1)
    if info != 0:
        return None
    # tolist + builtins: numpy's reductions cost ~3 µs each on these few numbers
    if scale is None:
        scale = max(X.diagonal().tolist())
    if min(C.diagonal().tolist()) ** 2 < rcond * scale:
        return None
    return C


def solve(C: np.ndarray, B: np.ndarray) -> np.ndarray:
    """X⁻¹ B from the lower Cholesky factor C of X (``cholesky_reference``)."""
    return _potrs(C, B, lower=1)[0]


def pinv_psd(X: np.ndarray, rcond: float, scale: float | None = None) -> tuple[np.ndarray, int]:
    """Moore–Penrose pseudo-inverse of a symmetric PSD matrix by eigen-decomposition.

    Eigenvalues below ``rcond · scale`` (default scale: the largest eigenvalue) count as zero.
    Returns (X⁺, rank).
    """
    w, V = np.linalg.eigh(0.5 * (X + X.T))
    top = (w[-1] if w.size else 0.0) if scale is None else scale
    keep = w > rcond * max(top, 1e-300)
    Vk = V[:, keep]
    return (Vk / w[keep]) @ Vk.T, int(keep.sum())


def psd_factor_reference(X: np.ndarray, rcond: float) -> np.ndarray:
    """G (n × r) of full column rank with X = G Gᵀ, for a symmetric PSD X (pivoted Cholesky).

    Complete pivoting (LAPACK ``dpstrf``'s rule, written out so that the compiled
    ``linalg_kernels.psd_factor`` takes the same pivots): at each step the largest remaining
    diagonal entry of the Schur complement is the pivot, its column scaled by its square root
    is the next column of G, and the factorisation stops at the first pivot not above
    ``rcond · max X_ii``: r is the numerical rank. Only the lower triangle of X is read.
    """
    n = X.shape[0]
    W = np.tril(X) + np.tril(X, -1).T
    scale = max(W.diagonal().tolist()) if n else 0.0
    if scale <= 0.0:
        return np.zeros((n, 0))
    tol = rcond * scale
    G = np.zeros((n, n))
    done = np.zeros(n, bool)
    r = 0
    for _ in range(n):
        diag = np.where(done, -np.inf, W.diagonal())
        p = int(np.argmax(diag))
        if not diag[p] > tol:
            break
        done[p] = True
        col = np.where(done, 0.0, W[:, p] / np.sqrt(diag[p]))
        col[p] = np.sqrt(diag[p])
        G[:, r] = col
        W -= np.outer(col, col) * np.outer(~done, ~done)
        r += 1
    return G[:, :r].copy()


def whitening_reference(G: np.ndarray) -> np.ndarray:
    """T = G (GᵀG)⁻¹ for G of full column rank (``psd_factor_reference``'s), so that (G Gᵀ)⁺ = T Tᵀ,
    Tᵀ (G Gᵀ) T = I and range T = range G."""
    C, info = _potrf(np.dot(G.T, G), lower=1)
    if info != 0:
        return np.zeros_like(G)
    return solve(C, G.T).T


def constrained_space_reference(Minv: np.ndarray, h: np.ndarray, J_s: np.ndarray,
                                gamma_s: np.ndarray,
                      vi, rcond: float) -> tuple:
    """Constrained dynamics of a support (Sentis et al. eqs. 20–26) and the factor of Φ*
    (eq. 29); the reference of the compiled ``linalg_kernels.constrained_space``.

    With A⁻¹ = ``Minv``, h = b + g, the support Jacobian J_s and drift γ_s = J̇_s v, and U the
    selection of the actuated coordinates v[vi]: Λ_s⁻¹ = J_s A⁻¹ J_sᵀ (Cholesky when positive
    definite, i.e. independent contacts; else the pseudo-inverse, counted), J̄_sᵀ = Λ_s J_s A⁻¹,

        D = J̄_sᵀ Uᵀ,  f0 = J̄_sᵀ h − Λ_s γ_s     (f = f0 − D Γ, eq. 20 in our sign),
        B = N_s A⁻¹ Uᵀ,  a0 = −N_s A⁻¹ h − J̄_s γ_s   (v̇ = B Γ + a0, eq. 25),

    Φ* = U B = G Gᵀ (``psd_factor_reference``) and T = G (GᵀG)⁻¹ (``whitening_reference``), BT = B
    T.

    Returns:
        (D, B, a0, f0, G, T, BT, fallbacks); D and f0 are None without support.
    """
    fallbacks = 0
    Mh = np.dot(Minv, h)
    D = f0 = None
    if J_s.shape[0]:
        MJt = np.dot(Minv, J_s.T)
        C = cholesky_reference(np.dot(J_s, MJt), rcond)
        if C is not None:
            JbarT = solve(C, MJt.T)
            Lg = solve(C, gamma_s)
        else:
            fallbacks += 1
            Lam_s = pinv_psd(np.dot(J_s, MJt), rcond)[0]
            JbarT = np.dot(Lam_s, MJt.T)
            Lg = np.dot(Lam_s, gamma_s)
        D = JbarT[:, vi]
        B = Minv[:, vi] - np.dot(JbarT.T, MJt[vi].T)  # J_s A⁻¹ Uᵀ = (U A⁻¹ J_sᵀ)ᵀ
        a0 = np.dot(JbarT.T, np.dot(J_s, Mh) - gamma_s) - Mh
        f0 = np.dot(JbarT, h) - Lg
    else:
        B = Minv[:, vi]
        a0 = -Mh
    G = psd_factor_reference(B[vi], rcond)
    T = whitening_reference(G)
    return D, B, a0, f0, G, T, np.dot(B, T), fallbacks


def damped_factors_reference(Jt: np.ndarray, c: float, c_null: float) -> tuple:
    """The damped inverse of a matrix J_t (m × r) from its thin SVD J_t = U diag(s) Vᵀ.

    * solve: J_tᵀ a(J_t J_tᵀ) e = V diag(s a(s²)) Uᵀ e with a(λ) = 1/max(λ, c) — the exact
      minimum-norm solution J_t⁺ e while every s² ≥ c, a capped gain s/c on the directions
      below the floor, vanishing at s = 0;
    * null space: the part of each direction the level takes from the levels below,
      w(s) = min(s²/c_null, 1), as the factor 1 − √(1 − w) of ``damped_level_reference``'s update —
      the whole direction unless s² < c_null.

    Both are continuous functions of the singular values, so the solves built from them are
    continuous in J_t, unlike a Cholesky solve that switches to a truncated pseudo-inverse
    when a pivot crosses a cut-off. With c_null ≪ c a direction the level solves with the
    damped gain stays out of reach of the levels below: were it released as it is damped,
    a lower level would take it up at full gain and undo the level's motion along it.

    Returns:
        (U (m, k), V (r, k), s a(s²), 1 − √(1 − w(s)), damped): k = min(m, r); damped is
        True where some s² < c.
    """
    U, sv, Vt = np.linalg.svd(Jt, full_matrices=False)
    lam = sv * sv
    a = sv / np.maximum(lam, c)
    x = np.minimum(lam / c_null, 1.0)
    b = x / (1.0 + np.sqrt(1.0 - x))
    return U, Vt.T, a, b, bool((lam < c).any())


def damped_level_reference(Jk: np.ndarray, ek: np.ndarray, Z: np.ndarray, y: np.ndarray,
                           force: bool,
                 update: bool, damping: float) -> bool:
    """One priority level of ``prioritized_reference``, updating y and Z in place.

    With N = Z Zᵀ the freedom the levels above leave, J_t = Ĵ_k Z and the floors
    c = ``damping`` · σ_k, c_null = ``NULL_FLOOR`` · σ_k, σ_k = max_i ‖(Ĵ_k)_i‖² (the task's
    own scale, so that a task the levels above have nearly used up is damped rather than
    amplified), by ``damped_factors_reference``:

        y ← y + Z J_tᵀ a(J_t J_tᵀ) (e_k − Ĵ_k y),     Z ← Z − Z V diag(1 − √(1 − w)) Vᵀ.

    When every singular value is above the floors this is the exact recursion of
    eqs. 30–31 (y += (Ĵ_k N)⁺ e, N ← N − (Ĵ_k N)⁺(Ĵ_k N), Z then the projector N itself);
    a direction below c is solved with a capped gain; one below c_null (numerically taken by
    the levels above) leaves N only in part, N ← Z (I − V diag(w) Vᵀ) Zᵀ: N stays symmetric
    positive semi-definite and continuous in the data. ``force``: a force row,
    y ← y + Z J_tᵀ e_k (the operational forces e_k through J*ᵀ), then the same update of Z.

    Returns:
        whether the damping acted (a singular value below c).
    """
    m = Jk.shape[0]
    scale = max(np.einsum("ij,ij->i", Jk, Jk).tolist()) if m else 0.0
    if scale <= 0.0:
        return False
    Jt = np.dot(Jk, Z)
    U, V, a, b, damped = damped_factors_reference(Jt, damping * scale, NULL_FLOOR * scale)
    ZV = np.dot(Z, V)
    if force:
        y += np.dot(Z, np.dot(Jt.T, ek))
    else:
        y += np.dot(ZV, a * np.dot(U.T, ek - np.dot(Jk, y)))
    if update:
        Z -= np.dot(ZV * b, V.T)
    return damped


def prioritized_reference(J_up: np.ndarray, e_up: np.ndarray, sizes, J_last: np.ndarray,
                e_last: np.ndarray, damping: float, J_force: np.ndarray | None = None,
                F_force: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """Strict task priorities in whitened coordinates (Sentis et al. eqs. 30–31), damped.

    With Φ* = G Gᵀ (``psd_factor_reference``) and Γ = T y (``whitening_reference``), a task ẍ_k =
    Φ_k Γ + c_k reads ẍ_k = Ĵ_k y + c_k, Ĵ_k = Φ_k T, and the Φ*-weighted (dynamically consistent)
    quantities of eqs. 30–31 become Euclidean ones: Λ*_{k|prec} = (Ĵ_k N Ĵ_kᵀ)⁻¹ and N*_prec
    the projector N on the y-space the tasks above leave free. Level by level
    (``damped_level_reference``), highest priority first: the upper levels, the force rows (the
    force part of a unified force/position task, §V-A: their operational forces act through
    J*ᵀ_{f|prec} F in the null space of the motion tasks, which then loses the force
    directions so that the last level cannot push along them), the last level (the joint
    posture).

    Each level's solve is the damped inverse of ``damped_factors_reference``: the exact one while
    the task is independent of those above it (every eigenvalue of Ĵ_k N Ĵ_kᵀ above
    ``damping`` times the task's scale), a capped gain on the directions below — continuous in
    the data, where a Cholesky solve with a truncated pseudo-inverse fallback stepped the
    torques by 30–50 N·m when a pivot crossed its cut-off (a torso task nearly dependent on
    the tasks above it, ``multicontact``).

    Args:
        J_up: (m, r) the upper levels' Ĵ_k stacked, highest priority first.
        e_up: (m,) their ẍ_k,des − c_k.
        sizes: rows of each upper level (Σ = m).
        J_last, e_last: the last level's Ĵ (m_last, r) and ẍ_des − c.
        damping: relative floor of the damped solves.
        J_force, F_force: force rows Ĵ_f (m_f, r) and their operational forces (m_f,).

    Returns:
        (y (r,), number of levels above the last where the damping acted).
    """
    r = J_last.shape[1]
    y = np.zeros(r)
    Z = np.eye(r)
    damped = 0
    i = 0
    for m in sizes:
        damped += damped_level_reference(J_up[i:i + m], e_up[i:i + m], Z, y, False, True, damping)
        i += m
    if J_force is not None and len(J_force):
        damped_level_reference(J_force, F_force, Z, y, True, True, damping)
    # the last level is the least-squares one: its rows beyond the freedom left are expected
    # to be unreachable, so its damping is not counted
    damped_level_reference(J_last, e_last, Z, y, False, False, damping)
    return y, damped


def internal_force_torques_reference(W_int: np.ndarray, D: np.ndarray, G: np.ndarray, T: np.ndarray,
                           f_int_cmd: np.ndarray, f_task: np.ndarray,
                           damping: float) -> tuple[np.ndarray, bool]:
    """Γ_int of Sentis et al. eq. 42 and whether the damping acted.

    Γ_int = (J*ᵀ_{i|l})⁺ (F_int,cmd − F_int,{t,p} + μ_i + p_i), with (our sign, f = f₀ − D Γ)
    J*ᵀ_{i|l} = −A L*, A = W_int J̄_sᵀ Uᵀ = W_int D (eq. 39), L* = I − G Tᵀ the orthogonal
    projector on the null space of Φ* = G Gᵀ (eq. 33) and F_int,{t,p} − μ_i − p_i = W_int f_task
    the internal forces of the task torques (eqs. 40–41). A L* has full row rank when every
    internal force is controllable (the paper's condition), so its pseudo-inverse is
    L* Aᵀ (A L* Aᵀ)⁻¹ (A L* Aᵀ = (A L*)(A L*)ᵀ, L* being a symmetric projector), here the damped
    inverse of ``damped_factors_reference`` with the floor ``damping`` · max diag: exact while the
    internal forces are controllable, continuous when one becomes nearly uncontrollable.
    """
    A = np.dot(W_int, D)
    AL = A - np.dot(np.dot(A, G), T.T)
    rhs = f_int_cmd - np.dot(W_int, f_task)
    scale = max(np.einsum("ij,ij->i", AL, AL).tolist()) if len(AL) else 0.0
    if scale <= 0.0:
        return np.zeros(D.shape[1]), False
    U, V, a, _, damped = damped_factors_reference(AL, damping * scale, NULL_FLOOR * scale)
    return -np.dot(V, a * np.dot(U.T, rhs)), damped


def task_torques_reference(B: np.ndarray, G: np.ndarray, T: np.ndarray, D: np.ndarray | None,
                 f0: np.ndarray | None, a0: np.ndarray, vi, J_up: np.ndarray, e_up: np.ndarray,
                 sizes, i_am: int, w_am: np.ndarray | None, e_am: float, e_post: np.ndarray,
                 J_force: np.ndarray, F_force: np.ndarray, damping: float
                 ) -> tuple[np.ndarray, int]:
    """Task torques Γ = T y of the prioritized tasks (Sentis et al. eqs. 27–31).

    With v̇ = B Γ + v̇₀ (``constrained_space_reference``), Φ* = G Gᵀ, Γ = T y: the operational tasks
    ẍ_k = J_k v̇ + J̇_k v (rows of ``J_up``, ``e_up`` = ẍ_k,des − J̇_k v) become
    ẍ_k = Ĵ_k y + c_k with Ĵ_k = J_k B T (eq. 29 whitened) and e_k = e_up − J_k v̇₀; the
    angular-momentum row ``i_am`` (≥ 0 when present) is the force row w_am f with
    f = f0 − D Γ: Ĵ = −w_am D T, e = e_am − w_am·f0; the joint posture (last level) has
    Ĵ = U B T = G (Φ* T = G since Gᵀ T = I) and e_post − U v̇₀; force rows J_force B T with the
    operational forces −F. Then ``prioritized_reference``.

    Returns:
        (Γ (n,), damped levels of ``prioritized_reference``).
    """
    BT = np.dot(B, T)
    Jh = np.dot(J_up, BT)
    e = e_up - np.dot(J_up, a0)
    if i_am >= 0:
        Jh[i_am] = -np.dot(np.dot(w_am, D), T)
        e[i_am] = e_am - np.dot(w_am, f0)
    y, damped = prioritized_reference(Jh, e, sizes, G, e_post - a0[vi], damping, np.dot(J_force,
                                      BT),
                            -F_force)
    return np.dot(T, y), damped


def sole_centre_allocation_reference(lam0: np.ndarray, Jb: np.ndarray, null_basis: np.ndarray,
                           rotations: np.ndarray, centres: np.ndarray, rho: float,
                           shares: np.ndarray | None, rows, force_rows) -> np.ndarray:
    """Coefficients c of the internal wrenches of ``ctc``'s allocation (its module docstring,
    step 4; the reference of the compiled ``linalg_kernels.sole_centre_allocation``).

    λ = argmin ‖W T λ − t‖ subject to J_bᵀ λ = J_bᵀ λ₀, T moving each foot's wrench to its sole
    centre d_k = R_k c_k (``centres`` in the sole frames), W weighing moments by 1/ρ and each
    foot by 1/α_k (``shares``; 1 when None), t the shares' target (α_k F on the force rows).
    With μ = W T λ, B = J_bᵀ (W T)⁻¹ and (W T)⁻¹ block-diagonal α_k [[I, 0], [[d_k]×, ρ I]]
    (rows ``rows`` of the 6 wrench rows; ``force_rows`` their force components):
    μ = t + Bᵀ (B Bᵀ)⁻¹ (J_bᵀ λ₀ − B t), c = null_basisᵀ ((W T)⁻¹ μ − λ₀).
    """
    nr, nk = len(rows), len(rotations)
    n = nr * nk
    Winv = np.zeros((n, n))
    target = np.zeros(n)
    total = sum(lam0[nr * k:nr * (k + 1)][force_rows] for k in range(nk))
    for k in range(nk):
        Ti = np.eye(6)  # (T_k/ρ)⁻¹ of m^c = m − d × f scaled by 1/ρ
        if rho > 0.0:
            d = np.dot(rotations[k], centres[k])
            Ti[3:, :3] = [[0.0, -d[2], d[1]], [d[2], 0.0, -d[0]], [-d[1], d[0], 0.0]]
            Ti[3:, 3:] *= rho
        block = Ti if nr == 6 else Ti[np.ix_(rows, rows)]
        if shares is not None:
            block = block * shares[k]
            target[nr * k + np.array(force_rows)] = total
        Winv[nr * k:nr * (k + 1), nr * k:nr * (k + 1)] = block
    B = np.dot(Jb.T, Winv)
    C = cholesky_reference(np.dot(B, B.T), 1e-14)
    if C is None:  # cannot happen for two feet; keep the least-squares form
        WT = np.linalg.inv(Winv)
        return -np.linalg.lstsq(WT @ null_basis, WT @ lam0 - target, rcond=None)[0]
    mu = target + np.dot(B.T, solve(C, np.dot(Jb.T, lam0) - np.dot(B, target)))
    return np.dot(null_basis.T, np.dot(Winv, mu) - lam0)


def closed_chain_reference(Js: np.ndarray, gamma: np.ndarray, a_joints: np.ndarray, vi, nb: int,
                 rcond: float) -> tuple:
    """``ctc``'s closed-chain accelerations (``ctc_dynamics.constrained_inverse_dynamics``, module
    docstring step 3; the reference of the compiled ``linalg_kernels.closed_chain``): with the
    complete QR factorisation J_b = [Q_1 Q_2][R; 0] (LAPACK ``dgeqrf``/``dorgqr``) and
    A = Q_2ᵀ J_a, the joint accelerations q̈_a = q̈_aᵈ + Aᵀ (A Aᵀ)⁻¹ (b − A q̈_aᵈ),
    b = −Q_2ᵀ γ (A Aᵀ by Cholesky, ``cholesky_reference`` with cut-off rcond²), and the base's
    R v̇_b = Q_1ᵀ(−γ − J_a q̈_a) (``dtrtrs``).

    Returns:
        (ok, v̇_b, q̈_a, Q, R): ok False, the rest None, when J_b (a diagonal entry of R at or
        below rcond · the largest) or A Aᵀ is not numerically of full rank.
    """
    k_rows = Js.shape[0]
    Jb, Ja = Js[:, :nb], Js[:, vi]
    qr, tau_h, _, _ = lapack.dgeqrf(Jb)
    R = qr[:nb]  # dtrtrs reads the upper triangle only
    d = np.abs(R.diagonal())
    if not d.min() > rcond * d.max():
        return False, None, None, None, None
    Q = lapack.dorgqr(np.concatenate([qr, np.zeros((k_rows, k_rows - nb))], 1), tau_h)[0]
    A = np.dot(Q[:, nb:].T, Ja)
    C = cholesky_reference(np.dot(A, A.T), rcond * rcond)
    if C is None:
        return False, None, None, None, None
    b = -np.dot(Q[:, nb:].T, gamma)
    a_vi = a_joints + np.dot(A.T, solve(C, b - np.dot(A, a_joints)))
    a_b = lapack.dtrtrs(R, np.dot(Q[:, :nb].T, -gamma - np.dot(Ja, a_vi)))[0]
    return True, a_b, a_vi, Q, np.triu(R)


__all__ = ["NULL_FLOOR", "cholesky_reference", "closed_chain_reference",
           "constrained_space_reference", "damped_factors_reference", "damped_level_reference",
           "eye", "internal_force_torques_reference", "pinv_psd", "prioritized_reference",
           "psd_factor_reference", "sole_centre_allocation_reference", "solve",
           "task_torques_reference", "whitening_reference"]
