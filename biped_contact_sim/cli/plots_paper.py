"""The papers' figures of a run (``cli.plots``' docstring): Rengifo et al.'s bouncing ball (Fig. 4
and 5), the brick on the ramp against its analytic motion, and the bipeds' per-vertex gaps and
normal forces, ε comparison (Fig. 12–14) and ZMPs with the support polygon.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from biped_contact_sim.cli.plots_common import (
    _contact_sets,
    _first_contact_time,
    _gaps,
    _gravity,
    _length_unit,
    _normal_forces,
    _robust_limits,
    _sagittal,
    _save,
    _scenario_sets,
    _time,
    _weight,
)
from biped_contact_sim.robot.base_state import base_motion
from biped_contact_sim.session.runner import RunResult
from biped_contact_sim.session.runner import run_scenario as run

BALL_KP = (0.0, 1.0, 5.0)  # k_p of Rengifo et al. Fig. 4 and 5


BALL_KV = 5000.0


BALL_DT = 2e-4


RAMP_CASES = (("sticking", 0.5), ("sliding", 0.2))  # (label, μ) against tan 20° = 0.364


ZMP_MIN_SPAN = 0.02  # smallest y range of the ZMP-against-time panels [m]
STAND_EPSILONS = (0.0, 1e-6)  # ε of Rengifo et al. Fig. 13 and 14 [m]


def _ball_plots(result: RunResult, plot_dir: Path, extra_runs: bool) -> list[Path]:
    """Rengifo et al. Fig. 4 (height) and Fig. 5 (normal force), beside the run itself."""
    curves: list[tuple[str, RunResult, dict[str, Any]]] = []
    if extra_runs:
        for kp in BALL_KP:
            # Every step is recorded: the impact force lasts a single step of 2·10⁻⁴ s.
            extra = run("ball", "penalty_fl", duration=result.duration, dt=BALL_DT,
                        sets={**_scenario_sets(result), "contact.kp": kp,
                              "contact.kv": BALL_KV},
                        record_rate=1.0 / BALL_DT)
            curves.append((f"penalty_fl k_p = {kp:g}, k_v = {BALL_KV:g}", extra, {"lw": 1.2}))
    curves.append((f"this run: {result.contact_model}, dt = {result.sim.dt:g} s", result,
                   {"color": "k", "ls": "--", "lw": 1.0}))
    weight = _weight(result)

    height_fig = Figure(figsize=(8.0, 6.5), layout="constrained")
    full, zoom = height_fig.subplots(2, 1)
    force_fig = Figure(figsize=(8.0, 6.5), layout="constrained")
    force_full, force_zoom = force_fig.subplots(2, 1)
    after_impact: list[np.ndarray] = []
    impact_times: list[float] = []
    for label, r, style in curves:
        t, gap, fn = _time(r), 1e3 * _gaps(r)[:, 0], _normal_forces(r)[:, 0]
        for ax in (full, zoom):
            ax.plot(t, gap, label=label, **style)
        for ax in (force_full, force_zoom):
            ax.plot(t, fn, label=label, **style)
        t_contact = _first_contact_time(t, _gaps(r))
        if t_contact is not None:
            after_impact.append(gap[t >= t_contact])
            impact_times.append(t_contact)
    full.set(ylabel="height of the ball's bottom [mm]",
             title="Bouncing ball: height (Rengifo et al. Fig. 4)")
    zoom.set(xlabel="t [s]", ylabel="height [mm]", title="zoom on the contact")
    if after_impact:  # the zooms start just before the first impact
        values = np.concatenate(after_impact)
        margin = 0.2 * (values.max() - values.min()) or 0.1
        zoom.set_ylim(values.min() - margin, values.max() + margin)
        t_start = min(impact_times) - 0.05 * (result.duration - min(impact_times))
        for ax in (zoom, force_zoom):
            ax.set_xlim(t_start, result.duration)
    full.legend(fontsize="small")
    force_full.set(ylabel="normal force f_n [N]",
                   title="Bouncing ball: normal force (Rengifo et al. Fig. 5)")
    force_zoom.axhline(weight, color="grey", ls=":", lw=0.8)
    force_zoom.annotate(f"m g = {weight:.2f} N", (0.01, weight), xycoords=("axes fraction", "data"),
                        textcoords="offset points", xytext=(0, 4), fontsize="small")
    # After the impact peak (~10⁴ N) the force settles at the weight; show it at that scale.
    force_zoom.set(xlabel="t [s]", ylabel="f_n [N]", ylim=(-0.1 * weight, 2.0 * weight),
                   title="zoom around m g")
    force_full.legend(fontsize="small")
    return [_save(height_fig, plot_dir / "ball_height.png"),
            _save(force_fig, plot_dir / "ball_force.png")]


def _slope_motion(r: RunResult) -> tuple[np.ndarray, np.ndarray]:
    """Displacement and velocity of the brick along the downhill tangent t₁ [m, m/s]."""
    robot, terrain = r.robot, r.sim.terrain
    t1 = terrain.R[:, 0]
    data = robot.create_data()
    q0, v0 = r.scenario.initial_state(robot, r.params)
    start = base_motion(robot.model, data, q0, v0)[0].translation.copy()
    s, v = [], []
    for sample in r.samples:
        oMb, v_local = base_motion(robot.model, data, sample.step.q, sample.step.v)
        s.append((oMb.translation - start) @ t1)
        v.append((oMb.rotation @ v_local.linear) @ t1)
    return np.array(s), np.array(v)


def _analytic_slide(t: np.ndarray, v0: float, a: float) -> tuple[np.ndarray, np.ndarray]:
    """Motion at constant acceleration a from speed v0; a decelerating brick stops and stays."""
    if a >= 0.0:
        return v0 * t + 0.5 * a * t**2, v0 + a * t
    t_stop = v0 / -a
    tc = np.minimum(t, t_stop)
    return v0 * tc + 0.5 * a * tc**2, v0 + a * tc


def _ramp_plots(result: RunResult, plot_dir: Path, extra_runs: bool) -> list[Path]:
    """Brick on the ramp: displacement, velocity and friction against μ f_n, stick and slip."""
    if extra_runs:
        cases = [(label, run("ramp", result.contact_model, controller=result.controller,
                             duration=result.duration, dt=result.sim.dt,
                             integrator=result.sim.settings.integrator,
                             sets={**_scenario_sets(result, mu=mu), **_contact_sets(result)}))
                 for label, mu in RAMP_CASES]
    else:
        cases = [(f"this run (μ = {result.params['mu']:g})", result)]
    fig = Figure(figsize=(5.0 * len(cases), 9.0), layout="constrained")
    axes = fig.subplots(3, len(cases), squeeze=False, sharex=True)
    for col, (label, r) in enumerate(cases):
        alpha, mu, g = r.sim.terrain.slope, r.sim.terrain.mu, _gravity(r)
        a = g * (math.sin(alpha) - mu * math.cos(alpha))
        t = _time(r)
        s, v = _slope_motion(r)
        s_ref, v_ref = _analytic_slide(t, float(r.params["speed"]), a)
        ax_s, ax_v, ax_f = axes[:, col]
        ax_s.plot(t, s, label=r.contact_model)
        ax_s.plot(t, s_ref, "k--", lw=0.8, label="analytic")
        ax_s.set(ylabel="displacement along the slope [m]",
                 title=f"{label}: μ = {mu:g}, tan α = {math.tan(alpha):.3f}"
                       + (" (diverged)" if r.error else ""))
        ax_s.text(0.97, 0.45, f"a = g (sin α − μ cos α) = {a:.3f} m/s²"
                  + ("\n(decelerates, then sticks)" if a < 0 else ""),
                  transform=ax_s.transAxes, ha="right", va="center", fontsize="small",
                  bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8})
        ax_s.legend(loc="lower right", fontsize="small")
        ax_v.plot(t, v, label=r.contact_model)
        ax_v.plot(t, v_ref, "k--", lw=0.8, label="analytic")
        ax_v.set(ylabel="velocity along the slope [m/s]")
        fc = np.array([smp.step.f_contact for smp in r.samples])
        friction = np.linalg.norm(fc[:, :, :2].sum(axis=1), axis=1)
        limit = mu * fc[:, :, 2].sum(axis=1)
        ax_f.plot(t, friction, label="‖Σ f_t‖ (friction)")
        ax_f.plot(t, limit, "--", label="μ Σ f_n (cone limit)")
        top = np.percentile(np.concatenate([friction, limit]), 99.0)
        # explicit limits: constant lines must not sit on the axis' edge
        ax_f.set(xlabel="t [s]", ylabel="force [N]", ylim=(0.0, 1.3 * top if top > 0 else 1.0))
        ax_f.legend(fontsize="small")
    return [_save(fig, plot_dir / "ramp_stick_slip.png")]


def _per_vertex_figure(result: RunResult, values: np.ndarray, ylabel: str,
                       title: str) -> Figure:
    """One panel per sole vertex, feet side by side, 2 columns per foot (Rengifo Fig. 12-13)."""
    bodies = result.robot.contact_bodies
    rows = max(math.ceil(len(b.points) / 2) for b in bodies)
    fig = Figure(figsize=(3.2 * 2 * len(bodies), 2.4 * rows + 0.6), layout="constrained")
    axes = fig.subplots(rows, 2 * len(bodies), squeeze=False, sharex=True, sharey=True)
    t = _time(result)
    for b, body in enumerate(bodies):
        for j, i in enumerate(body.points):
            ax = axes[j // 2, 2 * b + j % 2]
            x, y = body.offsets[j][:2]
            ax.plot(t, values[:, i], lw=0.8)
            ax.set_title(f"{body.name} vertex {j} ({x:+.2f}, {y:+.2f}) m", fontsize="small")
        for ax in axes[-1, 2 * b:2 * b + 2]:
            ax.set_xlabel("t [s]")
    for ax in axes[:, 0]:
        ax.set_ylabel(ylabel)
    fig.suptitle(title)
    return fig


def _epsilon_figure(result: RunResult) -> Figure:
    """Per-vertex normal forces of ``stand`` with ε = 0 and ε = 10⁻⁶ m (Fig. 13 vs 14)."""
    runs = [(eps, run("stand", "penalty_fl", controller=result.controller,
                      duration=result.duration, dt=result.sim.dt,
                      integrator=result.sim.settings.integrator,
                      sets={**_scenario_sets(result), **_contact_sets(result, epsilon=eps)}))
            for eps in STAND_EPSILONS]
    bodies = result.robot.contact_bodies
    fig = Figure(figsize=(5.0 * len(bodies), 6.5), layout="constrained")
    axes = fig.subplots(len(runs), len(bodies), squeeze=False, sharex=True, sharey=True)
    for row, (eps, r) in enumerate(runs):
        t, fn = _time(r), _normal_forces(r)
        for b, body in enumerate(bodies):
            ax = axes[row, b]
            for j, i in enumerate(body.points):
                ax.plot(t, fn[:, i], lw=0.8, label=f"vertex {j}")
            ax.set_title(f"{body.name}, ε = {eps:g} m" + (" (diverged)" if r.error else ""),
                         fontsize="small")
        axes[row, 0].set_ylabel("f_n [N]")
    for ax in axes[-1]:
        ax.set_xlabel("t [s]")
    axes[0, 0].legend(fontsize="x-small")
    fig.suptitle("penalty_fl on stand: normal forces without and with ε "
                 "(Rengifo et al. Fig. 13 and 14)")
    return fig


def _zmp_figure(result: RunResult) -> Figure:
    """Force ZMP and centroidal ZMP against time, and seen from above in the support polygon."""
    t = _time(result)

    def track(get: Callable[[Any], np.ndarray | None]) -> np.ndarray:
        """(samples, 2) x, y of a point per sample, NaN where undefined."""
        points = [get(s.obs) for s in result.samples]
        return np.array([p[:2] if p is not None else (np.nan, np.nan) for p in points])

    zmp = track(lambda o: o.zmp)
    zmp_c = track(lambda o: o.zmp_centroidal)
    if _sagittal(result):  # a planar robot: only x means something
        fig = Figure(figsize=(10.0, 4.0), layout="constrained")
        ax = fig.subplots()
        ax.plot(t, zmp[:, 0], label="ZMP from the contact forces")
        ax.plot(t, zmp_c[:, 0], "--", lw=0.8, label="ZMP from the centroidal dynamics")
        limits = _robust_limits(np.concatenate([zmp[:, 0], zmp_c[:, 0]]),
                                min_span=ZMP_MIN_SPAN)
        if limits:
            ax.set_ylim(*limits)
        ax.set(xlabel="t [s]", ylabel="x_zmp [m]",
               title=f"{result.scenario.name} / {result.contact_model}: zero-moment point "
                     "(sagittal robot: x only)")
        ax.legend(fontsize="small")
        return fig
    fig = Figure(figsize=(12.0, 6.0), layout="constrained")
    grid = fig.add_gridspec(2, 2)
    for row, axis in enumerate("xy"):
        ax = fig.add_subplot(grid[row, 0])
        ax.plot(t, zmp[:, row], label="ZMP from the contact forces")
        ax.plot(t, zmp_c[:, row], "--", lw=0.8, label="ZMP from the centroidal dynamics")
        limits = _robust_limits(np.concatenate([zmp[:, row], zmp_c[:, row]]),
                                min_span=ZMP_MIN_SPAN)
        if limits:
            ax.set_ylim(*limits)
        ax.set(xlabel="t [s]", ylabel=f"{axis}_zmp [m]")
        ax.legend(fontsize="small")
    top: Axes = fig.add_subplot(grid[:, 1])
    polygons = [s.obs.support_polygon for s in result.samples if len(s.obs.support_polygon)]
    for label, polygon, style in (("support polygon (start)", polygons[:1], "g-"),
                                  ("support polygon (end)", polygons[-1:], "g:")):
        for vertices in polygon:
            closed = np.vstack([vertices, vertices[:1]])
            top.plot(closed[:, 0], closed[:, 1], style, label=label)
    top.plot(zmp[:, 0], zmp[:, 1], lw=0.8, label="force ZMP")
    top.plot(zmp_c[:, 0], zmp_c[:, 1], "--", lw=0.6, label="centroidal ZMP")
    # Keep the polygon in view when an impact throws the centroidal ZMP far outside it.
    extent = np.concatenate([np.vstack(polygons) if polygons else np.empty((0, 2)), zmp])
    for setter, column in ((top.set_xlim, 0), (top.set_ylim, 1)):
        limits = _robust_limits(extent[:, column], pad=0.3)
        if limits:
            setter(*limits)
    top.set(xlabel="x [m]", ylabel="y [m]", aspect="equal",
            title="seen from above (x, y in the ground plane)")
    top.legend(fontsize="small")
    fig.suptitle(f"{result.scenario.name} / {result.contact_model}: zero-moment point")
    return fig


def _biped_plots(result: RunResult, plot_dir: Path, extra_runs: bool) -> list[Path]:
    scale, unit = _length_unit(_gaps(result))
    paths = [
        _save(_per_vertex_figure(result, scale * _gaps(result), f"gap φ [{unit}]",
                                 f"{result.scenario.name} / {result.contact_model}: sole vertex "
                                 "heights (Rengifo et al. Fig. 12)"),
              plot_dir / "vertex_heights.png"),
        _save(_per_vertex_figure(result, _normal_forces(result), "f_n [N]",
                                 f"{result.scenario.name} / {result.contact_model}: normal "
                                 "forces (Rengifo et al. Fig. 13)"),
              plot_dir / "normal_forces.png"),
    ]
    if extra_runs and result.scenario.name == "stand" and result.contact_model == "penalty_fl":
        paths.append(_save(_epsilon_figure(result), plot_dir / "normal_forces_epsilon.png"))
    paths.append(_save(_zmp_figure(result), plot_dir / "zmp.png"))
    return paths
