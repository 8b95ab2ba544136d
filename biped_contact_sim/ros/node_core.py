"""Everything the ROS 2 nodes do, without ROS: parameters, validation, scheduling, conversions.

``sim_node.py`` and ``controller_node.py`` only wire rclpy publishers, subscriptions, timers,
services and parameters to the objects of this module, so all of the behaviour below is tested
with plain pytest (``test/test_node_core.py``) on a machine without ROS 2:

* **parameter schema** (:class:`ParamSpec`): name, default, description with units, range or
  allowed values, read-only flag; built from the config dataclasses (``SimSettings``, every contact
  model's ``Settings``) and their docstrings, validated with messages that name the parameter,
  the value and what is allowed (``dt = -1.0 must be in [1e-05, 0.1] s``);
* **torque commands** (:class:`CommandValidator`): unknown joint names, wrong lengths, duplicate
  names, NaN/Inf → a rejection reason, the command is dropped;
* **command watchdog** (:class:`CommandWatchdog`): no command for ``command_timeout`` seconds of
  simulated time → zero torque or joint damping ``τ = −d v``, with an event to log once;
* **lockstep gate** (:class:`LockstepGate`): the simulator advances one control period only when
  the command stamped with the last published state's time has arrived;
* **real-time pacing** (:class:`Pacer`, :class:`RealTimeMeter`): periods due by the wall clock for
  a real-time factor, overrun and resync counters, measured real-time factor;
* **simulation session** (:class:`SimSession`): the simulator node's state machine (reset, pause,
  divergence, contact-model switch keeping the state) and the message fields it publishes;
* **measurement assembly** (:class:`MeasurementAssembler`): ``joint_states`` + ``odom`` +
  ``contact_wrench/<foot>`` → pinocchio ``q``, ``v`` and sole wrenches (base pose and twist
  converted for free-flyer, planar and translation bases);
* **controller session** (:class:`ControllerSession`): builds the controller and behaviour on the
  first measurement, computes torques, and the diagnostics layout (DiagnosticArray, CoM points,
  internal-force arrays).

Message fields come only from :mod:`.messages` (and, for ``diagnostic_msgs`` and
``std_msgs/Float64MultiArray``, from the field builders here, in the same plain-dict style).
"""

from __future__ import annotations

import dataclasses
import math
import re
import tempfile
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin
import yaml

from biped_contact_sim.contact import CONTACT_MODELS, ContactModel, make_contact_model
from biped_contact_sim.control import (
    BEHAVIORS,
    CONTROLLERS,
    Controller,
    ControlOutput,
    Measurement,
    make_behavior,
    make_controller,
)
from biped_contact_sim.errors import BipedSimError, ConfigError, DivergenceError
from biped_contact_sim.record import messages
from biped_contact_sim.record.recorder import base_motion
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.robot.config import RobotConfig, load_robot_config
from biped_contact_sim.sim.observables import Observer, foot_wrenches
from biped_contact_sim.sim.scenarios import SCENARIOS, get_scenario
from biped_contact_sim.sim.simulator import INTEGRATORS, SimSettings, Simulator, StepResult

# --------------------------------------------------------------------------------------------
# Topics (docs/architecture.md "Topics"): relative names, so a namespace moves them all. The same
# names as the MCAP trace of ``biped-sim run`` (record/recorder.py; a test checks they agree).
JOINT_TORQUE_CMD = "joint_torque_cmd"
JOINT_STATES = "joint_states"
ODOM = "odom"
CONTACT_WRENCH = "contact_wrench/{foot}"
COP = "cop/{foot}"
ZMP = "zmp"
CONTACT_MARKERS = "contact_markers"
CLOCK = "/clock"
TF = "/tf"
DIAGNOSTICS = "/diagnostics"  # the ROS convention (diagnostic_aggregator, rqt_robot_monitor)
# Controller diagnostics, private to the controller node (``~/com`` → /controller_node/com).
COM = "~/com"
COM_REF = "~/com_ref"
INTERNAL_FORCES = "~/internal_forces"
INTERNAL_FORCES_REF = "~/internal_forces_ref"

WORLD_FRAME = "world"
# Arrow length of a force equal to the robot's weight in contact_markers [m] (as the recorder).
WEIGHT_ARROW_LENGTH = 0.5

# diagnostic_msgs/DiagnosticStatus levels (a ``byte`` field: rclpy wants ``bytes`` of length 1).
DIAG_OK, DIAG_WARN, DIAG_ERROR, DIAG_STALE = 0, 1, 2, 3
SIM_STATUS_NAME = "biped_contact_sim: simulator"
CONTROLLER_STATUS_NAME = "biped_contact_sim: controller"

STALE_ACTIONS = ("zero", "damping")
SYNC_MODES = ("exact", "latest")
_NS = 1_000_000_000


# ============================================================================================
# Parameter schema
# ============================================================================================


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
            return f"{self.name} = {value!r} is not one of: {', '.join(self.choices)}"
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


# --------------------------------------------------------------------------------------------
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
        ParamSpec("publish_rate", 50.0, "Rate of TF, cop/*, zmp and contact_markers (wall "
                  "clock)", "Hz", 0.1, 1000.0),
        ParamSpec("diagnostics_rate", 1.0, "Rate of the /diagnostics status (wall clock)", "Hz",
                  0.1, 100.0),
        ParamSpec("real_time_factor", 1.0, "Simulated seconds per wall-clock second; 0 runs as "
                  "fast as possible", "", 0.0, 100.0, read_only=False),
        ParamSpec("lockstep", False, "Advance one control_period only when the command stamped "
                  "with the last published state's time has arrived (deterministic closed "
                  "loop over ROS)"),
        ParamSpec("command_timeout", 0.05, "Watchdog: with no valid joint_torque_cmd for this "
                  "long (simulated time) apply stale_command_action; 0 disables it", "s", 0.0,
                  10.0, read_only=False),
        ParamSpec("stale_command_action", "zero", "Torque applied while the command is stale "
                  "or before the first one: zero, or damping tau = -stale_damping * v",
                  choices=STALE_ACTIONS, read_only=False),
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
    contact_model: str = "penalty_fl"
    contact: dict[str, dict[str, Any]] = field(default_factory=dict)
    dt: float = 1e-3
    integrator: str = "semi_implicit_euler"
    max_speed: float = 1e3
    control_period: float = 1e-3
    publish_rate: float = 50.0
    diagnostics_rate: float = 1.0
    real_time_factor: float = 1.0
    lockstep: bool = False
    command_timeout: float = 0.05
    stale_command_action: str = "zero"
    stale_damping: float = 5.0
    start_paused: bool = False
    world_frame: str = WORLD_FRAME

    @property
    def substeps(self) -> int:
        """Physics steps per control period."""
        return max(1, round(self.control_period / self.dt))


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
        try:
            parse_key_values(merged["scenario_sets"], "scenario_sets")
        except ConfigError as exc:
            errors.append(str(exc))
    if errors:
        raise ConfigError("\n".join(errors))
    kwargs = {f.name: merged[f.name] for f in dataclasses.fields(SimNodeConfig)
              if f.name != "contact" and f.name in merged}
    for key in ("dt", "max_speed", "control_period", "publish_rate", "diagnostics_rate",
                "real_time_factor", "command_timeout", "stale_damping"):
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
# Robot parameters (the robot YAML files are ROS params files)


