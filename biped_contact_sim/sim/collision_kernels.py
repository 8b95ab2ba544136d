"""Compiled (numba) narrow phase and finishing of the contact detection (sim/collision.py, whose
module docstring gives the method: broad phase by bounding spheres, closed-form pairs, the
contact frames and ids).

The layout of the detection's arrays is defined here: ``Contacts.floats`` and ``Contacts.ints``
columns (``F_*``, ``I_*``), the work arrays of ``collision._alloc`` (``work_views``) and the fixed
arrays of ``Detector._pack_static`` (``static_views``). ``collision.finish_reference`` is the
numpy reference of ``finish_kernel`` (test_collision).
"""

from __future__ import annotations

import numpy as np

from biped_contact_sim.jit import (
    F1,
    F2,
    F3,
    I1,
    I2,
    F1s,
    F2s,
    F3s,
    I2f,
    Tuple,
    b1,
    f8,
    i8,
    kernel,
    ro,
)

KIND_BOX, KIND_SPHERE, KIND_CYLINDER, KIND_OTHER = 0, 1, 2, 3
#: contacts a feature pair may produce (box–box clipping gives at most 8)
PAIR_SLOTS = 16
_PREFER_STATIC = 1e-4  # m: a static box's face wins the separating-axis test within this

#: columns of ``Contacts.floats`` and ``Contacts.ints``, the detection's two arrays
F_P1, F_P2, F_NORMAL, F_PHI, F_MU, F_E, F_FRAME, F_LOCAL1, F_LOCAL2, F_PT = \
    0, 3, 6, 9, 10, 11, 12, 21, 24, 27
F_COLS = 29
I_BODY1, I_BODY2, I_ID, I_GEOM1, I_OTHER, I_GROUND = 0, 1, 2, 3, 4, 5
I_COLS = 6


@kernel((I2, F3), error_model="numpy")
def work_views(ints, floats):
    """``_alloc``'s views, in the kernels: B1, B2, P1, P2, N, GAP, KEY, MU, ANC, G1, OTH,
    FALLBACK."""
    return (ints[0], ints[1], floats[0], floats[1], floats[2], floats[4, :, 0], ints[2],
            floats[4, :, 1], floats[3], ints[3], ints[4], ints[5:7].T)


@kernel((I1, F2, F3, F3), error_model="numpy")
def static_views(static_i, static_3, static_33, tables):
    """The fixed arrays of ``Detector._pack_static``: kind, joint, R, t, half, radius, group,
    material of the geometries, plane_n, plane_o, plane_mat, box_R, box_t, box_half, box_mat,
    mu_table, margin (``detect_kernel``'s order), then e_table, feature_mat, ground."""
    G, P, S, ground = static_i[0], static_i[1], static_i[2], static_i[4]
    o = 5
    kind = static_i[o:o + G]
    joint = static_i[o + G:o + 2 * G]
    group = static_i[o + 2 * G:o + 3 * G]
    gmat = static_i[o + 3 * G:o + 4 * G]
    o += 4 * G
    plane_mat = static_i[o:o + P]
    box_mat = static_i[o + P:o + P + S]
    feature_mat = static_i[o + P + S:o + 2 * (P + S) + G]
    gt = static_3[:G]
    half = static_3[G:2 * G]
    plane_n = static_3[2 * G:2 * G + P]
    plane_o = static_3[2 * G + P:2 * G + 2 * P]
    o = 2 * G + 2 * P
    box_t = static_3[o:o + S]
    box_half = static_3[o + S:o + 2 * S]
    o += 2 * S
    return (kind, joint, static_33[:G], gt, half, static_3[o:o + G, 0], group, gmat, plane_n,
            plane_o, plane_mat, static_33[G:G + S], box_t, box_half, box_mat, tables[0],
            static_3[o + G, 0], tables[1], feature_mat, ground)


