"""Per-step accounting of a run in words: the fidelity residuals of a step, the energy balance
and the solver warnings at the end of a run (the per-step sums are the compiled kernels of
``accounting_kernels``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from biped_contact_sim.record.buffer import RunningStat
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.session.accounting_kernels import (
    E_ABS_WORK,
    E_FIRST,
    E_MIN_DISS,
    E_MIN_T,
    E_WORK_EXT,
    E_WORK_TAU,
)
from biped_contact_sim.sim.simulator import Simulator, StepResult

if TYPE_CHECKING:
    from biped_contact_sim.session.runner import RunResult

#: the fidelity residuals, in the order of the kernels' ACC_RES_MAX / ACC_RES_SUM slots
RESIDUAL_KEYS = ("signorini_W", "dissipation_gap_W", "cone_violation_N", "penetration_m")


def fidelity_residuals(step: StepResult, mu: float) -> dict[str, float]:
    """Physical-fidelity residuals of one step over its active points (0 when none).

    With f = (f_t, f_n) the contact forces over the step and v⁺ = (v_t, v_n) the contact
    velocities at its end:

        signorini_W        max |f_n · v_n⁺|               (complementarity, Signorini)
        dissipation_gap_W  max |(μ f_n − ‖f_t‖) · ‖v_t⁺‖|  (maximum dissipation: sliding ⇒
                                                           the force is on the cone boundary)
        cone_violation_N   max (‖f_t‖ − μ f_n)⁺           (Coulomb)
        penetration_m      max (−φ)⁺ over all points

    A rigid-contact model that meets its laws exactly gives zeros; penalty models show how far
    their compliance is from them. On a restitution impact step (e > 0) Newton's law gives
    v_n⁺ = −e v_n⁻ > 0 with an impulse f_n > 0, so the Signorini residual is large there by
    design: it measures velocity-level complementarity, which restitution deliberately breaks.
    """
    fc, vn = step.f_contact, step.vc_next
    out = {"signorini_W": 0.0, "dissipation_gap_W": 0.0, "cone_violation_N": 0.0,
           "penetration_m": float(max(0.0, -step.phi.min())) if len(step.phi) else 0.0}
    act = step.active
    if act.any() and vn is not None:
        f, v = fc[act], vn[act]
        ft = np.sqrt(f[:, 0] ** 2 + f[:, 1] ** 2)
        vt = np.sqrt(v[:, 0] ** 2 + v[:, 1] ** 2)
        out["signorini_W"] = float(np.abs(f[:, 2] * v[:, 2]).max())
        out["dissipation_gap_W"] = float(np.abs((mu * f[:, 2] - ft) * vt).max())
        out["cone_violation_N"] = float(max(0.0, (ft - mu * f[:, 2]).max()))
    return out


def accumulate_step_reference(result: RunResult, step: StepResult, mu: float) -> None:
    """Per-step maxima (every step, not only recorded ones) and solver statistics (the plain
    route of ``Run``, which uses ``accumulate_step``)."""
    fc = step.f_contact
    if len(step.phi):
        result.max_penetration = max(result.max_penetration, -float(step.phi.min()))
        ft = np.sqrt(fc[:, 0] ** 2 + fc[:, 1] ** 2)
        result.max_cone_violation = max(result.max_cone_violation,
                                        float((ft - mu * fc[:, 2]).max()))
        if step.active.any():
            result.min_normal_force = min(result.min_normal_force,
                                          float(fc[step.active, 2].min()))
    for key, value in fidelity_residuals(step, mu).items():
        result.residuals[key] = max(result.residuals.get(key, 0.0), value)
        result.residual_sums[key] = result.residual_sums.get(key, 0.0) + value
    for key, value in step.stats.items():
        result.stats.setdefault(key, RunningStat()).append(float(value))


#: energy created above ENERGY_ATOL + ENERGY_RTOL · (|E₀| + Σ|τ·v| dt) is a warning (see
#: energy_balance)
ENERGY_ATOL = 0.01
ENERGY_RTOL = 2e-3
#: what the per-step statistics that count a failure or an event worth a warning mean (the
#: statistics warned about are each model's ``warning_stats``; these without one)
WARNING_STATS = {
    "fallbacks": "a solver fallback",
    "lemke_fallbacks": "a Lemke fallback",
    "solver_failures": "a solve that did not converge",
    "impact_failures": "an impact LCP that failed (plastic fallback)",
    "ray_terminations": "a Lemke ray termination",
    "inaccurate": "an inaccurate LCP answer",
    "painleve_events": "a Painlevé event (no LCP solution, impulsive resolution)",
    "zeno_events": "a Zeno event (forced plastic impact)",
    "pivot_caps": "a Lemke solve stopped by its pivot cap",
}


def energy_balance(e: np.ndarray, robot: RobotModel, sim: Simulator) -> dict[str, Any]:
    """``summary.json``'s ``energy_balance``: work of the torques W_τ and of the external forces
    W_ext, the change of kinetic + potential energy ΔE, the dissipated energy
    ``W_τ + W_ext − ΔE`` (the contacts' and the discretisation's), and the largest energy
    created at any time (``max_t (ΔE(t) − W(t))`` ≥ 0) with its time and the tolerance above
    which it is a warning (``ENERGY_ATOL + ENERGY_RTOL (|E₀| + Σ|τ·v| dt)``: semi-implicit
    Euler's own energy error is of that order, not a physical source)."""
    final = sim.energy()  # every body: the robot and a world's free objects
    w_tau, w_ext, e0 = float(e[E_WORK_TAU]), float(e[E_WORK_EXT]), float(e[E_FIRST])
    diss_end = w_tau + w_ext - (final - e0)
    created = max(0.0, -float(e[E_MIN_DISS]), -diss_end)
    created_t = float(sim.t) if -diss_end >= -float(e[E_MIN_DISS]) else float(e[E_MIN_T])
    return {"initial_J": e0, "final_J": final, "work_torques_J": w_tau,
            "work_external_J": w_ext, "delta_energy_J": final - e0, "dissipated_J": diss_end,
            "created_J": created, "created_t": created_t if created > 0 else None,
            "tolerance_J": ENERGY_ATOL + ENERGY_RTOL * (abs(e0) + float(e[E_ABS_WORK]))}


def solver_warnings(positive: dict[str, int], steps: int,
                    keys: tuple[str, ...] | None = None) -> list[str]:
    """One warning per failure statistic (``keys``: the contact model's ``warning_stats``; by
    default every ``WARNING_STATS`` key) that counted something (``positive``: steps with the
    statistic > 0): how many steps."""
    out = []
    for key in WARNING_STATS if keys is None else keys:
        n = positive.get(key, 0)
        if n:
            what = WARNING_STATS.get(key, f"a {key.replace('_', ' ')} event")
            out.append(f"{n} of {steps} steps with {what} (solver_stats.{key})")
    return out
