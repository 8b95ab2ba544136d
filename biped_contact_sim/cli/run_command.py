"""``biped-sim run``: one scenario, its outputs streamed to a folder it owns, safe to stop.

The output folder is claimed first (locked for this run; only the previous run's files are
replaced: ``record/outdir.py``). The run steps in chunks; a signal stops it as
``cli/stopping.py`` says, and what was simulated is written (summary, CSV, trace, replay,
plots). The exit code follows the outcome (``cli/main.py``'s docstring).
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from biped_contact_sim.cli import progress
from biped_contact_sim.cli.main import EXIT_DIVERGED, EXIT_OK, _fmt, parse_sets
from biped_contact_sim.cli.stopping import StopSignals, exit_code
from biped_contact_sim.errors import ConfigError
from biped_contact_sim.session.config import DEFAULT_CONTACT_MODEL

if TYPE_CHECKING:
    from biped_contact_sim.record.outdir import OutputFolder
    from biped_contact_sim.record.recorder import StreamingRecorder
    from biped_contact_sim.session.runner import RunResult


def _check_run_args(args: argparse.Namespace) -> None:
    """Numeric options of ``run`` (the simulator checks dt and the scenario its keys)."""
    if args.duration is not None and not (math.isfinite(args.duration) and args.duration > 0):
        raise ConfigError(f"--duration {args.duration!r} must be finite and > 0 [s]")
    if args.record_rate is not None and not (math.isfinite(args.record_rate)
                                             and args.record_rate > 0):
        raise ConfigError(f"--record-rate {args.record_rate!r} must be finite and > 0 [Hz]")
    if args.max_steps < 1:
        raise ConfigError(f"--max-steps {args.max_steps} must be >= 1")


def run_command(args: argparse.Namespace) -> int:
    """``biped-sim run`` with its parsed arguments (module docstring); returns the exit
    code."""
    _check_run_args(args)
    sets = parse_sets(args.sets)
    if args.robot is not None:
        sets["robot"] = args.robot
    from biped_contact_sim.record.outdir import OutputFolder

    model = args.contact_model or DEFAULT_CONTACT_MODEL
    out = args.out or Path("runs") / f"{args.scenario}-{model}"
    with StopSignals() as stop:  # also over the report: a late signal ends it as "aborted"
        with OutputFolder.claim(out) as folder:  # a bad --out fails now
            result, recorder, written = _simulate(args, sets, folder, stop)
        return _report_run(result, recorder, written, out)


def _simulate(args: argparse.Namespace, sets: dict[str, Any], folder: OutputFolder,
              stop: StopSignals) -> tuple[RunResult, StreamingRecorder, list[str]]:
    """Build the run, step it to its end (or to a stop signal: ``stop.requested``), write its
    outputs into ``folder`` and make its plots.

    Returns:
        The result, the recorder (for its warnings) and the names of what was written.
    """
    from biped_contact_sim.record.buffer import DecimatingBuffer
    from biped_contact_sim.record.recorder import StreamingRecorder

    progress.note("loading the robot, the contact model and the controller...")
    from biped_contact_sim.session.config import RUN_RECORD_RATE, SimConfig
    from biped_contact_sim.session.runner import PROGRESS_CHUNK, Run

    config = SimConfig.from_sets(args.scenario, args.contact_model, args.controller,
                                 duration=args.duration, dt=args.dt, integrator=args.integrator,
                                 sets=sets, record_rate=args.record_rate)
    session = Run(config, default_record_rate=RUN_RECORD_RATE)
    if session.n_steps > args.max_steps:
        raise ConfigError(f"{session.n_steps} steps (duration {session.result.duration:g} s / "
                          f"dt {session.sim.dt:g} s) exceed the limit of {args.max_steps}; "
                          f"pass --max-steps {session.n_steps} to run them anyway")
    result = session.result
    result.samples = DecimatingBuffer()  # what plots and metrics keep: bounded
    view = args.view or args.view_address is not None
    recorder = StreamingRecorder(folder, replay=not args.no_replay, view=view,
                                 view_address=args.view_address or "127.0.0.1")
    def record(sample) -> None:
        with stop.shielded():  # a second signal waits until the sample's records are whole
            recorder(result, sample)

    session.on_sample = record
    try:
        bar = progress.progress_bar(session.n_steps,
                                    f"{result.scenario.name}/{session.sim.contact.name}")
        stop.arm()
        while session.advance(PROGRESS_CHUNK):
            bar.update(session.k - bar.n)
            if stop.requested:
                result.interrupted, result.stopped_by = True, stop.name
                break
        stop.disarm()  # from here a signal ends at once: what was simulated is on disk
        bar.update(session.k - bar.n)
        bar.close()
        session.finish()
        with stop.shielded():  # the trace's last chunk and its footer are written whole
            recorder.close()
        progress.note(f"writing summary.json{'' if args.no_replay else ' and replay.html'}"
                      "...")
        paths = recorder.finish(result)
    finally:
        with stop.shielded():
            recorder.close()
    written = [p.name for p in paths.values()]
    if not args.no_plots and result.samples:
        from biped_contact_sim.cli import plots

        extra = args.paper_figures and not result.interrupted  # new runs: not after a stop
        progress.note("plotting" + (" (with the papers' extra runs)" if extra else "") + "...")
        figures = plots.make_plots(result, folder.path, extra_runs=extra)
        folder.will_write(*figures)
        written.append(f"{plots.PLOTS_DIR}/ ({len(figures)} figures)")
    return result, recorder, written


def _report_run(result: RunResult, recorder: StreamingRecorder, written: list[str],
                out: Path) -> int:
    """Print where the outputs are and the run's key numbers; return the exit code."""
    for warning in recorder.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    summary = result.summary()
    print(f"results in {out}/: " + ", ".join(written))
    for key in ("steps", "duration_s", "wall_time_s", "real_time_factor", "mean_step_us",
                "max_penetration_m", "max_cone_violation_N", "min_normal_force_N", "fell",
                "zmp_in_support_fraction"):
        if summary.get(key) is not None:
            print(f"  {key:24s} {_fmt(summary[key])}")
    for key, value in summary["metrics"].items():
        print(f"  {key:24s} {_fmt(value)}")
    energy = summary["energy_balance"]
    # Σ work − ΔE = dissipated (session.accounting.energy_balance); created energy: a warning
    if energy:
        print(f"  {'energy_dissipated_J':24s} {_fmt(energy['dissipated_J'])}  (work of torques "
              f"{_fmt(energy['work_torques_J'])}, external {_fmt(energy['work_external_J'])}, "
              f"ΔE {_fmt(energy['delta_energy_J'])})")
        if "contact_work_J" in energy:  # sim.step_energy: the contacts' share, per step
            print(f"  {'contact_work_J':24s} {_fmt(energy['contact_work_J'])}  (largest step "
                  f"{_fmt(energy['contact_work_max_step_J'])}, restitution and recovery "
                  f"{_fmt(energy['contact_separation_J'])})")
    print(f"  {'outcome':24s} {summary['outcome']}")
    for warning in summary["warnings"]:  # solver events, energy created (session.runner)
        if warning != result.error:
            print(f"warning: {warning}", file=sys.stderr)
    if result.interrupted:
        print(f"{summary['outcome']} by {result.stopped_by} at t = {summary['duration_s']:.4g} s;"
              " outputs hold what was simulated", file=sys.stderr)
        return exit_code(signal.Signals[result.stopped_by])
    if result.error:
        print(f"error: the run diverged: {result.error}", file=sys.stderr)
        return EXIT_DIVERGED
    return EXIT_OK