@kernel((F1, F1), error_model="numpy")
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@kernel((F2, F1), error_model="numpy")
def _mv(R, x):
    """R x for a 3 x 3 R of any memory layout."""
    out = np.empty(3)
    for r in range(3):
        out[r] = R[r, 0] * x[0] + R[r, 1] * x[1] + R[r, 2] * x[2]
    return out


@kernel((F2, F1), error_model="numpy")
def _mtv(R, x):
    """Rᵀ x."""
    out = np.empty(3)
    for r in range(3):
        out[r] = R[0, r] * x[0] + R[1, r] * x[1] + R[2, r] * x[2]
    return out


@kernel((F2, i8), error_model="numpy")
def _col(R, i):
    return np.array([R[0, i], R[1, i], R[2, i]])


@kernel((F1, F2, i8), error_model="numpy")
def _dot_col(a, R, i):
    """aᵀ R[:, i] without a temporary."""
    return a[0] * R[0, i] + a[1] * R[1, i] + a[2] * R[2, i]


@kernel(
    (Tuple((I1, I1, F2, F2, F2, F1s, I1, F1s, F2, I1, I1, I2f)), i8, i8, i8, F1, F1, F1, f8, i8,
     f8, ro(F1s), i8, i8),
    error_model="numpy",
)
def _push(out, n, b1, b2, p1, p2, nrm, gap, key, mu, anchor, g1, other):
    """Append a contact; returns the new count (−1: capacity exceeded)."""
    B1, B2, P1, P2, N, GAP, KEY, MU, ANC, G1, OTH, _ = out
    if n < 0 or n >= B1.shape[0]:
        return -1
    B1[n], B2[n], GAP[n], KEY[n], MU[n], G1[n], OTH[n] = b1, b2, gap, key, mu, g1, other
    for r in range(3):
        P1[n, r], P2[n, r], N[n, r], ANC[n, r] = p1[r], p2[r], nrm[r], anchor[r]
    return n + 1


@kernel((i8, F2, F1, F1, F1), error_model="numpy")
def _support_points(kind, R, c, half, nrm):
    """The points of a box, sphere or cylinder that can touch a plane of normal nrm from its
    free side: a box's 8 vertices, a sphere's lowest point, a cylinder's lowest rim points
    (two, or four on a cap flat on the plane). Returns (points (8, 3), count)."""
    pts = np.empty((8, 3))
    k = 0
    if kind == KIND_BOX:
        for sx in (-1.0, 1.0):
            for sy in (-1.0, 1.0):
                for sz in (-1.0, 1.0):
                    for r in range(3):
                        pts[k, r] = c[r] + R[r, 0] * sx * half[0] + R[r, 1] * sy * half[1] \
                            + R[r, 2] * sz * half[2]
                    k += 1
    elif kind == KIND_SPHERE:
        for r in range(3):
            pts[0, r] = c[r] - half[0] * nrm[r]
        k = 1
    else:  # cylinder, axis z
        a = _col(R, 2)
        na = _dot(nrm, a)
        rad, h = half[0], half[2]
        if abs(na) > 0.999:  # a cap flat on the plane: four rim points
            s = -1.0 if na > 0 else 1.0
            for u, w in ((1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0)):
                for r in range(3):
                    pts[k, r] = c[r] + s * h * a[r] + rad * (u * R[r, 0] + w * R[r, 1])
                k += 1
        else:
            d = nrm - na * a
            d = d / np.sqrt(_dot(d, d))
            for s in (-1.0, 1.0):
                for r in range(3):
                    pts[k, r] = c[r] + s * h * a[r] - rad * d[r]
                k += 1
    return pts, k


