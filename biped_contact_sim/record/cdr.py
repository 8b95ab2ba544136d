"""Fast CDR encoders for the messages the trace writes at the record rate (1 kHz).

``mcap_ros2`` encodes any message from its definition, field by field in Python: ~0.4 ms for a
``TFMessage`` of 15 transforms, most of a biped's step. The few types written every sample have
fixed layouts, so they are encoded here with ``struct`` in one pass. The bytes are exactly those
of ``mcap_ros2``'s encoder (test_messages checks it type by type): little-endian CDR (XCDR1)
with the 4-byte encapsulation header ``00 01 00 00``; each primitive aligned to its size from the
end of that header; a string is a uint32 length (with the NUL), its bytes and a NUL; a sequence
a uint32 count and its elements; fixed arrays (covariances) have no count.

Messages are the field dicts of :mod:`.messages`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

ENCAPSULATION = b"\x00\x01\x00\x00"  # CDR, little endian


class _Buffer:
    """A CDR body under construction (offsets count from after the encapsulation header)."""

    __slots__ = ("parts", "size")

    def __init__(self) -> None:
        self.parts: list[bytes] = [ENCAPSULATION]
        self.size = 0

    def _put(self, data: bytes, align: int) -> None:
        pad = -self.size % align
        if pad:
            self.parts.append(b"\x00" * pad)
        self.parts.append(data)
        self.size += pad + len(data)

    def uint32(self, value: int) -> None:
        self._put(struct.pack("<I", value), 4)

    def time(self, stamp: dict[str, int]) -> None:
        self._put(struct.pack("<iI", stamp["sec"], stamp["nanosec"]), 4)

    def string(self, text: str) -> None:
        data = text.encode() + b"\x00"
        self._put(struct.pack("<I", len(data)) + data, 4)

    def float64s(self, values) -> None:
        """Consecutive float64 values (a struct of doubles or a fixed array)."""
        self._put(struct.pack(f"<{len(values)}d", *values), 8)

    def float64_sequence(self, values) -> None:
        self.uint32(len(values))
        if len(values):
            self.float64s(values)

    def bytes(self) -> bytes:
        return b"".join(self.parts)


def _header(b: _Buffer, header: dict[str, Any]) -> None:
    b.time(header["stamp"])
    b.string(header["frame_id"])


def _xyz(v: dict[str, float]) -> tuple[float, float, float]:
    return v["x"], v["y"], v["z"]


def _xyzw(q: dict[str, float]) -> tuple[float, float, float, float]:
    return q["x"], q["y"], q["z"], q["w"]


def joint_state(m: dict[str, Any]) -> bytes:
    """``sensor_msgs/msg/JointState``."""
    b = _Buffer()
    _header(b, m["header"])
    b.uint32(len(m["name"]))
    for name in m["name"]:
        b.string(name)
    for key in ("position", "velocity", "effort"):
        b.float64_sequence(m.get(key, ()))
    return b.bytes()


def odometry(m: dict[str, Any]) -> bytes:
    """``nav_msgs/msg/Odometry``."""
    b = _Buffer()
    _header(b, m["header"])
    b.string(m["child_frame_id"])
    pose, twist = m["pose"], m["twist"]
    b.float64s((*_xyz(pose["pose"]["position"]), *_xyzw(pose["pose"]["orientation"]),
                *pose["covariance"]))
    b.float64s((*_xyz(twist["twist"]["linear"]), *_xyz(twist["twist"]["angular"]),
                *twist["covariance"]))
    return b.bytes()


def tf_message(m: dict[str, Any]) -> bytes:
    """``tf2_msgs/msg/TFMessage``."""
    b = _Buffer()
    b.uint32(len(m["transforms"]))
    for tr in m["transforms"]:
        _header(b, tr["header"])
        b.string(tr["child_frame_id"])
        b.float64s((*_xyz(tr["transform"]["translation"]), *_xyzw(tr["transform"]["rotation"])))
    return b.bytes()


def wrench_stamped(m: dict[str, Any]) -> bytes:
    """``geometry_msgs/msg/WrenchStamped``."""
    b = _Buffer()
    _header(b, m["header"])
    b.float64s((*_xyz(m["wrench"]["force"]), *_xyz(m["wrench"]["torque"])))
    return b.bytes()


def point_stamped(m: dict[str, Any]) -> bytes:
    """``geometry_msgs/msg/PointStamped``."""
    b = _Buffer()
    _header(b, m["header"])
    b.float64s(_xyz(m["point"]))
    return b.bytes()


def clock(m: dict[str, Any]) -> bytes:
    """``rosgraph_msgs/msg/Clock``."""
    b = _Buffer()
    b.time(m["clock"])
    return b.bytes()


#: encoder per schema name; other types go through mcap_ros2's generic encoder
ENCODERS: dict[str, Callable[[dict[str, Any]], bytes]] = {
    "sensor_msgs/msg/JointState": joint_state,
    "nav_msgs/msg/Odometry": odometry,
    "tf2_msgs/msg/TFMessage": tf_message,
    "geometry_msgs/msg/WrenchStamped": wrench_stamped,
    "geometry_msgs/msg/PointStamped": point_stamped,
    "rosgraph_msgs/msg/Clock": clock,
}
