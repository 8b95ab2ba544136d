"""The figure of a multi-contact run (``multicontact``), laid out as Sentis, Park, Khatib
(2010) Fig. 6: the internal tension between the left hand and the right foot, the moments
about the left hand's CoP (two tangential, one normal), the panel's normal force against its
reference, the CoM's tracking, and every contact body's normal force through the
transitions. Steady phases (``behavior.steady_phases``) are shaded; the internal forces are
the measured ones (from the contact wrenches), the references dashed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from biped_contact_sim.session.runner import RunResult


def _labelled(result: RunResult, key: str) -> list[dict[str, float]]:
    """Per sample, {row label: value} of an internal-force diagnostic (its rows change with
    the support)."""
    out = []
    for smp in result.samples:
        labels, values = smp.info.get("f_int_labels"), smp.info.get(key)
        out.append({} if labels is None or values is None
                   else dict(zip(labels, np.asarray(values, float), strict=True)))
    return out


def _series(rows: list[dict[str, float]], label: str) -> np.ndarray:
    return np.array([row.get(label, np.nan) for row in rows])


def multicontact_figure(result: RunResult, path: Path) -> Path:
    """Write the Fig. 6 figure of ``result`` (module docstring) to ``path``."""
    t = np.array([smp.step.t for smp in result.samples])
    beh = result.behavior
    measured, refs = _labelled(result, "f_int"), _labelled(result, "f_int_ref")
    title = f"{result.scenario.name} / {result.contact_model} / {result.controller}"
    fig = Figure(figsize=(11.0, 12.0), layout="constrained")
    axes = fig.subplots(5, 1, sharex=True)
    for ax in axes:
        for a, b in getattr(beh, "steady_phases", ()):
            ax.axvspan(a, b, color="0.92", lw=0)
    # the tension's row name follows the support's order (feet first)
    tension = "tension_right_foot_left_hand"
    axes[0].plot(t, _series(measured, tension), lw=0.9, label="measured")
    axes[0].plot(t, _series(refs, tension), "k--", lw=0.8, label="reference")
    axes[0].set(ylabel="[N]", title=f"{title}: tension between left hand and right foot")
    for label, name in (("m_cop_left_hand_x", "about x"), ("m_cop_left_hand_y", "about y"),
                        ("m_n_left_hand", "normal")):
        axes[1].plot(t, _series(measured, label), lw=0.9, label=name)
    axes[1].set(ylabel="[N·m]", title="moments about the left hand's CoP (reference 0)")
    force = [smp.info.get("force_tasks", {}).get("right_hand") for smp in result.samples]
    axes[2].plot(t, [np.nan if f is None else f[1] for f in force], lw=0.9, label="measured")
    axes[2].plot(t, [np.nan if f is None else f[0] for f in force], "k--", lw=0.8,
                 label="reference")
    axes[2].set(ylabel="[N]", title="panel normal force (right hand)")
    com = np.array([smp.info.get("com", np.full(3, np.nan)) for smp in result.samples])
    ref = np.array([np.full(3, np.nan) if smp.info.get("com_ref") is None
                    else smp.info["com_ref"] for smp in result.samples])
    for k, axis in enumerate("xyz"):
        line, = axes[3].plot(t, 100 * (com[:, k] - com[0, k]), lw=0.9, label=axis)
        axes[3].plot(t, 100 * (ref[:, k] - com[0, k]), "--", color=line.get_color(), lw=0.8)
    axes[3].set(ylabel="[cm]", title="CoM from its start (dashed: reference)")
    for k, body in enumerate(result.robot.contact_bodies):
        axes[4].plot(t, [smp.obs.feet[k].normal_force for smp in result.samples], lw=0.9,
                     label=body.name)
    axes[4].set(xlabel="t [s]", ylabel="[N]", title="normal forces through the transitions")
    for ax in axes:
        ax.legend(fontsize="small", loc="upper left")
        ax.grid(alpha=0.3)
    fig.savefig(path, dpi=120)
    return path


__all__ = ["multicontact_figure"]
