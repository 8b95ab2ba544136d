"""Per-contact persistent rows (warm starts), keyed by contact id.

Contact sets change from step to step (points enter and leave; with collision detection their
number and order change too), so a warm start is stored per contact id and looked up by id,
never by position in the arrays. Lookups and stores work on arrays (no per-step dicts).
"""

from __future__ import annotations

import numpy as np

from biped_contact_sim.solvers.warm_start_kernels import match_keys


class KeyedRows:
    """Rows of a fixed width stored under integer contact ids (the last committed step's).

    Args:
        width: number of values per contact.
        dtype: their type.
    """

    def __init__(self, width: int, dtype=np.float64):
        self.width = width
        self.dtype = dtype
        self.clear()

    def clear(self) -> None:
        self.keys = np.empty(0, dtype=np.int64)
        self.rows = np.empty((0, self.width), dtype=self.dtype)

    def lookup(self, keys: np.ndarray, out: np.ndarray, fill=0) -> int:
        """Fill ``out`` (len(keys), width) with the stored rows of ``keys`` (``fill`` for ids
        not stored); returns how many ids were found."""
        pos = np.empty(len(keys), dtype=np.int64)
        found = match_keys(self.keys, keys, pos)
        if found == len(keys):
            out[:] = self.rows[pos]
        else:
            out[:] = fill
            hit = pos >= 0
            out[hit] = self.rows[pos[hit]]
        return found

    def store(self, keys: np.ndarray, rows: np.ndarray) -> None:
        """Replace the stored rows by ``rows`` under ``keys`` (kept, not copied: the caller
        hands over arrays it no longer writes to)."""
        self.keys = np.asarray(keys, dtype=np.int64)
        self.rows = np.asarray(rows, dtype=self.dtype).reshape(len(self.keys), self.width)
