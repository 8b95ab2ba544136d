"""Topic names, frames, stamps and the message conversions the nodes add to record/messages.

Topics (docs/architecture.md "Topics", README "Topic contract"): relative names, so a namespace
moves them all; the same names as the MCAP trace of ``biped-sim run`` (a test checks they
agree). Conversions here are the ROS-only ones: integer-nanosecond stamps, the
``diagnostic_msgs``/``std_msgs/Float64MultiArray`` fields (in the plain-dict style of
:mod:`biped_contact_sim.record.messages`), and odometry ↔ pinocchio root-joint state.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pinocchio as pin

from biped_contact_sim.errors import ConfigError
from biped_contact_sim.record import messages
from biped_contact_sim.record.recorder import base_motion

# names as the MCAP trace of ``biped-sim run`` (record/recorder.py; a test checks they agree).
JOINT_TORQUE_CMD = "joint_torque_cmd"
JOINT_STATES = "joint_states"
ODOM = "odom"
CONTACT_WRENCH = "contact_wrench/{foot}"
COP = "cop/{foot}"
ZMP = "zmp"
CONTACT_MARKERS = "contact_markers"
CLOCK = "/clock"
TF = "/tf"
DIAGNOSTICS = "/diagnostics"  # the ROS convention (diagnostic_aggregator, rqt_robot_monitor)
# Controller diagnostics, private to the controller node (``~/com`` → /controller_node/com).
COM = "~/com"
COM_REF = "~/com_ref"
INTERNAL_FORCES = "~/internal_forces"
INTERNAL_FORCES_REF = "~/internal_forces_ref"

WORLD_FRAME = "world"
# Arrow length of a force equal to the robot's weight in contact_markers [m] (as the recorder).
WEIGHT_ARROW_LENGTH = 0.5

# diagnostic_msgs/DiagnosticStatus levels (a ``byte`` field: rclpy wants ``bytes`` of length 1).
DIAG_OK, DIAG_WARN, DIAG_ERROR, DIAG_STALE = 0, 1, 2, 3
SIM_STATUS_NAME = "biped_contact_sim: simulator"
CONTROLLER_STATUS_NAME = "biped_contact_sim: controller"

_NS = 1_000_000_000


def stamp_ns(t: float) -> int:
    """Nanoseconds of ``messages.stamp(t)`` (the stamp a message published at t carries)."""
    s = messages.stamp(t)
    return s["sec"] * _NS + s["nanosec"]


def stamp_fields(ns: int) -> dict[str, int]:
    """``builtin_interfaces/Time`` fields of an integer nanosecond time (exact)."""
    return {"sec": int(ns // _NS), "nanosec": int(ns % _NS)}


def ns_from_stamp(sec: int, nanosec: int) -> int:
    """Integer nanoseconds of a ``builtin_interfaces/Time``."""
    return int(sec) * _NS + int(nanosec)


def base_pose_twist(model: pin.Model, data: pin.Data, q: np.ndarray, v: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """World position and quaternion (x, y, z, w) of the root link, and its body-frame twist.

    ``recorder.base_motion`` (the same conversion the trace uses) as plain arrays.

    Returns:
        ``(position, quat_xyzw, linear, angular)``.
    """
    if model.joints[1].nq == 7 and model.joints[1].nv == 6:
        # a free flyer's q is (p, x y z w) and its v the body twist: read, no kinematics
        return q[:3].copy(), q[3:7].copy(), v[:3].copy(), v[3:6].copy()
    oMb, vb = base_motion(model, data, q, v)
    quat = pin.Quaternion(oMb.rotation).coeffs()
    return oMb.translation.copy(), np.array(quat), vb.linear.copy(), vb.angular.copy()


def format_value(value: Any) -> str:
    """A diagnostic value as text: numbers with 6 significant digits, arrays comma-separated."""
    if value is None:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.6g}"
    if isinstance(value, str):
        return value
    if isinstance(value, np.ndarray) or (isinstance(value, (list, tuple)) and all(
            isinstance(v, (int, float, np.number)) for v in value)):
        return ", ".join(f"{float(v):.6g}" for v in np.ravel(np.asarray(value, dtype=float)))
    if isinstance(value, (list, tuple)):
        return ", ".join(format_value(v) for v in value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {format_value(v)}" for k, v in value.items())
    return str(value)


def diagnostic_status(level: int, name: str, message: str, hardware_id: str,
                      values: Mapping[str, Any]) -> dict[str, Any]:
    """``diagnostic_msgs/DiagnosticStatus`` fields.

    ``level`` is a ROS ``byte``: rclpy wants ``bytes`` of length 1 (``b"\\x00"`` = OK), not an
    int. Values become ``KeyValue`` pairs formatted by :func:`format_value`.
    """
    if level not in (DIAG_OK, DIAG_WARN, DIAG_ERROR, DIAG_STALE):
        raise ValueError(f"level = {level!r} must be 0 (OK), 1 (WARN), 2 (ERROR) or 3 (STALE)")
    return {
        "level": bytes([level]),
        "name": str(name),
        "message": str(message),
        "hardware_id": str(hardware_id),
        "values": [{"key": str(k), "value": format_value(v)} for k, v in values.items()],
    }


def diagnostic_array(t: float, statuses: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``diagnostic_msgs/DiagnosticArray`` fields (empty ``frame_id``)."""
    return {"header": messages.header(t, ""), "status": list(statuses)}


def float64_multi_array(values: Any, label: str) -> dict[str, Any]:
    """``std_msgs/Float64MultiArray`` fields: one dimension ``label`` of size len(values)."""
    data = [float(v) for v in np.ravel(np.asarray(values, dtype=float))]
    return {"layout": {"dim": [{"label": str(label), "size": len(data), "stride": len(data)}],
                       "data_offset": 0},
            "data": data}


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
        InputError-like ``ValueError``: non-finite values or a quaternion that is not unit.
    """
    values = [float(x) for part in (position, quat_xyzw, linear, angular) for x in part]
    if len(values) != 13:
        raise ValueError("odometry needs 3 position, 4 quaternion, 3 + 3 twist values")
    if not all(map(math.isfinite, values)):
        raise ValueError("odometry contains NaN or Inf")
    norm = math.sqrt(values[3] ** 2 + values[4] ** 2 + values[5] ** 2 + values[6] ** 2)
    if abs(norm - 1.0) > 1e-3:
        raise ValueError(f"odometry orientation is not a unit quaternion (norm {norm:.6g})")
    p = np.array(values[0:3])
    quat = np.array(values[3:7]) / norm
    lin, ang = np.array(values[7:10]), np.array(values[10:13])
    if base == "free_flyer":
        return np.concatenate([p, quat]), np.concatenate([lin, ang])
    R = pin.Quaternion(quat[3], quat[0], quat[1], quat[2]).toRotationMatrix()
    if base == "planar_xz":
        pitch = math.atan2(R[0, 2], R[0, 0])
        world = R @ lin
        return np.array([p[0], p[2], pitch]), np.array([world[0], world[2], ang[1]])
    if base == "translation":
        return p.copy(), R @ lin
    raise ConfigError(f"Unknown base type {base!r}")
