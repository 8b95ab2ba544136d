"""``biped-sim sweep``: run a study (``config/studies/*.yaml``, docs/studies.md) on a local
process pool or a Ray cluster, into one results table and a summary figure.

    biped-sim sweep STUDY.yaml [--out DIR] [--jobs N] [--executor local|ray]
                               [--address auto|HOST:PORT|ray://HOST:PORT] [--resume]
                               [--keep-runs] [figure options]
    biped-sim sweep report DIR [figure options]

The study package (``biped_contact_sim.study``) parses the file, expands the design, names
every run by the hash of its configuration, runs the executors and writes the table and the
figure; this module binds it to the simulator: it resolves and checks each configuration
against the scenarios, models and controllers, and ``run_row`` — the one place that runs a
configuration — turns it into a result row.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import socket
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from biped_contact_sim.cli import progress
from biped_contact_sim.errors import ConfigError, unknown_name
from biped_contact_sim.study import executors, spec, table  # light; figure needs matplotlib

#: figures computed here from the end of a run, beside the summary.json keys
DERIVED_METRICS = {
    "final_speed_m_s": "speed of the base origin at the end of the run [m/s]",
    "base_travel_m": "distance of the base origin from its position after the first step to "
                     "its last [m]",
}
#: columns of every row, around the configuration and the metrics
ROW_HEAD = ("run_id", "scenario", "contact_model", "controller", "duration", "dt",
            "integrator", "record_rate")
ROW_TAIL = ("outcome", "error", "wall_time_s", "cpu_time_s", "worker")
OUTCOMES = ("completed", "fell", "diverged", "error", "refused", "lost")
RUNS_DIR = "runs"  # --keep-runs: one folder per run id


def run_row(config: dict[str, Any], metrics: tuple[str, ...] = (),
            keep_dir: str | None = None) -> dict[str, Any]:
    """One run of a resolved configuration → its result row (never raises).

    The row holds the run id, the configuration columns, ``outcome`` (completed, fell,
    diverged; ``error`` for any other failure, ``refused`` for settings a model or controller
    refuses), the ``error`` text, the chosen metrics (summary.json keys, dotted for nested
    ones, or ``DERIVED_METRICS``), and the wall and CPU time of the run in this process.
    This is the single place a study runs the simulator; it is what executors call.
    """
    from biped_contact_sim.session.runner import run

    _warm_up(config)
    row = {"run_id": spec.run_id(config), **config_columns(config)}
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        result = run(sim_config(config))
        summary = result.summary()
        outcome = summary["outcome"]
        if result.error and outcome != "diverged":
            outcome = "error"
        row.update(outcome=outcome, error=result.error)
        derived = derived_metrics(result)
        for name in metrics:
            row[name] = cell(derived[name] if name in derived else lookup(summary, name))
        if keep_dir is not None:
            from biped_contact_sim.record.recorder import write_outputs

            write_outputs(result, Path(keep_dir) / row["run_id"])
    except ConfigError as exc:
        row.update(outcome="refused", error=str(exc))
    except Exception as exc:  # a failure of one run is a row, never the end of the study
        row.update(outcome="error", error=f"{type(exc).__name__}: {exc}")
    for name in metrics:
        row.setdefault(name, None)
    row.update(wall_time_s=time.perf_counter() - wall, cpu_time_s=time.process_time() - cpu,
               worker=f"{socket.gethostname()}:{os.getpid()}")
    return row


_warm: set[tuple] = set()


def _warm_up(config: dict[str, Any]) -> None:
    """Once per process and (scenario, model, controller): two steps of it, so that loading
    numba's compiled kernels is not timed as part of the first run."""
    from biped_contact_sim.session.runner import run

    key = (config["scenario"], config["contact_model"], config["controller"])
    if key in _warm:
        return
    _warm.add(key)
    try:
        run(sim_config({**config, "duration": 2 * (config["dt"] or 1e-3), "record_rate": None}))
    except Exception:  # the real run reports what fails, as its row
        pass


