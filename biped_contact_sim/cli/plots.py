"""Figures of a run (``out_dir/plots/*.png``): the ones a reader of the papers expects.

* ``ball`` — Rengifo et al. Fig. 4 and 5: height and normal force of the bouncing ball for
  ``penalty_fl`` with k_p ∈ {0, 1, 5}, k_v = 5000, dt = 2·10⁻⁴ s, beside the run itself;
* ``ramp`` — the brick sticking (μ = 0.5 > tan 20°) and sliding (μ = 0.2) on the ramp, against
  the analytic motion with acceleration g (sin α − μ cos α);
* bipeds — per-vertex gaps and normal forces (Fig. 12 and 13), ε = 0 against ε = 10⁻⁶ m for
  ``penalty_fl`` on ``stand`` (Fig. 13 and 14), force and centroidal ZMP with the support
  polygon;
* ``multicontact`` — Sentis et al. Fig. 6 (``plots_multicontact``);
* every scenario — the mechanical energy.

The paper figures need runs with other settings than the user's; ``make_plots`` makes them
(same scenario parameters and duration as the run) only with ``extra_runs`` (``biped-sim run
--paper-figures``); otherwise a figure shows the run alone. Figures are built with the
object-oriented ``matplotlib.figure.Figure`` (no pyplot): no global figure registry to leak and
no GUI backend to select. Conventions: lengths in the unit that suits them (mm or µm), a few
impact spikes never set the scale of a panel (robust limits, the peak written on it), a
still signal is not magnified into its round-off (minimum spans), at most three panels a row.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MultipleLocator, NullFormatter, NullLocator, ScalarFormatter

from biped_contact_sim.cli.plots_multicontact import multicontact_figure
from biped_contact_sim.control.feasibility import robot_stability_cloud
from biped_contact_sim.robot.base_state import base_motion
from biped_contact_sim.session.accounting import fidelity_residuals
from biped_contact_sim.session.runner import RunResult
from biped_contact_sim.session.runner import run_scenario as run
from biped_contact_sim.sim.observables import configured_point_values

PLOTS_DIR = "plots"
DPI = 120

BALL_KP = (0.0, 1.0, 5.0)  # k_p of Rengifo et al. Fig. 4 and 5
BALL_KV = 5000.0
BALL_DT = 2e-4
RAMP_CASES = (("sticking", 0.5), ("sliding", 0.2))  # (label, μ) against tan 20° = 0.364
STAND_EPSILONS = (0.0, 1e-6)  # ε of Rengifo et al. Fig. 13 and 14 [m]
ZMP_MIN_SPAN = 0.02  # smallest y range of the ZMP-against-time panels [m]
FORCE_MIN_SPAN = 1.0  # [N] smallest y range of an internal-force panel (round-off is ~1e-13)
MOMENT_MIN_SPAN = 0.1  # [N·m]
MAX_COLUMNS = 3  # panels per row of the comparison figures


STABILITY_GRID_X = np.linspace(-0.15, 0.2, 36)  # [m] CoM grid of the stability cloud
STABILITY_GRID_Y = np.linspace(-0.2, 0.2, 41)
RESIDUAL_FLOOR = 1e-12
RESIDUAL_PANELS = (("penetration_m", 1e3, "penetration [mm]"),
                   ("cone_violation_N", 1.0, "cone violation [N]"),
                   ("signorini_W", 1.0, "Signorini |f_n v_n⁺| [W]"),
                   ("dissipation_gap_W", 1.0, "max-dissipation gap [W]"))


def make_plots(result: RunResult, out_dir: Path, extra_runs: bool = False) -> list[Path]:
    """Write the figures of ``result`` to ``out_dir/plots``.

    Args:
        result: The run.
        out_dir: Output folder of the run (``plots/`` is created in it).
        extra_runs: Also make the runs that the paper figures compare (ball gains, ramp
            friction, stand ε); they last ``result.duration`` each.

    Returns:
        The PNG files written.
    """
    if not result.samples:  # diverged on its first step: nothing to draw
        return []
    plot_dir = Path(out_dir) / PLOTS_DIR
    plot_dir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    name = result.scenario.name
    if name == "ball":
        paths += _ball_plots(result, plot_dir, extra_runs)
    elif name == "ramp":
        paths += _ramp_plots(result, plot_dir, extra_runs)
    if result.scenario.biped:
        paths += _biped_plots(result, plot_dir, extra_runs)
    if result.behavior is not None:
        paths += _controller_plots(result, plot_dir)
    if getattr(result.behavior, "steady_phases", None):  # multicontact: Sentis et al. Fig. 6
        paths.append(multicontact_figure(result, plot_dir / "multicontact_fig6.png"))
    paths.append(_energy_plot(result, plot_dir))
    return paths


def compare_plots(results: dict[str, RunResult], out_dir: Path) -> list[Path]:
    """Side-by-side figures of the same scenario under several contact models.

    Writes ``compare_gaps.png`` (every point's gap, one panel per model),
    ``compare_normal_force.png`` (total normal force per contact body, one panel per model) and
    ``compare_energy.png`` (all models on one axis).

    Args:
        results: Run per contact-model name (models that refused their settings left out).
        out_dir: Output folder.

    Returns:
        The PNG files written.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    results = {name: r for name, r in results.items() if r.samples}
    if not results:
        return []
    n = len(results)
    cols = min(n, MAX_COLUMNS)
    rows = math.ceil(n / cols)
    scenario = next(iter(results.values())).scenario.name

    def panels(title: str) -> tuple[Figure, list[Axes]]:
        fig = Figure(figsize=(4.2 * cols, 3.2 * rows + 0.5), layout="constrained")
        axes = fig.subplots(rows, cols, sharex=True, sharey=True, squeeze=False).ravel()
        for ax in axes[n:]:
            ax.set_visible(False)
        fig.suptitle(f"{scenario}: {title}")
        return fig, list(axes[:n])

    all_gaps = np.concatenate([_gaps(r).ravel() for r in results.values()])
    scale, unit = _length_unit(all_gaps)
    gaps_fig, axes = panels("gap of every contact point")
    for ax, (name, r) in zip(axes, results.items(), strict=True):
        t = _time(r)
        gaps = _gaps(r)
        for i, point in enumerate(r.robot.point_names):
            ax.plot(t, scale * gaps[:, i], lw=0.8, label=point)
        ax.axhline(0.0, color="k", lw=0.5)
        ax.set(title=_model_title(name, r), xlabel="t [s]", ylabel=f"gap φ [{unit}]")
    limits = _robust_limits(scale * all_gaps)
    if limits:
        axes[0].set_ylim(*limits)
    axes[0].legend(fontsize="x-small")

    force_fig, axes = panels("normal force per contact body (impact peaks clipped, value "
                             "written)")
    sums = [np.nansum(_normal_forces(r)[:, list(b.points)], axis=1)
            for r in results.values() for b in r.robot.contact_bodies]
    weight = _weight(next(iter(results.values())))
    limits = _robust_limits(np.concatenate([*sums, [0.0, weight]]), pad=0.2)
    for ax, (name, r) in zip(axes, results.items(), strict=True):
        t = _time(r)
        fn = _normal_forces(r)
        for body in r.robot.contact_bodies:
            total = np.nansum(fn[:, list(body.points)], axis=1)
            ax.plot(t, total, lw=0.8, label=body.name)
            if limits and total.size and total.max() > limits[1]:
                k = int(np.argmax(total))
                ax.annotate(f"peak {total[k]:.3g} N", (t[k], limits[1]), xytext=(4, -12),
                            textcoords="offset points", fontsize="x-small")
        ax.axhline(_weight(r), color="k", ls=":", lw=0.8, label="m g")
        ax.set(title=_model_title(name, r), xlabel="t [s]", ylabel="Σ f_n [N]")
    if limits:
        axes[0].set_ylim(*limits)
    axes[0].legend(fontsize="x-small")

    energy_fig = Figure(figsize=(8.0, 6.0), layout="constrained")
    ax, diff = energy_fig.subplots(2, 1, sharex=True)
    styles = ("-", "--", "-.", ":", (0, (5, 1)))
    # the differences are taken from penalty_fl (the project's default) when it ran
    reference_name = "penalty_fl" if "penalty_fl" in results else next(iter(results))
    reference = results[reference_name]
    e_ref = np.array([s.obs.energy for s in reference.samples])
    for k, (name, r) in enumerate(results.items()):
        energy = np.array([s.obs.energy for s in r.samples])
        ax.plot(_time(r), energy, ls=styles[k % len(styles)], lw=1.2,
                label=_model_title(name, r))
        diff.plot(_time(r), energy - np.interp(_time(r), _time(reference), e_ref),
                  ls=styles[k % len(styles)], lw=1.0, label=_model_title(name, r))
    ax.set(ylabel="kinetic + potential energy [J]",
           title=f"{scenario}: energy (lines on top of each other agree; below, the gaps)")
    diff.set(xlabel="t [s]", ylabel=f"energy − {reference_name}'s [J]")
    ax.legend(fontsize="small")

    residual_fig = Figure(figsize=(11.0, 7.0), layout="constrained")
    axes = residual_fig.subplots(2, 2, sharex=True).ravel()
    for name, r in results.items():
        mu = r.sim.terrain.mu
        res = [fidelity_residuals(smp.step, mu) for smp in r.samples]
        for ax, (key, scale, label) in zip(axes, RESIDUAL_PANELS, strict=True):
            # log axes: zero (exact) residuals are drawn at the floor instead of vanishing
            values = np.maximum([scale * x[key] for x in res], RESIDUAL_FLOOR)
            ax.semilogy(_time(r), values, lw=0.8, label=_model_title(name, r))
            ax.set(ylabel=label)
    for ax in axes[2:]:
        ax.set_xlabel("t [s]")
    axes[0].legend(fontsize="x-small")
    residual_fig.suptitle(f"{next(iter(results.values())).scenario.name}: physical-fidelity "
                          f"residuals per step (floor {RESIDUAL_FLOOR:g} = exact)")

    return [_save(gaps_fig, out_dir / "compare_gaps.png"),
            _save(force_fig, out_dir / "compare_normal_force.png"),
            _save(energy_fig, out_dir / "compare_energy.png"),
            _save(residual_fig, out_dir / "compare_residuals.png")]


def scaling_plot(rows: list[dict[str, Any]], exponents: dict[str, float],
                 out_dir: Path) -> Path:
    """Time per step against the number of contact points m, log-log, with the fitted
    exponents and the system sizes (Chardonnet et al. Fig. 5 and its 57-versus-378 argument).
    """
    fig = Figure(figsize=(11.0, 4.5), layout="constrained")
    ax_t, ax_n = fig.subplots(1, 2)
    for model, k in exponents.items():
        mine = [r for r in rows if r["contact_model"] == model]
        m = np.array([r["m"] for r in mine], float)
        ax_t.loglog(m, [r["mean_step_us"] for r in mine], "o-", label=f"{model} (∝ m^{k:.2f})")
        ax_n.plot(m, [r["system_size"] or np.nan for r in mine], "o-", label=model)
    ax_t.set(xlabel="contact points m", ylabel="µs per step", title="cost per step")
    # ticks at the m measured, plain numbers (log axes would crowd 2·10⁰ … 6·10¹ labels)
    ms = sorted({r["m"] for r in rows})
    for axis in (ax_t.xaxis, ax_n.xaxis):
        axis.set_major_locator(NullLocator())
        axis.set_minor_locator(NullLocator())
    ax_t.set_xticks(ms, [str(m) for m in ms])
    ax_n.set_xticks(ms, [str(m) for m in ms])
    ax_t.yaxis.set_major_formatter(ScalarFormatter())
    ax_t.yaxis.set_minor_formatter(NullFormatter())
    ax_n.set(xlabel="contact points m", ylabel="unknowns of the contact problem",
             title="system size (3m versus m(2+d))")
    for ax in (ax_t, ax_n):
        ax.grid(True, which="both", lw=0.3)
        ax.legend(fontsize="small")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return _save(fig, out_dir / "scaling.png")


# ------------------------------------------------------------------------------- helpers


def _save(fig: Figure, path: Path) -> Path:
    fig.savefig(path, dpi=DPI)
    return path


def _time(result: RunResult) -> np.ndarray:
    return np.array([s.step.t for s in result.samples])


def _gaps(result: RunResult) -> np.ndarray:
    """(samples, points) gaps φ at the start of each recorded step [m] (geometry contacts: at
    the configured points, NaN where nothing is within the detection margin)."""
    return np.array([configured_point_values(result.robot, s.step, s.step.phi)
                     for s in result.samples]).reshape(len(result.samples), -1)


def _normal_forces(result: RunResult) -> np.ndarray:
    """(samples, points) normal forces f_n [N] (geometry contacts: as ``_gaps``)."""
    return np.array([configured_point_values(result.robot, s.step, s.step.f_contact[:, 2])
                     for s in result.samples]).reshape(len(result.samples), -1)


def _gravity(result: RunResult) -> float:
    return float(np.linalg.norm(result.robot.model.gravity.linear))


def _weight(result: RunResult) -> float:
    return result.robot.mass * _gravity(result)


def _model_title(name: str, result: RunResult) -> str:
    return f"{name} (diverged)" if result.error else name


def _scenario_sets(result: RunResult, **overrides: Any) -> dict[str, Any]:
    """``--set`` pairs that repeat the run's scenario parameters, with overrides."""
    return {**result.params, **overrides}


def _contact_sets(result: RunResult, **overrides: Any) -> dict[str, Any]:
    """``--set`` pairs that repeat the run's contact settings, with overrides."""
    settings = {**result.contact_settings, **overrides}
    return {f"contact.{k}": v for k, v in settings.items()}


def _length_unit(values_m: np.ndarray) -> tuple[float, str]:
    """(factor, unit) to show lengths given in metres: mm, or µm below a millimetre."""
    values = np.abs(values_m[np.isfinite(values_m)])
    return (1e3, "mm") if values.size and values.max() >= 1e-3 else (1e6, "µm")


def _first_contact_time(t: np.ndarray, gaps: np.ndarray) -> float | None:
    touching = np.flatnonzero((gaps <= 0.0).any(axis=1))
    return float(t[touching[0]]) if touching.size else None


def _robust_limits(values: np.ndarray, pad: float = 0.1,
                   min_span: float = 0.0) -> tuple[float, float] | None:
    """1st–99th percentile range, padded: keeps a few impact spikes from flattening a plot.

    ``min_span`` keeps a still signal from being magnified into its rounding noise.
    """
    values = values[np.isfinite(values)]
    if values.size == 0:
        return None
    lo, hi = np.percentile(values, [1.0, 99.0])
    margin = max(pad * (hi - lo), 0.5 * (min_span - (hi - lo)), 1e-9)
    return float(lo - margin), float(hi + margin)


# ------------------------------------------------------------------------------- ball


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


# ------------------------------------------------------------------------------- ramp


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


# ------------------------------------------------------------------------------- bipeds


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


# ------------------------------------------------------------------------------- control


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


def _sagittal(result: RunResult) -> bool:
    """The robot moves in the x–z plane only (planar base): its lateral axis means nothing."""
    return result.robot.config.base == "planar_xz"


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


# ------------------------------------------------------------------------------- energy


def _energy_plot(result: RunResult, plot_dir: Path) -> Path:
    fig = Figure(figsize=(7.0, 4.0), layout="constrained")
    ax = fig.subplots()
    energy = np.array([s.obs.energy for s in result.samples])
    ax.plot(_time(result), energy)
    ax.set(xlabel="t [s]", ylabel="kinetic + potential energy [J]",
           title=f"{result.scenario.name} / {result.contact_model}: energy "
                 f"(start {energy[0]:.4g} J, end {energy[-1]:.4g} J)"
                 + (" (diverged)" if result.error else ""))
    return _save(fig, plot_dir / "energy.png")
