"""Progress reporting of ``biped-sim``: a tqdm bar on a terminal, plain lines in a log.

tqdm redraws its bar with carriage returns; written to a file or a CI log that becomes one
line of thousands of bars. Off a terminal we print a line at every tenth of the work instead.
``--quiet`` silences both (``set_quiet``).
"""

from __future__ import annotations

import sys
import time
from typing import Any

_QUIET = False
LOG_FRACTIONS = 10  # lines per task off a terminal


def set_quiet(quiet: bool) -> None:
    """Silence (or restore) every progress report of this process."""
    global _QUIET
    _QUIET = quiet


def is_quiet() -> bool:
    """True after ``set_quiet(True)``."""
    return _QUIET


def note(message: str) -> None:
    """A status line on stderr (what is being done now), unless quiet."""
    if not _QUIET:
        print(message, file=sys.stderr, flush=True)


class _LogProgress:
    """tqdm's ``update``/``close``/``n`` interface, printing one line per tenth of the total."""

    def __init__(self, total: int, desc: str, unit: str):
        self.total, self.desc, self.unit = max(1, int(total)), desc, unit
        self.n = 0
        self._next = 1
        self._start = time.perf_counter()

    def update(self, count: int = 1) -> None:
        self.n += count
        while self._next <= LOG_FRACTIONS and self.n * LOG_FRACTIONS >= self._next * self.total:
            elapsed = time.perf_counter() - self._start
            print(f"{self.desc}: {10 * self._next:3d} % ({self.n}/{self.total} {self.unit}, "
                  f"{elapsed:.1f} s)", file=sys.stderr, flush=True)
            self._next += 1

    def close(self) -> None:
        pass


class _Silent:
    """A progress object that reports nothing (tqdm's ``total``, ``n``, ``update``, ``refresh``
    and ``close``: ``run_parallel`` grows ``total`` as its workers report their runs)."""

    def __init__(self, total: int = 0) -> None:
        self.total, self.n = total, 0

    def update(self, count: int = 1) -> None:
        self.n += count

    def refresh(self) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(total: int, desc: str, unit: str = "step") -> Any:
    """A progress object with tqdm's ``update(k)``, ``close()`` and ``n``.

    Args:
        total: Units of work.
        desc: Label (e.g. ``walk/penalty_fl``).
        unit: Name of a unit.

    Returns:
        A tqdm bar on an interactive stderr, a line-per-tenth logger otherwise, or a silent
        object when quiet.
    """
    if _QUIET:
        return _Silent(total)
    if sys.stderr.isatty():
        from tqdm import tqdm
        return tqdm(total=total, unit=unit, desc=desc, file=sys.stderr)
    return _LogProgress(total, desc, unit)
