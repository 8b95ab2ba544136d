"""Compiled observables of a step (numba kernels with declared signatures,
``biped_contact_sim.jit``): sole wrenches and CoPs, the support hull and whether the ZMP is in
it, the contacts' extremes (penetration, cone violation, smallest normal force), for points and
for geometry contacts. The definitions are in ``sim.observables``' docstring; the numpy
references are there (``<kernel>_reference``, ``Observer.observe_reference``,
``Observer.observe_geometry_reference``).
"""

from __future__ import annotations

import numpy as np

from biped_contact_sim.jit import B1, F1, F2, F3, I1, I2, F1s, F2s, F3s, I1s, f8, i8, kernel


@kernel((F2, F2), error_model="numpy")
def _sole_pose(P, S):
    """(R, o) of a sole frame: the joint's placement P = [R_j | p_j] (3 × 4) composed with the
    sole's placement S in the joint (3 × 4), R = R_j R_s, o = R_j p_s + p_j."""
    R = np.empty((3, 3))
    o = np.empty(3)
    for r in range(3):
        for c in range(3):
            R[r, c] = P[r, 0] * S[0, c] + P[r, 1] * S[1, c] + P[r, 2] * S[2, c]
        o[r] = P[r, 0] * S[0, 3] + P[r, 1] * S[1, 3] + P[r, 2] * S[2, 3] + P[r, 3]
    return R, o


@kernel((F1s, F1, f8, f8, f8, f8, F1, F1, F1), error_model="numpy")
def _add_contact(x, o, f0, f1, f2, fn, F, T, cp):
    """A contact at x (world) with force f = (f0, f1, f2) (world) and normal force fn, added to
    its sole's sums (origin o): F += f, T += (x − o) × f, cp += fn x."""
    d0, d1, d2 = x[0] - o[0], x[1] - o[1], x[2] - o[2]
    F[0] += f0
    F[1] += f1
    F[2] += f2
    T[0] += d1 * f2 - d2 * f1
    T[1] += d2 * f0 - d0 * f2
    T[2] += d0 * f1 - d1 * f0
    for r in range(3):
        cp[r] += fn * x[r]


@kernel((F2, F1, F1, F1, f8, f8, i8, F2, F1, F2), error_model="numpy")
def _store_sole(R, F, T, cp, total, min_normal_force, k, W, normal, cop):
    """Row k of W (``[Rᵀ F; Rᵀ T]``, the sole frame's), normal (Σ f_n = ``total``) and cop
    (``cp / total``; left as it is below ``min_normal_force``)."""
    for r in range(3):
        W[k, r] = R[0, r] * F[0] + R[1, r] * F[1] + R[2, r] * F[2]
        W[k, 3 + r] = R[0, r] * T[0] + R[1, r] * T[1] + R[2, r] * T[2]
    normal[k] = total
    if total >= min_normal_force:
        for r in range(3):
            cop[k, r] = cp[r] / total


@kernel((F3s, F2), error_model="numpy")
def _world_forces(frames, fc):
    """f_i = C_i f_c,i (world) of every contact (m, 3)."""
    m = fc.shape[0]
    fw = np.empty((m, 3))
    for i in range(m):
        for r in range(3):
            fw[i, r] = frames[i, r, 0] * fc[i, 0] + frames[i, r, 1] * fc[i, 1] \
                + frames[i, r, 2] * fc[i, 2]
    return fw


@kernel((I1s, I1s, F2s, F2s, F2, F2, F3, I1, F3, f8, F2, F1, F2), error_model="numpy")
def _sole_wrenches_into(body1, body2, p1, p2, fw, fc, placements, body_joint, sole,
                        min_normal_force, W, normal, cop):
    """W, normal, cop of ``geometry_wrenches`` (its docstring) into the given arrays (W and
    normal zero, cop NaN on entry)."""
    m = body1.shape[0]
    nb = body_joint.shape[0]
    for k in range(nb):
        j = body_joint[k]
        R, o = _sole_pose(placements[j], sole[k])
        F = np.zeros(3)
        T = np.zeros(3)
        cp = np.zeros(3)
        total = 0.0
        for side in range(2):
            for i in range(m):
                if (body1[i] if side == 0 else body2[i]) != j:
                    continue
                sign = 1.0 if side == 0 else -1.0
                x = p1[i] if side == 0 else p2[i]
                _add_contact(x, o, sign * fw[i, 0], sign * fw[i, 1], sign * fw[i, 2], fc[i, 2],
                             F, T, cp)
                total += fc[i, 2]
        _store_sole(R, F, T, cp, total, min_normal_force, k, W, normal, cop)


