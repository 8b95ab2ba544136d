"""Contact markers: a ``visualization_msgs/MarkerArray`` of force arrows, friction cones, the
support polygon, the CoPs and the ZMP, as field dicts (:mod:`.messages`'s conventions).

The trace writes :func:`contact_markers`; the simulator node writes the same markers in place
into preallocated message objects (ros/writers.py ``MarkerWriter``), with the constants and the
cone geometry (:func:`cone_axes`, :func:`cone_triangles`) of this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from biped_contact_sim.msgs.messages import header, vec3, xyz

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
# Arrow length of a force equal to the robot's weight [m]: one scale per robot keeps a 1 kg
# ball's and a 40 kg biped's forces readable in RViz (force_scale = this / (m g)).
WEIGHT_ARROW_LENGTH = 0.5

_RIM_ANGLES = np.linspace(0.0, 2.0 * np.pi, CONE_SEGMENTS + 1)
_RIM_COS, _RIM_SIN = np.cos(_RIM_ANGLES), np.sin(_RIM_ANGLES)


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
            "position": xyz(position, "marker position"),
            "orientation": {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0},
        },
        "scale": xyz(scale, "marker scale"),
        "color": color if color is not None else _color((0.0, 0.0, 0.0, 0.0)),
        "lifetime": {"sec": 0, "nanosec": 0},
        "frame_locked": False,
        "points": list(points),
    }


def cone_axes(normal: np.ndarray, mu: float) -> tuple[np.ndarray, np.ndarray]:
    """The friction cone drawn at a contact: its axis vector (along ``normal``, ``CONE_HEIGHT``
    long) and the offsets of its rim from the axis tip, ``CONE_SEGMENTS + 1`` points of radius
    ``mu * CONE_HEIGHT`` (the first repeated at the end).

    Raises:
        ValueError: ``normal`` is zero.
    """
    length = np.linalg.norm(normal)
    if not length > 0.0:
        raise ValueError(f"Contact normal must be a nonzero vector, got {normal}")
    axis = normal / length
    helper = np.array([1.0, 0.0, 0.0]) if abs(axis[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    u = np.cross(axis, helper)
    u /= np.linalg.norm(u)
    v = np.cross(axis, u)
    radius = mu * CONE_HEIGHT
    return CONE_HEIGHT * axis, radius * (_RIM_COS[:, None] * u + _RIM_SIN[:, None] * v)


def cone_triangles(apex: np.ndarray, height: np.ndarray, rim: np.ndarray) -> np.ndarray:
    """Vertices of the triangles of a friction cone's lateral surface, shape
    ``(3 * CONE_SEGMENTS, 3)``: ``apex`` and two consecutive rim points per triangle
    (``height``, ``rim`` from :func:`cone_axes`)."""
    ring = (apex + height) + rim
    tri = np.empty((CONE_SEGMENTS, 3, 3))
    tri[:, 0], tri[:, 1], tri[:, 2] = apex, ring[:-1], ring[1:]
    return tri.reshape(-1, 3)


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
                points=[xyz(points[i], "point"), xyz(tip, "arrow tip")],
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
                    points=[xyz(p, "cone vertex") for p in cone_triangles(
                        points[i], *cone_axes(normals[i], float(mus[i])))],
                )
            )
    vertices = np.asarray(support_polygon, dtype=float).reshape(-1, 3)
    if len(vertices):
        closed = [xyz(p, "support polygon vertex") for p in (*vertices, vertices[0])]
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
        position=vec3(center, ns),
        scale=(diameter, diameter, diameter),
        color=_color(rgba),
    )
