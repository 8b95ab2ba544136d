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
   from the last committed solution when the active set and stick/slide flags are unchanged.
   A sliding point whose friction would reverse its slip within the step
   (``ṗ_t·(ṗ_t + dt p̈_t) < 0``) comes to rest in it: it is re-solved once as sticking (the
   slide → stick transition; without it the slip direction chatters from step to step).

   Our additions, because semi-implicit Euler drifts off an acceleration-level constraint
   (the paper's target is ``a_n = 0``): the stabilised normal target

       a_n = min(−2ζω φ̇ − ω² φ,  −(φ̇ + φ/dt)/dt)

   (ζ = ``baumgarte_zeta``, ω = ``baumgarte_omega``). The first term is Baumgarte's: a
   penetrating or approaching point obeys ``φ̈ = −2ζω φ̇ − ω² φ`` while the contact pushes. The
   second only forbids crossing the surface within the step (``φ̇⁺ ≥ −φ/dt``); the minimum
   keeps the weaker of the two, so a point above the ground or separating is never pushed by
   the Baumgarte term (it would otherwise act as a spring on a rebounding ball inside the
   margin and add energy to it). The sticking
   target ``p̈_t = −ṗ_t/dt`` removes the residual tangential velocity in one step (with
   ``v⁺ = v + dt v̇`` this is ``ṗ_t⁺ = 0``, the velocity-level sticking of §2.3).
   ``b`` is evaluated at the velocity before the impact (first-order error in the impact step).
   And ``ε·I`` (``regularization``, relative to the mean diagonal of G) on the force blocks:
   the facet block ``DᵀG_ttD`` has rank 2 < d and coplanar sole points make ``G_nn`` singular,
   so the LCP is degenerate and semismooth Newton stalls on it; ε = 1e-6 changes the contact
   accelerations by ``ε·f`` only.
4. Painlevé (no solution of the acceleration LCP with sliding friction): when Fischer–Burmeister
   and Lemke both fail, the step is counted in ``painleve_events`` and resolved impulsively
   (the "tangential impact" fallback): the exact velocity-level Coulomb law of §2.3 step 3
   (``solvers.gauss_seidel_coulomb``) over the active points, with the normal bias
   ``max(φ, 0)/dt + ω·dt·min(φ, 0)/dt``, returned as impulse/dt. The same fallback resolves a
   step whose impact LCP failed (``impact_failures``).

The force returned for the step is ``p_I/dt + f`` on the candidates (zero elsewhere).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from biped_contact_sim.contact.base import ContactModel, ContactResult, ContactState, positive
from biped_contact_sim.contact.gauss_seidel import newton_impact, normal_bias, unit_interval
from biped_contact_sim.contact.time_stepping import DIRECTIONS, friction_directions
from biped_contact_sim.errors import ConfigError
from biped_contact_sim.solvers import fischer_burmeister_lcp, gauss_seidel_coulomb, lemke


def normal_target(phi: np.ndarray, vn: np.ndarray, dt: float, omega: float,
                  zeta: float) -> np.ndarray:
    """Lower bound ``a_n`` of the normal acceleration, ``p̈_n ≥ a_n`` (module docstring, step 3).

    ``a_n = min(−2ζω φ̇ − ω² φ, −(φ̇ + φ/dt)/dt)``: the Baumgarte target, relaxed to "do not
    cross the surface within this step" (``φ̇⁺ ≥ −φ/dt``) whenever that is weaker, so that a
    point above the ground or separating is never pushed by the Baumgarte term.
    """
    baumgarte = -2.0 * zeta * omega * vn - omega ** 2 * phi
    no_crossing = -(vn + phi / dt) / dt
    return np.minimum(baumgarte, no_crossing)


def _positive_int(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{name} = {value!r} must be an integer >= 1")
    return value


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
        baumgarte_omega: ω [rad/s] of the normal drift stabilisation (our addition).
        baumgarte_zeta: ζ of the normal drift stabilisation (our addition).
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
    """

    restitution: float = 0.0
    margin: float = 1e-3
    impact_velocity_threshold: float = 1e-2
    slip_velocity: float = 1e-3
    directions: int = 4
    baumgarte_omega: float = 50.0
    baumgarte_zeta: float = 1.0
    tolerance: float = 1e-10
    max_iterations: int = 50
    zeno_velocity: float = 0.05
    zeno_max_impacts: int = 10
    zeno_window: float = 0.5
    pivot_tol: float = 1e-12
    gs_tolerance: float = 1e-10
    gs_max_sweeps: int = 100
    regularization: float = 1e-6

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
        positive(p + "baumgarte_omega", self.baumgarte_omega, allow_zero=True)
        positive(p + "baumgarte_zeta", self.baumgarte_zeta, allow_zero=True)
        positive(p + "tolerance", self.tolerance)
        _positive_int(p + "max_iterations", self.max_iterations)
        positive(p + "zeno_velocity", self.zeno_velocity, allow_zero=True)
        _positive_int(p + "zeno_max_impacts", self.zeno_max_impacts)
        positive(p + "zeno_window", self.zeno_window, allow_zero=True)
        positive(p + "pivot_tol", self.pivot_tol)
        positive(p + "gs_tolerance", self.gs_tolerance)
        _positive_int(p + "gs_max_sweeps", self.gs_max_sweeps)
        positive(p + "regularization", self.regularization, allow_zero=True)


class AccelerationLCPContact(ContactModel):
    """Acceleration-level LCP between events, Newton impulses at impacts (docs/methods.md §2.5).

    Statistics per step: ``candidates``, ``active``, ``sliding``, ``system_size`` (size of the
    acceleration LCP, a + (d + 1)·sticking), ``impacts``, ``zeno_events``,
    ``impact_failures``, ``solver_iterations`` (Fischer–Burmeister), ``solver_failures`` (0/1:
    Fischer–Burmeister failed), ``lemke_fallbacks`` (0/1: Lemke solved it instead),
    ``painleve_events`` (0/1: no solution, impulsive fallback), ``residual``
    (``max |min(z, w)|`` of the LCP, or the Coulomb residual of the fallback).
    """

    name = "acceleration_lcp"
    Settings = AccelerationLCPSettings
    integrators = ("semi_implicit_euler",)

    def reset(self, n_points: int) -> None:
        self._t = 0.0  # committed time, for the Zeno window
        # Warm start of Fischer–Burmeister: (active points and sticking flags, z) of the last
        # committed step; used only when the next LCP has the same structure.
        self._warm: tuple | None = None
        self._warm_next: tuple | None = None
        # Times of each point's last impacts (ring buffer), −inf when none.
        self._impacts = np.full((n_points, self.settings.zeno_max_impacts), -np.inf)

    def lcp(self, state: ContactState, idx: np.ndarray, vc: np.ndarray,
            sticking: np.ndarray | None = None
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The acceleration LCP of step 3 over the active points ``idx``.

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
        omega, zeta = s.baumgarte_omega, s.baumgarte_zeta
        A[:a, :a + d * ns] += GB[2::3]
        # Our addition: a tiny compliance on the force blocks. The facet block DᵀG_ttD has rank
        # 2 < d and coplanar points make G_nn singular, so the LCP's solution is not unique and
        # the semismooth Newton Jacobian is singular there; ε·I (relative to the mean diagonal
        # of G) picks the least-norm-like solution and changes accelerations by ε·f only.
        eps = s.regularization * max(float(np.mean(np.diag(G))), 0.0)
        A[np.arange(a + d * ns), np.arange(a + d * ns)] += eps
        q[:a] = b[2::3] - normal_target(state.phi[idx], vc[:, 2], state.dt, omega, zeta)
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
        m_all, dt = state.n_points, state.dt
        if getattr(self, "_impacts", None) is None or len(self._impacts) != m_all:
            self.reset(m_all)
        f = np.zeros((m_all, 3))
        stats = {"candidates": 0, "active": 0, "sliding": 0, "system_size": 0, "impacts": 0,
                 "zeno_events": 0,
                 "impact_failures": 0, "solver_iterations": 0, "solver_failures": 0,
                 "lemke_fallbacks": 0, "painleve_events": 0, "residual": 0.0}
        idx = np.flatnonzero(state.phi <= s.margin)
        self._warm_next = None
        if idx.size == 0:
            if commit:
                self._t += dt
                self._warm = None
            return ContactResult(f, np.zeros(m_all, dtype=bool), stats)
        m = idx.size
        G, _ = state.delassus(idx)
        phi, vc = state.phi[idx], state.vc[idx]
        # Step 1: impacts, with Zeno detection on the restitution.
        vn = vc[:, 2]
        impacting = (vn < -s.impact_velocity_threshold) & (phi + dt * vn <= 0.0)
        e = np.full(m, s.restitution)
        if impacting.any() and s.restitution > 0.0:
            recent = (self._impacts[idx] > self._t - s.zeno_window).sum(axis=1)
            zeno = impacting & ((s.restitution * -vn < s.zeno_velocity)
                                | (recent >= s.zeno_max_impacts))
            e[zeno] = 0.0
            stats["zeno_events"] = int(zeno.sum())
        imp = newton_impact(G, vc, phi, dt, e, s.impact_velocity_threshold, s.pivot_tol)
        stats.update(candidates=m, impacts=int(imp.impacting.sum()),
                     impact_failures=int(imp.failed))
        if commit and imp.impacting.any():
            hit = idx[imp.impacting]
            self._impacts[hit] = np.roll(self._impacts[hit], 1, axis=1)
            self._impacts[hit, 0] = self._t
        # Step 2: the active set, after the impacts: neither rebounding nor still approaching.
        vn_after = imp.vc[:, 2]
        act = ~(imp.impacting & (e > 0.0) & (vn_after > s.impact_velocity_threshold)) \
            & (vn_after >= -s.impact_velocity_threshold)
        if imp.failed:  # the impulsive fallback takes every candidate (the law separates)
            act = np.ones(m, dtype=bool)
        f_c = np.zeros((m, 3))
        if act.any():
            sub = np.flatnonzero(act)
            if imp.failed:
                f_c[sub] = self._impulsive(state, idx[sub], imp.vc[sub], stats)
            else:
                f_c[sub] = self._accelerations(state, idx[sub], imp.vc[sub], stats)
        f_c[:, 2] += imp.p / dt
        f[idx] = f_c
        stats["active"] = int(act.sum())
        if commit:
            self._t += dt
            self._warm, self._warm_next = self._warm_next, None
        active = np.zeros(m_all, dtype=bool)
        active[idx] = f_c[:, 2] > 0.0
        return ContactResult(f, active, stats)

    def _accelerations(self, state: ContactState, idx: np.ndarray, vc: np.ndarray,
                       stats: dict) -> np.ndarray:
        """Step 3 (FB, then Lemke), or step 4 when neither solves it; forces (a, 3)."""
        s, dt = self.settings, state.dt
        sticking = None
        G, b = state.delassus(idx)
        for _ in range(2):
            A, q, B, sticking = self.lcp(state, idx, vc, sticking)
            # Relative tolerance: Φ mixes accelerations and forces whose scale is that of q.
            tol = s.tolerance * max(1.0, float(np.abs(q).max(initial=0.0)))
            key = (tuple(idx), tuple(sticking))
            z0 = self._warm[1] if self._warm is not None and self._warm[0] == key else None
            sol = fischer_burmeister_lcp(A, q, z0=z0, tol=tol, max_iter=s.max_iterations)
            stats["solver_iterations"] += sol.iterations
            if not sol.converged:
                stats["solver_failures"] = 1
                sol = lemke(A, q, pivot_tol=s.pivot_tol)
                if sol.converged:
                    stats["lemke_fallbacks"] = 1
            if not sol.converged:
                stats["painleve_events"] = 1
                return self._impulsive(state, idx, vc, stats)
            f = (B @ np.maximum(sol.x, 0.0)[:B.shape[1]]).reshape(-1, 3)
            # Slide → stick within the step: a sliding point whose friction would reverse its
            # slip by the end of the step (ṗ_t·(ṗ_t + dt p̈_t) < 0) comes to rest in it, so it is
            # solved again as sticking (once; the polyhedral cone then caps its friction).
            acc = (G @ f.ravel() + b).reshape(-1, 3)
            vt = vc[:, :2]
            reverses = ~sticking & ((vt * (vt + dt * acc[:, :2])).sum(axis=1) < 0.0)
            if not reverses.any():
                break
            sticking = sticking | reverses
        stats["sliding"] = int((~sticking).sum())
        stats["system_size"] = len(q)
        stats["residual"] = float(sol.residual)
        self._warm_next = (key, np.maximum(sol.x, 0.0))
        return f

    def _impulsive(self, state: ContactState, idx: np.ndarray, vc: np.ndarray,
                   stats: dict) -> np.ndarray:
        """Step 4: exact velocity-level Coulomb impulse over one step, returned as impulse/dt."""
        s, dt = self.settings, state.dt
        G, b = state.delassus(idx)
        c = dt * b + vc.ravel()
        c[2::3] += normal_bias(state.phi[idx], dt, min(1.0, s.baumgarte_omega * dt))
        sol = gauss_seidel_coulomb(G, c, state.mu[idx], tol=s.gs_tolerance,
                                   max_sweeps=s.gs_max_sweeps)
        stats["residual"] = float(sol.residual)
        return sol.x.reshape(-1, 3) / dt
