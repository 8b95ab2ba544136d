"""Compiled per-step loops of the robot layer (numba): point terms from pinocchio's outputs and
solves with pinocchio's factor of M (docs/methods.md §1).

Everything here reads what pinocchio's C++ algorithms left in a ``Data`` (``computeAllTerms``:
the WORLD joint Jacobians J, the joint placements and the joint spatial velocities and q̈ = 0
accelerations; ``cholesky.decompose``: ``M = U D Uᵀ``, U unit upper triangular, D diagonal)
and does the small loops around it in one call, instead of tens of numpy and binding calls
on 3-vectors.

Point i lies on the body of joint b(i) at ``l_i`` in that joint's frame; ``(R_b, t_b)`` is the
joint placement, ``(v_b, ω_b)`` and ``(a_b, α_b)`` its spatial velocity and (q̈ = 0) spatial
acceleration in the joint frame (pinocchio ``data.v``, ``data.a``), J_b the columns of the
WORLD Jacobian J on the support of b. Then

    p_i = R_b l_i + t_b,                  J_i = J_b,lin − [p_i]× J_b,ang,
    ṗ_i = R_b (v_b + ω_b × l_i),          γ_i = J̇_i v = R_b (a_b + α_b × l_i + ω_b × ṗ_i'),

with ṗ_i' = v_b + ω_b × l_i the point velocity in the joint frame (the classical acceleration
at q̈ = 0, as pinocchio's ``getFrameClassicalAcceleration``; pinocchio's ``data.dJ`` is not used:
it is wrong for composite joints such as the planar root),

and in the contact frame C_i = [t₁ t₂ n] with origin o_i: ``(p_t, φ) = C_iᵀ(p_i − o_i)``,
``v_c = C_iᵀ ṗ_i``, ``J_c,i = C_iᵀ J_i``, ``γ_c,i = C_iᵀ γ_i``.
"""

from __future__ import annotations

import numpy as np

from biped_contact_sim.jit import (
    B2,
    F1,
    F2,
    F3,
    I1,
    I2,
    F1s,
    F2f,
    F2s,
    F3s,
    I1s,
    f8,
    i8,
    kernel,
    ro,
)

#: numba types of the joints' rotations, translations, velocities and accelerations as
#: ``robot.model.DataViews`` holds them (read-only strided views of pinocchio's storage)
JOINTS = (ro(F3s), ro(F2s), ro(F2s), ro(F2s))

@kernel(
    (F2f, F1, *JOINTS, B2, I1, I1, F2, F3, F2, F2, F1),
    error_model="numpy",
)
def point_terms(J, v, rotations, translations, velocities, accelerations, support, point_body,
                joints, local, frames, origins, Jc, gc):
    """Contact-point terms of docs/methods.md §1 in contact frames (module docstring).

    Args:
        J: (6, nv) WORLD joint Jacobians (pinocchio Data).
        v: (nv,) generalized velocity.
        rotations, translations: (njoints, 3, 3) and (njoints, 3), the joint placements
            ``R_b``, ``t_b`` (``robot.model.DataViews``).
        velocities, accelerations: (njoints, 6), their spatial velocity and (q̈ = 0)
            acceleration in the joint frame (pinocchio ``data.v``, ``data.a``; linear first).
        support: (njoints, nv) bool, the columns of J that move joint b.
        point_body: (m,) the joint b(i) of point i; joints: (nb,) the joints whose placements
            are returned; local: (m, 3) point in its joint frame.
        frames: (k, 3, 3) contact frames (columns t₁, t₂, n), k = m or 1 (shared);
        origins: (k, 3) a point of each contact surface.
        Jc, gc: outputs, (3m, nv) contact-frame Jacobians and (3m,) drifts.

    Returns:
        p (m, 3) world positions, phi (m,), p_tangent (m, 2), vc (m, 3), in contact frames
        except p, and the placements ``[R_b | t_b]`` (nb, 3, 4) of ``joints`` (copies: the
        observers read them after the Data moved on).
    """
    m = point_body.shape[0]
    p = np.empty((m, 3))
    phi = np.empty(m)
    pt = np.empty((m, 2))
    vc = np.empty((m, 3))
    placements = np.empty((joints.shape[0], 3, 4))
    joint_placements_into(rotations, translations, joints, placements)
    point_terms_into(J, v, rotations, translations, velocities, accelerations, support,
                     point_body, local, frames.reshape((frames.shape[0], 9)), origins, Jc, gc,
                     p, phi, pt, vc)
    return p, phi, pt, vc, placements


