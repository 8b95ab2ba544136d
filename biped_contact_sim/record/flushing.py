"""Files that reach the disk every second, whatever the loop writing them is doing.

A process killed by SIGKILL, the out-of-memory killer or a power cut loses what sits in its
buffers: the Python file buffers, and in an MCAP writer the chunk being built.
:class:`PeriodicFlush` hands them to the operating system every ``interval`` seconds of wall
time from a daemon thread (so a long step or a slow solver does not delay it) and then asks the
disk to keep them (``fsync``), so that at most the last ``interval`` of a run is lost.

The writers and the flush share a lock: the writing loop holds it while it writes one sample,
the thread while it flushes. The ``fsync`` runs without the lock (it only waits for the disk).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

FLUSH_INTERVAL = 1.0  # [s] of wall time between two flushes


class PeriodicFlush:
    """Calls ``flush()`` under ``lock``, then ``sync()`` without it, every ``interval`` s.

    Args:
        lock: The lock the writers hold while they write.
        flush: Hands buffered data to the operating system (called with ``lock`` held).
        sync: Asks the disk to keep it (``os.fsync``), or None.
        interval: Wall seconds between two flushes.
    """

    def __init__(self, lock: threading.Lock, flush: Callable[[], None],
                 sync: Callable[[], None] | None = None, interval: float = FLUSH_INTERVAL):
        self.lock, self.flush, self.sync, self.interval = lock, flush, sync, interval
        self.errors: list[str] = []  # what a flush raised (the disk full, the file gone)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="biped-sim flush", daemon=True)

    def start(self) -> PeriodicFlush:
        """Start the thread; returns self."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the thread and wait for it (the files may then be closed); idempotent."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                with self.lock:
                    if self._stop.is_set():
                        return
                    self.flush()
                if self.sync is not None:
                    self.sync()
            except (OSError, ValueError) as exc:  # ValueError: a file closed under us
                self.errors.append(f"periodic flush: {exc}")
                return
