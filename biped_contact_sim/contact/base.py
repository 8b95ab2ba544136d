"""The contact-model protocol: what every model receives and returns (docs/methods.md §2).

A model sees the contact points in their *contact frames* ``[t₁, t₂, n]`` (the terrain's
tangents and normal at each point), so it knows nothing about terrain shapes or robots:

    φ_i        signed gap (< 0: penetration)
    v_c,i      contact-point velocity (ṗ_t1, ṗ_t2, φ̇)
    J_c        (3m, nv) contact-frame point Jacobians, rows (t₁ᵀ J_i, t₂ᵀ J_i, nᵀ J_i)
    γ_c        (3m,) contact-frame drifts
    M⁻¹, Sᵀτ − h

and returns per-point forces ``f_i = (f_t1, f_t2, f_n)`` in the same frames (zero for inactive
points) plus its active set and solver statistics. The simulator integrates
``M v̇ = Sᵀτ − h + J_cᵀ f``. Velocity-level models report the impulse over the step divided by dt.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from biped_contact_sim.errors import ConfigError

_XYZ = np.arange(3)


@dataclass
class ContactState:
    """The contact points at (q, v), in contact frames (see the module docstring)."""

    dt: float
    phi: np.ndarray  # (m,)
    vc: np.ndarray  # (m, 3)
    Jc: np.ndarray  # (3m, nv)
    gamma_c: np.ndarray  # (3m,)
    Minv: np.ndarray  # (nv, nv)
    tau_free: np.ndarray  # (nv,) Sᵀτ − h
    p_tangent: np.ndarray  # (m, 2) tangential coordinates of the points on their surface
    mu: np.ndarray  # (m,) friction coefficients

    _a_free: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_points(self) -> int:
        return len(self.phi)

    @property
    def a_free(self) -> np.ndarray:
        """``M⁻¹(Sᵀτ − h)``, the acceleration without contact forces (computed once)."""
        if self._a_free is None:
            self._a_free = self.Minv @ self.tau_free
        return self._a_free

    def delassus(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``G = J_c M⁻¹ J_cᵀ`` and ``b = J_c M⁻¹(Sᵀτ − h) + γ_c`` over points ``idx``.

        Rows are ordered (t₁, t₂, n) per point, so ``p̈_c = G f + b`` (docs/methods.md §1).
        """
        if len(idx) == self.n_points:  # all points: no copies
            Jc, gamma = self.Jc, self.gamma_c
        else:
            rows = (3 * idx[:, None] + _XYZ).ravel()
            Jc, gamma = self.Jc[rows], self.gamma_c[rows]
        return Jc @ (self.Minv @ Jc.T), Jc @ self.a_free + gamma


@dataclass
class ContactResult:
    """Per-point forces (m, 3) in contact frames, the active set, and solver statistics."""

    f: np.ndarray
    active: np.ndarray
    stats: dict[str, Any] = field(default_factory=dict)


class ContactModel(ABC):
    """Base of every contact model; subclasses set ``name`` and a ``Settings`` dataclass.

    Args:
        **settings: values for the fields of ``Settings`` (unknown keys are refused).
    """

    name: ClassVar[str]
    Settings: ClassVar[type]
    #: integrators the model supports ("rk4" only for force-based models).
    integrators: ClassVar[tuple[str, ...]] = ("semi_implicit_euler", "rk4")

    def __init__(self, **settings: Any):
        allowed = {f.name for f in dataclasses.fields(self.Settings)}
        unknown = sorted(set(settings) - allowed)
        if unknown:
            raise ConfigError(f"Unknown setting(s) {', '.join(map(repr, unknown))} for contact "
                              f"model {self.name!r}. Allowed: {', '.join(sorted(allowed))}")
        self.settings = self.Settings(**settings)

    def check(self, dt: float, integrator: str) -> None:
        """Refuse a step size or integrator this model cannot run stably.

        Raises:
            ConfigError: naming the setting, its value and the bound.
        """
        if integrator not in self.integrators:
            raise ConfigError(f"Contact model {self.name!r} does not support integrator "
                              f"{integrator!r}. Supported: {', '.join(self.integrators)}")

    def reset(self, n_points: int) -> None:  # noqa: B027 - stateless models need nothing
        """Forget any internal state (e.g. stiction anchors)."""

    @abstractmethod
    def compute(self, state: ContactState, commit: bool = True) -> ContactResult:
        """Contact forces at ``state``; ``commit`` is False for the extra RK4 stages."""


def positive(name: str, value: float, allow_zero: bool = False) -> float:
    """Validate a positive (or non-negative) setting, naming it in the error."""
    try:
        value = float(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{name} = {value!r} must be a number") from exc
    if not np.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ConfigError(f"{name} = {value!r} must be {bound}")
    return value
