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
  wrenches about the anchors P_k, f = R f_s, m_P = R τ_s − (P − o) × f;
* ``no_slip``: the internal-force reference with no tangential force at the no-slip contacts
  (``control.contact_set.no_slip_reference``, its numpy form);
* ``unloading``: the internal-force reference that gives the contacts being unloaded their
  target wrenches (``control.contact_set.unloading_reference``, its numpy form);
* ``moment_share``: the load-share moment of two contacts (App. C eq. 82's model), the moment
  counterpart of the load-share tension (``control.wbc``, step 4);
* ``no_slip_rows``, ``unloading_rows``: what ``InternalForces.command`` hands those two for the
  compiled ``wbc`` step (the contacts, the rows to free, the unloading targets).

The other compiled loops of the control layer: ``body_tasks_kernels.point_rows``,
``walking_kernels`` (the walk's references), ``linalg_kernels`` (the dense solves, ``ctc``'s
``sole_centre_allocation`` and ``closed_chain``), ``wbc_kernels`` and ``ctc_kernels`` (the
compiled steps).
"""

from __future__ import annotations

import numpy as np

from biped_contact_sim.jit import F1, F2, F3, I2, F1s, F2s, F3s, I1s, I2s, f8, i8, kernel, ro

#: columns of the ``unload`` table of ``unloading_rows`` (one row per stance contact): its
#: wrench w₀ (world, about the anchor) when its unloading started, then σ of its unloading ramp
U_W0, U_SIGMA = 0, 6
U_COLS = 7


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


@kernel((ro(F2s), ro(F2s), ro(I1s), i8))
def _inverse_rows(W_com, W_int, contacts, per):  # pragma: no cover - compiled
    """The first ``per`` rows (3: the force rows; 6: the whole wrench) of each contact's block
    of G⁻¹, G = [W_com; W_int] square: one solve Gᵀ Eᵀ = I[:, rows]."""
    n_g = W_com.shape[1]
    G_T = np.empty((n_g, n_g))
    G_T[:, :6] = W_com.T
    G_T[:, 6:] = W_int.T
    rhs = np.zeros((n_g, per * contacts.shape[0]))
    for i in range(contacts.shape[0]):
        for a in range(per):
            rhs[6 * contacts[i] + a, per * i + a] = 1.0
    return np.ascontiguousarray(np.linalg.solve(G_T, rhs).T)


@kernel((ro(I1s), ro(F3s), F2, F1, ro(F1s), ro(I1s), F1, F1))
def _no_slip_solve(contacts, rotations, E, Q, f_int_ref, cols, loaded,
                   out):  # pragma: no cover - compiled
    """out ← F_int,ref + B⁺ r over the rows ``cols``: the rows of A = T E (T: the tangent axes
    t_k of every contact in ``contacts``, and its normal n_k where ``loaded[i]`` > 0, the target
    then that preload) with B = A[:, 6:][:, cols] and r = target − A [F_com; F_int,ref]
    (``Q`` = [F_com; F_int,ref]); ``no_slip_reference``'s inner solve."""
    c = contacts.shape[0]
    n_rows = 2 * c
    for i in range(c):
        if loaded[i] > 0.0:
            n_rows += 1
    n_g = E.shape[1]
    A = np.zeros((n_rows, n_g))
    target = np.zeros(n_rows)
    row = 0
    for i in range(c):
        R = rotations[contacts[i]]
        for axis in range(3):
            if axis == 2 and not loaded[i] > 0.0:
                continue
            for col in range(n_g):
                A[row, col] = (R[0, axis] * E[3 * i, col] + R[1, axis] * E[3 * i + 1, col]
                               + R[2, axis] * E[3 * i + 2, col])
            if axis == 2:
                target[row] = loaded[i]
            row += 1
    r = target - np.dot(A, Q)
    out[:] = f_int_ref
    if cols.shape[0] == 0:
        return
    B = np.empty((n_rows, cols.shape[0]))
    for j in range(cols.shape[0]):
        B[:, j] = A[:, 6 + cols[j]]
    step = np.dot(np.linalg.pinv(B), r)
    for j in range(cols.shape[0]):
        out[cols[j]] += step[j]


@kernel((ro(I1s), ro(F3s), ro(F2s), ro(F2s), ro(F1s), ro(F1s), ro(I1s), f8, ro(I1s), F1))
def no_slip(contacts, rotations, W_com, W_int, f_task, f_int_ref, free, preload,
            preload_free, out):  # pragma: no cover - compiled
    """out (m_int,) ← ``contact_set.no_slip_reference`` (its docstring; Sentis et al. eqs. 13,
    47): the F_int,ref closest to ``f_int_ref`` over the rows ``free`` with no tangential force
    at the ``contacts``, then, where a contact's normal force is below ``preload``, with that
    normal force = ``preload`` over the rows ``preload_free``. E: the force rows of G⁻¹
    (``_inverse_rows``)."""
    c = contacts.shape[0]
    n_g = W_com.shape[1]
    E = _inverse_rows(W_com, W_int, contacts, 3)
    Q = np.empty(n_g)
    Q[:6] = np.dot(np.ascontiguousarray(W_com), np.ascontiguousarray(f_task))
    Q[6:] = f_int_ref
    none = np.zeros(c)
    _no_slip_solve(contacts, rotations, E, Q, f_int_ref, free, none, out)
    if preload > 0.0:
        Q[6:] = out
        f = np.dot(E, Q)
        low = np.zeros(c)
        any_low = False
        for i in range(c):
            R = rotations[contacts[i]]
            normal = (R[0, 2] * f[3 * i] + R[1, 2] * f[3 * i + 1]
                      + R[2, 2] * f[3 * i + 2])
            if normal < preload:
                low[i], any_low = preload, True
        if any_low:
            Q[6:] = f_int_ref
            _no_slip_solve(contacts, rotations, E, Q, f_int_ref, preload_free, low, out)


@kernel((ro(I1s), ro(F2s), ro(F2s), ro(F2s), ro(F1s), ro(F1s), ro(I1s), F1))
def unloading(contacts, targets, W_com, W_int, f_task, f_int_ref, free,
              out):  # pragma: no cover - compiled
    """out (m_int,) ← ``contact_set.unloading_reference`` (its docstring; Sentis et al. eqs. 13,
    47): the F_int,ref closest to ``f_int_ref`` whose wrenches give each contact
    ``contacts[i]`` its target ``targets[i]`` (world, about its anchor): a least-norm change
    of the rows ``free``, or of every row where those cannot meet the targets to 1 % of
    their norm (or ``free`` is empty)."""
    u = contacts.shape[0]
    E = _inverse_rows(W_com, W_int, contacts, 6)
    E_c = np.ascontiguousarray(E[:, :6])
    E_i = np.ascontiguousarray(E[:, 6:])
    w_star = np.empty(6 * u)
    for i in range(u):
        w_star[6 * i:6 * i + 6] = targets[i]
    F_com = np.dot(np.ascontiguousarray(W_com), np.ascontiguousarray(f_task))
    ref = np.ascontiguousarray(f_int_ref)
    r = w_star - np.dot(E_c, F_com) - np.dot(E_i, ref)
    scale = max(np.dot(w_star, w_star), 1.0)
    n_free = free.shape[0]
    if n_free > 0:
        B = np.empty((6 * u, n_free))
        for j in range(n_free):
            B[:, j] = E_i[:, free[j]]
        step = np.dot(np.linalg.pinv(B), r)
        residual = r - np.dot(B, step)
        if np.dot(residual, residual) <= 1e-4 * scale:
            out[:] = f_int_ref
            for j in range(n_free):
                out[free[j]] += step[j]
            return
    out[:] = ref + np.dot(np.linalg.pinv(E_i), r)


@kernel((I2, i8))
def model_rows(spec, k82):  # pragma: no cover - compiled
    """The row specs of the linkage ``linkage_model`` built: App. C eq. 82's with axis ``k82``
    of contact 2 where k82 ≥ 0, else ``spec``."""
    if k82 < 0:
        return spec
    # (TENSION, 0, 1), then the MOMENT rows
    return np.array([[0, 0, 1], [1, 0, 0], [1, 0, 1], [1, 1, k82], [1, 0, 2], [1, 1, 2]],
                    np.int64)


@kernel((i8, i8))
def mask_indices(mask, n):  # pragma: no cover - compiled
    """The indices k < n whose bit is set in ``mask``, ascending."""
    count = 0
    for k in range(n):
        if (mask >> k) & 1:
            count += 1
    out = np.empty(count, np.int64)
    count = 0
    for k in range(n):
        if (mask >> k) & 1:
            out[count] = k
            count += 1
    return out


@kernel((i8, i8, F2, I2, i8, F1, F1, F1, F2))
def unloading_rows(mask, known, unload, spec, k82, f_task, f0, f_prev,
                   D):  # pragma: no cover - compiled
    """What ``InternalForces.command`` hands ``unloading_reference`` for the stance contacts in
    the bits of ``mask``: (contacts, targets (1 − σ) w₀, free rows). w₀, a contact's wrench
    when its unloading started, is read from ``unload`` where its bit is in ``known``, else
    taken from the wrenches the last applied torques make, f₀ − D Γ_prev (eq. 20; the tasks'
    own, ``f_task``, when ``f_prev`` is empty: no torques yet) and written there. Free rows:
    every row but the moments of the contacts not unloading (their CoPs and normal moments
    stay at their references)."""
    contacts = mask_indices(mask, unload.shape[0])
    targets = np.empty((contacts.shape[0], 6))
    source = f_task
    if f_prev.size:
        source = f0 - D @ f_prev
    for i in range(contacts.shape[0]):
        k = contacts[i]
        if not (known >> k) & 1:
            unload[k, U_W0:U_W0 + 6] = source[6 * k:6 * k + 6]
        for a in range(6):
            targets[i, a] = (1.0 - unload[k, U_SIGMA]) * unload[k, U_W0 + a]
    rows = model_rows(spec, k82)
    free = np.empty(rows.shape[0], np.int64)
    n_free = 0
    for r in range(rows.shape[0]):
        if rows[r, 0] != 1 or (mask >> rows[r, 1]) & 1:
            free[n_free] = r
            n_free += 1
    return contacts, targets, free[:n_free].copy()


@kernel((i8, F2, F3, I2, i8, i8))
def no_slip_rows(mask, anchors, rotations, spec, k82, m_int):  # pragma: no cover - compiled
    """The rows of ``InternalForces.command``'s no-slip reference for the stance contacts in
    the bits of ``mask``: (contacts, free, preload_free) — the tensions (every row if none),
    then the tensions and, of each other contact, its CoP row along the direction to the first
    no-slip contact (``InternalForces._cop_rows_towards``). ``spec`` is the model's rows, or
    App. C eq. 82's with axis ``k82`` of contact 2 where k82 ≥ 0 (``linkage_model``)."""
    n_s = anchors.shape[0]
    contacts = mask_indices(mask, n_s)
    rows = model_rows(spec, k82)
    tensions = np.empty(rows.shape[0], np.int64)
    n_t = 0
    for r in range(rows.shape[0]):
        if rows[r, 0] == 0:
            tensions[n_t] = r
            n_t += 1
    cop = np.empty(rows.shape[0], np.int64)
    n_c = 0
    first = contacts[0]
    for k in range(n_s):
        if (mask >> k) & 1:
            continue
        d0 = d1 = 0.0
        for a in range(3):
            d = anchors[first, a] - anchors[k, a]
            d0 += rotations[k, a, 0] * d
            d1 += rotations[k, a, 1] * d
        axis = 1 if abs(d0) >= abs(d1) else 0
        for r in range(rows.shape[0]):
            if rows[r, 0] == 1 and rows[r, 1] == k and rows[r, 2] == axis:
                cop[n_c] = r
                n_c += 1
    free = tensions[:n_t].copy() if n_t else np.arange(m_int)
    preload_free = np.empty(n_t + n_c, np.int64)
    preload_free[:n_t] = tensions[:n_t]
    preload_free[n_t:] = cop[:n_c]
    return contacts, free, preload_free


@kernel((ro(F2s), ro(F3s), ro(F1s), f8, F1s))
def moment_share(W_int, rotations, f_task, alpha1, ref):  # pragma: no cover - compiled
    """Load-share moment (our addition, ``control.wbc`` step 4), in place on the eq. 82
    reference ``ref``: with e = e_12 (W_int's tension row) and M = e·(m_1 + m_2) the moment
    about the line P_1P_2 of the wrenches the tasks command (``f_task``; a component of the
    resultant: e·((P_2 − P_1) × f_2) = 0, so Γ_int cannot change it), the rows of contact 1's
    CoP moments (rows 1, 2: R_1[:, a]ᵀ m_1, a = 0, 1) gain α_1 M (u_0, u_1)/(u_0² + u_1²),
    u = R_1ᵀ e, so that e·m_1 carries α_1 M on top of the reference's and e·m_2 the rest.
    Eq. 82 keeps contact 2's moment about e free: without this it carries the whole M, and
    its CoP leaves the sole when the tasks ask for a moment about the foot line."""
    e0, e1, e2 = W_int[0, 0], W_int[0, 1], W_int[0, 2]
    M = (e0 * (f_task[3] + f_task[9]) + e1 * (f_task[4] + f_task[10])
         + e2 * (f_task[5] + f_task[11]))
    R = rotations[0]
    u0 = R[0, 0] * e0 + R[1, 0] * e1 + R[2, 0] * e2
    u1 = R[0, 1] * e0 + R[1, 1] * e1 + R[2, 1] * e2
    uu = u0 * u0 + u1 * u1
    if uu < 1e-12:  # the foot line along the sole's normal: no CoP moves a moment about it
        return
    ref[1] += alpha1 * M * u0 / uu
    ref[2] += alpha1 * M * u1 / uu


__all__ = ["linkage", "mask_indices", "model_rows", "moment_share", "no_slip", "no_slip_rows",
           "surface_resultant", "unloading", "unloading_rows", "wrenches_at"]
