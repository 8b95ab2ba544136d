"""Controllers and reference generators (docs/architecture.md layer 5), keyed by name.

The registries name ``module:Class``; classes are imported when first asked for, so a
controller module's cost (and its optional dependencies) is paid only by its users.

* controllers: ``Class(robot, behavior, dt, **settings)`` (``control.base.Controller``);
* behaviours: ``Class(robot, q0, **params)`` (``control.base.Behavior``).
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

from biped_contact_sim.control.base import (
    Behavior,
    Controller,
    ControlOutput,
    FootTarget,
    Measurement,
    Reference,
)
from biped_contact_sim.errors import unknown_name

CONTROLLERS: dict[str, str] = {
    "ctc": "biped_contact_sim.control.ctc:ComputedTorqueController",
    "wbc": "biped_contact_sim.control.wbc:WholeBodyController",
}

BEHAVIORS: dict[str, str] = {
    "stand": "biped_contact_sim.control.standing:StandBehavior",
    "sway": "biped_contact_sim.control.standing:SwayBehavior",
    "walk": "biped_contact_sim.control.walking:WalkBehavior",
    "planar_walk": "biped_contact_sim.control.planar_gait:PlanarWalkBehavior",
    "multicontact": "biped_contact_sim.control.multicontact:MultiContactBehavior",
    "lean_on_table": "biped_contact_sim.control.lean_on_table:LeanOnTableBehavior",
}


def _load(registry: dict[str, str], kind: str, name: str):
    if name not in registry:
        raise unknown_name(kind, name, registry)
    module, cls = registry[name].split(":")
    return getattr(importlib.import_module(module), cls)


def controller_class(name: str) -> type[Controller]:
    """The controller class registered as ``name``.

    Raises:
        ConfigError: unknown name (listing the valid names).
    """
    return _load(CONTROLLERS, "controller", name)


def behavior_class(name: str) -> type[Behavior]:
    """The behaviour class registered as ``name``.

    Raises:
        ConfigError: unknown name (listing the valid names).
    """
    return _load(BEHAVIORS, "behavior", name)


def make_controller(name: str, robot, behavior: Behavior, dt: float,
                    **settings: Any) -> Controller:
    """Build a controller by registry name (unknown names and settings raise ConfigError),
    with the behaviour's defaults for it (``Behavior.controller_defaults[name]``) under
    ``settings``."""
    merged = {**behavior.controller_defaults.get(name, {}), **settings}
    return controller_class(name)(robot, behavior, dt, **merged)


def make_behavior(name: str, robot, q0, **params: Any) -> Behavior:
    """Build a behaviour by registry name (unknown names and params raise ConfigError)."""
    return behavior_class(name)(robot, q0, **params)


def controller_settings_help(name: str) -> dict[str, Any]:
    """Setting names of a controller with their defaults (for ``biped-sim list``)."""
    return {f.name: f.default for f in dataclasses.fields(controller_class(name).Settings)}


__all__ = [
    "BEHAVIORS",
    "CONTROLLERS",
    "Behavior",
    "ControlOutput",
    "Controller",
    "FootTarget",
    "Measurement",
    "Reference",
    "behavior_class",
    "controller_class",
    "controller_settings_help",
    "make_behavior",
    "make_controller",
]
