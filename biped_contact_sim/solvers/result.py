"""What every complementarity solver returns, and the input checks they share.

A solver never raises on a numerical outcome: non-convergence, a ray termination or a failed
line search is a :class:`SolverResult` with ``converged = False``, the status saying why, the
best iterate, the iteration count and the residual; the caller (the contact model, then the
simulator) decides what to do with it. Malformed input (wrong shapes, NaN, negative μ) is a
programming error and raises :class:`~biped_contact_sim.errors.InputError`; the texts are the
module constants below.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from biped_contact_sim.errors import InputError

STATUS_CONVERGED = "converged"
STATUS_RAY = "ray_termination"
STATUS_MAX_PIVOTS = "max_pivots"
STATUS_MAX_ITER = "max_iterations"
STATUS_LINE_SEARCH = "line_search_failed"
STATUS_INACCURATE = "inaccurate"  # terminated normally, but the answer does not solve the problem

NOT_SQUARE = "{who}: {name} must be a square (n, n) matrix; got shape {shape}"
BAD_LENGTH = "{who}: {name} must have shape ({n},) to match {other}; got shape {shape}"
NOT_FINITE = "{who}: {name} must be finite; it contains NaN or Inf"
BAD_VALUE = "{who}: {name} = {value!r} must be {expected}"


@dataclass
class SolverResult:
    """Outcome of one solve.

    Attributes:
        x: the solution: z of the LCP, or the stacked per-contact forces (Gauss–Seidel).
        w: the complementary variable: ``w = A z + b`` (LCP) or ``v = G f + c`` (Gauss–Seidel),
            always recomputed from the returned ``x`` and the input data.
        converged: True iff the solver met its own termination test.
        status: one of the ``STATUS_*`` constants.
        iterations: pivots (Lemke), sweeps (Gauss–Seidel), Newton iterations (Fischer–Burmeister).
        residual: the solver's optimality measure at ``x`` (each solver's docstring defines it).
    """

    x: np.ndarray
    w: np.ndarray
    converged: bool
    status: str
    iterations: int
    residual: float


def as_square_matrix(A, who: str, name: str = "A") -> np.ndarray:
    """Return ``A`` as a finite float (n, n) array, or raise InputError naming the problem."""
    A = np.asarray(A, dtype=float)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise InputError(NOT_SQUARE.format(who=who, name=name, shape=A.shape))
    if not np.isfinite(A).all():
        raise InputError(NOT_FINITE.format(who=who, name=name))
    return A


def as_vector(b, n: int, who: str, name: str, other: str) -> np.ndarray:
    """Return ``b`` as a finite float (n,) array, or raise InputError naming the problem."""
    b = np.asarray(b, dtype=float)
    if b.shape != (n,):
        raise InputError(BAD_LENGTH.format(who=who, name=name, n=n, other=other, shape=b.shape))
    if not np.isfinite(b).all():
        raise InputError(NOT_FINITE.format(who=who, name=name))
    return b


def check_positive(value, who: str, name: str) -> float:
    """Return ``value`` as a float if it is finite and > 0, else raise InputError."""
    v = float(value)
    if not (math.isfinite(v) and v > 0.0):
        raise InputError(BAD_VALUE.format(who=who, name=name, value=value,
                                          expected="a finite number > 0"))
    return v


def check_open_interval(value, who: str, name: str, lo: float, hi: float) -> float:
    """Return ``value`` as a float if it lies in the open interval (lo, hi), else raise
    InputError."""
    v = float(value)
    if not lo < v < hi:
        raise InputError(BAD_VALUE.format(who=who, name=name, value=v,
                                          expected=f"in the open interval ({lo:g}, {hi:g})"))
    return v


def check_count(value, who: str, name: str, minimum: int = 0) -> int:
    """Return ``value`` as an int if it is an integer ≥ ``minimum``, else raise InputError."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise InputError(BAD_VALUE.format(who=who, name=name, value=value,
                                          expected=f"an integer >= {minimum}"))
    return int(value)
