"""``SimConfig``: everything a simulation is built from, every default written once.

One frozen dataclass tree: the robot (``RobotSource``), the scenario and its world
(``WorldConfig``), the contact model (``ContactConfig``), the controller and its behaviour
(``ControlConfig``) and the run settings (``SimConfig``). Every leaf field carries
machine-readable metadata (``field(metadata=...)``): ``unit``, ``doc`` and, where the values are
a fixed set, ``choices`` (a tuple, or the dotted name of one that ``config_fields`` resolves);
``config_fields()`` lists the leaves with their type and default, for front ends that declare
parameters from it (the ROS nodes, later).

This module is light (no numpy, pinocchio or numba): ``biped-sim --help`` reads
``DEFAULT_CONTACT_MODEL`` from it. Defaults owned by a lower layer are ``None`` here, meaning
"that layer's default" (``integrator``, ``max_speed``: ``sim.simulator.SimSettings``; ``dt``,
``duration``, ``controller``: the scenario's), and ``config_fields`` reports the value they
resolve to.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_CONTACT_MODEL = "penalty_fl"
DEFAULT_SCENARIO = "stand"
DEFAULT_DURATION = 5.0  # [s] a scenario without its own duration, run without a behaviour
FALL_HEIGHT_RATIO = 0.5  # a biped whose base drops below half its initial height has fallen
#: the values of ``RunResult.outcome`` (``summary.json``'s ``outcome``)
OUTCOMES = ("completed", "diverged", "fell", "interrupted", "terminated")
MAX_STEPS_EVER = 1e12  # a run of more steps is refused whatever the caller allows (~10 years)
#: samples per simulated second that ``biped-sim run`` records by default when dt ≥ 1 ms (every
#: step when dt is finer): each recorded sample costs the observers, a CSV row and ~9 MCAP
#: messages (~1.7 ms on a loaded core at 1 kHz, more than the step and the controller); 200 Hz
#: keeps the CoP/ZMP and gait signals (a step is 0.5 s) and a smooth replay.
RUN_RECORD_RATE = 200.0
#: record rate of ``Run`` when none is given and dt ≥ 1 ms [Hz]
DEFAULT_RECORD_RATE = 1000.0
#: ``--set`` key prefixes that go to the contact model, the controller and the behaviour
SET_PREFIXES = ("contact.", "controller.", "behavior.")
#: ``--set`` keys of the world (``WorldConfig.world``/``contacts``; ``Scenario.resolve`` reads
#: them as scenario keys)
WORLD_SET_KEYS = ("world", "contacts")

def _leaf(default: Any, unit: str, doc: str, choices: tuple | str | None = None,
          default_from: str | None = None) -> Any:
    """A dataclass field with its metadata (``choices``: a tuple, or ``module:NAME`` of one;
    ``default_from``: ``module:Class.attribute`` the ``None`` default stands for)."""
    meta: dict[str, Any] = {"unit": unit, "doc": doc}
    if choices is not None:
        meta["choices"] = choices
    if default_from is not None:
        meta["default_from"] = default_from
    if isinstance(default, Mapping):  # a plain dict: configurations go to worker processes
        return field(default_factory=dict, metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class RobotSource:
    """Which robot to simulate (empty fields: the scenario's own robot)."""

    config: str = _leaf("", "", "robot config name (config/<name>.yaml) or YAML path; empty: "
                        "the scenario's robot (or its --set robot=)")
    urdf_path: str = _leaf("", "", "URDF file replacing the config's; empty: keep")
    description: str = _leaf("", "", "URDF XML replacing the config's (used when urdf_path is "
                             "empty); empty: keep")
    overrides: Mapping[str, Any] = _leaf({}, "", "robot.* parameter values replacing the "
                                         "config's (as in config/<robot>.yaml, flat)")

    @property
    def given(self) -> bool:
        """Whether anything differs from the scenario's robot."""
        return bool(self.config or self.urdf_path or self.description.strip() or self.overrides)


@dataclass(frozen=True)
class WorldConfig:
    """The scenario and what it is simulated in."""

    scenario: str = _leaf(DEFAULT_SCENARIO, "", "scenario name (biped-sim list)",
                          "biped_contact_sim.sim.scenarios:SCENARIOS")
    sets: Mapping[str, Any] = _leaf({}, "", "the scenario's parameters (biped-sim run "
                                    "--set key=value; units per key in biped-sim list)")
    world: str = _leaf("", "", "world file name (config/worlds) or path, implies geometry "
                       "contacts; empty: the scenario's (or its --set world=)")
    contacts: str = _leaf("", "", "contact mode; empty: the scenario's (or its --set contacts=)",
                          ("", "points", "geometry"))

    def scenario_sets(self) -> dict[str, Any]:
        """The keys ``Scenario.resolve`` takes: ``sets``, then ``world`` and ``contacts`` when
        given (they win over the same keys in ``sets``, as the simulator node's parameters)."""
        out = dict(self.sets)
        out.update({k: v for k, v in zip(WORLD_SET_KEYS, (self.world, self.contacts),
                                         strict=True) if v})
        return out


@dataclass(frozen=True)
class ContactConfig:
    """The contact model and its settings."""

    model: str = _leaf(DEFAULT_CONTACT_MODEL, "", "contact model",
                       "biped_contact_sim.contact:CONTACT_MODELS")
    settings: Mapping[str, Any] = _leaf({}, "", "the model's settings over the scenario's "
                                        "defaults (--set contact.<setting>=value)")


@dataclass(frozen=True)
class ControlConfig:
    """The controller, its gains and its behaviour's parameters."""

    controller: str = _leaf("", "", "controller; empty: the scenario's",
                            "biped_contact_sim.session.builder:CONTROLLERS")
    settings: Mapping[str, Any] = _leaf({}, "", "controller settings (--set "
                                        "controller.<gain>=value)")
    behavior: Mapping[str, Any] = _leaf({}, "", "behaviour parameters of ctc/wbc (--set "
                                        "behavior.<param>=value)")


@dataclass(frozen=True)
class SimConfig:
    """A whole simulation: robot, world, contact model, control and the run settings."""

    robot: RobotSource = field(default_factory=RobotSource)
    world: WorldConfig = field(default_factory=WorldConfig)
    contact: ContactConfig = field(default_factory=ContactConfig)
    control: ControlConfig = field(default_factory=ControlConfig)
    dt: float | None = _leaf(None, "s", "physics step; None: the scenario's")
    integrator: str | None = _leaf(None, "", "time integrator; None: SimSettings' default",
                                   "biped_contact_sim.sim.simulator:INTEGRATORS",
                                   "biped_contact_sim.sim.simulator:SimSettings.integrator")
    max_speed: float | None = _leaf(None, "m/s or rad/s", "any |v| component above it is a "
                                    "divergence; None: SimSettings' default",
                                    default_from="biped_contact_sim.sim.simulator:"
                                                 "SimSettings.max_speed")
    duration: float | None = _leaf(None, "s", "simulated time; None: the scenario's, else its "
                                   "behaviour's, else DEFAULT_DURATION")
    record_rate: float | None = _leaf(None, "Hz", "recorded samples per simulated second; "
                                      "None: 1 kHz (biped-sim run: 200 Hz), every step when "
                                      "dt < 1 ms")

    @classmethod
    def from_sets(cls, scenario: str, contact_model: str | None = None,
                  controller: str | None = None, *, duration: float | None = None,
                  dt: float | None = None, integrator: str | None = None,
                  sets: Mapping[str, Any] | None = None, record_rate: float | None = None,
                  robot: RobotSource | None = None, max_speed: float | None = None
                  ) -> SimConfig:
        """The configuration ``biped-sim run`` gives: ``sets`` as ``--set`` pairs, split into
        ``contact.*`` (contact settings), ``controller.*`` (controller settings),
        ``behavior.*`` (behaviour parameters) and the rest, the scenario's keys (``robot``,
        ``world`` and ``contacts`` among them: ``Scenario.resolve`` reads them there).
        Names are checked by ``build``; ``None`` means the default."""
        scen: dict[str, Any] = {}
        split: dict[str, dict[str, Any]] = {p: {} for p in SET_PREFIXES}
        for key, value in (sets or {}).items():
            prefix = next((p for p in SET_PREFIXES if key.startswith(p)), None)
            if prefix is None:
                scen[key] = value
            else:
                split[prefix][key[len(prefix):]] = value
        # world/contacts names to their fields; other values stay for resolve to refuse
        world = {k: scen.pop(k) for k in WORLD_SET_KEYS
                 if isinstance(scen.get(k), str) and scen[k]}
        return cls(robot=robot or RobotSource(),
                   world=WorldConfig(scenario=scenario, sets=scen, **world),
                   contact=ContactConfig(model=contact_model or DEFAULT_CONTACT_MODEL,
                                         settings=split["contact."]),
                   control=ControlConfig(controller=controller or "",
                                         settings=split["controller."],
                                         behavior=split["behavior."]),
                   dt=dt, integrator=integrator or None, max_speed=max_speed,
                   duration=duration, record_rate=record_rate)


@dataclass(frozen=True)
class ConfigField:
    """One leaf of ``SimConfig``: dotted name, type, default, unit, meaning, allowed values."""

    name: str
    type: str
    default: Any
    unit: str
    doc: str
    choices: tuple | None = None


def _resolve(ref: str) -> Any:
    """``module:NAME`` or ``module:Class.attribute``, imported."""
    module, _, path = ref.partition(":")
    value: Any = importlib.import_module(module)
    for part in path.split("."):
        value = getattr(value, part)
    return value


def config_fields(cls: type = SimConfig, prefix: str = "", resolve: bool = True
                  ) -> list[ConfigField]:
    """Every leaf field of the tree under ``cls`` with its metadata, depth first.

    Args:
        resolve: import the modules that hold the allowed names and the defaults owned by
            another layer (``None`` defaults that stand for SimSettings' become its values);
            False keeps them as ``None`` and ``choices`` as None where they are a reference.
    """
    out = []
    for f in dataclasses.fields(cls):
        name = prefix + f.name
        if dataclasses.is_dataclass(f.type) or (isinstance(f.type, str) and f.type in _NODES):
            out += config_fields(_NODES[f.type] if isinstance(f.type, str) else f.type,
                                 name + ".", resolve)
            continue
        meta = f.metadata
        default = f.default if f.default is not dataclasses.MISSING else dict(f.default_factory())
        choices = meta.get("choices")
        if isinstance(choices, str):
            choices = tuple(_resolve(choices)) if resolve else None
        if resolve and meta.get("default_from"):
            default = _resolve(meta["default_from"])
        out.append(ConfigField(name, str(f.type), default, meta["unit"], meta["doc"], choices))
    return out


_NODES = {c.__name__: c for c in (RobotSource, WorldConfig, ContactConfig, ControlConfig)}

__all__ = ["DEFAULT_CONTACT_MODEL", "DEFAULT_DURATION", "FALL_HEIGHT_RATIO", "MAX_STEPS_EVER",
           "OUTCOMES", "RUN_RECORD_RATE", "ConfigField", "ContactConfig", "ControlConfig",
           "RobotSource", "SimConfig", "WorldConfig", "config_fields"]
