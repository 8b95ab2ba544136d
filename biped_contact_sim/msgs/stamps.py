"""Message time: ``builtin_interfaces/Time`` from seconds and integer nanoseconds, and back.

The simulated time of a step is a float ``t`` [s]; a message carries it as ``{sec, nanosec}``
and the nodes compare stamps as integer nanoseconds (``stamp_ns``), which are exact where sums
of float ``dt`` are not. ``NS`` is the one nanoseconds-per-second constant of the package.
"""

from __future__ import annotations

import math

NS = 1_000_000_000  # nanoseconds per second
_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1


def stamp(t: float) -> dict[str, int]:
    """Return a ``builtin_interfaces/Time`` (or ``Duration``) for a time in seconds.

    ``sec`` is ``floor(t)`` and ``nanosec`` the rounded rest, always in ``[0, 1e9)``: -1.7 s
    is ``{sec: -2, nanosec: 300000000}``, and a rest that rounds up to 1e9 ns carries into
    ``sec`` (0.9999999999 s is ``{sec: 1, nanosec: 0}``). Splitting before scaling keeps
    nanosecond resolution for large ``t``.

    Args:
        t: Time in seconds.

    Returns:
        ``{"sec": int, "nanosec": int}``.

    Raises:
        ValueError: ``t`` is not finite or ``sec`` does not fit in an int32.
    """
    t = float(t)
    if not math.isfinite(t):
        raise ValueError(f"Time must be finite, got {t}")
    sec = math.floor(t)
    nanosec = round((t - sec) * NS)
    if nanosec >= NS:
        sec += 1
        nanosec -= NS
    if not _INT32_MIN <= sec <= _INT32_MAX:
        raise ValueError(f"Time {t} s does not fit the int32 seconds of builtin_interfaces/Time")
    return {"sec": int(sec), "nanosec": int(nanosec)}


def stamp_ns(t: float) -> int:
    """Integer nanoseconds of :func:`stamp` ``(t)`` (the stamp a message published at t carries)."""
    s = stamp(t)
    return s["sec"] * NS + s["nanosec"]


def stamp_fields(ns: int) -> dict[str, int]:
    """``builtin_interfaces/Time`` fields of an integer nanosecond time (exact)."""
    return {"sec": int(ns // NS), "nanosec": int(ns % NS)}


def ns_from_stamp(sec: int, nanosec: int) -> int:
    """Integer nanoseconds of a ``builtin_interfaces/Time``."""
    return int(sec) * NS + int(nanosec)
