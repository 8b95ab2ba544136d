"""The one conversion from simulator arrays to ROS 2 message fields.

Every function returns plain nested dicts (and lists) whose keys are exactly the field names of
the ROS 2 message, so that

* the MCAP recorder can hand them to ``mcap_ros2`` (which encodes dicts against the schema of
  :mod:`biped_contact_sim.record.msgdefs`), and
* a ROS 2 node can copy them into real message objects with :func:`fill_message`.

Nothing here imports rclpy or a message package. Times are float seconds, vectors are
array-likes of 3 floats, quaternions are ``(x, y, z, w)``. Fields that are not returned keep
their message defaults. All numbers are converted to Python ``int``/``float`` because rclpy's
generated setters reject other types (for example an ``int`` in a ``float64`` field).
"""

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

# visualization_msgs/Marker constants (Jazzy Marker.msg).
MARKER_ARROW = 0
MARKER_SPHERE = 2
MARKER_LINE_STRIP = 4
MARKER_TRIANGLE_LIST = 11
MARKER_ADD = 0
MARKER_DELETE = 2

# Namespaces, colours (r, g, b, a) and sizes [m] of the contact markers.
NS_FORCES = "forces"
NS_CONES = "cones"
NS_SUPPORT_POLYGON = "support_polygon"
NS_COP = "cop"
NS_ZMP = "zmp"
FORCE_COLOR = (0.9, 0.1, 0.1, 1.0)  # red
CONE_COLOR = (0.2, 0.5, 1.0, 0.35)  # translucent blue
SUPPORT_POLYGON_COLOR = (0.1, 0.8, 0.1, 1.0)  # green
COP_COLOR = (1.0, 0.6, 0.0, 1.0)  # orange
ZMP_COLOR = (0.8, 0.0, 0.8, 1.0)  # magenta
ARROW_SHAFT_DIAMETER = 0.01
ARROW_HEAD_DIAMETER = 0.02
ARROW_HEAD_LENGTH = 0.02
CONE_HEIGHT = 0.05
CONE_SEGMENTS = 16
SUPPORT_POLYGON_LINE_WIDTH = 0.005
COP_DIAMETER = 0.02
ZMP_DIAMETER = 0.03

_NS_PER_S = 1_000_000_000
_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1


def stamp(t: float) -> dict[str, int]:
    """Return a ``builtin_interfaces/Time`` (or ``Duration``) for a time in seconds.

    ``sec`` is ``floor(t)`` and ``nanosec`` the rounded rest, always in ``[0, 1e9)``: -1.7 s
    is ``{sec: -2, nanosec: 300000000}``, and a rest that rounds up to 1e9 ns carries into
    ``sec`` (0.9999999999 s is ``{sec: 1, nanosec: 0}``). Splitting before scaling keeps
    nanosecond resolution for large ``t``.

    Args:
        t: Time in seconds.

    Returns:
        ``{"sec": int, "nanosec": int}``.

    Raises:
        ValueError: ``t`` is not finite or ``sec`` does not fit in an int32.
    """
    t = float(t)
    if not math.isfinite(t):
        raise ValueError(f"Time must be finite, got {t}")
    sec = math.floor(t)
    nanosec = round((t - sec) * _NS_PER_S)
    if nanosec >= _NS_PER_S:
        sec += 1
        nanosec -= _NS_PER_S
    if not _INT32_MIN <= sec <= _INT32_MAX:
        raise ValueError(f"Time {t} s does not fit the int32 seconds of builtin_interfaces/Time")
    return {"sec": int(sec), "nanosec": int(nanosec)}


def header(t: float, frame_id: str) -> dict[str, Any]:
    """Return a ``std_msgs/Header``.

    Args:
        t: Time in seconds.
        frame_id: Coordinate frame of the data.

    Returns:
        ``{"stamp": ..., "frame_id": str}``.
    """
    return {"stamp": stamp(t), "frame_id": str(frame_id)}


def _vec3(value: ArrayLike, what: str) -> np.ndarray:
    array = np.asarray(value, dtype=float).reshape(-1)
    if array.shape != (3,):
        raise ValueError(f"{what} must have 3 elements, got shape {np.shape(value)}")
    return array


def _xyz(value: ArrayLike, what: str) -> dict[str, float]:
    """Fields of a ``geometry_msgs/Point`` or ``Vector3``."""
    x, y, z = _vec3(value, what)
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
    return {
        "header": header(t, frame_id),
        "child_frame_id": str(child_frame_id),
        "pose": {
            "pose": {
                "position": _xyz(position, "position"),
                "orientation": _quaternion(quat_xyzw),
            },
            "covariance": [0.0] * 36,
        },
        "twist": {
            "twist": {
                "linear": _xyz(linear_velocity, "linear_velocity"),
                "angular": _xyz(angular_velocity, "angular_velocity"),
            },
            "covariance": [0.0] * 36,
        },
    }


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
            "translation": _xyz(translation, "translation"),
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
        "wrench": {"force": _xyz(force, "force"), "torque": _xyz(torque, "torque")},
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
    return {"header": header(t, frame_id), "point": _xyz(point, "point")}


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


