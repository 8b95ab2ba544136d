"""Helpers of the run figures (``cli.plots`` and the modules beside it): the run's series (time,
gaps, normal forces), its weight, titles and the settings of the extra runs, the length unit
of a panel and its robust limits, saving a figure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from biped_contact_sim.session.runner import RunResult
from biped_contact_sim.sim.observables import configured_point_values

PLOTS_DIR = "plots"


DPI = 120


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


def _sagittal(result: RunResult) -> bool:
    """The robot moves in the x–z plane only (planar base): its lateral axis means nothing."""
    return result.robot.config.base == "planar_xz"
