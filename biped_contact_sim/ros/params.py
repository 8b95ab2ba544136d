"""Parameter schema of both nodes: names, defaults, descriptions with units, ranges, checks.

:class:`ParamSpec` is one ROS parameter (the node declares it with a ``ParameterDescriptor`` built
from it); the specs of the contact models come from their ``Settings`` dataclasses and docstrings.
Validation messages name the parameter, the value and what is allowed
(``dt = -1.0 must be in [1e-05, 0.1] s``); start-up reports every bad value at once.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from biped_contact_sim.contact import CONTACT_MODELS, ContactModel, make_contact_model
from biped_contact_sim.control import BEHAVIORS, CONTROLLERS
from biped_contact_sim.errors import ConfigError
from biped_contact_sim.msgs.topics import WORLD_FRAME
from biped_contact_sim.sim.scenarios import CONTACTS_KEY, SCENARIOS, WORLD_KEY, get_scenario
from biped_contact_sim.sim.simulator import CONTACT_MODES, INTEGRATORS, SimSettings

STALE_ACTIONS = ("hold", "damping", "zero")
SYNC_MODES = ("exact", "latest")


@dataclass(frozen=True)
class ParamSpec:
    """One ROS parameter: default (its type is the parameter's type), description and bounds.

    Attributes:
        name: parameter name (``.`` separates namespaces, as in the YAML files).
        default: default value: bool, int, float, str, or a list of float or str.
        description: what it is, without the unit.
        unit: unit shown in brackets after the description ("" for none).
        low, high: inclusive numeric range (``FloatingPointRange``/``IntegerRange``), or None.
        choices: allowed strings, or None.
        read_only: cannot be changed after start-up.
    """

    name: str
    default: Any
    description: str
    unit: str = ""
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] | None = None
    read_only: bool = True

    @property
    def kind(self) -> type:
        """Python type of the value (bool, int, float, str or list)."""
        return list if isinstance(self.default, (list, tuple)) else type(self.default)

    def full_description(self) -> str:
        """Description with units, range and allowed values (the ParameterDescriptor text)."""
        text = self.description + (f" [{self.unit}]" if self.unit else "")
        if self.choices:
            text += ". One of: " + ", ".join(self.choices)
        return text

    def constraints(self) -> str:
        """``additional_constraints`` of the descriptor ("" when the range says it all)."""
        if self.choices:
            return "one of: " + ", ".join(self.choices)
        return ""

    def descriptor_fields(self) -> dict[str, Any]:
        """``rcl_interfaces/ParameterDescriptor`` fields (for ``messages.fill_message``).

        A numeric range goes to ``floating_point_range`` (float parameters) or ``integer_range``
        (int parameters) with step 0 (any value in the range).
        """
        fields: dict[str, Any] = {
            "name": self.name,
            "description": self.full_description(),
            "additional_constraints": self.constraints(),
            "read_only": bool(self.read_only),
        }
        if self.low is not None and self.high is not None:
            if self.kind is float:
                fields["floating_point_range"] = [
                    {"from_value": float(self.low), "to_value": float(self.high), "step": 0.0}]
            elif self.kind is int:
                fields["integer_range"] = [
                    {"from_value": int(self.low), "to_value": int(self.high), "step": 0}]
        return fields

    def check(self, value: Any) -> str | None:
        """Validate a value; None when valid, else a message naming parameter, value and rule."""
        kind = self.kind
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if kind is list:
            if not isinstance(value, (list, tuple)):
                return f"{self.name} = {value!r} must be a list"
        elif not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            return f"{self.name} = {value!r} must be a {kind.__name__}"
        if kind in (int, float):
            if not math.isfinite(value):
                return f"{self.name} = {value!r} must be finite"
            if self.low is not None and self.high is not None \
                    and not self.low <= value <= self.high:
                unit = f" {self.unit}" if self.unit else ""
                return f"{self.name} = {value!r} must be in [{self.low:g}, {self.high:g}]{unit}"
        if self.choices is not None and value not in self.choices:
            return f"{self.name} = {value!r} is not one of: " + ", ".join(
                repr(c) if not c else c for c in self.choices)
        return None


def attribute_docs(cls: type) -> dict[str, tuple[str, str]]:
    """``{attribute: (description, unit)}`` from the ``Attributes:`` section of a docstring.

    Entries are ``name: text``, continued on more-indented lines; the unit is the first
    ``[...]`` group of the text (removed from the description), "" when there is none.

    Args:
        cls: A documented class (a config dataclass).

    Returns:
        The parsed entries (empty when there is no ``Attributes:`` section).
    """
    doc = (cls.__doc__ or "").expandtabs()
    lines = doc.splitlines()
    out: dict[str, tuple[str, str]] = {}
    in_section, indent, current = False, None, None
    texts: dict[str, list[str]] = {}
    for line in lines:
        stripped = line.strip()
        if stripped == "Attributes:":
            in_section, indent = True, None
            continue
        if not in_section:
            continue
        if not stripped:
            continue
        level = len(line) - len(line.lstrip())
        if indent is None:
            indent = level
        if level < indent:
            break
        match = re.match(r"(\w+)(?:\s*\([^)]*\))?\s*:\s*(.*)", stripped)
        if level == indent and match:
            current = match.group(1)
            texts[current] = [match.group(2)]
        elif current is not None:
            texts[current].append(stripped)
    for name, parts in texts.items():
        text = " ".join(parts).strip()
        units = re.findall(r"\[([^\[\]]+)\]", text)
        unit = units[0] if units else ""
        if unit:
            text = text.replace(f" [{unit}]", "", 1).replace(f"[{unit}]", "", 1).strip()
        out[name] = (text.rstrip(".").strip(), unit)
    return out


def _ros_value(value: Any) -> Any:
    """A dataclass default as a ROS parameter value, or None when ROS cannot hold it."""
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)) and value and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        return [float(v) for v in value]
    return None


def dataclass_specs(prefix: str, cls: type, defaults: Mapping[str, Any] | None = None,
                    read_only: bool = False) -> list[ParamSpec]:
    """Parameter specs for the fields of a config dataclass (``<prefix>.<field>``).

    Descriptions and units come from the class's ``Attributes:`` docstring. A value in
    ``defaults`` replaces the field default (cast to the field default's type). Fields whose
    default ROS cannot hold (None, dicts, empty lists) are left out. Ranges are not declared:
    the dataclass validates the values (``ConfigError`` naming setting and bound).

    Args:
        prefix: parameter namespace, e.g. ``contact.penalty_fl``.
        cls: the dataclass.
        defaults: overrides of the field defaults (e.g. a scenario's contact defaults).
        read_only: the specs' read-only flag.

    Returns:
        One spec per representable field, in field order.
    """
    docs = attribute_docs(cls)
    specs = []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            continue
        if defaults and f.name in defaults:
            given = defaults[f.name]
            default = float(given) if isinstance(default, float) and not isinstance(
                given, bool) and isinstance(given, (int, float)) else given
        value = _ros_value(default)
        if value is None:
            continue
        text, unit = docs.get(f.name, (f"{cls.__name__}.{f.name}", ""))
        specs.append(ParamSpec(f"{prefix}.{f.name}", value, text, unit, read_only=read_only))
    return specs


def validate(specs: Sequence[ParamSpec], values: Mapping[str, Any]) -> list[str]:
    """Messages for every value that breaks its spec (empty when all are valid)."""
    by_name = {s.name: s for s in specs}
    errors = []
    for name, value in values.items():
        if name in by_name:
            message = by_name[name].check(value)
            if message:
                errors.append(message)
    return errors


def parse_key_values(text: str, what: str) -> dict[str, Any]:
    """Parse ``"key=value key2=value2"`` (values read as YAML, like ``biped-sim --set``).

    Args:
        text: whitespace-separated pairs ("" for none).
        what: the parameter name, for error messages.

    Returns:
        ``{key: value}``.

    Raises:
        ConfigError: a pair without ``=`` or a value that is not YAML.
    """
    out: dict[str, Any] = {}
    for pair in text.split():
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"{what} = {text!r}: {pair!r} is not key=value")
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            raise ConfigError(f"{what}: value of {key!r} is not valid YAML: {raw!r}") from exc
        if isinstance(value, str):  # YAML 1.1 reads 1e-6 as a string
            try:
                value = float(value)
            except ValueError:
                pass
        out[key] = value
    return out


# Simulator node parameters


def contact_defaults(scenario_name: str) -> dict[str, dict[str, Any]]:
    """Per registered contact model, its settings: dataclass defaults, then the scenario's."""
    scenario = get_scenario(scenario_name)
    return {name: {s.name.split(".")[-1]: s.default for s in dataclass_specs(
        f"contact.{name}", cls.Settings, scenario.contact_defaults.get(name))}
        for name, cls in CONTACT_MODELS.items()}


def common_robot_specs() -> list[ParamSpec]:
    """Parameters both nodes use to load the robot."""
    return [
        ParamSpec("robot_config", "biped3d", "Robot config: a name (config/<name>.yaml, the file "
                  "biped-sim reads) or the path of a robot YAML file"),
        ParamSpec("urdf_path", "", "URDF file replacing the robot config's URDF (empty: the "
                  "config's)"),
        ParamSpec("robot_description", "", "URDF XML replacing the robot config's URDF (empty: "
                  "use urdf_path or the config's); urdf_path wins when both are set"),
    ]


def sim_parameter_specs(scenario_name: str = "stand") -> list[ParamSpec]:
    """Every parameter of the simulator node (the contact defaults depend on the scenario).

    Args:
        scenario_name: the scenario whose per-model contact defaults become the defaults of the
            ``contact.<model>.<setting>`` parameters.

    Raises:
        ConfigError: unknown scenario.
    """
    sim_docs = attribute_docs(SimSettings)
    defaults = SimSettings()
    specs = [
        *common_robot_specs(),
        ParamSpec("scenario", "stand", "Scenario giving terrain, initial state and per-model "
                  "contact defaults (biped-sim list)", choices=tuple(sorted(SCENARIOS))),
        ParamSpec("scenario_sets", "", "Scenario settings as space-separated key=value pairs, "
                  "like biped-sim --set (e.g. 'mu=0.6 height=0.02')"),
        ParamSpec("world", "", "World file of geometry contacts (config/worlds/<name>.yaml or a "
                  "path; implies contacts geometry); empty: the scenario's (as biped-sim --set "
                  "world)"),
        ParamSpec("contacts", "", "Contact points: 'points' (the configured sole points on the "
                  "terrain plane) or 'geometry' (every collision geometry of the robot against "
                  "the world); empty: the scenario's default (as biped-sim --set contacts)",
                  choices=("", *CONTACT_MODES)),
        ParamSpec("contact_model", "penalty_fl", "Contact model; can be changed at run time "
                  "(the state carries over)", choices=tuple(sorted(CONTACT_MODELS)),
                  read_only=False),
        ParamSpec("dt", defaults.dt, sim_docs["dt"][0], sim_docs["dt"][1], 1e-5, 0.1),
        ParamSpec("integrator", defaults.integrator, sim_docs["integrator"][0].replace(
            "one of ``INTEGRATORS``", "time integrator"), choices=INTEGRATORS),
        ParamSpec("max_speed", defaults.max_speed, sim_docs["max_speed"][0],
                  sim_docs["max_speed"][1], 1.0, 1e6),
        ParamSpec("control_period", 0.001, "Period of the measurement topics (joint_states, "
                  "odom, contact_wrench/*, /clock) and, in lockstep, the time advanced per "
                  "command; an integer multiple of dt", "s", 1e-5, 1.0),
        ParamSpec("publish_rate", 20.0, "Rate of TF, cop/* and zmp (wall clock)", "Hz", 0.1,
                  1000.0),
        ParamSpec("markers_rate", 10.0, "Rate of contact_markers (force arrows, friction cones, "
                  "support polygon; a few ms per message: 400 cone vertices), wall clock", "Hz",
                  0.1, 1000.0),
        ParamSpec("diagnostics_rate", 1.0, "Rate of the /diagnostics status (wall clock)", "Hz",
                  0.1, 100.0),
        ParamSpec("real_time_factor", 1.0, "Simulated seconds per wall-clock second; 0 runs as "
                  "fast as possible", "", 0.0, 100.0, read_only=False),
        ParamSpec("lockstep", False, "Advance one control_period only when the command stamped "
                  "with the last published state's time has arrived (deterministic closed "
                  "loop over ROS)"),
        ParamSpec("max_command_delay", 0.001, "Free running: a joint_torque_cmd is fresh while "
                  "the state it answers (its stamp) is at most this much older than the "
                  "simulated time; with an older one the simulator waits (its clock slows) "
                  "instead of holding a stale torque", "s", 0.0, 1.0, read_only=False),
        ParamSpec("command_timeout", 0.25, "Free running: longest wait for a late "
                  "joint_torque_cmd (wall clock); then stale_command_action applies and the "
                  "simulation runs on until a fresh command comes; 0 waits without limit", "s",
                  0.0, 60.0, read_only=False),
        ParamSpec("lockstep_timeout", 5.0, "Lockstep: when no command answers the published "
                  "state for this long (wall clock) after commands had come (a controller "
                  "that died), stale_command_action runs the robot at the real-time factor (1 "
                  "when 0) until a controller answers again, then lockstep resumes; 0 waits "
                  "without limit (the simulated clock stands still)", "s", 0.0, 3600.0,
                  read_only=False),
        ParamSpec("wait_for_first_command", False, "Free running: hold at t = 0 until the "
                  "first valid joint_torque_cmd (a controller that starts later finds the "
                  "initial state); false applies stale_command_action until then"),
        ParamSpec("stale_command_action", "hold", "Safe command while the command is stale "
                  "or before the first one (free running), as a driver's: hold (joint PD on "
                  "the posture the robot has then: tau = hold_stiffness (q_hold - q) - "
                  "hold_damping v), damping (tau = -stale_damping v) or zero",
                  choices=STALE_ACTIONS, read_only=False),
        ParamSpec("hold_stiffness", 300.0, "Joint stiffness of the 'hold' safe command",
                  "N m/rad", 0.0, 1e5, read_only=False),
        ParamSpec("hold_damping", 30.0, "Joint damping of the 'hold' safe command (capped by "
                  "each joint's inertia for a stable explicit step)", "N m s/rad", 0.0, 1e4,
                  read_only=False),
        ParamSpec("stale_damping", 5.0, "Joint damping of the 'damping' stale action",
                  "N m s/rad", 0.0, 1e4, read_only=False),
        ParamSpec("start_paused", False, "Start paused (resume with ~/pause data: false)"),
        ParamSpec("world_frame", WORLD_FRAME, "Fixed frame of odom, TF, CoPs, ZMP and markers"),
    ]
    scenario = get_scenario(scenario_name)
    for name, cls in sorted(CONTACT_MODELS.items()):
        specs += dataclass_specs(f"contact.{name}", cls.Settings,
                                 scenario.contact_defaults.get(name))
    return specs


@dataclass(frozen=True)
class SimNodeConfig:
    """Validated parameters of the simulator node (see :func:`sim_parameter_specs`)."""

    robot_config: str = "biped3d"
    urdf_path: str = ""
    robot_description: str = ""
    scenario: str = "stand"
    scenario_sets: str = ""
    world: str = ""
    contacts: str = ""
    contact_model: str = "penalty_fl"
    contact: dict[str, dict[str, Any]] = field(default_factory=dict)
    dt: float = 1e-3
    integrator: str = "semi_implicit_euler"
    max_speed: float = 1e3
    control_period: float = 1e-3
    publish_rate: float = 20.0
    markers_rate: float = 10.0
    diagnostics_rate: float = 1.0
    real_time_factor: float = 1.0
    lockstep: bool = False
    max_command_delay: float = 1e-3
    command_timeout: float = 0.25
    lockstep_timeout: float = 5.0
    wait_for_first_command: bool = False
    stale_command_action: str = "hold"
    hold_stiffness: float = 300.0
    hold_damping: float = 30.0
    stale_damping: float = 5.0
    start_paused: bool = False
    world_frame: str = WORLD_FRAME

    @property
    def substeps(self) -> int:
        """Physics steps per control period."""
        return max(1, round(self.control_period / self.dt))


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
    scenario = values.get("scenario", "stand")
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
    if errors:
        raise ConfigError("\n".join(errors))
    kwargs = {f.name: merged[f.name] for f in dataclasses.fields(SimNodeConfig)
              if f.name != "contact" and f.name in merged}
    for key in ("dt", "max_speed", "control_period", "publish_rate", "markers_rate",
                "diagnostics_rate",
                "real_time_factor", "max_command_delay", "command_timeout", "lockstep_timeout",
                "stale_damping",
                "hold_stiffness", "hold_damping"):
        kwargs[key] = float(kwargs[key])
    return SimNodeConfig(contact=contact, **kwargs)


def check_sim_update(config: SimNodeConfig, changes: Mapping[str, Any]) -> str | None:
    """Reason to refuse a run-time parameter change, or None to accept it.

    The on-set-parameters callback of the simulator node: ranges and choices, then the contact
    model (a changed model or setting must build and accept dt and the integrator).

    Args:
        config: the current config.
        changes: the parameters being set.

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
            contact_model(model, settings, config.dt, config.integrator)
        except ConfigError as exc:
            return f"contact_model = {model!r}: {exc}"
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


def contact_model(name: str, settings: Mapping[str, Any], dt: float,
                  integrator: str) -> ContactModel:
    """Build a contact model and check it can run at dt with the integrator.

    Raises:
        ConfigError: unknown name (listing the valid ones), a bad setting, or dt/integrator
            the model refuses.
    """
    try:
        model = make_contact_model(name, **settings)
    except TypeError as exc:
        raise ConfigError(f"bad settings for contact model {name!r}: {exc}") from exc
    model.check(dt, integrator)
    return model


# --------------------------------------------------------------------------------------------


def controller_parameter_specs() -> list[ParamSpec]:
    """Every parameter of the controller node."""
    return [
        *common_robot_specs(),
        ParamSpec("controller", "wbc", "Controller", choices=tuple(sorted(CONTROLLERS))),
        ParamSpec("behavior", "stand", "Behaviour (reference generator); its footholds come "
                  "from the first measured configuration", choices=tuple(sorted(BEHAVIORS))),
        ParamSpec("controller_settings", "", "Controller settings as space-separated "
                  "key=value pairs (biped-sim list shows them)"),
        ParamSpec("behavior_params", "", "Behaviour parameters as space-separated key=value "
                  "pairs"),
        ParamSpec("control_period", 0.001, "Control period dt given to the controller; with "
                  "sync 'latest' also the period of the control timer", "s", 1e-5, 1.0),
        ParamSpec("sync", "exact", "exact: compute once per stamp when joint_states, odom and "
                  "every contact_wrench/<foot> with that stamp arrived (simulator, lockstep); "
                  "latest: compute every control_period from the newest messages (hardware)",
                  choices=SYNC_MODES),
        ParamSpec("max_measurement_age", 0.05, "sync 'latest': skip a cycle when odom or a "
                  "wrench is older than the joint states by more than this", "s", 0.0, 10.0),
        ParamSpec("diagnostics_decimation", 20, "Publish ~/com, ~/com_ref and "
                  "~/internal_forces* every N-th control cycle", "", 1, 100000),
        ParamSpec("diagnostics_rate", 1.0, "Rate of the /diagnostics status (wall clock)", "Hz",
                  0.1, 100.0),
        ParamSpec("world_frame", WORLD_FRAME, "Frame of the CoM points"),
    ]


@dataclass(frozen=True)
class ControllerNodeConfig:
    """Validated parameters of the controller node (see :func:`controller_parameter_specs`)."""

    robot_config: str = "biped3d"
    urdf_path: str = ""
    robot_description: str = ""
    controller: str = "wbc"
    behavior: str = "stand"
    controller_settings: dict[str, Any] = field(default_factory=dict)
    behavior_params: dict[str, Any] = field(default_factory=dict)
    control_period: float = 1e-3
    sync: str = "exact"
    max_measurement_age: float = 0.05
    diagnostics_decimation: int = 20
    diagnostics_rate: float = 1.0
    world_frame: str = WORLD_FRAME


def controller_config(values: Mapping[str, Any]) -> ControllerNodeConfig:
    """Validate the controller node's parameter values.

    Raises:
        ConfigError: every invalid value, one per line.
    """
    specs = controller_parameter_specs()
    merged = {s.name: s.default for s in specs}
    merged.update(values)
    errors = validate(specs, merged)
    parsed = {}
    for key in ("controller_settings", "behavior_params"):
        try:
            parsed[key] = parse_key_values(str(merged[key]), key)
        except ConfigError as exc:
            errors.append(str(exc))
    if errors:
        raise ConfigError("\n".join(errors))
    kwargs = {f.name: merged[f.name] for f in dataclasses.fields(ControllerNodeConfig)
              if f.name in merged}
    kwargs.update(parsed)
    kwargs["control_period"] = float(kwargs["control_period"])
    kwargs["max_measurement_age"] = float(kwargs["max_measurement_age"])
    kwargs["diagnostics_rate"] = float(kwargs["diagnostics_rate"])
    return ControllerNodeConfig(**kwargs)
