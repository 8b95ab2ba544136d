"""Running a ``SimConfig``: ``run`` to its end, or ``Run`` in chunks (``biped-sim run`` stops
on a signal between chunks, ``biped-sim bench`` interleaves runs), into a ``RunResult`` whose
``summary()`` is ``summary.json`` (docs/architecture.md "Command line").

Each step: control from the measurement (q, v, sole wrenches of the previous step), one
``sim.step``, the closed loop's sole wrenches, the per-step accounting (``accounting``), the fall
check and, every ``1/record_rate`` simulated seconds, a recorded ``Sample``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from biped_contact_sim.contact.base import Stats
from biped_contact_sim.errors import BipedSimError, ConfigError, DivergenceError
from biped_contact_sim.record.buffer import RunningStat
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.session.accounting import RESIDUAL_KEYS, energy_balance, solver_warnings
from biped_contact_sim.session.accounting_kernels import (
    ACC_CONE,
    ACC_MIN_FN,
    ACC_PENETRATION,
    ACC_RES_MAX,
    ACC_RES_SUM,
    ACC_SLOTS,
    E_FIRST,
    E_SLOTS,
    E_WORK_EXT,
    E_WORK_TAU,
    step_accumulators,
)
from biped_contact_sim.session.builder import ClosedLoop, build
from biped_contact_sim.session.config import (
    DEFAULT_DURATION,
    DEFAULT_RECORD_RATE,
    FALL_HEIGHT_RATIO,
    MAX_STEPS_EVER,
    SimConfig,
)
from biped_contact_sim.session.metrics import biped_metrics, multicontact_metrics, object_metrics
from biped_contact_sim.sim.observables import Observation, Observer
from biped_contact_sim.sim.scenarios import Scenario
from biped_contact_sim.sim.simulator import Simulator, StepResult
from biped_contact_sim.sim.step_energy import (
    free_fall_error,
    step_energy_balance,
    step_energy_slots,
    step_energy_warnings,
)
from biped_contact_sim.sim.step_energy_kernels import step_energy

PROGRESS_CHUNK = 100  # steps between progress-bar updates


class Progress(Protocol):
    """A progress report: tqdm's ``n``, ``total``, ``update(k)`` and ``close()``."""

    n: int
    total: int

    def update(self, count: int = 1) -> Any: ...

    def close(self) -> Any: ...


#: makes a ``Progress`` for (total units of work, label); ``cli.progress.progress_bar`` is one
ProgressFactory = Callable[[int, str], Progress]


