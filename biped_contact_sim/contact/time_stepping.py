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

Substituting v⁺ in the contact space, ``v_c⁺ = J_c v⁺ = G (N p_n + T β) + dt·b_v + v_c`` with
the Delassus matrix ``G`` of ``state.delassus`` and ``b_v = J_c M⁻¹(Sᵀτ − h)`` (N puts p_n on
the normal rows, T maps β to ``Σ_j β_j d_j`` on the tangential rows). The constrained velocity
is ``J_c(q) v⁺``, as in Anitescu–Potra, so the impulse ``J_cᵀ(q) P`` and the velocity it
constrains use the same Jacobian: the impulse then does no work on the robot but that of the
stabilisation below. (An earlier version added the drift ``dt·γ_c`` to predict the contact
velocity at q⁺; the impulse then worked on the robot by ``−dt Pᵀγ_c`` per step, +221 J on a
limp biped dropped from 5 cm, whose whipping feet have large J̇v.) This ``v_c⁺`` gives the
LCP of size ``m(2 + d)`` (``lcp``)::

    z = [p_n; β; λ],   w = A z + q,
    A = [[NᵀGN, NᵀGT, 0], [TᵀGN, TᵀGT, E], [diag μ, −Eᵀ, 0]],
    q = [Nᵀ v_free + bias; Tᵀ v_free; 0],   v_free = v_c + dt·b_v,

with ``E`` the (md, m) block-diagonal matrix of ones. One formulation for impacts, sticking and
sliding: a landing is perfectly plastic (no restitution by construction).

``bias_i = max(φ_i, 0)/dt + β_s min(φ_i, 0)/dt`` (``stabilization`` β_s): the Anitescu–Potra
``φ/dt`` term for candidates inside the margin (they may close the gap exactly, never cross), and,
our choice, only a fraction β_s of a penetration removed per step so that the correction stays
gentle.

Energy: over a step the contact changes the kinetic energy by ``Pᵀv_c⁺ − ½PᵀGP``, at most
``Σᵢ P_n,i β_s max(−φ_i, 0)/dt`` (complementarity, maximal dissipation and the ε compliance
each contribute ≤ 0): at most the work of lifting the supported load out of its penetration by
the fraction β_s per step.

The pyramid is inscribed in the exact cone (vertices ``μ p_n d_j`` on the circle), so the
returned forces never violate ``‖f_t‖ ≤ μ f_n``; but it under-estimates friction between its
vertices: maximal dissipation over the polygon gives, for a point sliding at angle θ from the
nearest ``d_j``, a friction component against the motion of ``μ f_n cos θ`` (and a sideways
component that bends the path toward a facet direction). Worst case θ = π/d: −29.3 % for d = 4
(45°), −7.6 % for d = 8 (22.5°); test_constraint_models measures exactly these.
Along a ``d_j`` (the ramp brick slides along t₁ = d₀) the law is exact.

Our other addition: ``ε·I`` (``regularization`` ε_r, relative to the mean diagonal of G:
``ε = ε_r·mean(diag G)``) on the impulse blocks of A. Coplanar sole points and d > 2 facets
make the LCP degenerate (cond(A) ~ 1e18 on the standing biped). On such data Lemke's pivoting
loses every digit and ends on a ray or on a basis whose answer misses the LCP, although the LCP
has a solution: with ε_r = 1e-9, 37 % of the steps of a rigid box sliding on four corners and
4 % of the walk's did. ε makes the impulse blocks positive definite with cond ≲ 1/ε_r, so the
pivoting keeps ~10 digits; its price is a compliance ``ε·P`` in ``v_c⁺``: a sticking point may
creep at ``|v_t| ≤ ε‖P_t‖`` and a resting point settles ``ε P_n dt/β_s`` deeper. With the
default ε_r = 1e-6 both are negligible (box on a ramp: creep ~3 nm/s; biped: ~10⁻¹⁰ m).

Solving (``time_stepping_kernels``):