@kernel(
    (Tuple((I1, I1, F2, F2, F2, F1s, I1, F1s, F2, I1, I1, I2f)), i8, i8, F2, F1, F1, F1, F1, f8,
     i8, i8, f8, i8, i8),
    error_model="numpy",
)
def _vs_plane(out, n, kind, R, c, half, nrm, o, margin, b1, key, mu, g, other):
    """Closed-form contacts of a box, sphere or cylinder (body b1) with a static plane: its
    support points with their own gaps."""
    pts, k = _support_points(kind, R, c, half, nrm)
    p2 = np.empty(3)
    for i in range(k):
        gap = nrm[0] * (pts[i, 0] - o[0]) + nrm[1] * (pts[i, 1] - o[1]) \
            + nrm[2] * (pts[i, 2] - o[2])
        if gap <= margin:
            for r in range(3):
                p2[r] = pts[i, r] - gap * nrm[r]
            n = _push(out, n, b1, 0, pts[i], p2, nrm, gap, key + i, mu, o, g, other)
    return n


@kernel((F1, F1, F1), error_model="numpy")
def _cylinder_support(a, axis, half):
    """Half-extent of a cylinder (radius half[0], half-length half[2], unit axis) along a."""
    x = abs(_dot(a, axis))
    return half[2] * x + half[0] * np.sqrt(max(0.0, 1.0 - x * x))


@kernel(
    (Tuple((I1, I1, F2, F2, F2, F1s, I1, F1s, F2, I1, I1, I2f)), i8, F2, F1, F1, F2, F1, F1, f8,
     i8, i8, i8, f8, ro(F1s), i8, i8),
    error_model="numpy",
)
def _cylinder_box(out, n, Rc, cc, hc, Rb, cb, hb, margin, b1, b2, key, mu, anchor, g, other):
    """A cylinder (body b1) against a box: the box face of largest separation (separating
    axes over the box's face normals), then the cylinder's lowest rim points against that
    face (``_support_points``) inside the face's rectangle; normal: the face's."""
    d = cc - cb
    axis = _col(Rc, 2)
    best, face = -1e300, 0
    for i in range(3):
        a = _col(Rb, i)
        s = abs(_dot(a, d)) - hb[i] - _cylinder_support(a, axis, hc)
        if s > best:
            best, face = s, i
    if best > margin:
        return n
    nrm = _col(Rb, face)
    if _dot(nrm, d) < 0.0:
        nrm = -nrm
    fc = cb + hb[face] * nrm
    pts, k = _support_points(KIND_CYLINDER, Rc, cc, hc, nrm)
    j1, j2 = (face + 1) % 3, (face + 2) % 3
    e1, e2 = _col(Rb, j1), _col(Rb, j2)
    for i in range(k):
        p = pts[i]
        gap = _dot(nrm, p - fc)
        if gap > margin:
            continue
        rel = p - fc
        if abs(_dot(e1, rel)) > hb[j1] or abs(_dot(e2, rel)) > hb[j2]:
            continue  # beyond the face's edges
        n = _push(out, n, b1, b2, p, p - gap * nrm, nrm, gap, key + i, mu, anchor, g, other)
    return n


@kernel((F2, i8, F1, F1, f8), error_model="numpy")
def _clip(poly, k, axis, origin, limit):
    """Sutherland–Hodgman: the part of polygon ``poly[:k]`` with ``axis·(p − origin) ≤ limit``."""
    out = np.empty((poly.shape[0], 3))
    m = 0
    for i in range(k):
        a = poly[i]
        b = poly[(i + 1) % k]
        da = _dot(axis, a - origin) - limit
        db = _dot(axis, b - origin) - limit
        if da <= 0.0:
            out[m] = a
            m += 1
        if (da < 0.0) != (db < 0.0) and da != db:
            out[m] = a + (b - a) * (da / (da - db))
            m += 1
    return out, m


