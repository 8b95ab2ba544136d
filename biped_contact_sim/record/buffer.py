"""A bounded, evenly decimated list: what a run keeps in memory for its plots and metrics.

The recorder streams every recorded sample to disk; the plots and the whole-run metrics need the
samples again at the end. Keeping them all would grow without bound (~9 kB per sample, 1 kHz),
so the buffer keeps at most ``capacity`` of them: when full it drops every other sample and from
then on keeps one sample in two (then four, ...). The kept samples stay evenly spaced in time and
always include the first one; up to ``capacity`` samples nothing is dropped.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

DEFAULT_CAPACITY = 8192  # ~75 MB of biped samples; a walk (6 500 samples) is kept whole


class DecimatingBuffer:
    """List-like container (``append``, ``len``, iteration, indexing and slices).

    Args:
        capacity: Most samples kept (an even number ≥ 2).
    """

    def __init__(self, capacity: int = DEFAULT_CAPACITY):
        if capacity < 2 or capacity % 2:
            raise ValueError(f"capacity = {capacity!r} must be an even number >= 2")
        self.capacity = capacity
        self.stride = 1  # one sample kept per ``stride`` appended
        self.appended = 0  # samples offered so far
        self._items: list[Any] = []

    def append(self, item: Any) -> None:
        """Offer a sample; it is kept if it falls on the current stride."""
        if self.appended % self.stride == 0:
            if len(self._items) == self.capacity:
                del self._items[1::2]
                self.stride *= 2
                if self.appended % self.stride:
                    self.appended += 1
                    return
            self._items.append(item)
        self.appended += 1

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