@kernel((ro(F2s), ro(F1s), F2), error_model="numpy")
def placement_into(R, t, placement):
    """``placement = [R | t]`` (3 × 4)."""
    for r in range(3):
        placement[r, 0] = R[r, 0]
        placement[r, 1] = R[r, 1]
        placement[r, 2] = R[r, 2]
        placement[r, 3] = t[r]


@kernel((ro(F3s), ro(F2s), F3), error_model="numpy")
def placements_into(rotations, translations, placements):
    """``placements[b] = [R_b | t_b]`` for every b < len(placements)."""
    for b in range(placements.shape[0]):
        placement_into(rotations[b], translations[b], placements[b])


@kernel((ro(F3s), ro(F2s), I1, F3), error_model="numpy")
def joint_placements_into(rotations, translations, joints, placements):
    """``placements[b] = [R_j | t_j]`` of joint ``j = joints[b]``."""
    for b in range(joints.shape[0]):
        placement_into(rotations[joints[b]], translations[joints[b]], placements[b])


@kernel(
    (F2f, F1, *JOINTS, B2, I1s, F2s, F2s, F2, F2, F1, F2, F1, F2, F2),
    (F2f, F1, *JOINTS, I2, I1s, F2s, F2s, F2, F2, F1, F2, F1, F2, F2),
    error_model="numpy",
)
def point_terms_into(J, v, rotations, translations, velocities, accelerations, support,
                     point_body, local, frames, origins, Jc, gc, p, phi, pt, vc):
    """``point_terms`` into given outputs p (m, 3), phi (m,), p_tangent (m, 2), vc (m, 3)
    (without the placements; the 3-vectors of the loop are scalars: no temporaries), the
    frames given row-major as (k, 9) (``C[r, c] = frames[f, 3 r + c]``: the contact set's
    columns are read in place)."""
    m = point_body.shape[0]
    nv = v.shape[0]
    Jw = np.empty((3, nv))
    shared = frames.shape[0] == 1
    for i in range(m):
        b = point_body[i]
        R = rotations[b]
        t = translations[b]
        V = velocities[b]
        A = accelerations[b]
        l0, l1, l2 = local[i, 0], local[i, 1], local[i, 2]
        w0, w1, w2 = V[3], V[4], V[5]
        # In the joint frame: ṗ = v + ω × l, p̈ = a + α × l + ω × ṗ (classical, q̈ = 0).
        vl0 = V[0] + w1 * l2 - w2 * l1
        vl1 = V[1] + w2 * l0 - w0 * l2
        vl2 = V[2] + w0 * l1 - w1 * l0
        gl0 = A[0] + A[4] * l2 - A[5] * l1 + w1 * vl2 - w2 * vl1
        gl1 = A[1] + A[5] * l0 - A[3] * l2 + w2 * vl0 - w0 * vl2
        gl2 = A[2] + A[3] * l1 - A[4] * l0 + w0 * vl1 - w1 * vl0
        pw0 = R[0, 0] * l0 + R[0, 1] * l1 + R[0, 2] * l2 + t[0]
        pw1 = R[1, 0] * l0 + R[1, 1] * l1 + R[1, 2] * l2 + t[1]
        pw2 = R[2, 0] * l0 + R[2, 1] * l1 + R[2, 2] * l2 + t[2]
        vw0 = R[0, 0] * vl0 + R[0, 1] * vl1 + R[0, 2] * vl2
        vw1 = R[1, 0] * vl0 + R[1, 1] * vl1 + R[1, 2] * vl2
        vw2 = R[2, 0] * vl0 + R[2, 1] * vl1 + R[2, 2] * vl2
        gw0 = R[0, 0] * gl0 + R[0, 1] * gl1 + R[0, 2] * gl2
        gw1 = R[1, 0] * gl0 + R[1, 1] * gl1 + R[1, 2] * gl2
        gw2 = R[2, 0] * gl0 + R[2, 1] * gl1 + R[2, 2] * gl2
        for k in range(nv):
            if support[b, k]:
                # J_lin + J_ang × p  (= J_lin − [p]× J_ang), WORLD convention
                Jw[0, k] = J[0, k] + J[4, k] * pw2 - J[5, k] * pw1
                Jw[1, k] = J[1, k] + J[5, k] * pw0 - J[3, k] * pw2
                Jw[2, k] = J[2, k] + J[3, k] * pw1 - J[4, k] * pw0
        f = 0 if shared else i
        C = frames[f]
        o = origins[f]
        d0, d1, d2 = pw0 - o[0], pw1 - o[1], pw2 - o[2]
        for c in range(3):  # contact-frame component c = column c of C
            c0, c1, c2 = C[c], C[3 + c], C[6 + c]
            coord = c0 * d0 + c1 * d1 + c2 * d2
            if c == 2:
                phi[i] = coord
            else:
                pt[i, c] = coord
            vc[i, c] = c0 * vw0 + c1 * vw1 + c2 * vw2
            gc[3 * i + c] = c0 * gw0 + c1 * gw1 + c2 * gw2
            for k in range(nv):
                if support[b, k]:
                    Jc[3 * i + c, k] = c0 * Jw[0, k] + c1 * Jw[1, k] + c2 * Jw[2, k]
                else:
                    Jc[3 * i + c, k] = 0.0
        p[i, 0], p[i, 1], p[i, 2] = pw0, pw1, pw2


