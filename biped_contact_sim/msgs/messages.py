"""The one conversion from simulator arrays to ROS 2 message fields.

Every function returns plain nested dicts (and lists) whose keys are exactly the field names of
the ROS 2 message, so that

* the MCAP trace encodes them (:mod:`.cdr`, or ``mcap_ros2`` against the schemas of
  :mod:`.msgdefs` for the types :mod:`.cdr` does not write), and
* a ROS 2 node can copy them into real message objects with :func:`fill_message`.

Nothing here imports rclpy or a message package. Times are float seconds (:mod:`.stamps`),
vectors are array-likes of 3 floats, quaternions are ``(x, y, z, w)``. Fields that are not
returned keep their message defaults. All numbers are converted to Python ``int``/``float``
because rclpy's generated setters reject other types (for example an ``int`` in a ``float64``
field). The contact markers are in :mod:`.markers`, the TF of a robot in :mod:`.tf`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from biped_contact_sim.msgs.stamps import stamp

# diagnostic_msgs/DiagnosticStatus levels (a ``byte`` field: rclpy wants ``bytes`` of length 1).
DIAG_OK, DIAG_WARN, DIAG_ERROR, DIAG_STALE = 0, 1, 2, 3


def header(t: float, frame_id: str) -> dict[str, Any]:
    """Return a ``std_msgs/Header``.

    Args:
        t: Time in seconds.
        frame_id: Coordinate frame of the data.

    Returns:
        ``{"stamp": ..., "frame_id": str}``.
    """
    return {"stamp": stamp(t), "frame_id": str(frame_id)}


def vec3(value: ArrayLike, what: str) -> np.ndarray:
    """A 3-vector as a float array; ``ValueError`` naming ``what`` if it has not 3 elements."""
    array = np.asarray(value, dtype=float).reshape(-1)
    if array.shape != (3,):
        raise ValueError(f"{what} must have 3 elements, got shape {np.shape(value)}")
    return array


def xyz(value: ArrayLike, what: str) -> dict[str, float]:
    """Fields of a ``geometry_msgs/Point`` or ``Vector3``."""
    x, y, z = vec3(value, what)
    return {"x": float(x), "y": float(y), "z": float(z)}


def _quaternion(quat_xyzw: ArrayLike) -> dict[str, float]:
    array = np.asarray(quat_xyzw, dtype=float).reshape(-1)
    if array.shape != (4,):
        raise ValueError(f"quat_xyzw must have 4 elements, got shape {np.shape(quat_xyzw)}")
    x, y, z, w = array
    return {"x": float(x), "y": float(y), "z": float(z), "w": float(w)}


def _floats(values: ArrayLike | None, count: int, what: str) -> list[float]:
    if values is None:
        return []
    array = np.asarray(values, dtype=float).reshape(-1)
    if array.size != count:
        raise ValueError(f"{what} has {array.size} values for {count} joints")
    return [float(v) for v in array]


def joint_state(
    t: float,
    names: Sequence[str],
    position: ArrayLike | None,
    velocity: ArrayLike | None,
    effort: ArrayLike | None,
) -> dict[str, Any]:
    """Return a ``sensor_msgs/JointState`` (empty ``frame_id``).

    Args:
        t: Time in seconds.
        names: Joint names.
        position: One position per joint [rad or m], or None for an empty list.
        velocity: One velocity per joint [rad/s or m/s], or None for an empty list.
        effort: One effort per joint [N m or N], or None for an empty list.

    Returns:
        The JointState fields.

    Raises:
        ValueError: A given array does not have one value per name.
    """
    names = [str(n) for n in names]
    return {
        "header": header(t, ""),
        "name": names,
        "position": _floats(position, len(names), "position"),
        "velocity": _floats(velocity, len(names), "velocity"),
        "effort": _floats(effort, len(names), "effort"),
    }


def odometry(
    t: float,
    frame_id: str,
    child_frame_id: str,
    position: ArrayLike,
    quat_xyzw: ArrayLike,
    linear_velocity: ArrayLike,
    angular_velocity: ArrayLike,
) -> dict[str, Any]:
    """Return a ``nav_msgs/Odometry`` with zero (unknown) covariances.

    As nav_msgs/Odometry requires, the pose is that of ``child_frame_id`` in ``frame_id`` and
    the twist is expressed in ``child_frame_id``: the caller passes the body-frame (child-frame)
    linear and angular velocity, not the world-frame one.

    Args:
        t: Time in seconds.
        frame_id: Frame of the pose (e.g. ``odom``).
        child_frame_id: Frame of the body (e.g. ``base_link``), also the frame of the twist.
        position: Position of the body in ``frame_id`` [m].
        quat_xyzw: Orientation of the body in ``frame_id``.
        linear_velocity: Linear velocity in ``child_frame_id`` [m/s].
        angular_velocity: Angular velocity in ``child_frame_id`` [rad/s].

    Returns:
        The Odometry fields.

    Raises:
        ValueError: A vector does not have 3 elements or the quaternion 4.
    """
    pose = {"position": xyz(position, "position"), "orientation": _quaternion(quat_xyzw)}
    twist = {"linear": xyz(linear_velocity, "linear_velocity"),
             "angular": xyz(angular_velocity, "angular_velocity")}
    return {"header": header(t, frame_id), "child_frame_id": str(child_frame_id),
            "pose": {"pose": pose, "covariance": [0.0] * 36},
            "twist": {"twist": twist, "covariance": [0.0] * 36}}


def transform_stamped(
    t: float, parent: str, child: str, translation: ArrayLike, quat_xyzw: ArrayLike
) -> dict[str, Any]:
    """Return a ``geometry_msgs/TransformStamped`` (pose of ``child`` in ``parent``).

    Args:
        t: Time in seconds.
        parent: Parent frame (``header.frame_id``).
        child: Child frame (``child_frame_id``).
        translation: Origin of ``child`` in ``parent`` [m].
        quat_xyzw: Orientation of ``child`` in ``parent``.

    Returns:
        The TransformStamped fields.

    Raises:
        ValueError: The translation does not have 3 elements or the quaternion 4.
    """
    return {
        "header": header(t, parent),
        "child_frame_id": str(child),
        "transform": {
            "translation": xyz(translation, "translation"),
            "rotation": _quaternion(quat_xyzw),
        },
    }


def tf_message(transforms: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Return a ``tf2_msgs/TFMessage``.

    Args:
        transforms: Results of :func:`transform_stamped`.

    Returns:
        ``{"transforms": [...]}``.
    """
    return {"transforms": list(transforms)}


