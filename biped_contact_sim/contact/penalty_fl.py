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

from biped_contact_sim.contact.base import ContactModel, ContactResult, ContactState, positive
from biped_contact_sim.errors import ConfigError
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
