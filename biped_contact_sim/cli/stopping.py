"""How ``biped-sim run`` stops: any signal that asks a process to end keeps what was simulated.

SIGINT (Ctrl-C), SIGTERM (``kill``, systemd, ``docker stop``, a cancelled CI job) and SIGHUP
(the terminal closed) are handled alike:

* while the run simulates, the first one asks it to stop after its current chunk of steps; the
  run then writes everything (summary, trace, CSV, replay, plots) and exits with 128 + the
  signal's number, as a shell reports a process the signal ended (130, 143, 129); its
  ``outcome`` is ``interrupted`` (SIGINT) or ``terminated`` (SIGTERM, SIGHUP);
* before the run simulates (loading, compiling) or after (writing the outputs), and at the
  second signal, the command ends at once (:class:`Aborted`): the open files are closed (the
  trace gets its footer), nothing more is written. Writing a sample and closing the files are
  :meth:`StopSignals.shielded`: the signal takes effect when they are done, so that the trace
  never ends inside a record. The trace and the CSV reach the disk every
  second anyway (``record/flushing.py``), so even SIGKILL loses only the last second.

After SIGHUP the terminal (or the ssh connection) is gone: output to it would fail, so stdout
and stderr, unless redirected to a file, are sent to ``/dev/null`` (what ``nohup`` does) and
the run finishes quietly.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any

#: the signals handled, and the outcome of a run one of them stopped
STOP_SIGNALS = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated",
                signal.SIGHUP: "terminated"}


class Aborted(BaseException):
    """A signal ended the command at once (raised by the handler; a BaseException, like
    KeyboardInterrupt, so that no ``except Exception`` swallows it).

    Attributes:
        signum: The signal's number.
    """

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def name(self) -> str:
        """The signal's name, e.g. ``SIGTERM``."""
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        """128 + the signal's number (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP)."""
        return exit_code(self.signum)


def aborted_by(exc: BaseException) -> Aborted | None:
    """The :class:`Aborted` that ``exc`` is, or that caused it, or None.

    The handler raises wherever the main thread is, also inside Python code that a compiled
    function called back (numba's dispatcher unpickling a constant): the C code around it then
    raises ``SystemError`` from the ``Aborted``, which reaches the command in its place.
    """
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, Aborted):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def exit_code(signum: int) -> int:
    """The exit code of a command a signal stopped: 128 + its number."""
    return 128 + int(signum)


class StopSignals:
    """Context manager that installs the handlers of ``STOP_SIGNALS`` (module docstring) and
    restores the previous ones on exit.

    Between :meth:`arm` and :meth:`disarm` (the simulation), the first signal only sets
    :attr:`signum`; the loop reads :attr:`requested` between chunks of steps.
    """

    def __init__(self) -> None:
        self.signum: int | None = None  # the first signal received while armed
        self.armed = False
        self._previous: dict[int, Any] = {}
        self._shielded = False
        self._pending: int | None = None  # a signal that came while shielded

    @property
    def requested(self) -> bool:
        """True once a signal asked the run to stop."""
        return self.signum is not None

    @property
    def name(self) -> str | None:
        """The name of that signal (``SIGTERM``), or None."""
        return None if self.signum is None else signal.Signals(self.signum).name

    @property
    def outcome(self) -> str | None:
        """``interrupted`` or ``terminated`` for that signal, or None."""
        return None if self.signum is None else STOP_SIGNALS[signal.Signals(self.signum)]

    def arm(self) -> None:
        """The simulation starts: from now the first signal asks it to stop."""
        self.armed = True

    def disarm(self) -> None:
        """The simulation is over: from now any signal ends the command at once."""
        self.armed = False

    @contextlib.contextmanager
    def shielded(self) -> Iterator[None]:
        """A block no signal cuts short (writing a record of the trace, its last chunk and
        footer): a signal that would end the command at once does so when the block ends."""
        if self._shielded:  # nested: the outer block raises
            yield
            return
        self._shielded = True
        try:
            yield
        finally:
            self._shielded = False
            pending, self._pending = self._pending, None
            if pending is not None:
                raise Aborted(pending)

    def handle(self, signum: int, frame: FrameType | None) -> None:
        """The signal handler (module docstring)."""
        if signum == signal.SIGHUP:
            _detach_from_terminal()
        if not self.armed or self.signum is not None:
            if self._shielded:
                self._pending = self._pending or signum
                return
            raise Aborted(signum)
        self.signum = signum
        name = signal.Signals(signum).name
        _say(f"\n{name}: stopping after this chunk of steps and writing what was simulated "
             "(a second signal ends at once)")

    def __enter__(self) -> StopSignals:
        for signum in STOP_SIGNALS:
            self._previous[signum] = signal.signal(signum, self.handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)


def _say(message: str) -> None:
    """A line on stderr that cannot fail. Written to the file descriptor, not through
    ``sys.stderr``: the handler may run while the main code is inside a write to that stream
    (a progress bar), whose buffer then refuses a second writer ("reentrant call",
    RuntimeError); and the terminal may be gone."""
    try:
        os.write(sys.stderr.fileno(), (message + "\n").encode(errors="replace"))
    except (OSError, ValueError, AttributeError):  # no descriptor: a replaced stream
        pass


def _detach_from_terminal() -> None:
    """Send stdout and stderr to /dev/null if they are a terminal, a pipe or a socket (after a
    hang-up nobody reads them: a terminal fails with EIO, a closed pipe with EPIPE); a file
    they are redirected to keeps receiving."""
    for stream in (sys.stdout, sys.stderr):
        try:
            mode = os.fstat(stream.fileno()).st_mode
            if stream.isatty() or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, stream.fileno())
                os.close(devnull)
        except (OSError, ValueError):
            pass
