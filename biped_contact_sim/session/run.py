"""Scenario runner: builds robot, terrain, contact model and simulator, steps, observes.

Shared by ``biped-sim run/compare/bench`` (and later the nodes). Until the controllers of
``biped_contact_sim.control`` exist, the bipeds are held by a joint PD that lives here:

    τ = τ_g + K_p (q_ref − q_a) − K_d v_a

τ_g is the static gravity compensation at q_ref with the soles on the ground: the minimum-norm
solution of ``Sᵀ τ_g + J_cᵀ f = g(q_ref)`` (so q_ref is an equilibrium and the PD only acts on
deviations). ``K_d`` is capped at ``kd_cap · m_j / dt`` with ``m_j = 1/(M⁻¹)_jj(q_ref)`` the
effective inertia of joint j with the rest of the floating robot free (the smallest it can
meet): explicit integration of a damper needs ``dt·K_d/m_j < 2``, and the light feet would
otherwise make the hold itself unstable.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from biped_contact_sim import control as control_layer
from biped_contact_sim.cli.metrics import biped_metrics, multicontact_metrics, object_metrics
from biped_contact_sim.cli.progress import progress_bar
from biped_contact_sim.contact import make_contact_model
from biped_contact_sim.contact.base import Stats
from biped_contact_sim.control import Controller, Measurement
from biped_contact_sim.control.joint_pd import JointPD, JointPDSettings
from biped_contact_sim.errors import BipedSimError, ConfigError, DivergenceError, unknown_name
from biped_contact_sim.jit import B1, F1, F2, I1, b1, f8, kernel
from biped_contact_sim.record.buffer import RunningStat
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.sim.observables import (
    Observation,
    Observer,
    foot_wrenches,
)
from biped_contact_sim.sim.scenarios import SCENARIOS, Scenario, get_scenario
from biped_contact_sim.sim.simulator import SimSettings, Simulator, StepResult
from biped_contact_sim.sim.step_energy import (
    free_fall_error,
    step_energy,
    step_energy_balance,
    step_energy_slots,
    step_energy_warnings,
)

#: runner-only controllers, then the control layer's (``ctc``, ``wbc``)
CONTROLLERS = ("none", "joint_pd", *control_layer.CONTROLLERS)
DEFAULT_CONTACT_MODEL = "penalty_fl"
DEFAULT_DURATION = 5.0  # [s] a scenario without its own duration, run without a behaviour
FALL_HEIGHT_RATIO = 0.5  # a biped whose base drops below half its initial height has fallen
PROGRESS_CHUNK = 100  # steps between progress-bar updates
#: the values of ``RunResult.outcome`` (``summary.json``'s ``outcome``)
OUTCOMES = ("completed", "diverged", "fell", "interrupted", "terminated")
MAX_STEPS_EVER = 1e12  # a run of more steps is refused whatever the caller allows (~10 years)


class ClosedLoop:
    """Runs a control-layer ``Controller`` in the loop, from what a robot measures.

    The measurement at time t is the state (q, v) and the sole wrenches of the previous step
    (what F/T sensors under the soles report; empty before the first step).
    """

    def __init__(self, controller: Controller, robot: RobotModel):
        self.controller = controller
        self.robot = robot
        self.data = robot.create_data()
        self.wrenches: dict[str, np.ndarray] = {}
        self.info: dict[str, Any] = {}

    def __call__(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        out = self.controller.compute(Measurement(t, q, v, self.wrenches))
        self.info = out.info
        return out.tau

    def observe(self, q_prev: np.ndarray, step: StepResult) -> None:
        self.wrenches = foot_wrenches(self.robot, self.data, q_prev, step)


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


def split_sets(sets: dict[str, Any] | None) -> tuple[dict, dict, dict, dict]:
    """Split ``--set`` pairs into scenario, ``contact.*``, ``controller.*`` and ``behavior.*``
    dictionaries."""
    scenario, contact, controller, behavior = {}, {}, {}, {}
    for key, value in (sets or {}).items():
        for prefix, target in (("contact.", contact), ("controller.", controller),
                               ("behavior.", behavior)):
            if key.startswith(prefix):
                target[key[len(prefix):]] = value
                break
        else:
            scenario[key] = value
    return scenario, contact, controller, behavior


def build(scenario_name: str, contact_model: str | None = None, controller: str | None = None,
          dt: float | None = None, integrator: str = "semi_implicit_euler",
          sets: dict[str, Any] | None = None):
    """Build everything a run needs; errors are raised before anything is simulated.

    Returns:
        (scenario, params, robot, simulator, controller name, control function or None,
        contact settings, q0, v0). The control function is a ``JointPD`` or a ``ClosedLoop``
        (whose ``controller.behavior`` is the scenario's behaviour).

    Raises:
        ConfigError: unknown scenario/model/controller/key, or settings a model refuses.
    """
    scenario = get_scenario(scenario_name)
    scen_sets, contact_sets, ctrl_sets, behavior_sets = split_sets(sets)
    params = scenario.resolve(scen_sets)
    model_name = contact_model or DEFAULT_CONTACT_MODEL
    settings = dict(scenario.contact_defaults.get(model_name, {}))
    settings.update(contact_sets)
    contact = make_contact_model(model_name, **settings)
    robot = scenario.make_robot(params)
    sim = Simulator(robot, contact, scenario.terrain(params),
                    SimSettings(dt=scenario.dt if dt is None else dt, integrator=integrator),
                    **scenario.simulator_options(params))
    for external in scenario.external_forces(params):
        sim.add_external_force(external)
    q0, v0 = scenario.initial_state(robot, params)
    sim.reset(q0, v0)
    ctrl_name = controller or scenario.controller
    if ctrl_name not in CONTROLLERS:
        raise unknown_name("controller", ctrl_name, CONTROLLERS)
    if behavior_sets and ctrl_name not in control_layer.CONTROLLERS:
        raise ConfigError(f"behavior.* settings need a controller of "
                          f"{', '.join(control_layer.CONTROLLERS)}; got {ctrl_name!r}")
    control = None
    if ctrl_name == "joint_pd":
        try:
            pd_settings = JointPDSettings(**ctrl_sets)
        except TypeError as exc:
            raise ConfigError(f"Unknown controller setting in {sorted(ctrl_sets)}. Allowed: "
                              + ", ".join(f"controller.{f.name}"
                                          for f in dataclasses.fields(JointPDSettings))) from exc
        q_ref = robot.standing_configuration() if robot.config.standing else q0
        control = JointPD(robot, q_ref, pd_settings, sim.dt)
    elif ctrl_name in control_layer.CONTROLLERS:
        if scenario.behavior is None:
            with_behavior = [n for n, sc in SCENARIOS.items() if sc.behavior]
            raise ConfigError(f"Scenario {scenario.name!r} has no behaviour for controller "
                              f"{ctrl_name!r}; use joint_pd, or one of the scenarios "
                              f"{', '.join(with_behavior)}")
        behavior = control_layer.make_behavior(scenario.behavior, robot, q0, **behavior_sets)
        control = ClosedLoop(control_layer.make_controller(ctrl_name, robot, behavior, sim.dt,
                                                           **ctrl_sets), robot)
    elif ctrl_sets:
        raise ConfigError(f"controller 'none' takes no settings; got {sorted(ctrl_sets)}")
    return (scenario, params, robot, sim, ctrl_name, control,
            dict(contact.settings.__dict__), q0, v0)


def run(scenario_name: str, contact_model: str | None = None, controller: str | None = None,
        duration: float | None = None, dt: float | None = None,
        integrator: str = "semi_implicit_euler", sets: dict[str, Any] | None = None,
        record_rate: float | None = None, progress: bool = False,
        on_sample: Callable[[Sample], None] | None = None) -> RunResult:
    """Run a scenario to its end, or until divergence (reported in ``error``, not raised).

    Args:
        record_rate: samples per simulated second kept in ``samples`` (observables are
            computed only for them; penetration, cone violation, fidelity residuals and solver
            statistics use every step). Default: 1 kHz, or every step when dt < 1 ms (the
            ball's impact peak lasts one step).
        progress: show a progress bar.
        on_sample: called with every recorded ``Sample`` as soon as it exists (a streaming
            recorder); the sample is still appended to ``samples``.

    Raises:
        ConfigError: invalid names or settings (before anything is simulated).
    """
    session = Run(scenario_name, contact_model, controller, duration, dt, integrator, sets,
                  record_rate, on_sample)
    bar = None
    if progress:  # tqdm on a terminal, a line per tenth in a log (cli/progress.py)
        bar = progress_bar(session.n_steps,
                           f"{session.result.scenario.name}/{session.sim.contact.name}")
    while session.advance(PROGRESS_CHUNK):
        if bar is not None:
            bar.update(session.k - bar.n)
    if bar is not None:
        bar.update(session.n_steps - bar.n)
        bar.close()
    return session.finish()


class Run:
    """A run that advances in chunks (``run`` loops it; ``biped-sim bench`` interleaves it).

    Each step: control from the measurement (q, v, sole wrenches of the previous step), one
    ``sim.step``, the closed loop's sole wrenches, the per-step maxima and statistics, the fall
    check and, every ``1/record_rate`` simulated seconds, a recorded ``Sample``.
    Arguments as ``run``; ``default_record_rate`` is the record rate when ``record_rate`` is
    None and dt ≥ 1 ms (``biped-sim run``: ``RUN_RECORD_RATE``).
    """

    def __init__(self, scenario_name: str, contact_model: str | None = None,
                 controller: str | None = None, duration: float | None = None,
                 dt: float | None = None, integrator: str = "semi_implicit_euler",
                 sets: dict[str, Any] | None = None, record_rate: float | None = None,
                 on_sample: Callable[[Sample], None] | None = None,
                 clock: Callable[[], float] = time.perf_counter,
                 default_record_rate: float = 1000.0):
        self.clock = clock  # the bench times CPU time of this thread (time.thread_time)
        scenario, params, robot, sim, ctrl_name, control, csettings, q0, _ = build(
            scenario_name, contact_model, controller, dt, integrator, sets)
        behavior = control.controller.behavior if isinstance(control, ClosedLoop) else None
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
        self.result = RunResult(scenario, params, sim.contact.name, csettings, ctrl_name, robot,
                                sim, duration=duration, behavior=behavior)
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
        self.acc = np.zeros(11)  # accumulate_step's slots
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


def fidelity_residuals(step: StepResult, mu: float) -> dict[str, float]:
    """Physical-fidelity residuals of one step over its active points (0 when none).

    With f = (f_t, f_n) the contact forces over the step and v⁺ = (v_t, v_n) the contact
    velocities at its end:

        signorini_W        max |f_n · v_n⁺|               (complementarity, Signorini)
        dissipation_gap_W  max |(μ f_n − ‖f_t‖) · ‖v_t⁺‖|  (maximum dissipation: sliding ⇒
                                                           the force is on the cone boundary)
        cone_violation_N   max (‖f_t‖ − μ f_n)⁺           (Coulomb)
        penetration_m      max (−φ)⁺ over all points

    A rigid-contact model that meets its laws exactly gives zeros; penalty models show how far
    their compliance is from them. On a restitution impact step (e > 0) Newton's law gives
    v_n⁺ = −e v_n⁻ > 0 with an impulse f_n > 0, so the Signorini residual is large there by
    design: it measures velocity-level complementarity, which restitution deliberately breaks.
    """
    fc, vn = step.f_contact, step.vc_next
    out = {"signorini_W": 0.0, "dissipation_gap_W": 0.0, "cone_violation_N": 0.0,
           "penetration_m": float(max(0.0, -step.phi.min())) if len(step.phi) else 0.0}
    act = step.active
    if act.any() and vn is not None:
        f, v = fc[act], vn[act]
        ft = np.sqrt(f[:, 0] ** 2 + f[:, 1] ** 2)
        vt = np.sqrt(v[:, 0] ** 2 + v[:, 1] ** 2)
        out["signorini_W"] = float(np.abs(f[:, 2] * v[:, 2]).max())
        out["dissipation_gap_W"] = float(np.abs((mu * f[:, 2] - ft) * vt).max())
        out["cone_violation_N"] = float(max(0.0, (ft - mu * f[:, 2]).max()))
    return out


def _accumulate(result: RunResult, step: StepResult, mu: float) -> None:
    """Per-step maxima (every step, not only recorded ones) and solver statistics (the plain
    route of ``Run``, which uses ``accumulate_step``)."""
    fc = step.f_contact
    if len(step.phi):
        result.max_penetration = max(result.max_penetration, -float(step.phi.min()))
        ft = np.sqrt(fc[:, 0] ** 2 + fc[:, 1] ** 2)
        result.max_cone_violation = max(result.max_cone_violation,
                                        float((ft - mu * fc[:, 2]).max()))
        if step.active.any():
            result.min_normal_force = min(result.min_normal_force,
                                          float(fc[step.active, 2].min()))
    for key, value in fidelity_residuals(step, mu).items():
        result.residuals[key] = max(result.residuals.get(key, 0.0), value)
        result.residual_sums[key] = result.residual_sums.get(key, 0.0) + value
    for key, value in step.stats.items():
        result.stats.setdefault(key, RunningStat()).append(float(value))


@kernel((F2, F1), error_model="numpy")
def accumulate_stats(acc, values):
    """Count, sum, minimum, maximum and the count of positive values (rows of ``acc``) of one
    step's statistics."""
    for j in range(values.shape[0]):
        x = values[j]
        acc[0, j] += 1.0
        acc[1, j] += x
        acc[2, j] = min(acc[2, j], x)
        acc[3, j] = max(acc[3, j], x)
        if x > 0.0:
            acc[4, j] += 1.0


@kernel((F1, F1, F2, F2, B1, f8, F1, f8, F1, F1, F1, I1, f8, f8, F2, F1, b1),
        error_model="numpy")
def step_accumulators(acc, phi, fc, vc_next, active, mu, e, energy_prev, tau, v_prev, v, v_idx,
                      dt, t, stat_acc, values, with_stats):
    """``accumulate_step``, ``energy_step`` and (``with_stats``) ``accumulate_stats`` of one
    step in one call (``Run.advance``: three calls cost more than their arithmetic)."""
    accumulate_step(acc, phi, fc, vc_next, active, mu)
    energy_step(e, energy_prev, tau, v_prev, v, v_idx, dt, t)
    if with_stats:
        accumulate_stats(stat_acc, values)


#: slots of ``energy_step``: first energy, last energy seen, work of τ, work of external forces,
#: smallest dissipation so far (W − ΔE) and its time, Σ |τ·v| dt (the scale of the work)
E_FIRST, E_LAST, E_WORK_TAU, E_WORK_EXT, E_MIN_DISS, E_MIN_T, E_ABS_WORK = range(7)
E_SLOTS = 7
#: energy created above ENERGY_ATOL + ENERGY_RTOL · (|E₀| + Σ|τ·v| dt) is a warning (see
#: energy_balance)
ENERGY_ATOL = 0.01
ENERGY_RTOL = 2e-3
#: what the per-step statistics that count a failure or an event worth a warning mean (the
#: statistics warned about are each model's ``warning_stats``; these without one)
WARNING_STATS = {
    "fallbacks": "a solver fallback",
    "lemke_fallbacks": "a Lemke fallback",
    "solver_failures": "a solve that did not converge",
    "impact_failures": "an impact LCP that failed (plastic fallback)",
    "ray_terminations": "a Lemke ray termination",
    "inaccurate": "an inaccurate LCP answer",
    "painleve_events": "a Painlevé event (no LCP solution, impulsive resolution)",
    "zeno_events": "a Zeno event (forced plastic impact)",
    "pivot_caps": "a Lemke solve stopped by its pivot cap",
}


@kernel((F1, f8, F1, F1, F1, I1, f8, f8), error_model="numpy")
def energy_step(e, energy_prev, tau, v_prev, v, v_idx, dt, t):
    """The energy balance of one step into ``e`` (slots above). The work of the torques over
    the step is ``dt τᵀ (v_a + v_a⁺)/2`` (exact for the kinetic energy of semi-implicit Euler
    under a constant force); the dissipation up to the start of the step is
    ``W − (E − E₀)``, whose minimum over the run is the energy created (if negative)."""
    if np.isnan(e[E_FIRST]):
        e[E_FIRST] = energy_prev
        e[E_MIN_DISS] = 0.0
    else:
        diss = e[E_WORK_TAU] + e[E_WORK_EXT] - (energy_prev - e[E_FIRST])
        if diss < e[E_MIN_DISS]:
            e[E_MIN_DISS] = diss
            e[E_MIN_T] = t
    e[E_LAST] = energy_prev
    w = 0.0
    for j in range(v_idx.shape[0]):
        p = 0.5 * tau[j] * (v_prev[v_idx[j]] + v[v_idx[j]])
        w += p
        e[E_ABS_WORK] += dt * abs(p)
    e[E_WORK_TAU] += dt * w


def energy_balance(e: np.ndarray, robot: RobotModel, sim: Simulator) -> dict[str, Any]:
    """``summary.json``'s ``energy_balance``: work of the torques W_τ and of the external forces
    W_ext, the change of kinetic + potential energy ΔE, the dissipated energy
    ``W_τ + W_ext − ΔE`` (the contacts' and the discretisation's), and the largest energy
    created at any time (``max_t (ΔE(t) − W(t))`` ≥ 0) with its time and the tolerance above
    which it is a warning (``ENERGY_ATOL + ENERGY_RTOL (|E₀| + Σ|τ·v| dt)``: semi-implicit
    Euler's own energy error is of that order, not a physical source)."""
    final = sim.energy()  # every body: the robot and a world's free objects
    w_tau, w_ext, e0 = float(e[E_WORK_TAU]), float(e[E_WORK_EXT]), float(e[E_FIRST])
    diss_end = w_tau + w_ext - (final - e0)
    created = max(0.0, -float(e[E_MIN_DISS]), -diss_end)
    created_t = float(sim.t) if -diss_end >= -float(e[E_MIN_DISS]) else float(e[E_MIN_T])
    return {"initial_J": e0, "final_J": final, "work_torques_J": w_tau,
            "work_external_J": w_ext, "delta_energy_J": final - e0, "dissipated_J": diss_end,
            "created_J": created, "created_t": created_t if created > 0 else None,
            "tolerance_J": ENERGY_ATOL + ENERGY_RTOL * (abs(e0) + float(e[E_ABS_WORK]))}


def solver_warnings(positive: dict[str, int], steps: int,
                    keys: tuple[str, ...] | None = None) -> list[str]:
    """One warning per failure statistic (``keys``: the contact model's ``warning_stats``; by
    default every ``WARNING_STATS`` key) that counted something (``positive``: steps with the
    statistic > 0): how many steps."""
    out = []
    for key in WARNING_STATS if keys is None else keys:
        n = positive.get(key, 0)
        if n:
            what = WARNING_STATS.get(key, f"a {key.replace('_', ' ')} event")
            out.append(f"{n} of {steps} steps with {what} (solver_stats.{key})")
    return out


#: samples per simulated second that ``biped-sim run`` records by default when dt ≥ 1 ms (every
#: step when dt is finer): each recorded sample costs the observers, a CSV row and ~9 MCAP
#: messages (~1.7 ms on a loaded core at 1 kHz, more than the step and the controller); 200 Hz
#: keeps the CoP/ZMP and gait signals (a step is 0.5 s) and a smooth replay.
RUN_RECORD_RATE = 200.0

#: accumulator slots of ``accumulate_step``
ACC_PENETRATION, ACC_CONE, ACC_MIN_FN = 0, 1, 2
RESIDUAL_KEYS = ("signorini_W", "dissipation_gap_W", "cone_violation_N", "penetration_m")
ACC_RES_MAX, ACC_RES_SUM = 3, 7  # 4 maxima, then 4 sums, in RESIDUAL_KEYS order


@kernel((F1, F1, F2, F2, B1, f8), error_model="numpy")
def accumulate_step(acc, phi, fc, vc_next, active, mu):
    """``_accumulate`` and ``fidelity_residuals`` of one step into ``acc`` (slots above):
    max penetration, max (‖f_t‖ − μ f_n), min active f_n, per-step residual maxima and sums."""
    m = phi.shape[0]
    sig, diss, cone_res, pen = 0.0, 0.0, 0.0, 0.0
    if m:
        phimin, cone = np.inf, -np.inf
        any_active = False
        fmin = np.inf
        cone_act = -np.inf
        for i in range(m):
            phimin = min(phimin, phi[i])
            ft = np.sqrt(fc[i, 0] ** 2 + fc[i, 1] ** 2)
            cone = max(cone, ft - mu * fc[i, 2])
            if active[i]:
                any_active = True
                fmin = min(fmin, fc[i, 2])
                vt = np.sqrt(vc_next[i, 0] ** 2 + vc_next[i, 1] ** 2)
                sig = max(sig, abs(fc[i, 2] * vc_next[i, 2]))
                diss = max(diss, abs((mu * fc[i, 2] - ft) * vt))
                cone_act = max(cone_act, ft - mu * fc[i, 2])
        acc[ACC_PENETRATION] = max(acc[ACC_PENETRATION], -phimin)
        acc[ACC_CONE] = max(acc[ACC_CONE], cone)
        if any_active:
            acc[ACC_MIN_FN] = min(acc[ACC_MIN_FN], fmin)
            cone_res = max(0.0, cone_act)
        pen = max(0.0, -phimin)
    res = (sig, diss, cone_res, pen)
    for k in range(4):
        acc[ACC_RES_MAX + k] = max(acc[ACC_RES_MAX + k], res[k])
        acc[ACC_RES_SUM + k] += res[k]


@dataclass(frozen=True)
class SimInfo:
    """What a ``RunResult`` from another process keeps of its simulator (the readers of
    ``result.sim`` use dt, settings, terrain and the contact mode)."""

    dt: float
    settings: SimSettings
    terrain: Any
    contacts: str


@dataclass(frozen=True)
class BehaviorInfo:
    """What a ``RunResult`` from another process keeps of its behaviour: its name."""

    name: str


def _portable(result: RunResult) -> RunResult:
    """The result without the objects that hold pinocchio data (simulator, robot, behaviour),
    so that it pickles; ``run_parallel`` puts a robot back in the parent."""
    result.sim = SimInfo(result.sim.dt, result.sim.settings, result.sim.terrain,
                         result.sim.contacts)
    result.robot = None
    name = getattr(result.behavior, "name", None)
    result.behavior = None if name is None else BehaviorInfo(name)
    return result


_progress_queue = None  # set in each worker process by _init_worker


def _init_worker(queue, warm_up: bool = False) -> None:
    """A worker's start: its progress queue and, once, the compiled kernels loaded (a few
    steps of the ball under every model), so that runs do not time numba's cache loading."""
    global _progress_queue
    _progress_queue = queue
    if warm_up:
        from biped_contact_sim.contact import CONTACT_MODELS

        for model in CONTACT_MODELS:
            try:
                run("ball", model, duration=0.002)
            except BipedSimError:
                pass


def _run_task(task: tuple[int, str, str | None, dict[str, Any]]) -> tuple[int, Any]:
    """One run in a worker: (index, portable RunResult) or (index, the ConfigError text)."""
    index, scenario, model, kwargs = task
    try:
        session = Run(scenario, model, **kwargs)
    except ConfigError as exc:
        return index, exc
    queue = _progress_queue
    if queue is not None:
        queue.put(("total", session.n_steps))
    chunk = 5 * PROGRESS_CHUNK
    while True:
        before = session.k
        running = session.advance(chunk)
        if queue is not None:
            queue.put(("done", session.k - before + (session.n_steps - session.k
                                                     if not running else 0)))
        if not running:
            break
    return index, _portable(session.finish())


def run_parallel(tasks: list[tuple[str, str | None, dict[str, Any]]], jobs: int | None = None,
                 progress: bool = True, cost: Callable[[str, str | None], float] | None = None,
                 ) -> list[RunResult | ConfigError]:
    """Run independent ``(scenario, contact_model, run() keyword arguments)`` tasks in
    ``jobs`` processes (default: every core), with one progress bar over all their steps.

    The runs are deterministic, so the results equal sequential ones; each result comes back
    without its simulator (``SimInfo`` instead) and with a robot rebuilt here. ``cost`` orders
    the tasks, longest first, to balance the processes.

    Returns:
        Per task, in order, its ``RunResult`` or the ``ConfigError`` its settings raised.
    """
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    jobs = jobs or os.cpu_count() or 1
    if jobs < 1:
        raise ConfigError(f"--jobs = {jobs} must be >= 1")
    order = sorted(range(len(tasks)), key=lambda i: -(cost(*tasks[i][:2]) if cost else 0.0))
    out: list[Any] = [None] * len(tasks)
    bar = None
    if progress:  # the total grows as the workers report their runs' lengths
        bar = progress_bar(0, f"{len(tasks)} runs, {jobs} processes")
    if jobs == 1:
        queue = None
        for i in order:
            scenario, model, kwargs = tasks[i]
            _init_worker(None)
            out[i] = _run_task((i, scenario, model, kwargs))[1]
            if bar is not None and not isinstance(out[i], ConfigError):
                bar.total += out[i].steps
                bar.update(out[i].steps)
    else:
        ctx = mp.get_context("spawn")  # no fork of a process that holds BLAS threads
        queue = ctx.Queue()
        with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=ctx,
                                 initializer=_init_worker, initargs=(queue, True)) as pool:
            pending = {pool.submit(_run_task, (i, *tasks[i])) for i in order}
            while pending:
                done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                for future in done:
                    index, value = future.result()
                    out[index] = value
                _drain(queue, bar)
            _drain(queue, bar)
    if bar is not None:
        bar.close()
    robots: dict[tuple, RobotModel] = {}
    for value in out:
        if isinstance(value, RunResult):
            key = (value.scenario.name, tuple(sorted(value.params.items())))
            if key not in robots:
                robots[key] = value.scenario.make_robot(value.params)
            value.robot = robots[key]
    return out


def _drain(queue, bar) -> None:
    """Move the workers' progress messages to the bar."""
    import queue as queue_module
    while True:
        try:
            kind, n = queue.get_nowait()
        except queue_module.Empty:
            return
        if bar is not None:
            if kind == "total":
                bar.total += n
                getattr(bar, "refresh", lambda: None)()
            else:
                bar.update(n)


def compare_cost(scenario: str, model: str | None) -> float:
    """A rough relative cost of a run, to start the longest first (``run_parallel``): simulated
    steps, times ~10 for a whole-body or computed-torque controller and ~8 for a constraint
    model."""
    sc = get_scenario(scenario)
    steps = (sc.duration or DEFAULT_DURATION) / sc.dt
    controller = 10.0 if sc.controller in control_layer.CONTROLLERS else 1.0
    return steps * controller * (1.0 if model in ("spring_damper", "penalty_fl") else 8.0)
