"""Recover a ``trace.mcap`` whose writer died before finishing it (SIGKILL, power cut).

``biped-sim run`` flushes its trace every second (:mod:`.flushing`), so such a file holds
complete chunks followed by at most a second of partial data, and no summary or footer: readers
that start from the footer (mcap's ``SeekingReader``, ``mcap_ros2``, rosbags, Foxglove) refuse
it. This module reads the file linearly, as mcap's ``StreamReader`` does, stops at the first
incomplete record, and writes every complete message (with its schema and channel) to a new,
finished MCAP file that every reader opens::

    python -m biped_contact_sim.record.recover runs/walk/trace.mcap   # → trace.recovered.mcap

The Go ``mcap`` tool's ``mcap recover in.mcap -o out.mcap`` does the same.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from mcap.exceptions import McapError
from mcap.records import Channel, Header, Message, Schema
from mcap.stream_reader import StreamReader
from mcap.writer import Writer

from biped_contact_sim.msgs.stamps import NS

LIBRARY = "biped_contact_sim recover"


@dataclass
class Recovery:
    """What :func:`recover_trace` found: messages copied, the last log time [ns] (None if
    none), and why reading stopped (None: the file ended cleanly)."""

    messages: int
    last_log_time: int | None
    stopped: str | None


def recover_trace(source: str | Path, target: str | Path) -> Recovery:
    """Copy every complete message of ``source`` into a finished MCAP file ``target``.

    Args:
        source: An MCAP file, finished or cut short.
        target: The file to write (replaced).

    Returns:
        The count of messages, the last log time and what ended the reading.

    Raises:
        McapError: ``source`` is not an MCAP file (wrong magic).
        OSError: a file cannot be read or written.
    """
    schemas: dict[int, int] = {}  # source schema id → target id
    channels: dict[int, int] = {}
    count, last, stopped = 0, None, None
    with open(source, "rb") as src, open(target, "wb") as dst:
        records = StreamReader(src).records
        writer = Writer(dst)
        header = next(records)  # raises InvalidMagic for another kind of file
        writer.start(profile=header.profile if isinstance(header, Header) else "",
                     library=LIBRARY)
        try:
            for record in records:
                if isinstance(record, Schema) and record.id not in schemas:
                    schemas[record.id] = writer.register_schema(record.name, record.encoding,
                                                                record.data)
                elif isinstance(record, Channel) and record.id not in channels:
                    channels[record.id] = writer.register_channel(
                        record.topic, record.message_encoding, schemas.get(record.schema_id, 0),
                        dict(record.metadata))
                elif isinstance(record, Message) and record.channel_id in channels:
                    writer.add_message(channels[record.channel_id], record.log_time,
                                       record.data, record.publish_time, record.sequence)
                    count += 1
                    last = record.log_time if last is None else max(last, record.log_time)
        # The cut: a record that ends past the end of the file (EndOfFile), or, after a power
        # cut, blocks the file system allocated but never wrote (zeros, garbage: any error
        # the decoding raises). Everything before it is kept.
        except Exception as exc:
            stopped = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        writer.finish()
    return Recovery(count, last, stopped)


def main(argv: list[str] | None = None) -> int:
    """``python -m biped_contact_sim.record.recover TRACE [-o OUT]``; exit 0 if messages
    were recovered, 1 if none, 2 if the file cannot be read."""
    parser = argparse.ArgumentParser(
        prog="python -m biped_contact_sim.record.recover",
        description="Copy the complete messages of an MCAP trace cut short (no footer) into a "
                    "finished file that every reader opens.")
    parser.add_argument("trace", type=Path, help="the trace.mcap to recover")
    parser.add_argument("-o", "--output", type=Path,
                        help="file to write (default: <trace>.recovered.mcap beside it)")
    args = parser.parse_args(argv)
    output = args.output or args.trace.with_suffix(".recovered.mcap")
    try:
        found = recover_trace(args.trace, output)
    except (OSError, McapError) as exc:
        print(f"error: {args.trace}: {exc}", file=sys.stderr)
        return 2
    end = "" if found.last_log_time is None else f", up to t = {found.last_log_time / NS:.3f} s"
    print(f"{output}: {found.messages} messages{end}"
          + (f" (reading stopped at the cut: {found.stopped})" if found.stopped else ""))
    return 0 if found.messages else 1


if __name__ == "__main__":
    sys.exit(main())
