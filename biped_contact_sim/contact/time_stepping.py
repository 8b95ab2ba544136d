"""``time_stepping``: velocity–impulse LCP with a polyhedral friction cone, solved by Lemke.

docs/methods.md §2.4; Bravo & Rengifo §3 (eqs. 24–26: the Signorini condition replaced by a
complementarity between the impulse and the velocity at the end of the step); Anitescu–Potra and
Stewart–Trinkle (Chardonnet refs. [3], [4]). Per candidate point i (``φ_i ≤ margin``), in its
contact frame, unknowns: the normal impulse ``p_n``, d tangential impulses ``β`` along
``d_j = (cos 2πj/d, sin 2πj/d, 0)``, and a slack ``λ`` (≈ the sliding speed)::

    M (v⁺ − v) = dt (Sᵀτ − h) + J_nᵀ p_n + J_Dᵀ β
    0 ≤ p_n ⊥ J_n v⁺ + bias ≥ 0
    0 ≤ β   ⊥ λ e + J_D v⁺ ≥ 0
    0 ≤ λ   ⊥ μ p_n − eᵀβ ≥ 0

Substituting v⁺ in the contact space, ``v_c⁺ = G (N p_n + T β) + dt·b + v_c`` with the Delassus
matrix ``G`` and free acceleration ``b`` of ``state.delassus`` (N puts p_n on the normal rows, T
maps β to ``Σ_j β_j d_j`` on the tangential rows; b includes the drift γ so that v_c⁺ predicts
the contact velocity at the end of the step, as Chardonnet eq. 10), gives the LCP of size
``m(2 + d)`` (``lcp``)::

    z = [p_n; β; λ],   w = A z + q,
    A = [[NᵀGN, NᵀGT, 0], [TᵀGN, TᵀGT, E], [diag μ, −Eᵀ, 0]],
    q = [Nᵀ v_free + bias; Tᵀ v_free; 0],   v_free = v_c + dt·b,

with ``E`` the (md, m) block-diagonal matrix of ones. One formulation for impacts, sticking and
sliding: a landing is perfectly plastic (no restitution by construction).

``bias_i = max(φ_i, 0)/dt + β_s min(φ_i, 0)/dt`` (``stabilization`` β_s): the Anitescu–Potra
``φ/dt`` term for candidates inside the margin (they may close the gap exactly, never cross),
and, our choice, only a fraction β_s of a penetration removed per step so that the correction
stays gentle. The pyramid is inscribed in the exact cone (vertices ``μ p_n d_j`` on the
circle), so the returned forces never violate ``‖f_t‖ ≤ μ f_n``; but it under-estimates friction
between its vertices: maximal dissipation over the polygon gives, for a point sliding at angle θ
from the nearest ``d_j``, a friction component against the motion of ``μ f_n cos θ`` (and a
sideways component that bends the path toward a facet direction). Worst case θ = π/d: −29.3 %
for d = 4 (45°), −7.6 % for d = 8 (22.5°); test_constraint_models measures exactly these.
Along a ``d_j`` (the ramp brick slides along t₁ = d₀) the law is exact.

Our other addition: ``ε·I`` (``regularization``, relative to the mean diagonal of G) on the
impulse blocks of A. Coplanar sole points and d > 2 facets make the LCP degenerate (cond(A) ~
1e18 on the standing biped), where Lemke met a basis whose answer did not solve the LCP; ε
removes the degeneracy at the price of a compliance ``ε·P`` in ``v_c⁺`` (1e-9 relative).

Failures are counted, never hidden: a ray termination or the pivot cap (``ray_terminations``),
or a "converged" answer whose residual exceeds ``accept_residual`` (``inaccurate``), falls back
to the frictionless normal LCP on ``G_nn`` (Lemke again; ``fallbacks``), and if that fails
too, to the previous step's forces (``solver_failures``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from biped_contact_sim.contact.base import ContactModel, ContactResult, ContactState, positive
from biped_contact_sim.contact.gauss_seidel import normal_bias, unit_interval
from biped_contact_sim.errors import ConfigError
from biped_contact_sim.solvers import STATUS_MAX_PIVOTS, STATUS_RAY, lemke

DIRECTIONS = (4, 8)


def friction_directions(d: int) -> np.ndarray:
    """The (2, d) matrix D of the polyhedral cone: columns ``d_j = (cos 2πj/d, sin 2πj/d)``."""
    angles = 2.0 * np.pi * np.arange(d) / d
    return np.vstack([np.cos(angles), np.sin(angles)])


def polyhedral_maps(m: int, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``N`` (3m, m), ``T`` (3m, md) and ``E`` (md, m) of the module docstring."""
    N = np.zeros((3 * m, m))
    N[2::3, :] = np.eye(m)
    T = np.zeros((3 * m, m * d))
    D = friction_directions(d)
    E = np.zeros((m * d, m))
    for i in range(m):
        T[3 * i:3 * i + 2, d * i:d * (i + 1)] = D
        E[d * i:d * (i + 1), i] = 1.0
    return N, T, E