@kernel((F2f, F1, F1, F1, I1, F1, F2, F1, F1, F2, F2, F1), error_model="numpy")
def free_motion(U, D, nle, tau, v_idx, extra, Jc, tf, a, X, Uc, Dc):
    """``τ_free = Sᵀτ − h + extra``, ``a_free = M⁻¹ τ_free`` and ``X = D^{-1/2} U⁻¹ J_cᵀ``
    into the outputs tf, a, X, with copies Uc, Dc of U and D (so a state outlives the Data
    that produced it: RK4 stages overwrite it).

    With ``M = U D Uᵀ`` (pinocchio's factor), ``G = J_c M⁻¹ J_cᵀ = XᵀX`` (Delassus operator)
    and ``M⁻¹ J_cᵀ f = U⁻ᵀ D^{-1/2} X f``.
    """
    nv = nle.shape[0]
    for k in range(nv):
        tf[k] = extra[k] - nle[k]
        Dc[k] = D[k]
        for c in range(nv):
            Uc[k, c] = U[k, c]
    for j in range(v_idx.shape[0]):
        tf[v_idx[j]] += tau[j]
    solve_udut_into(Uc, Dc, tf, a)
    n3 = Jc.shape[0]
    # U X' = J_cᵀ by back substitution, one row of X' at a time (the inner loop runs over the
    # 3m independent columns, so it vectorises), then X = D^{-1/2} X'.
    for r in range(nv):
        for c in range(n3):
            X[r, c] = Jc[c, r]
    for r in range(nv - 1, -1, -1):
        for k in range(r + 1, nv):
            u = Uc[r, k]
            if u != 0.0:
                for c in range(n3):
                    X[r, c] -= u * X[k, c]
    for r in range(nv):
        s = 1.0 / np.sqrt(Dc[r])
        for c in range(n3):
            X[r, c] *= s


@kernel((F2, F1, F1), error_model="numpy")
def solve_udut(U, D, y):
    """``x = M⁻¹ y`` with ``M = U D Uᵀ`` (U unit upper triangular), in a new array."""
    x = np.empty(y.shape[0])
    solve_udut_into(U, D, y, x)
    return x


@kernel((F2, F1, F1, F1), error_model="numpy")
def solve_udut_into(U, D, y, x):
    """``x = M⁻¹ y`` (``M = U D Uᵀ``) into x (not y), without temporaries: U z = y back,
    z /= D, Uᵀ x = z forward, z kept in x."""
    nv = y.shape[0]
    for r in range(nv - 1, -1, -1):  # U z = y, z in x
        s = y[r]
        for k in range(r + 1, nv):
            s -= U[r, k] * x[k]
        x[r] = s
    for r in range(nv):
        x[r] /= D[r]
    for r in range(nv):  # Uᵀ x = z, in place: x[r] is read before it is written
        s = x[r]
        for k in range(r):
            s -= U[k, r] * x[k]
        x[r] = s


