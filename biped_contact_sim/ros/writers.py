"""In-place writers of the messages sent every control period.

``joint_states``, ``odom``, ``contact_wrench/<foot>``, ``/clock`` (simulator) and
``joint_torque_cmd`` (controller) carry the fields of :mod:`biped_contact_sim.msgs.messages`
(the trace's conversion), but building a field dict and copying it with ``fill_message``
costs 0.2–0.5 ms per message in rclpy (per-element type checks of the generated setters), and
even a preallocated message object costs ~0.1–0.3 ms to convert when published. So these are
written as serialized CDR (:mod:`biped_contact_sim.msgs.cdr`, the trace's encoder): constant
fields (names, frames) once, per period only the stamp and the numbers. ``contact_markers`` is
written in place into preallocated message objects. The node test suite checks that every
writer produces the message ``fill_message`` makes from the ``msgs`` fields of the same values.

Nothing here imports rclpy: the writers set attributes of the message objects the nodes pass.
"""

from __future__ import annotations

import array
from collections.abc import Sequence
from typing import Any

import numpy as np

from biped_contact_sim.msgs import cdr, markers
from biped_contact_sim.msgs.stamps import NS
from biped_contact_sim.ros.sim_outputs import StateSample


def doubles(values: np.ndarray) -> array.array:
    """A float64 ``array.array`` copy of an array (what rclpy stores for ``float64[]``)."""
    out = array.array("d")
    out.frombytes(np.ascontiguousarray(values, dtype=np.float64).tobytes())
    return out


def write_stamp(stamp: Any, ns: int) -> None:
    """``builtin_interfaces/Time`` of an integer nanosecond time (exact)."""
    stamp.sec = ns // NS
    stamp.nanosec = ns % NS


def write_xyz(vector: Any, values: np.ndarray) -> None:
    """``geometry_msgs/Vector3`` or ``Point`` fields."""
    vector.x, vector.y, vector.z = float(values[0]), float(values[1]), float(values[2])


class StateWriter:
    """Writes a :class:`~biped_contact_sim.ros.sim_outputs.StateSample` as the serialized
    ``/clock``, ``joint_states``, ``odom`` and ``contact_wrench/<foot>`` messages
    (:mod:`biped_contact_sim.msgs.cdr`: preallocated buffers, constant parts written once).

    Args:
        joint_names: actuated joints, in τ order.
        world_frame, base_link: ``odom`` frame and child frame.
        sole_frames: the frame of each contact body's wrench, in the robot's order.
    """

    def __init__(self, joint_names: Sequence[str], world_frame: str, base_link: str,
                 sole_frames: Sequence[str]):
        self.clock = cdr.clock()
        self.joint_states = cdr.joint_state([str(n) for n in joint_names], "")
        self.odom = cdr.odometry(str(world_frame), str(base_link))
        self.wrenches = [cdr.wrench_stamped(str(frame)) for frame in sole_frames]
        self.messages = [self.clock, self.joint_states, self.odom, *self.wrenches]

    def write(self, s: StateSample, wanted: Sequence[bool] | None = None
              ) -> list[bytes | None]:
        """The serialized messages of the state: /clock, joint_states, odom, then one
        wrench per contact body; with ``wanted`` (one flag per message, in that order) only
        those (None for the others)."""
        want = [True] * len(self.messages) if wanted is None else wanted
        for msg, w in zip(self.messages, want, strict=True):
            if w:
                msg.set_stamp(s.stamp)
        if want[1]:
            js = self.joint_states.views
            js["position"][:] = s.q_joints
            js["velocity"][:] = s.v_joints
            js["effort"][:] = s.tau
        if want[2]:
            odom = self.odom.views
            odom["pose"][:3] = s.position
            odom["pose"][3:] = s.quat_xyzw
            odom["twist"][:3] = s.linear
            odom["twist"][3:] = s.angular
        for msg, (force, torque), w in zip(self.wrenches, s.wrenches, want[3:], strict=True):
            if w:
                msg.views["wrench"][:3] = force
                msg.views["wrench"][3:] = torque
        return [msg.bytes() if w else None for msg, w in zip(self.messages, want, strict=True)]


