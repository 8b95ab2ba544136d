"""Small dense solves of the controllers: Cholesky where the matrix is positive definite.

The control laws (docs/methods.md §4.1–4.2) invert three kinds of symmetric matrices:

* positive definite by construction, e.g. the inverse operational-space inertia
  Λ_s⁻¹ = J_s A⁻¹ J_sᵀ of a full-row-rank support Jacobian (Sentis et al. eq. 21), or a task's
  Λ*⁻¹ = J* Φ* J*ᵀ when the task is not in conflict with the tasks above it (eq. 30):
  ``cholesky`` (LAPACK ``dpotrf``, then ``dpotrs`` solves);
* positive *semi*-definite with a rank the physics fixes, e.g. Φ* = U N_s A⁻¹ (U N_s)ᵀ
  (eq. 29), of rank n − 6(n_s − 1) with n_s surface contacts (its null space is spanned by
  the torques that only change internal forces, eqs. 32–34): ``psd_factor``, a pivoted
  Cholesky factorisation (``dpstrf``) Φ = G Gᵀ with G of full column rank, which reveals the
  rank with the same relative cut-off as an eigenvalue test and from which Φ⁺ follows
  exactly: Φ⁺ = T Tᵀ with T = G (GᵀG)⁻¹ (``psd_whitening``);
* whatever is left — a task that conflicts with the tasks above it, a singular support —
  goes to the eigen-decomposition pseudo-inverse ``pinv_psd`` (the reference the faster
  paths reproduce when their matrix is well conditioned), and the caller counts it.

The LAPACK wrappers of ``scipy.linalg.lapack`` are called directly: numpy's ``linalg`` costs
~20 µs per call on 6×6 to 14×14 matrices, mostly argument handling, against 3–5 µs here.
"""

from __future__ import annotations

from functools import cache

import numpy as np
from scipy.linalg import lapack

_potrf, _potrs, _pstrf = lapack.dpotrf, lapack.dpotrs, lapack.dpstrf


@cache
def eye(n: int) -> np.ndarray:
    """A cached, read-only n × n identity (np.eye costs ~3 µs a call)."""
    out = np.eye(n)
    out.flags.writeable = False
    return out


@cache
def _lower_mask(n: int, r: int) -> np.ndarray:
    out = np.tril(np.ones((n, r)))
    out.flags.writeable = False
    return out