@dataclass
class Sample:
    """A recorded step: the step itself, its observables and the controller's diagnostics."""

    step: StepResult
    obs: Observation
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunResult:
    """Outcome of ``run``: samples, timings, counters and the summary of docs/architecture.md."""

    scenario: Scenario
    params: dict[str, Any]
    contact_model: str
    contact_settings: dict[str, Any]
    controller: str
    robot: RobotModel
    sim: Simulator
    samples: list[Sample] = field(default_factory=list)
    steps: int = 0
    step_time_s: float = 0.0
    control_time_s: float = 0.0
    record_time_s: float = 0.0  # observers of the recorded steps, samples, ``on_sample``
    wall_time_s: float = 0.0
    duration: float = 0.0
    max_penetration: float = 0.0
    max_cone_violation: float = 0.0
    min_normal_force: float = 0.0
    fell: bool = False
    error: str | None = None
    interrupted: bool = False  # stopped by a signal before the end (``stopped_by`` names it)
    stopped_by: str | None = None  # SIGINT (Ctrl-C), SIGTERM or SIGHUP (cli/stopping.py)
    diverged: dict[str, Any] | None = None  # {"t": s, "cause": text} of a numerical divergence
    warnings: list[str] = field(default_factory=list)
    energy: dict[str, Any] = field(default_factory=dict)  # the energy balance (energy_balance)
    stats: dict[str, RunningStat] = field(default_factory=dict)  # per-step, constant memory
    residuals: dict[str, float] = field(default_factory=dict)  # per-step maxima (fidelity)
    residual_sums: dict[str, float] = field(default_factory=dict)
    behavior: Any = None
    metrics: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """The ``summary.json`` content (docs/architecture.md "Command line")."""
        in_support = [s.obs.zmp_in_support for s in self.samples
                      if s.obs.zmp_in_support is not None]
        solver = {k: {"min": v.min, "max": v.max, "mean": v.mean}
                  for k, v in self.stats.items() if v}
        sim_time = self.steps * self.sim.dt
        return {
            "scenario": self.scenario.name,
            "robot": self.robot.name,
            "contact_model": self.contact_model,
            "contact_settings": self.contact_settings,
            "controller": self.controller,
            "params": self.params,
            "integrator": self.sim.settings.integrator,
            "contacts": self.sim.contacts,  # the contact mode: points or geometry
            "dt": self.sim.dt,
            "duration_s": sim_time,
            "requested_duration_s": self.duration,
            "steps": self.steps,
            "wall_time_s": self.wall_time_s,
            "real_time_factor": sim_time / self.wall_time_s if self.wall_time_s > 0 else None,
            "mean_step_us": 1e6 * self.step_time_s / self.steps if self.steps else None,
            "mean_control_us": 1e6 * self.control_time_s / self.steps if self.steps else None,
            "max_penetration_m": self.max_penetration,
            "max_cone_violation_N": self.max_cone_violation,
            "min_normal_force_N": self.min_normal_force,
            "outcome": self.outcome,
            "diverged": self.diverged,
            "fell": self.fell if self.scenario.biped else None,
            "zmp_in_support_fraction": float(np.mean(in_support))
            if in_support and self.scenario.biped else None,  # a ball has no support polygon
            "fidelity": {
                **{f"max_{k}": v for k, v in self.residuals.items()},
                **{f"mean_{k}": v / self.steps for k, v in self.residual_sums.items()
                   if self.steps},
            },
            "solver_stats": solver,
            "behavior": getattr(self.behavior, "name", None),
            "metrics": self.metrics,
            "energy_balance": self.energy,
            "error": self.error,
            "interrupted": self.interrupted,
            "stopped_by": self.stopped_by,
            "warnings": self.warnings,
        }

    @property
    def outcome(self) -> str:
        """How the run ended, one of ``OUTCOMES``: ``diverged`` (the numerics failed:
        ``diverged`` says when and why), ``interrupted`` (stopped by Ctrl-C) or ``terminated``
        (by SIGTERM or SIGHUP) before its end, ``fell`` (a biped whose base dropped below half
        its initial height), else ``completed`` (``error`` says if another error ended the
        run: ``biped-sim sweep`` counts those apart)."""
        if self.diverged is not None:
            return "diverged"
        if self.interrupted:
            return "terminated" if self.stopped_by in ("SIGTERM", "SIGHUP") else "interrupted"
        return "fell" if self.fell and self.scenario.biped else "completed"


def run(config: SimConfig, on_sample: Callable[[Sample], None] | None = None,
        progress: ProgressFactory | None = None) -> RunResult:
    """Run a configuration to its end, or until divergence (reported in ``error``, not
    raised).

    Args:
        config: what to run (its ``record_rate``: samples per simulated second kept in
            ``samples``; observables are computed only for them, while penetration, cone
            violation, fidelity residuals and solver statistics use every step. Default:
            1 kHz, or every step when dt < 1 ms: the ball's impact peak lasts one step).
        on_sample: called with every recorded ``Sample`` as soon as it exists (a streaming
            recorder); the sample is still appended to ``samples``.
        progress: makes a progress report over the run's steps (``biped-sim``:
            ``cli.progress.progress_bar``); None: none.

    Raises:
        ConfigError: invalid names or settings (before anything is simulated).
    """
    session = Run(config, on_sample)
    bar = None
    if progress is not None:
        bar = progress(session.n_steps,
                       f"{session.result.scenario.name}/{session.sim.contact.name}")
    while session.advance(PROGRESS_CHUNK):
        if bar is not None:
            bar.update(session.k - bar.n)
    if bar is not None:
        bar.update(session.n_steps - bar.n)
        bar.close()
    return session.finish()


def run_scenario(scenario: str, contact_model: str | None = None, controller: str | None = None,
                 duration: float | None = None, dt: float | None = None,
                 integrator: str | None = None, sets: dict[str, Any] | None = None,
                 record_rate: float | None = None, progress: ProgressFactory | None = None,
                 on_sample: Callable[[Sample], None] | None = None) -> RunResult:
    """``run(SimConfig.from_sets(...))``: a scenario by name with ``--set`` pairs."""
    return run(SimConfig.from_sets(scenario, contact_model, controller, duration=duration,
                                   dt=dt, integrator=integrator, sets=sets,
                                   record_rate=record_rate), on_sample, progress)


