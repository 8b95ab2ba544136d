"""Compiled per-step energy balance (numba kernels with declared signatures,
``biped_contact_sim.jit``): the slots of ``sim.step_energy`` filled and closed step by step.
"""

from __future__ import annotations

import numpy as np

from biped_contact_sim.jit import F1, f8, kernel

#: slots of ``step_energy``: the open step (energy at its start, its work of τ and external
#: forces, its contact and separation work, its time), the cumulative work, whether the model
#: stores energy, then the run's sums and maxima (each with its time and, for the gain, the
#: step's raw gain and contact shares)
(S_E, S_W, S_CW, S_SEP, S_T, S_CUM, S_STORES, S_SUM_CW, S_SUM_SEP, S_GAIN, S_GAIN_T,
 S_GAIN_RAW, S_GAIN_CW, S_GAIN_SEP, S_CW_MAX, S_CW_T, S_CREATED, S_CREATED_T, S_FN,
 S_HALF_G, S_WEIGHT) = range(21)
S_SLOTS = 21



@kernel((F1, f8), error_model="numpy")
def step_energy_close(s, energy_end):
    """Close the open step with the energy at its end: its gain ``ΔE − W_τ − W_ext`` less the
    part the contact laws explain and semi-implicit Euler's error for the step's forces
    (module docstring)."""
    if np.isnan(s[S_E]):
        return
    gain = energy_end - s[S_E] - s[S_W]
    law = max(s[S_CW], s[S_SEP]) if s[S_STORES] != 0.0 else s[S_SEP]
    law += s[S_HALF_G] * (s[S_WEIGHT] + s[S_FN])
    if gain - law > s[S_GAIN]:
        s[S_GAIN], s[S_GAIN_T], s[S_GAIN_RAW] = gain - law, s[S_T], gain
        s[S_GAIN_CW], s[S_GAIN_SEP] = s[S_CW], s[S_SEP]


@kernel((F1, f8, f8, f8, f8, f8, f8), error_model="numpy")
def step_energy(s, energy_start, work_total, contact_work, separation, normal_force, t):
    """One step into ``s`` (slots above): close the previous step with this step's start energy,
    open this one (its work: the cumulative work of τ and external forces, ``work_total``, less
    the previous total; ``normal_force``: Σ f_n of its contacts), and keep the contact work's
    sums and maxima."""
    step_energy_close(s, energy_start)
    s[S_E], s[S_W], s[S_CUM] = energy_start, work_total - s[S_CUM], work_total
    s[S_CW], s[S_SEP], s[S_T], s[S_FN] = contact_work, separation, t, normal_force
    s[S_SUM_CW] += contact_work
    s[S_SUM_SEP] += separation
    if contact_work > s[S_CW_MAX]:
        s[S_CW_MAX], s[S_CW_T] = contact_work, t
    if contact_work - separation > s[S_CREATED]:
        s[S_CREATED], s[S_CREATED_T] = contact_work - separation, t