@kernel((I1s, I1s, F2s, F2s, F3s, F2, F3, I1, F3), error_model="numpy")
def geometry_sole_wrenches(body1, body2, p1, p2, frames, fc, placements, body_joint, sole):
    """W of ``geometry_wrenches`` alone (the sole wrenches a controller measures, every
    step; the observers' other figures are for the recorded steps)."""
    nb = body_joint.shape[0]
    W = np.zeros((nb, 6))
    _sole_wrenches_into(body1, body2, p1, p2, _world_forces(frames, fc), fc, placements,
                        body_joint, sole, np.inf, W, np.zeros(nb), np.full((nb, 3), np.nan))
    return W


@kernel((I1s, I1s, F2s, F2s, F3s, F2, F3, I1, F3, i8, f8), error_model="numpy")
def geometry_wrenches(body1, body2, p1, p2, frames, fc, placements, body_joint, sole,
                      n_robot_joints, min_normal_force):
    """The wrenches of geometry contacts (``Observer.observe_geometry``; numpy reference
    ``_geometry_feet`` and ``observe_geometry_reference``). Contact i pushes body 1 with
    ``f_i = C_i f_c,i`` (world) at p₁ and body 2 with ``−f_i`` at p₂; ``placements`` (nj, 3, 4)
    are the joints' ``[R | t]`` at the step's start.

    Returns:
        W (nb, 6): per contact body k (sole frame (R_k, o_k) on joint j_k),
        ``[R_kᵀ F_k; R_kᵀ Σ (p − o_k) × f]`` of the contacts on j_k; normal (nb,): their Σ f_n;
        cop (nb, 3): ``Σ f_n p / Σ f_n`` (NaN below ``min_normal_force``); B (nj, 6): per joint
        j > 0, ``[Σ f; Σ (p − o_j) × f]`` (world) over its contacts as body 1 plus those as body 2,
        o_j its origin (robot joints, j < n_robot_joints) or, per side, the mean of that side's
        points (free objects); side1, side2 (nj,) bool: j is body 1 / body 2 of a contact.
    """
    nj = placements.shape[0]
    nb = body_joint.shape[0]
    fw = _world_forces(frames, fc)
    W = np.zeros((nb, 6))
    normal = np.zeros(nb)
    cop = np.full((nb, 3), np.nan)
    _sole_wrenches_into(body1, body2, p1, p2, fw, fc, placements, body_joint, sole,
                        min_normal_force, W, normal, cop)
    m = body1.shape[0]
    B = np.zeros((nj, 6))
    side1 = np.zeros(nj, dtype=np.bool_)
    side2 = np.zeros(nj, dtype=np.bool_)
    count = np.zeros(nj)
    mean = np.zeros((nj, 3))
    for side in range(2):
        count[:] = 0.0
        mean[:] = 0.0
        for i in range(m):
            j = body1[i] if side == 0 else body2[i]
            if j == 0:
                continue
            if side == 0:
                side1[j] = True
            else:
                side2[j] = True
            if j >= n_robot_joints:
                x = p1[i] if side == 0 else p2[i]
                count[j] += 1.0
                for r in range(3):
                    mean[j, r] += x[r]
        for j in range(n_robot_joints, nj):
            if count[j] > 0:
                for r in range(3):
                    mean[j, r] /= count[j]
        for i in range(m):
            j = body1[i] if side == 0 else body2[i]
            if j == 0:
                continue
            sign = 1.0 if side == 0 else -1.0
            x = p1[i] if side == 0 else p2[i]
            if j < n_robot_joints:
                o0, o1, o2 = placements[j, 0, 3], placements[j, 1, 3], placements[j, 2, 3]
            else:
                o0, o1, o2 = mean[j, 0], mean[j, 1], mean[j, 2]
            d0, d1, d2 = x[0] - o0, x[1] - o1, x[2] - o2
            f0, f1, f2 = sign * fw[i, 0], sign * fw[i, 1], sign * fw[i, 2]
            B[j, 0] += f0
            B[j, 1] += f1
            B[j, 2] += f2
            B[j, 3] += d1 * f2 - d2 * f1
            B[j, 4] += d2 * f0 - d0 * f2
            B[j, 5] += d0 * f1 - d1 * f0
    return W, normal, cop, B, side1, side2


