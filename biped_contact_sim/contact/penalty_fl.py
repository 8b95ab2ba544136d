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
from biped_contact_sim.contact.penalty_fl_kernels import (
    VSLIP,
    penalty_from_delassus,
    penalty_from_packed,
)
from biped_contact_sim.errors import ConfigError
from biped_contact_sim.solvers import min_norm_solve

UNILATERAL = ("active_set", "clip")
FRICTION = ("coupled", "per_point")


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


