"""Whole-run figures of a world's free objects (``summary.json`` ``metrics.objects``) and of
multi-contact behaviours (``metrics.multicontact``).

For each free object of the world (``sim.world.objects``), from the recorded samples:

* ``initial_position_m``, ``final_position_m``: its centre at the first and the last sample;
* ``slide_distance_m``: the horizontal distance from its first position to the last sample
  at which it was still at its first height (within ``ON_SUPPORT``): how far it slid on
  what it rested on before it tipped off or was lifted (Chardonnet et al. 2006 measure the
  slide of a pushed object this way, on the table, before it falls);
* ``left_support``: its height fell more than ``FELL`` below the first (off its table);
* ``left_support_t``: the time of the last sample at its first height, if it left it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

ON_SUPPORT = 2e-3  # [m] still at its first height: resting, sliding (contact compliance)
FELL = 0.05  # [m] below its first height: off its support


def object_metrics(result) -> dict[str, Any]:
    """{object name: figures (module docstring)} of a run's samples; {} without objects."""
    world = getattr(result.sim, "world", None)
    samples = result.samples
    if world is None or not world.objects or not samples or not len(samples[0].step.q_objects):
        return {}
    t = np.array([s.step.t for s in samples])
    q = np.array([s.step.q_objects for s in samples])
    out = {}
    for k, obj in enumerate(world.objects):
        p = q[:, 7 * k:7 * k + 3]
        on = np.abs(p[:, 2] - p[0, 2]) <= ON_SUPPORT
        last = int(np.flatnonzero(on)[-1]) if on.any() else 0
        left = bool(p[-1, 2] < p[0, 2] - FELL)
        out[obj.name] = {
            "initial_position_m": [float(x) for x in p[0]],
            "final_position_m": [float(x) for x in p[-1]],
            "slide_distance_m": float(np.linalg.norm(p[last, :2] - p[0, :2])),
            "left_support": left,
            "left_support_t": float(t[last]) if left else None,
        }
    return out


def multicontact_metrics(result) -> dict[str, Any]:
    """The acceptance figures of a behaviour that declares ``steady_phases`` ([(t_a, t_b)])
    and ``force_phase`` ((t_a, t_b, body, F_ref)) (``multicontact``), from the controller's
    diagnostics of the recorded samples; {} otherwise:

    * ``transitions``: the supports in the order the controller went through them;
    * in the steady phases, the largest |tension| and |normal moment| of the measured internal
      forces (``f_int``, rows ``tension_*`` and ``m_n_*``; the paper's F_int,ref = 0) and the
      largest distance of a measured CoP from its reference (``cops``, ``cop_refs``);
    * in the force phase, |F − F_ref| of the body's measured normal force (infinite if it had
      none: off its surface): largest, 99th percentile, mean and the fraction of samples
      within 5 N (the largest alone hides whether an error is one sample or a drift).
    """
    behavior = result.behavior
    phases = getattr(behavior, "steady_phases", None)
    if not phases or not result.samples:
        return {}
    supports: list = []
    tension = moment = cop = 0.0
    force_errors = []
    force_phase = getattr(behavior, "force_phase", None)
    for smp in result.samples:
        info, t = smp.info, smp.step.t
        stance = info.get("stance")
        if stance is not None and (not supports or supports[-1] != list(stance)):
            supports.append(list(stance))
        if any(a <= t < b for a, b in phases) and "f_int" in info:
            labels, f = info["f_int_labels"], np.asarray(info["f_int"])
            ten = [k for k, lab in enumerate(labels) if lab.startswith("tension_")]
            mom = [k for k, lab in enumerate(labels) if lab.startswith("m_n_")]
            tension = max(tension, float(np.abs(f[ten]).max()))
            moment = max(moment, float(np.abs(f[mom]).max()))
            d = np.linalg.norm(np.asarray(info["cops"]) - np.asarray(info["cop_refs"]), axis=1)
            cop = max(cop, float(np.nanmax(d)))
        if force_phase is not None and force_phase[0] <= t < force_phase[1]:
            _, F_meas, _ = info.get("force_tasks", {}).get(force_phase[2], (0, np.nan, 0))
            # no measurement (the body off its surface) counts as an infinite error
            force_errors.append(abs(F_meas - force_phase[3]) if np.isfinite(F_meas) else np.inf)
    out = {"transitions": supports, "steady_tension_max_N": tension,
           "steady_normal_moment_max_Nm": moment, "steady_cop_error_max_m": cop}
    if force_errors:
        e = np.array(force_errors)
        body = force_phase[2]
        out[f"{body}_force_error_max_N"] = float(e.max())
        out[f"{body}_force_error_p99_N"] = float(np.percentile(e, 99))
        out[f"{body}_force_error_mean_N"] = float(e.mean())
        out[f"{body}_force_within_5N_fraction"] = float(np.mean(e <= 5.0))
    return out


__all__ = ["FELL", "ON_SUPPORT", "multicontact_metrics", "object_metrics"]