def sim_config(config: dict[str, Any]):
    """The ``SimConfig`` of a study's run configuration (``spec.Study.configs``)."""
    from biped_contact_sim.session.config import SimConfig

    return SimConfig.from_sets(config["scenario"], config["contact_model"], config["controller"],
                               duration=config["duration"], dt=config["dt"],
                               integrator=config["integrator"], sets=config["sets"],
                               record_rate=config["record_rate"])


def config_columns(config: dict[str, Any]) -> dict[str, Any]:
    """The configuration as table columns: the run fields, then one column per ``--set`` key
    (lists and mappings as JSON text)."""
    return {**{k: config[k] for k in ROW_HEAD[1:]},
            **{k: cell(v) for k, v in config["sets"].items()}}


def cell(value: Any) -> Any:
    """A table cell: numbers, strings, booleans and None as they are, numpy scalars as Python
    numbers, anything else as JSON text."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        return value.item()
    return json.dumps(value, default=str)


def lookup(summary: dict[str, Any], name: str) -> Any:
    """``summary[a][b]...`` for ``name = "a.b..."``; None where a key is missing."""
    value: Any = summary
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def derived_metrics(result) -> dict[str, float]:
    """``DERIVED_METRICS`` of a finished run (in this process: it still has its simulator)."""
    sim, robot = result.sim, result.robot
    n = 2 if robot.config.base == "planar_xz" else 3  # planar: (x, z); else (x, y, z)
    # Free-flyer velocities are in the base frame: the norm does not depend on it.
    out = {"final_speed_m_s": math.sqrt(float(sum(x * x for x in sim.v[:n])))}
    if result.samples:
        start = result.samples[0].step.q[:n]
        out["base_travel_m"] = math.sqrt(float(sum((a - b) ** 2
                                                   for a, b in zip(sim.q[:n], start, strict=True))))
    else:
        out["base_travel_m"] = None
    return out


def summary_keys() -> tuple[str, ...]:
    """The top-level keys of ``summary.json`` (what a metric name may start with), read off
    an empty run result so that they follow the session's runner."""
    from biped_contact_sim.session.pool import SimInfo
    from biped_contact_sim.session.runner import RunResult
    from biped_contact_sim.sim.scenarios import get_scenario
    from biped_contact_sim.sim.simulator import SimSettings

    empty = RunResult(get_scenario("ball"), {}, "", {}, "none", SimpleNamespace(name=""),
                      SimInfo(1e-3, SimSettings(), None, "points"))
    return tuple(empty.summary())


def check_metrics(study: spec.Study) -> None:
    """Every metric names a summary.json key (its first part) or a derived metric.

    Raises:
        StudyError: naming the metric and what is allowed.
    """
    keys = summary_keys()
    reserved = set(ROW_HEAD) | set(ROW_TAIL)
    for name in study.metrics:
        if name in reserved:
            raise spec.StudyError(f"{study.source}: metrics: {name!r} is a column of every row "
                                  "already")
        if name not in DERIVED_METRICS and name.split(".")[0] not in keys:
            raise spec.StudyError(
                f"{study.source}: metrics: unknown metric {name!r}. Allowed: a summary.json "
                f"key ({', '.join(keys)}; dotted for nested ones, e.g. "
                f"metrics.stance_slip_max_m) or {', '.join(DERIVED_METRICS)}")


