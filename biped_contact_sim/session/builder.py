"""``build``: a ``SimConfig`` made into what a run steps — robot, contact model, simulator in
its world, initial state and the control in the loop.

Every name and setting is checked before anything is simulated; a wrong one is a
``ConfigError`` naming it and what is allowed. The control is a ``JointPD`` hold
(``control/joint_pd.py``) or a ``ClosedLoop`` around a control-layer controller whose
``behavior`` is the scenario's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from biped_contact_sim import control as control_layer
from biped_contact_sim.contact import ContactModel, make_contact_model
from biped_contact_sim.control import Controller, Measurement
from biped_contact_sim.control.joint_pd import JointPD, JointPDSettings
from biped_contact_sim.errors import ConfigError, unknown_name
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.robot.config import load_robot_config
from biped_contact_sim.robot.source import load_robot, robot_parameters
from biped_contact_sim.session.config import RobotSource, SimConfig
from biped_contact_sim.sim.observables import foot_wrenches
from biped_contact_sim.sim.scenarios import ROBOT_KEY, SCENARIOS, WORLD_KEY, Scenario, get_scenario
from biped_contact_sim.sim.simulator import SimSettings, Simulator, StepResult

#: the session's own controllers, then the control layer's (``ctc``, ``wbc``)
CONTROLLERS = ("none", "joint_pd", *control_layer.CONTROLLERS)


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
class Built:
    """What ``build`` makes of a ``SimConfig``.

    Attributes:
        scenario: the scenario.
        params: its parameters, resolved (defaults, then the configuration's values).
        robot: the robot model.
        sim: the simulator, reset to (q0, v0).
        controller: the controller's name (the scenario's when the configuration names none).
        control: ``JointPD``, ``ClosedLoop`` or None (zero torques).
        contact_settings: the contact model's settings, every field.
        q0, v0: the initial state.
        world: the world file simulated ("" on the scenario's plain terrain).
    """

    scenario: Scenario
    params: dict[str, Any]
    robot: RobotModel
    sim: Simulator
    controller: str
    control: JointPD | ClosedLoop | None
    contact_settings: dict[str, Any]
    q0: np.ndarray
    v0: np.ndarray
    world: str = ""

    @property
    def behavior(self) -> Any:
        """The behaviour of a closed loop's controller, else None."""
        return self.control.controller.behavior if isinstance(self.control, ClosedLoop) else None


def contact_model(name: str, settings: Mapping[str, Any], dt: float | None = None,
                  integrator: str | None = None) -> ContactModel:
    """A contact model by name with its settings, checked against dt and the integrator when
    given (``Simulator`` checks them otherwise, when it is built).

    Raises:
        ConfigError: unknown name or setting (listing the valid ones), a bad value, or a dt or
            integrator the model refuses.
    """
    try:
        model = make_contact_model(name, **settings)
    except TypeError as exc:
        raise ConfigError(f"bad settings for contact model {name!r}: {exc}") from exc
    if dt is not None:
        model.check(dt, integrator or SimSettings.integrator)
    return model


def make_robot(source: RobotSource, scenario: Scenario, params: dict[str, Any]) -> RobotModel:
    """The robot of ``source``: the scenario's own (``Scenario.make_robot``, with its
    ``--set robot=`` and mass scale) unless the source names another config, a URDF, URDF XML
    or ``robot.*`` values that differ from its config file's (then ``robot.source.load_robot``,
    as the simulator node loads it).

    Raises:
        ConfigError: a source for a scenario that builds its own robot, or what
            ``load_robot`` refuses.
    """
    if not source.given:
        return scenario.make_robot(params)
    name = source.config or params.get(ROBOT_KEY) or scenario.robot
    file_values = robot_parameters(load_robot_config(name))
    changed = {k: v for k, v in source.overrides.items() if file_values.get(k) != v}
    if (name == (params.get(ROBOT_KEY) or scenario.robot) and not changed
            and not source.urdf_path and not source.description.strip()):
        return scenario.make_robot(params)  # the source names the scenario's robot as it is
    if scenario.robot_factory is not None:
        raise ConfigError(f"scenario {scenario.name!r} builds its own robot; a robot source "
                          "(config, urdf_path, description, overrides) does not apply")
    return load_robot(name, source.urdf_path, source.description, changed)


def controller_name(config: SimConfig, scenario: Scenario) -> str:
    """The controller of the configuration (the scenario's by default), checked.

    Raises:
        ConfigError: an unknown controller, or behaviour parameters for one without a
            behaviour.
    """
    name = config.control.controller or scenario.controller
    if name not in CONTROLLERS:
        raise unknown_name("controller", name, CONTROLLERS)
    if config.control.behavior and name not in control_layer.CONTROLLERS:
        raise ConfigError(f"behavior.* settings need a controller of "
                          f"{', '.join(control_layer.CONTROLLERS)}; got {name!r}")
    return name


def make_control(name: str, settings: Mapping[str, Any], behavior_params: Mapping[str, Any],
                 scenario: Scenario, robot: RobotModel, q0: np.ndarray, dt: float
                 ) -> JointPD | ClosedLoop | None:
    """The control in the loop of controller ``name`` (``controller_name``).

    Raises:
        ConfigError: unknown or bad settings, or a scenario without a behaviour for ctc/wbc.
    """
    settings = dict(settings)
    if name == "joint_pd":
        try:
            pd_settings = JointPDSettings(**settings)
        except TypeError as exc:
            raise ConfigError(f"Unknown controller setting in {sorted(settings)}. Allowed: "
                              + ", ".join(f"controller.{f.name}"
                                          for f in dataclasses.fields(JointPDSettings))) from exc
        q_ref = robot.standing_configuration() if robot.config.standing else q0
        return JointPD(robot, q_ref, pd_settings, dt)
    if name in control_layer.CONTROLLERS:
        if scenario.behavior is None:
            with_behavior = [n for n, sc in SCENARIOS.items() if sc.behavior]
            raise ConfigError(f"Scenario {scenario.name!r} has no behaviour for controller "
                              f"{name!r}; use joint_pd, or one of the scenarios "
                              f"{', '.join(with_behavior)}")
        behavior = control_layer.make_behavior(scenario.behavior, robot, q0,
                                               **dict(behavior_params))
        return ClosedLoop(control_layer.make_controller(name, robot, behavior, dt, **settings),
                          robot)
    if settings:
        raise ConfigError(f"controller 'none' takes no settings; got {sorted(settings)}")
    return None


def build(config: SimConfig) -> Built:
    """Build everything a run needs; errors are raised before anything is simulated.

    In this order: scenario and its parameters (``world``/``contacts`` included), contact
    model with the scenario's defaults under the configuration's settings, robot
    (``make_robot``), simulator (dt, integrator, max speed; the model checks dt and
    integrator), scheduled external forces, initial state, controller.

    Raises:
        ConfigError: unknown scenario/model/controller/key, or settings a model refuses.
    """
    scenario = get_scenario(config.world.scenario)
    params = scenario.resolve(config.world.scenario_sets())
    model_name = config.contact.model
    settings = dict(scenario.contact_defaults.get(model_name, {}))
    settings.update(config.contact.settings)
    contact = contact_model(model_name, settings)
    robot = make_robot(config.robot, scenario, params)
    sim_settings = {"dt": scenario.dt if config.dt is None else config.dt,
                    "integrator": config.integrator, "max_speed": config.max_speed}
    sim = Simulator(robot, contact, scenario.terrain(params),
                    SimSettings(**{k: v for k, v in sim_settings.items() if v is not None}),
                    **scenario.simulator_options(params))
    for external in scenario.external_forces(params):
        sim.add_external_force(external)
    q0, v0 = scenario.initial_state(robot, params)
    sim.reset(q0, v0)
    ctrl_name = controller_name(config, scenario)
    control = make_control(ctrl_name, config.control.settings, config.control.behavior,
                           scenario, robot, q0, sim.dt)
    return Built(scenario, params, robot, sim, ctrl_name, control,
                 dict(contact.settings.__dict__), q0, v0,
                 str(params.get(WORLD_KEY) or scenario.world or ""))


__all__ = ["CONTROLLERS", "Built", "ClosedLoop", "build", "contact_model", "controller_name",
           "make_control", "make_robot"]
