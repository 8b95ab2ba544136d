"""Named errors shared by every layer.

Error texts are module constants so that tests (and users' scripts) can match them exactly.
"""

import dataclasses
from collections.abc import Mapping
from typing import Any


class BipedSimError(Exception):
    """Base class of every error this package raises on purpose."""


class ConfigError(BipedSimError, ValueError):
    """A setting, name or file is invalid; the message names it and lists what is allowed."""


class InputError(BipedSimError, ValueError):
    """A command (e.g. a torque vector) was malformed; it was refused and nothing changed."""


class DivergenceError(BipedSimError):
    """The state became NaN/Inf or left the plausible range; the step was not committed."""


UNKNOWN_NAME = "Unknown {kind}: {name!r}. Valid names: {valid}"
UNKNOWN_FRAME = "Unknown frame {name!r} in {where}. Frames of the model: {valid}"
DIVERGED = "Simulation diverged at t = {t:.6f} s: {what}"


def unknown_name(kind: str, name: str, valid) -> ConfigError:
    """Return the error for a name that is not in a registry, listing the valid ones."""
    return ConfigError(UNKNOWN_NAME.format(kind=kind, name=name, valid=", ".join(sorted(valid))))


def settings_from(cls: type, values: Mapping[str, Any], kind: str, owner: str) -> Any:
    """``cls(**values)`` for a settings dataclass, after refusing the keys that are not its
    fields (the contact models', controllers' and behaviours' settings).

    Raises:
        ConfigError: ``Unknown {kind}(s) 'a', 'b' for {owner}. Allowed: …`` naming the unknown
            keys and every field (and whatever the dataclass's own checks raise).
    """
    allowed = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - allowed)
    if unknown:
        raise ConfigError(f"Unknown {kind}(s) {', '.join(map(repr, unknown))} for {owner}. "
                          f"Allowed: {', '.join(sorted(allowed))}")
    return cls(**values)
