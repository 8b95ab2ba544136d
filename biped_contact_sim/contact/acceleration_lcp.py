"""``acceleration_lcp``: acceleration–force complementarity with Newton impacts.

docs/methods.md §2.5; Bravo & Rengifo §2.1–2.2 (eqs. 14–22); Chardonnet eq. 7
(Ruspini–Khatib); Baraff.
One step at (q, v), in contact frames ``[t₁, t₂, n]``, over the candidates ``φ_i ≤ margin``:

1. Impacts (Bravo & Rengifo eq. 20–22, Chardonnet eqs. 2–6): when a candidate approaching
   faster than ``impact_velocity_threshold`` reaches the ground within the step
   (``φ + dt v_n ≤ 0``), every approaching candidate gets the normal impulse of the impact LCP
   of docs/methods.md §2.3 step 2 (``gauss_seidel.newton_impact``, Lemke; impact time = start of the
   step) with restitution e (0 in the paper). Zeno (shock
   accumulation, Bravo & Rengifo §2.2): an impact whose rebound speed ``e|v_n⁻|`` is below
   ``zeno_velocity``, or a point with ``zeno_max_impacts`` impacts within ``zeno_window``, is
   made plastic (e = 0: the point becomes a resting contact) and counted in ``zeno_events``.
2. Active set: the candidates after the impacts, except the restitution rebounds (impacting
   points left with ``φ̇ > impact_velocity_threshold``), which fly off, and the points still
   approaching faster than the threshold without reaching the ground in this step (in flight
   until their impact step). This is the paper's ``φ_i = 0, φ̇_i = 0`` with tolerances: an
   impacting point was just stopped by the impact, and a point that separates slowly stays in
   the set, where the LCP releases it (``f_n = 0``)
   unless its free acceleration would bring it back faster than the stabilised target below.
   (Dropping slowly separating points instead lets a foot that rocks on its toes sink its
   heel a little at every rock, which we observed.) Sticking points ``‖ṗ_t‖ < slip_velocity``;
   the others slide.
3. Acceleration LCP (eq. 15, 16; Chardonnet eq. 7 with friction): ``p̈_c = G f + b``
   (``state.delassus``) and

       0 ≤ f_n ⊥ p̈_n − a_n ≥ 0                                   (all active points)
       0 ≤ β  ⊥ λ e + Dᵀ(p̈_t + ṗ_t/dt) ≥ 0,  0 ≤ λ ⊥ μ f_n − eᵀβ ≥ 0   (sticking)
       f_t = −μ f_n ṗ_t/‖ṗ_t‖                                     (sliding)

   with ``f_t = D β`` for sticking points (d facets ``d_j = (cos 2πj/d, sin 2πj/d)``, the
   polyhedral cone of docs/methods.md §2.4, inscribed in the exact cone) and the sliding law folded
   into the normal column (exact cone, a non-symmetric LCP). Solved with the Fischer–Burmeister
   semismooth Newton method (Bravo & Rengifo eq. 17–18, ``solvers.fischer_burmeister_lcp``);
   if it fails, with Lemke (counted in ``lemke_fallbacks``). Fischer–Burmeister is warm started
   from the last committed solution (per contact id) when the stick/slide flags are unchanged.
   A sliding point whose friction would reverse its slip within the step
   (``ṗ_t·(ṗ_t + dt p̈_t) < 0``) comes to rest in it: it is re-solved once as sticking (the
   slide → stick transition; without it the slip direction chatters from step to step).

   Our additions, because semi-implicit Euler drifts off an acceleration-level constraint
   (the paper's target is ``a_n = 0``): the normal target is the acceleration that brings the
   normal velocity to a stabilised value by the end of the step,

       a_n = (v_n* − φ̇)/dt,   v_n* = −max(φ, 0)/dt − β_s min(φ, 0)/dt

   (β_s = ``stabilization``; the velocity bias of docs/methods.md §2.3 step 3). A resting
   contact (φ = φ̇ = 0) gets the paper's ``a_n = 0``. A point above the ground may close its gap
   within the step but not cross it; a point that still approaches (slower than the impact
   threshold) is stopped within the step, a plastic micro-impact, as the sticking target below
   stops tangential motion; a penetration left by the integration drift is removed by the
   fraction β_s per step, which never pushes a point that already separates faster.
   We first used Baumgarte's target ``min(−2ζωφ̇ − ω²φ, −(φ̇ + φ/dt)/dt)`` (ω = 50 rad/s,
   ζ = 1). It let a point that touches down slower than the impact threshold sink (45 µm for a
   box landing at 6.7 mm/s) and then pushed it back out over ~1/ω, the contact doing positive
   work on the rising body: energy came out of the constraint at every soft touch-down. With
   the target above, the contact force does positive work only while removing a penetration,
   at most ``f_n·β_s|φ|`` per step, so a touch-down can gain at most the potential energy of
   lifting the supported weight by the largest penetration (``m g max|φ|``; micrometres here),
   plus, in a step with an impact, ``dt p_Iᵀ b_n`` (as in gauss_seidel).
   As in gauss_seidel (docs/methods.md §2.3 step 3), ``b`` omits the drift ``J̇_c q̇`` of the
   paper's ``B_c`` by default (``drift_term = false``): the targets then bound ``J_c v⁺``, the
   velocity along the same Jacobian as the force, so the contact does no work on the robot
   except through the stabilisation (with the drift, +158 J on a limp biped dropped from 5 cm).
   The sticking target ``p̈_t = −ṗ_t/dt`` removes the residual tangential velocity in one step
   (with ``v⁺ = v + dt v̇`` this is ``ṗ_t⁺ = 0``, the velocity-level sticking of §2.3).
   ``b`` is evaluated at the velocity before the impact (first-order error in the impact step).
   And ``ε·I`` (``regularization``, relative to the mean diagonal of G) on the force blocks:
   the facet block ``DᵀG_ttD`` has rank 2 < d and coplanar sole points make ``G_nn`` singular,
   so the LCP is degenerate and semismooth Newton stalls on it; ε = 1e-6 changes the contact
   accelerations by ``ε·f`` only.

   Solving (compiled, ``acceleration_lcp_kernels``): first the complementary basis of the
   previous step (stored per contact id, used when the stick/slide flags are unchanged) is
   re-solved on the new data; it is taken if it meets Fischer–Burmeister's own convergence
   test ``‖Φ‖∞ ≤ tol`` (it is then the point a Newton step from the previous solution
   reaches: ``warm_starts``). If it misses, the unknown that violates its sign most changes
   side and the basis is solved again, up to 4 times (single principal pivots,
   ``solvers.lemke_kernels.pivoting_basis_solve``; at rest the stored basis often misses only
   by an unused friction facet whose force was ~tol). Otherwise Fischer–Burmeister, warm
   started from the previous solution, then Lemke as above. On a step without impacts the
   basis is solved on the factor without forming G or the LCP matrix
   (``acceleration_lcp_warm_kernels``).
4. Painlevé (no solution of the acceleration LCP with sliding friction): when Fischer–Burmeister
   and Lemke both fail, the step is counted in ``painleve_events`` and resolved impulsively
   (the "tangential impact" fallback): the exact velocity-level Coulomb law of §2.3 step 3
   (``solvers.gauss_seidel_coulomb``) over the active points, with the normal bias
   ``max(φ, 0)/dt + β_s min(φ, 0)/dt``, returned as impulse/dt. The same fallback resolves a
   step whose impact LCP failed (``impact_failures``).

The force returned for the step is ``p_I/dt + f`` on the candidates (zero elsewhere).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from biped_contact_sim.contact.acceleration_lcp_kernels import (
    ACC_STATS,
    N_PARAMS,
    acceleration_lcp_kernel,
    acceleration_lcp_step,
)
from biped_contact_sim.contact.base import (
    ContactModel,
    ContactResult,
    ContactState,
    Stats,
    positive,
)
from biped_contact_sim.contact.gauss_seidel import contact_keys, positive_count, unit_interval
from biped_contact_sim.contact.time_stepping import DIRECTIONS, friction_directions
from biped_contact_sim.errors import ConfigError
from biped_contact_sim.solvers.lemke import RESIDUAL_TOL
from biped_contact_sim.solvers.warm_start import KeyedRows

_INT64 = np.dtype(np.int64)
N_STATS = len(ACC_STATS)


def normal_target(phi: np.ndarray, vn: np.ndarray, dt: float, beta: float) -> np.ndarray:
    """Lower bound ``a_n`` of the normal acceleration, ``p̈_n ≥ a_n`` (module docstring, step 3).

    ``a_n = (v_n* − φ̇)/dt`` with ``v_n* = −max(φ, 0)/dt − β min(φ, 0)/dt``: the end-of-step
    normal velocity may not be below v_n* (close a gap within the step, never cross; stop an
    approach; remove the fraction β of a penetration).
    """
    return (-(np.maximum(phi, 0.0) + beta * np.minimum(phi, 0.0)) / dt - vn) / dt


@dataclass(frozen=True)
class AccelerationLCPSettings:
    """Settings of ``acceleration_lcp`` (Bravo & Rengifo §2; docs/methods.md §2.5).

    Attributes:
        restitution: e of Newton's law, in [0, 1] (the paper: 0).
        margin: candidates have φ ≤ margin [m].
        impact_velocity_threshold: approaching faster than this [m/s] is an impact; a
            candidate with ``|φ̇|`` below it is a resting contact.
        slip_velocity: tangential speed [m/s] below which an active point sticks.
        directions: facets d of the sticking cone (4 or 8).
        stabilization: β_s ∈ [0, 1], fraction of a penetration removed per step by the normal
            target (our addition, module docstring step 3).
        tolerance: Fischer–Burmeister tolerance on ``‖Φ‖∞``, relative to ``max(1, ‖q‖∞)``.
        max_iterations: Fischer–Burmeister iteration cap.
        zeno_velocity: rebound speeds below this [m/s] are made plastic (Zeno).
        zeno_max_impacts: this many impacts of one point within ``zeno_window``: plastic.
        zeno_window: [s].
        pivot_tol: Lemke pivot tolerance (impacts and the fallback).
        gs_tolerance: tolerance of the impulsive fallback (Gauss–Seidel).
        gs_max_sweeps: sweep cap of the impulsive fallback.
        regularization: ε, relative diagonal compliance of the LCP force blocks (our
            addition; makes the degenerate facet and coplanar-point blocks non-singular).
        drift_term: keep the paper's ``J̇_c q̇`` in ``b`` (not energy-consistent; module
            docstring step 3).
    """

    restitution: float = 0.0
    margin: float = 1e-3
    impact_velocity_threshold: float = 1e-2
    slip_velocity: float = 1e-3
    directions: int = 4
    stabilization: float = 0.2
    tolerance: float = 1e-10
    max_iterations: int = 50
    zeno_velocity: float = 0.05
    zeno_max_impacts: int = 10
    zeno_window: float = 0.5
    pivot_tol: float = 1e-12
    gs_tolerance: float = 1e-10
    gs_max_sweeps: int = 100
    regularization: float = 1e-6
    drift_term: bool = False

    def __post_init__(self):
        p = "acceleration_lcp."
        unit_interval(p + "restitution", self.restitution)
        positive(p + "margin", self.margin, allow_zero=True)
        positive(p + "impact_velocity_threshold", self.impact_velocity_threshold,
                 allow_zero=True)
        positive(p + "slip_velocity", self.slip_velocity)
        if isinstance(self.directions, bool) or self.directions not in DIRECTIONS:
            raise ConfigError(f"{p}directions = {self.directions!r} must be one of "
                              + ", ".join(map(str, DIRECTIONS)))
        unit_interval(p + "stabilization", self.stabilization)
        positive(p + "tolerance", self.tolerance)
        positive_count(p + "max_iterations", self.max_iterations)
        positive(p + "zeno_velocity", self.zeno_velocity, allow_zero=True)
        positive_count(p + "zeno_max_impacts", self.zeno_max_impacts)
        positive(p + "zeno_window", self.zeno_window, allow_zero=True)
        positive(p + "pivot_tol", self.pivot_tol)
        positive(p + "gs_tolerance", self.gs_tolerance)
        positive_count(p + "gs_max_sweeps", self.gs_max_sweeps)
        positive(p + "regularization", self.regularization, allow_zero=True)
        if not isinstance(self.drift_term, bool):
            raise ConfigError(f"{p}drift_term = {self.drift_term!r} must be true or false")


class AccelerationLCPContact(ContactModel):
    """Acceleration-level LCP between events, Newton impulses at impacts (docs/methods.md §2.5).

    Statistics per step: ``candidates``, ``active``, ``sliding``, ``system_size`` (size of the
    acceleration LCP, a + (d + 1)·sticking), ``impacts``, ``zeno_events``,
    ``impact_failures``, ``solver_iterations`` (Fischer–Burmeister), ``warm_starts`` (0/1: the
    previous basis solved it, after at most 4 principal pivots), ``solver_failures`` (0/1:
    Fischer–Burmeister failed), ``lemke_fallbacks`` (0/1: Lemke solved it instead),
    ``painleve_events`` (0/1: no solution, impulsive fallback), ``residual`` (``‖Φ‖∞`` or
    ``max |min(z, w)|`` of the LCP, or the Coulomb residual of the fallback).
    """

    name = "acceleration_lcp"
    Settings = AccelerationLCPSettings
    stat_names = ACC_STATS
    integrators = ("semi_implicit_euler",)
    #: statistics that count events a user must be warned about
    warning_stats = ("impact_failures", "solver_failures", "painleve_events", "zeno_events")

    def reset(self, n_points: int) -> None:
        s = self.settings
        d = s.directions
        self._t = 0.0  # committed time, for the Zeno window
        self._all = np.arange(n_points)
        # One buffer for the kernel (each array argument costs its dispatch):
        # [params (N_PARAMS) | D (2, d) | e (n_points) | rows (2, n_points, width)].
        width = 2 * (2 + d) + 1
        self._work = np.empty(N_PARAMS + 2 * d + n_points * (1 + 2 * width))
        self._params = self._work[:N_PARAMS]
        self._params[:] = (s.margin, s.impact_velocity_threshold, s.slip_velocity,
                           s.stabilization, s.tolerance, s.max_iterations, s.pivot_tol,
                           RESIDUAL_TOL, s.gs_tolerance, s.gs_max_sweeps, s.regularization)
        self._D = self._work[N_PARAMS:N_PARAMS + 2 * d].reshape(2, d)
        self._D[:] = friction_directions(d)
        self._e = self._work[N_PARAMS + 2 * d:N_PARAMS + 2 * d + n_points]
        self._e[:] = s.restitution  # restitution per point (the Zeno rule lowers it per step)
        rows = self._work[N_PARAMS + 2 * d + n_points:].reshape(2, n_points, width)
        self._keys = np.empty((2, n_points), dtype=np.int64)
        self._hit = np.empty(n_points, dtype=bool)
        # Warm start per contact id: (f_n, β, λ), their basis flags, sticking. The kernel
        # writes the next rows and their keys into the buffer pair not stored (the stored pair
        # is read in the same call); a commit stores it without a copy.
        self._warm = KeyedRows(width)
        self._buffers = ((self._keys[0], rows[0]), (self._keys[1], rows[1]))
        self._stored = -1  # the stored pair (−1: none)
        # Times of each contact's last impacts (ring buffer, −inf when none), per contact id.
        self._impacts = KeyedRows(s.zeno_max_impacts)

    def build_lcp_reference(self, state: ContactState, idx: np.ndarray, vc: np.ndarray,
            sticking: np.ndarray | None = None
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The acceleration LCP of step 3 over the active points ``idx``.

        The readable numpy form; the step uses the compiled
        ``acceleration_lcp_kernels.build_lcp_kernel`` (tested equal).

        Args:
            state: the contact state.
            idx: active point indices.
            vc: (a, 3) their contact velocities (after the impacts).
            sticking: (a,) bool, the points treated as sticking (default
                ``‖ṗ_t‖ < slip_velocity``).

        Returns:
            ``(A, q, B, sticking)``: ``w = A z + q`` with ``z = [f_n; β; λ]``, the (3a, a + d s)
            map ``B`` from ``[f_n; β]`` to the contact forces, and the sticking mask (a,).
        """
        s = self.settings
        a, d = idx.size, s.directions
        G, b = state.delassus(idx)
        if not s.drift_term:
            b = b - state.gamma_c[(3 * idx[:, None] + np.arange(3)).ravel()]
        vt = vc[:, :2]
        speed = np.sqrt((vt * vt).sum(axis=1))
        if sticking is None:
            sticking = speed < s.slip_velocity
        stick = np.flatnonzero(sticking)
        ns = stick.size
        mu = state.mu[idx]
        B = np.zeros((3 * a, a + d * ns))
        B[2::3, :a] = np.eye(a)
        slide = np.flatnonzero(~sticking)
        u = vt[slide] / speed[slide, None]
        B[3 * slide, slide] = -mu[slide] * u[:, 0]  # f_t = −μ f_n u folded into the f_n column
        B[3 * slide + 1, slide] = -mu[slide] * u[:, 1]
        D = friction_directions(d)
        for k, i in enumerate(stick):
            B[3 * i:3 * i + 2, a + d * k:a + d * (k + 1)] = D
        GB = G @ B
        n_z = a + (d + 1) * ns
        A = np.zeros((n_z, n_z))
        q = np.zeros(n_z)
        A[:a, :a + d * ns] += GB[2::3]
        # Our addition: a tiny compliance on the force blocks (module docstring).
        eps = s.regularization * max(float(np.mean(np.diag(G))), 0.0)
        A[np.arange(a + d * ns), np.arange(a + d * ns)] += eps
        q[:a] = b[2::3] - normal_target(state.phi[idx], vc[:, 2], state.dt, s.stabilization)
        for k, i in enumerate(stick):
            rows = slice(a + d * k, a + d * (k + 1))
            A[rows, :a + d * ns] += D.T @ GB[3 * i:3 * i + 2]
            A[rows, a + d * ns + k] = 1.0
            q[rows] = D.T @ (b[3 * i:3 * i + 2] + vt[i] / state.dt)
            lam = a + d * ns + k
            A[lam, i] = mu[i]
            A[lam, a + d * k:a + d * (k + 1)] = -1.0
        return A, q, B, sticking

    def compute(self, state: ContactState, commit: bool = True) -> ContactResult:
        s = self.settings
        phi = np.ascontiguousarray(state.phi)  # one compiled signature (a view is strided)
        m_all, dt = phi.shape[0], state.dt
        if getattr(self, "_warm", None) is None or len(self._all) != m_all:
            self.reset(m_all)
        ids = state.ids
        # (the ids themselves when they are the keys already: the kernel copies them)
        keys = ids if type(ids) is np.ndarray and ids.dtype == _INT64 \
            else contact_keys(state, self._all)
        vc = np.ascontiguousarray(state.vc)
        zeno = 0
        if s.restitution > 0.0:  # Zeno (step 1): plastic impacts for slow or repeated ones
            history = np.full((m_all, s.zeno_max_impacts), -np.inf)
            self._impacts.lookup(keys, history, fill=-np.inf)
            recent = (history > self._t - s.zeno_window).sum(axis=1)
            impacting = (vc[:, 2] < -s.impact_velocity_threshold) & (phi <= s.margin) \
                & (phi + dt * vc[:, 2] <= 0.0)
            self._e[:] = s.restitution
            if impacting.any():
                plastic = impacting & ((s.restitution * -vc[:, 2] < s.zeno_velocity)
                                       | (recent >= s.zeno_max_impacts))
                self._e[plastic] = 0.0
                zeno = int(plastic.sum())
        f = np.empty((m_all, 3))
        stats = np.empty(N_STATS)
        active = np.empty(m_all, dtype=bool)
        stored = self._stored
        nxt = 1 if stored == 0 else 0
        packed = state.packed
        if packed is not None:  # G and b (module docstring, step 3) in the same call
            acceleration_lcp_step(*packed, s.drift_term, vc, phi, state.mu, dt, keys, f, stats,
                                  self._work, self._hit, self._keys, stored, active)
        else:
            G, b = state.delassus(self._all, s.drift_term)  # module docstring, step 3
            warm = self._warm
            keys_out, rows = self._buffers[nxt]
            acceleration_lcp_kernel(G, b, vc, phi, state.mu, self._e, dt, self._D, self._params,
                                    warm.keys, warm.rows, keys, f, self._hit, rows, stats, True)
            keys_out[:] = keys
            np.greater(f[:, 2], 0.0, out=active)
        if zeno:
            stats[5] = zeno
        if commit:
            self._stored = nxt
            self._warm.keys, self._warm.rows = self._buffers[nxt]  # KeyedRows.store, no checks
            if s.restitution > 0.0:
                hit = self._hit
                if hit.any():
                    history[hit] = np.roll(history[hit], 1, axis=1)
                    history[hit, 0] = self._t
                self._impacts.store(self._buffers[nxt][0], history)
            self._t += dt
        return ContactResult(f, active, Stats(self.stat_names, stats))
