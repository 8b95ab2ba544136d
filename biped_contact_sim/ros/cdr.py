"""The per-period messages as serialized CDR bytes, written and read without rclpy's message
classes.

Measured in a lockstep closed loop over DDS (``python -m biped_contact_sim.ros.overhead``,
cProfile of both nodes): converting a message between rclpy's Python classes and its C form
costs ~0.1-0.3 ms on this 2-core machine — the generated ``__init__`` of every nested message
(Header, Time, Vector3, ...) runs an import statement and per-field checks — and a period moves
five such messages through each node. rclpy publishes ``bytes`` as a serialized message
(``publish_raw``) and hands ``raw=True`` subscriptions the serialized bytes, so the messages of
every period are written into preallocated CDR buffers (constant parts, e.g. joint names and
frames, written once; the stamp and the numbers per period, through numpy views) and read with
``struct``/numpy. Everything else (visual topics, diagnostics) keeps the message classes.

The layout is OMG CDR, little endian, as rmw_fastrtps writes it: a 4-byte encapsulation
header ``00 01 00 00``, then each field aligned to its own size relative to the end of that
header; strings as uint32 length (with the terminating NUL) + bytes + NUL; sequences as a
uint32 count then the elements. test/ros/test_nodes_cdr.py checks the bytes equal rclpy's
``serialize_message`` and that what is read equals ``deserialize_message``.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np

NS = 1_000_000_000
ENCAPSULATION = b"\x00\x01\x00\x00"  # CDR_LE, no options
_U32 = struct.Struct("<I")
_STAMP = struct.Struct("<iI")


class _Builder:
    """Appends CDR fields to a buffer, recording the offsets of the variable parts."""

    def __init__(self):
        self.buf = bytearray(ENCAPSULATION)
        self.offsets: dict[str, int] = {}

    def align(self, size: int) -> None:
        self.buf += b"\x00" * (-(len(self.buf) - 4) % size)

    def u32(self, value: int) -> None:
        self.align(4)
        self.buf += _U32.pack(value)

    def string(self, text: str) -> None:
        data = text.encode() + b"\x00"
        self.u32(len(data))
        self.buf += data

    def stamp(self, name: str = "stamp") -> None:
        self.align(4)
        self.offsets[name] = len(self.buf)
        self.buf += b"\x00" * 8

    def header(self, frame_id: str) -> None:
        self.stamp()
        self.string(frame_id)

    def doubles(self, name: str, count: int, sequence: bool) -> None:
        if sequence:
            self.u32(count)
        if count:
            self.align(8)
        self.offsets[name] = len(self.buf)
        self.buf += b"\x00" * (8 * count)


class CdrMessage:
    """A serialized message of fixed layout: write the stamp and the numbers, get the bytes."""

    def __init__(self, builder: _Builder, blocks: dict[str, int]):
        self.buf = builder.buf
        self._stamp = builder.offsets.get("stamp")
        self.views = {name: np.frombuffer(self.buf, np.float64, count, builder.offsets[name])
                      for name, count in blocks.items()}

    def set_stamp(self, ns: int) -> None:
        _STAMP.pack_into(self.buf, self._stamp, ns // NS, ns % NS)

    def bytes(self) -> bytes:
        return bytes(self.buf)


def joint_state(names: Sequence[str], frame_id: str = "", effort_only: bool = False
                ) -> CdrMessage:
    """``sensor_msgs/JointState`` with ``names``: views ``position``, ``velocity``, ``effort``
    (with ``effort_only``, a torque command: empty position and velocity, view ``effort``)."""
    b = _Builder()
    b.header(frame_id)
    b.u32(len(names))
    for name in names:
        b.string(str(name))
    fields = {f: 0 if effort_only and f != "effort" else len(names)
              for f in ("position", "velocity", "effort")}
    for field, count in fields.items():
        b.doubles(field, count, sequence=True)
    return CdrMessage(b, {f: n for f, n in fields.items() if n})


def odometry(frame_id: str, child_frame_id: str) -> CdrMessage:
    """``nav_msgs/Odometry``: views ``pose`` (position xyz, orientation xyzw), ``twist``
    (linear, angular); covariances zero."""
    b = _Builder()
    b.header(frame_id)
    b.string(child_frame_id)
    b.doubles("pose", 7, sequence=False)
    b.doubles("pose_covariance", 36, sequence=False)
    b.doubles("twist", 6, sequence=False)
    b.doubles("twist_covariance", 36, sequence=False)
    return CdrMessage(b, {"pose": 7, "twist": 6})


def wrench_stamped(frame_id: str) -> CdrMessage:
    """``geometry_msgs/WrenchStamped``: view ``wrench`` (force xyz, torque xyz)."""
    b = _Builder()
    b.header(frame_id)
    b.doubles("wrench", 6, sequence=False)
    return CdrMessage(b, {"wrench": 6})


def clock() -> CdrMessage:
    """``rosgraph_msgs/Clock``."""
    b = _Builder()
    b.stamp()
    return CdrMessage(b, {})


# ------------------------------------------------------------------------------------ reading


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