class CommandWriter:
    """Writes torques as a serialized ``joint_torque_cmd`` (JointState: names and efforts,
    empty positions and velocities, stamped with the measurement it answers).

    Args:
        joint_names: actuated joints, in τ order.
    """

    def __init__(self, joint_names: Sequence[str]):
        self.msg = cdr.joint_state([str(n) for n in joint_names], "", effort_only=True)

    def write(self, stamp: int, tau: np.ndarray) -> bytes:
        """The command answering the measurement stamped ``stamp`` [ns], serialized."""
        self.msg.set_stamp(stamp)
        self.msg.views["effort"][:] = tau
        return self.msg.bytes()


class MarkerWriter:
    """Writes ``contact_markers`` (the MarkerArray of
    :func:`biped_contact_sim.msgs.markers.contact_markers`: force arrows, friction cones,
    support polygon, CoP and ZMP spheres) into preallocated markers and points.

    Building it as field dicts made thousands of Point objects per message (the cones: 48
    vertices per contact point) and cost ~10–20 ms, more than the simulation of the periods in
    between; here the markers and their points are allocated once and only coordinates,
    stamps, actions and alphas change (a support polygon with a new vertex count reallocates
    its points). The node test suite checks the result equals ``fill_message`` of the
    ``markers`` fields.

    Args:
        array: the MarkerArray object.
        marker_factory, point_factory: the Marker and Point classes.
        frame_id: frame of every coordinate.
        n_points: number of contact points (geometry contacts: the markers grow to the
            largest contact set seen; the contacts beyond the current set get alpha 0).
        n_cops: number of CoPs (contact bodies).
        cones: draw the friction cones (``mu`` given to :meth:`write`).
    """

    def __init__(self, array: Any, marker_factory: Any, point_factory: Any, frame_id: str,
                 n_points: int, n_cops: int, cones: bool = True):
        m = self.m = markers
        self.point_factory = point_factory
        self.marker_factory, self.frame_id, self.with_cones = marker_factory, frame_id, cones
        self.array = array
        marker = self._marker
        self.forces, self.cones = [], []
        self.all = []
        self._grow(n_points)
        self.polygon = marker(m.NS_SUPPORT_POLYGON, 0, m.MARKER_LINE_STRIP,
                              (m.SUPPORT_POLYGON_LINE_WIDTH, 0.0, 0.0), m.SUPPORT_POLYGON_COLOR, 0)
        self.all.append(self.polygon)
        self.cops = [marker(m.NS_COP, j, m.MARKER_SPHERE, (m.COP_DIAMETER,) * 3, m.COP_COLOR, 0)
                     for j in range(n_cops)]
        self.zmp = marker(m.NS_ZMP, 0, m.MARKER_SPHERE, (m.ZMP_DIAMETER,) * 3, m.ZMP_COLOR, 0)
        self.all += [*self.cops, self.zmp]
        array.markers = self.all
        self._cone_cache: dict = {}

    def _marker(self, ns, marker_id, marker_type, scale, rgba, n_vertices):
        m = self.m
        mk = self.marker_factory()
        mk.header.frame_id = str(self.frame_id)
        mk.ns, mk.id, mk.type, mk.action = ns, int(marker_id), int(marker_type), m.MARKER_ADD
        mk.pose.orientation.w = 1.0
        write_xyz(mk.scale, scale)
        mk.color.r, mk.color.g, mk.color.b, mk.color.a = (float(c) for c in rgba)
        mk.frame_locked = False
        mk.points = [self.point_factory() for _ in range(n_vertices)]
        return mk

    def _grow(self, n_points: int) -> None:
        """Force arrows (and cones) for contacts ``len(self.forces) … n_points - 1``: with
        geometry contacts the number of contacts changes from step to step; ids once used stay
        (alpha 0 while there are fewer contacts), as an inactive point's do."""
        m = self.m
        arrow = (m.ARROW_SHAFT_DIAMETER, m.ARROW_HEAD_DIAMETER, m.ARROW_HEAD_LENGTH)
        for i in range(len(self.forces), n_points):
            self.forces.append(self._marker(m.NS_FORCES, i, m.MARKER_ARROW, arrow,
                                            m.FORCE_COLOR, 2))
            self.all.insert(len(self.forces) + len(self.cones) - 1, self.forces[-1])
            if self.with_cones:
                self.cones.append(self._marker(m.NS_CONES, i, m.MARKER_TRIANGLE_LIST,
                                               (1.0, 1.0, 1.0), m.CONE_COLOR,
                                               3 * m.CONE_SEGMENTS))
                self.all.insert(len(self.forces) + len(self.cones) - 1, self.cones[-1])

    @staticmethod
    def _points(points: list, values: np.ndarray) -> None:
        for p, (x, y, z) in zip(points, values.tolist(), strict=True):
            p.x, p.y, p.z = x, y, z

    def _cone(self, apex: np.ndarray, normal: np.ndarray, mu: float) -> np.ndarray:
        """Vertices of the cone's triangles (``markers.cone_triangles``; the axis and rim of
        each normal and μ are kept: the terrain's are constant)."""
        key = (normal.tobytes(), mu)
        axes = self._cone_cache.get(key)
        if axes is None:
            axes = self._cone_cache[key] = self.m.cone_axes(normal, mu)
        return self.m.cone_triangles(apex, *axes)

    def _sphere(self, mk: Any, center: np.ndarray | None, diameter: float, rgba) -> None:
        m = self.m
        if center is None:  # DELETE, with the fields markers._marker gives a DELETE
            mk.action = m.MARKER_DELETE
            write_xyz(mk.pose.position, (0.0, 0.0, 0.0))
            write_xyz(mk.scale, (1.0, 1.0, 1.0))
            mk.color.r = mk.color.g = mk.color.b = mk.color.a = 0.0
        else:
            mk.action = m.MARKER_ADD
            write_xyz(mk.pose.position, np.asarray(center, dtype=float).reshape(3))
            write_xyz(mk.scale, (diameter,) * 3)
            mk.color.r, mk.color.g, mk.color.b, mk.color.a = (float(c) for c in rgba)

    def write(self, stamp: int, points: np.ndarray, forces: np.ndarray, active: np.ndarray,
              cops: list, zmp: np.ndarray | None, support_polygon: np.ndarray,
              mu: float | None, force_scale: float, normals: np.ndarray | None) -> Any:
        """The markers of ``markers.contact_markers`` (same arguments, stamp in ns; ``mu`` a
        scalar or one per contact)."""
        m = self.m
        points = np.asarray(points, dtype=float).reshape(-1, 3)
        forces = np.asarray(forces, dtype=float).reshape(-1, 3)
        active = np.asarray(active, dtype=bool).reshape(-1)
        normals = np.broadcast_to(np.asarray((0.0, 0.0, 1.0) if normals is None else normals,
                                             dtype=float), (len(points), 3))
        n = len(points)
        if n > len(self.forces):
            self._grow(n)
            self.array.markers = self.all
        for mk in self.all:
            write_stamp(mk.header.stamp, stamp)
        tips = points + force_scale * forces
        for i, mk in enumerate(self.forces):
            if i < n:
                self._points(mk.points, np.stack([points[i], tips[i]]))
            mk.color.a = float(m.FORCE_COLOR[3]) if i < n and active[i] else 0.0
        if mu is not None:
            mus = np.broadcast_to(np.asarray(mu, dtype=float), (n,))
            for i, mk in enumerate(self.cones):
                if i < n:
                    self._points(mk.points, self._cone(points[i], normals[i], float(mus[i])))
                mk.color.a = float(m.CONE_COLOR[3]) if i < n and active[i] else 0.0
        vertices = np.asarray(support_polygon, dtype=float).reshape(-1, 3)
        poly = self.polygon
        if len(vertices):
            closed = np.vstack([vertices, vertices[:1]])
            if len(poly.points) != len(closed):
                poly.points = [self.point_factory() for _ in range(len(closed))]
            self._points(poly.points, closed)
            poly.action = m.MARKER_ADD
            write_xyz(poly.scale, (m.SUPPORT_POLYGON_LINE_WIDTH, 0.0, 0.0))
            poly.color.r, poly.color.g, poly.color.b, poly.color.a = (
                float(c) for c in m.SUPPORT_POLYGON_COLOR)
        else:
            poly.action = m.MARKER_DELETE
            poly.points = []
            write_xyz(poly.scale, (1.0, 1.0, 1.0))
            poly.color.r = poly.color.g = poly.color.b = poly.color.a = 0.0
        for mk, cop in zip(self.cops, cops, strict=True):
            self._sphere(mk, cop, m.COP_DIAMETER, m.COP_COLOR)
        self._sphere(self.zmp, zmp, m.ZMP_DIAMETER, m.ZMP_COLOR)
        return self.array