class Run:
    """A run that advances in chunks (``run`` loops it; ``biped-sim bench`` interleaves it).

    Args:
        config: what to run (``build``).
        on_sample: as ``run``'s.
        clock: the clock of the timings (the bench times this thread's CPU time).
        default_record_rate: the record rate when ``config.record_rate`` is None and
            dt ≥ 1 ms (``biped-sim run``: ``RUN_RECORD_RATE``).

    Raises:
        ConfigError: invalid names or settings, or a duration of no step or of too many.
    """

    def __init__(self, config: SimConfig, on_sample: Callable[[Sample], None] | None = None,
                 clock: Callable[[], float] = time.perf_counter,
                 default_record_rate: float = DEFAULT_RECORD_RATE):
        self.clock = clock
        built = build(config)
        scenario, robot, sim, control = built.scenario, built.robot, built.sim, built.control
        behavior = built.behavior
        duration = config.duration
        if duration is None:
            duration = scenario.duration
        if duration is None:  # the behaviour decides (walk: its step plan)
            duration = behavior.duration if behavior is not None else DEFAULT_DURATION
        duration = float(duration)
        if not (np.isfinite(duration) and duration > 0):
            raise ConfigError(f"duration = {duration!r} must be finite and > 0 s")
        steps = duration / sim.dt  # a count of steps: nothing to run, or a lifetime of it
        if steps < 0.5:
            raise ConfigError(f"duration = {duration:g} s is less than half a step "
                              f"(dt = {sim.dt:g} s): nothing would be simulated; give at "
                              f"least {sim.dt:g} s")
        if steps > MAX_STEPS_EVER:
            raise ConfigError(f"duration = {duration:.3g} s is {steps:.3g} steps of dt = "
                              f"{sim.dt:g} s, more than {MAX_STEPS_EVER:.0e} (years of "
                              "computing); give a shorter duration")
        record_rate, q0 = config.record_rate, built.q0
        self.result = RunResult(scenario, built.params, sim.contact.name,
                                built.contact_settings, built.controller, robot, sim,
                                duration=duration, behavior=behavior)
        self.sim, self.robot, self.control = sim, robot, control
        self.observer = Observer(robot, sim.terrain)
        self.on_sample = on_sample
        self.n_steps = round(steps)
        self.every = 1 if record_rate is None and sim.dt < 1e-3 else \
            max(1, round(1.0 / ((record_rate or default_record_rate) * sim.dt)))
        self.base_z0 = q0[2] if robot.config.base != "planar_xz" else q0[1]
        self.zero_tau = np.zeros(robot.n_joints)
        self.closed_loop = control if isinstance(control, ClosedLoop) else None
        self.k = 0  # steps taken
        self.done = False
        self.wall_time_s = 0.0
        self.mu = sim.terrain.mu
        self.acc = np.zeros(ACC_SLOTS)  # accumulate_step's slots
        self.stat_names = tuple(getattr(sim.contact, "stat_names", ()))
        # Count, sum, min, max, count > 0 of the statistics a model reports as arrays (Stats).
        self.stat_acc = np.zeros((5, len(self.stat_names)))
        self.stat_acc[2], self.stat_acc[3] = np.inf, -np.inf
        self.no_stats = np.zeros(0)
        self.positive: dict[str, int] = {}  # steps with a statistic > 0 (solver_warnings)
        self.v_idx = robot.v_idx.astype(np.int64)
        self.energy = np.zeros(E_SLOTS)  # energy_step's slots
        self.energy[E_FIRST] = np.nan
        self.step_e = step_energy_slots(sim)  # step_energy's slots

    def advance(self, n: int) -> bool:
        """Take up to n steps; False once the run has ended (its duration, or a divergence)."""
        result, sim, control, closed_loop = self.result, self.sim, self.control, self.closed_loop
        scenario, robot = result.scenario, self.robot
        planar = robot.config.base == "planar_xz"
        clock = self.clock
        start = clock()
        stop = min(self.k + n, self.n_steps)
        while not self.done and self.k < stop:
            k = self.k
            q_prev, v_prev = sim.q, sim.v
            t0 = clock()
            try:
                tau = control(sim.t, q_prev, v_prev) if control else self.zero_tau
                t1 = clock()
                step = sim.step(tau)
            except DivergenceError as exc:
                result.error = f"{type(exc).__name__}: {exc}"
                result.diverged = {"t": getattr(exc, "t", sim.t + sim.dt),
                                   "cause": getattr(exc, "cause", str(exc))}
                self.done = True
                break
            except BipedSimError as exc:
                result.error = f"{type(exc).__name__}: {exc}"
                self.done = True
                break
            result.step_time_s += clock() - t1
            result.control_time_s += t1 - t0
            result.steps += 1
            self.k += 1
            if closed_loop is not None:
                closed_loop.observe(q_prev, step)
            stats = step.stats
            packed = type(stats) is Stats and stats.names == self.stat_names
            step_accumulators(self.acc, step.phi, step.f_contact, step.vc_next, step.active,
                              self.mu, self.energy, step.energy_prev, step.tau, v_prev, step.v,
                              self.v_idx, sim.dt, k * sim.dt, self.stat_acc,
                              stats.values if packed else self.no_stats, packed)
            if step.tau_external is not None:  # Σ J_linᵀ F over the step, mid-step velocity
                self.energy[E_WORK_EXT] += 0.5 * sim.dt * float(step.tau_external
                                                                 @ (v_prev + step.v))
            step_energy(self.step_e, step.energy_prev, self.energy[E_WORK_TAU]
                        + self.energy[E_WORK_EXT], step.contact_work, step.contact_separation,
                        float(step.f_contact[:, 2].sum()) if len(step.phi) else 0.0, k * sim.dt)
            if not packed:
                for key, value in stats.items():
                    result.stats.setdefault(key, RunningStat()).append(float(value))
                    if value > 0:
                        self.positive[key] = self.positive.get(key, 0) + 1
            if scenario.biped and (step.q[1] if planar else step.q[2]) \
                    < FALL_HEIGHT_RATIO * self.base_z0:
                result.fell = True
            if k % self.every == 0 or k == self.n_steps - 1:
                t2 = clock()
                info = dict(closed_loop.info) if closed_loop is not None else {}
                sample = Sample(step, self.observer.observe(step, q_prev, v_prev), info)
                result.samples.append(sample)
                if self.on_sample is not None:
                    self.on_sample(sample)
                result.record_time_s += clock() - t2
        if self.k >= self.n_steps:
            self.done = True
        self.wall_time_s += clock() - start
        return not self.done

    def finish(self) -> RunResult:
        """Close the run: wall time, per-step maxima and statistics, warnings and the biped
        metrics."""
        result, acc = self.result, self.acc
        result.wall_time_s = self.wall_time_s
        if result.steps:
            result.max_penetration = max(result.max_penetration, float(acc[ACC_PENETRATION]))
            result.max_cone_violation = max(result.max_cone_violation, float(acc[ACC_CONE]))
            result.min_normal_force = min(result.min_normal_force, float(acc[ACC_MIN_FN]))
            for j, key in enumerate(RESIDUAL_KEYS):
                result.residuals[key] = max(result.residuals.get(key, 0.0),
                                            float(acc[ACC_RES_MAX + j]))
                result.residual_sums[key] = (result.residual_sums.get(key, 0.0)
                                             + float(acc[ACC_RES_SUM + j]))
        count, total, low, high, positive = self.stat_acc
        for j, name in enumerate(self.stat_names):
            if count[j] and name not in result.stats:
                stat = RunningStat()
                stat.count, stat.sum, stat.min, stat.max = int(count[j]), float(total[j]), \
                    float(low[j]), float(high[j])
                result.stats[name] = stat
                self.positive[name] = self.positive.get(name, 0) + int(positive[j])
        if result.steps:
            result.energy = energy_balance(self.energy, self.robot, self.sim)
            result.energy.update(step_energy_balance(self.step_e, result.energy["final_J"],
                                                     free_fall_error(self.sim)))
            if result.energy["created_J"] > result.energy["tolerance_J"]:
                result.warnings.append(
                    f"energy created: {result.energy['created_J']:.4g} J more than the work "
                    f"done at t = {result.energy['created_t']:.4g} s (tolerance "
                    f"{result.energy['tolerance_J']:.3g} J)")
            result.warnings += step_energy_warnings(result.energy)
        result.warnings += solver_warnings(self.positive, result.steps,
                                           getattr(self.sim.contact, "warning_stats", None))
        if result.error and result.error not in result.warnings:
            result.warnings.append(result.error)
        if result.scenario.biped and not result.metrics:
            result.metrics = biped_metrics(result)
        for key, figures in (("objects", object_metrics(result)),
                             ("multicontact", multicontact_metrics(result))):
            if figures:
                result.metrics[key] = figures
        return result
