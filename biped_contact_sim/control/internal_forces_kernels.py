"""Compiled geometry of the support and of the internal forces (numba kernels with declared
signatures, ``biped_contact_sim.jit``), for ``control.internal_forces`` and the compiled ``wbc``
step.

Each kernel fills a preallocated output from pinocchio's frame quantities; written in numpy
each is 10–30 calls on 3-vectors whose interpreter overhead, not arithmetic, made most of a
control step. The tests compare every kernel with its numpy/pinocchio reference.

* ``surface_resultant``: W_com of n_s surface contacts about the CoM (Sentis et al. eq. 16),
  blocks [[I, 0], [[P_i − P_com]×, I]];
* ``linkage``: the rows of W_int named by specs (``control.grasp``): tensions
  (f_i − f_j)·e_ij (eq. 10) and moment components R_i[:, a]ᵀ m_i (eqs. 8, 11);
* ``wrenches_at``: measured sole wrenches (sole frame, about the sole origin) to world
  wrenches about the anchors P_k, f = R f_s, m_P = R τ_s − (P − o) × f.

The other compiled loops of the control layer: ``body_tasks_kernels.point_rows``,
``walking_kernels`` (the walk's references), ``linalg_kernels`` (the dense solves, ``ctc``'s
``sole_centre_allocation`` and ``closed_chain``), ``wbc_kernels`` and ``ctc_kernels`` (the
compiled steps).
"""

from __future__ import annotations

import numpy as np

from biped_contact_sim.jit import F1s, F2s, F3s, I1s, I2s, kernel, ro


@kernel((ro(F2s), ro(F1s), F2s))
def surface_resultant(positions, com, W):  # pragma: no cover - compiled
    """W (6, 6 n_s) ← W_com of surface contacts at ``positions`` (n_s, 3) about ``com``."""
    W[:] = 0.0
    for i in range(positions.shape[0]):
        c = 6 * i
        r0 = positions[i, 0] - com[0]
        r1 = positions[i, 1] - com[1]
        r2 = positions[i, 2] - com[2]
        for a in range(3):
            W[a, c + a] = 1.0
            W[3 + a, c + 3 + a] = 1.0
        W[3, c + 1], W[3, c + 2] = -r2, r1
        W[4, c + 0], W[4, c + 2] = r2, -r0
        W[5, c + 0], W[5, c + 1] = -r1, r0


@kernel((ro(I2s), ro(F2s), ro(F3s), ro(I1s), F2s))
def linkage(spec, positions, rotations, offsets, W):  # pragma: no cover - compiled
    """W (m, N) ← W_int of the row specs (m, 3) = (kind, i, j), kind 0 tension, 1 moment, 2
    normal force (``control.grasp``).

    Returns False (W partly filled) if a tension joins two anchors closer than 1e-9 m.
    """
    W[:] = 0.0
    for row in range(spec.shape[0]):
        kind, i, j = spec[row, 0], spec[row, 1], spec[row, 2]
        if kind == 0:
            e0 = positions[j, 0] - positions[i, 0]
            e1 = positions[j, 1] - positions[i, 1]
            e2 = positions[j, 2] - positions[i, 2]
            length = np.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
            if length < 1e-9:
                return False
            oi, oj = offsets[i], offsets[j]
            W[row, oi], W[row, oi + 1], W[row, oi + 2] = e0 / length, e1 / length, e2 / length
            W[row, oj], W[row, oj + 1], W[row, oj + 2] = (-e0 / length, -e1 / length,
                                                          -e2 / length)
        else:  # moment (kind 1) or normal force (kind 2): a column of R_i on m_i or f_i
            o = offsets[i] + (3 if kind == 1 else 0)
            W[row, o] = rotations[i, 0, j]
            W[row, o + 1] = rotations[i, 1, j]
            W[row, o + 2] = rotations[i, 2, j]
    return True


@kernel((ro(F2s), ro(F3s), ro(F2s), ro(F2s), F1s))
def wrenches_at(wrench_sole, rotations, origins, points, out):  # pragma: no cover - compiled
    """out (6 n,) ← world wrenches [f; m_P] about ``points`` of sole wrenches (n, 6)."""
    for k in range(wrench_sole.shape[0]):
        R = rotations[k]
        w = wrench_sole[k]
        f0 = R[0, 0] * w[0] + R[0, 1] * w[1] + R[0, 2] * w[2]
        f1 = R[1, 0] * w[0] + R[1, 1] * w[1] + R[1, 2] * w[2]
        f2 = R[2, 0] * w[0] + R[2, 1] * w[1] + R[2, 2] * w[2]
        d0 = points[k, 0] - origins[k, 0]
        d1 = points[k, 1] - origins[k, 1]
        d2 = points[k, 2] - origins[k, 2]
        o = 6 * k
        out[o], out[o + 1], out[o + 2] = f0, f1, f2
        for a in range(3):
            out[o + 3 + a] = R[a, 0] * w[3] + R[a, 1] * w[4] + R[a, 2] * w[5]
        out[o + 3] -= d1 * f2 - d2 * f1
        out[o + 4] -= d2 * f0 - d0 * f2
        out[o + 5] -= d0 * f1 - d1 * f0


__all__ = ["linkage", "surface_resultant", "wrenches_at"]
