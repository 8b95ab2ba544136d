"""Write ROS 2 messages (field dicts of :mod:`biped_contact_sim.msgs.messages`) to an MCAP file
without ROS 2.

The file follows the ``ros2`` MCAP profile that rosbag2 writes: CDR-encoded messages (the
nodes' encoder, :mod:`biped_contact_sim.msgs.cdr`, for the types it writes; mcap_ros2's generic
one for the others), one ``ros2msg`` schema per message type named ``pkg/msg/Name`` whose data
is :func:`biped_contact_sim.msgs.msgdefs.full_definition`, and one channel per topic. It can be
opened with Foxglove, ``ros2 bag play`` or ``mcap_ros2.reader.read_ros2_messages``.
"""

import os
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from mcap.records import Schema
from mcap_ros2.writer import Writer

from biped_contact_sim.msgs import cdr, messages, msgdefs
from biped_contact_sim.msgs.stamps import stamp_ns
from biped_contact_sim.msgs.topics import ROBOT_DESCRIPTION, TOPICS

# The QoS a publisher offered, as rosbag2 stores it per channel (``offered_qos_profiles``, a
# YAML list of rmw profiles; enums as numbers: history 1 keep-last, reliability 1 reliable,
# durability 1 transient-local / 2 volatile, liveliness 1 automatic; zero durations mean the
# defaults). ``ros2 bag play`` offers the same QoS again, so a latched topic recorded as
# transient-local reaches a subscriber that starts after the playback (RViz, robot_state_publisher).
_QOS = """- history: 1
  depth: {depth}
  reliability: 1
  durability: {durability}
  deadline:
    sec: 0
    nsec: 0
  lifespan:
    sec: 0
    nsec: 0
  liveliness: 1
  liveliness_lease_duration:
    sec: 0
    nsec: 0
  avoid_ros_namespace_conventions: false"""
QOS_VOLATILE = _QOS.format(depth=10, durability=2)
QOS_TRANSIENT_LOCAL = _QOS.format(depth=1, durability=1)
QOS_METADATA_KEY = "offered_qos_profiles"


def _time_ns(t: float) -> int:
    """Nanoseconds since 0 of a time in seconds, for the MCAP log and publish times."""
    ns = stamp_ns(t)
    if ns < 0:
        raise ValueError(f"MCAP times cannot be negative, got t = {t} s")
    return ns


class McapTraceWriter:
    """Records ROS 2 messages given as field dicts into an MCAP file.

    Use as a context manager (or call :meth:`close`)::

        with McapTraceWriter("trace.mcap", robot_description=urdf) as writer:
            writer.write("/clock", "rosgraph_msgs/Clock", messages.clock(t), t)

    Schemas are registered once per type and channels created on the first message of each
    topic. Log and publish times are the simulated time ``t`` in nanoseconds.

    Every channel carries the QoS its publisher offered (``offered_qos_profiles``):
    volatile, or transient-local for latched topics (``latched=True``). The robot description
    is ROS 2's latched ``/robot_description``: a ``std_msgs/String`` written once at t = 0,
    when the file is opened.
    """

    def __init__(self, path: str | Path, robot_description: str | None = None) -> None:
        """Open ``path`` for writing (replacing it) and start the MCAP stream.

        Args:
            path: Output file.
            robot_description: URDF text written on ``/robot_description`` at t = 0, or None.
        """
        self._file: IO[bytes] = open(path, "wb")  # closed by close()
        self._writer = Writer(self._file)
        self._schemas: dict[str, Schema] = {}
        self._topic_types: dict[str, str] = {}
        self._sequences: dict[str, int] = {}
        self._closed = False
        self._encoder = cdr.FieldEncoder()
        if robot_description is not None:
            entry = TOPICS[ROBOT_DESCRIPTION]
            self.write(ROBOT_DESCRIPTION, entry.type, messages.string(robot_description), 0.0,
                       latched=entry.latched)

    def write(self, topic: str, datatype: str, fields: dict[str, Any], t: float,
              latched: bool = False) -> None:
        """Write one message.

        Args:
            topic: Topic name, e.g. ``/joint_states``.
            datatype: Message type, ``pkg/Name`` or ``pkg/msg/Name``.
            fields: Field dict of the message (see :mod:`.messages`).
            t: Time of the message in seconds (not negative).
            latched: The topic is transient-local (its first message decides).

        Raises:
            KeyError: No bundled definition for ``datatype``.
            ValueError: The writer is closed, ``t`` is negative, or the topic was already
                written with another type.
        """
        if self._closed:
            raise ValueError("McapTraceWriter is closed")
        name = msgdefs.schema_name(datatype)
        known = self._topic_types.setdefault(topic, name)
        if known != name:
            raise ValueError(f"Topic {topic!r} already carries {known}, not {name}")
        schema = self._schemas.get(name)
        if schema is None:
            schema = self._writer.register_msgdef(name, msgdefs.full_definition(name))
            self._schemas[name] = schema
        time_ns = _time_ns(t)  # refuses negative times before anything is registered
        if topic not in self._writer._channel_ids:
            # mcap_ros2's writer registers channels without metadata: register it here, with the
            # offered QoS, in the table it looks channels up in (test_messages reads it back).
            self._writer._channel_ids[topic] = self._writer._writer.register_channel(
                topic=topic, message_encoding="cdr", schema_id=schema.id,
                metadata={QOS_METADATA_KEY: QOS_TRANSIENT_LOCAL if latched else QOS_VOLATILE})
        sequence = self._sequences.get(topic, 0)
        self._sequences[topic] = sequence + 1
        data = self._encoder.encode(name, fields)
        if data is None:
            self._writer.write_message(
                topic, schema, fields, log_time=time_ns, publish_time=time_ns,
                sequence=sequence)
        else:  # the nodes' encoder: the same bytes, ~10 times faster
            self._writer._writer.add_message(
                channel_id=self._writer._channel_ids[topic], log_time=time_ns,
                publish_time=time_ns, sequence=sequence, data=data)

    def flush(self) -> None:
        """Close the chunk being built and hand everything written so far to the operating
        system: a reader that reads the file linearly, without its summary (mcap's
        ``NonSeekingReader``, ``mcap recover``, :mod:`.recover`), then finds every message
        written before this call even if the process dies next. (Each flush ends a chunk:
        called every second, the chunks stay large enough to compress well.)"""
        if not self._closed:
            self._writer._writer.flush()

    def sync(self) -> None:
        """Ask the disk to keep what :meth:`flush` handed over (``fsync``; survives a power
        cut). Needs no lock: it only waits for the disk."""
        if not self._closed:
            os.fsync(self._file.fileno())

    def close(self) -> None:
        """Finish the MCAP stream (summary and footer) and close the file; idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self._writer.finish()
        finally:
            self._file.close()

    def __enter__(self) -> "McapTraceWriter":
        """Return the writer itself.

        Returns:
            This writer.
        """
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the writer, also when the block raised.

        Args:
            exc_type: Type of the exception raised in the block, if any.
            exc: The exception, if any.
            tb: Its traceback, if any.
        """
        self.close()