def cholesky(X: np.ndarray, rcond: float, scale: float | None = None) -> np.ndarray | None:
    """Lower Cholesky factor C of a symmetric positive definite X (X = C Cᵀ), or None.

    None when X is not numerically positive definite: ``dpotrf`` fails, or a pivot C_ii² is
    below ``rcond · scale`` (default scale: max X_ii; the matrix is then too close to
    singular for the law's relative cut-off, and the caller takes the pseudo-inverse
    ``pinv_psd``). Only the lower triangle of X is read; the strict upper triangle of C is not
    zeroed (``solve`` ignores it).
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
    """X⁻¹ B from the lower Cholesky factor C of X (``cholesky``)."""
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


def psd_factor(X: np.ndarray, rcond: float) -> np.ndarray:
    """G (n × r) of full column rank with X = G Gᵀ, for a symmetric PSD X (pivoted Cholesky).

    ``dpstrf`` factors Pᵀ X P = L Lᵀ with complete pivoting and stops at the first pivot below
    ``rcond · max X_ii``: r is the numerical rank and G = P L[:, :r]. Only the lower triangle
    of X is read.
    """
    n = X.shape[0]
    scale = max(X.diagonal().tolist()) if n else 0.0
    if scale <= 0.0:
        return np.zeros((n, 0))
    L, piv, rank, _ = _pstrf(X, lower=1, tol=rcond * scale)
    G = np.empty((n, rank))
    # dpstrf leaves the strict upper triangle as it found it; LAPACK pivots are 1-based
    G[piv - 1] = L[:, :rank] * _lower_mask(n, rank)
    return G


def psd_whitening(G: np.ndarray, rcond: float) -> np.ndarray | None:
    """T = G (GᵀG)⁻¹ for G of full column rank, so that (G Gᵀ)⁺ = T Tᵀ, Tᵀ (G Gᵀ) T = I and
    range T = range G; None if GᵀG is not numerically positive definite."""
    C = cholesky(G.T @ G, rcond * rcond)
    if C is None:
        return None
    return solve(C, G.T).T



def constrained_space(Minv: np.ndarray, h: np.ndarray, J_s: np.ndarray, gamma_s: np.ndarray,
                      vi, rcond: float) -> tuple:
    """Constrained dynamics of a support (Sentis et al. eqs. 20–26) and the factor of Φ*
    (eq. 29); the reference of the compiled ``kernels.constrained_space``.

    With A⁻¹ = ``Minv``, h = b + g, the support Jacobian J_s and drift γ_s = J̇_s v, and U the
    selection of the actuated coordinates v[vi]: Λ_s⁻¹ = J_s A⁻¹ J_sᵀ (Cholesky when positive
    definite, i.e. independent contacts; else the pseudo-inverse), J̄_sᵀ = Λ_s J_s A⁻¹,

        D = J̄_sᵀ Uᵀ,  f0 = J̄_sᵀ h − Λ_s γ_s     (f = f0 − D Γ, eq. 20 in our sign),
        B = N_s A⁻¹ Uᵀ,  a0 = −N_s A⁻¹ h − J̄_s γ_s   (v̇ = B Γ + a0, eq. 25),

    Φ* = U B = G Gᵀ (``psd_factor``) and T = G (GᵀG)⁻¹ (``psd_whitening``; eigen-decomposition
    when GᵀG is not numerically PD), BT = B T.

    Returns:
        (D, B, a0, f0, G, T, BT, fallbacks); D and f0 are None without support.
    """
    fallbacks = 0
    Mh = np.dot(Minv, h)
    D = f0 = None
    if J_s.shape[0]:
        MJt = np.dot(Minv, J_s.T)
        C = cholesky(np.dot(J_s, MJt), rcond)
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
    G, T, fallback = factor_phi(B[vi], rcond)
    return D, B, a0, f0, G, T, np.dot(B, T), fallbacks + fallback


def factor_phi(Phi: np.ndarray, rcond: float) -> tuple[np.ndarray, np.ndarray, int]:
    """(G, T, fallbacks) of Φ* = G Gᵀ (``psd_factor``) and T = G (GᵀG)⁻¹ (``psd_whitening``;
    the eigen-decomposition, counted, when GᵀG is not numerically positive definite)."""
    G = psd_factor(Phi, rcond)
    T = psd_whitening(G, rcond)
    if T is not None:
        return G, T, 0
    w, V = np.linalg.eigh(0.5 * (Phi + Phi.T))
    keep = w > rcond * max(w[-1], 1e-300)
    return V[:, keep] * np.sqrt(w[keep]), V[:, keep] / np.sqrt(w[keep]), 1



def prioritized(J_up: np.ndarray, e_up: np.ndarray, sizes, J_last: np.ndarray,
                e_last: np.ndarray, rcond: float, J_force: np.ndarray | None = None,
                F_force: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """Strict task priorities in whitened coordinates (Sentis et al. eqs. 30–31).

    With Φ* = G Gᵀ (``psd_factor``) and Γ = T y (``psd_whitening``), a task
    ẍ_k = Φ_k Γ + c_k reads ẍ_k = Ĵ_k y + c_k, Ĵ_k = Φ_k T, and the Φ*-weighted
    (dynamically consistent) quantities of eqs. 30–31 become Euclidean ones:
    Λ*_{k|prec} = (Ĵ_k N Ĵ_kᵀ)⁻¹ and N*_prec the orthogonal projector N on the y-space the
    tasks above leave free. Level by level, with e_k = ẍ_k,des − c_k − Ĵ_k y,

        y ← y + (Ĵ_k N)⁺ e_k,      N ← N − (Ĵ_k N)⁺ (Ĵ_k N).

    A task with no more rows than free directions (m_k ≤ rank N) uses the row form
    (Ĵ_k N)⁺ = N Ĵ_kᵀ X⁻¹, X = Ĵ_k N Ĵ_kᵀ (m_k × m_k, positive definite unless the task
    conflicts with those above); a taller one (the joint posture at the end) the column form
    (Ĵ_k N)⁺ = (N Ĵ_kᵀ Ĵ_k N + I − N)⁻¹ N Ĵ_kᵀ, whose r × r matrix is positive definite when
    Ĵ_k N has full column rank on range N (adding I − N fills the null space the tasks above
    took, whose pseudo-inverse part is zero). A pivot of X below ``rcond`` times the task's
    own scale, max diag Ĵ_k Ĵ_kᵀ (not X's: a task the levels above have nearly used up has a
    uniformly small X), marks a conflict: X then goes to ``pinv_psd`` with the same cut-off,
    and the level is counted.

    The levels above the last are first solved together: when their stacked Ĵ has full row
    rank (no task conflicts with another), the recursion returns exactly the stack's
    minimum-norm solution y = Ĵᵀ(ĴĴᵀ)⁻¹e (each increment lies in the stack's row space and
    the sum meets every task), with N = I − Ĵᵀ(ĴĴᵀ)⁻¹Ĵ: one Cholesky instead of one per
    level. If the stacked matrix is not numerically positive definite the levels are taken
    one by one.

    Force rows (the force part of a unified force/position task, §V-A) come after the upper
    levels: their operational forces F act through the torques J*ᵀ_{f|prec} F, i.e.
    y ← y + N Ĵ_fᵀ F in the null space N the upper levels leave, which then loses the force
    directions (N ← N − (Ĵ_f N)⁺(Ĵ_f N)) so that the last level cannot push along them.

    Args:
        J_up: (m, r) the upper levels' Ĵ_k stacked, highest priority first.
        e_up: (m,) their ẍ_k,des − c_k.
        sizes: rows of each upper level (Σ = m).
        J_last, e_last: the last level's Ĵ (m_last, r) and ẍ_des − c.
        rcond: relative cut-off of the pseudo-inverse fallback (and of the Cholesky test).
        J_force, F_force: force rows Ĵ_f (m_f, r) and their operational forces (m_f,).

    Returns:
        (y (r,), number of levels that needed the pseudo-inverse fallback).
    """
    r = J_up.shape[1]
    y = np.zeros(r)
    N = None  # identity until a task has taken directions
    free = r
    fallbacks = 0
    levels = []
    if 0 < len(J_up) <= r:
        C = cholesky(np.dot(J_up, J_up.T), rcond)
        if C is not None:
            y = np.dot(J_up.T, solve(C, e_up))
            N = eye(r) - np.dot(J_up.T, solve(C, J_up))
            free -= len(J_up)
        else:
            levels = _split(J_up, e_up, sizes)
    elif len(J_up):
        levels = _split(J_up, e_up, sizes)
    if J_force is not None and len(J_force):
        levels.append((J_force, None))
    levels.append((J_last, e_last))
    last = len(levels) - 1
    for k, (Jk, ek) in enumerate(levels):
        if free == 0:
            break
        m = Jk.shape[0]
        scale = max(np.einsum("ij,ij->i", Jk, Jk).tolist())
        Jp = Jk if N is None else np.dot(Jk, N)
        if ek is None:  # force rows: torques J*ᵀ F, then their directions leave N
            y += np.dot(Jp.T, F_force)
            Xr, rank = pinv_psd(np.dot(Jp, Jp.T), rcond, scale)
            P = np.dot(Jp.T, np.dot(Xr, Jp))
            N = eye(r) - P if N is None else N - P
            free -= rank
            continue
        e = ek - np.dot(Jk, y)
        if m <= free:
            C = cholesky(np.dot(Jp, Jp.T), rcond, scale)
            if C is not None:
                y += np.dot(Jp.T, solve(C, e))
                if k < last:
                    P = np.dot(Jp.T, solve(C, Jp))
                    N = eye(r) - P if N is None else N - P
                free -= m
                continue
        else:
            X = np.dot(Jp.T, Jp)
            if N is not None:
                X += eye(r) - N
            C = cholesky(X, rcond, scale)
            if C is not None:
                y += solve(C, np.dot(Jp.T, e))
                free = 0
                continue
        fallbacks += 1
        Xr, rank = pinv_psd(np.dot(Jp, Jp.T), rcond, scale)
        y += np.dot(Jp.T, np.dot(Xr, e))
        if k < last:
            P = np.dot(Jp.T, np.dot(Xr, Jp))
            N = eye(r) - P if N is None else N - P
        free -= rank
    return y, fallbacks


def internal_force_torques(W_int: np.ndarray, D: np.ndarray, G: np.ndarray, T: np.ndarray,
                           f_int_cmd: np.ndarray, f_task: np.ndarray) -> tuple[np.ndarray, int]:
    """Γ_int of Sentis et al. eq. 42 and whether the pseudo-inverse fallback was needed.

    Γ_int = (J*ᵀ_{i|l})⁺ (F_int,cmd − F_int,{t,p} + μ_i + p_i), with (our sign, f = f₀ − D Γ)
    J*ᵀ_{i|l} = −A L*, A = W_int J̄_sᵀ Uᵀ = W_int D (eq. 39), L* = I − G Tᵀ the orthogonal
    projector on the null space of Φ* = G Gᵀ (eq. 33) and F_int,{t,p} − μ_i − p_i = W_int f_task
    the internal forces of the task torques (eqs. 40–41). A L* has full row rank when every
    internal force is controllable (the paper's condition), so its pseudo-inverse is
    L* Aᵀ (A L* Aᵀ)⁻¹: a Cholesky solve; otherwise the SVD pseudo-inverse.
    """
    A = np.dot(W_int, D)
    AL = A - np.dot(np.dot(A, G), T.T)
    rhs = f_int_cmd - np.dot(W_int, f_task)
    C = cholesky(np.dot(AL, A.T), 1e-10)
    if C is not None:
        return -np.dot(AL.T, solve(C, rhs)), 0
    return -np.dot(np.linalg.pinv(AL, rcond=1e-10), rhs), 1


def task_torques(B: np.ndarray, G: np.ndarray, T: np.ndarray, D: np.ndarray | None,
                 f0: np.ndarray | None, a0: np.ndarray, vi, J_up: np.ndarray, e_up: np.ndarray,
                 sizes, i_am: int, w_am: np.ndarray | None, e_am: float, e_post: np.ndarray,
                 J_force: np.ndarray, F_force: np.ndarray, rcond: float
                 ) -> tuple[np.ndarray, int]:
    """Task torques Γ = T y of the prioritized tasks (Sentis et al. eqs. 27–31): the reference
    of the compiled ``kernels.task_torques``.

    With v̇ = B Γ + v̇₀ (``constrained_space``), Φ* = G Gᵀ, Γ = T y: the operational tasks
    ẍ_k = J_k v̇ + J̇_k v (rows of ``J_up``, ``e_up`` = ẍ_k,des − J̇_k v) become
    ẍ_k = Ĵ_k y + c_k with Ĵ_k = J_k B T (eq. 29 whitened) and e_k = e_up − J_k v̇₀; the
    angular-momentum row ``i_am`` (≥ 0 when present) is the force row w_am f with
    f = f0 − D Γ: Ĵ = −w_am D T, e = e_am − w_am·f0; the joint posture (last level) has
    Ĵ = U B T = G (Φ* T = G since Gᵀ T = I) and e_post − U v̇₀; force rows J_force B T with the
    operational forces −F. Then ``prioritized``.

    Returns:
        (Γ (n,), fallbacks of ``prioritized``).
    """
    BT = np.dot(B, T)
    Jh = np.dot(J_up, BT)
    e = e_up - np.dot(J_up, a0)
    if i_am >= 0:
        Jh[i_am] = -np.dot(np.dot(w_am, D), T)
        e[i_am] = e_am - np.dot(w_am, f0)
    y, fallbacks = prioritized(Jh, e, sizes, G, e_post - a0[vi], rcond, np.dot(J_force, BT),
                               -F_force)
    return np.dot(T, y), fallbacks


def sole_centre_allocation(lam0: np.ndarray, Jb: np.ndarray, null_basis: np.ndarray,
                           rotations: np.ndarray, centres: np.ndarray, rho: float,
                           shares: np.ndarray | None, rows, force_rows) -> np.ndarray:
    """Coefficients c of the internal wrenches of ``ctc``'s allocation (its module docstring,
    step 4; the reference of the compiled ``kernels.sole_centre_allocation``).

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
    C = cholesky(np.dot(B, B.T), 1e-14)
    if C is None:  # cannot happen for two feet; keep the least-squares form
        WT = np.linalg.inv(Winv)
        return -np.linalg.lstsq(WT @ null_basis, WT @ lam0 - target, rcond=None)[0]
    mu = target + np.dot(B.T, solve(C, np.dot(Jb.T, lam0) - np.dot(B, target)))
    return np.dot(null_basis.T, np.dot(Winv, mu) - lam0)


