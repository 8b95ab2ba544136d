"""What a session asks its node to log (kept apart so that the controller's session does not
import the simulator's)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Event:
    """Something the node should log: severity (``info``/``warning``/``error``) and text."""

    severity: str
    text: str