@dataclass(frozen=True)
class TimeSteppingSettings:
    """Settings of ``time_stepping`` (Bravo & Rengifo §3; docs/methods.md §2.4).

    Attributes:
        directions: d, facets of the polyhedral cone (4 or 8).
        margin: candidates have φ ≤ margin [m].
        stabilization: β_s ∈ [0, 1], fraction of a penetration removed per step (our choice;
            0 keeps only the gap term of the candidates above the ground).
        pivot_tol: Lemke pivot tolerance.
        max_pivots: Lemke pivot cap (a step that reaches it falls back, counted).
        regularization: ε, relative diagonal compliance of the impulse blocks (our addition;
            removes the degeneracy of coplanar points and facets).
        accept_residual: a Lemke answer with ``max|min(z, w)|`` above this (relative to
            ``max(1, ‖q‖∞)``) is refused and counted in ``inaccurate``.
    """

    directions: int = 4
    margin: float = 1e-3
    stabilization: float = 0.2
    pivot_tol: float = 1e-12
    max_pivots: int = 1000
    regularization: float = 1e-9
    accept_residual: float = 1e-6

    def __post_init__(self):
        if isinstance(self.directions, bool) or self.directions not in DIRECTIONS:
            raise ConfigError(f"time_stepping.directions = {self.directions!r} must be one of "
                              + ", ".join(map(str, DIRECTIONS)))
        positive("time_stepping.margin", self.margin, allow_zero=True)
        unit_interval("time_stepping.stabilization", self.stabilization)
        positive("time_stepping.pivot_tol", self.pivot_tol)
        positive("time_stepping.regularization", self.regularization, allow_zero=True)
        positive("time_stepping.accept_residual", self.accept_residual)
        if isinstance(self.max_pivots, bool) or not isinstance(self.max_pivots, int) \
                or self.max_pivots < 1:
            raise ConfigError(f"time_stepping.max_pivots = {self.max_pivots!r} must be an "
                              "integer >= 1")