@kernel(
    (Tuple((I1, I1, F2, F2, F2, F1s, I1, F1s, F2, I1, I1, I2f)), i8, F2, F1, F1, F2, F1, F1, f8,
     i8, i8, i8, f8, ro(F1s), i8, i8, b1),
    error_model="numpy",
)
def _box_box(out, n, R1, c1, h1, R2, c2, h2, margin, b1, b2, key, mu, anchor, g, other,
             static2):
    """Box 1 (body b1) against box 2 (body b2): separating axes over the 6 face normals, then
    the incident face clipped by the reference face; normal from box 2 towards box 1."""
    d = c1 - c2
    best, sep, ref_is_2, axis = -1e300, -1e300, True, 0
    for which in range(2):
        Ra, Rb, ha, hb = (R2, R1, h2, h1) if which == 0 else (R1, R2, h1, h2)
        for i in range(3):
            s = abs(_dot_col(d, Ra, i)) - ha[i]
            for j in range(3):
                s -= hb[j] * abs(Ra[0, i] * Rb[0, j] + Ra[1, i] * Rb[1, j] + Ra[2, i] * Rb[2, j])
            bias = _PREFER_STATIC if (which == 0 and static2) else 0.0
            if s + bias > best:  # a static face wins ties (within the bias)
                best, ref_is_2, axis = s + bias, which == 0, i
                sep = s
    if sep > margin:
        return n
    if ref_is_2:
        Rr, cr, hr, Ri, ci, hi = R2, c2, h2, R1, c1, h1
    else:
        Rr, cr, hr, Ri, ci, hi = R1, c1, h1, R2, c2, h2
    nr = _col(Rr, axis)
    if _dot(nr, ci - cr) < 0.0:
        nr = -nr
    fr = cr + hr[axis] * nr  # reference face centre
    # incident face: the face of the other box most anti-parallel to nr
    k, dots = 0, 0.0
    for j in range(3):
        x = abs(_dot_col(nr, Ri, j))
        if x > dots:
            k, dots = j, x
    sgn = -1.0 if _dot_col(nr, Ri, k) > 0 else 1.0
    fi = ci + sgn * hi[k] * _col(Ri, k)
    k1, k2 = (k + 1) % 3, (k + 2) % 3
    u1, u2 = hi[k1] * _col(Ri, k1), hi[k2] * _col(Ri, k2)
    poly = np.empty((8, 3))
    poly[0], poly[1], poly[2], poly[3] = fi + u1 + u2, fi - u1 + u2, fi - u1 - u2, fi + u1 - u2
    m = 4
    j1, j2 = (axis + 1) % 3, (axis + 2) % 3
    e1, e2 = _col(Rr, j1), _col(Rr, j2)
    for ax, lim in ((e1, hr[j1]), (-e1, hr[j1]), (e2, hr[j2]), (-e2, hr[j2])):
        poly2, m = _clip(poly, m, ax, fr, lim)
        poly[:m] = poly2[:m]
        if m == 0:
            return n
    q = np.empty(3)
    for i in range(m):
        p = poly[i]
        gap = _dot(nr, p - fr)
        if gap > margin:
            continue
        q[:] = p - gap * nr
        if ref_is_2:  # incident on box 1: p₁ = p, p₂ = its projection, normal nr
            n = _push(out, n, b1, b2, p, q, nr, gap, key + i, mu, anchor, g, other)
        else:  # reference on box 1: the normal from box 2 to box 1 is −nr
            n = _push(out, n, b1, b2, q, p, -nr, gap, key + 8 + i, mu, anchor, g, other)
    return n


