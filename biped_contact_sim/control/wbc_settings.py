"""Settings of the whole-body controller ``wbc`` (docs/methods.md §4.2) and their bounds.

Discrete-time bounds (checked by the controller, dt = control period): a PD task on a double
integrator under semi-implicit Euler is stable iff 0 < kd·dt < 2 and kp·dt² + 2·kd·dt < 4
(Jury test on z² − (2 − kp dt² − kd dt) z + 1 − kd dt); a PI on a measured force acts on an
algebraic plant through the one-step-old measurement, e(k) = (1 − kp − ki dt) e(k−1) + kp e(k−2),
stable iff |kp| < 1 and 0 ≤ ki dt, 2 kp + ki dt < 2.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from biped_contact_sim.errors import ConfigError


@dataclass(frozen=True)
class WBCSettings:
    """Settings of the whole-body controller (gains in SI units, per axis).

    Attributes:
        kp_com, kd_com: CoM PD gains (eq. 59) [1/s², 1/s]. Soft by default (ω = 5 rad/s,
            ζ = 1): a stiffer CoM moves the ZMP more under a push (ZMP shift ≈ z_G c̈/g).
        kp_foot, kd_foot: pose PD gains of the contact bodies outside the support (swing feet,
            reaching hands) [1/s², 1/s].
        kp_base, kd_base: base (pelvis) orientation PD gains, upright with q0's yaw; kp_base = 0
            removes the task [1/s², 1/s].
        kp_torso, kd_torso: torso orientation PD gains (upright, the base's heading; the
            ``torso`` link; after the base task) [1/s², 1/s]; kp_torso = 0 (default) removes
            the task.
        kp_posture, kd_posture: joint posture PD gains [1/s², 1/s].
        kp_int, ki_int: internal-force PI feedback on the measured wrenches (§IV-E) [-, 1/s].
        int_limit: clamp of each component of the internal-force integral [N or N·m].
        min_normal_force: a stance foot with less measured normal force counts as lost (the
            integral is reset, the feedback paused) [N].
        internal_forces: apply the internal-force controller (eq. 42); if False, the internal
            forces are whatever the task torques produce (for comparisons).
        kd_am: damping of the centroidal angular momentum about the line between the feet
            CoPs (double support; keeps the ZMP on that line, App. B) [1/s].
        am_task: the angular-momentum task of double support (``kd_am``); without it the CoP
            coordinate along the line between the feet is left to the dynamics. A reaching arm
            changes the centroidal angular momentum, which the task then cancels by pitching
            the torso the other way.
        load_share: add the load-share tension (module docstring, step 4; our addition).
        rcond: relative cut-off of the rank of Φ* (its pivoted Cholesky factor) and of the
            support's Λ_s⁻¹ = J_s A⁻¹ J_sᵀ (a singular support takes the pseudo-inverse).
        task_damping: relative floor of the damped solves of the task levels and of the
            internal-force torques (``linalg.damped_factors_reference``): a level whose Ĵ_k N Ĵ_kᵀ
            has an eigenvalue below ``task_damping`` times the task's scale (its largest squared
            row norm) solves that direction with a capped gain; exact above it. Continuous in
            the data, unlike the truncated pseudo-inverse it replaces.
        kp_force, ki_force: PI feedback of a unified force/position task on the body's
            measured normal force (step 3) [-, 1/s].
        add_force, release_force, unload_time, transition_time: contact transitions
            (``control.contact_set``): a requested body joins the support at ``add_force``
            measured normal force [N] (0: at once); a dropped body is unloaded over
            ``unload_time`` [s] (0: dropped at once) and leaves below ``release_force`` [N];
            after a change the internal-force reference ramps from the measured internal
            forces over ``transition_time`` [s].
        add_cop_fraction, add_hold: a requested body also needs its measured CoP within
            ``add_cop_fraction`` of its contact surface's half-extents (flat, not on an edge),
            both conditions for ``add_hold`` [s] in a row (``control.contact_set``).
        startup_time: the start-up blend (``control.startup``): after ``reset``, on a robot
            more than 1 cm (CoM) or 1° (base) from its reference, the CoM, posture and base
            targets and the commanded CoPs start from the measured state and reach the
            reference's over ``startup_time`` [s] (0: the reference at once).
    """

    kp_com: float = 25.0
    kd_com: float = 10.0
    kp_foot: float = 400.0
    kd_foot: float = 40.0
    kp_base: float = 100.0
    kd_base: float = 20.0
    kp_torso: float = 0.0
    kd_torso: float = 20.0
    kp_posture: float = 100.0
    kd_posture: float = 20.0
    kp_int: float = 0.0
    ki_int: float = 20.0
    int_limit: float = 50.0
    min_normal_force: float = 5.0
    internal_forces: bool = True
    kd_am: float = 5.0
    am_task: bool = True
    load_share: bool = True
    rcond: float = 1e-8
    task_damping: float = 1e-6
    kp_force: float = 0.0
    ki_force: float = 20.0
    add_force: float = 0.0
    release_force: float = 5.0
    unload_time: float = 0.0
    transition_time: float = 0.0
    add_cop_fraction: float = 1.0
    add_hold: float = 0.0
    startup_time: float = 1.0

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("internal_forces", "load_share", "am_task"):
                if not isinstance(value, bool):
                    raise ConfigError(f"{f.name} = {value!r} must be true or false")
                continue
            if not (isinstance(value, (int, float)) and np.isfinite(value)):
                raise ConfigError(f"{f.name} = {value!r} must be a finite number")
        if self.kp_base < 0 or self.kd_base < 0:
            raise ConfigError(f"kp_base, kd_base = {self.kp_base!r}, {self.kd_base!r} must be "
                              ">= 0")
        if self.kp_torso < 0 or self.kd_torso < 0:
            raise ConfigError(f"kp_torso, kd_torso = {self.kp_torso!r}, {self.kd_torso!r} must "
                              "be >= 0")
        for name in ("kp_com", "kd_com", "kp_foot", "kd_foot", "kp_posture", "kd_posture",
                     "int_limit", "min_normal_force", "kd_am", "rcond", "task_damping"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} = {getattr(self, name)!r} must be > 0")
        if not 0.0 <= self.kp_int < 1.0:
            raise ConfigError(f"kp_int = {self.kp_int!r} must be in [0, 1) (one-step-delayed "
                              "feedback on an algebraic plant)")
        if self.ki_int < 0:
            raise ConfigError(f"ki_int = {self.ki_int!r} must be >= 0")
        if not 0.0 <= self.kp_force < 1.0:
            raise ConfigError(f"kp_force = {self.kp_force!r} must be in [0, 1) (one-step-"
                              "delayed feedback on an algebraic plant)")
        if not 0.0 < self.add_cop_fraction <= 1.0:
            raise ConfigError(f"add_cop_fraction = {self.add_cop_fraction!r} must be in (0, 1]")
        for name in ("ki_force", "add_force", "release_force", "unload_time",
                     "transition_time", "add_hold", "startup_time"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} = {getattr(self, name)!r} must be >= 0")


def check_pd(kp: float, kd: float, dt: float, kp_name: str, kd_name: str) -> None:
    """Jury bounds of a PD-controlled double integrator under semi-implicit Euler.

    Raises:
        ConfigError: naming the gain and the bound.
    """
    if kd * dt >= 2.0:
        raise ConfigError(f"{kd_name} = {kd!r} must be < 2/dt = {2.0 / dt:g} (dt = {dt:g} s)")
    if kp * dt * dt + 2.0 * kd * dt >= 4.0:
        raise ConfigError(f"{kp_name} = {kp!r} must be < (4 − 2·{kd_name}·dt)/dt² = "
                          f"{(4.0 - 2.0 * kd * dt) / dt ** 2:g} (dt = {dt:g} s)")


def check_pi(kp: float, ki: float, dt: float, kp_name: str, ki_name: str) -> None:
    """Bound of a PI on an algebraic plant with a one-step-old measurement.

    Raises:
        ConfigError: naming the gain and the bound.
    """
    if 2.0 * kp + ki * dt >= 2.0:
        raise ConfigError(f"{ki_name} = {ki!r} must be < (2 − 2·{kp_name})/dt = "
                          f"{(2.0 - 2.0 * kp) / dt:g} (dt = {dt:g} s)")


__all__ = ["WBCSettings", "check_pd", "check_pi"]