1. Warm start: the complementary basis of the previous step (stored per contact id) is
   re-solved on the new data, ``A_BB z_B = −q_B``; if that answer solves the LCP to the
   residual tolerance (``residual_tol``·‖q‖∞, the same test as Lemke's) it is taken. In steady
   contact the basis rarely changes, and this replaces the pivoting by one linear solve; only
   the basis's block of A is formed for it (``warm_basis_solve``; a Cholesky solve when no
   point of the basis slides: the block is then symmetric positive definite), the whole A only
   when the warm basis fails.
2. Lemke (lexicographic, compiled; ``solvers.lemke``), from scratch.
3. If Lemke fails (a ray, the pivot cap, or ``inaccurate``: counted by cause in
   ``ray_terminations``, ``pivot_caps``, ``inaccurate``), the second method: the
   Fischer–Burmeister semismooth Newton method (Bravo & Rengifo eqs. 17–18;
   ``solvers.fischer_burmeister_lcp``), warm started from the previous step's solution. It
   does not depend on a pivot sequence and solved every walk LCP Lemke failed on (``fb_solves``).
4. If that fails too (``fallbacks``): the exact-cone velocity-level law of docs/methods.md
   §2.3 step 3 (Gauss–Seidel, ``solvers.gauss_seidel_coulomb``) with the cone of the circle
   inscribed in the pyramid, ``μ cos(π/d)``, so the forces stay inside the pyramid and friction
   is kept. ``solver_failures`` counts the steps where even its sweeps hit their cap (its last
   forces are used).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from biped_contact_sim.contact.base import (
    ContactModel,
    ContactResult,
    ContactState,
    Stats,
    WarmStarted,
    positive,
)
from biped_contact_sim.contact.gauss_seidel import normal_bias, positive_count, unit_interval
from biped_contact_sim.contact.time_stepping_kernels import (
    TS_STATS,
    time_stepping_from_packed,
    time_stepping_kernel,
)
from biped_contact_sim.errors import ConfigError
from biped_contact_sim.solvers.lemke import RESIDUAL_TOL

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
        max_pivots: Lemke pivot cap; null (default) is ``10·n²`` for an LCP of size n
            (``solvers.lemke.default_max_pivots``).
        regularization: ε_r, relative diagonal compliance of the impulse blocks (our
            addition; module docstring: it keeps the degenerate LCP solvable by pivoting).
        residual_tol: an LCP answer is accepted iff ``max|min(z, w)| ≤ residual_tol·‖q‖∞``
            (Lemke's own convergence test, the warm start's and the second method's).
        fb_max_iterations: iteration cap of the second method (Fischer–Burmeister).
        warm_start: try the previous step's complementary basis first (per contact id).
        fallback_tolerance: tolerance of the friction-keeping fallback (Gauss–Seidel).
        fallback_max_sweeps: its sweep cap.
    """

    directions: int = 4
    margin: float = 1e-3
    stabilization: float = 0.2
    pivot_tol: float = 1e-12
    max_pivots: int | None = None
    regularization: float = 1e-6
    residual_tol: float = RESIDUAL_TOL
    fb_max_iterations: int = 200
    warm_start: bool = True
    fallback_tolerance: float = 1e-10
    fallback_max_sweeps: int = 200

    def __post_init__(self):
        p = "time_stepping."
        if isinstance(self.directions, bool) or self.directions not in DIRECTIONS:
            raise ConfigError(f"{p}directions = {self.directions!r} must be one of "
                              + ", ".join(map(str, DIRECTIONS)))
        positive(p + "margin", self.margin, allow_zero=True)
        unit_interval(p + "stabilization", self.stabilization)
        positive(p + "pivot_tol", self.pivot_tol)
        positive(p + "regularization", self.regularization, allow_zero=True)
        positive(p + "residual_tol", self.residual_tol)
        positive(p + "fallback_tolerance", self.fallback_tolerance)
        positive_count(p + "max_pivots", self.max_pivots, allow_none=True)
        positive_count(p + "fb_max_iterations", self.fb_max_iterations)
        positive_count(p + "fallback_max_sweeps", self.fallback_max_sweeps)
        if not isinstance(self.warm_start, bool):
            raise ConfigError(f"{p}warm_start = {self.warm_start!r} must be true or false")


class TimeSteppingContact(ContactModel, WarmStarted):
    """Anitescu–Potra / Stewart–Trinkle time stepping with Lemke (docs/methods.md §2.4).

    Statistics per step: ``candidates``, ``system_size`` (LCP size m(2 + d)),
    ``solver_iterations`` (Lemke pivots plus Fischer–Burmeister iterations), ``warm_starts``
    (0/1: the previous basis solved it), Lemke's failures by cause ``ray_terminations``,
    ``pivot_caps``, ``inaccurate`` (0/1 each), ``fb_solves`` (0/1: the second method solved
    it), ``fallbacks`` (0/1: neither did; friction-keeping Gauss–Seidel), ``solver_failures``
    (0/1: the fallback hit its sweep cap), ``residual`` (``max |min(z, w)|`` of the LCP, or
    the Coulomb residual of the fallback).
    """

    name = "time_stepping"
    Settings = TimeSteppingSettings
    stat_names = TS_STATS
    integrators = ("semi_implicit_euler",)
    #: statistics that count events a user must be warned about
    warning_stats = ("ray_terminations", "pivot_caps", "inaccurate", "fallbacks",
                     "solver_failures")

    def reset(self, n_points: int) -> None:
        s = self.settings
        self._D = np.ascontiguousarray(friction_directions(s.directions))
        # Warm start per contact id: (p_n, β, λ) and their basis flags.
        self._reset_warm(n_points, 2 * (2 + s.directions))
        self._params = np.array([s.margin, s.stabilization, s.regularization, s.pivot_tol,
                                 s.max_pivots or 0, s.residual_tol, s.fb_max_iterations,
                                 s.fallback_tolerance, s.fallback_max_sweeps, s.warm_start],
                                dtype=float)

    def build_lcp_reference(self, state: ContactState, idx: np.ndarray | None = None
            ) -> tuple[np.ndarray, np.ndarray]:
        """The LCP ``(A, q)`` of the module docstring over the candidates, size m(2 + d).

        The readable numpy form; the step uses the compiled ``build_lcp_kernel`` (tested equal).

        Args:
            state: the contact state.
            idx: candidate indices (default: ``φ ≤ margin``).
        """
        s = self.settings
        if idx is None:
            idx = np.flatnonzero(state.phi <= s.margin)
        m, d, dt = idx.size, s.directions, state.dt
        G, b = state.delassus(idx)
        rows = (3 * idx[:, None] + np.arange(3)).ravel()
        b = b - state.gamma_c[rows]  # b_v (module docstring)
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
        # Our addition: ε·I on the impulse blocks (relative to the mean diagonal of G).
        eps = s.regularization * max(float(np.mean(np.diag(G))), 0.0)
        A[np.arange(m + m * d), np.arange(m + m * d)] += eps
        return A, q

    def compute(self, state: ContactState, commit: bool = True) -> ContactResult:
        # The kernel copies the contact ids into ``keys`` (``contact_keys`` of all points) and
        # computes the active set, cheaper there than by numpy calls here.
        phi, vc, ids, f, active, stats, keys, rows = self._step_buffers(state, len(TS_STATS))
        packed, warm = state.packed, self._warm
        if packed is not None:  # G and b in the same compiled call
            time_stepping_from_packed(*packed, vc, phi, state.mu, state.dt, self._D,
                                      self._params, warm.keys, warm.rows, ids, f, active, keys,
                                      rows, stats)
        else:
            G, b = state.delassus(self._all, False)  # b_v: the drift is not part of J_c v⁺
            time_stepping_kernel(G, b, vc, phi, state.mu, state.dt, self._D, self._params,
                                 warm.keys, warm.rows, ids, f, active, keys, rows, stats)
        if commit:
            self._commit_warm(keys, rows)
        return ContactResult(f, active, Stats(self.stat_names, stats))
