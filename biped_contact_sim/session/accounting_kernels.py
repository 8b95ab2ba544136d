"""The per-step accounting of a run as compiled kernels (``Run.advance`` calls
``step_accumulators`` once per step): contact maxima and fidelity residuals
(``accumulate_step``; its reference is ``accounting.fidelity_residuals``), solver statistics
(``accumulate_stats``) and the energy balance (``energy_step``), with the slots of their
accumulator arrays.
"""

import numpy as np

from biped_contact_sim.jit import B1, F1, F2, I1, b1, f8, kernel

#: accumulator slots of ``accumulate_step``
ACC_PENETRATION, ACC_CONE, ACC_MIN_FN = 0, 1, 2
ACC_RES_MAX, ACC_RES_SUM = 3, 7  # 4 maxima, then 4 sums, in accounting.RESIDUAL_KEYS order
ACC_SLOTS = 11


@kernel((F2, F1), error_model="numpy")
def accumulate_stats(acc, values):
    """Count, sum, minimum, maximum and the count of positive values (rows of ``acc``) of one
    step's statistics."""
    for j in range(values.shape[0]):
        x = values[j]
        acc[0, j] += 1.0
        acc[1, j] += x
        acc[2, j] = min(acc[2, j], x)
        acc[3, j] = max(acc[3, j], x)
        if x > 0.0:
            acc[4, j] += 1.0


@kernel((F1, F1, F2, F2, B1, f8, F1, f8, F1, F1, F1, I1, f8, f8, F2, F1, b1),
        error_model="numpy")
def step_accumulators(acc, phi, fc, vc_next, active, mu, e, energy_prev, tau, v_prev, v, v_idx,
                      dt, t, stat_acc, values, with_stats):
    """``accumulate_step``, ``energy_step`` and (``with_stats``) ``accumulate_stats`` of one
    step in one call (``Run.advance``: three calls cost more than their arithmetic)."""
    accumulate_step(acc, phi, fc, vc_next, active, mu)
    energy_step(e, energy_prev, tau, v_prev, v, v_idx, dt, t)
    if with_stats:
        accumulate_stats(stat_acc, values)


#: slots of ``energy_step``: first energy, last energy seen, work of τ, work of external forces,
#: smallest dissipation so far (W − ΔE) and its time, Σ |τ·v| dt (the scale of the work)
E_FIRST, E_LAST, E_WORK_TAU, E_WORK_EXT, E_MIN_DISS, E_MIN_T, E_ABS_WORK = range(7)
E_SLOTS = 7
@kernel((F1, f8, F1, F1, F1, I1, f8, f8), error_model="numpy")
def energy_step(e, energy_prev, tau, v_prev, v, v_idx, dt, t):
    """The energy balance of one step into ``e`` (slots above). The work of the torques over
    the step is ``dt τᵀ (v_a + v_a⁺)/2`` (exact for the kinetic energy of semi-implicit Euler
    under a constant force); the dissipation up to the start of the step is
    ``W − (E − E₀)``, whose minimum over the run is the energy created (if negative)."""
    if np.isnan(e[E_FIRST]):
        e[E_FIRST] = energy_prev
        e[E_MIN_DISS] = 0.0
    else:
        diss = e[E_WORK_TAU] + e[E_WORK_EXT] - (energy_prev - e[E_FIRST])
        if diss < e[E_MIN_DISS]:
            e[E_MIN_DISS] = diss
            e[E_MIN_T] = t
    e[E_LAST] = energy_prev
    w = 0.0
    for j in range(v_idx.shape[0]):
        p = 0.5 * tau[j] * (v_prev[v_idx[j]] + v[v_idx[j]])
        w += p
        e[E_ABS_WORK] += dt * abs(p)
    e[E_WORK_TAU] += dt * w


@kernel((F1, F1, F2, F2, B1, f8), error_model="numpy")
def accumulate_step(acc, phi, fc, vc_next, active, mu):
    """One step into ``acc`` (slots above): max penetration, max (‖f_t‖ − μ f_n), min active
    f_n, per-step residual maxima and sums (numpy reference:
    ``accounting.accumulate_step_reference`` with ``fidelity_residuals``)."""
    m = phi.shape[0]
    sig, diss, cone_res, pen = 0.0, 0.0, 0.0, 0.0
    if m:
        phimin, cone = np.inf, -np.inf
        any_active = False
        fmin = np.inf
        cone_act = -np.inf
        for i in range(m):
            phimin = min(phimin, phi[i])
            ft = np.sqrt(fc[i, 0] ** 2 + fc[i, 1] ** 2)
            cone = max(cone, ft - mu * fc[i, 2])
            if active[i]:
                any_active = True
                fmin = min(fmin, fc[i, 2])
                vt = np.sqrt(vc_next[i, 0] ** 2 + vc_next[i, 1] ** 2)
                sig = max(sig, abs(fc[i, 2] * vc_next[i, 2]))
                diss = max(diss, abs((mu * fc[i, 2] - ft) * vt))
                cone_act = max(cone_act, ft - mu * fc[i, 2])
        acc[ACC_PENETRATION] = max(acc[ACC_PENETRATION], -phimin)
        acc[ACC_CONE] = max(acc[ACC_CONE], cone)
        if any_active:
            acc[ACC_MIN_FN] = min(acc[ACC_MIN_FN], fmin)
            cone_res = max(0.0, cone_act)
        pen = max(0.0, -phimin)
    res = (sig, diss, cone_res, pen)
    for k in range(4):
        acc[ACC_RES_MAX + k] = max(acc[ACC_RES_MAX + k], res[k])
        acc[ACC_RES_SUM + k] += res[k]
