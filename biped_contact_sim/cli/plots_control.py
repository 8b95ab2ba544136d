"""The controller's figures of a run (``cli.plots``): tracking, torques, contact wrenches and
internal forces against their references, the footprints with the CoM and ZMP, and the
stability cloud of the robot's support.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MultipleLocator

from biped_contact_sim.cli.plots_common import (
    _robust_limits,
    _sagittal,
    _save,
    _time,
)
from biped_contact_sim.control.feasibility import robot_stability_cloud
from biped_contact_sim.session.runner import RunResult

FORCE_MIN_SPAN = 1.0  # [N] smallest y range of an internal-force panel (round-off is ~1e-13)


MOMENT_MIN_SPAN = 0.1  # [N·m]


STABILITY_GRID_X = np.linspace(-0.15, 0.2, 36)  # [m] CoM grid of the stability cloud


STABILITY_GRID_Y = np.linspace(-0.2, 0.2, 41)


def _info_series(result: RunResult, key: str) -> np.ndarray | None:
    """(samples, ...) of a controller diagnostic, NaN where a sample lacks it; None if none has
    it."""
    values = [smp.info.get(key) for smp in result.samples]
    shapes = {np.shape(v) for v in values if v is not None}
    if not shapes or len(shapes) > 1:
        return None
    shape = shapes.pop()
    return np.array([np.full(shape, np.nan) if v is None else np.asarray(v, float)
                     for v in values])


def _controller_plots(result: RunResult, plot_dir: Path) -> list[Path]:
    """Figures of a controlled run: CoM and ZMP over the footprints, torques against limits,
    CoPs, CoM tracking, joint tracking (ctc) and internal forces against references (wbc)."""
    title = f"{result.scenario.name} / {result.contact_model} / {result.controller}"
    t = _time(result)
    paths = []

    com_ref = _info_series(result, "com_ref")
    paths.append(_save(_footprints_figure(result, title, com_ref),
                       plot_dir / "com_zmp_footprints.png"))

    limits = result.robot.effort_limit
    tau = np.array([smp.step.tau for smp in result.samples])
    fig = Figure(figsize=(11.0, 4.5), layout="constrained")
    ax = fig.subplots()
    for j, name in enumerate(result.robot.actuated_joint_names):
        ax.plot(t, tau[:, j] / limits[j], lw=0.7, label=name)
    ax.axhline(1.0, color="k", ls=":")
    ax.axhline(-1.0, color="k", ls=":")
    ax.set(xlabel="t [s]", ylabel="τ_j / τ_max,j", title=f"{title}: torques against limits")
    ax.legend(fontsize="xx-small", ncol=4)
    paths.append(_save(fig, plot_dir / "torques.png"))

    fig = Figure(figsize=(11.0, 6.0), layout="constrained")
    axes = fig.subplots(2, 1, sharex=True)
    for k, body in enumerate(result.robot.contact_bodies):
        cop = np.array([smp.obs.feet[k].cop[:2] if smp.obs.feet[k].cop is not None
                        else (np.nan, np.nan) for smp in result.samples])
        for row in range(2):
            axes[row].plot(t, cop[:, row], lw=0.8, label=f"CoP {body.name}")
    cop_refs = _info_series(result, "cop_refs")
    if cop_refs is not None and cop_refs.ndim == 3:
        for i in range(cop_refs.shape[1]):
            for row in range(2):
                axes[row].plot(t, cop_refs[:, i, row], "--", lw=0.7, color="0.3",
                               label="CoP targets" if i == 0 and row == 0 else None)
    for row, axis in enumerate("xy"):
        axes[row].set(ylabel=f"{axis} [m]")
        axes[row].legend(fontsize="x-small")
    axes[1].set_xlabel("t [s]")
    axes[0].set_title(f"{title}: centres of pressure (world)")
    paths.append(_save(fig, plot_dir / "cops.png"))

    com = np.array([smp.obs.com for smp in result.samples])
    if com_ref is not None and com_ref.ndim == 2:
        fig = Figure(figsize=(11.0, 4.0), layout="constrained")
        ax = fig.subplots()
        for i, axis in enumerate("xyz"):
            ax.plot(t, 1e3 * (com[:, i] - com_ref[:, i]), lw=0.8, label=f"{axis}")
        ax.set(xlabel="t [s]", ylabel="CoM − reference [mm]", title=f"{title}: CoM tracking")
        ax.legend(fontsize="small")
        paths.append(_save(fig, plot_dir / "com_tracking.png"))

    q_err = _info_series(result, "q_err")
    if q_err is not None and q_err.ndim == 2:
        fig = Figure(figsize=(11.0, 4.0), layout="constrained")
        ax = fig.subplots()
        ax.plot(t, np.degrees(np.sqrt(np.nanmean(q_err ** 2, axis=1))), label="RMS over joints")
        ax.plot(t, np.degrees(np.nanmax(np.abs(q_err), axis=1)), lw=0.7, label="max")
        ax.axhline(1.0, color="k", ls=":", label="1°")
        ax.set(xlabel="t [s]", ylabel="joint error [deg]", title=f"{title}: joint tracking")
        ax.legend(fontsize="small")
        paths.append(_save(fig, plot_dir / "joint_tracking.png"))

    first = result.samples[0]
    if (len(first.info.get("stance", ())) == len(result.robot.contact_bodies) > 1
            and not _sagittal(result)):  # a planar robot has no lateral axis to scan
        # Sentis et al. §IV-B, Fig. 7: CoM positions statically feasible on the initial soles
        cloud = robot_stability_cloud(result.robot, first.step.q, STABILITY_GRID_X,
                                      STABILITY_GRID_Y)
        paths.append(_save(_stability_figure(cloud, title),
                           plot_dir / "stability_cloud.png"))

    f_int, f_ref = _info_series(result, "f_int"), _info_series(result, "f_int_ref")
    if f_int is not None and f_ref is not None and f_int.shape == f_ref.shape:
        labels = next((smp.info["f_int_labels"] for smp in result.samples
                       if "f_int_labels" in smp.info), None)
        n = f_int.shape[1]
        cols = 2 if n > 3 else 1
        fig = Figure(figsize=(6.0 * cols, 2.2 * math.ceil(n / cols) + 0.5),
                     layout="constrained")
        axes = fig.subplots(math.ceil(n / cols), cols, sharex=True, squeeze=False).ravel()
        for ax in axes[n:]:
            ax.set_visible(False)
        for i, ax in enumerate(axes[:n]):
            name = str(labels[i]) if labels is not None else f"F_int[{i}]"
            label, unit, span = _internal_force_label(name)
            ax.plot(t, f_int[:, i], lw=0.8, label="measured")
            ax.plot(t, f_ref[:, i], "--", lw=0.8, label="reference")
            limits = _robust_limits(np.concatenate([f_int[:, i], f_ref[:, i]]),
                                    min_span=span)
            if limits:
                ax.set_ylim(*limits)
            ax.set(ylabel=f"[{unit}]", title=label)
            ax.title.set_fontsize("small")
        axes[0].legend(fontsize="small")
        fig.suptitle(f"{title}: internal forces (Sentis et al. eq. 82) against references")
        for ax in axes[max(0, n - cols):n]:
            ax.set_xlabel("t [s]")
        paths.append(_save(fig, plot_dir / "internal_forces.png"))
    return paths


def _footprints_figure(result: RunResult, title: str, com_ref: np.ndarray | None) -> Figure:
    """CoM and ZMP over the support polygons: seen from above for a 3-D robot; for a sagittal
    robot, x against time with the support interval as a band."""
    t = _time(result)
    com = np.array([smp.obs.com[:2] for smp in result.samples])
    zmp = np.array([smp.obs.zmp[:2] if smp.obs.zmp is not None else (np.nan, np.nan)
                    for smp in result.samples])
    if _sagittal(result):
        fig = Figure(figsize=(10.0, 4.5), layout="constrained")
        ax = fig.subplots()
        lo = np.array([s.obs.support_polygon[:, 0].min() if len(s.obs.support_polygon)
                       else np.nan for s in result.samples])
        hi = np.array([s.obs.support_polygon[:, 0].max() if len(s.obs.support_polygon)
                       else np.nan for s in result.samples])
        ax.fill_between(t, lo, hi, color="0.85", label="support (x extent of the soles)")
        ax.plot(t, zmp[:, 0], lw=0.8, color="C3", label="force ZMP")
        ax.plot(t, com[:, 0], lw=1.5, color="C0", label="CoM")
        if com_ref is not None and com_ref.ndim == 2:
            ax.plot(t, com_ref[:, 0], "--", lw=1.0, color="C2", label="CoM reference")
        ax.set(xlabel="t [s]", ylabel="x [m]", title=f"{title}: CoM and ZMP within the support "
               "(sagittal robot: x only)")
        ax.legend(fontsize="small", loc="upper left")
        return fig
    fig = Figure(figsize=(10.0, 5.5), layout="constrained")
    ax = fig.subplots()
    every = max(1, len(result.samples) // 40)
    for k, smp in enumerate(result.samples[::every]):
        polygon = smp.obs.support_polygon
        if len(polygon) >= 3:
            closed = np.vstack([polygon, polygon[:1]])
            ax.plot(closed[:, 0], closed[:, 1], color="0.75", lw=0.6,
                    label="support polygons" if k == 0 else None)
    ax.plot(zmp[:, 0], zmp[:, 1], lw=0.8, color="C3", label="force ZMP")
    ax.plot(com[:, 0], com[:, 1], lw=1.5, color="C0", label="CoM (ground projection)")
    if com_ref is not None and com_ref.ndim == 2:
        ax.plot(com_ref[:, 0], com_ref[:, 1], "--", lw=1.0, color="C2", label="CoM reference")
    ax.set(xlabel="x [m]", ylabel="y [m]", aspect="equal")
    ax.set_title(f"{title}\nCoM and ZMP over the support polygons (seen from above)")
    ax.legend(fontsize="small")
    return fig


def _stability_figure(cloud, title: str) -> Figure:
    """Sentis et al. Fig. 7 style: the CoM grid points statically feasible on the soles."""
    fig = Figure(figsize=(6.0, 6.0), layout="constrained")
    ax = fig.subplots()
    X, Y = np.meshgrid(cloud.x, cloud.y)
    ax.scatter(X[~cloud.feasible], Y[~cloud.feasible], s=4, c="0.85", label="infeasible")
    ax.scatter(X[cloud.feasible], Y[cloud.feasible], s=6, c="C0", label="feasible CoM")
    for k, sole in enumerate(cloud.soles):
        closed = np.vstack([sole, sole[:1]])
        ax.plot(closed[:, 0], closed[:, 1], "k-", lw=1.5, label="soles" if k == 0 else None)
    ax.set(xlabel="x [m]", ylabel="y [m]", aspect="equal")
    ax.xaxis.set_major_locator(MultipleLocator(0.1))  # 0.05 steps crowd the labels
    ax.set_title(f"{title}\nCoM static stability cloud (Sentis et al. §IV-B), "
                 f"CoM height {cloud.z:.3f} m", fontsize="medium")
    ax.legend(loc="upper right", fontsize="small")
    return fig


def _internal_force_label(name: str) -> tuple[str, str, float]:
    """(title, unit, minimum span) of an internal-force component named by the controller
    (``tension_left_foot_right_foot``, ``m_cop_left_foot_x``, ``m_n_left_foot``)."""
    words = name.replace("_foot", "").split("_")
    if words[0] == "tension":
        return f"tension between the feet ({' – '.join(words[1:])})", "N", FORCE_MIN_SPAN
    if words[:2] == ["m", "cop"]:
        return (f"tangential moment at the {words[2]} CoP, about {words[3]}", "N·m",
                MOMENT_MIN_SPAN)
    if words[:2] == ["m", "n"]:
        return f"normal moment of the {words[2]} foot", "N·m", MOMENT_MIN_SPAN
    return name.replace("_", " "), "N or N·m", MOMENT_MIN_SPAN
