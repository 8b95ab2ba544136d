"""``biped-sim``: run, compare and benchmark the scenarios without ROS 2 (README "Command line").

    biped-sim run SCENARIO [--contact-model NAME] [--controller NAME] [--robot NAME|FILE]
                           [--duration S] [--dt S] [--record-rate HZ] [--out DIR]
                           [--set key=value ...] [--view] [--view-address ADDR]
                           [--no-plots] [--paper-figures]
    biped-sim compare [SCENARIO ...] --out DIR [--duration S] [--jobs N] [--set key=value ...]
    biped-sim bench [--out DIR] [--steps N] [--loop-steps N] [--scenario NAME]
                    [--peer mujoco|none] [--smoke] [--scaling]
    biped-sim sweep STUDY.yaml [--out DIR] [--jobs N] [--executor local|ray] [--address A]
                    [--resume] [--keep-runs]
    biped-sim sweep report DIR
    biped-sim list
    biped-sim warm-up [--jobs N]
    biped-sim --version

Exit codes (``EXIT_*``): 0 success; 1 a run diverged (its outputs are still written,
``summary.json`` says where in ``error``); 2 invalid command line, names or settings
(``error: <message>`` on stderr); 3 the output folder cannot be written or another run holds
it; 128 + the signal's number when a signal stopped ``run`` (130 Ctrl-C, 143 SIGTERM, 129
SIGHUP: what was simulated is written, ``summary.json`` says ``"outcome": "interrupted"`` or
``"terminated"``; cli/stopping.py).

Imports are deferred to the command that needs them, so that ``--help`` and ``--version`` do
not load pinocchio, numba or matplotlib.
"""

from __future__ import annotations

import os

# Before numpy is imported: the per-step linear algebra is small and dense (20×20 mass matrices,
# 24×24 Delassus operators), where BLAS threads cost more in start-up and synchronisation than
# they gain; one thread is also the per-step cost ``bench`` means to report. (ruff allows
# imports after an os.environ change: E402 exempts it.)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import sys
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from biped_contact_sim.cli import progress
from biped_contact_sim.errors import ConfigError
from biped_contact_sim.session.config import DEFAULT_CONTACT_MODEL  # light: no numpy

if TYPE_CHECKING:
    from biped_contact_sim.session.runner import RunResult

EXIT_OK = 0
EXIT_DIVERGED = 1
EXIT_CONFIG = 2
EXIT_OUTPUT = 3
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for a Ctrl-C
EXIT_TERMINATED = 143  # 128 + SIGTERM
EXIT_HANGUP = 129  # 128 + SIGHUP

# Names the parser shows without importing the layer that defines them (test_cli checks that
# they match simulator.INTEGRATORS, the first being SimSettings' default).
INTEGRATOR_NAMES = ("semi_implicit_euler", "rk4")
DEFAULT_MAX_STEPS = 5_000_000  # ~2 h of computing at 1.5 ms per step
# cli/bench.py's defaults, named here so that --help does not import it (test_cli checks)
BENCH_SCENARIO = "stand"
BENCH_STEPS = 2000
PEERS = ("mujoco", "none")
COMPARE_SCENARIOS = ("ball", "ramp", "drop", "stand")
COMPARISON_COLUMNS = (
    "scenario", "contact_model", "steps", "mean_step_us", "max_penetration_m",
    "max_cone_violation_N", "max_signorini_W", "max_dissipation_gap_W", "min_normal_force_N",
    "energy_change_J", "rebound_ratio", "solver_failures", "fell", "zmp_in_support_fraction",
    "error",
)
SCALING_MODELS = ("gauss_seidel", "time_stepping")
SCALING_STEPS = 300
#: solver statistics that count failures (contact models report them per step, 0 or more)
FAILURE_STATS = ("solver_failures", "ray_terminations")


def version() -> str:
    """The installed version of the package (or ``unknown`` outside an install)."""
    try:
        return metadata.version("biped_contact_sim")
    except metadata.PackageNotFoundError:
        return "unknown"


