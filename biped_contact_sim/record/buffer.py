"""A bounded, evenly decimated list: what a run keeps in memory for its plots and metrics.

The recorder streams every recorded sample to disk; the plots and the whole-run metrics need the
samples again at the end. Keeping them all would grow without bound (~13 kB per sample of a
biped under ``wbc``, 200 samples per simulated second), so the buffer keeps at most
``capacity`` samples and at most ``budget`` bytes of them: when either is exceeded it drops
every other sample and from then on keeps one sample in two (then four, ...). The kept samples
stay evenly spaced in time and always include the first one. The bytes are those of the kept
samples (:func:`deep_sizeof`), so the bound holds whatever a sample holds: a ``stand`` run
reaches the budget after ~6 simulated seconds and its memory stays flat from there, for 60 s as
for 600 s (docs/benchmarks.md "Recording, memory and the command line").
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import numpy as np

DEFAULT_CAPACITY = 8192  # samples
DEFAULT_BUDGET = 16 * 2**20  # [bytes] a whole walk (1 300 samples, 13 MB) is kept whole
#: one kept sample in SIZE_EVERY is measured; the others count as the last one measured (the
#: samples of a run are alike: same robot, same arrays; contact sets change their size a little)
SIZE_EVERY = 32


class DecimatingBuffer:
    """List-like container (``append``, ``len``, iteration, indexing and slices).

    Args:
        capacity: Most samples kept (an even number ≥ 2).
        budget: Most bytes kept (:func:`deep_sizeof` of the kept samples), or None for no
            byte bound; the first sample is kept whatever its size.
    """

    def __init__(self, capacity: int = DEFAULT_CAPACITY, budget: int | None = DEFAULT_BUDGET):
        if capacity < 2 or capacity % 2:
            raise ValueError(f"capacity = {capacity!r} must be an even number >= 2")
        if budget is not None and budget <= 0:
            raise ValueError(f"budget = {budget!r} must be > 0 bytes (or None)")
        self.capacity, self.budget = capacity, budget
        self.stride = 1  # one sample kept per ``stride`` offered
        self.appended = 0  # samples offered so far
        self.nbytes = 0  # deep size of the kept samples (estimated: ``SIZE_EVERY``)
        self.kept = 0  # samples kept so far (some dropped since)
        self._size = 0  # the last size measured
        self._items: list[Any] = []
        self._sizes: list[int] = []

    def append(self, item: Any) -> None:
        """Offer a sample; it is kept if it falls on the current stride (then the buffer
        halves itself while it holds too many samples or bytes)."""
        k = self.appended
        self.appended += 1
        if k % self.stride:
            return
        size = 0
        if self.budget is not None:
            if self.kept % SIZE_EVERY == 0:  # deep_sizeof costs ~100 µs: not every sample
                self._size = deep_sizeof(item)
            size = self._size
        self.kept += 1
        self._items.append(item)
        self._sizes.append(size)
        self.nbytes += size
        while len(self._items) > 1 and (len(self._items) > self.capacity or (
                self.budget is not None and self.nbytes > self.budget)):
            del self._items[1::2]  # sample i was offered at i·stride: keep even multiples
            del self._sizes[1::2]
            self.nbytes = sum(self._sizes)
            self.stride *= 2

    @property
    def decimated(self) -> bool:
        """True once samples have been dropped."""
        return self.stride > 1

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items)

    def __getitem__(self, index):
        return self._items[index]

    def __bool__(self) -> bool:
        return bool(self._items)


def deep_sizeof(obj: Any) -> int:
    """Bytes an object holds: its own size and, recursively, that of the containers, instance
    attributes (``__dict__`` and ``__slots__``) and numpy arrays (with the buffer a view looks
    into) it references, each counted once. Classes, modules and callables are shared, not
    held, and are not counted."""
    seen: set[int] = set()
    stack = [obj]
    total = 0
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, (type, ModuleType)) or callable(o):
            continue
        seen.add(id(o))
        total += sys.getsizeof(o)
        if isinstance(o, np.ndarray):
            if o.base is not None:
                stack.append(o.base)
        elif isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, (list, tuple, set, frozenset)):
            stack.extend(o)
        elif not isinstance(o, (str, bytes, int, float, complex, np.generic)) and o is not None:
            stack.extend(getattr(o, "__dict__", {}).values())
            for cls in type(o).__mro__:
                for name in getattr(cls, "__slots__", ()):
                    stack.append(getattr(o, name, None))
    return total


class RunningStat:
    """Count, sum, minimum and maximum of a per-step statistic, in constant memory (a run of
    10 minutes at 1 kHz would otherwise keep 600 000 values per statistic)."""

    __slots__ = ("count", "max", "min", "sum")

    def __init__(self) -> None:
        self.count, self.sum = 0, 0.0
        self.min, self.max = float("inf"), float("-inf")

    def append(self, value: float) -> None:
        """Add one value (named like ``list.append``, which this replaces)."""
        self.count += 1
        self.sum += value
        self.min = min(self.min, value)
        self.max = max(self.max, value)

    @property
    def mean(self) -> float:
        return self.sum / self.count if self.count else float("nan")

    def __bool__(self) -> bool:
        return self.count > 0
