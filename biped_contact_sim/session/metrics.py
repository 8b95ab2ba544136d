"""Whole-run figures of ``summary.json`` ``metrics``, from a run's recorded samples: a biped's
(``biped_metrics``, tracking included), a world's free objects (``metrics.objects``) and a
multi-contact behaviour's (``metrics.multicontact``).

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
import pinocchio as pin

from biped_contact_sim.sim.observables import configured_point_values

COP_MIN_SHARE = 0.1  # a foot's CoP is compared with its target above this share of the load
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


def biped_metrics(result) -> dict[str, Any]:
    """Whole-run figures of a biped run, from the recorded samples (docs/architecture.md
    "summary.json").

    * ``min_point_normal_force_N``: the smallest normal force of any configured contact point
      in any sample (0: some vertex unloaded or lifted; with geometry contacts the contact at
      that vertex, 0 N where there is none);
    * ``torque_saturation_fraction``: samples with some |τ_j| ≥ 0.999 τ_max,j;
    * ``com_travel_m``: CoM displacement (x, y) from the first to the last sample;
    * with a behaviour: ``planned_distance_m`` (if it plans one), ``progress_fraction``,
      ``stance_slip_max_m`` — the largest horizontal drift of a sole origin from where it was
      at the start of each reference stance interval (touch-down), and ``steps_completed`` —
      touch-downs of the reference that happened before the run ended; ``stance_slip_m`` the
      same drift per contact body (a hand on a table).
    """
    robot, samples = result.robot, result.samples
    if not samples:
        return {}
    limit = robot.effort_limit
    tau = np.array([s.step.tau for s in samples])
    com = np.array([s.obs.com for s in samples])
    # per configured sole vertex (geometry contacts: the contact at that vertex; none: 0 N)
    fn = np.nan_to_num(np.array([configured_point_values(robot, s.step, s.step.f_contact[:, 2])
                                 for s in samples]), nan=0.0)
    out: dict[str, Any] = {
        # below 0+ means some sole vertex carried no load at some sample (a lifting foot edge)
        "min_point_normal_force_N": float(fn.min()) if fn.size else None,
        "torque_saturation_fraction": float(np.mean((np.abs(tau) >= 0.999 * limit).any(axis=1))),
        "max_torque_ratio": float((np.abs(tau) / limit).max()),
        "com_travel_m": [float(x) for x in com[-1, :2] - com[0, :2]],
    }
    behavior = result.behavior
    if behavior is None:
        return out
    planned = getattr(behavior, "planned_distance", None)
    if planned:
        out["planned_distance_m"] = float(planned)
        out["progress_fraction"] = float((com[-1, 0] - com[0, 0]) / planned)
    data = robot.create_data()
    anchors: dict[str, np.ndarray] = {}
    slips = {b.name: 0.0 for b in robot.contact_bodies}
    slip, touchdowns, previous = 0.0, 0, None
    for smp in samples:
        stance = behavior.reference(smp.step.t).stance
        pin.framesForwardKinematics(robot.model, data, smp.step.q)
        for body in robot.contact_bodies:
            xy = data.oMf[body.frame_id].translation[:2]
            if body.name not in stance:
                anchors.pop(body.name, None)
            elif body.name not in anchors:
                anchors[body.name] = xy.copy()
                if previous is not None and body.name not in previous:
                    touchdowns += 1
            else:
                drift = float(np.linalg.norm(xy - anchors[body.name]))
                slip = max(slip, drift)
                slips[body.name] = max(slips[body.name], drift)
        previous = stance
    out["stance_slip_max_m"] = slip
    out["stance_slip_m"] = slips
    out["steps_completed"] = touchdowns
    out.update(_tracking_metrics(result))
    return out


def _tracking_metrics(result, settle: float = 0.5) -> dict[str, Any]:
    """Tracking figures from the controller's diagnostics after ``settle`` seconds, against
    what is measured: CoM error (``com_error``), joint tracking RMS (``q_err``), internal
    tension from the measured sole wrenches against its reference (``tension``,
    ``tension_ref``), and each stance foot's measured CoP (from the contact forces) against its
    target (``cop_refs``, world, in ``stance`` order). CoP targets count in double support
    only (in single support the stance CoP is the ZMP the motion needs, not a target) and for
    feet carrying at least ``COP_MIN_SHARE`` of the measured normal load (the CoP of a foot
    touching down or lifting off sits on whichever vertex still touches)."""
    names = [b.name for b in result.robot.contact_bodies]
    com, q_rms, tension, cop = [], [], [], []
    for smp in result.samples:
        info = smp.info
        if smp.step.t < settle or not info:
            continue
        if np.isfinite(info.get("com_error", np.nan)):
            com.append(info["com_error"])
        if "q_err" in info:
            q_rms.append(float(np.sqrt(np.mean(np.square(info["q_err"])))))
        if "tension" in info and np.isfinite(info["tension"]):
            tension.append(abs(info["tension"] - info["tension_ref"]))
        stance = info.get("stance", ())
        total = sum(f.normal_force for f in smp.obs.feet)
        for i, foot in enumerate(stance if len(stance) >= 2 else ()):
            refs = info.get("cop_refs")
            obs = smp.obs.feet[names.index(foot)]
            if (refs is not None and i < len(refs) and obs.cop is not None
                    and obs.normal_force >= COP_MIN_SHARE * total):
                cop.append(float(np.linalg.norm(obs.cop[:2] - refs[i][:2])))
    out: dict[str, Any] = {}
    if com:
        out["com_error_max_m"] = float(np.max(com))
    if q_rms:
        out["joint_tracking_rms_deg"] = float(np.degrees(np.sqrt(np.mean(np.square(q_rms)))))
    if tension:
        out["tension_error_max_N"] = float(np.max(tension))
        out["tension_error_rms_N"] = float(np.sqrt(np.mean(np.square(tension))))
    if cop:
        out["cop_error_max_m"] = float(np.max(cop))
    return out


__all__ = ["COP_MIN_SHARE", "FELL", "ON_SUPPORT", "biped_metrics", "multicontact_metrics",
           "object_metrics"]