@kernel((F2, F1), error_model="numpy")
def inverse_udut(U, D):
    """Dense ``M⁻¹`` from ``M = U D Uᵀ`` (only for readers of ``ContactState.Minv``)."""
    nv = D.shape[0]
    out = np.empty((nv, nv))
    e = np.zeros(nv)
    for c in range(nv):
        e[c] = 1.0
        out[:, c] = solve_udut(U, D, e)
        e[c] = 0.0
    return out


@kernel((F2, F1, F2, F1, F1), error_model="numpy")
def contact_acceleration(U, D, X, a_free, f):
    """``v̇ = a_free + M⁻¹ J_cᵀ f = a_free + U⁻ᵀ D^{-1/2} X f`` (f stacked (t₁, t₂, n))."""
    x = np.empty(X.shape[0])
    contact_acceleration_into(U, D, X, a_free, f.reshape((f.shape[0] // 3, 3)), x)
    return x


@kernel((F2, F1, F2, F1, F2s, F1), error_model="numpy")
def contact_acceleration_into(U, D, X, a_free, f, a):
    """``contact_acceleration`` into ``a`` (nv), for forces f (m, 3) of any memory layout."""
    nv = a.shape[0]
    m = f.shape[0]
    for r in range(nv):
        s = 0.0
        for i in range(m):
            for c in range(3):
                s += X[r, 3 * i + c] * f[i, c]
        a[r] = s / np.sqrt(D[r])
    for r in range(nv):  # Uᵀ x = y, in place
        s = a[r]
        for k in range(r):
            s -= U[k, r] * a[k]
        a[r] = s
    for r in range(nv):
        a[r] += a_free[r]


@kernel((F1, F1, f8, F2), error_model="numpy")
def euler_velocity(v, a, dt, Jc):
    """Semi-implicit Euler velocity ``v⁺ = v + dt a``, the contact velocities ``J_c v⁺`` and
    ``max |v⁺|`` (NaN if v⁺ is not finite)."""
    nv = v.shape[0]
    vn = np.empty(nv)
    vmax = 0.0
    for k in range(nv):
        vn[k] = v[k] + dt * a[k]
        x = abs(vn[k])
        if not x <= 1e300:  # NaN or Inf
            vmax = np.nan
        elif x > vmax:
            vmax = x
    n3 = Jc.shape[0]
    vc = np.empty(n3)
    for r in range(n3):
        s = 0.0
        for k in range(nv):
            s += Jc[r, k] * vn[k]
        vc[r] = s
    return vn, vc.reshape(n3 // 3, 3), vmax


@kernel((i8, i8, i8), error_model="numpy")
def packed_size(m, nv, nj):
    """Length of the per-step buffer of ``step_terms`` (layout in ``unpack``)."""
    return 3 * m * nv + 3 * m + nv * 3 * m + nv * nv + 3 * nv + nj


@kernel((F1, i8, i8, i8), error_model="numpy")
def unpack(W, m, nv, nj):
    """Views of the per-step buffer: J_c (3m, nv), γ_c (3m,), X (nv, 3m), U (nv, nv), D (nv,),
    τ_free (nv,), a_free (nv,), clamped τ (nj,)."""
    n3 = 3 * m
    o1 = n3 * nv
    o2 = o1 + n3
    o3 = o2 + nv * n3
    o4 = o3 + nv * nv
    o5 = o4 + nv
    o6 = o5 + nv
    o7 = o6 + nv
    return (W[:o1].reshape((n3, nv)), W[o1:o2], W[o2:o3].reshape((nv, n3)),
            W[o3:o4].reshape((nv, nv)), W[o4:o5], W[o5:o6], W[o6:o7], W[o7:o7 + nj])


def unpack_views(W: np.ndarray, m: int, nv: int, nj: int) -> tuple[np.ndarray, ...]:
    """``unpack`` for Python callers: its Python function (the same views by numpy slicing,
    without the dispatcher's typing of every argument)."""
    return unpack.py_func(W, m, nv, nj)


@kernel((F1, F1, F1), error_model="numpy")
def clamp_torques(tau, limit, out):
    """``out = clip(τ, −τ_max, τ_max)`` (the URDF effort limits); False if τ has a NaN/Inf."""
    finite = True
    for j in range(tau.shape[0]):
        x = tau[j]
        if not abs(x) <= 1e308:
            finite = False
        out[j] = min(max(x, -limit[j]), limit[j])
    return finite


@kernel(
    (F2f, F2f, F1, F1, F1, F1, F1, I1, F1, *JOINTS, B2, I1, I1, F2, F3, F2),
    error_model="numpy",
)
def step_terms(J, U, D, nle, v, tau, limit, v_idx, extra, rotations, translations, velocities,
               accelerations, support, point_body, joints, local, frames, origins):
    """One call for a step's terms: τ clamped to ``[−limit, limit]`` (and whether it was
    finite), ``point_terms`` and ``free_motion``.

    The terms only the kernels read (J_c, γ_c, X, U, D, τ_free, a_free, clamped τ) go into one
    buffer W (``unpack``): one array to hand back to Python instead of eight.

    Returns:
        W, p, phi, p_tangent, vc, placements, finite.
    """
    nv = v.shape[0]
    nj = tau.shape[0]
    m = point_body.shape[0]
    W = np.empty(packed_size(m, nv, nj))
    Jc_o, gc_o, X_o, U_o, D_o, tf_o, af_o, tc_o = unpack(W, m, nv, nj)
    finite = clamp_torques(tau, limit, tc_o)
    p, phi, pt, vc, placements = point_terms(
        J, v, rotations, translations, velocities, accelerations, support, point_body, joints,
        local, frames, origins, Jc_o, gc_o)
    free_motion(U, D, nle, tc_o, v_idx, extra, Jc_o, tf_o, af_o, X_o, U_o, D_o)
    return W, p, phi, pt, vc, placements, finite


@kernel((F1, i8, i8, i8), error_model="numpy")
def refresh_free_motion(W, m, nv, nj):
    """``a_free = M⁻¹ τ_free`` again in W (after ``τ_free`` was changed in place)."""
    Jc, gc, X, U, D, tf, af, tc = unpack(W, m, nv, nj)
    af[:] = solve_udut(U, D, tf)


@kernel((F1, i8, i8, i8, F1), error_model="numpy")
def packed_acceleration(W, m, nv, nj, f):
    """``contact_acceleration`` from the buffer W."""
    Jc, gc, X, U, D, tf, af, tc = unpack(W, m, nv, nj)
    return contact_acceleration(U, D, X, af, f)


@kernel((F1, i8, i8, i8, F1, F1, f8), error_model="numpy")
def euler_step(W, m, nv, nj, f, v, dt):
    """``v̇ = a_free + M⁻¹ J_cᵀ f`` then ``euler_velocity``: returns (v̇, v⁺, J_c v⁺, max|v⁺|)."""
    Jc, gc, X, U, D, tf, af, tc = unpack(W, m, nv, nj)
    a = contact_acceleration(U, D, X, af, f)
    vn, vc, vmax = euler_velocity(v, a, dt, Jc)
    return a, vn, vc, vmax


@kernel((F1, i8, i8, i8, F2s, F1, f8, F1), error_model="numpy")
def euler_into(W, m, nv, nj, f, v, dt, out):
    """``euler_step`` into ``out`` = [v̇ (nv) | v⁺ (nv) | dt v⁺ (nv) | J_c v⁺ (3m)] for forces f
    (m, 3) (any memory layout); returns ``max |v⁺|`` (NaN if v⁺ is not finite). The same
    operations as ``euler_step`` and ``dt * v⁺`` in numpy."""
    Jc, gc, X, U, D, tf, af, tc = unpack(W, m, nv, nj)
    a = out[:nv]  # v̇ built in out[:nv]
    contact_acceleration_into(U, D, X, af, f, a)
    vmax = 0.0
    for k in range(nv):
        vn = v[k] + dt * a[k]
        out[nv + k] = vn
        out[2 * nv + k] = dt * vn
        x = abs(vn)
        if not x <= 1e300:  # NaN or Inf
            vmax = np.nan
        elif x > vmax:
            vmax = x
    o = 3 * nv
    for r in range(3 * m):
        s = 0.0
        for k in range(nv):
            s += Jc[r, k] * out[nv + k]
        out[o + r] = s
    return vmax


@kernel((i8, i8, i8), error_model="numpy")
def points_out_size(m, nj, nb):
    """Length of ``points_step``'s output (layout in ``points_views``)."""
    return 9 * m + nj + 12 * nb


@kernel(
    (F1, I1, F1, *JOINTS, F2f, F2f, F1, F1, F1, F1, F1, F1),
    error_model="numpy",
)
def points_step(static_f, static_i, extra, rotations, translations, velocities, accelerations,
                J, U, D, nle, v, tau, W, out):
    """``step_terms`` on the simulator's packed fixed arrays (``pack_points``) and the joints'
    stacked placements and motions (all joints; the points' joints picked by index), into
    the given W (``packed_size``) and ``out`` = [p (3m) | phi (m) | p_tangent (2m) | vc (3m) |
    clamped τ (nj) | placements of the contact joints (12 nb)] (``points_views``).

    Returns:
        finite (τ had no NaN/Inf).
    """
    m, nj, nb, njoints = static_i[0], static_i[1], static_i[2], static_i[3]
    nv = v.shape[0]
    o = 4
    v_idx = static_i[o:o + nj]
    point_joint = static_i[o + nj:o + nj + m]
    joints = static_i[o + nj + m:o + nj + m + nb]
    o += nj + m + nb
    support = static_i[o:o + njoints * nv].reshape((njoints, nv))
    limit = static_f[:nj]
    local = static_f[nj:nj + 3 * m].reshape((m, 3))
    frames = static_f[nj + 3 * m:nj + 3 * m + 9].reshape((1, 9))
    origins = static_f[nj + 3 * m + 9:nj + 3 * m + 12].reshape((1, 3))
    Jc_o, gc_o, X_o, U_o, D_o, tf_o, af_o, tc_o = unpack(W, m, nv, nj)
    finite = clamp_torques(tau, limit, tc_o)
    joint_placements_into(rotations, translations, joints,
                          out[9 * m + nj:9 * m + nj + 12 * nb].reshape((nb, 3, 4)))
    point_terms_into(J, v, rotations, translations, velocities, accelerations, support,
                     point_joint, local, frames, origins, Jc_o, gc_o,
                     out[:3 * m].reshape((m, 3)), out[3 * m:4 * m],
                     out[4 * m:6 * m].reshape((m, 2)), out[6 * m:9 * m].reshape((m, 3)))
    free_motion(U, D, nle, tc_o, v_idx, extra, Jc_o, tf_o, af_o, X_o, U_o, D_o)
    for j in range(nj):
        out[9 * m + j] = tc_o[j]
    return finite


def pack_points(limit: np.ndarray, v_idx: np.ndarray, point_joint: np.ndarray,
                joints: np.ndarray, support: np.ndarray, local: np.ndarray, frame: np.ndarray,
                origin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``points_step``'s fixed arrays in one float and one int buffer: the effort limits, the
    points in their joint frames, the shared contact frame and origin; the actuated
    velocity indices, each point's joint, the contact joints, the joints' supports (njoints,
    nv) as 0/1."""
    m, nj, nb = len(point_joint), len(v_idx), len(joints)
    ints = np.concatenate([[m, nj, nb, support.shape[0]], v_idx, point_joint, joints,
                           support.ravel()]).astype(np.int64)
    floats = np.concatenate([limit, np.ravel(local), np.ravel(frame), np.ravel(origin)])
    return floats.astype(np.float64), ints


def points_views(out: np.ndarray, m: int,
                 nj: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """phi (m,), p_tangent (m, 2), vc (m, 3), the clamped τ (nj,) in ``points_step``'s
    output (``points_positions``: p; ``points_placements``: the placements)."""
    return out[3 * m:4 * m], out[4 * m:6 * m].reshape(m, 2), out[6 * m:9 * m].reshape(m, 3), \
        out[9 * m:9 * m + nj]


def points_positions(out: np.ndarray, m: int, nj: int, nb: int) -> np.ndarray:
    """p (m, 3) in ``points_step``'s output."""
    return out[:3 * m].reshape(m, 3)


def points_placements(out: np.ndarray, m: int, nj: int, nb: int) -> np.ndarray:
    """The contact joints' placements (nb, 3, 4) in ``points_step``'s output."""
    o = 9 * m + nj
    return out[o:o + 12 * nb].reshape(nb, 3, 4)
