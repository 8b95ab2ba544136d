"""Standing behaviours: ``stand`` (hold still) and ``sway`` (Sentis et al. Figs. 6 and 8).

Both keep both feet in flat contact (double support) where q0 put them, the CoPs at the
commanded points of the soles (default: the sole centres) and the posture at q0's joints. The
support is the contact bodies on the ground at q0 (a humanoid's hands are not).

* ``stand``: CoM held over the middle of the two sole centres at q0's CoM height; internal
  forces zero (Reference.internal = 0: no tension, CoPs at the anchors, no normal moments).
* ``sway``: the paper's compliant-behaviour experiments on our biped: the CoM moves vertically
  (Fig. 6: "the CoM is commanded to follow a sinusoidal vertical trajectory"),

      z(t) = z₀ − A (1 − cos ωt),  ω = 2π/period,

  and the internal tension between the feet tracks t(t) = T sin(2πt/tension_period) (Fig. 8:
  "the internal tension ... is commanded to track a sinusoidal trajectory; all other tensions
  and normal moments are commanded to become null").
  Defaults A = 2 cm, period 2 s (0.5 Hz), T = 20 N at 0.5 Hz: the CoM starts at rest (cosine
  form, so the reference has no velocity step at t = 0) and only goes *down* from q0 (to
  z₀ − 2A), keeping the knees away from the straight-leg singularity (q0 has 0.6 rad of knee
  flexion, only 3 cm of pelvis travel to full extension); the peak CoM acceleration A ω² =
  0.2 m/s² is 2 % of g, so the foot normal forces vary by ±2 % and the friction need of a
  20 N tension (10 N per foot against ~196 N normal) stays far inside μ = 0.8.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pinocchio as pin

from biped_contact_sim.control.base import Behavior, Reference
from biped_contact_sim.errors import ConfigError


def _positive(name: str, value: Any, allow_zero: bool = False) -> float:
    if not isinstance(value, (int, float)) or not np.isfinite(value) \
            or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ConfigError(f"{name} = {value!r} must be {bound}")
    return float(value)


def _frozen(x: np.ndarray) -> np.ndarray:
    """A read-only copy (shared by the references of every step)."""
    out = np.array(x, float)
    out.flags.writeable = False
    return out


class _DoubleSupport(Behavior):
    """Common part: footholds, sole centres, CoM and posture from q0."""

    PARAMS: ClassVar[dict[str, Any]] = {}

    def __init__(self, robot, q0, **params: Any):
        unknown = sorted(set(params) - set(self.PARAMS))
        if unknown:
            raise ConfigError(f"Unknown parameter(s) {', '.join(map(repr, unknown))} for "
                              f"behavior {self.name!r}. Accepted: "
                              + ", ".join(sorted(self.PARAMS)))
        self.params = {**self.PARAMS, **params}
        self.robot = robot
        q0 = np.asarray(q0, float)
        if q0.shape != (robot.nq,):
            raise ConfigError(f"q0 has shape {q0.shape}; expected ({robot.nq},)")
        self.q0 = q0.copy()
        self.duration = _positive("duration", self.params["duration"])
        data = robot.create_data()
        pin.framesForwardKinematics(robot.model, data, q0)
        # The support: the contact bodies on the ground at q0 (the feet; a humanoid's hands
        # are contact bodies too, but not in support while standing).
        lowest = min(data.oMf[b.frame_id].translation[2] for b in robot.contact_bodies)
        support = [b for b in robot.contact_bodies
                   if data.oMf[b.frame_id].translation[2] < lowest + 1e-3]
        self.stance = tuple(b.name for b in support)
        self.cop = {}
        centres = []
        for b in support:
            centre = 0.5 * (b.offsets.min(axis=0) + b.offsets.max(axis=0))
            cop = centre[:2].copy()
            for k, key in enumerate(("cop_x", "cop_y")):
                if self.params[key] is not None:
                    if not isinstance(self.params[key], (int, float)):
                        raise ConfigError(f"{key} = {self.params[key]!r} must be a number")
                    cop[k] = float(self.params[key])
            lo, hi = b.offsets.min(axis=0)[:2], b.offsets.max(axis=0)[:2]
            if np.any(cop < lo) or np.any(cop > hi):
                raise ConfigError(f"cop_x, cop_y = {tuple(cop)} must lie in the sole "
                                  f"[{lo[0]}, {hi[0]}] × [{lo[1]}, {hi[1]}] m")
            self.cop[b.name] = cop
            oMs = data.oMf[b.frame_id]
            centres.append(oMs.translation + oMs.rotation @ np.array([cop[0], cop[1], 0.0]))
        com0 = pin.centerOfMass(robot.model, data, q0)
        self.com0 = np.array([*np.mean(centres, axis=0)[:2], com0[2]])
        if self.params["com_height"] is not None:
            self.com0[2] = _positive("com_height", self.params["com_height"])
        self.q_joints = _frozen(q0[robot.q_idx])
        self._cop = {k: _frozen(c) for k, c in self.cop.items()}
        self._com0, self._zero3, self._zero6 = _frozen(self.com0), _frozen(np.zeros(3)), \
            _frozen(np.zeros(6))

    def _reference(self, com, com_vel, com_acc, internal) -> Reference:
        # A new Reference every call (a caller may replace its fields), its constant arrays
        # shared and read-only: a control step allocates no copies of them.
        return Reference(stance=self.stance, com=com, com_vel=com_vel, com_acc=com_acc,
                         q_joints=self.q_joints, internal=internal, cop=dict(self._cop))


class StandBehavior(_DoubleSupport):
    """Stand still in double support (module docstring).

    Params:
        duration: scenario length [s] (default 5).
        com_height: CoM height [m] (default: q0's).
        cop_x, cop_y: commanded CoP in each sole frame [m] (default: the sole centre).
    """

    name = "stand"
    PARAMS: ClassVar[dict[str, Any]] = {"duration": 5.0, "com_height": None, "cop_x": None,
                                        "cop_y": None}

    def reference(self, t: float) -> Reference:
        """Constant references: CoM over the feet centre, zero internal forces."""
        return self._reference(self._com0, self._zero3, self._zero3, self._zero6)


class SwayBehavior(_DoubleSupport):
    """Vertical CoM sway with a sinusoidal internal tension (module docstring).

    Params:
        duration: scenario length [s] (default 10).
        amplitude: A, the CoM goes from z₀ down to z₀ − 2A [m] (default 0.02).
        period: CoM period [s] (default 2).
        tension_amplitude: T [N] (default 20).
        tension_period: tension period [s] (default 2).
        com_height, cop_x, cop_y: as for ``stand``.
    """

    name = "sway"
    PARAMS: ClassVar[dict[str, Any]] = {
        "duration": 10.0, "amplitude": 0.02, "period": 2.0, "tension_amplitude": 20.0,
        "tension_period": 2.0, "com_height": None, "cop_x": None, "cop_y": None}

    def __init__(self, robot, q0, **params: Any):
        super().__init__(robot, q0, **params)
        self.amplitude = _positive("amplitude", self.params["amplitude"], allow_zero=True)
        if self.amplitude > 0.05:
            raise ConfigError(f"amplitude = {self.amplitude!r} must be <= 0.05 m (the CoM "
                              "goes down by 2·amplitude)")
        self.period = _positive("period", self.params["period"])
        self.tension_amplitude = _positive("tension_amplitude",
                                           self.params["tension_amplitude"], allow_zero=True)
        self.tension_period = _positive("tension_period", self.params["tension_period"])

    def tension(self, t: float) -> float:
        """Commanded tension t(t) = T sin(2πt/tension_period) [N]."""
        return self.tension_amplitude * np.sin(2.0 * np.pi * t / self.tension_period)

    def reference(self, t: float) -> Reference:
        """CoM z₀ − A(1 − cos ωt) with its derivatives; internal = [t(t), 0, 0, 0, 0, 0]."""
        w = 2.0 * np.pi / self.period
        A = self.amplitude
        com = self.com0.copy()
        com[2] -= A * (1.0 - np.cos(w * t))
        vel = np.array([0.0, 0.0, -A * w * np.sin(w * t)])
        acc = np.array([0.0, 0.0, -A * w * w * np.cos(w * t)])
        internal = np.zeros(6)
        internal[0] = self.tension(t)
        return self._reference(com, vel, acc, internal)


__all__ = ["StandBehavior", "SwayBehavior"]