@kernel(
    (Tuple((I1, I1, F2, F2, F2, F1s, I1, F1s, F2, I1, I1, I2f)), i8, F1, f8, F2, F1, F1, b1, f8,
     i8, i8, i8, f8, ro(F1s), i8, i8),
    error_model="numpy",
)
def _sphere_box(out, n, cs, r, Rb, cb, hb, sphere_first, margin, b1, b2, key, mu, anchor, g,
                other):
    """A sphere (centre cs, radius r) against a box: closest point of the box."""
    loc = _mtv(Rb, cs - cb)
    q = loc.copy()
    for i in range(3):
        q[i] = min(max(loc[i], -hb[i]), hb[i])
    diff = loc - q
    dist = np.sqrt(_dot(diff, diff))
    if dist > 1e-12:
        nl = diff / dist
        gap = dist - r
    else:  # centre inside: leave through the nearest face
        i = np.argmin(hb - np.abs(loc))
        nl = np.zeros(3)
        nl[i] = 1.0 if loc[i] >= 0 else -1.0
        q[i] = nl[i] * hb[i]
        gap = -(hb[i] - abs(loc[i])) - r
    if gap > margin:
        return n
    nw = _mv(Rb, nl)  # from the box towards the sphere
    pb = cb + _mv(Rb, q)
    ps = cs - r * nw
    if sphere_first:
        return _push(out, n, b1, b2, ps, pb, nw, gap, key, mu, anchor, g, other)
    return _push(out, n, b1, b2, pb, ps, -nw, gap, key, mu, anchor, g, other)


