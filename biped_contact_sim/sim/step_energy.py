"""The energy of each step: its gain and what explains it (docs/methods.md §3.1).

A step's gain is ``ΔE − W_τ − W_ext`` (E kinetic + potential of every body; the work of the
torques and external forces as ``session.accounting_kernels.energy_step`` counts it). It
splits exactly into the kinetic energy the contact impulse gave at the step's configuration,
``ΔT_c = Pᵀv_c⁺ − ½PᵀGP`` (``StepResult.contact_work``, ``sim.integrator.contact_energy``), and
the rest, the integrator's share (gravity and torques over the step, M changing with q).

``ΔT_c`` is at most its *separation* part ``W_sep = Σ P_n max(v_n⁺, 0)`` (restitution,
penetration recovery: the contact laws' own), since friction and compression only take
energy: a step whose ``ΔT_c − W_sep`` is positive means a contact law was broken — except for
``spring_damper``, whose stiction springs give back what they stored (``stores_energy``: then
all of ΔT_c is the law's). The gain beyond that (``gain − W_sep``, or ``gain − max(ΔT_c,
W_sep)`` for spring_damper) is semi-implicit Euler's: for a body of mass m under gravity and a
contact force F, ``ΔE − W_c = −½ dt² F_g·a``, which is ½ m (g dt)² in free fall and grows to
``½ dt² g F_z`` while the contact pushes it up. A step whose gain exceeds the law's share and
``½ dt² g (m g + Σ f_n)`` by more than ½ m (g dt)² is warned about.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from biped_contact_sim.sim.simulator import Simulator
from biped_contact_sim.sim.step_energy_kernels import (
    S_CREATED,
    S_CREATED_T,
    S_CW_MAX,
    S_CW_T,
    S_E,
    S_GAIN,
    S_GAIN_CW,
    S_GAIN_RAW,
    S_GAIN_SEP,
    S_GAIN_T,
    S_HALF_G,
    S_SLOTS,
    S_STORES,
    S_SUM_CW,
    S_SUM_SEP,
    S_WEIGHT,
    step_energy_close,
)

#: a contact law adding more than this in a step (beyond restitution) is warned about [J]
CONTACT_ATOL = 1e-9


def free_fall_error(sim: Simulator) -> float:
    """½ m (g dt)² over every body of the simulation: the energy semi-implicit Euler takes from
    a body per step under gravity alone (or gives it, when a contact decelerates it)."""
    mass = sum(inertia.mass for inertia in sim.model.inertias)
    return 0.5 * mass * (float(np.linalg.norm(sim.model.gravity.linear)) * sim.dt) ** 2


def step_energy_slots(sim: Simulator) -> np.ndarray:
    """Fresh slots for ``step_energy`` of a simulation (its contact model's ``stores_energy``,
    its dt, gravity and mass)."""
    s = np.zeros(S_SLOTS)
    s[S_E] = np.nan
    s[S_STORES] = float(sim.contact.stores_energy)
    g = float(np.linalg.norm(sim.model.gravity.linear))
    s[S_HALF_G] = 0.5 * sim.dt * sim.dt * g
    s[S_WEIGHT] = g * sum(inertia.mass for inertia in sim.model.inertias)
    s[[S_GAIN, S_CW_MAX, S_CREATED]] = -np.inf
    return s


def step_energy_balance(s: np.ndarray, final: float, tolerance: float) -> dict[str, Any]:
    """The per-step part of ``energy_balance``: the contact work (its sum, its largest step,
    the separation part), the largest step of work beyond restitution (``contact_created``),
    the largest gain of a step beyond the contact laws and semi-implicit Euler's error for
    its forces (``gain_unexplained``) with that step's raw gain and contact shares, and
    ``tolerance_step_J`` = ½ m (g dt)² it is checked against. Times are those of the steps'
    starts (None when there was no step)."""
    step_energy_close(s, final)

    def at(value: int, time: int) -> tuple[float, float | None]:
        ok = bool(np.isfinite(s[value]))
        return (float(s[value]) if ok else 0.0), (float(s[time]) if ok else None)

    cw, cw_t = at(S_CW_MAX, S_CW_T)
    created, created_t = at(S_CREATED, S_CREATED_T)
    gain, gain_t = at(S_GAIN, S_GAIN_T)
    return {"contact_work_J": float(s[S_SUM_CW]), "contact_separation_J": float(s[S_SUM_SEP]),
            "contact_work_max_step_J": cw, "contact_work_max_step_t": cw_t,
            "contact_created_max_step_J": created, "contact_created_max_step_t": created_t,
            "contact_stores_energy": bool(s[S_STORES]),
            "gain_unexplained_max_step_J": gain, "gain_unexplained_max_step_t": gain_t,
            "gain_max_step_J": float(s[S_GAIN_RAW]) if gain_t is not None else 0.0,
            "gain_max_step_contact_J": float(s[S_GAIN_CW]) if gain_t is not None else 0.0,
            "gain_max_step_separation_J": float(s[S_GAIN_SEP]) if gain_t is not None else 0.0,
            "tolerance_step_J": tolerance}


def step_energy_warnings(energy: dict[str, Any]) -> list[str]:
    """A warning when friction or compression added energy in a step (a contact law broken;
    not for a model that stores energy), and when a step gained more than ``tolerance_step_J``
    beyond the contact laws' restitution, naming the shares of the contacts and of the
    integrator (semi-implicit Euler's error on fast motion: first order in dt)."""
    out = []
    created = energy["contact_created_max_step_J"]
    if created > CONTACT_ATOL and not energy["contact_stores_energy"]:
        out.append(f"contact friction or compression added {created:.3g} J in the step at t = "
                   f"{energy['contact_created_max_step_t']:.4g} s (beyond restitution and "
                   "penetration recovery: the contact laws never do; please report it)")
    tol = energy["tolerance_step_J"]
    if energy["gain_unexplained_max_step_J"] > tol:
        gain, cw = energy["gain_max_step_J"], energy["gain_max_step_contact_J"]
        sep = energy["gain_max_step_separation_J"]
        why = f"the contact impulses gave {cw:.3g} J"
        if sep > 0.0:
            why += f" ({sep:.3g} J of restitution or penetration recovery, by their law)"
        why += (f" and the integrator {gain - cw:.3g} J: semi-implicit Euler's error on fast "
                "motion or stiff contact springs, first order in dt (a smaller dt reduces it)")
        out.append(f"energy gained in one step: {gain:.3g} J at t = "
                   f"{energy['gain_unexplained_max_step_t']:.4g} s, "
                   f"{energy['gain_unexplained_max_step_J']:.3g} J more than the contact laws "
                   f"and the integrator's error under gravity allow (tolerance ½ m (g dt)² = "
                   f"{tol:.2g} J); " + why)
    return out