def diagnostic_array(t: float, statuses: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Return a ``diagnostic_msgs/DiagnosticArray``.

    Args:
        t: Time in seconds.
        statuses: Results of :func:`diagnostic_status`.

    Returns:
        The DiagnosticArray fields.
    """
    return {"header": header(t, ""), "status": list(statuses)}


def diagnostic_status(level: int, name: str, message: str, hardware_id: str,
                      values: Mapping[str, Any]) -> dict[str, Any]:
    """Return a ``diagnostic_msgs/DiagnosticStatus`` (level 0 OK, 1 WARN, 2 ERROR, 3 STALE);
    ``values`` become its key–value pairs, as strings (floats with 6 significant digits)."""
    def text(value: Any) -> str:
        return f"{value:.6g}" if isinstance(value, float) else str(value)

    return {"level": int(level), "name": str(name), "message": str(message),
            "hardware_id": str(hardware_id),
            "values": [{"key": str(k), "value": text(v)} for k, v in values.items()]}


def _color(rgba: Sequence[float], alpha: float | None = None) -> dict[str, float]:
    r, g, b, a = rgba
    return {"r": float(r), "g": float(g), "b": float(b), "a": float(a if alpha is None else alpha)}


def _marker(
    t: float,
    frame_id: str,
    ns: str,
    marker_id: int,
    marker_type: int,
    *,
    action: int = MARKER_ADD,
    position: ArrayLike = (0.0, 0.0, 0.0),
    scale: ArrayLike = (1.0, 1.0, 1.0),
    color: dict[str, float] | None = None,
    points: Sequence[dict[str, float]] = (),
) -> dict[str, Any]:
    """Fields of a ``visualization_msgs/Marker`` with identity orientation, lifetime 0."""
    return {
        "header": header(t, frame_id),
        "ns": ns,
        "id": int(marker_id),
        "type": int(marker_type),
        "action": int(action),
        "pose": {
            "position": _xyz(position, "marker position"),
            "orientation": {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0},
        },
        "scale": _xyz(scale, "marker scale"),
        "color": color if color is not None else _color((0.0, 0.0, 0.0, 0.0)),
        "lifetime": {"sec": 0, "nanosec": 0},
        "frame_locked": False,
        "points": list(points),
    }


def _cone_triangles(apex: np.ndarray, normal: np.ndarray, mu: float) -> list[dict[str, float]]:
    """Triangles of the lateral surface of a friction cone (apex at the contact point)."""
    length = np.linalg.norm(normal)
    if not length > 0.0:
        raise ValueError(f"Contact normal must be a nonzero vector, got {normal}")
    axis = normal / length
    helper = np.array([1.0, 0.0, 0.0]) if abs(axis[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    u = np.cross(axis, helper)
    u /= np.linalg.norm(u)
    v = np.cross(axis, u)
    radius = mu * CONE_HEIGHT
    angles = np.linspace(0.0, 2.0 * np.pi, CONE_SEGMENTS + 1)
    rim = [apex + CONE_HEIGHT * axis + radius * (np.cos(a) * u + np.sin(a) * v) for a in angles]
    triangles = []
    for k in range(CONE_SEGMENTS):
        triangles += [apex, rim[k], rim[k + 1]]
    return [_xyz(p, "cone vertex") for p in triangles]


def contact_markers(
    t: float,
    frame_id: str,
    points: ArrayLike,
    forces: ArrayLike,
    active: ArrayLike,
    cops: Sequence[ArrayLike | None],
    zmp: ArrayLike | None,
    support_polygon: ArrayLike,
    mu: float | ArrayLike | None = None,
    force_scale: float = 0.002,
    normals: ArrayLike | None = None,
) -> dict[str, Any]:
    """Return a ``visualization_msgs/MarkerArray`` showing contact forces, CoPs and the ZMP.

    Every marker has lifetime 0 (forever), ``frame_locked`` False, identity orientation and a
    stable ``(ns, id)``, so each message replaces the previous one marker by marker:

    * ``forces``, id ``i`` (one per contact point): ARROW from ``points[i]`` to
      ``points[i] + force_scale * forces[i]``, red. An inactive point keeps its ADD marker
      with colour alpha 0 (invisible), so the set of ids never changes.
    * ``cones``, id ``i`` (only when ``mu`` is given): TRIANGLE_LIST of the friction cone's
      lateral surface, apex at ``points[i]``, axis along the contact normal, height
      ``CONE_HEIGHT`` and radius ``mu * CONE_HEIGHT``, translucent blue; alpha 0 when
      inactive, as for the forces.
    * ``support_polygon``, id 0: closed LINE_STRIP through the vertices (first vertex
      repeated at the end), green. With no vertex, the marker is a DELETE.
    * ``cop``, id ``j`` (one per entry of ``cops``): SPHERE at the CoP, orange. An undefined
      CoP (None) gets no sphere: the marker is a DELETE of that id, which removes a sphere
      drawn by an earlier message (an omitted marker would stay on screen, lifetime being 0).
    * ``zmp``, id 0: SPHERE at the ZMP, magenta; a DELETE when ``zmp`` is None.

    Args:
        t: Time in seconds.
        frame_id: Frame of all coordinates (e.g. ``world``).
        points: Contact points, shape (N, 3) [m].
        forces: Contact forces on the robot, shape (N, 3) [N].
        active: Whether each point is in contact, shape (N,).
        cops: Centre of pressure of each foot (or contact group) [m], None where undefined.
        zmp: Zero-moment point [m], or None where undefined.
        support_polygon: Ordered vertices of the support polygon, shape (K, 3) [m].
        mu: Friction coefficient, one for all points or one per point (geometry contacts);
            the cones are drawn only when given.
        force_scale: Arrow length per newton [m/N].
        normals: Contact normals, shape (3,) for all points or (N, 3); None means +z.

    Returns:
        ``{"markers": [...]}``.

    Raises:
        ValueError: The array shapes do not match, or a contact normal is zero.
    """
    points = np.asarray(points, dtype=float).reshape(-1, 3)
    forces = np.asarray(forces, dtype=float).reshape(-1, 3)
    active = np.asarray(active, dtype=bool).reshape(-1)
    count = len(points)
    if forces.shape[0] != count or active.shape[0] != count:
        raise ValueError(
            f"{count} points, {forces.shape[0]} forces and {active.shape[0]} active flags"
        )
    normals = np.broadcast_to(
        np.asarray((0.0, 0.0, 1.0) if normals is None else normals, dtype=float), (count, 3)
    )
    mus = None if mu is None else np.broadcast_to(np.asarray(mu, dtype=float), (count,))
    markers = []
    for i in range(count):
        alpha = None if active[i] else 0.0
        tip = points[i] + force_scale * forces[i]
        markers.append(
            _marker(
                t,
                frame_id,
                NS_FORCES,
                i,
                MARKER_ARROW,
                scale=(ARROW_SHAFT_DIAMETER, ARROW_HEAD_DIAMETER, ARROW_HEAD_LENGTH),
                color=_color(FORCE_COLOR, alpha),
                points=[_xyz(points[i], "point"), _xyz(tip, "arrow tip")],
            )
        )
        if mu is not None:
            markers.append(
                _marker(
                    t,
                    frame_id,
                    NS_CONES,
                    i,
                    MARKER_TRIANGLE_LIST,
                    scale=(1.0, 1.0, 1.0),
                    color=_color(CONE_COLOR, alpha),
                    points=_cone_triangles(points[i], normals[i], float(mus[i])),
                )
            )
    vertices = np.asarray(support_polygon, dtype=float).reshape(-1, 3)
    if len(vertices):
        closed = [_xyz(p, "support polygon vertex") for p in (*vertices, vertices[0])]
        markers.append(
            _marker(
                t,
                frame_id,
                NS_SUPPORT_POLYGON,
                0,
                MARKER_LINE_STRIP,
                scale=(SUPPORT_POLYGON_LINE_WIDTH, 0.0, 0.0),
                color=_color(SUPPORT_POLYGON_COLOR),
                points=closed,
            )
        )
    else:
        markers.append(
            _marker(t, frame_id, NS_SUPPORT_POLYGON, 0, MARKER_LINE_STRIP, action=MARKER_DELETE)
        )
    for j, cop in enumerate(cops):
        markers.append(_sphere(t, frame_id, NS_COP, j, cop, COP_DIAMETER, COP_COLOR))
    markers.append(_sphere(t, frame_id, NS_ZMP, 0, zmp, ZMP_DIAMETER, ZMP_COLOR))
    return {"markers": markers}


def _sphere(
    t: float,
    frame_id: str,
    ns: str,
    marker_id: int,
    center: ArrayLike | None,
    diameter: float,
    rgba: Sequence[float],
) -> dict[str, Any]:
    """A SPHERE marker, or the DELETE of its id when ``center`` is None."""
    if center is None:
        return _marker(t, frame_id, ns, marker_id, MARKER_SPHERE, action=MARKER_DELETE)
    return _marker(
        t,
        frame_id,
        ns,
        marker_id,
        MARKER_SPHERE,
        position=_vec3(center, ns),
        scale=(diameter, diameter, diameter),
        color=_color(rgba),
    )


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
