"""How a node stops: SIGINT and SIGTERM taken by one thread, answered at any moment.

A node spends seconds importing rclpy, pinocchio and numba, and numba may compile kernels on
a machine where ``biped-sim warm-up`` did not run; ``ros2 launch`` stops its processes with
SIGINT whenever it ends, also during that time. Python runs signal handlers in the main thread
between bytecodes only, so a handler does not run while the main thread is inside a long C
call (an LLVM optimisation pass, a DDS call). So the signals are blocked in every thread and
one daemon thread waits for them (``signal.sigwait``), whatever the main thread is doing:

* before the node's loop runs (start-up): the process ends at once, exit code 0, with one
  line saying in which phase it was;
* once the loop runs: the first signal asks it to stop (it sees the request within one wait,
  ``node_common.MAX_WAIT``), the node is destroyed and rclpy shut down; if that has not ended
  within :data:`GRACE` seconds, or a second signal comes, the process ends at once (exit 0).

Nothing heavy is imported here: :func:`install` runs first thing in the console entry points.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable

SIGNALS = (signal.SIGINT, signal.SIGTERM)
GRACE = 1.5  # [s] a node still running this long after a stop request exits at once


class Stopper:
    """The stop requests of one process (one per process: :func:`install`).

    Attributes:
        phase: what the node is doing now (said when a signal ends the start-up).
        requested: a stop was requested.
    """

    def __init__(self, name: str):
        self.name = name
        self.started = time.perf_counter()
        self.phase = "importing rclpy, pinocchio and numba"
        self.requested = False
        self._on_stop: Callable[[], None] | None = None
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------- main thread side
    def attach(self, on_stop: Callable[[], None]) -> None:
        """The node's loop runs: a signal now calls ``on_stop`` (at once if one came)."""
        with self._lock:
            self._on_stop = on_stop
            pending = self.requested
        if pending:
            on_stop()

    def finished(self) -> None:
        """The node is destroyed and rclpy shut down: nothing more to wait for."""
        self._done.set()

    # ---------------------------------------------------------------- signal thread side
    def _say(self, text: str) -> None:
        os.write(2, f"[{self.name}] {text}\n".encode())

    def request(self, signum: int) -> None:
        """A signal arrived (called on the signal thread)."""
        with self._lock:
            first = not self.requested
            self.requested = True
            on_stop = self._on_stop
        if on_stop is None:
            self._say(f"stopped by {signal.Signals(signum).name} during start-up "
                      f"({self.phase})")
            os._exit(0)
        if not first:
            self._say(f"stopping now: second {signal.Signals(signum).name}")
            os._exit(0)
        on_stop()
        threading.Thread(target=self._deadline, daemon=True).start()

    def _deadline(self) -> None:
        if not self._done.wait(GRACE):
            self._say(f"stopping now: still running {GRACE:g} s after the stop request")
            os._exit(0)

    def _wait_loop(self) -> None:
        while True:
            self.request(signal.sigwait(SIGNALS))


def install(name: str) -> Stopper:
    """Block SIGINT and SIGTERM in this thread (and so in every thread started later: rclpy's,
    the DDS middleware's) and start the thread that takes them. Call it before anything
    starts a thread."""
    stopper = Stopper(name)
    signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    stopper._thread = threading.Thread(target=stopper._wait_loop, name="signals", daemon=True)
    stopper._thread.start()
    return stopper


def timed_phase(stopper: Stopper | None, log: Callable[[str], None]) -> Callable[[str, str], None]:
    """A function ``phase(done, next)``: logs ``done`` with the time since the last call (the
    first: since the process installed its ``stopper``) and records ``next`` as what the node
    is doing now (said if a signal ends the start-up)."""
    last = [stopper.started if stopper is not None else time.perf_counter()]

    def phase(done: str, following: str) -> None:
        now = time.perf_counter()
        log(f"{done} ({now - last[0]:.2f} s)")
        last[0] = now
        if stopper is not None:
            stopper.phase = following

    return phase
