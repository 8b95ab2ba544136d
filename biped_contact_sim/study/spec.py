"""A study file (``STUDY.yaml``): what to vary, how to sample it, what to keep and plot.

A study names one scenario or several, fixed run settings, the **axes** (each a list, a range
or a seeded random distribution), a **design** (the full grid of the axes, or ``n`` random
draws) and the metrics to keep. ``configs`` expands it into run configurations, plain
JSON-able dictionaries::

    {"scenario": "ramp", "contact_model": "penalty_fl", "controller": None,
     "duration": 1.0, "dt": None, "integrator": None, "record_rate": None,
     "sets": {"mu": 0.4, "slope_deg": 20.0}}

and ``run_id`` names each by the SHA-256 of its canonical JSON, so the same configuration
has the same id in every process, on every machine and in every later session (resume).

This module knows the file's structure only; which scenario keys, models and metrics exist is
checked by the front end that runs the study (``cli/sweep.py``), which also resolves defaults
before the ids are taken.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biped_contact_sim.errors import ConfigError

# numpy and yaml are imported where used: `biped-sim --help` builds this module's parser
# constants without them.

#: run fields that a study may fix at its top level or vary on an axis (beside ``--set`` keys)
RUN_FIELDS = ("contact_model", "controller", "duration", "dt", "integrator", "record_rate")
TOP_KEYS = ("name", "description", "scenario", *RUN_FIELDS, "set", "axes", "design", "metrics",
            "figure")
DISTRIBUTIONS = ("uniform", "loguniform", "normal", "integers", "choice")
RANGE_KEYS = ("start", "stop", "num", "step")
REDUCTIONS = ("mean", "median", "min", "max", "count")
X_TRANSFORMS = ("none", "tan_deg")
WHERE_TESTS = ("below", "above", "equals", "in")
FIGURE_KEYS = ("metric", "x", "y", "series", "reduce", "where", "x_transform", "identity_line",
               "title")
#: kept when a study names no metrics
DEFAULT_METRICS = ("max_penetration_m", "max_cone_violation_N", "fell")
ID_LENGTH = 16  # hex digits of the SHA-256 kept as a run id (64 bits: no collision in practice)
SIGNIFICANT = 12  # digits a range's values are rounded to (0.1 + 2·0.05 is 0.2, not 0.2000…04)


class StudyError(ConfigError):
    """The study file is invalid; the message names the file, the key and what is allowed."""


@dataclass(frozen=True)
class Axis:
    """One varied key: ``values`` for a grid, or a distribution drawn per run (random design).

    Attributes:
        key: ``contact_model``, ``controller``, a run field or a ``--set`` key.
        values: the values in file order (grid design; also a random design's list axis).
        distribution: ``(kind, parameters, seed)`` of a random axis in a random design.
    """

    key: str
    values: tuple[Any, ...] = ()
    distribution: tuple[str, Any, int | None] | None = None


@dataclass(frozen=True)
class Study:
    """A parsed, structurally valid study (module docstring)."""

    name: str
    description: str
    scenarios: tuple[str, ...]
    fixed: dict[str, Any]  # RUN_FIELDS given at the top level
    sets: dict[str, Any]  # fixed --set values
    axes: tuple[Axis, ...]
    design: str  # "grid" or "random"
    samples: int | None = None  # random design: n
    seed: int | None = None  # random design: its seed
    metrics: tuple[str, ...] = DEFAULT_METRICS
    figure: dict[str, Any] = field(default_factory=dict)
    source: str = ""  # the file name, for error messages

    @property
    def axis_keys(self) -> tuple[str, ...]:
        """The configuration columns that vary: ``scenario`` first when there are several."""
        keys = tuple(a.key for a in self.axes)
        return (("scenario",) if len(self.scenarios) > 1 else ()) + keys

    def configs(self) -> list[dict[str, Any]]:
        """The run configurations of the design, in order, without duplicates (a random
        design may draw the same choice twice)."""
        if self.design == "grid":
            columns = [[(a.key, v) for v in a.values] for a in self.axes]
            points = [dict(p) for p in itertools.product(*columns)]
        else:
            drawn = [_draw(a, self.samples, self.seed, i) for i, a in enumerate(self.axes)]
            points = [{a.key: d[j] for a, d in zip(self.axes, drawn, strict=True)}
                      for j in range(self.samples)]
        out, seen = [], set()
        for scenario in self.scenarios:
            for point in points:
                config = make_config(scenario, {**self.fixed}, {**self.sets}, point)
                key = canonical_json(config)
                if key not in seen:
                    seen.add(key)
                    out.append(config)
        return out


def make_config(scenario: str, fixed: dict[str, Any], sets: dict[str, Any],
                point: dict[str, Any]) -> dict[str, Any]:
    """A run configuration: the scenario, every run field (None: the scenario's default) and
    the ``--set`` values, the point's values replacing the fixed ones."""
    config: dict[str, Any] = {"scenario": scenario, **{f: fixed.get(f) for f in RUN_FIELDS}}
    merged = dict(sets)
    for key, value in point.items():
        if key in RUN_FIELDS:
            config[key] = value
        else:
            merged[key] = value
    config["sets"] = {k: merged[k] for k in sorted(merged)}
    return config


def canonical_json(config: dict[str, Any]) -> str:
    """The configuration as JSON with sorted keys, no spaces and every number but a bool as a
    float, so that ``1`` and ``1.0`` (and numpy scalars) give the same text everywhere."""
    return json.dumps(_canonical(config), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=True, allow_nan=False)


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:  # a numpy scalar
        value = value.item()
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    return value


def run_id(config: dict[str, Any]) -> str:
    """The id of a run: the first ``ID_LENGTH`` hex digits of SHA-256(canonical JSON)."""
    return hashlib.sha256(canonical_json(config).encode("ascii")).hexdigest()[:ID_LENGTH]


def load_study(path: str | Path) -> Study:
    """Read and check a study file.

    Raises:
        StudyError: unreadable file, invalid YAML, unknown or ill-typed key (the message names
            the file, the key and what is allowed).
    """
    import yaml

    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise StudyError(f"cannot read the study file {path}: {exc.strerror or exc}") from exc
    try:
        data = _exponent_floats(yaml.safe_load(text))
    except yaml.YAMLError as exc:
        raise StudyError(f"{path}: not valid YAML ({exc})") from exc
    return parse_study(data, source=str(path), default_name=path.stem)


#: what YAML 1.1 (PyYAML) leaves a string although it is a number: 1e-6, 1.0e6 (no dot or no sign)
_EXPONENT_FLOAT = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+$")


def _exponent_floats(value: Any) -> Any:
    """The parsed YAML with exponent-notation strings read as floats (as ``--set`` does)."""
    if isinstance(value, dict):
        return {k: _exponent_floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_exponent_floats(v) for v in value]
    if isinstance(value, str) and _EXPONENT_FLOAT.match(value):
        return float(value)
    return value


def parse_study(data: Any, source: str = "study", default_name: str = "study") -> Study:
    """A ``Study`` from the parsed YAML mapping (``load_study`` without the file)."""
    where = _Where(source)
    if not isinstance(data, dict):
        raise where.error("", "the file must be a mapping of the keys "
                          + ", ".join(TOP_KEYS))
    for key in data:
        if key not in TOP_KEYS:
            raise where.error(str(key), "unknown key; allowed: " + ", ".join(TOP_KEYS))
    name = data.get("name", default_name)
    if not isinstance(name, str) or not name:
        raise where.error("name", "expected a non-empty string")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise where.error("description", "expected a string")
    scenarios = data.get("scenario")
    if isinstance(scenarios, str):
        scenarios = [scenarios]
    _distinct_names(where, "scenario", scenarios, "scenario", "expected a scenario name or a "
                    "non-empty list of names (biped-sim list)")
    fixed = {f: _run_field(where, f, data[f]) for f in RUN_FIELDS if data.get(f) is not None}
    sets = data.get("set") or {}
    if not isinstance(sets, dict):
        raise where.error("set", "expected a mapping of --set keys to fixed values")
    for key, value in sets.items():
        _set_key(where, f"set.{key}", key)
        if key in RUN_FIELDS or key == "scenario":
            raise where.error(f"set.{key}", f"{key} is not a --set key: write it at the top "
                              "level of the study")
        if isinstance(value, dict):
            raise where.error(f"set.{key}", "a fixed value is a number, a string, a boolean "
                              "or a list; a range or a distribution belongs under axes")
    design, samples, seed = _design(where, data.get("design", "grid"))
    axes_data = data.get("axes") or {}
    if not isinstance(axes_data, dict):
        raise where.error("axes", "expected a mapping of keys to lists, ranges or "
                          "distributions")
    axes = []
    for key, spec in axes_data.items():
        _set_key(where, f"axes.{key}", key)
        if key == "scenario":
            raise where.error("axes.scenario", "list the scenarios at the top level: "
                              "scenario: [a, b]")
        if key in sets or key in fixed:
            raise where.error(f"axes.{key}", "this key is also fixed (set or top level); a "
                              "key is either fixed or an axis")
        axis = _axis(where, key, spec, design)
        if key in RUN_FIELDS:
            for value in axis.values:
                _run_field(where, f"axes.{key}", value, field_name=key)
        axes.append(axis)
    metrics = data.get("metrics", list(DEFAULT_METRICS))
    _distinct_names(where, "metrics", metrics, "metric", "expected a non-empty list of "
                    "summary.json keys (dotted for nested ones, e.g. metrics.stance_slip_max_m)")
    study = Study(name, description, tuple(scenarios), fixed, dict(sets), tuple(axes), design,
                  samples, seed, tuple(metrics), {}, source)
    figure = check_figure(data.get("figure") or {}, study, where)
    return Study(**{**study.__dict__, "figure": figure})


def check_figure(figure: Any, study: Study, where: _Where | None = None) -> dict[str, Any]:
    """The ``figure`` mapping checked against the study's columns (module ``figure``)."""
    where = where or _Where(study.source)
    if not isinstance(figure, dict):
        raise where.error("figure", "expected a mapping of " + ", ".join(FIGURE_KEYS))
    for key in figure:
        if key not in FIGURE_KEYS:
            raise where.error(f"figure.{key}", "unknown key; allowed: " + ", ".join(FIGURE_KEYS))
    axes = study.axis_keys
    columns = (*axes, *study.metrics, "wall_time_s", "outcome")
    for key in ("x", "y", "series"):
        if figure.get(key) is not None and figure[key] not in axes:
            raise where.error(f"figure.{key}", f"{figure[key]!r} is not an axis; axes: "
                              + (", ".join(axes) or "none"))
    chosen = [figure.get(k) for k in ("x", "y", "series") if figure.get(k) is not None]
    if len(set(chosen)) != len(chosen):
        raise where.error("figure", "x, y and series must be different axes")
    metric = figure.get("metric", study.metrics[0])
    if metric not in columns:
        raise where.error("figure.metric", f"{metric!r} is neither a metric nor an axis of the "
                          "study; allowed: " + ", ".join(columns))
    reduce = figure.get("reduce", "mean")
    if reduce not in REDUCTIONS:
        raise where.error("figure.reduce", f"{reduce!r}; allowed: " + ", ".join(REDUCTIONS))
    transform = figure.get("x_transform", "none")
    if transform not in X_TRANSFORMS:
        raise where.error("figure.x_transform", f"{transform!r}; allowed: "
                          + ", ".join(X_TRANSFORMS))
    if not isinstance(figure.get("identity_line", False), bool):
        raise where.error("figure.identity_line", "expected true or false")
    wheres = figure.get("where") or {}
    if not isinstance(wheres, dict):
        raise where.error("figure.where", "expected {column: {below|above|equals|in: value}}")
    for column, test in wheres.items():
        if column not in columns:
            raise where.error(f"figure.where.{column}", "not a column of the study; allowed: "
                              + ", ".join(columns))
        if (not isinstance(test, dict) or len(test) != 1
                or next(iter(test)) not in WHERE_TESTS):
            raise where.error(f"figure.where.{column}", "expected one test of "
                              + ", ".join(WHERE_TESTS) + ", e.g. {below: 0.01}")
    return {**figure, "metric": metric, "reduce": reduce, "x_transform": transform,
            "where": dict(wheres)}


class _Where:
    """Error messages that name the file and the key."""

    def __init__(self, source: str):
        self.source = source

    def error(self, key: str, message: str) -> StudyError:
        return StudyError(f"{self.source}: {key + ': ' if key else ''}{message}")


def _set_key(where: _Where, label: str, key: Any) -> None:
    if not isinstance(key, str) or not key:
        raise where.error(label, "a key must be a non-empty string")


def _distinct_names(where: _Where, label: str, names: Any, noun: str, expected: str) -> None:
    """Refuse ``names`` unless it is a non-empty list of distinct non-empty strings (``expected``
    the error's text, ``noun`` what a name is)."""
    if (not isinstance(names, list) or not names
            or not all(isinstance(n, str) and n for n in names)):
        raise where.error(label, expected)
    if len(set(names)) != len(names):
        raise where.error(label, f"a {noun} is listed twice")


def _run_field(where: _Where, label: str, value: Any, field_name: str | None = None) -> Any:
    """A run field's value checked for its kind (names are strings, times positive numbers;
    whether a name exists is the front end's check)."""
    name = field_name or label
    if name in ("contact_model", "controller", "integrator"):
        if not isinstance(value, str) or not value:
            raise where.error(label, f"{value!r}: expected a name (biped-sim list)")
    elif value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                or not math.isfinite(value) or value <= 0):
        unit = "Hz" if name == "record_rate" else "s"
        raise where.error(label, f"{value!r}: expected a number > 0 [{unit}]")
    return value


def _design(where: _Where, spec: Any) -> tuple[str, int | None, int | None]:
    if spec == "grid":
        return "grid", None, None
    if isinstance(spec, dict) and spec.get("type") == "random":
        extra = set(spec) - {"type", "n", "seed"}
        if extra:
            raise where.error("design", f"unknown keys {sorted(extra)}; a random design takes "
                              "type, n and seed")
        return "random", _count(where, "design.n", spec.get("n")), \
            _seed(where, "design.seed", spec.get("seed"))
    raise where.error("design", f"{spec!r}; allowed: grid, or {{type: random, n: N, seed: S}}")


def _count(where: _Where, label: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise where.error(label, f"{value!r}: expected an integer >= 1")
    return value


def _seed(where: _Where, label: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise where.error(label, f"{value!r}: expected an integer seed >= 0 (random values "
                          "must be reproducible)")
    return value


def _number(where: _Where, label: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise where.error(label, f"{value!r}: expected a finite number")
    return value


AXIS_FORMS = ("a list [a, b, ...], a range {start, stop, num} or {start, stop, step}, or a "
              "distribution {uniform|loguniform|normal|integers|choice: ..., n, seed}")


def _axis(where: _Where, key: str, spec: Any, design: str) -> Axis:
    """An axis from its file form (AXIS_FORMS); a random design draws distributions per run."""
    label = f"axes.{key}"
    if isinstance(spec, list):
        if not spec:
            raise where.error(label, "an empty list")
        if any(isinstance(v, dict) for v in spec):
            raise where.error(label, "list values must be numbers, strings, booleans or lists")
        if design == "random":
            return Axis(key, tuple(spec), ("choice", list(spec), None))
        return Axis(key, tuple(spec))
    if not isinstance(spec, dict):
        raise where.error(label, f"{spec!r}: an axis is {AXIS_FORMS}; a fixed value goes "
                          "under set")
    kinds = [k for k in DISTRIBUTIONS if k in spec]
    if kinds:
        return _distribution_axis(where, key, spec, kinds, design)
    if "start" in spec or "stop" in spec:
        if design == "random":
            raise where.error(label, "a random design draws its axes: use a distribution "
                              "(e.g. {uniform: [a, b]}) or a list")
        return Axis(key, tuple(_range(where, label, spec)))
    raise where.error(label, f"{spec!r}: an axis is {AXIS_FORMS}")


def _range(where: _Where, label: str, spec: dict[str, Any]) -> list[Any]:
    extra = set(spec) - set(RANGE_KEYS)
    if extra:
        raise where.error(label, f"unknown keys {sorted(extra)} in a range; allowed: start, "
                          "stop and one of num, step")
    start = _number(where, f"{label}.start", spec.get("start"))
    stop = _number(where, f"{label}.stop", spec.get("stop"))
    if ("num" in spec) == ("step" in spec):
        raise where.error(label, "a range takes exactly one of num (how many values, ends "
                          "included) and step")
    import numpy as np

    if "num" in spec:
        num = _count(where, f"{label}.num", spec["num"])
        values = np.linspace(start, stop, num) if num > 1 else np.array([start])
        return [_round(float(v)) for v in values]
    step = _number(where, f"{label}.step", spec["step"])
    if step == 0 or (stop - start) * step < 0:
        raise where.error(f"{label}.step", f"{step!r} does not lead from {start!r} to {stop!r}")
    count = math.floor((stop - start) / step + 1e-9) + 1
    if all(isinstance(v, int) for v in (start, stop, step)):
        return [start + k * step for k in range(count)]
    return [_round(start + k * step) for k in range(count)]


def _round(x: float) -> float:
    return float(f"{x:.{SIGNIFICANT}g}")


def _distribution_axis(where: _Where, key: str, spec: dict[str, Any], kinds: list[str],
                       design: str) -> Axis:
    label = f"axes.{key}"
    if len(kinds) > 1:
        raise where.error(label, f"one distribution per axis; got {', '.join(kinds)}")
    kind = kinds[0]
    extra = set(spec) - {kind, "n", "seed"}
    if extra:
        raise where.error(label, f"unknown keys {sorted(extra)}; a distribution takes {kind}, "
                          "n and seed")
    params = spec[kind]
    if kind == "choice":
        if not isinstance(params, list) or not params:
            raise where.error(f"{label}.choice", "expected a non-empty list of values")
    else:
        if not isinstance(params, list) or len(params) != 2:
            raise where.error(f"{label}.{kind}", "expected two numbers "
                              + {"normal": "[mean, std]"}.get(kind, "[low, high]"))
        a, b = (_number(where, f"{label}.{kind}", p) for p in params)
        if kind == "normal" and b <= 0:
            raise where.error(f"{label}.normal", "the standard deviation must be > 0")
        if (kind != "normal" and a > b) or (kind in ("uniform", "loguniform") and a == b):
            raise where.error(f"{label}.{kind}", f"low {a!r} must be below high {b!r}")
        if kind == "loguniform" and a <= 0:
            raise where.error(f"{label}.loguniform", "the bounds must be > 0")
        if kind == "integers" and not all(isinstance(p, int) for p in params):
            raise where.error(f"{label}.integers", "expected two integers [low, high] "
                              "(both included)")
    if design == "random":
        if "n" in spec:
            raise where.error(f"{label}.n", "a random design draws design.n values of every "
                              "axis: drop n here")
        seed = _seed(where, f"{label}.seed", spec["seed"]) if "seed" in spec else None
        return Axis(key, (), (kind, params, seed))
    if "seed" not in spec:
        raise where.error(f"{label}.seed", "a random axis needs a seed (an integer >= 0) so "
                          "that the study is reproducible")
    import numpy as np

    n = _count(where, f"{label}.n", spec.get("n"))
    seed = _seed(where, f"{label}.seed", spec["seed"])
    return Axis(key, tuple(_sample(kind, params, np.random.default_rng(seed), n)))


def _sample(kind: str, params: Any, rng, n: int) -> list[Any]:
    """n draws of a distribution (``rng``: a numpy Generator) as plain Python values."""
    import numpy as np

    if kind == "choice":
        return [params[i] for i in rng.integers(0, len(params), size=n)]
    a, b = params
    if kind == "uniform":
        return [float(x) for x in rng.uniform(a, b, size=n)]
    if kind == "loguniform":
        return [float(x) for x in np.exp(rng.uniform(math.log(a), math.log(b), size=n))]
    if kind == "normal":
        return [float(x) for x in rng.normal(a, b, size=n)]
    return [int(x) for x in rng.integers(a, b + 1, size=n)]


def _draw(axis: Axis, n: int, design_seed: int, index: int) -> list[Any]:
    """n values of one axis in a random design: its own seed, or one derived from the design
    seed and the axis position (so adding an axis at the end leaves the others' draws)."""
    import numpy as np

    kind, params, seed = axis.distribution
    rng = np.random.default_rng(seed if seed is not None else [design_seed, index])
    return _sample(kind, params, rng, n)


__all__ = ["DEFAULT_METRICS", "DISTRIBUTIONS", "REDUCTIONS", "RUN_FIELDS", "Axis", "Study",
           "StudyError", "canonical_json", "check_figure", "load_study", "make_config",
           "parse_study", "run_id"]
