"""Terrain: a plane (flat ground or an inclined ramp) with its contact frame and friction."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from biped_contact_sim.errors import ConfigError


@dataclass(frozen=True)
class PlaneTerrain:
    """The plane ``n·(p − o) = 0`` with contact frame ``R = [t₁ t₂ n]`` and friction μ.

    A ramp of slope α descends along +x: ``n = (sin α, 0, cos α)``, ``t₁ = (cos α, 0, −sin α)``
    (downhill), ``t₂ = e_y``. Flat ground is α = 0.
    """

    slope: float = 0.0  # α [rad]
    mu: float = 0.8
    height: float = 0.0  # plane passes through (0, 0, height)

    def __post_init__(self):
        if not np.isfinite(self.mu) or self.mu < 0:
            raise ConfigError(f"friction coefficient mu = {self.mu!r} must be finite and >= 0")
        if not -np.pi / 2 < self.slope < np.pi / 2:
            raise ConfigError(f"slope = {np.degrees(self.slope):g} deg must lie in (-90, 90)")

    @property
    def R(self) -> np.ndarray:
        """Contact frame as columns ``[t₁ t₂ n]`` (world ← contact)."""
        s, c = np.sin(self.slope), np.cos(self.slope)
        return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])

    @property
    def normal(self) -> np.ndarray:
        return self.R[:, 2]

    @property
    def flat(self) -> bool:
        return self.slope == 0.0

    def to_contact(self, p: np.ndarray) -> np.ndarray:
        """Points (m, 3) in contact coordinates ``(t₁·(p−o), t₂·(p−o), φ)``; φ is the gap."""
        return (p - np.array([0.0, 0.0, self.height])) @ self.R