def robot_parameters(config: RobotConfig) -> dict[str, Any]:
    """The ``robot.*`` parameters of a robot config, flat, as in ``config/<robot>.yaml``.

    The nodes declare them read-only so that ``ros2 param get`` shows what was loaded.
    """
    params: dict[str, Any] = {
        "robot.name": config.name,
        "robot.urdf": Path(config.urdf_path).name,
        "robot.base": config.base,
        "robot.contact_bodies": [b.name for b in config.contact_bodies],
    }
    for body in config.contact_bodies:
        params[f"robot.contacts.{body.name}.frame"] = body.frame
        params[f"robot.contacts.{body.name}.offsets"] = [float(x) for x in
                                                         np.ravel(body.offsets)]
    if config.standing:
        params["robot.standing.joint_names"] = list(config.standing)
        params["robot.standing.positions"] = [float(x) for x in config.standing.values()]
    return params


def robot_config_from_parameters(params: Mapping[str, Any], urdf_dir: Path | None = None
                                 ) -> RobotConfig:
    """Rebuild a ``RobotConfig`` from ``robot.*`` parameter values (a params-file override).

    The values are written back as a robot YAML file and read by ``load_robot_config``, so the
    node validates them exactly as ``biped-sim`` does.

    Args:
        params: flat ``robot.*`` values (other names are ignored).
        urdf_dir: folder of the URDF named by ``robot.urdf`` (default: the package's urdf/).

    Raises:
        ConfigError: as ``load_robot_config``.
    """
    tree: dict[str, Any] = {}
    for name, value in params.items():
        if not name.startswith("robot."):
            continue
        node = tree
        *parents, leaf = name.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = list(value) if isinstance(value, (list, tuple)) else value
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump({"/**": {"ros__parameters": tree}}, f)
        path = Path(f.name)
    try:
        config = load_robot_config(path)
    finally:
        path.unlink(missing_ok=True)
    if urdf_dir is not None:
        config = dataclasses.replace(config, urdf_path=Path(urdf_dir) / Path(config.urdf_path).name)
    return config


def load_robot(robot_config: str, urdf_path: str = "", robot_description: str = "",
               overrides: Mapping[str, Any] | None = None) -> RobotModel:
    """Load the robot for a node: config by name or path, URDF from a path or an XML string.

    Args:
        robot_config: config name or YAML path (``load_robot_config``).
        urdf_path: URDF file replacing the config's (empty: keep).
        robot_description: URDF XML replacing the config's (used when ``urdf_path`` is empty;
            written to a temporary file for pinocchio).
        overrides: ``robot.*`` parameter values that differ from the file's (params files).

    Returns:
        The robot model.

    Raises:
        ConfigError: unknown robot, bad config, unreadable URDF, missing contact frames.
    """
    config = load_robot_config(robot_config)
    if overrides:
        merged = robot_parameters(config)
        if any(merged.get(k) != v for k, v in overrides.items()):
            merged.update(overrides)
            config = robot_config_from_parameters(merged, Path(config.urdf_path).parent)
    if urdf_path:
        if not Path(urdf_path).is_file():
            raise ConfigError(f"urdf_path = {urdf_path!r} is not a file")
        config = dataclasses.replace(config, urdf_path=Path(urdf_path))
    elif robot_description.strip():
        with tempfile.NamedTemporaryFile("w", suffix=".urdf", delete=False) as f:
            f.write(robot_description)
        config = dataclasses.replace(config, urdf_path=Path(f.name))
    return RobotModel(config)


# ============================================================================================
# Torque commands, watchdog, lockstep, pacing
# ============================================================================================


class CommandValidator:
    """Checks a ``joint_torque_cmd`` (names, efforts) and orders it like the robot's joints.

    A command must name every actuated joint exactly once, with one finite effort per name
    (in any order). Efforts beyond the effort limits are not refused: the simulator clamps.

    Args:
        joint_names: the robot's actuated joints, in τ order.
    """

    def __init__(self, joint_names: Sequence[str]):
        self.joint_names = list(joint_names)
        self._index = {n: i for i, n in enumerate(self.joint_names)}

    def check(self, names: Sequence[str], efforts: Sequence[float]) -> tuple[np.ndarray | None,
                                                                             str | None]:
        """``(tau, None)`` for a valid command, ``(None, reason)`` otherwise."""
        names = list(names)
        efforts = np.asarray(list(efforts), dtype=float)
        n = len(self.joint_names)
        if len(names) != len(efforts):
            return None, f"joint_torque_cmd has {len(names)} names but {len(efforts)} efforts"
        unknown = [x for x in names if x not in self._index]
        if unknown:
            return None, (f"joint_torque_cmd names unknown joint(s) {', '.join(map(repr, unknown))}"
                          f"; actuated joints: {', '.join(self.joint_names)}")
        duplicates = sorted({x for x in names if names.count(x) > 1})
        if duplicates:
            return None, f"joint_torque_cmd names joint(s) twice: {', '.join(duplicates)}"
        if len(names) != n:
            missing = [x for x in self.joint_names if x not in names]
            return None, (f"joint_torque_cmd has {len(names)} joints, expected {n}; missing: "
                          f"{', '.join(missing)}")
        bad = [names[i] for i in np.flatnonzero(~np.isfinite(efforts))]
        if bad:
            return None, f"joint_torque_cmd effort is NaN or Inf for {', '.join(bad)}"
        tau = np.empty(n)
        tau[[self._index[x] for x in names]] = efforts
        return tau, None