@kernel(
    (I1, I1, F3, F2, F2, F1s, I1, I1, ro(F3s), ro(F2s), F2, F2, I1, F3, F2, F2, I1, F2, f8, I1,
     I1, F2, F2, F2, F1s, I1, F1s, F2, I1, I1, I2f),
    error_model="numpy",
)
def detect_kernel(kind, joint, gR, gt, half, radius, group, gmat, rotations, translations,
                  plane_n, plane_o, plane_mat, box_R, box_t, box_half, box_mat, mu_table,
                  margin, B1, B2, P1, P2, N, GAP, KEY, MU, ANC, G1, OTH, FALLBACK):
    """Broad and narrow phase (module docstring) into the output arrays.

    Returns:
        the contact count (−1 if the arrays are too short), the number of pairs left for
        coal (``FALLBACK``: geometry, feature), and the geometries' world placements.
    """
    out = (B1, B2, P1, P2, N, GAP, KEY, MU, ANC, G1, OTH, FALLBACK)
    G = kind.shape[0]
    P = plane_n.shape[0]
    S = box_t.shape[0]
    NO = P + S + G
    Rw = np.empty((G, 3, 3))
    cw = np.empty((G, 3))
    # (written out without temporaries: the broad phase runs for every pair at every step)
    for a in range(G):
        R, t = rotations[joint[a]], translations[joint[a]]
        for r in range(3):
            cw[a, r] = R[r, 0] * gt[a, 0] + R[r, 1] * gt[a, 1] + R[r, 2] * gt[a, 2] + t[r]
            for c in range(3):
                Rw[a, r, c] = R[r, 0] * gR[a, 0, c] + R[r, 1] * gR[a, 1, c] \
                    + R[r, 2] * gR[a, 2, c]
    box_r = np.empty(box_t.shape[0])
    for s in range(box_t.shape[0]):
        box_r[s] = np.sqrt(box_half[s, 0] ** 2 + box_half[s, 1] ** 2 + box_half[s, 2] ** 2)
    n, nf = 0, 0
    for a in range(G):
        ka = kind[a]
        for p in range(P):
            height = plane_n[p, 0] * (cw[a, 0] - plane_o[p, 0]) \
                + plane_n[p, 1] * (cw[a, 1] - plane_o[p, 1]) \
                + plane_n[p, 2] * (cw[a, 2] - plane_o[p, 2])
            if ka == KIND_OTHER:  # not expected from URDF primitives; coal handles it
                if height - radius[a] <= margin:
                    if nf >= FALLBACK.shape[0]:
                        return -1, nf, Rw, cw
                    FALLBACK[nf, 0], FALLBACK[nf, 1] = a, p
                    nf += 1
                continue
            if height - radius[a] > margin:
                continue
            n = _vs_plane(out, n, ka, Rw[a], cw[a], half[a], plane_n[p], plane_o[p],
                             margin, joint[a], (a * NO + p) * PAIR_SLOTS,
                             mu_table[gmat[a], plane_mat[p]], a, p)
        for s in range(S):
            reach = radius[a] + box_r[s] + margin
            if (cw[a, 0] - box_t[s, 0]) ** 2 + (cw[a, 1] - box_t[s, 1]) ** 2 \
                    + (cw[a, 2] - box_t[s, 2]) ** 2 > reach * reach:
                continue
            key = (a * NO + P + s) * PAIR_SLOTS
            mu = mu_table[gmat[a], box_mat[s]]
            if ka == KIND_BOX:
                n = _box_box(out, n, Rw[a], cw[a], half[a], box_R[s], box_t[s], box_half[s],
                             margin, joint[a], 0, key, mu, box_t[s], a, P + s, True)
            elif ka == KIND_SPHERE:
                n = _sphere_box(out, n, cw[a], half[a, 0], box_R[s], box_t[s], box_half[s],
                                True, margin, joint[a], 0, key, mu, box_t[s], a, P + s)
            elif ka == KIND_CYLINDER:
                n = _cylinder_box(out, n, Rw[a], cw[a], half[a], box_R[s], box_t[s],
                                  box_half[s], margin, joint[a], 0, key, mu, box_t[s], a, P + s)
            else:
                if nf >= FALLBACK.shape[0]:
                    return -1, nf, Rw, cw
                FALLBACK[nf, 0], FALLBACK[nf, 1] = a, P + s
                nf += 1
        for b in range(a + 1, G):
            if group[a] == group[b] and group[a] == 0:
                continue  # no robot self-collision
            if group[a] == group[b]:
                continue  # one object's own shapes
            reach = radius[a] + radius[b] + margin
            if (cw[a, 0] - cw[b, 0]) ** 2 + (cw[a, 1] - cw[b, 1]) ** 2 \
                    + (cw[a, 2] - cw[b, 2]) ** 2 > reach * reach:
                continue
            kb = kind[b]
            key = (a * NO + P + S + b) * PAIR_SLOTS
            mu = mu_table[gmat[a], gmat[b]]
            anchor = translations[joint[b]]
            if ka == KIND_BOX and kb == KIND_BOX:
                n = _box_box(out, n, Rw[a], cw[a], half[a], Rw[b], cw[b], half[b], margin,
                             joint[a], joint[b], key, mu, anchor, a, P + S + b, False)
            elif ka == KIND_SPHERE and kb == KIND_BOX:
                n = _sphere_box(out, n, cw[a], half[a, 0], Rw[b], cw[b], half[b], True,
                                margin, joint[a], joint[b], key, mu, anchor, a, P + S + b)
            elif ka == KIND_BOX and kb == KIND_SPHERE:
                n = _sphere_box(out, n, cw[b], half[b, 0], Rw[a], cw[a], half[a], False,
                                margin, joint[a], joint[b], key, mu, anchor, a, P + S + b)
            elif ka == KIND_CYLINDER and kb == KIND_BOX:
                n = _cylinder_box(out, n, Rw[a], cw[a], half[a], Rw[b], cw[b], half[b],
                                  margin, joint[a], joint[b], key, mu, anchor, a, P + S + b)
            elif ka == KIND_SPHERE and kb == KIND_SPHERE:
                nv = cw[a] - cw[b]
                dist = np.sqrt(_dot(nv, nv))
                gap = dist - half[a, 0] - half[b, 0]
                if gap <= margin and dist > 1e-12:
                    nv = nv / dist
                    n = _push(out, n, joint[a], joint[b], cw[a] - half[a, 0] * nv,
                              cw[b] + half[b, 0] * nv, nv, gap, key, mu, anchor, a,
                              P + S + b)
            else:
                if nf >= FALLBACK.shape[0]:
                    return -1, nf, Rw, cw
                FALLBACK[nf, 0], FALLBACK[nf, 1] = a, P + S + b
                nf += 1
            if n < 0:
                return -1, nf, Rw, cw
        if n < 0:
            return -1, nf, Rw, cw
    return n, nf, Rw, cw