def closed_chain(Js: np.ndarray, gamma: np.ndarray, a_joints: np.ndarray, vi, nb: int,
                 rcond: float) -> tuple:
    """``ctc``'s closed-chain accelerations (``ctc.constrained_inverse_dynamics``, module
    docstring step 3; the reference of the compiled ``kernels.closed_chain``): with the
    complete QR factorisation J_b = [Q_1 Q_2][R; 0] (LAPACK ``dgeqrf``/``dorgqr``) and
    A = Q_2ᵀ J_a, the joint accelerations q̈_a = q̈_aᵈ + Aᵀ (A Aᵀ)⁻¹ (b − A q̈_aᵈ),
    b = −Q_2ᵀ γ (A Aᵀ by Cholesky, ``cholesky`` with cut-off rcond²), and the base's
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
    C = cholesky(np.dot(A, A.T), rcond * rcond)
    if C is None:
        return False, None, None, None, None
    b = -np.dot(Q[:, nb:].T, gamma)
    a_vi = a_joints + np.dot(A.T, solve(C, b - np.dot(A, a_joints)))
    a_b = lapack.dtrtrs(R, np.dot(Q[:, :nb].T, -gamma - np.dot(Ja, a_vi)))[0]
    return True, a_b, a_vi, Q, np.triu(R)


def _split(J, e, sizes) -> list[tuple[np.ndarray, np.ndarray]]:
    out, i = [], 0
    for m in sizes:
        out.append((J[i:i + m], e[i:i + m]))
        i += m
    return out


__all__ = ["cholesky", "constrained_space", "eye", "factor_phi", "internal_force_torques",
           "pinv_psd", "prioritized", "psd_factor", "psd_whitening", "sole_centre_allocation",
           "solve", "task_torques"]
