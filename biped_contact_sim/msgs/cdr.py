"""The one CDR encoder and decoder of the package: the trace and the nodes write the same bytes.

Layout (OMG CDR, little endian, as rmw_fastrtps and rosbag2 write it): a 4-byte encapsulation
header ``00 01 00 00``, then each primitive aligned to its own size counted from the end of that
header; a string is a uint32 length (with the terminating NUL), its bytes and a NUL; a sequence
a uint32 count and its elements; a fixed array (covariances) has no count.

Why not the message classes. Converting a message between rclpy's Python classes and its C form
costs ~0.1-0.3 ms on a 2-core machine (the generated ``__init__`` of every nested message runs
per-field checks) and a control period moves five such messages through each node; mcap_ros2's
generic encoder, field by field in Python, takes ~0.4 ms for a ``TFMessage`` of 15 transforms.
The messages sent every period, or written every sample, have fixed layouts once their strings
(frames, joint names) are known, so:

* a **layout** function per type (:func:`joint_state`, :func:`odometry`, :func:`tf_message`,
  :func:`wrench_stamped`, :func:`point_stamped`, :func:`clock`) writes the constant parts once
  and returns a :class:`CdrMessage`: a preallocated buffer in which only the stamps and the
  numbers change. The nodes (ros/writers.py) fill its numpy ``views`` every period and
  publish the bytes with ``publish_raw``;
* :class:`FieldEncoder` encodes the field dicts of :mod:`.messages` (the trace) by filling the
  layout of the dict's constant parts, kept per layout: the same layout code, hence the same
  bytes, as the nodes'. ``DiagnosticArray`` (strings only) is written directly;
* the readers (:func:`read_header`, :class:`JointStateReader`, :func:`read_odometry`,
  :func:`read_wrench_stamped`) read the serialized bytes the nodes' raw subscriptions receive.

test/ros/test_msgs_cdr.py checks the bytes equal rclpy's ``serialize_message`` and that what is
read equals ``deserialize_message``; test/test_messages.py that they equal mcap_ros2's encoder.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from biped_contact_sim.msgs.stamps import NS

ENCAPSULATION = b"\x00\x01\x00\x00"  # CDR_LE, no options
_U32 = struct.Struct("<I")
_STAMP = struct.Struct("<iI")
_DOUBLES: dict[int, struct.Struct] = {}


def _doubles_struct(count: int) -> struct.Struct:
    """``count`` little-endian float64 (compiled once per count)."""
    s = _DOUBLES.get(count)
    if s is None:
        s = _DOUBLES[count] = struct.Struct(f"<{count}d")
    return s


class _Builder:
    """Appends CDR fields to a buffer, recording the offsets of the variable parts."""

    def __init__(self):
        self.buf = bytearray(ENCAPSULATION)
        self.offsets: dict[str, int] = {}
        self.stamps: list[int] = []

    def align(self, size: int) -> None:
        self.buf += b"\x00" * (-(len(self.buf) - 4) % size)

    def u8(self, value: int) -> None:
        self.buf.append(value)

    def u32(self, value: int) -> None:
        self.align(4)
        self.buf += _U32.pack(value)

    def string(self, text: str) -> None:
        data = text.encode() + b"\x00"
        self.u32(len(data))
        self.buf += data

    def stamp(self) -> None:
        """A ``builtin_interfaces/Time`` to be written later (its offset is kept)."""
        self.align(4)
        self.stamps.append(len(self.buf))
        self.buf += b"\x00" * 8

    def time(self, sec: int, nanosec: int) -> None:
        """A ``builtin_interfaces/Time`` of known value."""
        self.align(4)
        self.buf += _STAMP.pack(sec, nanosec)

    def header(self, frame_id: str) -> None:
        """A ``std_msgs/Header``; its stamp is written later."""
        self.stamp()
        self.string(frame_id)

    def doubles(self, name: str, count: int, sequence: bool) -> None:
        """``count`` float64 named ``name`` (a ``float64[]`` with ``sequence``, else a struct
        of doubles or a fixed array), to be written later."""
        if sequence:
            self.u32(count)
        if count:
            self.align(8)
        self.offsets[name] = len(self.buf)
        self.buf += b"\x00" * (8 * count)


class CdrMessage:
    """A serialized message of fixed layout: write the stamps and the numbers, get the bytes.

    Attributes:
        buf: The serialized message (encapsulation header included).
        views: float64 numpy views into ``buf``, one per block of numbers, by name.
        counts: Number of float64 of each block.
    """

    def __init__(self, builder: _Builder, blocks: dict[str, int]):
        self.buf = builder.buf
        self._stamps = builder.stamps
        self._offsets = {name: builder.offsets[name] for name in blocks}
        self.counts = dict(blocks)
        self.views = {name: np.frombuffer(self.buf, np.float64, count, builder.offsets[name])
                      for name, count in blocks.items()}

    def set_stamp(self, ns: int) -> None:
        """Write every stamp of the message: integer nanoseconds of simulated time."""
        for at in self._stamps:
            _STAMP.pack_into(self.buf, at, ns // NS, ns % NS)

    def set_time(self, index: int, time: dict[str, int]) -> None:
        """Write the ``index``-th stamp from ``builtin_interfaces/Time`` fields."""
        _STAMP.pack_into(self.buf, self._stamps[index], time["sec"], time["nanosec"])

    def pack(self, name: str, values: Sequence[float]) -> None:
        """Write the block ``name`` from Python numbers (faster than a view for a few)."""
        _doubles_struct(self.counts[name]).pack_into(self.buf, self._offsets[name], *values)

    def bytes(self) -> bytes:
        """The serialized message."""
        return bytes(self.buf)


# --------------------------------------------------------------------------------- layouts

JOINT_STATE_FIELDS = ("position", "velocity", "effort")


def joint_state(names: Sequence[str], frame_id: str = "", effort_only: bool = False,
                counts: Sequence[int] | None = None) -> CdrMessage:
    """``sensor_msgs/JointState`` with ``names``: views ``position``, ``velocity``, ``effort``.

    Args:
        names: Joint names.
        frame_id: Header frame.
        effort_only: A torque command: empty position and velocity, view ``effort``.
        counts: Length of (position, velocity, effort) when not one per name (a field dict's).
    """
    b = _Builder()
    b.header(frame_id)
    b.u32(len(names))
    for name in names:
        b.string(str(name))
    if counts is None:
        counts = [0 if effort_only and f != "effort" else len(names) for f in JOINT_STATE_FIELDS]
    fields = dict(zip(JOINT_STATE_FIELDS, counts, strict=True))
    for field, count in fields.items():
        b.doubles(field, count, sequence=True)
    return CdrMessage(b, {f: n for f, n in fields.items() if n})


def odometry(frame_id: str, child_frame_id: str) -> CdrMessage:
    """``nav_msgs/Odometry``: views ``pose`` (position xyz, orientation xyzw), ``twist``
    (linear, angular), ``pose_covariance`` and ``twist_covariance`` (36 each, zero)."""
    b = _Builder()
    b.header(frame_id)
    b.string(child_frame_id)
    blocks = {"pose": 7, "pose_covariance": 36, "twist": 6, "twist_covariance": 36}
    for name, count in blocks.items():
        b.doubles(name, count, sequence=False)
    return CdrMessage(b, blocks)


def tf_message(frames: Sequence[tuple[str, str]]) -> CdrMessage:
    """``tf2_msgs/TFMessage`` of one transform per ``(frame_id, child_frame_id)``: views
    ``transform/<k>`` (translation xyz, rotation xyzw); one stamp per transform."""
    b = _Builder()
    b.u32(len(frames))
    for k, (frame_id, child) in enumerate(frames):
        b.header(frame_id)
        b.string(child)
        b.doubles(f"transform/{k}", 7, sequence=False)
    return CdrMessage(b, {f"transform/{k}": 7 for k in range(len(frames))})


def wrench_stamped(frame_id: str) -> CdrMessage:
    """``geometry_msgs/WrenchStamped``: view ``wrench`` (force xyz, torque xyz)."""
    b = _Builder()
    b.header(frame_id)
    b.doubles("wrench", 6, sequence=False)
    return CdrMessage(b, {"wrench": 6})


def point_stamped(frame_id: str) -> CdrMessage:
    """``geometry_msgs/PointStamped``: view ``point`` (xyz)."""
    b = _Builder()
    b.header(frame_id)
    b.doubles("point", 3, sequence=False)
    return CdrMessage(b, {"point": 3})


def clock() -> CdrMessage:
    """``rosgraph_msgs/Clock`` (only a stamp)."""
    b = _Builder()
    b.stamp()
    return CdrMessage(b, {})


def diagnostic_array(m: dict[str, Any]) -> bytes:
    """``diagnostic_msgs/DiagnosticArray`` of field dicts (``level`` as ``bytes`` of length 1,
    what rclpy stores for a ``byte``, or an int)."""
    b = _Builder()
    b.time(m["header"]["stamp"]["sec"], m["header"]["stamp"]["nanosec"])
    b.string(m["header"]["frame_id"])
    b.u32(len(m["status"]))
    for status in m["status"]:
        level = status["level"]
        b.u8(level[0] if isinstance(level, bytes) else int(level))
        for key in ("name", "message", "hardware_id"):
            b.string(status[key])
        b.u32(len(status["values"]))
        for pair in status["values"]:
            b.string(pair["key"])
            b.string(pair["value"])
    return bytes(b.buf)


# ------------------------------------------------------------------------ field dicts


def _xyz(v: dict[str, float]) -> tuple[float, float, float]:
    return v["x"], v["y"], v["z"]


def _xyzw(q: dict[str, float]) -> tuple[float, float, float, float]:
    return q["x"], q["y"], q["z"], q["w"]


class FieldEncoder:
    """Encodes the field dicts of :mod:`.messages` with the layouts above.

    The layout of a dict's constant parts (frames, joint names, sequence lengths) is built once
    and kept (at most ``max_layouts``, the oldest dropped first); each message then writes only
    its stamps and numbers into it. Not thread-safe: one encoder per writer.
    """

    def __init__(self, max_layouts: int = 256):
        self.max_layouts = max_layouts
        self._layouts: dict[tuple, CdrMessage] = {}
        self._encoders: dict[str, Callable[[dict[str, Any]], bytes]] = {
            "sensor_msgs/msg/JointState": self._joint_state,
            "nav_msgs/msg/Odometry": self._odometry,
            "tf2_msgs/msg/TFMessage": self._tf_message,
            "geometry_msgs/msg/WrenchStamped": self._wrench_stamped,
            "geometry_msgs/msg/PointStamped": self._point_stamped,
            "rosgraph_msgs/msg/Clock": self._clock,
            "diagnostic_msgs/msg/DiagnosticArray": diagnostic_array,
        }

    @property
    def types(self) -> frozenset[str]:
        """The message types (``pkg/msg/Name``) this encoder writes."""
        return frozenset(self._encoders)

    def encode(self, datatype: str, fields: dict[str, Any]) -> bytes | None:
        """The CDR bytes of a ``pkg/msg/Name`` message, or None for a type it does not write."""
        encode = self._encoders.get(datatype)
        return None if encode is None else encode(fields)

    def _layout(self, key: tuple, make: Callable[[], CdrMessage]) -> CdrMessage:
        msg = self._layouts.get(key)
        if msg is None:
            if len(self._layouts) >= self.max_layouts:
                del self._layouts[next(iter(self._layouts))]
            msg = self._layouts[key] = make()
        return msg

    def _joint_state(self, m: dict[str, Any]) -> bytes:
        names, frame = m["name"], m["header"]["frame_id"]
        values = [m.get(f, ()) for f in JOINT_STATE_FIELDS]
        counts = tuple(len(v) for v in values)
        msg = self._layout(("JointState", frame, tuple(names), counts),
                           lambda: joint_state(names, frame, counts=counts))
        msg.set_time(0, m["header"]["stamp"])
        for field, v in zip(JOINT_STATE_FIELDS, values, strict=True):
            if len(v):
                msg.pack(field, v)
        return msg.bytes()

    def _odometry(self, m: dict[str, Any]) -> bytes:
        frame, child = m["header"]["frame_id"], m["child_frame_id"]
        msg = self._layout(("Odometry", frame, child), lambda: odometry(frame, child))
        pose, twist = m["pose"], m["twist"]
        msg.set_time(0, m["header"]["stamp"])
        msg.pack("pose", (*_xyz(pose["pose"]["position"]), *_xyzw(pose["pose"]["orientation"])))
        msg.pack("pose_covariance", pose["covariance"])
        msg.pack("twist", (*_xyz(twist["twist"]["linear"]), *_xyz(twist["twist"]["angular"])))
        msg.pack("twist_covariance", twist["covariance"])
        return msg.bytes()

    def _tf_message(self, m: dict[str, Any]) -> bytes:
        transforms = m["transforms"]
        frames = tuple((tr["header"]["frame_id"], tr["child_frame_id"]) for tr in transforms)
        msg = self._layout(("TFMessage", frames), lambda: tf_message(frames))
        for k, tr in enumerate(transforms):
            msg.set_time(k, tr["header"]["stamp"])
            x = tr["transform"]
            msg.pack(f"transform/{k}", (*_xyz(x["translation"]), *_xyzw(x["rotation"])))
        return msg.bytes()

    def _wrench_stamped(self, m: dict[str, Any]) -> bytes:
        frame = m["header"]["frame_id"]
        msg = self._layout(("WrenchStamped", frame), lambda: wrench_stamped(frame))
        msg.set_time(0, m["header"]["stamp"])
        msg.pack("wrench", (*_xyz(m["wrench"]["force"]), *_xyz(m["wrench"]["torque"])))
        return msg.bytes()

    def _point_stamped(self, m: dict[str, Any]) -> bytes:
        frame = m["header"]["frame_id"]
        msg = self._layout(("PointStamped", frame), lambda: point_stamped(frame))
        msg.set_time(0, m["header"]["stamp"])
        msg.pack("point", _xyz(m["point"]))
        return msg.bytes()

    def _clock(self, m: dict[str, Any]) -> bytes:
        msg = self._layout(("Clock",), clock)
        msg.set_time(0, m["clock"])
        return msg.bytes()


# ------------------------------------------------------------------------------- reading


def _string_end(data: bytes, at: int) -> tuple[int, int]:
    """(start, end) of the text of the string at ``at`` (aligned), and the offset after it."""
    at += -(at - 4) % 4
    (length,) = _U32.unpack_from(data, at)
    return at + 4, at + 4 + length


def _align(at: int, size: int) -> int:
    return at + (-(at - 4) % size)


def read_header(data: bytes) -> tuple[int, int]:
    """(stamp in ns, offset after the header) of a message starting with a Header."""
    if data[:2] != b"\x00\x01":
        raise ValueError("not a little-endian CDR message")
    sec, nanosec = _STAMP.unpack_from(data, 4)
    _, end = _string_end(data, 12)
    return sec * NS + nanosec, end


def _read_doubles(data: bytes, at: int) -> tuple[np.ndarray, int]:
    """A ``float64[]`` sequence at ``at``: (values, offset after it)."""
    at = _align(at, 4)
    (count,) = _U32.unpack_from(data, at)
    at += 4
    if count:
        at = _align(at, 8)
    return np.frombuffer(data, np.float64, count, at), at + 8 * count


class JointStateReader:
    """Reads ``sensor_msgs/JointState`` bytes; the names are decoded once per distinct name
    section (a driver sends the same names every time)."""

    def __init__(self):
        self._names_raw: bytes | None = None
        self._names: list[str] = []

    def read(self, data: bytes) -> tuple[int, list[str], np.ndarray, np.ndarray, np.ndarray]:
        """(stamp ns, names, position, velocity, effort)."""
        stamp, at = read_header(data)
        start = _align(at, 4)
        (count,) = _U32.unpack_from(data, start)
        at = start + 4
        for _ in range(count):
            _, at = _string_end(data, at)
        raw = data[start:at]
        if raw != self._names_raw:
            names, k = [], start + 4
            for _ in range(count):
                s, k = _string_end(data, k)
                names.append(data[s:k - 1].decode())
            self._names_raw, self._names = raw, names
        position, at = _read_doubles(data, at)
        velocity, at = _read_doubles(data, at)
        effort, _ = _read_doubles(data, at)
        return stamp, self._names, position, velocity, effort


def read_odometry(data: bytes) -> tuple[int, np.ndarray, np.ndarray]:
    """(stamp ns, pose [x y z qx qy qz qw], twist [linear, angular]) of ``nav_msgs/Odometry``."""
    stamp, at = read_header(data)
    _, at = _string_end(data, at)  # child_frame_id
    at = _align(at, 8)
    values = np.frombuffer(data, np.float64, 85, at)
    return stamp, values[:7], values[43:49]


def read_wrench_stamped(data: bytes) -> tuple[int, np.ndarray]:
    """(stamp ns, [force, torque]) of ``geometry_msgs/WrenchStamped``."""
    stamp, at = read_header(data)
    return stamp, np.frombuffer(data, np.float64, 6, _align(at, 8))
