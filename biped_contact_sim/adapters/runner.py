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
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pinocchio as pin

from biped_contact_sim.contact import make_contact_model
from biped_contact_sim.contact.base import positive
from biped_contact_sim.errors import BipedSimError, ConfigError, unknown_name
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.sim.observables import Observation, Observer
from biped_contact_sim.sim.scenarios import Scenario, get_scenario
from biped_contact_sim.sim.simulator import SimSettings, Simulator, StepResult

CONTROLLERS = ("none", "joint_pd")
DEFAULT_CONTACT_MODEL = "penalty_fl"
FALL_HEIGHT_RATIO = 0.5  # a biped whose base drops below half its initial height has fallen


@dataclass(frozen=True)
class JointPDSettings:
    """Joint PD hold (runner-only, until the controllers exist).

    Attributes:
        kp: joint stiffness K_p [N·m/rad].
        kd: joint damping K_d [N·m·s/rad], before the cap.
        kd_cap: K_d ≤ kd_cap · m_j / dt (explicit stability needs < 2).
        gravity_compensation: add τ_g.
    """

    kp: float = 300.0
    kd: float = 30.0
    kd_cap: float = 1.0
    gravity_compensation: bool = True

    def __post_init__(self):
        for name in ("kp", "kd", "kd_cap"):
            positive(f"controller.{name}", getattr(self, name), allow_zero=name != "kd_cap")
        if not isinstance(self.gravity_compensation, bool):
            raise ConfigError(f"controller.gravity_compensation = "
                              f"{self.gravity_compensation!r} must be true or false")