def resolve_configs(study: spec.Study) -> list[dict[str, Any]]:
    """The study's configurations with names checked and defaults made explicit (contact
    model, controller, dt, integrator, duration when the scenario has one) and scenario keys
    converted to their types, so that equal runs get equal ids.

    Raises:
        StudyError: an unknown scenario, model, controller, integrator or scenario key, or a
            value out of its range, naming the run's values and what is allowed.
    """
    from biped_contact_sim.contact import CONTACT_MODELS
    from biped_contact_sim.session.builder import CONTROLLERS
    from biped_contact_sim.session.config import DEFAULT_CONTACT_MODEL, SimConfig
    from biped_contact_sim.sim.scenarios import get_scenario
    from biped_contact_sim.sim.simulator import INTEGRATORS, SimSettings

    reserved = set(ROW_HEAD) | set(ROW_TAIL) | set(study.metrics)
    out = []
    for config in study.configs():
        point = ", ".join(f"{k}={_show(config, k)}" for k in study.axis_keys) or "its run"
        try:
            scenario = get_scenario(config["scenario"])
            model = config["contact_model"] or DEFAULT_CONTACT_MODEL
            if model not in CONTACT_MODELS:
                raise unknown_name("contact model", model, CONTACT_MODELS)
            controller = config["controller"] or scenario.controller
            if controller not in CONTROLLERS:
                raise unknown_name("controller", controller, CONTROLLERS)
            integrator = config["integrator"] or SimSettings.integrator
            if integrator not in INTEGRATORS:
                raise unknown_name("integrator", integrator, INTEGRATORS)
            scen_sets = SimConfig.from_sets(config["scenario"],
                                            sets=config["sets"]).world.scenario_sets()
            params = scenario.resolve(scen_sets)
        except ConfigError as exc:
            raise spec.StudyError(f"{study.source}: run with {point}: {exc}") from exc
        for key in config["sets"]:
            if key in reserved:
                raise spec.StudyError(f"{study.source}: --set key {key!r} clashes with a column "
                                      "of the table (" + ", ".join(sorted(reserved)) + ")")
        sets = {k: params[k] if k in scen_sets and k in params else v
                for k, v in config["sets"].items()}
        out.append({**config, "contact_model": model, "controller": controller,
                    "integrator": integrator, "dt": config["dt"] or scenario.dt,
                    "duration": config["duration"] or scenario.duration, "sets": sets})
    return out


def _show(config: dict[str, Any], key: str) -> Any:
    return config["sets"].get(key) if key in config["sets"] else config.get(key)


def compare_study(scenarios: list[str], duration: float | None,
                  sets: dict[str, Any]) -> spec.Study:
    """``biped-sim compare`` as a study: the scenarios × every contact model, a grid."""
    from biped_contact_sim.contact import CONTACT_MODELS

    return spec.Study("compare", "every contact model on each scenario", tuple(scenarios),
                      {"duration": duration} if duration is not None else {}, dict(sets),
                      (spec.Axis("contact_model", tuple(CONTACT_MODELS)),), "grid")


def columns_of(study: spec.Study, rows: list[dict[str, Any]]) -> list[str]:
    """The table's columns: the run fields, the --set keys, outcome and error, the metrics,
    the times and the worker."""
    set_keys = sorted({k for r in rows for k in r} - set(ROW_HEAD) - set(ROW_TAIL)
                      - set(study.metrics))
    return [*ROW_HEAD, *set_keys, "outcome", "error", *study.metrics, *ROW_TAIL[2:]]


