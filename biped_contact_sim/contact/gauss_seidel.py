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

       v_c⁺ = G P + c,   c = dt·b_v + v_c' + bias·n,

   solved by Gauss–Seidel over contacts (Algorithm 1; ``solvers.gauss_seidel_coulomb``), warm
   started from the previous step's forces (per contact id).

   Our deviation from eq. 10: ``b_v = J_c M⁻¹(Sᵀτ − h)``, the paper's ``B_c`` without its
   ``J̇_c q̇`` term (``drift_term = false``, the default). ``v_c⁺`` is then ``J_c(q) v⁺``, the
   velocity along the same Jacobian as the impulse ``J_cᵀ(q) P``, and the impulse does no work
   on the robot except through the bias below: over a step it changes the kinetic energy by
   ``Pᵀv_c⁺ − ½PᵀGP ≤ Σᵢ P_n,i β max(−φ_i, 0)/dt`` (the Coulomb law dissipates), at most the
   work of lifting the supported load out of its penetration by the fraction β per step. (A
   step with an impact adds ``dt p_Iᵀ b_v,n``: eq. 5 stops the approach at the velocity of the
   start of the step, before the free acceleration, so this is positive only where that
   acceleration pulls a point away from the ground.) With eq. 10's ``dt·J̇_c q̇``
   (``drift_term = true``) the predicted velocity is that at q⁺ to first order, but the impulse
   then works on the robot by ``−dt Pᵀγ_c`` per step: +119 J on a limp biped dropped from 5 cm,
   whose whipping feet have a large J̇v.

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

from biped_contact_sim.contact.base import (
    ContactModel,
    ContactResult,
    ContactState,
    Stats,
    WarmStarted,
    positive,
)
from biped_contact_sim.contact.gauss_seidel_kernels import (
    gauss_seidel_contact_kernel,
    gauss_seidel_from_packed,
    impact_kernel,
)
from biped_contact_sim.errors import ConfigError
from biped_contact_sim.solvers.lemke import RESIDUAL_TOL, STATUSES, default_max_pivots


def contact_keys(state: ContactState, idx: np.ndarray) -> np.ndarray:
    """Contact ids of the points ``idx``: the keys of every per-contact warm start.

    The one place that says what identifies a contact across steps: ``state.ids`` when the
    contact state carries ids (contact sets that change size and order), else the point index.
    """
    ids = getattr(state, "ids", None)
    return idx if ids is None else np.asarray(ids)[idx]


def unit_interval(name: str, value: float) -> float:
    """Validate a setting in [0, 1], naming it in the error."""
    value = positive(name, value, allow_zero=True)
    if value > 1.0:
        raise ConfigError(f"{name} = {value!r} must be in [0, 1]")
    return value


def positive_count(name: str, value, allow_none: bool = False):
    """Validate an integer setting ≥ 1 (or None when allowed), naming it in the error."""
    if value is None and allow_none:
        return value
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{name} = {value!r} must be an integer >= 1"
                          + (" or null (default)" if allow_none else ""))
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
    failed: bool  # Lemke did not converge (ray termination, pivot cap or inaccurate)
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
    the impulses of their neighbours must not drive them toward the ground); solved by Lemke
    (compiled, :func:`impact_kernel`). Then ``v_c' = v_c + G_{:,n} p_I`` (eq. 6).

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
    e = np.ascontiguousarray(np.broadcast_to(np.asarray(restitution, float), (m,)))
    p, vc_after, impacting = np.empty(m), np.empty((m, 3)), np.empty(m, dtype=bool)
    code = impact_kernel(np.ascontiguousarray(G), np.ascontiguousarray(vc, dtype=float),
                         np.ascontiguousarray(phi, dtype=float), dt, e, threshold, pivot_tol,
                         default_max_pivots(m), RESIDUAL_TOL, p, vc_after, impacting)
    status = "none" if code < 0 else STATUSES[code]
    return ImpactOutcome(p, vc_after, impacting, code > 0, status)


