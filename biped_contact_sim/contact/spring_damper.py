"""``spring_damper``: the classical penalty baseline (Rengifo et al. eq. 2; docs/methods.md §2.1).

Normal force for ``φ < 0`` (zero otherwise), penetration ``δ = −φ``:

    linear (eq. 2):       f_n = −k_p φ − k_v φ̇
    hunt_crossley:        f_n = k_p δⁿ (1 + c δ̇)

``clamp`` applies ``max(0, ·)``. Without it, eq. 2 pulls the body back just before separation
(a negative, "sticking" normal force, as the paper notes) and rests at a penetration
``m g / k_p``. Tangential: a stiction spring–damper between the body's material point at the
contact and an anchor on the other surface, laid where the point touched down. Its elongation
``e = p_t − a`` grows only with the material slip velocity ``ṗ_t`` (``v_c``'s tangential part,
the velocity of the body's point where the contact is, relative to the other body):

    e_k = e_{k−1} + dt ṗ_t,k,    f_t = −k_t e_k − d_t ṗ_t,   clamped to ‖f_t‖ ≤ μ max(f_n, 0);

while clamped the anchor slides so that the spring alone yields the clamped force
(``e_k ← −(f_t + d_t ṗ_t)/k_t``), which gives Coulomb sliding without a velocity threshold.
The anchor is re-seated under the contact point as that point moves over the surfaces, which
keeps its id: a sphere or a cylinder rolls (its contact point runs over both surfaces while the
material point at it is at rest: e stays), a box's corner that runs along an edge does not
jump away from its anchor. (Anchoring the contact point's *position*, ``e = p_t − a``, held a
rolling ball in place: the geometric contact point moves with its centre.) ``e`` is kept per
contact id in the contact frame's tangent coordinates, updated once per step (``commit``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from biped_contact_sim.contact.base import (
    ContactModel,
    ContactResult,
    ContactState,
    Stats,
    positive,
)
from biped_contact_sim.contact.spring_damper_kernels import (
    spring_step,
)
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

    # Defaults of the biped's scenarios: stable (check_inertia) for bodies down to ~0.1 kg at
    # dt = 1 ms (the previous 2e3 N·s/m dampings were unstable for a 1 kg body at 1 ms).
    stiffness: float = 1e5
    damping: float = 100.0
    law: str = "linear"
    clamp: bool = False
    hc_exponent: float = 1.5
    hc_damping: float = 1.0
    tangential_stiffness: float = 1e4
    tangential_damping: float = 30.0

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
    stat_names = ("sliding", "min_normal_force")
    stores_energy = True  # the stiction springs give back what they stored

    def __init__(self, **settings):
        super().__init__(**settings)
        s = self.settings
        # The kernel's settings in one array (one argument to type-check per call); the last
        # is the step dt (set by ``compute``).
        self._params = np.array([s.stiffness, s.damping, float(s.law == "linear"),
                                 float(s.clamp), s.hc_exponent, s.hc_damping,
                                 s.tangential_stiffness, s.tangential_damping, 0.0])
        self._table: np.ndarray | None = None  # the elongations by id (``reset``)

    def check_inertia(self, dt: float, G: np.ndarray) -> None:
        """Refuse a linear law that semi-implicit Euler cannot integrate stably on this robot.

        With every point in contact, the normal gaps follow ``φ̈ = −G_nn (k_p φ + k_v φ̇)`` (and
        the tangential springs ``G_tt (k_t, d_t)`` likewise): each mode of G with eigenvalue λ
        (the inverse of its effective mass) is the oscillator of ``penalty_fl``'s check with
        ``(λ k, λ c)``, stable iff ``dt·λc < 2`` and ``dt²·λk < 4 − 2 dt·λc``. λ is the largest
        eigenvalue of the normal (tangential) block of G at the robot's configuration (the
        lightest mode; a configuration change moves it little). Hunt–Crossley's stiffness
        depends on the depth and is not checked.

        Raises:
            ConfigError: naming the settings, their values and the bound.
        """
        s = self.settings
        if G.size == 0:
            return
        laws = [("stiffness", "damping", s.stiffness, s.damping, G[2::3, 2::3])]
        tangential = np.delete(np.delete(G, np.s_[2::3], 0), np.s_[2::3], 1)
        laws.append(("tangential_stiffness", "tangential_damping", s.tangential_stiffness,
                     s.tangential_damping, tangential))
        if s.law != "linear":
            laws = laws[1:]
        for k_name, c_name, k, c, block in laws:
            lam = float(np.linalg.eigvalsh(block).max())
            if dt * c * lam >= 2.0 or dt * dt * k * lam >= 4.0 - 2.0 * dt * c * lam:
                raise ConfigError(
                    f"spring_damper unstable on this robot: with dt = {dt:g} s and its lightest "
                    f"contact mode (1/λ = {1.0 / lam:.3g} kg), spring_damper.{c_name} = {c:g} "
                    f"and spring_damper.{k_name} = {k:g} give dt·λ·{c_name} = "
                    f"{dt * c * lam:.3g} (must be < 2) and dt²·λ·{k_name} = "
                    f"{dt * dt * k * lam:.3g} (must be < 4 − 2·dt·λ·{c_name} = "
                    f"{4.0 - 2.0 * dt * c * lam:.3g}); use a smaller dt, {k_name} or {c_name}")

    def reset(self, n_points: int) -> None:
        self._elongation = np.full((n_points, 2), np.nan)  # NaN: not in contact, no anchor
        # Elongations by contact id (ContactState.ids): rows (id, e₁, e₂) sorted by id, flat.
        self._table = np.zeros(0)

    def compute(self, state: ContactState, commit: bool = True) -> ContactResult:
        """Eq. 2 (or Hunt–Crossley) and the stiction spring by the compiled ``spring_step``;
        elongations are kept per contact id, so they follow a point whatever its position in
        the arrays."""
        if self._table is None:
            self.reset(state.n_points)
        self._params[8] = state.dt
        phi = state.phi
        m = len(phi)
        # outputs allocated here and filled by the kernel (cheaper than arrays it returns)
        out = np.empty(6 * m + 2)
        active = np.empty(m, dtype=bool)
        k = spring_step(state.ids, self._table, phi, state.vc, state.p_tangent, state.mu,
                        self._params, out, active)
        n3 = 3 * m
        if commit:
            self._table = out[n3 + 2:n3 + 2 + 3 * k]
        return ContactResult(out[:n3].reshape(m, 3), active,
                             Stats(self.stat_names, out[n3:n3 + 2]))

    def compute_reference(self, state: ContactState, commit: bool = True) -> ContactResult:
        """The numpy implementation (elongations by position in the arrays): the reference the
        compiled kernel is tested against."""
        s = self.settings
        m = state.n_points
        if getattr(self, "_elongation", None) is None or len(self._elongation) != m:
            self.reset(m)
        active = state.phi < 0.0
        f = np.zeros((m, 3))
        idx = np.flatnonzero(active)
        elongation = self._elongation.copy()
        elongation[~active] = np.nan
        if idx.size:
            delta, delta_dot = -state.phi[idx], -state.vc[idx, 2]
            if s.law == "linear":
                fn = s.stiffness * delta + s.damping * delta_dot
            else:
                fn = s.stiffness * delta ** s.hc_exponent * (1.0 + s.hc_damping * delta_dot)
            if s.clamp:
                fn = np.maximum(fn, 0.0)
            vt = state.vc[idx, :2]
            e = elongation[idx] + state.dt * vt
            e[np.isnan(e[:, 0])] = 0.0  # touch-down: anchor where the point entered
            ft = -s.tangential_stiffness * e - s.tangential_damping * vt
            limit = state.mu[idx] * np.maximum(fn, 0.0)
            norm = np.sqrt((ft * ft).sum(axis=1))
            slip = norm > limit
            if slip.any():
                ft[slip] *= (limit[slip] / np.where(norm[slip] > 0, norm[slip], 1.0))[:, None]
                e[slip] = -(ft[slip] + s.tangential_damping * vt[slip]) / s.tangential_stiffness
            elongation[idx] = e
            f[idx, :2], f[idx, 2] = ft, fn
            stats = {"sliding": int(slip.sum()), "min_normal_force": float(fn.min())}
        else:
            stats = {"sliding": 0, "min_normal_force": 0.0}
        if commit:
            self._elongation = elongation
        return ContactResult(f, active, stats)