class CommandWatchdog:
    """Tracks whether the torque command is fresh, in simulated time.

    States: ``none`` (no command yet), ``fresh``, ``stale`` (older than ``timeout``). A timeout
    of 0 disables the watchdog (a command never goes stale). :meth:`update` returns the new
    state only when it changed, so the node logs each transition once.
    """

    NONE, FRESH, STALE = "none", "fresh", "stale"

    def __init__(self, timeout: float):
        self.timeout = float(timeout)
        self.last: float | None = None
        self.state = self.NONE
        self._reported = None

    def reset(self) -> None:
        self.last, self.state, self._reported = None, self.NONE, None

    def feed(self, t: float) -> None:
        """A valid command arrived at simulated time t."""
        self.last = float(t)

    def update(self, t: float) -> str | None:
        """State at simulated time t; returns it when it differs from the last report."""
        if self.last is None:
            self.state = self.NONE
        elif self.timeout > 0 and t - self.last > self.timeout + 1e-12:
            self.state = self.STALE
        else:
            self.state = self.FRESH
        if self.state != self._reported:
            self._reported = self.state
            return self.state
        return None


def fallback_torque(action: str, v_joints: np.ndarray, damping: float) -> np.ndarray:
    """Torque applied without a fresh command: zeros, or ``−damping · v`` for ``damping``."""
    if action == "damping":
        return -float(damping) * np.asarray(v_joints, dtype=float)
    if action == "zero":
        return np.zeros(len(v_joints))
    raise ConfigError(f"stale_command_action = {action!r} is not one of: "
                      + ", ".join(STALE_ACTIONS))


class LockstepGate:
    """Lets the simulator advance one control period per command for the published state.

    After publishing the state at stamp S the simulator calls ``expect(S)``; only a command
    stamped S (the controller copies the measurement's stamp) opens the gate; ``take()``
    returns its torque and closes the gate until the next ``expect``. Commands for other
    stamps, and repeats, are ignored with a reason.
    """

    def __init__(self):
        self.expected: int | None = None
        self._tau: np.ndarray | None = None

    def reset(self) -> None:
        self.expected, self._tau = None, None

    def expect(self, stamp_ns: int) -> None:
        self.expected, self._tau = int(stamp_ns), None

    @property
    def ready(self) -> bool:
        return self._tau is not None

    def offer(self, stamp_ns: int, tau: np.ndarray) -> str | None:
        """Accept the command for the awaited stamp; else return why it is ignored."""
        if self.expected is None:
            return "lockstep: no state awaits a command"
        if int(stamp_ns) != self.expected:
            return (f"lockstep: command stamped {stamp_ns} ns ignored, waiting for the state "
                    f"stamped {self.expected} ns")
        if self._tau is not None:
            return f"lockstep: second command for stamp {stamp_ns} ns ignored"
        self._tau = np.array(tau, dtype=float)
        return None

    def take(self) -> np.ndarray:
        """The accepted torque; the gate closes."""
        if self._tau is None:
            raise RuntimeError("LockstepGate.take() without an accepted command")
        tau, self._tau, self.expected = self._tau, None, None
        return tau


class Pacer:
    """Wall-clock pacing of control periods for a real-time factor.

    With factor r > 0 the simulated time should follow ``t_anchor + r (wall − wall_anchor)``;
    :meth:`due` says how many periods are behind. When the lag exceeds ``max_lag`` wall
    seconds the schedule is dropped and re-anchored (``resyncs`` counts it) instead of
    bursting to catch up. With r = 0 every call says ``max_batch`` periods are due (as fast as
    possible; the caller also bounds a batch by a wall-time budget). ``overruns`` counts the
    periods whose computation took longer than their real-time budget (period / r).
    """

    def __init__(self, period: float, factor: float, max_lag: float = 0.1, max_batch: int = 100):
        self.period = float(period)
        self.factor = float(factor)
        self.max_lag = float(max_lag)
        self.max_batch = int(max_batch)
        self.overruns = 0
        self.resyncs = 0
        self._wall0: float | None = None
        self._t0 = 0.0

    def hold(self, wall: float, t: float) -> None:
        """Re-anchor the schedule at (wall, t) without counting (pause, lockstep wait, reset)."""
        self._wall0, self._t0 = float(wall), float(t)

    def set_factor(self, factor: float, wall: float, t: float) -> None:
        self.factor = float(factor)
        self.hold(wall, t)

    def due(self, wall: float, t: float) -> int:
        """Control periods to run now, for simulated time t at wall time ``wall``."""
        if self.factor <= 0.0:
            return self.max_batch
        if self._wall0 is None:
            self.hold(wall, t)
        target = self._t0 + self.factor * (wall - self._wall0)
        lag = target - t
        if lag / self.factor > self.max_lag:
            self.resyncs += 1
            self.hold(wall - self.period / self.factor, t)  # one period due, from now on
            return 1
        return max(0, min(self.max_batch, math.floor(lag / self.period + 1e-9)))

    def record(self, compute_time: float) -> bool:
        """Count an overrun when one period's computation exceeded period / factor."""
        if self.factor > 0.0 and compute_time > self.period / self.factor:
            self.overruns += 1
            return True
        return False


class RealTimeMeter:
    """Measured real-time factor: simulated over wall time within a sliding wall-time window."""

    def __init__(self, window: float = 2.0):
        self.window = float(window)
        self._samples: deque[tuple[float, float]] = deque()

    def reset(self) -> None:
        self._samples.clear()

    def add(self, wall: float, t: float) -> None:
        self._samples.append((float(wall), float(t)))
        while len(self._samples) > 2 and self._samples[-1][0] - self._samples[1][0] >= self.window:
            self._samples.popleft()

    @property
    def value(self) -> float | None:
        """Δt_sim / Δt_wall over the window, None with fewer than two samples."""
        if len(self._samples) < 2:
            return None
        (w0, t0), (w1, t1) = self._samples[0], self._samples[-1]
        return (t1 - t0) / (w1 - w0) if w1 > w0 else None


def stamp_ns(t: float) -> int:
    """Nanoseconds of ``messages.stamp(t)`` (the stamp a message published at t carries)."""
    s = messages.stamp(t)
    return s["sec"] * _NS + s["nanosec"]