def parse_value(text: str) -> Any:
    """A ``--set`` value: YAML (numbers, ``true``/``false``, lists, strings).

    PyYAML follows YAML 1.1, where a float needs a dot: ``1e-6`` and ``1e9`` would stay strings,
    so a string that Python reads as a float is taken as that float.

    Args:
        text: The text after ``=``.

    Returns:
        The parsed value.

    Raises:
        ConfigError: The text is not valid YAML.
    """
    import yaml

    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"--set value {text!r} is not valid YAML ({exc})") from exc
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def parse_sets(pairs: list[str] | None) -> dict[str, Any]:
    """Parse ``--set key=value`` pairs (values by :func:`parse_value`).

    Args:
        pairs: The ``key=value`` strings (a later key replaces an earlier one).

    Returns:
        ``{key: value}``.

    Raises:
        ConfigError: A pair without ``=``, an empty key or a value that is not valid YAML.
    """
    sets: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, text = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--set {pair!r}: expected key=value")
        sets[key] = parse_value(text)
    return sets


def build_parser() -> argparse.ArgumentParser:
    """The ``biped-sim`` argument parser (subcommands run, compare, bench, list)."""
    parser = argparse.ArgumentParser(
        prog="biped-sim",
        description="Biped contact simulation without ROS 2: run a scenario, compare the "
                    "contact models, benchmark them, or list what exists.",
        epilog="Exit codes: 0 ok, 1 diverged, 2 usage or settings error, 3 output folder not "
               "writable or held by another run, 130/143/129 stopped by SIGINT/SIGTERM/SIGHUP "
               "(what was simulated is written).")
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress bars or status lines (results and errors only)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add_sets(p: argparse.ArgumentParser) -> None:
        p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                       help="scenario parameter, contact.<setting>, controller.<gain> or "
                            "behavior.<param> (repeatable; every key, default and meaning: "
                            "'biped-sim list')")

    p_run = sub.add_parser("run", help="run one scenario and write its outputs",
                           description="Run one scenario; write summary.json, timeseries.csv, "
                                       "trace.mcap, replay.html and plots/*.png, streaming "
                                       "them to disk as the run goes.")
    p_run.add_argument("scenario", metavar="SCENARIO", help="scenario name (see 'list')")
    p_run.add_argument("--contact-model", metavar="NAME",
                       help=f"contact model (default {DEFAULT_CONTACT_MODEL})")
    p_run.add_argument("--controller", metavar="NAME",
                       help="controller (default: the scenario's)")
    p_run.add_argument("--robot", metavar="NAME|FILE",
                       help="robot name (config/<name>.yaml) or a robot config file instead of "
                            "the scenario's robot")
    p_run.add_argument("--duration", type=float, metavar="S",
                       help="simulated time [s] (default: the scenario's)")
    p_run.add_argument("--dt", type=float, metavar="S",
                       help="physics step [s] (default: the scenario's)")
    p_run.add_argument("--integrator", metavar="NAME",
                       help=f"one of {', '.join(INTEGRATOR_NAMES)} "
                            f"(default {INTEGRATOR_NAMES[0]})")
    p_run.add_argument("--record-rate", type=float, metavar="HZ",
                       help="recorded samples per simulated second (default 200, or every "
                            "step when dt is finer than 1 ms)")
    p_run.add_argument("--max-steps", type=int, default=DEFAULT_MAX_STEPS, metavar="N",
                       help=f"refuse runs of more physics steps (default {DEFAULT_MAX_STEPS})")
    p_run.add_argument("--out", type=Path, metavar="DIR",
                       help="output folder (default runs/<scenario>-<model>); the files the "
                            "previous run wrote there are replaced, nothing else; refused "
                            "while another run writes there")
    add_sets(p_run)
    p_run.add_argument("--view", action="store_true",
                       help="show the run live in the browser (a meshcat server on 127.0.0.1, "
                            "ended with the run)")
    p_run.add_argument("--view-address", metavar="ADDR",
                       help="address the --view server listens on instead of 127.0.0.1 (this "
                            "machine only), e.g. 0.0.0.0 for every interface: anyone who "
                            "reaches the port sees the run (implies --view)")
    p_run.add_argument("--no-replay", action="store_true", help="skip replay.html")
    p_run.add_argument("--no-plots", action="store_true", help="skip plots/*.png")
    p_run.add_argument("--paper-figures", action="store_true",
                       help="also make the papers' comparison figures, which need extra runs "
                            "(ball: three k_p; ramp: sticking and sliding; stand: two epsilon)")

    p_cmp = sub.add_parser("compare", help="run every contact model on scenarios",
                           description="Run every contact model on each scenario (default: "
                                       + ", ".join(COMPARE_SCENARIOS) + "); write one "
                                       "comparison.md, comparison.csv and side-by-side plots "
                                       "per scenario.")
    p_cmp.add_argument("scenarios", nargs="*", metavar="SCENARIO",
                       help="scenario names (see 'list'); default "
                            + " ".join(COMPARE_SCENARIOS))
    p_cmp.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder")
    p_cmp.add_argument("--duration", type=float, metavar="S",
                       help="simulated time [s] (default: each scenario's)")
    p_cmp.add_argument("--jobs", type=int, metavar="N",
                       help="runs in parallel processes (default: every core)")
    add_sets(p_cmp)

    p_bench = sub.add_parser("bench", help="step and closed-loop cost, as ratios to MuJoCo",
                             description="Time sim.step of every contact model and whole "
                                         "closed loops (stand/wbc, walk/ctc), interleaved with "
                                         "MuJoCo's mj_step on the same URDF; write the ratios "
                                         "to bench.json. With --scaling, time per step against "
                                         "the number of contact points.")
    p_bench.add_argument("--peer", default="mujoco", choices=PEERS,
                         help="simulator the times are divided by (default mujoco; needs "
                              "pip install '.[peer]'; none: absolute times only)")
    p_bench.add_argument("--loop-steps", type=int, metavar="N",
                         help="steps per closed loop (default: --steps; at most the "
                              "scenario's duration; 0 skips them)")
    p_bench.add_argument("--smoke", action="store_true",
                         help="a few steps only, to check that everything runs (the figures "
                              "mean nothing)")
    p_bench.add_argument("--out", type=Path, default=Path("runs/bench"), metavar="DIR",
                         help="output folder (default runs/bench)")
    p_bench.add_argument("--steps", type=int, default=BENCH_STEPS, metavar="N",
                         help=f"timed steps per model (default {BENCH_STEPS}; "
                              f"{SCALING_STEPS} with --scaling)")
    p_bench.add_argument("--scenario", default=BENCH_SCENARIO, metavar="NAME",
                         help=f"scenario (default {BENCH_SCENARIO})")
    p_bench.add_argument("--contacts", choices=("points", "geometry"), default=None,
                         help="contact mode of every step and loop (default: the scenario's, "
                              "as --set contacts=)")
    p_bench.add_argument("--ros", action="store_true",
                         help="the closed loop over ROS 2 instead (needs rclpy): lockstep "
                              "periods per second and the real-time factor achieved, two "
                              "processes and composed, the biped's default demo and the "
                              "humanoid, and the hardware form; writes bench_ros.json")
    p_bench.add_argument("--scaling", action="store_true",
                         help="contact scaling study (Chardonnet Fig. 5): a box on m = 4..64 "
                              "points, then on as many studs (geometry contacts; --contacts "
                              "picks one), " + " and ".join(SCALING_MODELS)
                              + "; writes scaling.json and scaling.png")

    from biped_contact_sim.cli import sweep  # light: no pinocchio, numba or matplotlib

    sweep.add_parser(sub)

    sub.add_parser("list", help="scenarios, contact models, controllers and every --set key "
                                "with its default and meaning")

    p_warm = sub.add_parser("warm-up", help="compile every numba kernel once for this machine",
                            description="Compile (or find in numba's cache) every compiled "
                                        "kernel of the package, in parallel, so that no run "
                                        "waits on a compiler. make venv and the ROS package's "
                                        "install run it; run it yourself after installing "
                                        "with pip. NUMBA_CACHE_DIR chooses where the cache "
                                        "goes (e.g. for a read-only install).")
    p_warm.add_argument("--jobs", type=int, metavar="N",
                        help="processes (default: every core)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``biped-sim``.

    Args:
        argv: Arguments without the program name (default ``sys.argv[1:]``).

    Returns:
        The exit code (module docstring).
    """
    args = build_parser().parse_args(argv)
    progress.set_quiet(args.quiet)
    commands = {"run": cmd_run, "compare": cmd_compare, "bench": cmd_bench, "list": cmd_list,
                "sweep": cmd_sweep, "warm-up": cmd_warm_up}
    from biped_contact_sim.cli.stopping import aborted_by
    from biped_contact_sim.record.outdir import OutputError

    try:
        return commands[args.command](args)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except OutputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_OUTPUT
    except BaseException as exc:
        aborted = aborted_by(exc)  # a signal before or after the simulation, or a second one
        if aborted is not None:
            try:
                print(f"aborted by {aborted.name}", file=sys.stderr)
            except OSError:
                pass
            return aborted.exit_code
        if isinstance(exc, OSError):
            where = f" {exc.filename}" if exc.filename else ""
            print(f"error: cannot write{where}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_OUTPUT
        if isinstance(exc, KeyboardInterrupt):
            print("interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        raise
    finally:
        progress.set_quiet(False)


def cmd_warm_up(args: argparse.Namespace) -> int:
    """``biped-sim warm-up``: every kernel compiled or found in numba's cache, one line per
    module (``jit.warm_up``)."""
    if args.jobs is not None and args.jobs < 1:
        raise ConfigError(f"--jobs = {args.jobs} must be >= 1")
    from biped_contact_sim import jit

    report = None if args.quiet else print
    if report:
        report("biped-sim warm-up: compiling the numba kernels once for this machine "
               f"(numba's cache: {jit.cache_location()})")
    failed = [r["module"] for r in jit.warm_up(jobs=args.jobs, report=report) if "error" in r]
    if failed:
        print(f"error: kernels of {', '.join(failed)} failed to compile (above); they will "
              "fail at first use too", file=sys.stderr)
        return EXIT_DIVERGED
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    """``biped-sim run``: one run, streamed to disk, then its plots and key numbers
    (cli/run_command.py)."""
    from biped_contact_sim.cli.run_command import run_command

    return run_command(args)


def cmd_compare(args: argparse.Namespace) -> int:
    """``biped-sim compare``: every contact model on each scenario, one table, plots.

    A model that refuses its settings (ConfigError) gets a row saying so; a wrong scenario name
    or scenario key is refused before anything runs. Writes ``comparison.md``/``.csv`` (all
    scenarios) and ``<scenario>/compare_*.png``.
    """
    import csv

    from biped_contact_sim.cli import plots
    from biped_contact_sim.contact import CONTACT_MODELS
    from biped_contact_sim.session.config import SimConfig
    from biped_contact_sim.session.pool import compare_cost, run_parallel
    from biped_contact_sim.sim.scenarios import get_scenario

    sets = parse_sets(args.sets)
    scenarios = args.scenarios or list(COMPARE_SCENARIOS)
    for name in scenarios:
        get_scenario(name).resolve(SimConfig.from_sets(name, sets=sets).world.scenario_sets())
    if args.jobs is not None and args.jobs < 1:
        raise ConfigError(f"--jobs = {args.jobs} must be >= 1")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from biped_contact_sim.cli.sweep import compare_study

    # A study preset (scenarios × every contact model); its runs keep their full results here,
    # for the plots, rather than table rows.
    configs = [SimConfig.from_sets(c["scenario"], c["contact_model"], duration=c["duration"],
                                   sets=c["sets"])
               for c in compare_study(scenarios, args.duration, sets).configs()]
    outcomes = iter(run_parallel(configs, args.jobs, progress.progress_bar, compare_cost))
    rows, written = [], []
    for name in scenarios:
        results: dict[str, RunResult] = {}
        for model in CONTACT_MODELS:
            result = next(outcomes)
            if isinstance(result, ConfigError):
                rows.append({"scenario": name, "contact_model": model,
                             "error": f"refused: {result}"})
                continue
            results[model] = result
            rows.append(comparison_row(result))
        written += plots.compare_plots(results, out / name)
    with open(out / "comparison.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, COMPARISON_COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow({key: _csv_cell(row.get(key)) for key in COMPARISON_COLUMNS})
    table = _markdown_table(rows)
    settings = ", ".join(f"`{pair}`" for pair in args.sets) or "none"
    duration = "each scenario's" if args.duration is None else f"{args.duration:g} s"
    title = (f"# Contact models compared: {', '.join(scenarios)}\n\n"
             f"Duration: {duration}; --set: {settings}. Residuals are per-step maxima over "
             "the active points (session.accounting.fidelity_residuals).\n\n")
    (out / "comparison.md").write_text(title + table)
    print(table, end="")
    print(f"results in {out}/: comparison.md, comparison.csv, {len(written)} figures")
    return EXIT_OK


def comparison_row(result: RunResult) -> dict[str, Any]:
    """One row of the comparison table (COMPARISON_COLUMNS) from a run."""
    summary = result.summary()
    fid = summary["fidelity"]
    energies = [s.obs.energy for s in result.samples]
    failures = sum(result.stats[k].sum for k in FAILURE_STATS if k in result.stats)
    return {
        **{key: summary[key] for key in COMPARISON_COLUMNS if key in summary},
        "max_signorini_W": fid.get("max_signorini_W"),
        "max_dissipation_gap_W": fid.get("max_dissipation_gap_W"),
        "energy_change_J": energies[-1] - energies[0] if energies else None,
        "rebound_ratio": rebound_ratio(result),
        "solver_failures": failures,
    }


def rebound_ratio(result: RunResult) -> float | None:
    """Ball only: upward speed after the first impact over the downward speed before it.

    The first impact is the first step with a contact force; v⁻ is the vertical velocity at its
    start, v⁺ the largest vertical velocity within the next 50 ms.
    """
    if result.scenario.name != "ball":
        return None
    steps = [s.step for s in result.samples]
    hit = next((k for k, st in enumerate(steps) if st.active.any() and st.f_contact[:, 2].any()),
               None)
    if hit is None or hit == 0:
        return None
    v_before = steps[hit - 1].v[2]
    window = [st.v[2] for st in steps[hit:] if st.t <= steps[hit].t + 0.05]
    return float(max(window) / -v_before) if v_before < 0 else None


def cmd_bench(args: argparse.Namespace) -> int:
    """``biped-sim bench``: step and closed-loop cost as ratios to MuJoCo (cli/bench.py)."""
    from biped_contact_sim.cli import bench
    from biped_contact_sim.record import recorder

    if args.steps < 1:
        raise ConfigError(f"--steps = {args.steps} must be >= 1")
    if args.ros:
        return _bench_ros(args)
    if args.scaling:
        return bench.scaling_command(args, recorder.write_summary)
    return bench.bench_command(args, recorder.write_summary)


def _bench_ros(args: argparse.Namespace) -> int:
    """``biped-sim bench --ros``: ``ros/bench.py`` in a process of its own (the command line
    does not import rclpy), its rows in ``bench_ros.json``."""
    import importlib.util
    import subprocess

    if importlib.util.find_spec("rclpy") is None:
        raise ConfigError("bench --ros needs rclpy: pip install -r requirements-ros.txt (ROS 2 "
                          "Jazzy's wheels) or source a ROS 2 install")
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "biped_contact_sim.ros.bench", "--out",
               str(folder / "bench_ros.json")] + (["--quick", "--seconds", "2"] if args.smoke
                                                  else [])
    code = subprocess.call(command)
    if code == 0:
        print(f"results in {folder / 'bench_ros.json'}")
    return EXIT_OK if code == 0 else EXIT_DIVERGED


def cmd_sweep(args: argparse.Namespace) -> int:
    """``biped-sim sweep``: a study on a process pool or a Ray cluster (cli/sweep.py)."""
    from biped_contact_sim.cli import sweep

    return sweep.command(args)


def cmd_list(args: argparse.Namespace) -> int:
    """``biped-sim list``: scenarios, models, controllers, behaviours and every ``--set`` key
    with its default and meaning."""
    from biped_contact_sim import control as control_layer
    from biped_contact_sim.cli import catalog
    from biped_contact_sim.contact import CONTACT_MODELS
    from biped_contact_sim.control.joint_pd import JointPDSettings
    from biped_contact_sim.robot.config import available_robots
    from biped_contact_sim.session.builder import CONTROLLERS
    from biped_contact_sim.sim.scenarios import SCENARIOS

    print("Scenarios (biped-sim run SCENARIO; keys with --set key=value):")
    for name, scenario in SCENARIOS.items():
        duration = "the behaviour's duration" if scenario.duration is None \
            else f"{scenario.duration:g} s"
        behavior = f", behaviour {scenario.behavior}" if scenario.behavior else ""
        print(f"  {name}  (robot {scenario.robot}, {duration}, dt {scenario.dt:g} s, "
              f"controller {scenario.controller}{behavior})")
        print(f"      {scenario.description}")
        for key, param in scenario.params.items():
            print(catalog.format_entry("", key, param.default, param.help))
        for model, settings in scenario.contact_defaults.items():
            values = ", ".join(f"contact.{k}={v!r}" for k, v in settings.items())
            print(f"      ({model} defaults here: {values})")
    print(f"\nRobots (--robot NAME or a robot config file): {', '.join(available_robots())}")
    print("\nContact models (--contact-model NAME; --set contact.<setting>=value):")
    for name, cls in CONTACT_MODELS.items():
        default = " (default)" if name == DEFAULT_CONTACT_MODEL else ""
        print(f"  {name}{default}")
        for key, value, meaning in catalog.dataclass_entries(cls.Settings):
            print(catalog.format_entry("contact.", key, value, meaning))
    print("\nControllers (--controller NAME; --set controller.<gain>=value):")
    for name in CONTROLLERS:
        print(f"  {name}")
        if name == "joint_pd":
            entries = catalog.dataclass_entries(JointPDSettings)
        elif name in control_layer.CONTROLLERS:
            entries = catalog.dataclass_entries(control_layer.controller_class(name).Settings)
        else:
            entries = []
        for key, value, meaning in entries:
            print(catalog.format_entry("controller.", key, value, meaning))
    print("\nBehaviours of ctc/wbc (set by the scenario; --set behavior.<param>=value):")
    for name in control_layer.BEHAVIORS:
        print(f"  {name}")
        for key, value, meaning in catalog.behavior_entries(name):
            print(catalog.format_entry("behavior.", key, value, meaning))
    print(f"\nIntegrators (--integrator): {', '.join(INTEGRATOR_NAMES)}")
    return EXIT_OK


def _fmt(value: Any) -> str:
    """A number for the terminal: 4 significant digits; anything else as it is."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _csv_cell(value: Any) -> Any:
    """A CSV cell: empty for None, full precision for numbers."""
    return "" if value is None else value


def _markdown_table(rows: list[dict[str, Any]]) -> str:
    """The comparison as a GitHub-flavoured Markdown table."""
    lines = ["| " + " | ".join(COMPARISON_COLUMNS) + " |",
             "|" + "---|" * len(COMPARISON_COLUMNS)]
    for row in rows:
        cells = ["" if row.get(k) is None else _fmt(row[k]).replace("|", "\\|")
                 for k in COMPARISON_COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