class JointPD:
    """Holds the actuated joints at q_ref with inertia-scaled PD gains (module docstring)."""

    def __init__(self, robot: RobotModel, q_ref: np.ndarray, settings: JointPDSettings,
                 dt: float):
        data = robot.create_data()
        Minv = pin.computeMinverse(robot.model, data, q_ref)
        m_j = 1.0 / np.diag(Minv)[robot.v_idx]  # the diagonal is filled by computeMinverse
        self.kp = np.full(robot.n_joints, settings.kp)
        self.kd = np.minimum(settings.kd, settings.kd_cap * m_j / dt)
        self.q_ref = q_ref[robot.q_idx].copy()
        self.tau_g = np.zeros(robot.n_joints)
        if settings.gravity_compensation and robot.n_points:
            g = pin.computeGeneralizedGravity(robot.model, data, q_ref)
            J = robot.terms(data, q_ref, np.zeros(robot.nv)).J
            A = np.hstack([robot.S.T, J.T])  # [Sᵀ J_cᵀ] [τ; f] = g
            self.tau_g = np.linalg.lstsq(A, g, rcond=None)[0][:robot.n_joints]
        self.robot = robot

    def __call__(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        return (self.tau_g + self.kp * (self.q_ref - q[self.robot.q_idx])
                - self.kd * v[self.robot.v_idx])


@dataclass
class Sample:
    """A recorded step: the step itself, its observables and the state before it."""

    step: StepResult
    obs: Observation


@dataclass
class RunResult:
    """Outcome of ``run``: samples, timings, counters and the summary of DESIGN.md."""

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
    wall_time_s: float = 0.0
    duration: float = 0.0
    max_penetration: float = 0.0
    max_cone_violation: float = 0.0
    min_normal_force: float = 0.0
    fell: bool = False
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    stats: dict[str, list[float]] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """The ``summary.json`` content (DESIGN.md "Command line")."""
        in_support = [s.obs.zmp_in_support for s in self.samples
                      if s.obs.zmp_in_support is not None]
        solver = {k: {"min": float(np.min(v)), "max": float(np.max(v)),
                      "mean": float(np.mean(v))} for k, v in self.stats.items() if v}
        sim_time = self.steps * self.sim.dt
        return {
            "scenario": self.scenario.name,
            "robot": self.robot.name,
            "contact_model": self.contact_model,
            "contact_settings": self.contact_settings,
            "controller": self.controller,
            "params": self.params,
            "integrator": self.sim.settings.integrator,
            "dt": self.sim.dt,
            "duration_s": sim_time,
            "requested_duration_s": self.duration,
            "steps": self.steps,
            "wall_time_s": self.wall_time_s,
            "real_time_factor": sim_time / self.wall_time_s if self.wall_time_s > 0 else None,
            "mean_step_us": 1e6 * self.step_time_s / self.steps if self.steps else None,
            "max_penetration_m": self.max_penetration,
            "max_cone_violation_N": self.max_cone_violation,
            "min_normal_force_N": self.min_normal_force,
            "fell": self.fell if self.scenario.biped else None,
            "zmp_in_support_fraction": float(np.mean(in_support)) if in_support else None,
            "solver_stats": solver,
            "error": self.error,
            "warnings": self.warnings,
        }


def split_sets(sets: dict[str, Any] | None) -> tuple[dict, dict, dict]:
    """Split ``--set`` pairs into scenario, ``contact.*`` and ``controller.*`` dictionaries."""
    scenario, contact, controller = {}, {}, {}
    for key, value in (sets or {}).items():
        if key.startswith("contact."):
            contact[key[len("contact."):]] = value
        elif key.startswith("controller."):
            controller[key[len("controller."):]] = value
        else:
            scenario[key] = value
    return scenario, contact, controller


def build(scenario_name: str, contact_model: str | None = None, controller: str | None = None,
          dt: float | None = None, integrator: str = "semi_implicit_euler",
          sets: dict[str, Any] | None = None):
    """Build everything a run needs; errors are raised before anything is simulated.

    Returns:
        (scenario, params, robot, simulator, controller name, control function or None,
        contact settings, q0, v0).

    Raises:
        ConfigError: unknown scenario/model/controller/key, or settings a model refuses.
    """
    scenario = get_scenario(scenario_name)
    scen_sets, contact_sets, ctrl_sets = split_sets(sets)
    params = scenario.resolve(scen_sets)
    model_name = contact_model or DEFAULT_CONTACT_MODEL
    settings = dict(scenario.contact_defaults.get(model_name, {}))
    settings.update(contact_sets)
    contact = make_contact_model(model_name, **settings)
    robot = RobotModel.load(scenario.robot, params.get("mass_scale", 1.0))
    sim = Simulator(robot, contact, scenario.terrain(params),
                    SimSettings(dt=scenario.dt if dt is None else dt, integrator=integrator))
    q0, v0 = scenario.initial_state(robot, params)
    sim.reset(q0, v0)
    ctrl_name = controller or scenario.controller
    if ctrl_name not in CONTROLLERS:
        raise unknown_name("controller", ctrl_name, CONTROLLERS)
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
    elif ctrl_sets:
        raise ConfigError(f"controller 'none' takes no settings; got {sorted(ctrl_sets)}")
    return (scenario, params, robot, sim, ctrl_name, control,
            dict(contact.settings.__dict__), q0, v0)


def run(scenario_name: str, contact_model: str | None = None, controller: str | None = None,
        duration: float | None = None, dt: float | None = None,
        integrator: str = "semi_implicit_euler", sets: dict[str, Any] | None = None,
        record_rate: float | None = None, progress: bool = False) -> RunResult:
    """Run a scenario to its end, or until divergence (reported in ``error``, not raised).

    Args:
        record_rate: samples per simulated second kept in ``samples`` (observables are
            computed only for them; penetration, cone violation and solver statistics use
            every step). Default: 1 kHz, or every step when dt < 1 ms (the ball's impact peak
            lasts one step).
        progress: show a tqdm progress bar.

    Raises:
        ConfigError: invalid names or settings (before anything is simulated).
    """
    scenario, params, robot, sim, ctrl_name, control, csettings, q0, _ = build(
        scenario_name, contact_model, controller, dt, integrator, sets)
    duration = scenario.duration if duration is None else float(duration)
    if not (np.isfinite(duration) and duration > 0):
        raise ConfigError(f"duration = {duration!r} must be > 0 s")
    result = RunResult(scenario, params, sim.contact.name, csettings, ctrl_name, robot, sim,
                       duration=duration)
    observer = Observer(robot, sim.terrain)
    n_steps = round(duration / sim.dt)
    every = 1 if record_rate is None and sim.dt < 1e-3 else \
        max(1, round(1.0 / ((record_rate or 1000.0) * sim.dt)))
    base_z0 = q0[2] if robot.config.base != "planar_xz" else q0[1]
    zero_tau = np.zeros(robot.n_joints)
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=n_steps, unit="step", desc=f"{scenario.name}/{sim.contact.name}")
    start = time.perf_counter()
    for k in range(n_steps):
        q_prev, v_prev = sim.q, sim.v
        tau = control(sim.t, q_prev, v_prev) if control else zero_tau
        t0 = time.perf_counter()
        try:
            step = sim.step(tau)
        except BipedSimError as exc:
            result.error = f"{type(exc).__name__}: {exc}"
            result.fell = result.fell or scenario.biped
            break
        result.step_time_s += time.perf_counter() - t0
        result.steps += 1
        _accumulate(result, step, sim.terrain.mu)
        if scenario.biped and (step.q[2] if robot.config.base != "planar_xz" else step.q[1]) \
                < FALL_HEIGHT_RATIO * base_z0:
            result.fell = True
        if k % every == 0 or k == n_steps - 1:
            result.samples.append(Sample(step, observer.observe(step, q_prev, v_prev)))
        if bar is not None and k % 100 == 0:
            bar.update(min(100, n_steps - bar.n))
    if bar is not None:
        bar.update(n_steps - bar.n)
        bar.close()
    result.wall_time_s = time.perf_counter() - start
    if result.error:
        result.warnings.append(result.error)
    return result


def _accumulate(result: RunResult, step: StepResult, mu: float) -> None:
    """Per-step maxima (every step, not only recorded ones) and solver statistics."""
    fc = step.f_contact
    if len(step.phi):
        result.max_penetration = max(result.max_penetration, -float(step.phi.min()))
        ft = np.sqrt(fc[:, 0] ** 2 + fc[:, 1] ** 2)
        result.max_cone_violation = max(result.max_cone_violation,
                                        float((ft - mu * fc[:, 2]).max()))
        if step.active.any():
            result.min_normal_force = min(result.min_normal_force,
                                          float(fc[step.active, 2].min()))
    for key, value in step.stats.items():
        result.stats.setdefault(key, []).append(float(value))