class TimeSteppingContact(ContactModel):
    """Anitescu–Potra / Stewart–Trinkle time stepping with Lemke (docs/methods.md §2.4).

    Statistics per step: ``candidates``, ``system_size`` (LCP size m(2 + d)), ``solver_iterations``
    (pivots), ``ray_terminations`` (0/1: ray or pivot cap), ``fallbacks`` (0/1: the frictionless
    normal LCP was used), ``solver_failures`` (0/1: both failed, previous forces reused),
    ``residual`` (``max |min(z, w)|`` of the LCP solved).
    """

    name = "time_stepping"
    Settings = TimeSteppingSettings
    integrators = ("semi_implicit_euler",)

    def reset(self, n_points: int) -> None:
        self._force = np.zeros((n_points, 3))  # last committed forces (last-resort fallback)

    def lcp(self, state: ContactState, idx: np.ndarray | None = None
            ) -> tuple[np.ndarray, np.ndarray]:
        """The LCP ``(A, q)`` of the module docstring over the candidates, size m(2 + d).

        Args:
            state: the contact state.
            idx: candidate indices (default: ``φ ≤ margin``).
        """
        s = self.settings
        if idx is None:
            idx = np.flatnonzero(state.phi <= s.margin)
        m, d, dt = idx.size, s.directions, state.dt
        G, b = state.delassus(idx)
        N, T, E = polyhedral_maps(m, d)
        v_free = state.vc[idx].ravel() + dt * b
        GN, GT = G @ N, G @ T
        A = np.zeros((m * (2 + d), m * (2 + d)))
        A[:m, :m] = N.T @ GN
        A[:m, m:m + m * d] = N.T @ GT
        A[m:m + m * d, :m] = T.T @ GN
        A[m:m + m * d, m:m + m * d] = T.T @ GT
        A[m:m + m * d, m + m * d:] = E
        A[m + m * d:, :m] = np.diag(state.mu[idx])
        A[m + m * d:, m:m + m * d] = -E.T
        q = np.concatenate([N.T @ v_free + normal_bias(state.phi[idx], dt, s.stabilization),
                            T.T @ v_free, np.zeros(m)])
        # Our addition: ε·I on the impulse blocks (relative to the mean diagonal of G). Four
        # coplanar sole points and the d > 2 facets make the LCP degenerate (cond(A) ~ 1e18 on
        # the biped); ε removes the degeneracy at the price of a compliance ε·P in v_c⁺.
        eps = s.regularization * max(float(np.mean(np.diag(G))), 0.0)
        A[np.arange(m + m * d), np.arange(m + m * d)] += eps
        return A, q

    def compute(self, state: ContactState, commit: bool = True) -> ContactResult:
        s = self.settings
        m_all, dt, d = state.n_points, state.dt, s.directions
        if getattr(self, "_force", None) is None or len(self._force) != m_all:
            self.reset(m_all)
        f = np.zeros((m_all, 3))
        stats = {"candidates": 0, "system_size": 0, "solver_iterations": 0, "ray_terminations": 0,
                 "inaccurate": 0, "fallbacks": 0, "solver_failures": 0, "residual": 0.0}
        idx = np.flatnonzero(state.phi <= s.margin)
        if idx.size:
            m = idx.size
            A, q = self.lcp(state, idx)
            sol = lemke(A, q, pivot_tol=s.pivot_tol, max_pivots=s.max_pivots)
            stats.update(candidates=m, system_size=len(q), solver_iterations=sol.iterations,
                         residual=float(sol.residual))
            # A "converged" answer is accepted only if it solves the LCP (we met a degenerate
            # case where it did not); otherwise it is counted and replaced like a failure.
            accurate = sol.residual <= s.accept_residual * max(1.0, float(np.abs(q).max()))
            stats["inaccurate"] = int(sol.converged and not accurate)
            if sol.converged and accurate:
                z = np.maximum(sol.x, 0.0)
                f[idx, 2] = z[:m] / dt
                f[idx, :2] = (friction_directions(d) @ z[m:m + m * d].reshape(m, d).T).T / dt
            else:
                stats["ray_terminations"] = int(sol.status in (STATUS_RAY, STATUS_MAX_PIVOTS))
                f[idx] = self._fallback(state, idx, stats)
        active = f[:, 2] > 0.0
        if commit:
            self._force = f.copy()
        return ContactResult(f, active, stats)

    def _fallback(self, state: ContactState, idx: np.ndarray, stats: dict) -> np.ndarray:
        """Frictionless normal LCP (Lemke on ``G_nn``); else the previous forces (counted)."""
        s = self.settings
        G, b = state.delassus(idx)
        v_free = state.vc[idx].ravel() + state.dt * b
        q = v_free[2::3] + normal_bias(state.phi[idx], state.dt, s.stabilization)
        Gnn = G[2::3, 2::3] + s.regularization * max(float(np.mean(np.diag(G))), 0.0) \
            * np.eye(idx.size)
        sol = lemke(Gnn, q, pivot_tol=s.pivot_tol, max_pivots=s.max_pivots)
        out = np.zeros((idx.size, 3))
        if sol.converged and sol.residual <= s.accept_residual * max(1.0, np.abs(q).max()):
            stats["fallbacks"] = 1
            out[:, 2] = np.maximum(sol.x, 0.0) / state.dt
        else:
            stats["solver_failures"] = 1
            out = self._force[idx].copy()
        return out
