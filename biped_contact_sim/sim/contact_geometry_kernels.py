"""Compiled loops of the geometry contacts (numba kernels with declared signatures,
``biped_contact_sim.jit``): the step terms of contacts between two bodies, the drift of curved
features and the detection step; the mathematics is in ``sim.contact_geometry``.
"""

from __future__ import annotations

import numpy as np

from biped_contact_sim.jit import B2, F1, F2, F3, I1, I2, F2f, F2s, F3s, i8, kernel, ro
from biped_contact_sim.robot.model_kernels import (
    clamp_torques,
    free_motion,
    packed_size,
    placements_into,
    point_terms_into,
    unpack,
)
from biped_contact_sim.sim.collision_kernels import (
    F_COLS,
    F_FRAME,
    F_LOCAL1,
    F_LOCAL2,
    F_NORMAL,
    I_BODY1,
    I_BODY2,
    I_COLS,
    I_GEOM1,
    I_OTHER,
    KIND_CYLINDER,
    KIND_SPHERE,
    detect_only,
    finish_into,
    static_views,
    work_views,
)


# --------------------------------------------------------------------- per-step terms
@kernel(
    (F2f, F2f, F1, F1, F1, F1, F1, I1, F1, ro(F3s), ro(F2s), ro(F2), ro(F2), B2, F2, I2),
    error_model="numpy",
)
def geometry_step_terms(J, U, D, nle, v, tau, limit, v_idx, extra, rotations, translations,
                        velocities, accelerations, support, floats, ints):
    """``robot.model_kernels.step_terms`` for contacts between two bodies: the point terms of p₁ on
    body 1 minus those of p₂ on body 2 (``J_c = Cᵀ(J₁ − J₂)``, ``γ_c``, ``v_c`` likewise;
    body 0, the world, contributes nothing), then ``free_motion``. The gap is ``nᵀ(p₁ − p₂)``
    with both points moved with their bodies from where they were detected (``local1``,
    ``local2`` in the joint frames). ``floats``, ``ints``: the contact set's two arrays
    (``collision.Contacts``).

    Returns:
        W, p₁ (m, 3), phi, vc, the joint placements ``[R_b | t_b]`` (njoints, 3, 4), finite
        (``step_terms``'s buffer layout).
    """
    m = floats.shape[0]
    W = np.empty(packed_size(m, v.shape[0], tau.shape[0]))
    p = np.empty((m, 3))
    phi = np.empty(m)
    vc = np.empty((m, 3))
    placements = np.empty((support.shape[0], 3, 4))
    finite = geometry_terms_into(J, U, D, nle, v, tau, limit, v_idx, extra, rotations,
                                 translations, velocities, accelerations, support, floats,
                                 ints, W, p, phi, vc, placements)
    return W, p, phi, vc, placements, finite


@kernel(
    (F2f, F2f, F1, F1, F1, F1, F1, I1, F1, ro(F3s), ro(F2s), ro(F2), ro(F2), B2, F2, I2, F1, F2,
     F1, F2, F3),
    error_model="numpy",
)
def geometry_terms_into(J, U, D, nle, v, tau, limit, v_idx, extra, rotations, translations,
                        velocities, accelerations, support, floats, ints, W, p, phi, vc,
                        placements):
    """``geometry_step_terms`` into given outputs (W of ``packed_size``); returns finite."""
    nv = v.shape[0]
    nj = tau.shape[0]
    m = floats.shape[0]
    body1 = ints[:, I_BODY1]
    body2 = ints[:, I_BODY2]
    local1 = floats[:, F_LOCAL1:F_LOCAL1 + 3]
    local2 = floats[:, F_LOCAL2:F_LOCAL2 + 3]
    frames = floats[:, F_FRAME:F_FRAME + 9]  # row-major C_i (point_terms_into reads it so)
    Jc_o, gc_o, X_o, U_o, D_o, tf_o, af_o, tc_o = unpack(W, m, nv, nj)
    finite = clamp_torques(tau, limit, tc_o)
    origin = np.zeros((m, 3))  # point_terms reads origins[i] (its phi is not used)
    pt = np.empty((m, 2))
    placements_into(rotations, translations, placements)
    point_terms_into(J, v, rotations, translations, velocities, accelerations, support, body1,
                     local1, frames, origin, Jc_o, gc_o, p, phi, pt, vc)
    moving2 = False
    for i in range(m):
        moving2 = moving2 or body2[i] != 0
    if moving2:  # some body 2 moves: its point terms come off body 1's
        Jc2 = np.empty((3 * m, nv))
        gc2 = np.empty(3 * m)
        p2 = np.empty((m, 3))
        vc2 = np.empty((m, 3))
        point_terms_into(J, v, rotations, translations, velocities, accelerations, support,
                         body2, local2, frames, origin, Jc2, gc2, p2, np.empty(m), pt, vc2)
        for r in range(3 * m):
            gc_o[r] -= gc2[r]
            for k in range(nv):
                Jc_o[r, k] -= Jc2[r, k]
        for i in range(m):
            for c in range(3):
                vc[i, c] -= vc2[i, c]
        for i in range(m):
            C = frames[i]
            phi[i] = C[2] * (p[i, 0] - p2[i, 0]) + C[5] * (p[i, 1] - p2[i, 1]) \
                + C[8] * (p[i, 2] - p2[i, 2])
    else:  # every body 2 is the static world: p₂ = local2, no motion (the same numbers)
        for i in range(m):
            C = frames[i]
            phi[i] = C[2] * (p[i, 0] - local2[i, 0]) + C[5] * (p[i, 1] - local2[i, 1]) \
                + C[8] * (p[i, 2] - local2[i, 2])
    free_motion(U, D, nle, tc_o, v_idx, extra, Jc_o, tf_o, af_o, X_o, U_o, D_o)
    return finite