@kernel((F2s, F1s, B1, B1, F2, F1, f8), error_model="numpy")
def ground_support(p2, fn, active, on_ground, R, origin, min_normal_force):
    """The support of geometry contacts (``Observer._ground_support``, its numpy reference):
    the contacts carrying force (active, f_n > 0) on the ground plane, their hull in surface
    coordinates ``Rᵀ(p₂ − o)`` (``hull_2d``), and a code: 1 when a contact carrying force is off
    the ground plane, else 2 when the ground's Σ f_n < ``min_normal_force``, else 0 with the
    ZMP ``Σ f_n p₂ / Σ f_n`` and whether it lies in the hull (``in_polygon``, tol 1e-6).

    Returns:
        zmp (3,) (NaN unless code 0), hull (k, 2), code, inside (−1 unless code 0).
    """
    m = p2.shape[0]
    sel = np.zeros(m, dtype=np.bool_)
    off = False
    total = 0.0
    z = np.zeros(3)
    k = 0
    for i in range(m):
        if not (active[i] and fn[i] > 0.0):
            continue
        if on_ground[i]:
            sel[i] = True
            k += 1
            total += fn[i]
            for r in range(3):
                z[r] += fn[i] * p2[i, r]
        else:
            off = True
    local = np.empty((k, 2))
    j = 0
    for i in range(m):
        if sel[i]:
            d0, d1, d2 = p2[i, 0] - origin[0], p2[i, 1] - origin[1], p2[i, 2] - origin[2]
            for c in range(2):
                local[j, c] = d0 * R[0, c] + d1 * R[1, c] + d2 * R[2, c]
            j += 1
    hull = hull_2d(local)
    zmp = np.full(3, np.nan)
    if off:
        return zmp, hull, 1, -1
    if total < min_normal_force:
        return zmp, hull, 2, -1
    for r in range(3):
        zmp[r] = z[r] / total
    zl = np.empty(2)
    d0, d1, d2 = zmp[0] - origin[0], zmp[1] - origin[1], zmp[2] - origin[2]
    for c in range(2):
        zl[c] = d0 * R[0, c] + d1 * R[1, c] + d2 * R[2, c]
    return zmp, hull, 0, 1 if in_polygon(zl, hull, 1e-6) else 0


@kernel((F2, F1, B1, F1s), error_model="numpy")
def contact_extremes(fc, phi, active, mu):
    """The cone violation ``max(‖f_t‖ − μ_i f_n, 0)`` over the contacts (0 if none), the most
    negative normal force of the active ones (0 if none) and the penetration
    ``max(0, −min φ)`` (0 if none)."""
    cone, fmin, pen = 0.0, np.inf, 0.0
    for i in range(phi.shape[0]):
        cone = max(cone, np.sqrt(fc[i, 0] ** 2 + fc[i, 1] ** 2) - mu[i] * fc[i, 2])
        if active[i]:
            fmin = min(fmin, fc[i, 2])
        pen = max(pen, -phi[i])
    return cone, 0.0 if fmin == np.inf else fmin, pen


@kernel((F2, F2, F1s, F3, I1, F3, I2, f8), error_model="numpy")
def sole_wrenches(p, f_world, fn, placements, body_joint, sole, ranges, min_normal_force):
    """Per contact body k with sole frame ``(R_k, o_k)`` = joint placement × sole placement:
    ``[R_kᵀ Σ f_i; R_kᵀ Σ (p_i − o_k) × f_i]`` (6,), ``Σ f_n,i`` and the CoP
    ``Σ f_n,i p_i / Σ f_n,i`` (NaN below ``min_normal_force``) — module docstring."""
    nb = body_joint.shape[0]
    W = np.zeros((nb, 6))
    normal = np.zeros(nb)
    cop = np.full((nb, 3), np.nan)
    for k in range(nb):
        R, o = _sole_pose(placements[body_joint[k]], sole[k])
        F = np.zeros(3)
        T = np.zeros(3)
        cp = np.zeros(3)
        total = 0.0
        for i in range(ranges[k, 0], ranges[k, 1]):
            _add_contact(p[i], o, f_world[i, 0], f_world[i, 1], f_world[i, 2], fn[i], F, T, cp)
            total += fn[i]
        _store_sole(R, F, T, cp, total, min_normal_force, k, W, normal, cop)
    return W, normal, cop


