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

This module holds the entry points (``make_plots``, ``compare_plots``, ``scaling_plot``) and the
energy figure; the others are drawn by ``plots_paper`` (ball, ramp, bipeds), ``plots_control``
(controllers) and ``plots_multicontact``, with the helpers of ``plots_common``.

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
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter, NullLocator, ScalarFormatter

from biped_contact_sim.cli.plots_common import (
    PLOTS_DIR,
    _gaps,
    _length_unit,
    _model_title,
    _normal_forces,
    _robust_limits,
    _save,
    _time,
    _weight,
)
from biped_contact_sim.cli.plots_control import (
    _controller_plots,
)
from biped_contact_sim.cli.plots_multicontact import multicontact_figure
from biped_contact_sim.cli.plots_paper import (
    _ball_plots,
    _biped_plots,
    _ramp_plots,
)
from biped_contact_sim.session.accounting import fidelity_residuals
from biped_contact_sim.session.runner import RunResult

MAX_COLUMNS = 3  # panels per row of the comparison figures


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


# ------------------------------------------------------------------------------- ball


# ------------------------------------------------------------------------------- ramp


# ------------------------------------------------------------------------------- bipeds


# ------------------------------------------------------------------------------- control


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