@kernel((f8, f8, f8, F1), error_model="numpy")
def _frame_into(n0, n1, n2, out):
    """``world.frame_from_normal`` of the normal (n0, n1, n2) into ``out`` (9,) row-major,
    without temporaries (the same floating-point operations)."""
    a0, a1, a2 = 0.0, n2, -n1  # n × e_x
    s = np.sqrt(a0 ** 2 + a1 ** 2 + a2 ** 2)
    if s < 1e-9:  # n along ±x
        a0, a1, a2 = n1, -n0, 0.0  # n × e_z
        s = np.sqrt(a0 ** 2 + a1 ** 2 + a2 ** 2)
    a0, a1, a2 = a0 / s, a1 / s, a2 / s
    if a1 < 0.0 or (a1 == 0.0 and a2 < 0.0):
        a0, a1, a2 = -a0, -a1, -a2
    out[0] = a1 * n2 - a2 * n1
    out[3] = a2 * n0 - a0 * n2
    out[6] = a0 * n1 - a1 * n0
    out[1], out[4], out[7] = a0, a1, a2
    out[2], out[5], out[8] = n0, n1, n2


@kernel(
    (i8, I1, I1, F2, F2, F2, F1s, I1, F1s, F2, I1, I1, ro(F3s), ro(F2s), F2, I1, I1, i8),
    error_model="numpy",
)
def finish_kernel(n, B1, B2, P1, P2, N, GAP, KEY, MU, ANC, G1, OTH, rotations, translations,
                  e_table, geom_mat, feature_mat, ground):
    """The contact set's two arrays ``(floats, ints)`` (``Contacts``; fresh, from the first n
    rows of the work arrays): bodies, points, normals, gaps, ids, μ, geometry and feature,
    restitution, the frames ``[t₁ t₂ n]`` (``world.frame_from_normal``), the points in their
    joint frames, the tangential coordinates ``(t₁, t₂)ᵀ(p₁ − anchor)`` about a point fixed on
    body 2 (spring anchors), and whether body 2 is the ground plane (``finish_reference``)."""
    floats = np.empty((n, F_COLS))
    ints = np.empty((n, I_COLS), dtype=np.int64)
    finish_into(floats, ints, B1, B2, P1, P2, N, GAP, KEY, MU, ANC, G1, OTH, rotations,
                translations, e_table, geom_mat, feature_mat, ground)
    return floats, ints