def stamp_fields(ns: int) -> dict[str, int]:
    """``builtin_interfaces/Time`` fields of an integer nanosecond time (exact)."""
    return {"sec": int(ns // _NS), "nanosec": int(ns % _NS)}


def ns_from_stamp(sec: int, nanosec: int) -> int:
    """Integer nanoseconds of a ``builtin_interfaces/Time``."""
    return int(sec) * _NS + int(nanosec)


# ============================================================================================
# The simulator node's session
# ============================================================================================


@dataclass
class World:
    """What the simulator node simulates (built like ``runner.build``)."""

    robot: RobotModel
    sim: Simulator
    q0: np.ndarray
    v0: np.ndarray
    scenario: str
    params: dict[str, Any]


def build_world(config: SimNodeConfig, robot_overrides: Mapping[str, Any] | None = None
                ) -> World:
    """Robot, terrain, contact model, simulator and initial state for the simulator node.

    The same steps as ``runner.build`` (scenario parameters, robot, terrain, scheduled external
    forces, initial state, contact model with the scenario's defaults). The robot is the
    scenario's own (``scenario.make_robot``, as ``biped-sim``) when ``robot_config`` names it
    and nothing overrides it; otherwise it is loaded from the node's parameters (config name or
    path, ``urdf_path``, ``robot_description``, ``robot.*`` overrides from a params file).

    Args:
        config: the node's validated config.
        robot_overrides: ``robot.*`` parameter values (a params file may change them).

    Raises:
        ConfigError: bad robot, scenario settings or contact model.
    """
    scenario = get_scenario(config.scenario)
    params = scenario.resolve(parse_key_values(config.scenario_sets, "scenario_sets"))
    file_values = robot_parameters(load_robot_config(config.robot_config))
    changed = {k: v for k, v in (robot_overrides or {}).items() if file_values.get(k) != v}
    if (config.robot_config == scenario.robot and not changed and not config.urdf_path
            and not config.robot_description.strip()):
        robot = scenario.make_robot(params)
    else:
        robot = load_robot(config.robot_config, config.urdf_path, config.robot_description,
                           changed)
    model = contact_model(config.contact_model, config.contact.get(config.contact_model, {}),
                          config.dt, config.integrator)
    sim = Simulator(robot, model, scenario.terrain(params),
                    SimSettings(dt=config.dt, integrator=config.integrator,
                                max_speed=config.max_speed))
    for external in scenario.external_forces(params):
        sim.add_external_force(external)
    q0, v0 = scenario.initial_state(robot, params)
    sim.reset(q0, v0)
    return World(robot, sim, np.asarray(q0, float), np.asarray(v0, float), scenario.name, params)


def base_pose_twist(model: pin.Model, data: pin.Data, q: np.ndarray, v: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """World position and quaternion (x, y, z, w) of the root link, and its body-frame twist.

    ``recorder.base_motion`` (the same conversion the trace uses) as plain arrays.

    Returns:
        ``(position, quat_xyzw, linear, angular)``.
    """
    oMb, vb = base_motion(model, data, q, v)
    quat = pin.Quaternion(oMb.rotation).coeffs()
    return oMb.translation.copy(), np.array(quat), vb.linear.copy(), vb.angular.copy()


@dataclass
class Event:
    """Something the node should log: severity (``info``/``warning``/``error``) and text."""

    severity: str
    text: str


class SimSession:
    """The simulator node's state machine, without ROS.

    Per control period (``config.substeps`` physics steps of a zero-order-hold torque):
    lockstep → the torque of the command for the last published state (the gate); otherwise
    the last valid command while the watchdog says it is fresh, else the stale action. After
    a period the measurement topics are due (:meth:`measurement_fields`). Divergence stops the
    stepping (``error`` holds the message) until :meth:`reset`.

    Args:
        world: from :func:`build_world`.
        config: the node's config.
        clock: wall clock in seconds (tests pass a fake one).
    """

    def __init__(self, world: World, config: SimNodeConfig,
                 clock: Callable[[], float] = time.perf_counter):
        self.world, self.config, self.clock = world, config, clock
        self.robot, self.sim = world.robot, world.sim
        self.n_sub = substeps(config.control_period, config.dt)
        self.validator = CommandValidator(self.robot.actuated_joint_names)
        self.watchdog = CommandWatchdog(config.command_timeout)
        self.gate = LockstepGate()
        self.pacer = Pacer(config.control_period, config.real_time_factor)
        self.meter = RealTimeMeter()
        self.observer = Observer(self.robot, self.sim.terrain)
        self._data = self.robot.create_data()
        gravity = float(np.linalg.norm(self.robot.model.gravity.linear))
        self.force_scale = WEIGHT_ARROW_LENGTH / (self.robot.mass * gravity)
        self.events: list[Event] = []
        self.paused = bool(config.start_paused)
        self.accepted = 0
        self.rejected = 0
        self.last_rejection = ""
        self.reset()

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        """Back to the initial state at t = 0; clears divergence, commands and counters."""
        self.sim.reset(self.world.q0, self.world.v0)
        self.error: str | None = None
        self.tau_cmd = np.zeros(self.robot.n_joints)
        self.tau_applied = np.zeros(self.robot.n_joints)
        self.last_step: StepResult | None = None
        self.q_prev, self.v_prev = self.sim.q.copy(), self.sim.v.copy()
        self.steps = 0
        self.step_time = 0.0
        self.watchdog.reset()
        self.gate.reset()
        self.meter.reset()
        self.pacer.hold(self.clock(), self.sim.t)
        self.state_due = True  # the initial state is published (and awaited in lockstep)
        if self.config.lockstep:
            self.gate.expect(stamp_ns(self.sim.t))

    def set_paused(self, paused: bool) -> None:
        self.paused = bool(paused)
        self.pacer.hold(self.clock(), self.sim.t)

    def switch_contact_model(self, name: str, settings: Mapping[str, Any]) -> None:
        """Replace the contact model, keeping q, v and t (its internal state starts afresh).

        Raises:
            ConfigError: the model does not build or refuses dt/integrator (nothing changes).
        """
        model = contact_model(name, settings, self.sim.dt, self.sim.settings.integrator)
        model.reset(self.robot.n_points)
        self.sim.contact = model

    def update_config(self, config: SimNodeConfig) -> None:
        """Apply run-time changes (real-time factor, watchdog, stale action, contact model)."""
        old, self.config = self.config, config
        if config.real_time_factor != old.real_time_factor:
            self.pacer.set_factor(config.real_time_factor, self.clock(), self.sim.t)
        self.watchdog.timeout = config.command_timeout
        if (config.contact_model != old.contact_model
                or config.contact.get(config.contact_model)
                != old.contact.get(config.contact_model)):
            self.switch_contact_model(config.contact_model,
                                      config.contact.get(config.contact_model, {}))
            self.events.append(Event("info", f"Contact model is now {config.contact_model!r} "
                                     f"(state kept at t = {self.sim.t:.3f} s)"))

    # ------------------------------------------------------------------ commands
    def command(self, stamp: int, names: Sequence[str], efforts: Sequence[float]) -> str | None:
        """Handle a ``joint_torque_cmd``; returns the rejection reason or None when accepted."""
        tau, reason = self.validator.check(names, efforts)
        if reason is None and self.config.lockstep:
            reason = self.gate.offer(stamp, tau)
        if reason is not None:
            self.rejected += 1
            self.last_rejection = reason
            return reason
        self.accepted += 1
        self.tau_cmd = tau
        self.watchdog.feed(self.sim.t)
        return None

    def current_torque(self) -> np.ndarray:
        """Torque for the next period outside lockstep (command or stale action)."""
        state = self.watchdog.update(self.sim.t)
        action = self.config.stale_command_action
        if state == CommandWatchdog.STALE:
            what = "zero torque" if action == "zero" else \
                f"joint damping {self.config.stale_damping:g} N m s/rad"
            self.events.append(Event("warning", f"No valid joint_torque_cmd for more than "
                                     f"{self.watchdog.timeout:g} s (command_timeout) at t = "
                                     f"{self.sim.t:.3f} s: applying {what}"))
        elif state == CommandWatchdog.FRESH:
            self.events.append(Event("info", f"Receiving joint_torque_cmd (t = {self.sim.t:.3f} "
                                     "s)"))
        elif state == CommandWatchdog.NONE:
            self.events.append(Event("info", f"No joint_torque_cmd yet: applying "
                                     f"{action} torque until one arrives"))
        if self.watchdog.state == CommandWatchdog.FRESH:
            return self.tau_cmd
        return fallback_torque(action, self.sim.v[self.robot.v_idx], self.config.stale_damping)

    # ------------------------------------------------------------------ stepping
    def run_period(self, tau: np.ndarray) -> bool:
        """Advance one control period; False (and ``error`` set) if the simulation diverged."""
        start = self.clock()
        for _ in range(self.n_sub):
            q_prev, v_prev = self.sim.q, self.sim.v
            t0 = time.perf_counter()
            try:
                step = self.sim.step(tau)
            except DivergenceError as exc:
                self.error = str(exc)
                self.events.append(Event("error", f"{exc}. The node keeps running; call "
                                         "~/reset to start again"))
                return False
            self.step_time += time.perf_counter() - t0
            self.steps += 1
            self.last_step, self.q_prev, self.v_prev = step, q_prev, v_prev
        self.tau_applied = self.last_step.tau
        wall = self.clock()
        self.pacer.record(wall - start)
        self.meter.add(wall, self.sim.t)
        self.state_due = True
        return True

    def tick(self, budget: float = 0.02) -> int:
        """Run the control periods due now (at most ``budget`` wall seconds); returns how many.

        Lockstep: at most one period, and only when the gate is open (and, with a real-time
        factor, when the period is due). Free running: the periods the pacer says are due.
        Nothing runs while paused or diverged.
        """
        wall = self.clock()
        if self.paused or self.error is not None:
            self.pacer.hold(wall, self.sim.t)
            return 0
        if self.config.lockstep:
            if not self.gate.ready:
                self.pacer.hold(wall, self.sim.t)
                return 0
            if self.pacer.due(wall, self.sim.t) < 1:
                return 0
            if not self.run_period(self.gate.take()):
                return 0
            self.gate.expect(stamp_ns(self.sim.t))
            return 1
        due = self.pacer.due(wall, self.sim.t)
        done = 0
        while done < due and self.clock() - wall < budget:
            if not self.run_period(self.current_torque()):
                break
            done += 1
        return done

    # ------------------------------------------------------------------ outputs
    def measurement_fields(self) -> list[tuple[str, dict[str, Any]]]:
        """``/clock``, ``joint_states``, ``odom`` and ``contact_wrench/<foot>`` of the state now.

        Joint efforts are the torques applied over the last period; the foot wrenches are the
        last step's forces in the sole frames, taken at the configuration they acted on
        (``observables.foot_wrenches``), zero before the first step.
        """
        robot, sim, t = self.robot, self.sim, self.sim.t
        frame = self.config.world_frame
        pos, quat, lin, ang = base_pose_twist(robot.model, self._data, sim.q, sim.v)
        out = [
            (CLOCK, messages.clock(t)),
            (JOINT_STATES, messages.joint_state(t, robot.actuated_joint_names, sim.q[robot.q_idx],
                                                sim.v[robot.v_idx], self.tau_applied)),
            (ODOM, messages.odometry(t, frame, robot.base_link, pos, quat, lin, ang)),
        ]
        if self.last_step is not None:
            wrenches = foot_wrenches(robot, self._data, self.q_prev, self.last_step)
        else:
            wrenches = {b.name: np.zeros(6) for b in robot.contact_bodies}
        for body in robot.contact_bodies:
            w = wrenches[body.name]
            out.append((CONTACT_WRENCH.format(foot=body.name),
                        messages.wrench_stamped(t, body.frame, w[:3], w[3:])))
        self.state_due = False
        return out

    def tf_fields(self) -> dict[str, Any]:
        """The ``world → base link`` TransformStamped of the state now."""
        pos, quat, _, _ = base_pose_twist(self.robot.model, self._data, self.sim.q, self.sim.v)
        return messages.transform_stamped(self.sim.t, self.config.world_frame,
                                          self.robot.base_link, pos, quat)

    def visual_fields(self) -> list[tuple[str, dict[str, Any]]]:
        """``cop/<foot>``, ``zmp`` (while defined) and ``contact_markers`` of the last step."""
        step = self.last_step
        if step is None:
            return []
        obs = self.observer.observe(step, self.q_prev, self.v_prev)
        t, frame, terrain = step.t, self.config.world_frame, self.sim.terrain
        out = []
        for foot in obs.feet:
            if foot.cop is not None:
                out.append((COP.format(foot=foot.name), messages.point_stamped(t, frame, foot.cop)))
        if obs.zmp is not None:
            out.append((ZMP, messages.point_stamped(t, frame, obs.zmp)))
        # The support polygon is stored in the terrain plane's (t1, t2) coordinates.
        polygon = np.array([0.0, 0.0, terrain.height]) + obs.support_polygon @ terrain.R[:, :2].T
        out.append((CONTACT_MARKERS, messages.contact_markers(
            t, frame, step.p, step.f_world, step.active, [f.cop for f in obs.feet], obs.zmp,
            polygon, mu=terrain.mu, force_scale=self.force_scale, normals=terrain.normal)))
        return out

    def status(self) -> dict[str, Any]:
        """The simulator's ``DiagnosticStatus`` fields (layout in :func:`sim_status_values`)."""
        level, message = DIAG_OK, "running"
        measured = self.meter.value
        target = self.config.real_time_factor
        if self.error is not None:
            level, message = DIAG_ERROR, f"diverged: {self.error} (call ~/reset)"
        elif self.paused:
            message = "paused"
        elif self.config.lockstep and not self.gate.ready:
            message = "lockstep: waiting for the command of the published state"
        elif not self.config.lockstep and self.watchdog.state != CommandWatchdog.FRESH:
            level, message = DIAG_WARN, (f"torque command {self.watchdog.state}: applying "
                                         f"{self.config.stale_command_action} torque")
        elif target > 0 and measured is not None and measured < 0.9 * target:
            level, message = DIAG_WARN, (f"slower than real_time_factor {target:g} "
                                         f"(measured {measured:.3g})")
        return diagnostic_status(level, SIM_STATUS_NAME, message, self.robot.name,
                                 sim_status_values(self))


def sim_status_values(session: SimSession) -> dict[str, Any]:
    """Key/values of the simulator status (README "Diagnostics")."""
    return {
        "sim_time_s": session.sim.t,
        "steps": session.steps,
        "contact_model": session.sim.contact.name,
        "dt_s": session.sim.dt,
        "control_period_s": session.config.control_period,
        "real_time_factor_target": session.config.real_time_factor,
        "real_time_factor_measured": session.meter.value,
        "overruns": session.pacer.overruns,
        "resyncs": session.pacer.resyncs,
        "mean_step_us": 1e6 * session.step_time / session.steps if session.steps else None,
        "lockstep": session.config.lockstep,
        "paused": session.paused,
        "command_state": session.watchdog.state,
        "commands_accepted": session.accepted,
        "commands_rejected": session.rejected,
        "last_rejection": session.last_rejection,
        "diverged": session.error or "",
    }


# ============================================================================================
# diagnostic_msgs and std_msgs/Float64MultiArray fields (same plain-dict style as messages.py)
# ============================================================================================


def format_value(value: Any) -> str:
    """A diagnostic value as text: numbers with 6 significant digits, arrays comma-separated."""
    if value is None:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.6g}"
    if isinstance(value, str):
        return value
    if isinstance(value, np.ndarray) or (isinstance(value, (list, tuple)) and all(
            isinstance(v, (int, float, np.number)) for v in value)):
        return ", ".join(f"{float(v):.6g}" for v in np.ravel(np.asarray(value, dtype=float)))
    if isinstance(value, (list, tuple)):
        return ", ".join(format_value(v) for v in value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {format_value(v)}" for k, v in value.items())
    return str(value)


def diagnostic_status(level: int, name: str, message: str, hardware_id: str,
                      values: Mapping[str, Any]) -> dict[str, Any]:
    """``diagnostic_msgs/DiagnosticStatus`` fields.

    ``level`` is a ROS ``byte``: rclpy wants ``bytes`` of length 1 (``b"\\x00"`` = OK), not an
    int. Values become ``KeyValue`` pairs formatted by :func:`format_value`.
    """
    if level not in (DIAG_OK, DIAG_WARN, DIAG_ERROR, DIAG_STALE):
        raise ValueError(f"level = {level!r} must be 0 (OK), 1 (WARN), 2 (ERROR) or 3 (STALE)")
    return {
        "level": bytes([level]),
        "name": str(name),
        "message": str(message),
        "hardware_id": str(hardware_id),
        "values": [{"key": str(k), "value": format_value(v)} for k, v in values.items()],
    }


def diagnostic_array(t: float, statuses: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``diagnostic_msgs/DiagnosticArray`` fields (empty ``frame_id``)."""
    return {"header": messages.header(t, ""), "status": list(statuses)}


def float64_multi_array(values: Any, label: str) -> dict[str, Any]:
    """``std_msgs/Float64MultiArray`` fields: one dimension ``label`` of size len(values)."""
    data = [float(v) for v in np.ravel(np.asarray(values, dtype=float))]
    return {"layout": {"dim": [{"label": str(label), "size": len(data), "stride": len(data)}],
                       "data_offset": 0},
            "data": data}


# ============================================================================================
# Measurement assembly (controller node)
# ============================================================================================


def base_state_from_odometry(base: str, position: Sequence[float], quat_xyzw: Sequence[float],
                             linear: Sequence[float], angular: Sequence[float]
                             ) -> tuple[np.ndarray, np.ndarray]:
    """Root-joint configuration and velocity (pinocchio conventions) from an odometry.

    ``nav_msgs/Odometry`` gives the pose of the base in the world and the twist in the base
    frame (child frame); pinocchio's conventions per ``RobotConfig.base``:

    * ``free_flyer``: q = (p, quaternion x y z w), v = (linear, angular) in the base frame —
      the odometry twist as it is;
    * ``planar_xz``: q = (x, z, pitch) with R = R_y(pitch), pitch = atan2(R₀₂, R₀₀);
      v = (ẋ, ż, pitch rate) with (ẋ, ·, ż) = R · linear (world velocity of the origin) and
      pitch rate = angular_y; out-of-plane components are dropped;
    * ``translation``: q = p, v = linear (no rotation: base and world axes coincide).

    Raises:
        InputError-like ``ValueError``: non-finite values or a quaternion that is not unit.
    """
    p = np.asarray(position, dtype=float).reshape(3)
    quat = np.asarray(quat_xyzw, dtype=float).reshape(4)
    lin = np.asarray(linear, dtype=float).reshape(3)
    ang = np.asarray(angular, dtype=float).reshape(3)
    if not all(np.all(np.isfinite(a)) for a in (p, quat, lin, ang)):
        raise ValueError("odometry contains NaN or Inf")
    norm = np.linalg.norm(quat)
    if abs(norm - 1.0) > 1e-3:
        raise ValueError(f"odometry orientation is not a unit quaternion (norm {norm:.6g})")
    quat = quat / norm
    if base == "free_flyer":
        return np.concatenate([p, quat]), np.concatenate([lin, ang])
    R = pin.Quaternion(quat[3], quat[0], quat[1], quat[2]).toRotationMatrix()
    if base == "planar_xz":
        pitch = math.atan2(R[0, 2], R[0, 0])
        world = R @ lin
        return np.array([p[0], p[2], pitch]), np.array([world[0], world[2], ang[1]])
    if base == "translation":
        return p.copy(), R @ lin
    raise ConfigError(f"Unknown base type {base!r}")


@dataclass
class _Parts:
    q_joints: np.ndarray | None = None
    v_joints: np.ndarray | None = None
    q_base: np.ndarray | None = None
    v_base: np.ndarray | None = None
    wrenches: dict[str, np.ndarray] = field(default_factory=dict)
    stamps: dict[str, int] = field(default_factory=dict)


@dataclass
class AssembledMeasurement:
    """A complete measurement: stamp (ns) of the joint states, q, v and sole wrenches."""

    stamp: int
    q: np.ndarray
    v: np.ndarray
    wrenches: dict[str, np.ndarray]


class MeasurementAssembler:
    """Builds ``(q, v, wrenches)`` from ``joint_states``, ``odom`` and ``contact_wrench/<foot>``.

    Modes:

    * ``exact``: a measurement is complete when joint states, odometry and every foot's wrench
      carrying the same stamp have arrived; each stamp is handed out once, in order (a
      simulator publishes them together; required for lockstep).
    * ``latest``: the newest message of each kind; complete when all kinds have arrived and the
      oldest is at most ``max_age`` seconds older than the newest joint states (hardware).
      A joint-states stamp is handed out once.

    Joint states are matched by name: extra joints are ignored, a missing actuated joint makes
    the message rejected (with a reason).
    """

    def __init__(self, robot: RobotModel, sync: str = "exact", max_age: float = 0.05,
                 keep: int = 16):
        if sync not in SYNC_MODES:
            raise ConfigError(f"sync = {sync!r} is not one of: {', '.join(SYNC_MODES)}")
        self.robot, self.sync, self.max_age, self.keep = robot, sync, float(max_age), keep
        self.feet = [b.name for b in robot.contact_bodies]
        self._parts: dict[int, _Parts] = {}
        self._latest = _Parts()
        self.last_stamp: int | None = None
        root = robot.model.joints[1]
        self._iq, self._nq_b = root.idx_q, root.nq
        self._iv, self._nv_b = root.idx_v, root.nv

    def reset(self) -> None:
        self._parts.clear()
        self._latest = _Parts()
        self.last_stamp = None

    def _slot(self, stamp: int) -> _Parts:
        if self.sync == "latest":
            return self._latest
        if stamp not in self._parts:
            self._parts[stamp] = _Parts()
            for old in sorted(self._parts)[:-self.keep]:
                del self._parts[old]
        return self._parts[stamp]

    def joint_state(self, stamp: int, names: Sequence[str], position: Sequence[float],
                    velocity: Sequence[float]) -> str | None:
        """Store joint positions/velocities; returns a rejection reason or None."""
        names = list(names)
        index = {n: i for i, n in enumerate(names)}
        missing = [j for j in self.robot.actuated_joint_names if j not in index]
        if missing:
            return f"joint_states lacks actuated joint(s): {', '.join(missing)}"
        if len(position) != len(names) or len(velocity) != len(names):
            return (f"joint_states has {len(names)} names, {len(position)} positions and "
                    f"{len(velocity)} velocities (positions and velocities are required)")
        order = [index[j] for j in self.robot.actuated_joint_names]
        q = np.asarray(position, dtype=float)[order]
        v = np.asarray(velocity, dtype=float)[order]
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v))):
            return "joint_states contains NaN or Inf"
        slot = self._slot(stamp)
        slot.q_joints, slot.v_joints = q, v
        slot.stamps["joint_states"] = int(stamp)
        return None

    def odometry(self, stamp: int, position, quat_xyzw, linear, angular) -> str | None:
        """Store the base pose and twist; returns a rejection reason or None."""
        try:
            qb, vb = base_state_from_odometry(self.robot.config.base, position, quat_xyzw,
                                              linear, angular)
        except ValueError as exc:
            return str(exc)
        slot = self._slot(stamp)
        slot.q_base, slot.v_base = qb, vb
        slot.stamps["odom"] = int(stamp)
        return None

    def wrench(self, foot: str, stamp: int, force, torque) -> str | None:
        """Store a foot's sole wrench; returns a rejection reason or None."""
        if foot not in self.feet:
            return f"unknown foot {foot!r}; contact bodies: {', '.join(self.feet)}"
        w = np.concatenate([np.asarray(force, float).reshape(3),
                            np.asarray(torque, float).reshape(3)])
        if not np.all(np.isfinite(w)):
            return f"contact_wrench/{foot} contains NaN or Inf"
        slot = self._slot(stamp)
        slot.wrenches[foot] = w
        slot.stamps[foot] = int(stamp)
        return None

    def _complete(self, slot: _Parts) -> bool:
        return (slot.q_joints is not None and slot.q_base is not None
                and all(f in slot.wrenches for f in self.feet))

    def _assemble(self, stamp: int, slot: _Parts) -> AssembledMeasurement:
        q = pin.neutral(self.robot.model)
        v = np.zeros(self.robot.nv)
        q[self._iq:self._iq + self._nq_b] = slot.q_base
        v[self._iv:self._iv + self._nv_b] = slot.v_base
        q[self.robot.q_idx] = slot.q_joints
        v[self.robot.v_idx] = slot.v_joints
        self.last_stamp = stamp
        return AssembledMeasurement(stamp, q, v, {f: slot.wrenches[f].copy() for f in self.feet})

    def missing(self) -> list[str]:
        """What the newest incomplete measurement still lacks (for a diagnostic message)."""
        slot = self._latest if self.sync == "latest" else (
            self._parts[max(self._parts)] if self._parts else _Parts())
        out = [] if slot.q_joints is not None else ["joint_states"]
        out += [] if slot.q_base is not None else ["odom"]
        out += [f"contact_wrench/{f}" for f in self.feet if f not in slot.wrenches]
        return out

    def pop(self) -> AssembledMeasurement | None:
        """The next complete measurement not handed out yet, or None."""
        if self.sync == "latest":
            slot = self._latest
            if not self._complete(slot):
                return None
            stamp = slot.stamps["joint_states"]
            if self.last_stamp is not None and stamp == self.last_stamp:
                return None
            if stamp - min(slot.stamps.values()) > self.max_age * _NS:
                return None
            return self._assemble(stamp, slot)
        for stamp in sorted(self._parts):
            if self.last_stamp is not None and stamp <= self.last_stamp:
                del self._parts[stamp]
                continue
            if self._complete(self._parts[stamp]):
                slot = self._parts.pop(stamp)
                for older in [s for s in self._parts if s < stamp]:
                    del self._parts[older]
                return self._assemble(stamp, slot)
        return None


# ============================================================================================
# Controller node
# ============================================================================================


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
        ParamSpec("diagnostics_decimation", 10, "Publish ~/com, ~/com_ref, ~/internal_forces* "
                  "and /diagnostics every N-th control cycle", "", 1, 100000),
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
    diagnostics_decimation: int = 10
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
    return ControllerNodeConfig(**kwargs)


def check_controller(robot: RobotModel, config: ControllerNodeConfig) -> None:
    """Build the behaviour and controller once at start-up, to refuse bad names and settings.

    The behaviour is built from the robot's standing configuration (or the neutral one); the
    node builds the real one from the first measurement.

    Raises:
        ConfigError: unknown controller/behaviour (listing the valid names) or a bad setting.
    """
    q = robot.standing_configuration() if robot.config.standing else pin.neutral(robot.model)
    try:
        behavior = make_behavior(config.behavior, robot, q, **config.behavior_params)
    except TypeError as exc:
        raise ConfigError(f"behavior_params = {config.behavior_params}: {exc}") from exc
    except ImportError as exc:
        raise ConfigError(f"behavior = {config.behavior!r} cannot be loaded: {exc}") from exc
    try:
        make_controller(config.controller, robot, behavior, config.control_period,
                        **config.controller_settings)
    except TypeError as exc:
        raise ConfigError(f"controller_settings = {config.controller_settings}: {exc}") from exc
    except ImportError as exc:
        raise ConfigError(f"controller = {config.controller!r} cannot be loaded: {exc}") from exc


@dataclass
class ControlCycle:
    """What one control cycle publishes: the command and, every N-th cycle, diagnostics."""

    command: dict[str, Any]
    diagnostics: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


class ControllerSession:
    """The controller node's logic: measurement → controller → ``joint_torque_cmd`` fields.

    The behaviour and the controller are built on the first measurement (the behaviour's
    footholds come from that configuration) and rebuilt when time jumps back (a simulator
    reset). The controller's time is the stamp minus the first stamp, so a behaviour starts at
    t = 0 in simulation and on hardware alike. The command carries the measurement's exact stamp
    (what the lockstep gate waits for).

    Args:
        robot: the robot model (the controller owns its own pinocchio Data).
        config: the node's config.
        clock: wall clock for the compute-time statistic.
    """

    def __init__(self, robot: RobotModel, config: ControllerNodeConfig,
                 clock: Callable[[], float] = time.perf_counter):
        self.robot, self.config, self.clock = robot, config, clock
        self.controller: Controller | None = None
        self.t0: int | None = None
        self.last: int | None = None
        self.cycles = 0
        self.failures = 0
        self.compute_time = 0.0
        self.last_error = ""
        self.last_output: ControlOutput | None = None
        self.events: list[Event] = []
        self._data = robot.create_data()

    def reset(self) -> None:
        self.controller, self.t0, self.last = None, None, None

    def _build(self, q: np.ndarray) -> None:
        cfg = self.config
        behavior = make_behavior(cfg.behavior, self.robot, q, **cfg.behavior_params)
        self.controller = make_controller(cfg.controller, self.robot, behavior,
                                          cfg.control_period, **cfg.controller_settings)
        self.events.append(Event("info", f"Controller {cfg.controller!r} with behaviour "
                                 f"{cfg.behavior!r} started"))

    def step(self, meas: AssembledMeasurement) -> ControlCycle | None:
        """One control cycle; None when the controller failed (an event says why).

        Raises:
            ConfigError: the controller or behaviour cannot be built (bad name or setting).
        """
        if self.last is not None and meas.stamp < self.last:
            self.events.append(Event("warning", "Time jumped back (simulator reset?): "
                                     "restarting the controller and its behaviour"))
            self.reset()
        if self.controller is None:
            self._build(meas.q)
            self.t0 = meas.stamp
        self.last = meas.stamp
        t = (meas.stamp - self.t0) / _NS
        start = self.clock()
        try:
            out = self.controller.compute(Measurement(t, meas.q, meas.v, meas.wrenches))
            tau = np.asarray(out.tau, dtype=float).reshape(-1)
            if tau.shape != (self.robot.n_joints,) or not np.all(np.isfinite(tau)):
                raise ValueError(f"controller returned tau of shape {tau.shape} "
                                 f"(expected ({self.robot.n_joints},)) or with NaN/Inf")
        except (BipedSimError, ValueError, np.linalg.LinAlgError) as exc:
            self.failures += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            self.events.append(Event("error", f"Controller failed at t = {t:.3f} s: "
                                     f"{self.last_error}; no command published"))
            return None
        self.compute_time += self.clock() - start
        self.cycles += 1
        self.last_output = out
        seconds = meas.stamp / _NS
        command = messages.joint_state(seconds, self.robot.actuated_joint_names, None, None, tau)
        command["header"]["stamp"] = stamp_fields(meas.stamp)
        cycle = ControlCycle(command)
        if (self.cycles - 1) % self.config.diagnostics_decimation == 0:
            cycle.diagnostics = self.diagnostics(meas, t, out)
        return cycle

    def diagnostics(self, meas: AssembledMeasurement, t: float, out: ControlOutput
                    ) -> list[tuple[str, dict[str, Any]]]:
        """``~/com``, ``~/com_ref``, ``~/internal_forces``, ``~/internal_forces_ref`` and
        ``/diagnostics`` (README "Diagnostics"); references from the behaviour at t."""
        stamp = meas.stamp / _NS
        frame = self.config.world_frame
        com = pin.centerOfMass(self.robot.model, self._data, meas.q)
        ref = self.controller.behavior.reference(t)
        out_list: list[tuple[str, dict[str, Any]]] = []

        def stamped(fields: dict[str, Any]) -> dict[str, Any]:
            fields["header"]["stamp"] = stamp_fields(meas.stamp)
            return fields

        out_list.append((COM, stamped(messages.point_stamped(stamp, frame, com))))
        if ref.com is not None:
            out_list.append((COM_REF, stamped(messages.point_stamped(stamp, frame, ref.com))))
        internal = out.info.get("internal")
        if internal is not None:
            out_list.append((INTERNAL_FORCES, float64_multi_array(internal, "internal")))
        if ref.internal is not None:
            out_list.append((INTERNAL_FORCES_REF, float64_multi_array(ref.internal,
                                                                       "internal_ref")))
        values = {
            "t_s": t,
            "controller": self.config.controller,
            "behavior": self.config.behavior,
            "stance": ", ".join(ref.stance),
            "cycles": self.cycles,
            "failures": self.failures,
            "mean_compute_us": 1e6 * self.compute_time / self.cycles if self.cycles else None,
            "com": com,
            "com_ref": ref.com,
            "tau": out.tau,
        }
        values.update({f"info.{k}": v for k, v in out.info.items()})
        level, message = DIAG_OK, "running"
        if self.failures and self.last_error:
            level, message = DIAG_WARN, f"last failure: {self.last_error}"
            values["last_error"] = self.last_error
        status = diagnostic_status(level, CONTROLLER_STATUS_NAME, message, self.robot.name,
                                   values)
        out_list.append((DIAGNOSTICS, diagnostic_array(stamp, [status])))
        return out_list

    def waiting_status(self, t: float, missing: Sequence[str]) -> dict[str, Any]:
        """``/diagnostics`` fields while no complete measurement has arrived."""
        status = diagnostic_status(DIAG_WARN, CONTROLLER_STATUS_NAME,
                                   "waiting for " + ", ".join(missing), self.robot.name,
                                   {"cycles": self.cycles, "missing": list(missing)})
        return diagnostic_array(t, [status])