@kernel((F1, i8, i8, i8, F2, I2, I1, F2, F3, F2, I1, i8, ro(F3s), ro(F2)), error_model="numpy")
def curved_drift(W, m, nv, nj, floats, ints, kind, half, geom_R, geom_t, joint, first,
                 rotations, velocities):
    """The normal drift of contacts on spheres and cylinders made the gap's second derivative.

    ``γ_n = nᵀ(J̇₁v − J̇₂v)`` is the acceleration of the *material* points at the contact. On a
    curved surface the contact point runs over the body as it turns, and the gap does not
    follow the material point: for a sphere of radius r turning at ω, ``nᵀ(ω × (ω × (−r n)))``
    = ``r |ω_⊥|²`` (the centripetal acceleration of the point under the centre, ω_⊥ the part
    of ω across n) is in γ_n but not in φ̈, which is the centre's. A force-level model that
    reads γ_n (penalty_fl, eq. 18) then sees a rolling ball's bottom point lifting off at
    ``r ω²`` and lets it sink (49 mm at 24 rad/s). For a cylinder's rim point ``p = c + x``,
    ``x = −h s a − r d`` (axis a, end s, d across the axis), with ``u = aᵀn``:

        φ̈ − nᵀ(c̈) = −h s ü + r (u̇²/(1 − u²)^{3/2} + u ü/√(1 − u²)),
        u̇ = ωᵀ(a × n),  ü = (ωᵀa)(ωᵀn) − |ω|² u,
        nᵀ(p̈ − c̈) = (ωᵀx)(ωᵀn) − |ω|² xᵀn          (v̇ = 0, n held fixed),

    and the difference is taken off γ_n (a cap flat on the surface, |u| > 0.995, is a flat
    face: its rim points are material points). Box corners, clipped edges and faces are
    material points: unchanged. A sphere as body 2 (``p₂ = c₂ + r₂ n``) adds its own
    ``r₂ |ω₂⊥|²``. ``kind``, ``half``, ``geom_R``, ``geom_t``, ``joint``: the detector's
    geometries (``collision.Geometries``); ``first``: the feature index of geometry 0 in
    ``I_OTHER`` (the planes and static boxes come first).
    """
    Jc, gc, X, U, D, tf, af, tc = unpack(W, m, nv, nj)
    x = np.empty(3)
    for i in range(m):
        n0, n1, n2 = floats[i, F_NORMAL], floats[i, F_NORMAL + 1], floats[i, F_NORMAL + 2]
        corr = 0.0
        g = ints[i, I_GEOM1]
        for side in range(2):
            if side == 1:
                g = ints[i, I_OTHER] - first
                if g < 0 or kind[g] != KIND_SPHERE:
                    break
            k = kind[g]
            if k != KIND_SPHERE and k != KIND_CYLINDER:
                continue
            R = rotations[joint[g]]
            wl = velocities[joint[g]]
            w0 = R[0, 0] * wl[3] + R[0, 1] * wl[4] + R[0, 2] * wl[5]
            w1 = R[1, 0] * wl[3] + R[1, 1] * wl[4] + R[1, 2] * wl[5]
            w2 = R[2, 0] * wl[3] + R[2, 1] * wl[4] + R[2, 2] * wl[5]
            ww = w0 * w0 + w1 * w1 + w2 * w2
            wn = w0 * n0 + w1 * n1 + w2 * n2
            r = half[g, 0]
            if k == KIND_SPHERE:
                corr += r * (ww - wn * wn)
                continue
            # the cylinder's axis and the rim point relative to its centre, in the world
            a = np.empty(3)
            for c in range(3):
                a[c] = R[c, 0] * geom_R[g, 0, 2] + R[c, 1] * geom_R[g, 1, 2] \
                    + R[c, 2] * geom_R[g, 2, 2]
            for c in range(3):
                x[c] = R[c, 0] * (floats[i, F_LOCAL1] - geom_t[g, 0]) \
                    + R[c, 1] * (floats[i, F_LOCAL1 + 1] - geom_t[g, 1]) \
                    + R[c, 2] * (floats[i, F_LOCAL1 + 2] - geom_t[g, 2])
            u = a[0] * n0 + a[1] * n1 + a[2] * n2
            if abs(u) > 0.995:
                continue
            wa = w0 * a[0] + w1 * a[1] + w2 * a[2]
            wx = w0 * x[0] + w1 * x[1] + w2 * x[2]
            xn = x[0] * n0 + x[1] * n1 + x[2] * n2
            hs = -(x[0] * a[0] + x[1] * a[1] + x[2] * a[2])
            du = w0 * (a[1] * n2 - a[2] * n1) + w1 * (a[2] * n0 - a[0] * n2) \
                + w2 * (a[0] * n1 - a[1] * n0)
            ddu = wa * wn - ww * u
            q = 1.0 - u * u
            gap = -hs * ddu + r * (du * du / (q * np.sqrt(q)) + u * ddu / np.sqrt(q))
            corr += wx * wn - ww * xn - gap
        gc[3 * i + 2] -= corr


