"""The summary figure of a study, drawn from its result rows.

One chosen column (``figure.metric``, a metric or an axis) against one axis (``x``: a line
plot) or two (``x`` and ``y``: a heat map); ``series`` adds one line per value, or one heat-map
panel per value. Rows that share the plotted coordinates (the other axes of the study) are
first filtered by ``where`` (e.g. ``{outcome: {equals: completed}}``) and then reduced
(``reduce``: mean, median, min, max or count). So ``metric: push_force, reduce: max, where:
outcome = completed`` maps the largest push recovered.

Failures are marked where they happened, from every row of the point (before ``where``):
a red × where some run fell, a black ▼ where one diverged, a grey ■ where one failed
otherwise (refused settings, an error, a lost worker); heat-map cells write the counts.
Defaults: the study's varied axes in file order (one: a line, two: a heat map), its first
metric, mean.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from biped_contact_sim.study.spec import Study, StudyError
from biped_contact_sim.study.table import FIGURE as FIGURE_NAME

DPI = 100
MAX_COLUMNS = 3  # heat-map panels per row
FAIL_OUTCOMES = {"fell": ("fell", "x", "tab:red"), "diverged": ("diverged", "v", "black"),
                 "error": ("failed", "s", "tab:gray")}
ERROR_OUTCOMES = ("error", "refused", "lost")
SERIES_MARKERS = ("o", "s", "^", "D", "v", "P", "X")


def choose_axes(study: Study, rows: list[dict[str, Any]], spec: dict[str, Any]
                ) -> tuple[str | None, str | None, str | None]:
    """(x, y, series) of the figure: the spec's, else the varied axes in order (a third or
    more is reduced over). None for x when nothing varies."""
    varied = [k for k in study.axis_keys if len({_key(r.get(k)) for r in rows}) > 1]
    x, y, series = spec.get("x"), spec.get("y"), spec.get("series")
    free = [k for k in varied if k not in (x, y, series)]
    if x is None and free:
        x = free.pop(0)
    if y is None and series is None and len(free) == 1 and len(varied) == 2:
        y = free.pop(0)
    return x, y, series


def draw(study: Study, rows: list[dict[str, Any]], spec: dict[str, Any], path: Path
         ) -> Path | None:
    """Draw the summary figure to ``path``; None (nothing written) when no axis varies.

    Raises:
        StudyError: the metric has no numeric value in any kept row.
    """
    x, y, series = choose_axes(study, rows, spec)
    if x is None or not rows:
        return None
    metric, reduce = spec["metric"], spec["reduce"]
    kept = [r for r in rows if _passes(r, spec.get("where") or {})]
    if reduce != "count" and not any(_number(r.get(metric)) is not None for r in kept) and kept:
        raise StudyError(f"figure.metric {metric!r} has no numeric value in the rows; choose "
                         "a numeric metric or axis")
    label = _label(metric, reduce, spec.get("where") or {})
    series_values = _levels(study, rows, series) if series else [None]
    fig = (_heat_maps(study, rows, kept, spec, x, y, series, series_values, label)
           if y else _lines(study, rows, kept, spec, x, series, series_values, label))
    fig.suptitle(spec.get("title") or study.name, fontsize=11)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    return path


def _lines(study, rows, kept, spec, x, series, series_values, label) -> Figure:
    fig = Figure(figsize=(6.4, 4.2), layout="constrained")
    ax = fig.add_subplot()
    xs = _levels(study, rows, x)
    numeric = all(_number(v) is not None for v in xs)
    transform = spec.get("x_transform", "none")
    positions = [(_tan_deg(v) if transform == "tan_deg" else float(v)) if numeric else i
                 for i, v in enumerate(xs)]
    marked: set[str] = set()
    for k, s in enumerate(series_values):
        values = [_reduce([r.get(spec["metric"]) for r in kept
                           if _match(r, x, xv) and _match(r, series, s)], spec["reduce"])
                  for xv in xs]
        # Series that coincide stay visible: each its own marker, the first ones largest.
        ax.plot(positions, [np.nan if v is None else v for v in values],
                marker=SERIES_MARKERS[k % len(SERIES_MARKERS)],
                ms=max(3.0, 9.0 - 1.5 * k), lw=1.2, mfc="none" if k % 2 else None,
                label=None if s is None else f"{series} = {s}")
        for pos, xv, value in zip(positions, xs, values, strict=True):
            outcomes = _failures([r for r in rows if _match(r, x, xv) and _match(r, series, s)])
            for kind, count in outcomes.items():
                if count:
                    name, marker, color = FAIL_OUTCOMES[kind]
                    where = value if value is not None else np.nan
                    ax.plot([pos], [where], marker=marker, color=color, ms=9, ls="none",
                            label=name if name not in marked else None)
                    if value is None:  # nothing to plot: mark the point at the bottom
                        ax.plot([pos], [0.02], marker=marker, color=color, ms=9, ls="none",
                                transform=ax.get_xaxis_transform(), clip_on=False)
                    marked.add(name)
    if spec.get("identity_line"):
        lo, hi = min(positions), max(positions)
        ax.plot([lo, hi], [lo, hi], ls="--", color="0.4", lw=1,
                label=f"{spec['metric']} = {_axis_label(x, transform)}")
    if not numeric:
        ax.set_xticks(positions, [str(v) for v in xs])
    ax.set_xlabel(_axis_label(x, transform))
    ax.set_ylabel(label)
    ax.grid(True, alpha=0.3)
    if series is not None or marked or spec.get("identity_line"):
        ax.legend(fontsize=8)
    return fig


def _heat_maps(study, rows, kept, spec, x, y, series, series_values, label) -> Figure:
    xs, ys = _levels(study, rows, x), _levels(study, rows, y)
    n = len(series_values)
    cols = min(n, MAX_COLUMNS)
    nrows = math.ceil(n / cols)
    width = min(4.2, 1.2 + 0.7 * len(xs)) * cols + 1.0
    height = (1.0 + 0.45 * len(ys)) * nrows + 0.6
    fig = Figure(figsize=(width, height), layout="constrained")
    grids = []
    for s in series_values:
        grid = np.full((len(ys), len(xs)), np.nan)
        for i, yv in enumerate(ys):
            for j, xv in enumerate(xs):
                value = _reduce([r.get(spec["metric"]) for r in kept if _match(r, x, xv)
                                 and _match(r, y, yv) and _match(r, series, s)],
                                spec["reduce"])
                grid[i, j] = np.nan if value is None else value
        grids.append(grid)
    finite = np.concatenate([g[np.isfinite(g)] for g in grids]) if grids else np.array([])
    vmin, vmax = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    image = None
    for k, (s, grid) in enumerate(zip(series_values, grids, strict=True)):
        ax = fig.add_subplot(nrows, cols, k + 1)
        image = ax.imshow(np.ma.masked_invalid(grid), origin="lower", aspect="auto",
                          cmap="viridis", vmin=vmin, vmax=vmax if vmax > vmin else vmin + 1)
        ax.set_facecolor("0.85")  # cells without a value
        for i, yv in enumerate(ys):
            for j, xv in enumerate(xs):
                cell = [r for r in rows if _match(r, x, xv) and _match(r, y, yv)
                        and _match(r, series, s)]
                text = "none" if not np.isfinite(grid[i, j]) else f"{grid[i, j]:.3g}"
                fails = [f"{c} {FAIL_OUTCOMES[kind][0]}" if len(cell) > 1
                         else FAIL_OUTCOMES[kind][0]
                         for kind, c in _failures(cell).items() if c]
                bright = np.isfinite(grid[i, j]) and (grid[i, j] - vmin) > 0.6 * (vmax - vmin)
                ax.text(j, i, "\n".join([text, *fails]), ha="center", va="center",
                        fontsize=7, color="black" if bright or not np.isfinite(grid[i, j])
                        else "white")
        ax.set_xticks(range(len(xs)), [_tick(v) for v in xs], fontsize=8)
        ax.set_yticks(range(len(ys)), [_tick(v) for v in ys], fontsize=8)
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        if s is not None:
            ax.set_title(f"{series} = {s}", fontsize=9)
    fig.colorbar(image, ax=fig.axes, label=label, shrink=0.9)
    return fig


def _levels(study: Study, rows: list[dict[str, Any]], key: str) -> list[Any]:
    """The distinct values of a column in the rows: sorted if numeric, else in first-seen
    order (a list axis keeps its file order)."""
    seen: dict[Any, Any] = {}
    for r in rows:
        seen.setdefault(_key(r.get(key)), r.get(key))
    values = list(seen.values())
    if all(_number(v) is not None for v in values):
        return sorted(values, key=float)
    return values


def _key(value: Any) -> Any:
    return repr(value) if isinstance(value, (list, dict)) else value


def _match(row: dict[str, Any], key: str | None, value: Any) -> bool:
    return key is None or _key(row.get(key)) == _key(value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


def _reduce(values: list[Any], how: str) -> float | None:
    if how == "count":
        return float(len(values))
    numbers = [n for n in (_number(v) for v in values) if n is not None]
    if not numbers:
        return None
    return float({"mean": np.mean, "median": np.median, "min": np.min,
                  "max": np.max}[how](numbers))


def _passes(row: dict[str, Any], where: dict[str, dict[str, Any]]) -> bool:
    """True if the row meets every ``where`` test (a missing value meets none)."""
    for column, test in where.items():
        (kind, ref), = test.items()
        value = row.get(column)
        if kind == "equals":
            ok = value == ref
        elif kind == "in":
            ok = value in (ref if isinstance(ref, list) else [ref])
        else:
            number = _number(value)
            ok = number is not None and (number < ref if kind == "below" else number > ref)
        if not ok:
            return False
    return True


def _failures(rows: list[dict[str, Any]]) -> dict[str, int]:
    out = {"fell": 0, "diverged": 0, "error": 0}
    for r in rows:
        outcome = r.get("outcome")
        if outcome in ("fell", "diverged"):
            out[outcome] += 1
        elif outcome in ERROR_OUTCOMES:
            out["error"] += 1
    return out


def _label(metric: str, reduce: str, where: dict[str, Any]) -> str:
    text = f"{reduce} of {metric}" if reduce not in ("mean",) else metric
    if reduce == "count":
        text = "runs"
    if where:
        tests = ", ".join(f"{c} {k} {v}" for c, t in where.items() for k, v in t.items())
        text += f"\n(runs with {tests})"
    return text


def _axis_label(key: str, transform: str) -> str:
    return f"tan({key})" if transform == "tan_deg" else key


def _tan_deg(value: Any) -> float:
    return math.tan(math.radians(float(value)))


def _tick(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


__all__ = ["FIGURE_NAME", "choose_axes", "draw"]
