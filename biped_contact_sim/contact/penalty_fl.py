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

``friction = "coupled"`` (our extension, the default; "per_point" is the paper's eqs. 19–20):
on a rigid body with several contact points, eq. 18 spreads the tangential load by minimum
norm, not by the points' normal loads, so a point with little normal load gets more than
μ f_n while the body as a whole is well inside its cone; clipping that point alone (eq. 20)
leaves the others with the forces of the unclipped solve, the body's tangential balance is lost
and it creeps (about 1 mm/s for a box on four corners near μ = tan α) — and, on a limp robot
whose feet are dragged sideways, the normal forces computed together with the clipped
tangential ones no longer hold the feet up (they sank 75 mm and were thrown out). Instead,
points whose f'_t leaves the cone (‖f'_t‖ > μ max(f'_n, 0)) are fixed on its boundary,
``f_t,i = μ f_n,i d_i``: opposite to their slip, ``d_i = −ṗ_t,i/‖ṗ_t,i‖`` (Coulomb's maximum
dissipation), when they slip faster than ``VSLIP``; else along f'_t,i (eq. 20's direction).
f'_t also compensates the free acceleration: along it, a tumbling box's corner sliding at
cm/s to m/s got friction along its slip (3.9e-3 J of positive work in one step down three
steps). Below VSLIP, where the designed damping −k_v ṗ_t of a saturated point is small against
the load it carries, the demand's direction holds a body that sticks as a whole (a palm
creeping at µm/s under the whole-body controller, a planar foot at lift-off: opposing their
creep let the palm slide 3 cm and moved the planar walk's ZMP past the heel). Their
tangential rows are dropped and eq. 18 is solved again (minimum-norm least squares) for the
normal forces of the sliding points and the full forces of the others, until no point leaves
the cone; only then are pulling points dropped (a sticking trial's tangential demand can tilt
the normal loads of a sliding body until some look pulling); a body sticks while its total
tangential load fits the sum of its points' cones, and slides with exactly Coulomb's law
otherwise. Both active sets share ``max_active_set_iterations``; the solves and the sliding
points are reported (``active_set_solves``, ``sliding``).

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

from biped_contact_sim.contact.base import (
    ContactModel,
    ContactResult,
    ContactState,
    Stats,
    positive,
)
from biped_contact_sim.contact.base_kernels import delassus_from_factor
from biped_contact_sim.errors import ConfigError
from biped_contact_sim.jit import B1, F1, F2, I1, F1s, Tuple, f8, i8, kernel
from biped_contact_sim.robot.model_kernels import unpack
from biped_contact_sim.solvers import min_norm_solve

UNILATERAL = ("active_set", "clip")
FRICTION = ("coupled", "per_point")
#: [m/s] a saturated point slipping faster than this gets friction opposite its slip, a slower
#: one along the demanded force (module docstring); the positive work the latter can do is at
#: most dt·μ f_n·VSLIP per point and step.
VSLIP = 0.1


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
        max_active_set_iterations: cap on the eq. 18 solves per step (both active sets).
        friction: "coupled" (points beyond the cone slide with f_t = μ f_n and eq. 18 is solved
            again for the rest; module docstring) or "per_point" (eqs. 19–20 after one solve,
            the paper).
        separation_damping: damp φ̇ in both directions (−k_v φ̇ instead of eq. 17's
            −k_v min(0, φ̇); module docstring).
        contact_tolerance: δ [m], points with φ ≤ δ are in the active set (module docstring).
        drift_term: keep eq. 18's ``J̇_c q̇`` in b (the paper, the default; without it the
            designed dynamics hold for the contact velocity at the step's configuration, as in
            gauss_seidel and acceleration_lcp, and a stance sole's turning feet drift: the
            3-D walk diverges).
    """

    kp: float = 500.0
    kv: float = 250.0
    epsilon: float = 0.0
    rank_rtol: float = 1e-10
    unilateral: str = "active_set"
    max_active_set_iterations: int = 32
    friction: str = "coupled"
    separation_damping: bool = False
    contact_tolerance: float = 1e-9
    drift_term: bool = True

    def __post_init__(self):
        if self.unilateral not in UNILATERAL:
            raise ConfigError(f"penalty_fl.unilateral = {self.unilateral!r} must be one of "
                              f"{', '.join(UNILATERAL)}")
        if self.friction not in FRICTION:
            raise ConfigError(f"penalty_fl.friction = {self.friction!r} must be one of "
                              f"{', '.join(FRICTION)}")
        for name in ("separation_damping", "drift_term"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"penalty_fl.{name} = {getattr(self, name)!r} must be true "
                                  "or false")
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
    stat_names = ("rank", "residual", "saturated", "active_set_solves", "dropped", "sliding")

    def __init__(self, **settings):
        super().__init__(**settings)
        s = self.settings
        # The kernels' settings in one array (one argument to type-check per call).
        self._params = np.array([s.kp, s.kv, s.epsilon, s.contact_tolerance, s.rank_rtol,
                                 float(s.separation_damping), float(s.unilateral == "clip"),
                                 float(s.max_active_set_iterations),
                                 float(s.friction == "coupled"), float(s.drift_term)])

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
        m = len(state.phi)
        # The outputs are made here: an array returned from a compiled function costs more
        # to box than one allocated by numpy.
        f = np.zeros((m, 3))
        active = np.empty(m, dtype=np.bool_)
        stats = np.empty(len(self.stat_names))
        packed = state.packed
        if packed is not None:
            penalty_from_packed(*packed, state.phi, state.vc, state.mu, self._params, f, active,
                                stats)
        else:
            G, b = state.delassus(np.arange(m), self.settings.drift_term)
            penalty_from_delassus(G, b, state.phi, state.vc, state.mu, self._params, f, active,
                                  stats)
        return ContactResult(f, active, Stats(self.stat_names, stats))

    def compute_reference(self, state: ContactState, commit: bool = True) -> ContactResult:
        """The numpy implementation of ``compute`` (LAPACK's pivoted Cholesky through
        ``solvers.min_norm_solve``, numpy's SVD least squares once points slide): the reference
        the compiled kernel is tested against."""
        s = self.settings
        m = state.n_points
        f = np.zeros((m, 3))
        active = state.phi <= s.contact_tolerance
        idx = np.flatnonzero(active)
        names = self.stat_names
        if idx.size == 0:
            return ContactResult(f, active, dict.fromkeys(names, 0))
        a = idx.size
        vc, mu = state.vc[idx], state.mu[idx]
        # Eq. 17 (ε variant of §V): desired accelerations in contact frames.
        acc_d = np.empty((a, 3))
        acc_d[:, :2] = -s.kv * vc[:, :2]
        vn = vc[:, 2] if s.separation_damping else np.minimum(0.0, vc[:, 2])
        acc_d[:, 2] = -s.kp * (state.phi[idx] + s.epsilon) - s.kv * vn
        G, b = state.delassus(idx, s.drift_term)
        rhs = acc_d.ravel() - b
        keep, sliding, d = np.ones(a, bool), np.zeros(a, bool), np.zeros((a, 2))
        solves = 0
        while True:
            fp, rank, residual = self._reduced_reference(G, rhs, keep, sliding, d, mu)
            solves += 1
            if solves >= s.max_active_set_iterations:
                break
            if s.friction == "coupled":  # beyond the cone: f_t = μ f_n opposite the slip
                ft = np.hypot(fp[:, 0], fp[:, 1])
                new = keep & ~sliding & (ft > 0.0) \
                    & (ft > mu * np.maximum(fp[:, 2], 0.0) * (1.0 + 1e-12))
                if new.any():
                    sliding |= new
                    vt = np.hypot(vc[:, 0], vc[:, 1])
                    moving = new & (vt > VSLIP)
                    d[new] = fp[new, :2] / ft[new, None]
                    d[moving] = -vc[moving, :2] / vt[moving, None]
                    continue
            pulling = keep & (fp[:, 2] < 0.0)
            if s.unilateral != "clip" and 0 < pulling.sum() < keep.sum():
                keep &= ~pulling  # eq. 18 again without the points that would pull
                sliding &= keep
                continue
            break
        # Eqs. 19–20: unilateral normal force, tangential components inside the cone.
        fn = np.maximum(0.0, fp[:, 2])
        theta = np.arctan2(fp[:, 1], fp[:, 0])
        ft1 = np.sign(fp[:, 0]) * np.minimum(np.abs(fp[:, 0]), mu * fn * np.abs(np.cos(theta)))
        ft2 = np.sign(fp[:, 1]) * np.minimum(np.abs(fp[:, 1]), mu * fn * np.abs(np.sin(theta)))
        f[idx, 0], f[idx, 1], f[idx, 2] = ft1, ft2, fn
        slide = sliding & keep
        clipped = (fp[:, 2] < 0.0) | (np.abs(ft1) < np.abs(fp[:, 0])) \
            | (np.abs(ft2) < np.abs(fp[:, 1]))
        return ContactResult(f, active, dict(zip(names, (
            rank, residual, int(np.count_nonzero(slide | clipped)), solves,
            int(a - keep.sum()), int(slide.sum())), strict=True)))

    def _reduced_reference(self, G, rhs, keep, sliding, d, mu):
        """``_reduced_solve`` in numpy (the reference)."""
        a = keep.size
        cols = []  # per kept point: (point, sliding)
        B_blocks, rows = [], []
        for i in np.flatnonzero(keep):
            if sliding[i]:
                col = np.zeros((3 * a, 1))
                col[3 * i:3 * i + 2, 0] = mu[i] * d[i]
                col[3 * i + 2, 0] = 1.0
                rows.append(3 * i + 2)
            else:
                col = np.zeros((3 * a, 3))
                col[3 * i:3 * i + 3] = np.eye(3)
                rows += [3 * i, 3 * i + 1, 3 * i + 2]
            B_blocks.append(col)
            cols.append((i, bool(sliding[i])))
        B = np.hstack(B_blocks)
        M, r = G[rows] @ B, rhs[rows]
        if sliding[keep].any():
            x, _, rank, _ = np.linalg.lstsq(M, r, rcond=self.settings.rank_rtol)
            residual = float(np.linalg.norm(M @ x - r))
        else:
            sol = min_norm_solve(M, r, self.settings.rank_rtol)
            x, rank, residual = sol.x, sol.rank, sol.residual
        fp = (B @ x).reshape(a, 3)
        return fp, int(rank), residual


@kernel((F2, f8), error_model="numpy")
def pivoted_cholesky(G, tol):
    """Upper pivoted Cholesky ``G[π][:, π] = Uᵀ U`` (LAPACK ``dpstrf``'s decomposition): at each
    step the largest diagonal of the remaining Schur complement is the pivot (first one on
    ties); it stops when that pivot is ≤ tol.

    Left-looking (as LAPACK's blocked dpstrf): row j of U is formed when it is needed,
    ``U[j, c] = (G[π_j, π_c] − Σ_{k<j} U[k, j] U[k, c]) / U[j, j]``, and only the diagonal of the
    Schur complement is kept up to date for the pivot choice. On a rank-k G this touches k rows
    instead of updating the whole trailing matrix k times (the biped's 24×24 G has rank 12),
    and each sum runs over k in the same order as the right-looking update, so the factor is
    the same to the last bit.

    Returns:
        U (n, n) (rows ≥ rank are zero), π (n,), rank.
    """
    n = G.shape[0]
    U = np.zeros((n, n))
    perm = np.arange(n)
    diag = np.empty(n)  # diagonal of the Schur complement, in pivoted order
    for i in range(n):
        diag[i] = G[i, i]
    rank = n
    for j in range(n):
        best, p = -np.inf, j
        for i in range(j, n):
            if diag[i] > best:
                best, p = diag[i], i
        if not best > tol:  # also NaN
            rank = j
            break
        if p != j:  # the symmetric swap of j and p: only U's finished rows hold them
            diag[j], diag[p] = diag[p], diag[j]
            perm[j], perm[p] = perm[p], perm[j]
            for k in range(j):
                U[k, j], U[k, p] = U[k, p], U[k, j]
        ujj = np.sqrt(best)
        U[j, j] = ujj
        pj = perm[j]
        for c in range(j + 1, n):
            U[j, c] = G[pj, perm[c]]
        for k in range(j):
            ukj = U[k, j]
            if ukj != 0.0:  # subtracting 0·x changes nothing: skipping it is exact
                for c in range(j + 1, n):
                    U[j, c] -= ukj * U[k, c]
        for c in range(j + 1, n):
            u = U[j, c] / ujj
            U[j, c] = u
            diag[c] -= u * u
    return U, perm, rank


@kernel((F2,), error_model="numpy")
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


@kernel((F2, F1), error_model="numpy")
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


@kernel((F2, F1, f8), error_model="numpy")
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
    # B = U_kᵀ (n × k): x_π = B (BᵀB)⁻¹ (BᵀB)⁻¹ Bᵀ r_π; with k = n this is U⁻¹ U⁻ᵀ r_π. The
    # products go to BLAS (loops this short cost more in loop overhead than in arithmetic).
    Uk = U[:k]
    rp = np.empty(n)
    for j in range(n):
        rp[j] = r[perm[j]]
    L, ok = _cholesky(Uk @ Uk.T)
    if not ok:  # the rank decision was too optimistic: the SVD route
        x = np.linalg.pinv(G, rcond=rtol) @ r
    else:
        xp = Uk.T @ _cholesky_solve(L, _cholesky_solve(L, Uk @ rp))
        for j in range(n):
            x[perm[j]] = xp[j]
    Gx = G @ x
    res = 0.0
    for i in range(n):
        res += (Gx[i] - r[i]) ** 2
    return x, k, np.sqrt(res)


@kernel((F1, i8, i8, i8, F1, F2, F1s, F1, F2, B1, F1), error_model="numpy")
def penalty_from_packed(W, m, nv, nj, phi, vc, mu, params, f, active, stats):
    """``penalty_forces`` with ``G = X_Aᵀ X_A`` and ``b = J_c,A a_free (+ γ_c,A if params[9])``
    formed for the active set A only, from the simulator's buffer (``ContactState.packed``).
    Writes the forces ``f`` (m, 3, zero on entry), ``active`` (m,) and ``stats``."""
    Jc, gc, X, U, D, tf, af, tc = unpack(W, m, nv, nj)
    for i in range(phi.shape[0]):
        active[i] = phi[i] <= params[3]
    idx = np.flatnonzero(active)
    G, b = delassus_from_factor(X, Jc, af, gc, idx, params[9] != 0.0)
    if idx.shape[0] == phi.shape[0]:  # every point active (a standing robot): no copies
        _scatter(penalty_forces(G, b, phi, vc, mu, params), idx, f, stats)
    else:
        _scatter(penalty_forces(G, b, phi[idx], vc[idx], mu[idx], params), idx, f, stats)


@kernel((F2, F1, F1, F2, F1, F1, F2, B1, F1), error_model="numpy")
def penalty_from_delassus(G, b, phi, vc, mu, params, f, active, stats):
    """``penalty_forces`` from the Delassus operator and free acceleration of all points
    (outputs as ``penalty_from_packed``)."""
    for i in range(phi.shape[0]):
        active[i] = phi[i] <= params[3]
    idx = np.flatnonzero(active)
    k = idx.shape[0]
    Ga = np.empty((3 * k, 3 * k))
    ba = np.empty(3 * k)
    for r in range(3 * k):
        ir = 3 * idx[r // 3] + r % 3
        ba[r] = b[ir]
        for c in range(3 * k):
            Ga[r, c] = G[ir, 3 * idx[c // 3] + c % 3]
    _scatter(penalty_forces(Ga, ba, phi[idx], vc[idx], mu[idx], params), idx, f, stats)


@kernel((Tuple((F2, F1)), I1, F2, F1), error_model="numpy")
def _scatter(out, idx, f, stats):
    fa, st = out
    for t in range(idx.shape[0]):
        f[idx[t], 0] = fa[t, 0]
        f[idx[t], 1] = fa[t, 1]
        f[idx[t], 2] = fa[t, 2]
    stats[:] = st


@kernel((F2, F1, B1, B1, F2, F1s, f8), error_model="numpy")
def _reduced_solve(G, rhs, keep, sliding, d, mu, rtol):
    """Eq. 18 on the points ``keep``, the tangential force of each ``sliding`` point fixed at
    ``μ f_n d`` (its normal row kept, its tangential rows dropped): the minimum-norm least-squares
    solution of the reduced system, by ``min_norm_kernel`` when nothing slides (G symmetric) and
    by LAPACK's SVD least squares (gelsd, ``rcond = rtol``) otherwise.

    Returns:
        f' (a, 3) (zero off ``keep``), rank, residual ‖M x − r‖ of the reduced system.
    """
    a = keep.shape[0]
    sel = np.flatnonzero(keep)
    k = sel.shape[0]
    col = np.empty(k, dtype=np.int64)  # first column (= first row) of each kept point
    n = 0
    any_sliding = False
    for t in range(k):
        col[t] = n
        if sliding[sel[t]]:
            n += 1
            any_sliding = True
        else:
            n += 3
    if k == a and not any_sliding:  # the first solve: M = G and r = rhs, no copy needed
        x, rank, residual = min_norm_kernel(G, rhs, rtol)
        return x.reshape((a, 3)), rank, residual
    M = np.empty((n, n))
    r = np.empty(n)
    for t in range(k):
        i = sel[t]
        for ci in range(3):
            if sliding[i] and ci < 2:
                continue
            row = col[t] + (0 if sliding[i] else ci)
            gi = 3 * i + ci
            r[row] = rhs[gi]
            for u in range(k):
                j = sel[u]
                if sliding[j]:
                    M[row, col[u]] = (G[gi, 3 * j] * mu[j] * d[j, 0]
                                      + G[gi, 3 * j + 1] * mu[j] * d[j, 1] + G[gi, 3 * j + 2])
                else:
                    for c in range(3):
                        M[row, col[u] + c] = G[gi, 3 * j + c]
    if any_sliding:
        x, _, rank, _ = np.linalg.lstsq(M, r, rcond=rtol)
        res = 0.0
        for i in range(n):
            e = -r[i]
            for j in range(n):
                e += M[i, j] * x[j]
            res += e * e
        residual = np.sqrt(res)
    else:
        x, rank, residual = min_norm_kernel(M, r, rtol)
    fp = np.zeros((a, 3))
    for t in range(k):
        i = sel[t]
        if sliding[i]:
            fn = x[col[t]]
            fp[i, 0] = mu[i] * d[i, 0] * fn
            fp[i, 1] = mu[i] * d[i, 1] * fn
            fp[i, 2] = fn
        else:
            for c in range(3):
                fp[i, c] = x[col[t] + c]
    return fp, rank, residual


@kernel((F2, F1, F1, F2, F1s, F1), error_model="numpy")
def penalty_forces(G, b, phi, vc, mu, params):
    """Eqs. 17–20 of Rengifo et al. over the active points, with our active sets (the module
    docstring).

    Args:
        G, b: Delassus operator and free acceleration over the active points (3a, 3a), (3a,).
        phi, vc, mu: their gaps, contact velocities (a, 3) and friction coefficients.
        params: k_p, k_v, ε, δ, rank_rtol, separation_damping, clip, max solves, coupled
            friction.

    Returns:
        f (a, 3) contact-frame forces and the statistics (rank, residual, saturated,
        active-set solves, dropped points, sliding points).
    """
    kp, kv, eps, rtol = params[0], params[1], params[2], params[4]
    separation_damping, clip, max_solves = params[5] != 0.0, params[6] != 0.0, int(params[7])
    coupled = params[8] != 0.0
    a = phi.shape[0]
    if a == 0:
        return np.zeros((0, 3)), np.zeros(6)
    rhs = np.empty(3 * a)
    for i in range(a):  # eq. 17 (ε variant): p̈ᵈ − b
        vn = vc[i, 2] if separation_damping else min(0.0, vc[i, 2])
        rhs[3 * i] = -kv * vc[i, 0] - b[3 * i]
        rhs[3 * i + 1] = -kv * vc[i, 1] - b[3 * i + 1]
        rhs[3 * i + 2] = -kp * (phi[i] + eps) - kv * vn - b[3 * i + 2]
    keep = np.ones(a, dtype=np.bool_)
    sliding = np.zeros(a, dtype=np.bool_)
    d = np.zeros((a, 2))
    solves = 0
    while True:
        fp, rank, residual = _reduced_solve(G, rhs, keep, sliding, d, mu, rtol)
        solves += 1
        if solves >= max_solves:
            break
        if coupled:  # points beyond their cone slide: f_t = μ f_n opposite the slip
            n_new = 0
            for i in range(a):
                if keep[i] and not sliding[i]:
                    ft = np.hypot(fp[i, 0], fp[i, 1])
                    if ft > 0.0 and ft > mu[i] * max(fp[i, 2], 0.0) * (1.0 + 1e-12):
                        sliding[i] = True
                        vt = np.hypot(vc[i, 0], vc[i, 1])
                        if vt > VSLIP:  # sliding: Coulomb's maximum dissipation
                            d[i, 0], d[i, 1] = -vc[i, 0] / vt, -vc[i, 1] / vt
                        else:  # eq. 20's direction, the demanded force's
                            d[i, 0], d[i, 1] = fp[i, 0] / ft, fp[i, 1] / ft
                        n_new += 1
            if n_new:
                continue
        n_keep, n_pull = 0, 0
        for i in range(a):
            if keep[i]:
                n_keep += 1
                if fp[i, 2] < 0.0:
                    n_pull += 1
        if not clip and 0 < n_pull < n_keep:  # eq. 18 again without the points that pull
            for i in range(a):
                if keep[i] and fp[i, 2] < 0.0:
                    keep[i] = False
                    sliding[i] = False
            continue
        break
    f = np.zeros((a, 3))
    saturated, n_sliding = 0, 0
    for i in range(a):  # eqs. 19–20 (what is left to clip after the active sets)
        fn = max(0.0, fp[i, 2])
        theta = np.arctan2(fp[i, 1], fp[i, 0])
        l1 = mu[i] * fn * abs(np.cos(theta))
        l2 = mu[i] * fn * abs(np.sin(theta))
        f1 = np.sign(fp[i, 0]) * min(abs(fp[i, 0]), l1)
        f2 = np.sign(fp[i, 1]) * min(abs(fp[i, 1]), l2)
        f[i, 0], f[i, 1], f[i, 2] = f1, f2, fn
        if sliding[i] and keep[i]:
            n_sliding += 1
            saturated += 1
        elif fp[i, 2] < 0.0 or abs(f1) < abs(fp[i, 0]) or abs(f2) < abs(fp[i, 1]):
            saturated += 1
    n_kept = 0
    for i in range(a):
        if keep[i]:
            n_kept += 1
    stats = np.array([float(rank), residual, float(saturated), float(solves), float(a - n_kept),
                      float(n_sliding)])
    return f, stats