@kernel((F2,), error_model="numpy")
def hull_2d(points):
    """Counter-clockwise convex hull of 2-D points (Andrew's monotone chain), the compiled
    ``hull_2d_reference``: points rounded to 1e-12 and deduplicated first, so collinear and repeated
    points give the same hull."""
    n = points.shape[0]
    pts = np.empty((n, 2))
    for i in range(n):
        pts[i, 0] = np.round(points[i, 0], 12)
        pts[i, 1] = np.round(points[i, 1], 12)
    order = np.argsort(pts[:, 1], kind="mergesort")  # lexicographic: by x, then y
    pts = pts[order]
    order = np.argsort(pts[:, 0], kind="mergesort")
    pts = pts[order]
    u = np.empty((n, 2))
    k = 0
    for i in range(n):
        if k == 0 or pts[i, 0] != u[k - 1, 0] or pts[i, 1] != u[k - 1, 1]:
            u[k] = pts[i]
            k += 1
    if k <= 2:
        return u[:k].copy()
    hull = np.empty((2 * k, 2))
    h = 0
    for sweep in range(2):
        start = h
        for j in range(k):
            i = j if sweep == 0 else k - 1 - j
            while h - start >= 2:
                o, a = hull[h - 2], hull[h - 1]
                cross = (a[0] - o[0]) * (u[i, 1] - o[1]) - (a[1] - o[1]) * (u[i, 0] - o[0])
                if cross > 0:
                    break
                h -= 1
            hull[h] = u[i]
            h += 1
        h -= 1  # the last point of each chain starts the other
    return hull[:h].copy()


@kernel((F1, F2, f8), error_model="numpy")
def in_polygon(point, polygon, tol):
    """The compiled ``in_polygon_reference`` (counter-clockwise convex polygon, or a segment or a
    point)."""
    n = polygon.shape[0]
    if n == 0:
        return False
    if n == 1:
        return np.hypot(point[0] - polygon[0, 0], point[1] - polygon[0, 1]) <= tol
    if n == 2:
        ab0, ab1 = polygon[1, 0] - polygon[0, 0], polygon[1, 1] - polygon[0, 1]
        ap0, ap1 = point[0] - polygon[0, 0], point[1] - polygon[0, 1]
        s = min(1.0, max(0.0, (ap0 * ab0 + ap1 * ab1) / (ab0 * ab0 + ab1 * ab1)))
        return np.hypot(ap0 - s * ab0, ap1 - s * ab1) <= tol
    for i in range(n):
        j = (i + 1) % n
        e0, e1 = polygon[j, 0] - polygon[i, 0], polygon[j, 1] - polygon[i, 1]
        r0, r1 = point[0] - polygon[i, 0], point[1] - polygon[i, 1]
        if e0 * r1 - e1 * r0 < -tol:
            return False
    return True


@kernel((F2, F2s, F2, F1, B1, f8, f8, F2, F1), error_model="numpy")
def support_terms(p, local, fc, phi, active, mu, min_normal_force, R_t, origin):
    """The force ZMP (NaN when Σ f_n < ``min_normal_force``), the support polygon (hull of the
    active points with f_n > 0, surface coordinates), whether the ZMP lies in it (−1: no ZMP),
    the cone violation ``max(‖f_t‖ − μ f_n, 0)``, the most negative normal force of the active
    points (0 if none) and the penetration ``max(0, −min φ)``."""
    m = p.shape[0]
    total = 0.0
    z = np.zeros(3)
    cone, fmin, pen = 0.0, np.inf, 0.0
    sel = np.zeros(m, dtype=np.bool_)
    for i in range(m):
        fn = fc[i, 2]
        total += fn
        for r in range(3):
            z[r] += fn * p[i, r]
        cone = max(cone, np.hypot(fc[i, 0], fc[i, 1]) - mu * fn)
        if active[i]:
            fmin = min(fmin, fn)
            sel[i] = fn > 0.0
        pen = max(pen, -phi[i])
    hull = hull_2d(local[sel])
    zmp = np.full(3, np.nan)
    inside = -1
    if total >= min_normal_force:
        for r in range(3):
            zmp[r] = z[r] / total
        zl = np.empty(2)
        for r in range(2):
            zl[r] = (R_t[r, 0] * (zmp[0] - origin[0]) + R_t[r, 1] * (zmp[1] - origin[1])
                     + R_t[r, 2] * (zmp[2] - origin[2]))
        inside = 1 if in_polygon(zl, hull, 1e-6) else 0
    return zmp, hull, inside, max(cone, 0.0), 0.0 if fmin == np.inf else fmin, pen