@kernel((i8, i8, i8), error_model="numpy")
def step_out_size(m, nj, nb):
    """Length of ``detect_step``'s per-step output (layout in ``step_out_views``)."""
    return m * (F_COLS + 7) + nj + 12 * nb


@kernel(
    (I1, F2, F3, F3, I2, F3, ro(F3s), ro(F2s), ro(F2), ro(F2), F2f, F2f, F1, F1, F1, I1, F1, B2,
     F1, F1),
    error_model="numpy",
)
def detect_step(static_i, static_3, static_33, tables, work_i, work_f, rotations,
                translations, velocities, accelerations, J, U, D, nle, limit, v_idx, extra,
                support, v, tau):
    """The step's detection and its terms in one call: ``collision.detect_only`` on the
    detector's buffers (``Detector.kernel_args``), ``collision.finish_into`` and
    ``geometry_terms_into`` on the set it found. When the detection needs Python (n < 0: work
    arrays too short; nf > 0: pairs for coal) nothing else is done and the caller finishes
    apart.

    The step's outputs come back in two fresh arrays (each returned array costs numba a
    boxing): W (``robot.model_kernels.unpack``), which only the contact models read, and one
    buffer (``step_out_views``) with what a ``StepResult`` keeps (the contact set's floats,
    p₁, phi, vc, the clamped τ, the joint placements), so a kept result does not keep W; the
    contact set's ints (m, ``I_COLS``) apart.

    Returns:
        n, nf, finite, W, the output buffer, ints.
    """
    static = static_views(static_i, static_3, static_33, tables)
    work = work_views(work_i, work_f)
    n, nf = detect_only(static, work, rotations, translations)
    if n < 0 or nf > 0:
        return n, nf, True, np.empty(0), np.empty(0), np.empty((0, I_COLS), dtype=np.int64)
    B1, B2, P1, P2, N, GAP, KEY, MU, ANC, G1, OTH, _ = work
    gmat, e_table, feature_mat, ground = static[7], static[17], static[18], static[19]
    nv, nj, nb = v.shape[0], tau.shape[0], support.shape[0]
    out = np.empty(step_out_size(n, nj, nb))
    o1 = n * F_COLS
    o2 = o1 + 3 * n
    o3 = o2 + n
    o4 = o3 + 3 * n
    o5 = o4 + nj
    floats = out[:o1].reshape((n, F_COLS))
    ints = np.empty((n, I_COLS), dtype=np.int64)
    finish_into(floats, ints, B1, B2, P1, P2, N, GAP, KEY, MU, ANC, G1, OTH, rotations,
                translations, e_table, gmat, feature_mat, ground)
    W = np.empty(packed_size(n, nv, nj))
    finite = geometry_terms_into(J, U, D, nle, v, tau, limit, v_idx, extra, rotations,
                                 translations, velocities, accelerations, support, floats,
                                 ints, W, out[o1:o2].reshape((n, 3)), out[o2:o3],
                                 out[o3:o4].reshape((n, 3)), out[o5:].reshape((nb, 3, 4)))
    tc = W[W.shape[0] - nj:]
    for j in range(nj):
        out[o4 + j] = tc[j]
    return n, nf, finite, W, out, ints
