"""Helpers of the tests that run ``biped-sim`` as a process and read what it leaves behind
(imported, not collected)."""

import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

ENV = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg",
       "PYTHONUNBUFFERED": "1"}


def biped_sim(*args: str, **kwargs) -> subprocess.Popen:
    """``biped-sim ARGS`` as a subprocess (the entry point's module, this interpreter), with
    text pipes for stdout and stderr."""
    return subprocess.Popen([sys.executable, "-m", "biped_contact_sim.cli.main", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=ENV, **kwargs)


def wait_until(condition, timeout: float = 180.0, what: str = "condition",
               proc: subprocess.Popen | None = None) -> None:
    """Poll ``condition()`` every 0.1 s until it is true; fail after ``timeout`` s, or at once
    if ``proc`` exits first."""
    deadline = time.monotonic() + timeout
    while not condition():
        if proc is not None and proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"the run exited ({proc.returncode}) before {what}:\n{err}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {timeout} s")
        time.sleep(0.1)


def recording(out: Path, proc: subprocess.Popen, size: int = 50_000) -> None:
    """Wait until the run in ``proc`` is simulating and its CSV has ``size`` bytes on disk."""
    csv = out / "timeseries.csv"
    wait_until(lambda: csv.exists() and csv.stat().st_size > size, what="recorded samples",
               proc=proc)


def read_trace(path, reader=None):
    """({topic: channel metadata}, {topic: [decoded messages]}) of an MCAP file, read with
    ``mcap_ros2.reader.read_ros2_messages`` (from the path: the summary, or from ``reader``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from mcap_ros2.reader import read_ros2_messages
    metadata, messages = {}, {}
    for item in read_ros2_messages(reader if reader is not None else str(path)):
        metadata[item.channel.topic] = dict(item.channel.metadata)
        messages.setdefault(item.channel.topic, []).append(item.ros_msg)
    return metadata, messages


def csv_rows(path: Path) -> int:
    """Complete data rows of ``timeseries.csv`` (a row cut by a kill does not count)."""
    text = path.read_text()
    return text.count("\n") - 1
