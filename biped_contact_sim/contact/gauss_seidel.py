"""``gauss_seidel``: constraint-based contact with exact Coulomb cones and LCP impacts.

docs/methods.md §2.3; Chardonnet et al. §II-B–C, Algorithm 1 and Fig. 2 (after Ruspini & Khatib).
One step at the state (q, v), in contact frames ``[t₁, t₂, n]``:

1. Candidates: points with ``φ_i ≤ margin``. Only candidates enter the systems below; ``G`` and
   ``b`` are the Delassus matrix and free acceleration over them (``state.delassus``,
   docs/methods.md §1, Chardonnet eqs. 3, 7, 17). System size ``3m`` for m candidates.
2. Impacts (eqs. 2–6): a step has an impact when a candidate approaches faster than
   ``impact_velocity_threshold`` and reaches the ground within the step,
   ``v_n < −v_thr`` and ``φ + dt·v_n ≤ 0``; the impact time is then taken as the start of the
   step, as the paper does for small steps (§III), and every approaching candidate
   (``v_n < −v_thr``) impacts. (We use "approaching" rather than "newly in contact": with a
   fixed step and a margin the first step inside the margin is not always the step of the
   collision, and a point that rests never approaches faster than the threshold because step 3
   leaves it at ``v_n⁺ = 0``; so no contact history is needed and the rule is the same after a
   lift-off of any length.) The normal-only LCP on ``G_nn`` (eq. 5, with the multi-contact
   generalisation of Ruspini & Khatib: resting and separating candidates take part with e = 0
   so that the impulses of their neighbours cannot drive them into the ground)::

       w = G_nn p_I + q ≥ 0,  p_I ≥ 0,  p_Iᵀ w = 0,
       q_i = (1 + e) v_n,i      (impacting points: w_i = v_n,i⁺ + e v_n,i⁻)
       q_i = v_n,i              (other candidates: w_i = v_n,i⁺)

   solved by Lemke; the contact velocity after the impact is ``v_c' = v_c + G_{:,n} p_I``
   (eq. 6 mapped to the contact space). Impacting points left with ``v_n' > v_thr`` are
   separating (a restitution rebound) and are removed from step 3, which therefore cannot cancel
   the rebound.
3. Friction at the velocity level (eqs. 9–10): the impulse ``P = dt·f`` satisfies the exact 3-D
   Coulomb law (separate / stick / slide, no cone facets) for

       v_c⁺ = G P + c,   c = dt·b + v_c' + bias·n,

   solved by Gauss–Seidel over contacts (Algorithm 1; ``solvers.gauss_seidel_coulomb``), warm
   started from the previous step's forces.

   Our addition (the paper has none): the normal target carries ``bias_i`` so that the normal
   law reads ``0 ≤ P_n ⊥ v_n⁺ + bias ≥ 0`` with ``bias_i = max(φ_i, 0)/dt + β min(φ_i, 0)/dt``.
   The first term lets a candidate inside the margin close its gap exactly within the step (the
   Anitescu–Potra ``φ/dt`` term; without it a point at φ = margin would hover). The second pulls
   a penetrating point out by the fraction β of its depth per step. It only acts on penetration,
   is zero for a point at φ = 0 and can only *raise* the required normal velocity up to
   ``β|φ|/dt``: a rebounding point, already faster, is unaffected, so it never adds energy to a
   rebound. Because impacts are resolved before the crossing (step 2, with the margin),
   penetration only comes from linearisation drift and the pull-out velocity stays small.
4. The simulator applies ``f = (p_I + P)/dt`` for one step (docs/methods.md §2:
   velocity-level models report the impulse over the step divided by dt), i.e. eq. 14–15 with
   semi-implicit Euler.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from biped_contact_sim.contact.base import ContactModel, ContactResult, ContactState, positive
from biped_contact_sim.errors import ConfigError
from biped_contact_sim.solvers import gauss_seidel_coulomb, lemke


def unit_interval(name: str, value: float) -> float:
    """Validate a setting in [0, 1], naming it in the error."""
    value = positive(name, value, allow_zero=True)
    if value > 1.0:
        raise ConfigError(f"{name} = {value!r} must be in [0, 1]")
    return value


def normal_bias(phi: np.ndarray, dt: float, beta: float) -> np.ndarray:
    """Normal velocity bias ``max(φ, 0)/dt + β min(φ, 0)/dt`` (module docstring, step 3)."""
    return (np.maximum(phi, 0.0) + beta * np.minimum(phi, 0.0)) / dt


@dataclass
class ImpactOutcome:
    """Result of the impact LCP (Chardonnet eqs. 2–6) over the candidates."""

    p: np.ndarray  # (m,) normal impulses p_I
    vc: np.ndarray  # (m, 3) contact velocities after the impact
    impacting: np.ndarray  # (m,) bool
    failed: bool  # Lemke did not converge (ray termination or pivot cap)
    status: str


def newton_impact(G: np.ndarray, vc: np.ndarray, phi: np.ndarray, dt: float,
                  restitution: np.ndarray | float, threshold: float,
                  pivot_tol: float = 1e-12) -> ImpactOutcome:
    """Normal impact LCP of Chardonnet eq. 5 (Ruspini–Khatib), multi-contact form.

    An impact happens in this step when a candidate approaches (``v_n < −threshold``) and
    reaches the ground within the step (``φ + dt v_n ≤ 0``); the impact time is then the start
    of the step for every candidate (Chardonnet §III), so all approaching candidates impact
    together. ``w = G_nn p_I + q ≥ 0, p_I ≥ 0, p_Iᵀ w = 0`` with ``q_i = (1 + e_i) v_n,i`` for
    the impacting points and ``q_i = v_n,i`` for the other candidates (resting or separating:
    the impulses of their neighbours must not drive them toward the ground); solved by Lemke.
    Then ``v_c' = v_c + G_{:,n} p_I`` (eq. 6).

    If Lemke fails (``failed``), no impulse is applied: the caller's velocity-level phase then
    stops the approach plastically (e = 0), which is the documented fallback.

    Args:
        G: (3m, 3m) Delassus matrix over the candidates, rows (t₁, t₂, n) per point.
        vc: (m, 3) contact velocities before the impact.
        phi: (m,) gaps.
        dt: step [s].
        restitution: e, scalar or per point (m,).
        threshold: impact velocity threshold [m/s].
        pivot_tol: Lemke pivot tolerance.
    """
    m = len(phi)
    vn = vc[:, 2]
    approaching = vn < -threshold
    if not (approaching & (phi + dt * vn <= 0.0)).any():
        return ImpactOutcome(np.zeros(m), vc, np.zeros(m, dtype=bool), False, "none")
    impacting = approaching  # one impact time per step: every approaching candidate (t0)
    e = np.broadcast_to(np.asarray(restitution, float), (m,))
    q = np.where(impacting, (1.0 + e) * vn, vn)
    Gnn = G[2::3, 2::3]
    sol = lemke(Gnn, q, pivot_tol=pivot_tol)
    if not sol.converged:
        return ImpactOutcome(np.zeros(m), vc, impacting, True, sol.status)
    p = np.maximum(sol.x, 0.0)
    vc_after = vc + (G[:, 2::3] @ p).reshape(m, 3)
    return ImpactOutcome(p, vc_after, impacting, False, sol.status)


@dataclass(frozen=True)
class GaussSeidelSettings:
    """Settings of ``gauss_seidel`` (Chardonnet et al. §II; docs/methods.md §2.3).

    Attributes:
        restitution: e of Newton's law (eq. 4), in [0, 1].
        margin: candidates have φ ≤ margin [m] (step 1); lets impacts be caught before the
            crossing. At least the largest ``|v_n|·dt`` expected.
        impact_velocity_threshold: v_thr [m/s]; approaching faster than this is an impact.
        stabilization: β ∈ [0, 1], fraction of a penetration removed per step (our addition).
        tolerance: Gauss–Seidel tolerance on the impulse change (> 0).
        max_sweeps: cap on Gauss–Seidel sweeps (a step that hits it counts as a failure).
        omega: relaxation of the Gauss–Seidel sweeps, in (0, 2).
        warm_start: start Gauss–Seidel from the previous step's forces.
        pivot_tol: pivot tolerance of Lemke's algorithm (impact LCP).
    """

    restitution: float = 0.0
    margin: float = 1e-3
    impact_velocity_threshold: float = 1e-3
    stabilization: float = 0.2
    tolerance: float = 1e-10
    max_sweeps: int = 100
    omega: float = 1.0
    warm_start: bool = True
    pivot_tol: float = 1e-12

    def __post_init__(self):
        unit_interval("gauss_seidel.restitution", self.restitution)
        positive("gauss_seidel.margin", self.margin, allow_zero=True)
        positive("gauss_seidel.impact_velocity_threshold", self.impact_velocity_threshold,
                 allow_zero=True)
        unit_interval("gauss_seidel.stabilization", self.stabilization)
        positive("gauss_seidel.tolerance", self.tolerance)
        positive("gauss_seidel.pivot_tol", self.pivot_tol)
        if isinstance(self.max_sweeps, bool) or not isinstance(self.max_sweeps, int) \
                or self.max_sweeps < 1:
            raise ConfigError(f"gauss_seidel.max_sweeps = {self.max_sweeps!r} must be an "
                              "integer >= 1")
        positive("gauss_seidel.omega", self.omega)
        if self.omega >= 2.0:
            raise ConfigError(f"gauss_seidel.omega = {self.omega!r} must be in (0, 2)")
        if not isinstance(self.warm_start, bool):
            raise ConfigError(f"gauss_seidel.warm_start = {self.warm_start!r} must be true or "
                              "false")


class GaussSeidelContact(ContactModel):
    """Velocity-level exact-cone contact with LCP impacts: Chardonnet Alg. 1, docs/methods.md §2.3.

    Statistics per step: ``candidates``, ``system_size`` (3m of the Gauss–Seidel system),
    ``impacts`` (impacting points), ``impact_failures``
    (0/1: the impact LCP failed, plastic fallback), ``solver_iterations`` (sweeps),
    ``solver_failures`` (0/1: sweep cap reached), ``residual`` (Coulomb residual of the
    velocity-level law, ``solvers.coulomb_residual``).
    """

    name = "gauss_seidel"
    Settings = GaussSeidelSettings
    integrators = ("semi_implicit_euler",)

    def reset(self, n_points: int) -> None:
        self._force = np.zeros((n_points, 3))  # warm start: last committed forces (step 3 only)

    def velocity_system(self, state: ContactState, idx: np.ndarray | None = None,
                        vc: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The Gauss–Seidel system ``v_c⁺ = G P + c`` of step 3 (eq. 10), size 3m.

        Args:
            state: the contact state.
            idx: candidate indices (default: ``φ ≤ margin``).
            vc: (m, 3) contact velocities to start from (default: ``state.vc``; after an
                impact, the post-impact velocities).

        Returns:
            ``(G, c)``: the (3m, 3m) Delassus matrix and ``c = dt·b + v_c + bias·n`` (3m,).
        """
        if idx is None:
            idx = np.flatnonzero(state.phi <= self.settings.margin)
        G, b = state.delassus(idx)
        vc = state.vc[idx] if vc is None else vc
        c = state.dt * b + vc.ravel()
        c[2::3] += normal_bias(state.phi[idx], state.dt, self.settings.stabilization)
        return G, c

    def compute(self, state: ContactState, commit: bool = True) -> ContactResult:
        s = self.settings
        m_all, dt = state.n_points, state.dt
        if getattr(self, "_force", None) is None or len(self._force) != m_all:
            self.reset(m_all)
        f = np.zeros((m_all, 3))
        active = np.zeros(m_all, dtype=bool)
        stats = {"candidates": 0, "system_size": 0, "impacts": 0, "impact_failures": 0,
                 "solver_iterations": 0, "solver_failures": 0, "residual": 0.0}
        idx = np.flatnonzero(state.phi <= s.margin)  # step 1
        if idx.size == 0:
            if commit:
                self._force[:] = 0.0
            return ContactResult(f, active, stats)
        m = idx.size
        G, b = state.delassus(idx)
        phi = state.phi[idx]
        # Step 2: impacts (eq. 5 by Lemke, eq. 6).
        imp = newton_impact(G, state.vc[idx], phi, dt, s.restitution,
                            s.impact_velocity_threshold, s.pivot_tol)
        # Rebounding points separate: step 3 must not see them (no cancelled restitution).
        keep = ~(imp.impacting & (imp.vc[:, 2] > s.impact_velocity_threshold))
        sub = np.flatnonzero(keep)
        P = np.zeros((m, 3))
        if sub.size:
            rows = (3 * sub[:, None] + np.arange(3)).ravel()
            Gs = G[np.ix_(rows, rows)]
            c = dt * b[rows] + imp.vc[sub].ravel()
            c[2::3] += normal_bias(phi[sub], dt, s.stabilization)
            f0 = dt * self._force[idx[sub]].ravel() if s.warm_start else None
            sol = gauss_seidel_coulomb(Gs, c, state.mu[idx[sub]], f0=f0, tol=s.tolerance,
                                       max_sweeps=s.max_sweeps, omega=s.omega)
            P[sub] = sol.x.reshape(-1, 3)
            stats["system_size"] = 3 * sub.size
            stats["solver_iterations"] = sol.iterations
            stats["solver_failures"] = int(not sol.converged)
            stats["residual"] = float(sol.residual)
        if commit:  # warm start from the step-3 forces only (impacts are not persistent)
            self._force[:] = 0.0
            self._force[idx] = P / dt
        P[:, 2] += imp.p  # the impact impulse is normal only (eq. 5)
        f[idx] = P / dt
        active[idx] = (P[:, 2] > 0.0) | (phi <= 0.0)
        stats.update(candidates=m, impacts=int(imp.impacting.sum()),
                     impact_failures=int(imp.failed))
        return ContactResult(f, active, stats)