# Statistics of one gauss_seidel step, in the order of the kernel's stats array.
_GS_STATS = ("candidates", "system_size", "impacts", "impact_failures", "solver_iterations",
             "solver_failures", "residual")


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
        warm_start: start Gauss–Seidel from the previous step's forces (per contact id).
        pivot_tol: pivot tolerance of Lemke's algorithm (impact LCP).
        drift_term: include eq. 10's ``dt·J̇_c q̇`` in the predicted contact velocity (the
            paper; not energy-consistent, module docstring step 3).
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
    drift_term: bool = False

    def __post_init__(self):
        unit_interval("gauss_seidel.restitution", self.restitution)
        positive("gauss_seidel.margin", self.margin, allow_zero=True)
        positive("gauss_seidel.impact_velocity_threshold", self.impact_velocity_threshold,
                 allow_zero=True)
        unit_interval("gauss_seidel.stabilization", self.stabilization)
        positive("gauss_seidel.tolerance", self.tolerance)
        positive("gauss_seidel.pivot_tol", self.pivot_tol)
        positive_count("gauss_seidel.max_sweeps", self.max_sweeps)
        positive("gauss_seidel.omega", self.omega)
        if self.omega >= 2.0:
            raise ConfigError(f"gauss_seidel.omega = {self.omega!r} must be in (0, 2)")
        for name in ("warm_start", "drift_term"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"gauss_seidel.{name} = {getattr(self, name)!r} must be true "
                                  "or false")


class GaussSeidelContact(ContactModel, WarmStarted):
    """Velocity-level exact-cone contact with LCP impacts: Chardonnet Alg. 1, docs/methods.md §2.3.

    Statistics per step: ``candidates``, ``system_size`` (3m of the Gauss–Seidel system),
    ``impacts`` (impacting points), ``impact_failures``
    (0/1: the impact LCP failed, plastic fallback), ``solver_iterations`` (sweeps),
    ``solver_failures`` (0/1: sweep cap reached), ``residual`` (Coulomb residual of the
    velocity-level law, ``solvers.coulomb_residual``).
    """

    name = "gauss_seidel"
    Settings = GaussSeidelSettings
    stat_names = _GS_STATS
    integrators = ("semi_implicit_euler",)
    #: statistics that count events a user must be warned about
    warning_stats = ("impact_failures", "solver_failures")

    def reset(self, n_points: int) -> None:
        self._reset_warm(n_points, 3)  # the last committed step-3 forces, per contact id
        s = self.settings  # as the kernel's parameter array
        self._params = np.array([s.margin, s.restitution, s.impact_velocity_threshold,
                                 s.stabilization, s.tolerance, s.max_sweeps, s.omega,
                                 s.pivot_tol, RESIDUAL_TOL, s.warm_start], dtype=float)

    def velocity_system(self, state: ContactState, idx: np.ndarray | None = None,
                        vc: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The Gauss–Seidel system ``v_c⁺ = G P + c`` of step 3 (eq. 10), size 3m.

        Args:
            state: the contact state.
            idx: candidate indices (default: ``φ ≤ margin``).
            vc: (m, 3) contact velocities to start from (default: ``state.vc``; after an
                impact, the post-impact velocities).

        Returns:
            ``(G, c)``: the (3m, 3m) Delassus matrix and ``c = dt·b_v + v_c + bias·n`` (3m,).
        """
        if idx is None:
            idx = np.flatnonzero(state.phi <= self.settings.margin)
        G, b = state.delassus(idx)
        if not self.settings.drift_term:
            b = b - state.gamma_c[(3 * idx[:, None] + np.arange(3)).ravel()]
        vc = state.vc[idx] if vc is None else vc
        c = state.dt * b + vc.ravel()
        c[2::3] += normal_bias(state.phi[idx], state.dt, self.settings.stabilization)
        return G, c

    def compute(self, state: ContactState, commit: bool = True) -> ContactResult:
        # The Delassus matrix is made over every point: the kernel takes the candidates out of
        # it (for the few points of a sole this costs less than selecting them first) and
        # copies the contact ids into ``keys`` (``contact_keys`` of all points).
        phi, vc, ids, f, active, stats, keys, rows = self._step_buffers(state, len(_GS_STATS))
        packed, warm = state.packed, self._warm
        if packed is not None:  # G and b in the same compiled call
            gauss_seidel_from_packed(*packed, self.settings.drift_term, vc, phi, state.mu,
                                     state.dt, self._params, warm.keys, warm.rows, ids, f,
                                     active, keys, rows, stats)
        else:
            G, b = state.delassus(self._all, self.settings.drift_term)  # b_v without drift
            gauss_seidel_contact_kernel(G, b, vc, phi, state.mu, state.dt, self._params,
                                        warm.keys, warm.rows, ids, f, active, keys, rows, stats)
        if commit:  # warm start from the step-3 forces only (impacts are not persistent)
            self._commit_warm(keys, rows)
        return ContactResult(f, active, Stats(self.stat_names, stats))
