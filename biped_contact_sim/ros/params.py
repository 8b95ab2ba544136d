"""The two nodes' parameters: each a field of the node's config dataclass, declared once
(default, description, unit, range: :func:`.param_spec.node_param`), validated as a whole.

The simulator node's ``contact.<model>.<setting>`` parameters come from the contact models'
``Settings`` dataclasses with the scenario's defaults; ``dt``, ``integrator`` and ``max_speed``
from ``SimSettings``'s own fields and docstring.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from biped_contact_sim.contact import CONTACT_MODELS, ContactModel, make_contact_model
from biped_contact_sim.control import BEHAVIORS, CONTROLLERS
from biped_contact_sim.errors import ConfigError
from biped_contact_sim.msgs.topics import WORLD_FRAME
from biped_contact_sim.ros.param_spec import (
    ParamSpec,
    attribute_docs,
    config_specs,
    config_values,
    dataclass_specs,
    node_param,
    parse_key_values,
    validate,
)
from biped_contact_sim.session.builder import contact_model
from biped_contact_sim.session.config import DEFAULT_CONTACT_MODEL, DEFAULT_SCENARIO
from biped_contact_sim.sim.scenarios import CONTACTS_KEY, SCENARIOS, WORLD_KEY, get_scenario
from biped_contact_sim.sim.simulator import CONTACT_MODES, INTEGRATORS, SimSettings

STALE_ACTIONS = ("hold", "damping", "zero")
SYNC_MODES = ("exact", "latest")
_SIM = SimSettings()  # the simulator's own defaults
_SIM_DOCS = attribute_docs(SimSettings)


@dataclass(frozen=True)
class RobotParams:
    """The parameters both nodes load the robot from."""

    robot_config: str = node_param(
        "biped3d", "Robot config: a name (config/<name>.yaml, the file biped-sim reads) or the "
        "path of a robot YAML file")
    urdf_path: str = node_param("", "URDF file replacing the robot config's URDF (empty: the "
                                "config's)")
    robot_description: str = node_param(
        "", "URDF XML replacing the robot config's URDF (empty: use urdf_path or the config's); "
        "urdf_path wins when both are set")


def common_robot_specs() -> list[ParamSpec]:
    """Parameters both nodes use to load the robot."""
    return config_specs(RobotParams)


# Simulator node parameters


@dataclass(frozen=True)
class SimNodeConfig(RobotParams):
    """Validated parameters of the simulator node (:func:`sim_parameter_specs` declares them).

    ``contact`` holds every model's settings (``contact.<model>.<setting>`` parameters).
    """

    scenario: str = node_param(DEFAULT_SCENARIO, "Scenario giving terrain, initial state and "
                               "per-model contact defaults (biped-sim list)",
                               choices=sorted(SCENARIOS))
    scenario_sets: str = node_param(
        "", "Scenario settings as space-separated key=value pairs, like biped-sim --set (e.g. "
        "'mu=0.6 height=0.02')")
    world: str = node_param(
        "", "World file of geometry contacts (config/worlds/<name>.yaml or a path; implies "
        "contacts geometry); empty: the scenario's (as biped-sim --set world)")
    contacts: str = node_param(
        "", "Contact points: 'points' (the configured sole points on the terrain plane) or "
        "'geometry' (every collision geometry of the robot against the world); empty: the "
        "scenario's default (as biped-sim --set contacts)", choices=("", *CONTACT_MODES))
    contact_model: str = node_param(
        DEFAULT_CONTACT_MODEL, "Contact model; can be changed at run time (the state carries over)",
        choices=sorted(CONTACT_MODELS), read_only=False)
    dt: float = node_param(_SIM.dt, *_SIM_DOCS["dt"], 1e-5, 0.1)
    integrator: str = node_param(_SIM.integrator, _SIM_DOCS["integrator"][0].replace(
        "one of ``INTEGRATORS``", "time integrator"), choices=INTEGRATORS)
    max_speed: float = node_param(_SIM.max_speed, *_SIM_DOCS["max_speed"], 1.0, 1e6)
    control_period: float = node_param(
        1e-3, "Period of the measurement topics (joint_states, odom, contact_wrench/*, /clock) "
        "and, in lockstep, the time advanced per command; an integer multiple of dt", "s",
        1e-5, 1.0)
    publish_rate: float = node_param(20.0, "Rate of TF, cop/* and zmp (wall clock)", "Hz", 0.1,
                                     1000.0)
    markers_rate: float = node_param(
        10.0, "Rate of contact_markers (force arrows, friction cones, support polygon; a few ms "
        "per message: 400 cone vertices), wall clock", "Hz", 0.1, 1000.0)
    diagnostics_rate: float = node_param(1.0, "Rate of the /diagnostics status (wall clock)",
                                         "Hz", 0.1, 100.0)
    real_time_factor: float = node_param(
        1.0, "Simulated seconds per wall-clock second; 0 runs as fast as possible", "", 0.0,
        100.0, read_only=False)
    lockstep: bool = node_param(
        False, "Advance one control_period only when the command stamped with the last "
        "published state's time has arrived (deterministic closed loop over ROS)")
    max_command_delay: float = node_param(
        1e-3, "Free running: a joint_torque_cmd is fresh while the state it answers (its "
        "stamp) is at most this much older than the simulated time; with an older one the "
        "simulator waits (its clock slows) instead of holding a stale torque", "s", 0.0, 1.0,
        read_only=False)
    command_timeout: float = node_param(
        0.25, "Free running: longest wait for a late joint_torque_cmd (wall clock); then "
        "stale_command_action applies and the simulation runs on until a fresh command comes; "
        "0 waits without limit", "s", 0.0, 60.0, read_only=False)
    lockstep_timeout: float = node_param(
        5.0, "Lockstep: when no command answers the published state for this long (wall clock) "
        "after commands had come (a controller that died), stale_command_action runs the robot "
        "at the real-time factor (1 when 0) until a controller answers again, then lockstep "
        "resumes; 0 waits without limit (the simulated clock stands still)", "s", 0.0, 3600.0,
        read_only=False)
    wait_for_first_command: bool = node_param(
        False, "Free running: hold at t = 0 until the first valid joint_torque_cmd (a "
        "controller that starts later finds the initial state); false applies "
        "stale_command_action until then")
    stale_command_action: str = node_param(
        "hold", "Safe command while the command is stale or before the first one (free "
        "running), as a driver's: hold (joint PD on the posture the robot has then: tau = "
        "hold_stiffness (q_hold - q) - hold_damping v), damping (tau = -stale_damping v) or "
        "zero", choices=STALE_ACTIONS, read_only=False)
    hold_stiffness: float = node_param(
        1000.0, "Joint stiffness of the 'hold' safe command (at 300 the biped leans back "
        "4-5 degrees on it and the humanoid falls)", "N m/rad", 0.0, 1e5, read_only=False)
    hold_damping: float = node_param(
        30.0, "Joint damping of the 'hold' safe command (capped by each joint's inertia for a "
        "stable explicit step)", "N m s/rad", 0.0, 1e4, read_only=False)
    stale_damping: float = node_param(5.0, "Joint damping of the 'damping' stale action",
                                      "N m s/rad", 0.0, 1e4, read_only=False)
    start_paused: bool = node_param(False, "Start paused (resume with ~/pause data: false)")
    world_frame: str = node_param(WORLD_FRAME, "Fixed frame of odom, TF, CoPs, ZMP and markers")
    contact: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def substeps(self) -> int:
        """Physics steps per control period."""
        return max(1, round(self.control_period / self.dt))


def sim_parameter_specs(scenario_name: str = SimNodeConfig.scenario) -> list[ParamSpec]:
    """Every parameter of the simulator node (the contact defaults depend on the scenario).

    Args:
        scenario_name: the scenario whose per-model contact defaults become the defaults of the
            ``contact.<model>.<setting>`` parameters.

    Raises:
        ConfigError: unknown scenario.
    """
    specs = config_specs(SimNodeConfig)
    scenario = get_scenario(scenario_name)
    for name, cls in sorted(CONTACT_MODELS.items()):
        specs += dataclass_specs(f"contact.{name}", cls.Settings,
                                 scenario.contact_defaults.get(name))
    return specs


def scenario_options(scenario_name: str, scenario_sets: str, world: str = "",
                     contacts: str = "") -> tuple[dict[str, Any], dict[str, Any]]:
    """The scenario's parameters and its ``Simulator`` options (``world``, ``contacts``), as
    ``biped-sim run --set`` gives them: ``scenario_sets`` first, then the node's ``world`` and
    ``contacts`` parameters when not empty (they win over the same keys in ``scenario_sets``).

    Returns:
        ``(params, {"world": World | None, "contacts": "points" | "geometry"})``.

    Raises:
        ConfigError: bad ``scenario_sets``, an unknown world or an invalid world file, or a
            world with boxes or objects for points contacts (naming the parameter).
    """
    scenario = get_scenario(scenario_name)
    sets = parse_key_values(scenario_sets, "scenario_sets")
    if world:
        sets[WORLD_KEY] = world
    if contacts:
        sets[CONTACTS_KEY] = contacts
    try:
        params = scenario.resolve(sets)
        return params, scenario.simulator_options(params)
    except ConfigError as exc:
        # the node's parameter names instead of biped-sim's --set in the message
        text = str(exc).replace("--set world=", "world = ").replace("--set contacts=",
                                                                    "contacts = ")
        if not text.startswith(("world", "contacts")):
            text = f"world = {world!r}: {text}" if world else f"scenario {scenario_name!r}: {text}"
        raise ConfigError(text) from exc


def substeps(control_period: float, dt: float) -> int:
    """Physics steps per control period.

    Raises:
        ConfigError: the control period is not an integer multiple of dt (naming both).
    """
    n = round(control_period / dt)
    if n < 1 or abs(n * dt - control_period) > 1e-9 * max(1.0, control_period):
        raise ConfigError(f"control_period = {control_period:g} s must be an integer multiple "
                          f"of dt = {dt:g} s")
    return n


def sim_config(values: Mapping[str, Any]) -> SimNodeConfig:
    """Validate the simulator node's parameter values and return its config.

    Missing names take their spec defaults; ``contact.<model>.<setting>`` values are grouped
    per model; every contact model's settings are built once so that bad settings of any model
    are reported at start-up.

    Args:
        values: ``{parameter name: value}``.

    Returns:
        The config.

    Raises:
        ConfigError: every invalid value, one message per line.
    """
    scenario = values.get("scenario", SimNodeConfig.scenario)
    if scenario not in SCENARIOS:
        raise ConfigError(f"scenario = {scenario!r} is not one of: {', '.join(sorted(SCENARIOS))}")
    specs = sim_parameter_specs(scenario)
    merged = {s.name: s.default for s in specs}
    merged.update(values)
    errors = validate(specs, merged)
    contact: dict[str, dict[str, Any]] = {name: {} for name in CONTACT_MODELS}
    for name, value in merged.items():
        if name.startswith("contact."):
            _, model, setting = name.split(".", 2)
            if model in contact:
                contact[model][setting] = value
    if not errors:
        try:
            substeps(merged["control_period"], merged["dt"])
        except ConfigError as exc:
            errors.append(str(exc))
        try:
            SimSettings(dt=merged["dt"], integrator=merged["integrator"],
                        max_speed=merged["max_speed"])
        except ConfigError as exc:
            errors.append(str(exc))
        for model, settings in contact.items():
            try:
                make_contact_model(model, **settings)
            except (ConfigError, TypeError, ValueError) as exc:
                errors.append(f"contact.{model}: {exc}")
    if not any(e.startswith(("scenario_sets ", "world ", "contacts ")) for e in errors):
        try:  # reported with the other bad values (a world file is read here)
            scenario_options(scenario, merged["scenario_sets"], merged["world"],
                             merged["contacts"])
        except ConfigError as exc:
            errors.append(str(exc))
    kwargs = config_values(SimNodeConfig, merged, errors)
    if errors:
        raise ConfigError("\n".join(errors))
    return SimNodeConfig(contact=contact, **kwargs)


def check_sim_update(config: SimNodeConfig, changes: Mapping[str, Any],
                     built: dict[str, ContactModel] | None = None) -> str | None:
    """Reason to refuse a run-time parameter change, or None to accept it.

    The on-set-parameters callback of the simulator node: ranges and choices, then the contact
    model (a changed model or setting must build and accept dt and the integrator).

    Args:
        config: the current config.
        changes: the parameters being set.
        built: when given, receives the contact model built for the check under
            ``"contact_model"`` (the switch then uses it instead of building it again).

    Returns:
        None, or a message naming parameter, value and what is allowed.
    """
    specs = sim_parameter_specs(config.scenario)
    errors = validate(specs, changes)
    if errors:
        return "; ".join(errors)
    model = changes.get("contact_model", config.contact_model)
    settings = dict(config.contact.get(model, {}))
    for name, value in changes.items():
        if name.startswith(f"contact.{model}."):
            settings[name.split(".", 2)[2]] = value
    if "contact_model" in changes or any(n.startswith(f"contact.{model}.") for n in changes):
        try:
            instance = contact_model(model, settings, config.dt, config.integrator)
        except ConfigError as exc:
            return f"contact_model = {model!r}: {exc}"
        if built is not None:
            built["contact_model"] = instance
    return None


def apply_sim_update(config: SimNodeConfig, changes: Mapping[str, Any]) -> SimNodeConfig:
    """The config with accepted changes applied (contact settings regrouped per model)."""
    contact = {m: dict(s) for m, s in config.contact.items()}
    plain = {}
    for name, value in changes.items():
        if name.startswith("contact."):
            _, model, setting = name.split(".", 2)
            contact.setdefault(model, {})[setting] = value
        elif name in {f.name for f in dataclasses.fields(SimNodeConfig)}:
            plain[name] = float(value) if isinstance(getattr(config, name), float) else value
    return dataclasses.replace(config, contact=contact, **plain)


# Controller node parameters


@dataclass(frozen=True)
class ControllerNodeConfig(RobotParams):
    """Validated parameters of the controller node (:func:`controller_parameter_specs`)."""

    controller: str = node_param("wbc", "Controller", choices=sorted(CONTROLLERS))
    behavior: str = node_param("stand", "Behaviour (reference generator); its footholds come "
                               "from the first measured configuration", choices=sorted(BEHAVIORS))
    controller_settings: dict[str, Any] = node_param(
        None, "Controller settings as space-separated key=value pairs (biped-sim list shows "
        "them)", key_values=True)
    behavior_params: dict[str, Any] = node_param(
        None, "Behaviour parameters as space-separated key=value pairs", key_values=True)
    control_period: float = node_param(
        1e-3, "Control period dt given to the controller; with sync 'latest' also the period of "
        "the control timer that runs when the driver's messages are not stamped alike", "s",
        1e-5, 1.0)
    sync: str = node_param(
        "exact", "exact: compute once per stamp when joint_states, odom and every "
        "contact_wrench/<foot> with that stamp arrived (simulator, lockstep); latest: compute "
        "on the newest messages (hardware), as soon as they all carry the newest joint_states' "
        "stamp, else every control_period", choices=SYNC_MODES)
    max_measurement_age: float = node_param(
        0.05, "sync 'latest': skip a cycle when odom or a wrench is older than the joint states "
        "by more than this", "s", 0.0, 10.0)
    diagnostics_decimation: int = node_param(
        20, "Publish ~/com, ~/com_ref and ~/internal_forces* every N-th control cycle", "", 1,
        100000)
    diagnostics_rate: float = node_param(1.0, "Rate of the /diagnostics status (wall clock)",
                                         "Hz", 0.1, 100.0)
    world_frame: str = node_param(WORLD_FRAME, "Frame of the CoM points")


def controller_parameter_specs() -> list[ParamSpec]:
    """Every parameter of the controller node."""
    return config_specs(ControllerNodeConfig)


def controller_config(values: Mapping[str, Any]) -> ControllerNodeConfig:
    """Validate the controller node's parameter values.

    Raises:
        ConfigError: every invalid value, one per line.
    """
    specs = controller_parameter_specs()
    merged = {s.name: s.default for s in specs}
    merged.update(values)
    errors = validate(specs, merged)
    kwargs = config_values(ControllerNodeConfig, merged, errors)
    if errors:
        raise ConfigError("\n".join(errors))
    return ControllerNodeConfig(**kwargs)
