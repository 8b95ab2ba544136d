"""The root link's pose and twist, from a configuration and back (the odometry conventions).

``nav_msgs/Odometry`` gives the pose of the base in the world and its twist in the base frame;
pinocchio's root joint holds the same thing in the conventions of ``RobotConfig.base``. These
functions convert between the two with pinocchio's kinematics only: the trace, the simulator
node and the plots read the base from a state, the controller node (or a state estimator on
hardware) the state from an odometry.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pinocchio as pin

from biped_contact_sim.errors import ConfigError


def base_motion(model: pin.Model, data: pin.Data, q: np.ndarray,
                v: np.ndarray) -> tuple[pin.SE3, pin.Motion]:
    """Placement of the root link in the world and its velocity in its own frame.

    The root joint's frame is the root link's frame, and its local velocity is the body-frame
    twist that ``nav_msgs/Odometry`` wants, for every base type alike (free-flyer, planar,
    translation).

    Args:
        model: The robot's pinocchio model.
        data: A ``Data`` of that model (its kinematics are overwritten).
        q: Configuration.
        v: Velocity.

    Returns:
        ``(oMb, v_b)``: world placement and local spatial velocity of the root link (views into
        ``data``, valid until its next use).
    """
    pin.forwardKinematics(model, data, q, v)
    return data.oMi[1], data.v[1]


def base_pose_twist(model: pin.Model, data: pin.Data, q: np.ndarray, v: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """World position and quaternion (x, y, z, w) of the root link, and its body-frame twist.

    :func:`base_motion` as plain arrays (a free flyer's are read off ``q`` and ``v``).

    Returns:
        ``(position, quat_xyzw, linear, angular)``.
    """
    if model.joints[1].nq == 7 and model.joints[1].nv == 6:
        # a free flyer's q is (p, x y z w) and its v the body twist: read, no kinematics
        return q[:3].copy(), q[3:7].copy(), v[:3].copy(), v[3:6].copy()
    oMb, vb = base_motion(model, data, q, v)
    quat = pin.Quaternion(oMb.rotation).coeffs()
    return oMb.translation.copy(), np.array(quat), vb.linear.copy(), vb.angular.copy()


def base_state_from_odometry(base: str, position: Sequence[float], quat_xyzw: Sequence[float],
                             linear: Sequence[float], angular: Sequence[float]
                             ) -> tuple[np.ndarray, np.ndarray]:
    """Root-joint configuration and velocity (pinocchio conventions) from an odometry.

    ``nav_msgs/Odometry`` gives the pose of the base in the world and the twist in the base
    frame (child frame); pinocchio's conventions per ``RobotConfig.base``:

    * ``free_flyer``: q = (p, quaternion x y z w), v = (linear, angular) in the base frame —
      the odometry twist as it is;
    * ``planar_xz``: q = (x, z, pitch) with R = R_y(pitch), pitch = atan2(R₀₂, R₀₀);
      v = (ẋ, ż, pitch rate) with (ẋ, ·, ż) = R · linear (world velocity of the origin) and
      pitch rate = angular_y; out-of-plane components are dropped;
    * ``translation``: q = p, v = linear (no rotation: base and world axes coincide).

    Raises:
        ValueError: non-finite values or a quaternion that is not unit.
        ConfigError: an unknown base type.
    """
    values = np.concatenate([np.asarray(part, dtype=float).reshape(-1)
                             for part in (position, quat_xyzw, linear, angular)])
    if values.shape != (13,):
        raise ValueError("odometry needs 3 position, 4 quaternion, 3 + 3 twist values")
    # NaN or ±Inf anywhere makes the sum so (which may also overflow: then look closer)
    if not math.isfinite(values.sum()) and not np.all(np.isfinite(values)):
        raise ValueError("odometry contains NaN or Inf")
    norm = math.sqrt(values[3:7] @ values[3:7])
    if abs(norm - 1.0) > 1e-3:
        raise ValueError(f"odometry orientation is not a unit quaternion (norm {norm:.6g})")
    if base == "free_flyer":
        values[3:7] /= norm
        return values[:7], values[7:]
    p = values[0:3]
    quat = values[3:7] / norm
    lin, ang = values[7:10], values[10:13]
    R = pin.Quaternion(quat[3], quat[0], quat[1], quat[2]).toRotationMatrix()
    if base == "planar_xz":
        pitch = math.atan2(R[0, 2], R[0, 0])
        world = R @ lin
        return np.array([p[0], p[2], pitch]), np.array([world[0], world[2], ang[1]])
    if base == "translation":
        return p.copy(), R @ lin
    raise ConfigError(f"Unknown base type {base!r}")
