"""Operational tasks of contact bodies outside the support (``wbc`` step 3): pose tasks of
swing feet and reaching hands, and the unified force/position task of a body pressing on a
surface (Sentis et al. §V-A; Khatib's unified motion/force control).

* pose task at the body frame origin o (LOCAL_WORLD_ALIGNED), PD with feed-forward (eq. 59):

      ẍ_des = [a_ref + k_d (v_ref − ṗ_o) + k_p (p_ref − p_o);
               α_ref + k_d (ω_ref − ω) + k_p log(R_ref Rᵀ)],

  rows J_o (6 × nv) and ẍ_des − J̇_o v; without a target it only damps the body's motion;
* unified force/position task on a surface of unit normal n (pointing out of the surface):
  the motion rows along the two tangents t_1, t_2 and the three orientation rows keep the
  pose task's, the row along n becomes a force row: the operational force −F n on the body,
  F the commanded reaction (PI on the measured one, ``wbc``).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from biped_contact_sim.control.body_tasks_kernels import point_rows

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
_ZERO3 = np.zeros(3)


def target_rotation(target) -> np.ndarray:
    """R_ref of a ``FootTarget``: its ``rotation``, else level with its yaw."""
    if target.rotation is None:
        return pin.rpy.rpyToMatrix(0.0, 0.0, float(target.yaw))
    return np.asarray(target.rotation, float)


def pose_task_rows(model, data, frame_id: int, v: np.ndarray, target, kp: float, kd: float,
                   J_out: np.ndarray, e_out: np.ndarray) -> None:
    """J_out (6, nv) ← J_o, e_out (6,) ← ẍ_des − J̇_o v of a pose task (module docstring).

    Needs ``data`` after computeJointJacobians, forwardKinematics(q, v, 0) and the frame
    placements.
    """
    drift = np.empty(6)
    point_rows(pin.getFrameJacobian(model, data, frame_id, LWA),
               pin.getFrameClassicalAcceleration(model, data, frame_id, LWA).vector, v, _ZERO3,
               J_out, drift)
    w = pin.getFrameVelocity(model, data, frame_id, LWA).vector
    if target is None:
        e_out[:] = -kd * w
    else:
        oMs = data.oMf[frame_id]
        e_rot = pin.log3(np.dot(target_rotation(target), oMs.rotation.T))
        e_out[:3] = target.a + kd * (target.v - w[:3]) + kp * (target.p - oMs.translation)
        e_out[3:] = kp * e_rot - kd * w[3:]
        if target.omega is not None:
            e_out[3:] += kd * np.asarray(target.omega, float)
        if target.alpha is not None:
            e_out[3:] += target.alpha
    e_out -= drift


def tangents(n_hat: np.ndarray) -> np.ndarray:
    """(2, 3) orthonormal tangent directions t_1, t_2 of a surface with unit normal n_hat."""
    a = np.array([1.0, 0.0, 0.0]) if abs(n_hat[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    t1 = a - np.dot(a, n_hat) * n_hat
    t1 /= np.sqrt(np.dot(t1, t1))
    return np.array([t1, np.cross(n_hat, t1)])


__all__ = ["pose_task_rows", "tangents", "target_rotation"]
