"""``spring_damper``: the classical penalty baseline (Rengifo et al. eq. 2; docs/methods.md §2.1).

Normal force for ``φ < 0`` (zero otherwise), penetration ``δ = −φ``:

    linear (eq. 2):       f_n = −k_p φ − k_v φ̇
    hunt_crossley:        f_n = k_p δⁿ (1 + c δ̇)

``clamp`` applies ``max(0, ·)``. Without it, eq. 2 pulls the body back just before separation
(a negative, "sticking" normal force, as the paper notes) and rests at a penetration
``m g / k_p``. Tangential: a stiction spring–damper anchored where the point touched down,

    f_t = −k_t (p_t − a) − d_t ṗ_t,   clamped to ‖f_t‖ ≤ μ max(f_n, 0);

while clamped the anchor slides so that the spring alone yields the clamped force
(``a = p_t + (f_t + d_t ṗ_t)/k_t``), which gives Coulomb sliding without a velocity threshold.
The anchor moves once per step (``commit``), from the state at the start of the step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from biped_contact_sim.contact.base import ContactModel, ContactResult, ContactState, positive
from biped_contact_sim.errors import ConfigError

LAWS = ("linear", "hunt_crossley")


@dataclass(frozen=True)
class SpringDamperSettings:
    """Settings of ``spring_damper`` (Rengifo et al. eq. 2 and its usual variants).

    Attributes:
        stiffness: k_p [N/m] (Hunt–Crossley: [N/mⁿ]).
        damping: k_v [N·s/m] of the linear law.
        law: "linear" (eq. 2) or "hunt_crossley".
        clamp: apply max(0, f_n); False reproduces eq. 2's sticking forces.
        hc_exponent: n of the Hunt–Crossley law.
        hc_damping: c of the Hunt–Crossley law [s/m].
        tangential_stiffness: k_t of the stiction spring [N/m].
        tangential_damping: d_t of the stiction spring [N·s/m].
    """

    stiffness: float = 1e5
    damping: float = 2e3
    law: str = "linear"
    clamp: bool = False
    hc_exponent: float = 1.5
    hc_damping: float = 1.0
    tangential_stiffness: float = 1e5
    tangential_damping: float = 2e3

    def __post_init__(self):
        positive("spring_damper.stiffness", self.stiffness)
        positive("spring_damper.damping", self.damping, allow_zero=True)
        positive("spring_damper.hc_exponent", self.hc_exponent)
        positive("spring_damper.hc_damping", self.hc_damping, allow_zero=True)
        positive("spring_damper.tangential_stiffness", self.tangential_stiffness)
        positive("spring_damper.tangential_damping", self.tangential_damping, allow_zero=True)
        if self.law not in LAWS:
            raise ConfigError(f"spring_damper.law = {self.law!r} must be one of "
                              f"{', '.join(LAWS)}")
        if not isinstance(self.clamp, bool):
            raise ConfigError(f"spring_damper.clamp = {self.clamp!r} must be true or false")


class SpringDamperContact(ContactModel):
    """Classical penalty contact, stiction spring (Rengifo et al. eq. 2; docs/methods.md §2.1)."""

    name = "spring_damper"
    Settings = SpringDamperSettings

    def reset(self, n_points: int) -> None:
        self._anchor = np.full((n_points, 2), np.nan)  # NaN: not in contact, no anchor

    def compute(self, state: ContactState, commit: bool = True) -> ContactResult:
        s = self.settings
        m = state.n_points
        if getattr(self, "_anchor", None) is None or len(self._anchor) != m:
            self.reset(m)
        active = state.phi < 0.0
        f = np.zeros((m, 3))
        idx = np.flatnonzero(active)
        anchor = self._anchor.copy()
        anchor[~active] = np.nan
        if idx.size:
            delta, delta_dot = -state.phi[idx], -state.vc[idx, 2]
            if s.law == "linear":
                fn = s.stiffness * delta + s.damping * delta_dot
            else:
                fn = s.stiffness * delta ** s.hc_exponent * (1.0 + s.hc_damping * delta_dot)
            if s.clamp:
                fn = np.maximum(fn, 0.0)
            pt, vt = state.p_tangent[idx], state.vc[idx, :2]
            a = anchor[idx]
            new = np.isnan(a[:, 0])
            a[new] = pt[new]  # touch-down: anchor where the point entered
            ft = -s.tangential_stiffness * (pt - a) - s.tangential_damping * vt
            limit = state.mu[idx] * np.maximum(fn, 0.0)
            norm = np.sqrt((ft * ft).sum(axis=1))
            slip = norm > limit
            if slip.any():
                ft[slip] *= (limit[slip] / np.where(norm[slip] > 0, norm[slip], 1.0))[:, None]
                a[slip] = pt[slip] + (ft[slip] + s.tangential_damping * vt[slip]) \
                    / s.tangential_stiffness
            anchor[idx] = a
            f[idx, :2], f[idx, 2] = ft, fn
            stats = {"sliding": int(slip.sum()), "min_normal_force": float(fn.min())}
        else:
            stats = {"sliding": 0, "min_normal_force": 0.0}
        if commit:
            self._anchor = anchor
        return ContactResult(f, active, stats)