class StudyProgress:
    """One progress display for a study: runs done, failed, and the time left (tqdm on a
    terminal; off one, a line at every tenth)."""

    def __init__(self, total: int, name: str):
        self.total, self.done, self.failed = total, 0, 0
        self.start = time.perf_counter()
        self.quiet = progress.is_quiet() or total == 0
        self.bar = None
        self._next = 1
        if not self.quiet and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="run", desc=f"sweep {name}", file=sys.stderr)
        self.name = name

    def update(self, failed: bool) -> None:
        self.done += 1
        self.failed += failed
        if self.quiet:
            return
        if self.bar is not None:
            self.bar.set_postfix_str(f"failed {self.failed}", refresh=False)
            self.bar.update(1)
            return
        tenth = self.done * 10 // self.total
        if tenth >= self._next:  # one line per tenth crossed, however many runs it took
            self._next = tenth + 1
            elapsed = time.perf_counter() - self.start
            left = elapsed / self.done * (self.total - self.done)
            print(f"sweep {self.name}: {100 * self.done // self.total:3d} % ({self.done}/"
                  f"{self.total} runs, {self.failed} failed, {elapsed:.1f} s, about "
                  f"{left:.0f} s left)", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``sweep`` subcommand's parser."""
    p = sub.add_parser(
        "sweep", help="run a study (grid or random design) locally or on a Ray cluster",
        description="Run every configuration of a study file on a local process pool (default) "
                    "or a Ray cluster; write results.parquet/results.csv and summary.png. "
                    "'biped-sim sweep report DIR' redraws the figure from a study's table. "
                    "Study files: config/studies/*.yaml; docs/studies.md.")
    p.add_argument("study", metavar="STUDY.yaml|report", help="the study file, or 'report'")
    p.add_argument("report_dir", nargs="?", metavar="DIR",
                   help="with 'report': the output folder of a study")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="output folder (default runs/sweep-<study name>)")
    p.add_argument("--jobs", type=int, metavar="N",
                   help="runs at once (default: every core, or every CPU of the Ray cluster)")
    p.add_argument("--executor", choices=executors.EXECUTORS, default="local",
                   help="local process pool (default) or ray")
    p.add_argument("--address", metavar="auto|HOST:PORT|ray://HOST:PORT",
                   help="Ray cluster to use (default: start Ray on this machine)")
    p.add_argument("--resume", action="store_true",
                   help="continue the study in --out: skip the runs whose row exists")
    p.add_argument("--keep-runs", action="store_true",
                   help=f"also write every run's outputs to DIR/{RUNS_DIR}/<run id>/")
    for key in ("metric", "x", "y", "series"):
        p.add_argument(f"--{key}", metavar="COLUMN", help=f"figure {key} (overrides the study's)")
    p.add_argument("--reduce", choices=spec.REDUCTIONS, help="figure reduction")
    p.add_argument("--png", type=Path, metavar="FILE",
                   help=f"write the figure here (default DIR/{table.FIGURE})")


