"""A joint PD hold: the simple controller of the ``drop``/``step`` scenarios and of the
benchmark's MuJoCo twin, and the safe command of the simulator node (``ros.scheduling``).

``τ = τ_g + K_p (q_ref − q_a) − K_d v_a`` on the actuated joints, with K_d capped by each
joint's own inertia (``K_d ≤ kd_cap · m_j / dt``, m_j = 1/(M⁻¹)_jj at q_ref: explicit
integration of the damping is stable below 2) and τ_g the gravity torques that the feet's
contact forces do not carry (least squares on ``Sᵀτ + J_cᵀ f = g`` at q_ref), or none.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from biped_contact_sim.contact.base import positive
from biped_contact_sim.control.base import check_measurement
from biped_contact_sim.errors import ConfigError
from biped_contact_sim.robot import RobotModel


@dataclass(frozen=True)
class JointPDSettings:
    """Joint PD hold: ``τ = τ_g + K_p (q_ref − q) − K_d v`` on the actuated joints.

    Attributes:
        kp: joint stiffness K_p [N·m/rad].
        kd: joint damping K_d [N·m·s/rad], before the cap.
        kd_cap: K_d ≤ kd_cap · m_j / dt (explicit stability needs < 2).
        gravity_compensation: add τ_g.
    """

    kp: float = 300.0
    kd: float = 30.0
    kd_cap: float = 1.0
    gravity_compensation: bool = True

    def __post_init__(self):
        for name in ("kp", "kd", "kd_cap"):
            positive(f"controller.{name}", getattr(self, name), allow_zero=name != "kd_cap")
        if not isinstance(self.gravity_compensation, bool):
            raise ConfigError(f"controller.gravity_compensation = "
                              f"{self.gravity_compensation!r} must be true or false")


class JointPD:
    """Holds the actuated joints at q_ref with inertia-scaled PD gains (module docstring)."""

    def __init__(self, robot: RobotModel, q_ref: np.ndarray, settings: JointPDSettings,
                 dt: float):
        data = robot.create_data()
        Minv = pin.computeMinverse(robot.model, data, q_ref)
        m_j = 1.0 / np.diag(Minv)[robot.v_idx]  # the diagonal is filled by computeMinverse
        self.kp = np.full(robot.n_joints, settings.kp)
        self.kd = np.minimum(settings.kd, settings.kd_cap * m_j / dt)
        self.q_ref = q_ref[robot.q_idx].copy()
        self.tau_g = np.zeros(robot.n_joints)
        if settings.gravity_compensation and robot.n_points:
            g = pin.computeGeneralizedGravity(robot.model, data, q_ref)
            J = robot.terms(data, q_ref, np.zeros(robot.nv)).J
            A = np.hstack([robot.S.T, J.T])  # [Sᵀ J_cᵀ] [τ; f] = g
            self.tau_g = np.linalg.lstsq(A, g, rcond=None)[0][:robot.n_joints]
        self.robot = robot

    def __call__(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """τ for the measured state; InputError naming the field if q or v has the wrong
        length or is not finite, as every controller's entry (``check_measurement``)."""
        check_measurement(t, q, v, self.robot.nq, self.robot.nv)
        return (self.tau_g + self.kp * (self.q_ref - q[self.robot.q_idx])
                - self.kd * v[self.robot.v_idx])