@kernel(
    (F2, I2, I1, I1, F2, F2, F2, F1s, I1, F1s, F2, I1, I1, ro(F3s), ro(F2s), F2, I1, I1, i8),
    error_model="numpy",
)
def finish_into(floats, ints, B1, B2, P1, P2, N, GAP, KEY, MU, ANC, G1, OTH, rotations,
                translations, e_table, geom_mat, feature_mat, ground):
    """``finish_kernel`` into given (m, ``F_COLS``) and (m, ``I_COLS``) arrays."""
    for i in range(floats.shape[0]):
        b1, b2, g1, oth = B1[i], B2[i], G1[i], OTH[i]
        ints[i, I_BODY1], ints[i, I_BODY2], ints[i, I_ID] = b1, b2, KEY[i]
        ints[i, I_GEOM1], ints[i, I_OTHER] = g1, oth
        ints[i, I_GROUND] = 1 if oth == ground else 0
        floats[i, F_PHI], floats[i, F_MU] = GAP[i], MU[i]
        floats[i, F_E] = e_table[geom_mat[g1], feature_mat[oth]]
        for r in range(3):
            floats[i, F_P1 + r] = P1[i, r]
            floats[i, F_P2 + r] = P2[i, r]
            floats[i, F_NORMAL + r] = N[i, r]
        if i > 0 and N[i, 0] == N[i - 1, 0] and N[i, 1] == N[i - 1, 1] \
                and N[i, 2] == N[i - 1, 2]:  # the same normal (a face's corners): its frame
            for k in range(9):
                floats[i, F_FRAME + k] = floats[i - 1, F_FRAME + k]
        else:
            _frame_into(N[i, 0], N[i, 1], N[i, 2], floats[i, F_FRAME:F_FRAME + 9])
        R, t = rotations[b1], translations[b1]
        for r in range(3):
            floats[i, F_LOCAL1 + r] = R[0, r] * (P1[i, 0] - t[0]) + R[1, r] * (P1[i, 1] - t[1]) \
                + R[2, r] * (P1[i, 2] - t[2])
        R, t = rotations[b2], translations[b2]
        for r in range(3):
            floats[i, F_LOCAL2 + r] = R[0, r] * (P2[i, 0] - t[0]) + R[1, r] * (P2[i, 1] - t[1]) \
                + R[2, r] * (P2[i, 2] - t[2])
        for c in range(2):  # C[r, c] = floats[i, F_FRAME + 3 r + c]
            floats[i, F_PT + c] = floats[i, F_FRAME + c] * (P1[i, 0] - ANC[i, 0]) \
                + floats[i, F_FRAME + 3 + c] * (P1[i, 1] - ANC[i, 1]) \
                + floats[i, F_FRAME + 6 + c] * (P1[i, 2] - ANC[i, 2])


@kernel((I1, F2, F3, F3, I2, F3, ro(F3s), ro(F2s)), error_model="numpy")
def detect_finish_kernel(static_i, static_3, static_33, tables, work_i, work_f, rotations,
                         translations):
    """``detect_kernel`` then ``finish_kernel`` in one call (the step's path), on the detector's
    static and work buffers (``static_views``, ``work_views``): the count, the number of pairs
    left for coal, and ``(floats, ints)`` (empty when the count is −1 or pairs are left for
    coal: the caller finishes after ``Detector._fallback``)."""
    static = static_views(static_i, static_3, static_33, tables)
    work = work_views(work_i, work_f)
    n, nf = detect_only(static, work, rotations, translations)
    B1, B2, P1, P2, N, GAP, KEY, MU, ANC, G1, OTH, _ = work
    gmat, e_table, feature_mat, ground = static[7], static[17], static[18], static[19]
    floats, ints = finish_kernel(n if n >= 0 and nf == 0 else 0, B1, B2, P1, P2, N, GAP, KEY,
                                 MU, ANC, G1, OTH, rotations, translations, e_table, gmat,
                                 feature_mat, ground)
    return n, nf, floats, ints


@kernel(
    (Tuple((I1, I1, F3, F2, F2, F1s, I1, I1, F2, F2, I1, F3, F2, F2, I1, F2, f8, F2, I1, i8)),
     Tuple((I1, I1, F2, F2, F2, F1s, I1, F1s, F2, I1, I1, I2f)), ro(F3s), ro(F2s)),
    error_model="numpy",
)
def detect_only(static, work, rotations, translations):
    """``detect_kernel`` on ``static_views`` and ``work_views``: the count and the pairs left
    for coal."""
    (kind, joint, gR, gt, half, radius, group, gmat, plane_n, plane_o, plane_mat, box_R, box_t,
     box_half, box_mat, mu_table, margin, _, _, _) = static
    B1, B2, P1, P2, N, GAP, KEY, MU, ANC, G1, OTH, FALLBACK = work
    n, nf, _, _ = detect_kernel(kind, joint, gR, gt, half, radius, group, gmat, rotations,
                                translations, plane_n, plane_o, plane_mat, box_R, box_t,
                                box_half, box_mat, mu_table, margin, B1, B2, P1, P2, N, GAP,
                                KEY, MU, ANC, G1, OTH, FALLBACK)
    return n, nf
