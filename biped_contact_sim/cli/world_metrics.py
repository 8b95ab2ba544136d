"""Whole-run figures of a world's free objects (``summary.json`` ``metrics.objects``).

For each free object of the world (``sim.world.objects``), from the recorded samples:

* ``initial_position_m``, ``final_position_m``: its centre at the first and the last sample;
* ``slide_distance_m``: the horizontal distance from its first position to the last sample
  at which it was still at its first height (within ``ON_SUPPORT``): how far it slid on
  what it rested on before it tipped off or was lifted (Chardonnet et al. 2006 measure the
  slide of a pushed object this way, on the table, before it falls);
* ``left_support``: its height fell more than ``FELL`` below the first (off its table);
* ``left_support_t``: the time of the last sample at its first height, if it left it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

ON_SUPPORT = 2e-3  # [m] still at its first height: resting, sliding (contact compliance)
FELL = 0.05  # [m] below its first height: off its support


def object_metrics(result) -> dict[str, Any]:
    """{object name: figures (module docstring)} of a run's samples; {} without objects."""
    world = getattr(result.sim, "world", None)
    samples = result.samples
    if world is None or not world.objects or not samples or not len(samples[0].step.q_objects):
        return {}
    t = np.array([s.step.t for s in samples])
    q = np.array([s.step.q_objects for s in samples])
    out = {}
    for k, obj in enumerate(world.objects):
        p = q[:, 7 * k:7 * k + 3]
        on = np.abs(p[:, 2] - p[0, 2]) <= ON_SUPPORT
        last = int(np.flatnonzero(on)[-1]) if on.any() else 0
        left = bool(p[-1, 2] < p[0, 2] - FELL)
        out[obj.name] = {
            "initial_position_m": [float(x) for x in p[0]],
            "final_position_m": [float(x) for x in p[-1]],
            "slide_distance_m": float(np.linalg.norm(p[last, :2] - p[0, :2])),
            "left_support": left,
            "left_support_t": float(t[last]) if left else None,
        }
    return out


__all__ = ["FELL", "ON_SUPPORT", "object_metrics"]