def wrench_stamped(t: float, frame_id: str, force: ArrayLike, torque: ArrayLike) -> dict[str, Any]:
    """Return a ``geometry_msgs/WrenchStamped``.

    Args:
        t: Time in seconds.
        frame_id: Frame in which force and torque are expressed.
        force: Force [N].
        torque: Torque [N m].

    Returns:
        The WrenchStamped fields.

    Raises:
        ValueError: A vector does not have 3 elements.
    """
    return {
        "header": header(t, frame_id),
        "wrench": {"force": xyz(force, "force"), "torque": xyz(torque, "torque")},
    }


def point_stamped(t: float, frame_id: str, point: ArrayLike) -> dict[str, Any]:
    """Return a ``geometry_msgs/PointStamped``.

    Args:
        t: Time in seconds.
        frame_id: Frame of the point.
        point: Coordinates [m].

    Returns:
        The PointStamped fields.

    Raises:
        ValueError: The point does not have 3 elements.
    """
    return {"header": header(t, frame_id), "point": xyz(point, "point")}


def clock(t: float) -> dict[str, Any]:
    """Return a ``rosgraph_msgs/Clock``.

    Args:
        t: Simulated time in seconds.

    Returns:
        ``{"clock": stamp(t)}``.
    """
    return {"clock": stamp(t)}


def string(data: str) -> dict[str, str]:
    """Return a ``std_msgs/String``.

    Args:
        data: The text.

    Returns:
        ``{"data": str}``.
    """
    return {"data": str(data)}


def float64_multi_array(values: ArrayLike, label: str) -> dict[str, Any]:
    """Return a ``std_msgs/Float64MultiArray``: one dimension ``label`` of size len(values)."""
    data = [float(v) for v in np.ravel(np.asarray(values, dtype=float))]
    return {"layout": {"dim": [{"label": str(label), "size": len(data), "stride": len(data)}],
                       "data_offset": 0},
            "data": data}


def diagnostic_array(t: float, statuses: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Return a ``diagnostic_msgs/DiagnosticArray`` (empty ``frame_id``).

    Args:
        t: Time in seconds.
        statuses: Results of :func:`diagnostic_status`.

    Returns:
        The DiagnosticArray fields.
    """
    return {"header": header(t, ""), "status": list(statuses)}


def diagnostic_status(level: int, name: str, message: str, hardware_id: str,
                      values: Mapping[str, Any]) -> dict[str, Any]:
    """Return a ``diagnostic_msgs/DiagnosticStatus``.

    ``level`` (``DIAG_OK`` … ``DIAG_STALE``) is a ROS ``byte``: the field holds ``bytes`` of
    length 1 (``b"\\x00"`` = OK), what rclpy wants (:mod:`.cdr` writes either). ``values``
    become ``KeyValue`` pairs formatted by :func:`format_value`.

    Raises:
        ValueError: ``level`` is not one of the four levels.
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


def format_value(value: Any) -> str:
    """A diagnostic value as text: numbers with 6 significant digits, booleans ``true`` /
    ``false``, None empty, arrays and sequences comma-separated, mappings ``key: value``."""
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


def fill_message(
    msg: Any,
    fields: Mapping[str, Any],
    factories: Mapping[str, Callable[[], Any]] | None = None,
) -> Any:
    """Copy a field dict of this module into a message object, recursively and in place.

    No rclpy import is needed: nested messages are filled in place through ``getattr`` (rclpy
    returns the stored nested object), and the elements of a list of messages are created by
    ``factories[field_name]()`` — the caller passes the message classes, e.g.
    ``{"markers": Marker, "points": Point, "transforms": TransformStamped}``. Lists of
    primitives are assigned as lists, scalars as they are.

    Args:
        msg: The message object (an rclpy message or any object with the same attributes).
        fields: Field dict as returned by this module's functions.
        factories: Element constructor per field name of each list of messages.

    Returns:
        ``msg``, filled.

    Raises:
        AttributeError: ``msg`` has no attribute of that name.
        KeyError: A list of messages has no factory.
    """
    factories = factories or {}
    for name, value in fields.items():
        if not hasattr(msg, name):
            raise AttributeError(f"{type(msg).__name__} has no field {name!r}")
        if isinstance(value, Mapping):
            fill_message(getattr(msg, name), value, factories)
        elif isinstance(value, list) and any(isinstance(v, Mapping) for v in value):
            if name not in factories:
                raise KeyError(f"No factory for the elements of the message list {name!r}")
            setattr(msg, name, [fill_message(factories[name](), v, factories) for v in value])
        elif isinstance(value, list):
            setattr(msg, name, list(value))
        else:
            setattr(msg, name, value)
    return msg
