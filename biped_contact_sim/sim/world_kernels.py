"""Compiled geometry of the world description (numba kernel with a declared signature,
``biped_contact_sim.jit``).
"""

from __future__ import annotations

import numpy as np

from biped_contact_sim.jit import F1s, kernel


@kernel((F1s,), error_model="numpy")
def frame_from_normal(n):
    """The contact frame ``[t₁ t₂ n]`` (columns) of a unit normal n: ``t₂ ∝ n × e_x`` with
    t₂·e_y ≥ 0 (``n × e_z`` for a normal along ±x), ``t₁ = t₂ × n``. Flat ground gives the
    identity and a ramp ``n = (sin α, 0, cos α)`` the frame of ``PlaneTerrain`` (t₁ downhill).
    """
    t2 = np.array([0.0, n[2], -n[1]])  # n × e_x
    s = np.sqrt(t2[0] ** 2 + t2[1] ** 2 + t2[2] ** 2)
    if s < 1e-9:  # n along ±x
        t2 = np.array([n[1], -n[0], 0.0])  # n × e_z
        s = np.sqrt(t2[0] ** 2 + t2[1] ** 2 + t2[2] ** 2)
    t2 = t2 / s
    if t2[1] < 0.0 or (t2[1] == 0.0 and t2[2] < 0.0):
        t2 = -t2
    C = np.empty((3, 3))
    C[0, 0] = t2[1] * n[2] - t2[2] * n[1]
    C[1, 0] = t2[2] * n[0] - t2[0] * n[2]
    C[2, 0] = t2[0] * n[1] - t2[1] * n[0]
    for r in range(3):
        C[r, 1] = t2[r]
        C[r, 2] = n[r]
    return C
