"""Write ROS 2 messages (field dicts of :mod:`.messages`) to an MCAP file without ROS 2.

The file follows the ``ros2`` MCAP profile that rosbag2 writes: CDR-encoded messages, one
``ros2msg`` schema per message type named ``pkg/msg/Name`` whose data is
:func:`.msgdefs.full_definition`, and one channel per topic. It can be opened with Foxglove,
``ros2 bag play`` or ``mcap_ros2.reader.read_ros2_messages``.
"""

from pathlib import Path
from types import TracebackType
from typing import IO, Any

from mcap.records import Schema
from mcap_ros2.writer import Writer

from biped_contact_sim.record import messages, msgdefs

ROBOT_DESCRIPTION_TOPIC = "/robot_description"


def _time_ns(t: float) -> int:
    """Nanoseconds since 0 of a time in seconds, for the MCAP log and publish times."""
    time = messages.stamp(t)
    if time["sec"] < 0:
        raise ValueError(f"MCAP times cannot be negative, got t = {t} s")
    return time["sec"] * 1_000_000_000 + time["nanosec"]


class McapTraceWriter:
    """Records ROS 2 messages given as field dicts into an MCAP file.

    Use as a context manager (or call :meth:`close`)::

        with McapTraceWriter("trace.mcap", robot_description=urdf) as writer:
            writer.write("/clock", "rosgraph_msgs/Clock", messages.clock(t), t)

    Schemas are registered once per type and channels created on the first message of each
    topic. Log and publish times are the simulated time ``t`` in nanoseconds.

    The robot description stands in for ROS 2's latched (transient-local) ``/robot_description``
    topic: it is simply written once, as a ``std_msgs/String`` at t = 0, when the file is
    opened. The channel carries no QoS metadata (``mcap_ros2``'s writer does not set channel
    metadata), so ``ros2 bag play`` republishes it with its default, volatile QoS.
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
        if robot_description is not None:
            self.write(
                ROBOT_DESCRIPTION_TOPIC,
                "std_msgs/String",
                messages.string(robot_description),
                0.0,
            )

    def write(self, topic: str, datatype: str, fields: dict[str, Any], t: float) -> None:
        """Write one message.

        Args:
            topic: Topic name, e.g. ``/joint_states``.
            datatype: Message type, ``pkg/Name`` or ``pkg/msg/Name``.
            fields: Field dict of the message (see :mod:`.messages`).
            t: Time of the message in seconds (not negative).

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
        time_ns = _time_ns(t)
        sequence = self._sequences.get(topic, 0)
        self._sequences[topic] = sequence + 1
        self._writer.write_message(
            topic, schema, fields, log_time=time_ns, publish_time=time_ns, sequence=sequence
        )

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
