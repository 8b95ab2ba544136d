"""Contact models (docs/architecture.md layer 3): one protocol, a registry keyed by name."""

from __future__ import annotations

import dataclasses
from typing import Any

from biped_contact_sim.contact.acceleration_lcp import AccelerationLCPContact
from biped_contact_sim.contact.base import ContactModel, ContactResult, ContactState
from biped_contact_sim.contact.gauss_seidel import GaussSeidelContact
from biped_contact_sim.contact.penalty_fl import PenaltyFLContact
from biped_contact_sim.contact.spring_damper import SpringDamperContact
from biped_contact_sim.contact.time_stepping import TimeSteppingContact
from biped_contact_sim.errors import unknown_name

CONTACT_MODELS: dict[str, type[ContactModel]] = {
    cls.name: cls for cls in (SpringDamperContact, PenaltyFLContact, GaussSeidelContact,
                              TimeSteppingContact, AccelerationLCPContact)
}


def make_contact_model(name: str, **settings: Any) -> ContactModel:
    """Build a contact model by registry name.

    Raises:
        ConfigError: unknown name (listing the valid names) or invalid settings.
    """
    if name not in CONTACT_MODELS:
        raise unknown_name("contact_model", name, CONTACT_MODELS)
    return CONTACT_MODELS[name](**settings)


def contact_settings_help(name: str) -> dict[str, Any]:
    """Setting names of a model with their defaults (for ``biped-sim list``)."""
    if name not in CONTACT_MODELS:
        raise unknown_name("contact_model", name, CONTACT_MODELS)
    return {f.name: f.default for f in dataclasses.fields(CONTACT_MODELS[name].Settings)}


__all__ = [
    "CONTACT_MODELS",
    "ContactModel",
    "ContactResult",
    "ContactState",
    "contact_settings_help",
    "make_contact_model",
]
