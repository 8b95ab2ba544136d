"""ROS parameters described once: :class:`ParamSpec` (name, default, description with unit,
range, choices), specs generated from config dataclasses, and their validation.

A node's config dataclass declares each parameter once with :func:`node_param` (default,
description, unit, range); :func:`config_specs` turns its fields into the specs the node
declares, :func:`config_values` the validated values back into the dataclass. The contact
models' settings become ``contact.<model>.<setting>`` specs through :func:`dataclass_specs`,
their descriptions and units read from the ``Attributes:`` section of their docstrings.
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

from biped_contact_sim.errors import ConfigError

PARAM = "ros_param"  # field metadata of node_param: the ParamSpec without name and default
KEY_VALUES = "key_values"  # field metadata: a mapping given as "k=v k2=v2" text


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


def node_param(default: Any, description: str, unit: str = "", low: float | None = None,
               high: float | None = None, choices: Sequence[str] | None = None,
               read_only: bool = True, key_values: bool = False) -> Any:
    """A config dataclass field that is also a ROS parameter: its default, description, unit
    and allowed values written once (the node's declaration comes from :func:`config_specs`).

    ``key_values``: the field holds a mapping, given as ``"key=value ..."`` text
    (:func:`parse_key_values`) whose default is "".
    """
    spec = ParamSpec("", None, description, unit, low, high,
                     tuple(choices) if choices is not None else None, read_only)
    meta = {PARAM: spec, KEY_VALUES: key_values}  # name and default: the field's
    if key_values:
        return field(default_factory=dict, metadata=meta)
    return field(default=default, metadata=meta)


def config_specs(cls: type, defaults: Mapping[str, Any] | None = None) -> list[ParamSpec]:
    """The parameter specs of a config dataclass's :func:`node_param` fields, in field order
    (``defaults`` replaces some, e.g. the scenario a node was started with)."""
    specs = []
    for f in dataclasses.fields(cls):
        spec = f.metadata.get(PARAM)
        if spec is None:
            continue
        default = "" if f.metadata[KEY_VALUES] else f.default
        if defaults and f.name in defaults:
            default = defaults[f.name]
        specs.append(dataclasses.replace(spec, name=f.name, default=default))
    return specs


def config_values(cls: type, values: Mapping[str, Any], errors: list[str]) -> dict[str, Any]:
    """Constructor arguments of a config dataclass from parameter values that passed their
    specs: floats as float (a YAML ``1`` is an int), ``key_values`` text parsed (its errors
    appended to ``errors``). Fields without a value keep their defaults."""
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if PARAM not in f.metadata or f.name not in values:
            continue
        value = values[f.name]
        if f.metadata[KEY_VALUES]:
            try:
                value = parse_key_values(str(value), f.name)
            except ConfigError as exc:
                errors.append(str(exc))
                continue
        elif isinstance(f.default, float) and isinstance(value, (int, float)):
            value = float(value)
        kwargs[f.name] = value
    return kwargs