def command(args: argparse.Namespace) -> int:
    """``biped-sim sweep``: a study, or with ``report`` the figure of a finished one."""
    if args.study == "report":
        if args.report_dir is None:
            raise ConfigError("sweep report DIR: name the output folder of a study")
        return report(Path(args.report_dir), args)
    if args.report_dir is not None:
        raise ConfigError(f"sweep {args.study}: unexpected argument {args.report_dir!r} (did "
                          "you mean --out?)")
    if args.jobs is not None and args.jobs < 1:
        raise ConfigError(f"--jobs = {args.jobs} must be >= 1")
    if args.address is not None and args.executor != "ray":
        raise ConfigError("--address needs --executor ray")
    study = spec.load_study(args.study)
    check_metrics(study)
    figure_spec = _figure_spec(study, args)
    configs = resolve_configs(study)
    out = args.out or Path("runs") / f"sweep-{study.name}"
    journal = table.Journal(out)
    if journal.exists() and not args.resume:
        raise ConfigError(f"{out} already holds a study ({table.JOURNAL}): pass --resume to "
                          "continue it, or choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    _copy_study(Path(args.study), study.name, out / table.STUDY_COPY)
    done = journal.read()
    ids = [spec.run_id(c) for c in configs]
    todo = [c for c, i in zip(configs, ids, strict=True) if i not in done]
    if done:
        progress.note(f"resuming: {len(configs) - len(todo)} of {len(configs)} runs have rows")
    fn = functools.partial(run_row, metrics=study.metrics,
                           keep_dir=str(out / RUNS_DIR) if args.keep_runs else None)
    todo.sort(key=_cost, reverse=True)  # longest first: the last runs do not straggle alone
    if args.executor == "ray":
        results = executors.run_ray(fn, todo, args.address, args.jobs)
    else:
        results = executors.run_local(fn, todo, args.jobs)
    bar = StudyProgress(len(todo), study.name)
    start = time.perf_counter()
    with journal:
        try:
            for index, result in results:
                row = result if isinstance(result, dict) else _lost_row(todo[index], result,
                                                                        study.metrics)
                journal.append(row)
                done.setdefault(row["run_id"], row)
                bar.update(row["outcome"] not in ("completed", "fell"))
        finally:
            bar.close()
    wall = time.perf_counter() - start
    rows = [done[i] for i in ids]
    written = _finish(study, rows, out, figure_spec, args.png)
    counts = {o: sum(r["outcome"] == o for r in rows) for o in OUTCOMES}
    print(f"{len(rows)} runs ({len(todo)} now, {wall:.1f} s, {args.executor}): "
          + ", ".join(f"{n} {o}" for o, n in counts.items() if n))
    print(f"results in {out}/: " + ", ".join(p.name for p in written))
    return 0


def report(out: Path, args: argparse.Namespace) -> int:
    """``biped-sim sweep report DIR``: the table and figure again from the study's rows."""
    study_file = out / table.STUDY_COPY
    if not study_file.exists():
        raise ConfigError(f"{out} holds no study ({table.STUDY_COPY} missing): name the --out "
                          "folder of a sweep")
    study = spec.load_study(study_file)
    try:
        rows = table.read_table(out)
    except FileNotFoundError as exc:
        raise ConfigError(f"{out} holds no results yet ({exc.filename} missing)") from exc
    figure_spec = _figure_spec(study, args)
    from biped_contact_sim.study import figure

    path = figure.draw(study, rows, figure_spec, args.png or out / table.FIGURE)
    if path is None:
        print(f"{len(rows)} rows; no axis varies: no figure")
    else:
        print(f"figure of {len(rows)} rows: {path}")
    return 0


def _copy_study(source: Path, name: str, target: Path) -> None:
    """The study file as run, for ``sweep report``: verbatim when it names itself, else with
    its name (the source file's stem) written in, since the copy has another stem."""
    import yaml

    text = source.read_text()
    data = yaml.safe_load(text)
    if "name" not in data:
        text = yaml.safe_dump({"name": name, **data}, sort_keys=False)
    target.write_text(text)


def _figure_spec(study: spec.Study, args: argparse.Namespace) -> dict[str, Any]:
    overrides = {k: getattr(args, k) for k in ("metric", "x", "y", "series", "reduce")
                 if getattr(args, k, None) is not None}
    base = dict(study.figure)
    if "metric" in overrides:  # a new metric: the study's filter may not fit it
        base.pop("where", None)
    return spec.check_figure({**base, **overrides}, study)


def _finish(study: spec.Study, rows: list[dict[str, Any]], out: Path,
            figure_spec: dict[str, Any], png: Path | None) -> list[Path]:
    written, note = table.write_table(rows, columns_of(study, rows), out)
    if note:
        print(f"note: {note}", file=sys.stderr)
    from biped_contact_sim.study import figure

    try:
        path = figure.draw(study, rows, figure_spec, png or out / table.FIGURE)
    except spec.StudyError as exc:  # the table is what matters; say why there is no figure
        print(f"note: no figure: {exc}", file=sys.stderr)
        path = None
    return [*written, *([path] if path is not None else [])]


def _lost_row(config: dict[str, Any], lost: executors.Lost,
              metrics: tuple[str, ...]) -> dict[str, Any]:
    return {"run_id": spec.run_id(config), **config_columns(config), "outcome": "lost",
            "error": lost.error, **dict.fromkeys(metrics), "wall_time_s": None,
            "cpu_time_s": None, "worker": None}


def _cost(config: dict[str, Any]) -> float:
    """A rough relative cost of a run (``session.pool.compare_cost``, scaled by its
    duration)."""
    from biped_contact_sim.session.config import DEFAULT_DURATION
    from biped_contact_sim.session.pool import compare_cost
    from biped_contact_sim.sim.scenarios import get_scenario

    scenario = get_scenario(config["scenario"])
    default = scenario.duration or DEFAULT_DURATION
    scale = (config["duration"] or default) / default * scenario.dt / config["dt"]
    return compare_cost(sim_config(config)) * scale


__all__ = ["DERIVED_METRICS", "add_parser", "command", "compare_study", "resolve_configs",
           "run_row"]
