"""``penalty_fl``: penalty contact by input–output feedback linearization (Rengifo et al.).

docs/methods.md §2.2. Active set ``A = {i : φ_i ≤ δ}`` with δ = ``contact_tolerance`` (our
addition, 1 nm: a sole placed exactly on the ground has φ ≈ +1e-17 from the round-off of the
forward kinematics; with δ = 0 such a robot starts in free fall for one step, which is enough to
throw a computed-torque controller that assumed the support; the paper's set is δ = 0). Desired
contact accelerations (eq. 17, with the ε variant of §V read as an allowed depth: the point
settles at φ = −ε):

    p̈ᵈ_i = [ −k_v ṗ_t1,i,  −k_v ṗ_t2,i,  −k_p (φ_i + ε) − k_v min(0, φ̇_i) ]

Forces that realise them: the minimum-norm solution of ``G f' = p̈ᵈ − b`` (eq. 18, Moore–Penrose
as in the paper), then saturation (eqs. 19–20):

    f_n = max(0, f'_n),  θ = atan2(f'_t2, f'_t1),
    f_t1 = sign(f'_t1) min(|f'_t1|, μ f_n |cos θ|),  f_t2 = sign(f'_t2) min(|f'_t2|, μ f_n |sin θ|).

``unilateral = "active_set"`` (our extension; "clip" is the paper's single shot): the eq. 18
solve couples all active points, so clipping a negative f'_n after it leaves the other points
with forces computed for a pull that never happens (a lifting swing foot that is still within
the active set spoils the stance foot's forces). Points whose f'_n < 0 are dropped from A and
eq. 18 is solved again on the rest, until every f'_n ≥ 0 (at most ``max_active_set_iterations``
solves; the count is reported) — the active-set answer to ``0 ≤ f_n ⊥ p̈_n − p̈ᵈ_n ≥ 0``.

``separation_damping = True`` (our extension, off by default): eq. 17 damps only approach
(min(0, φ̇)), so a point rising inside the active set follows the undamped φ̈ = −k_p(φ + ε)
and leaves it whenever its upward speed exceeds √k_p·ε (22 µm/s for k_p = 500, ε = 1 µm): a
stance sole under a whole-body controller then peels off vertex by vertex. Damping φ̇ both
ways makes the designed normal dynamics a damped oscillator about φ = −ε; it cannot make a
sticking force, because a negative f'_n is dropped (active set) or clipped (eq. 19) — points
leave when the robot pulls them away, not on a micrometre rebound.

When nothing saturates, ``p̈_c = p̈ᵈ`` exactly, whatever the masses: the contact dynamics
``p̈ = −k_p(φ + ε) − k_v φ̇`` are designed, not tuned per robot. They are stiff; with explicit
integration (semi-implicit Euler: x⁺ = x + dt v⁺) the linear recursion is stable iff
``dt·k_v < 2`` and ``dt²·k_p < 4 − 2 dt·k_v`` (Jury test on its 2×2 matrix); other settings are
refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from biped_contact_sim.contact.base import (
    ContactModel,
    ContactResult,
    ContactState,
    Stats,
    delassus_from_factor,
    positive,
)
from biped_contact_sim.errors import ConfigError
from biped_contact_sim.robot.kernels import unpack
from biped_contact_sim.solvers import min_norm_solve

UNILATERAL = ("active_set", "clip")


@dataclass(frozen=True)
class PenaltyFLSettings:
    """Settings of ``penalty_fl`` (Rengifo et al. eq. 17 and §V).

    Attributes:
        kp: k_p, stiffness of the designed contact dynamics [1/s²] (walking: 500).
        kv: k_v, damping of the designed contact dynamics [1/s] (walking: 250, ball: 5000).
        epsilon: ε, allowed steady penetration depth [m] (§V; 1e-6 against false impacts).
        rank_rtol: relative pivot tolerance of the minimum-norm solve of eq. 18.
        unilateral: "clip" (eq. 19 after one solve, the paper) or "active_set" (re-solve
            without the points that would pull; module docstring).
        max_active_set_iterations: cap on the eq. 18 solves per step with "active_set".
        separation_damping: damp φ̇ in both directions (−k_v φ̇ instead of eq. 17's
            −k_v min(0, φ̇); module docstring).
        contact_tolerance: δ [m], points with φ ≤ δ are in the active set (module docstring).
    """

    kp: float = 500.0
    kv: float = 250.0
    epsilon: float = 0.0
    rank_rtol: float = 1e-10
    unilateral: str = "active_set"
    max_active_set_iterations: int = 8
    separation_damping: bool = False
    contact_tolerance: float = 1e-9

    def __post_init__(self):
        if self.unilateral not in UNILATERAL:
            raise ConfigError(f"penalty_fl.unilateral = {self.unilateral!r} must be one of "
                              f"{', '.join(UNILATERAL)}")
        if not isinstance(self.separation_damping, bool):
            raise ConfigError(f"penalty_fl.separation_damping = {self.separation_damping!r} "
                              "must be true or false")
        if not (isinstance(self.max_active_set_iterations, int)
                and self.max_active_set_iterations >= 1):
            raise ConfigError(f"penalty_fl.max_active_set_iterations = "
                              f"{self.max_active_set_iterations!r} must be an integer >= 1")
        positive("penalty_fl.kp", self.kp, allow_zero=True)
        positive("penalty_fl.kv", self.kv)
        positive("penalty_fl.epsilon", self.epsilon, allow_zero=True)
        positive("penalty_fl.rank_rtol", self.rank_rtol)
        positive("penalty_fl.contact_tolerance", self.contact_tolerance, allow_zero=True)


class PenaltyFLContact(ContactModel):
    """Penalty by feedback linearization, Rengifo et al. eqs. 16–20 (docs/methods.md §2.2)."""

    name = "penalty_fl"
    Settings = PenaltyFLSettings
    stat_names = ("rank", "residual", "saturated", "active_set_solves", "dropped")

    def __init__(self, **settings):
        super().__init__(**settings)
        s = self.settings
        # The kernels' settings in one array (one argument to type-check per call).
        self._params = np.array([s.kp, s.kv, s.epsilon, s.contact_tolerance, s.rank_rtol,
                                 float(s.separation_damping), float(s.unilateral == "clip"),
                                 float(s.max_active_set_iterations)])

    def check(self, dt: float, integrator: str) -> None:
        """Refuse ``dt·k_v ≥ 2`` or ``dt²·k_p ≥ 4 − 2 dt·k_v`` (explicit-integration bound)."""
        super().check(dt, integrator)
        s = self.settings
        if dt * s.kv >= 2.0:
            raise ConfigError(
                f"penalty_fl unstable: dt·kv = {dt:g}·{s.kv:g} = {dt * s.kv:g} must be < 2 "
                f"(use dt < {2.0 / s.kv:g} s or a smaller kv)")
        if dt * dt * s.kp >= 4.0 - 2.0 * dt * s.kv:
            raise ConfigError(
                f"penalty_fl unstable: dt²·kp = {dt * dt * s.kp:g} must be < 4 − 2·dt·kv = "
                f"{4.0 - 2.0 * dt * s.kv:g} (use a smaller dt or kp)")

    def compute(self, state: ContactState, commit: bool = True) -> ContactResult:
        """Eqs. 17–20 (with the active set) by the compiled kernels ``penalty_from_packed`` /
        ``penalty_from_delassus``."""
        packed = state.packed
        if packed is not None:
            f, active, stats = penalty_from_packed(*packed, state.phi, state.vc, state.mu,
                                                   self._params)
        else:
            G, b = state.delassus(np.arange(state.n_points))
            f, active, stats = penalty_from_delassus(G, b, state.phi, state.vc, state.mu,
                                                     self._params)
        return ContactResult(f, active, Stats(self.stat_names, stats))

    def compute_reference(self, state: ContactState, commit: bool = True) -> ContactResult:
        """The numpy implementation of ``compute`` (LAPACK's pivoted Cholesky through
        ``solvers.min_norm_solve``): the reference the compiled kernel is tested against."""
        s = self.settings
        m = state.n_points
        f = np.zeros((m, 3))
        active = state.phi <= s.contact_tolerance
        idx = np.flatnonzero(active)
        if idx.size == 0:
            return ContactResult(f, active, {"rank": 0, "residual": 0.0, "saturated": 0,
                                             "active_set_solves": 0, "dropped": 0})
        vc = state.vc[idx]
        # Eq. 17 (ε variant of §V): desired accelerations in contact frames.
        acc_d = np.empty((idx.size, 3))
        acc_d[:, :2] = -s.kv * vc[:, :2]
        vn = vc[:, 2] if s.separation_damping else np.minimum(0.0, vc[:, 2])
        acc_d[:, 2] = -s.kp * (state.phi[idx] + s.epsilon) - s.kv * vn
        G, b = state.delassus(idx)
        rhs = acc_d.ravel() - b
        keep = np.arange(idx.size)  # positions in idx of the points still in the solve
        solves = 0
        while True:
            rows = (3 * keep[:, None] + np.arange(3)).ravel()
            sol = min_norm_solve(G[np.ix_(rows, rows)] if keep.size < idx.size else G,
                                 rhs[rows] if keep.size < idx.size else rhs, s.rank_rtol)
            solves += 1
            pulling = sol.x[2::3] < 0.0
            if (s.unilateral == "clip" or not pulling.any() or pulling.all()
                    or solves >= s.max_active_set_iterations):
                break
            keep = keep[~pulling]  # eq. 18 again without the points that would pull
        fp = np.zeros((idx.size, 3))
        fp[keep] = sol.x.reshape(-1, 3)  # eq. 18, f' = G⁺(p̈ᵈ − b) on the final set
        # Eqs. 19–20: unilateral normal force, tangential components inside the cone.
        fn = np.maximum(0.0, fp[:, 2])
        theta = np.arctan2(fp[:, 1], fp[:, 0])
        mu = state.mu[idx]
        ft1 = np.sign(fp[:, 0]) * np.minimum(np.abs(fp[:, 0]), mu * fn * np.abs(np.cos(theta)))
        ft2 = np.sign(fp[:, 1]) * np.minimum(np.abs(fp[:, 1]), mu * fn * np.abs(np.sin(theta)))
        f[idx, 0], f[idx, 1], f[idx, 2] = ft1, ft2, fn
        saturated = int(np.count_nonzero(
            (fp[:, 2] < 0.0) | (np.abs(ft1) < np.abs(fp[:, 0])) | (np.abs(ft2) < np.abs(fp[:, 1]))))
        return ContactResult(f, active, {"rank": sol.rank, "residual": sol.residual,
                                         "saturated": saturated, "active_set_solves": solves,
                                         "dropped": idx.size - keep.size})


@njit(cache=True, error_model="numpy")
def pivoted_cholesky(G, tol):
    """Upper pivoted Cholesky ``G[π][:, π] = Uᵀ U`` (LAPACK ``dpstrf``'s decomposition): at each
    step the largest diagonal of the remaining Schur complement is the pivot (first one on
    ties); it stops when that pivot is ≤ tol. Right-looking on the upper triangle (the trailing
    update runs over contiguous rows): the same factor as dpstrf up to round-off.

    Returns:
        U (n, n) (rows ≥ rank are zero), π (n,), rank.
    """
    n = G.shape[0]
    S = G.copy()  # trailing Schur complement, upper triangle of S[j:, j:]
    U = np.zeros((n, n))
    perm = np.arange(n)
    rank = n
    for j in range(n):
        best, p = -np.inf, j
        for i in range(j, n):
            if S[i, i] > best:
                best, p = S[i, i], i
        if not best > tol:  # also NaN
            rank = j
            break
        if p != j:  # symmetric swap of j and p in upper storage (as dpstf2)
            S[p, p] = S[j, j]
            for k in range(j + 1, p):
                S[j, k], S[k, p] = S[k, p], S[j, k]
            for k in range(p + 1, n):
                S[j, k], S[p, k] = S[p, k], S[j, k]
            for k in range(j):
                U[k, j], U[k, p] = U[k, p], U[k, j]
            perm[j], perm[p] = perm[p], perm[j]
        ujj = np.sqrt(best)
        U[j, j] = ujj
        for c in range(j + 1, n):
            U[j, c] = S[j, c] / ujj
        for r in range(j + 1, n):
            u = U[j, r]
            for c in range(r, n):
                S[r, c] -= u * U[j, c]
    return U, perm, rank


@njit(cache=True, error_model="numpy")
def _cholesky(C):
    """Lower Cholesky factor L of a symmetric positive definite C (ok = False otherwise)."""
    k = C.shape[0]
    L = np.zeros((k, k))
    for j in range(k):
        d = C[j, j]
        for t in range(j):
            d -= L[j, t] * L[j, t]
        if not d > 0.0:
            return L, False
        L[j, j] = np.sqrt(d)
        for i in range(j + 1, k):
            s = C[i, j]
            for t in range(j):
                s -= L[i, t] * L[j, t]
            L[i, j] = s / L[j, j]
    return L, True


@njit(cache=True, error_model="numpy")
def _cholesky_solve(L, y):
    """Solve ``L Lᵀ x = y``."""
    k = L.shape[0]
    z = np.empty(k)
    for i in range(k):
        s = y[i]
        for t in range(i):
            s -= L[i, t] * z[t]
        z[i] = s / L[i, i]
    x = np.empty(k)
    for i in range(k - 1, -1, -1):
        s = z[i]
        for t in range(i + 1, k):
            s -= L[t, i] * x[t]
        x[i] = s / L[i, i]
    return x


@njit(cache=True, error_model="numpy")
def min_norm_kernel(G, r, rtol):
    """``x = G⁺ r`` for a symmetric PSD G, the compiled ``solvers.min_norm_solve`` (same
    mathematics: ``G⁺ = B (BᵀB)⁻¹ (BᵀB)⁻¹ Bᵀ`` with the pivoted factor ``G = B Bᵀ``).

    Returns:
        x, rank, residual ``‖G x − r‖``.
    """
    n = G.shape[0]
    scale = 0.0
    for i in range(n):
        scale = max(scale, G[i, i])
    x = np.zeros(n)
    if n == 0 or not scale > 0.0:
        return x, 0, np.sqrt(np.sum(r * r))
    U, perm, k = pivoted_cholesky(G, rtol * scale)
    # B = U_kᵀ (n × k): x_π = B (BᵀB)⁻¹ (BᵀB)⁻¹ Bᵀ r_π (U_k is upper trapezoidal: U[a, j] = 0
    # for j < a); with k = n this is U⁻¹ U⁻ᵀ r_π.
    C = np.empty((k, k))
    for a in range(k):
        for c in range(a, k):
            s = 0.0
            for j in range(c, n):
                s += U[a, j] * U[c, j]
            C[a, c] = s
            C[c, a] = s
    y = np.empty(k)
    for a in range(k):
        s = 0.0
        for j in range(a, n):
            s += U[a, j] * r[perm[j]]
        y[a] = s
    L, ok = _cholesky(C)
    if not ok:  # the rank decision was too optimistic: the SVD route
        x = np.linalg.pinv(G, rcond=rtol) @ r
    else:
        w = _cholesky_solve(L, _cholesky_solve(L, y))
        for j in range(n):
            s = 0.0
            for a in range(min(k, j + 1)):
                s += U[a, j] * w[a]
            x[perm[j]] = s
    res = 0.0
    for i in range(n):
        d = -r[i]
        for j in range(n):
            d += G[i, j] * x[j]
        res += d * d
    return x, k, np.sqrt(res)


@njit(cache=True, error_model="numpy")
def penalty_from_packed(W, m, nv, nj, phi, vc, mu, params):
    """``penalty_forces`` with ``G = X_Aᵀ X_A`` and ``b = J_c,A a_free + γ_c,A`` formed for the
    active set A only, from the simulator's buffer (``ContactState.packed``)."""
    Jc, gc, X, U, D, tf, af, tc = unpack(W, m, nv, nj)
    act = phi <= params[3]
    idx = np.flatnonzero(act)
    G, b = delassus_from_factor(X, Jc, af, gc, idx)
    return _scatter(penalty_forces(G, b, phi[idx], vc[idx], mu[idx], params), idx, act)


@njit(cache=True, error_model="numpy")
def penalty_from_delassus(G, b, phi, vc, mu, params):
    """``penalty_forces`` from the Delassus operator and free acceleration of all points."""
    act = phi <= params[3]
    idx = np.flatnonzero(act)
    k = idx.shape[0]
    Ga = np.empty((3 * k, 3 * k))
    ba = np.empty(3 * k)
    for r in range(3 * k):
        ir = 3 * idx[r // 3] + r % 3
        ba[r] = b[ir]
        for c in range(3 * k):
            Ga[r, c] = G[ir, 3 * idx[c // 3] + c % 3]
    return _scatter(penalty_forces(Ga, ba, phi[idx], vc[idx], mu[idx], params), idx, act)


@njit(cache=True, error_model="numpy")
def _scatter(out, idx, act):
    fa, stats = out
    f = np.zeros((act.shape[0], 3))
    for t in range(idx.shape[0]):
        f[idx[t], 0] = fa[t, 0]
        f[idx[t], 1] = fa[t, 1]
        f[idx[t], 2] = fa[t, 2]
    return f, act, stats


@njit(cache=True, error_model="numpy")
def penalty_forces(G, b, phi, vc, mu, params):
    """Eqs. 17–20 of Rengifo et al. over the active points (the module docstring).

    Args:
        G, b: Delassus operator and free acceleration over the active points (3a, 3a), (3a,).
        phi, vc, mu: their gaps, contact velocities (a, 3) and friction coefficients.
        params: k_p, k_v, ε, δ, rank_rtol, separation_damping, clip, max solves.

    Returns:
        f (a, 3) contact-frame forces and the statistics (rank, residual, saturated,
        active-set solves, dropped points).
    """
    kp, kv, eps, rtol = params[0], params[1], params[2], params[4]
    separation_damping, clip, max_solves = params[5] != 0.0, params[6] != 0.0, int(params[7])
    a = phi.shape[0]
    if a == 0:
        return np.zeros((0, 3)), np.zeros(5)
    rhs = np.empty(3 * a)
    for i in range(a):  # eq. 17 (ε variant): p̈ᵈ − b
        vn = vc[i, 2] if separation_damping else min(0.0, vc[i, 2])
        rhs[3 * i] = -kv * vc[i, 0] - b[3 * i]
        rhs[3 * i + 1] = -kv * vc[i, 1] - b[3 * i + 1]
        rhs[3 * i + 2] = -kp * (phi[i] + eps) - kv * vn - b[3 * i + 2]
    keep = np.ones(a, dtype=np.bool_)
    fp = np.zeros((a, 3))
    solves, rank, residual = 0, 0, 0.0
    while True:
        sel = np.flatnonzero(keep)
        k = sel.shape[0]
        if k == a:  # every active point: G itself
            x, rank, residual = min_norm_kernel(G, rhs, rtol)
        else:
            rows = np.empty(3 * k, dtype=np.int64)
            for t in range(k):
                for c in range(3):
                    rows[3 * t + c] = 3 * sel[t] + c
            Gs = np.empty((3 * k, 3 * k))
            rs = np.empty(3 * k)
            for r in range(3 * k):
                rs[r] = rhs[rows[r]]
                for c in range(3 * k):
                    Gs[r, c] = G[rows[r], rows[c]]
            x, rank, residual = min_norm_kernel(Gs, rs, rtol)
        solves += 1
        n_pull = 0
        for t in range(k):
            if x[3 * t + 2] < 0.0:
                n_pull += 1
        if clip or n_pull == 0 or n_pull == k or solves >= max_solves:
            break
        for t in range(k):  # eq. 18 again without the points that would pull
            if x[3 * t + 2] < 0.0:
                keep[sel[t]] = False
    for i in range(a):
        fp[i, 0] = fp[i, 1] = fp[i, 2] = 0.0
    for t in range(k):
        for c in range(3):
            fp[sel[t], c] = x[3 * t + c]
    f = np.zeros((a, 3))
    saturated = 0
    for i in range(a):  # eqs. 19–20
        fn = max(0.0, fp[i, 2])
        theta = np.arctan2(fp[i, 1], fp[i, 0])
        l1 = mu[i] * fn * abs(np.cos(theta))
        l2 = mu[i] * fn * abs(np.sin(theta))
        f1 = np.sign(fp[i, 0]) * min(abs(fp[i, 0]), l1)
        f2 = np.sign(fp[i, 1]) * min(abs(fp[i, 1]), l2)
        f[i, 0], f[i, 1], f[i, 2] = f1, f2, fn
        if fp[i, 2] < 0.0 or abs(f1) < abs(fp[i, 0]) or abs(f2) < abs(fp[i, 1]):
            saturated += 1
    stats = np.array([float(rank), residual, float(saturated), float(solves), float(a - k)])
    return f, stats
