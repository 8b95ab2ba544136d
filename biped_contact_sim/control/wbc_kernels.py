"""The compiled control step of ``wbc``: one call from pinocchio's arrays to the torques.

``wbc_step`` runs the numbered stages of ``control.wbc`` (Sentis et al. 2010) on the arrays
pinocchio's ``computeAllTerms`` leaves in its ``Data`` — A⁻¹, h, the joint Jacobians J and
their time derivative J̇ (world frame), the CoM, its Jacobian and drift, the centroidal angular
momentum, the frame placements — read as views, so that the Python layer only turns the
reference into tables and reads the torques back:

1. support rows at the commanded CoPs (eq. 18), J_s and γ_s = J̇_s v (``frame_rows``);
2. the constrained dynamics D, B, v̇₀, f₀ (eqs. 20–26) and Φ* = G Gᵀ, T (eq. 29)
   (``linalg_kernels``);
3. the task rows (``task_rows``: CoM, pose and unified force/position tasks of the bodies
   outside the support, base and torso orientation; the angular-momentum row after stage 2),
   their whitened Jacobians Ĵ_k = J_k B T and the damped priority recursion (eqs. 27–31);
4. the virtual linkage W_com, W_int at the anchors and the internal-force law with Γ_int of
   eq. 42 (eqs. 32–42), its reference with the no-slip contacts' and the unloading contacts'
   conditions (``internal_forces_kernels``: ``no_slip_rows``, ``unloading_rows``; ``law`` = 1).

Frames from J and J̇: a point p (world) of the body of joint i moves with
ṗ = (J_lin − [p]× J_ang) v over the columns of the joints that support i, and its classical
acceleration at v̇ = 0 is a_O + α × p + ω × ṗ with (a_O, α) = J̇ v, ω = J_ang v (the spatial
acceleration at the world origin) — pinocchio's LOCAL_WORLD_ALIGNED frame Jacobian and
classical acceleration, without a call per frame.

Tables (filled by ``wbc.WholeBodyController``): ``tasks`` (n_t, 2) = (kind, frame slot) in
priority order and ``task_par`` (n_t, PAR) their targets (layout ``P_*``); ``consts`` the
gains (``C_*``); ``flags`` and ``scal`` the step's switches and scalars (``F_*``, ``S_*``).
"""

from __future__ import annotations

import numpy as np

from biped_contact_sim.control.internal_forces_kernels import (
    linkage,
    model_rows,
    moment_share,
    no_slip,
    no_slip_rows,
    surface_resultant,
    unloading,
    unloading_rows,
    wrenches_at,
)
from biped_contact_sim.control.linalg_kernels import (
    constrained_space,
    internal_force_law,
    psd_factor,
    task_torques,
    whitening,
)
from biped_contact_sim.jit import B1, B2, F1, F2, F3, I1, I2, F2f, F2s, f8, i8, kernel, ro

# task kinds
COM, AM, POSE, FORCE, ORIENT = 0, 1, 2, 3, 4
ROWS = (3, 1, 6, 5, 3)  # rows in the motion levels per kind
# task_par columns: has target, kp, kd, p, v, a, R (row-major), ω, α, normal, F, wrench, has wrench
P_HAS, P_KP, P_KD, P_P, P_V, P_A, P_R, P_W, P_AL, P_N, P_F, P_WR, P_HASW = (
    0, 1, 2, 3, 6, 9, 12, 21, 24, 27, 30, 31, 37)
PAR = 38
# consts
C_KP_COM, C_KD_COM, C_KP_POST, C_KD_POST, C_KD_AM, C_RCOND, C_DAMP, C_KP_INT, C_KI_DT, \
    C_INT_LIMIT, C_G = range(11)
N_CONSTS = 11
# flags
# (F_NO_SLIP, F_UNLOAD: the stance indices of the no-slip and of the unloading contacts as
# bits, 0 for none; F_UNLOAD_KNOWN: those whose wrench at the unloading's start is known)
F_POST_Q, F_POST_V, F_POST_A, F_LAW, F_HAS_MEAS, F_PI_ON, F_TORQUES_ON, F_START, F_SHARE, \
    F_ORTHO, F_HEADING, F_OFFSET_NEW, F_NO_SLIP, F_UNLOAD, F_UNLOAD_KNOWN, F_EASE = range(16)
N_FLAGS = 16
# scal (S_PRELOAD: the no-slip contacts' least normal force, ``Reference.preload``; S_EASE: 9
# entries, exp([e ρ₀]×) row-major, the start-up blend's turn of the base target, ``F_EASE``)
S_RAMP, S_A2, S_CX, S_CY, S_CZ, S_AX, S_AY, S_AZ, S_PRELOAD, S_EASE = range(10)
N_SCAL = 18
MIN_SHARE = 1e-3  # ctc.MIN_SHARE


@kernel((F2f, F2f, B1, F1, F1, F2, F1, F1))
def frame_rows(J, dJ, mask, v, p, J_out, g_out, vel_out):  # pragma: no cover - compiled
    """J_out (6, nv) ← [J_lin − [p]× J_ang; J_ang], g_out ← classical acceleration at v̇ = 0,
    vel_out ← [ṗ; ω] of the world point p on the body whose supporting columns are ``mask``
    (module docstring)."""
    nv = J.shape[1]
    p0, p1, p2 = p[0], p[1], p[2]
    vo0 = vo1 = vo2 = w0 = w1 = w2 = 0.0
    ao0 = ao1 = ao2 = al0 = al1 = al2 = 0.0
    for c in range(nv):
        if not mask[c]:
            for i in range(6):
                J_out[i, c] = 0.0
            continue
        l0, l1, l2, a0, a1, a2 = J[0, c], J[1, c], J[2, c], J[3, c], J[4, c], J[5, c]
        J_out[0, c] = l0 - (p1 * a2 - p2 * a1)
        J_out[1, c] = l1 - (p2 * a0 - p0 * a2)
        J_out[2, c] = l2 - (p0 * a1 - p1 * a0)
        J_out[3, c] = a0
        J_out[4, c] = a1
        J_out[5, c] = a2
        x = v[c]
        vo0 += l0 * x
        vo1 += l1 * x
        vo2 += l2 * x
        w0 += a0 * x
        w1 += a1 * x
        w2 += a2 * x
        ao0 += dJ[0, c] * x
        ao1 += dJ[1, c] * x
        ao2 += dJ[2, c] * x
        al0 += dJ[3, c] * x
        al1 += dJ[4, c] * x
        al2 += dJ[5, c] * x
    vp0 = vo0 + (w1 * p2 - w2 * p1)
    vp1 = vo1 + (w2 * p0 - w0 * p2)
    vp2 = vo2 + (w0 * p1 - w1 * p0)
    g_out[0] = ao0 + (al1 * p2 - al2 * p1) + (w1 * vp2 - w2 * vp1)
    g_out[1] = ao1 + (al2 * p0 - al0 * p2) + (w2 * vp0 - w0 * vp2)
    g_out[2] = ao2 + (al0 * p1 - al1 * p0) + (w0 * vp1 - w1 * vp0)
    g_out[3], g_out[4], g_out[5] = al0, al1, al2
    vel_out[0], vel_out[1], vel_out[2] = vp0, vp1, vp2
    vel_out[3], vel_out[4], vel_out[5] = w0, w1, w2


@kernel((F2,))
def log3(R):  # pragma: no cover - compiled
    """ω with exp([ω]×) = R (pinocchio's ``log3``): θ = arccos((tr R − 1)/2), ω = θ/(2 sin θ)
    vee(R − Rᵀ), a series below θ = 1e-4 and the symmetric part's axis near θ = π."""
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    c = min(max(0.5 * (tr - 1.0), -1.0), 1.0)
    theta = np.arccos(c)
    out = np.empty(3)
    vx, vy, vz = R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]
    if theta < 1e-4:
        k = 0.5 * (1.0 + theta * theta / 6.0)
    elif theta < np.pi - 1e-3:
        k = 0.5 * theta / np.sin(theta)
    else:  # near π: the axis from R + Rᵀ = 2(cos θ I + (1 − cos θ) n nᵀ)
        for i in range(3):
            out[i] = np.sqrt(max((R[i, i] - c) / (1.0 - c), 0.0))
        if vx < 0.0:
            out[0] = -out[0]
        if vy < 0.0:
            out[1] = -out[1]
        if vz < 0.0:
            out[2] = -out[2]
        return theta * out
    out[0], out[1], out[2] = k * vx, k * vy, k * vz
    return out


@kernel((ro(F2s), i8))
def placement(oMf, fid):  # pragma: no cover - compiled
    """(R, o) of frame ``fid`` from the frame-placement view (rows: R column-major, o)."""
    R = np.empty((3, 3))
    for j in range(3):
        for i in range(3):
            R[i, j] = oMf[fid, 3 * j + i]
    o = np.empty(3)
    for i in range(3):
        o[i] = oMf[fid, 9 + i]
    return R, o


@kernel((F2f, F2f, ro(F2s), B2, I1, F1, I1, F2))
def support_rows(J, dJ, oMf, mask, fids, v, sup, sup_local):  # pragma: no cover - compiled
    """Stage 1: anchors P_k = o_k + R_k c_k (c_k the commanded CoP in the body frame), origins,
    rotations and the support rows J_s (6 n_s, nv), γ_s at the anchors (eq. 18)."""
    n_s, nv = sup.size, J.shape[1]
    anchors, origins = np.empty((n_s, 3)), np.empty((n_s, 3))
    rotations = np.empty((n_s, 3, 3))
    J_s, gamma_s = np.empty((6 * n_s, nv)), np.empty(6 * n_s)
    vel = np.empty(6)
    for k in range(n_s):
        s = sup[k]
        R, o = placement(oMf, fids[s])
        rotations[k] = R
        origins[k] = o
        anchors[k] = o + R @ sup_local[k]
        frame_rows(J, dJ, mask[s], v, anchors[k], J_s[6 * k:6 * k + 6],
                   gamma_s[6 * k:6 * k + 6], vel)
    return anchors, origins, rotations, J_s, gamma_s


@kernel((F2f, F2f, F2f, F1, F1, F1, ro(F2s), B2, I1, F1, F1, I2, F2, F2, F1))
def task_rows(J, dJ, Jcom, com, vcom, acom, oMf, mask, fids, v, consts, tasks, task_par,
              R_ref, h):  # pragma: no cover - compiled
    """Stage 3's rows: (J_up, e_up = ẍ_des − J̇ v, sizes, i_am, J_force, F_force) of the task
    table (``wbc`` steps 3; ``body_tasks``), and h ← h − J_bᵀ w_b for the measured wrench of a
    body under a force task (a known external force)."""
    nv = J.shape[1]
    n_t = tasks.shape[0]
    m_up, n_f = 0, 0
    for k in range(n_t):
        m_up += ROWS[tasks[k, 0]]
        if tasks[k, 0] == FORCE:
            n_f += 1
    J_up, e_up = np.zeros((m_up, nv)), np.zeros(m_up)
    sizes = np.empty(n_t, np.int64)
    J_force, F_force = np.zeros((n_f, nv)), np.zeros(n_f)
    J6, g6, vel = np.empty((6, nv)), np.empty(6), np.empty(6)
    i, i_am, f = 0, -1, 0
    for k in range(n_t):
        kind, s = tasks[k, 0], tasks[k, 1]
        par = task_par[k]
        sizes[k] = ROWS[kind]
        if kind == COM:
            kp, kd = consts[C_KP_COM], consts[C_KD_COM]
            for a in range(3):
                J_up[i + a] = Jcom[a]
                e_up[i + a] = (kp * (par[P_P + a] - com[a]) + kd * (par[P_V + a] - vcom[a])
                               + par[P_A + a] - acom[a])
        elif kind == AM:
            i_am = i
        else:
            R, o = placement(oMf, fids[s])
            frame_rows(J, dJ, mask[s], v, o, J6, g6, vel)
            kp, kd = par[P_KP], par[P_KD]
            e6 = np.empty(6)
            if kind == ORIENT:
                err = log3(R_ref @ R.T)
                for a in range(3):
                    J_up[i + a] = J6[3 + a]
                    e_up[i + a] = kp * err[a] - kd * vel[3 + a] - g6[3 + a]
            else:
                if par[P_HAS] == 0.0:
                    for a in range(6):
                        e6[a] = -kd * vel[a] - g6[a]
                else:
                    Rt = np.empty((3, 3))
                    for a in range(3):
                        for b in range(3):
                            Rt[a, b] = par[P_R + 3 * a + b]
                    err = log3(Rt @ R.T)
                    for a in range(3):
                        e6[a] = (par[P_A + a] + kd * (par[P_V + a] - vel[a])
                                 + kp * (par[P_P + a] - o[a])) - g6[a]
                        e6[3 + a] = (kp * err[a] - kd * vel[3 + a] + kd * par[P_W + a]
                                     + par[P_AL + a]) - g6[3 + a]
                if kind == POSE:
                    for a in range(6):
                        J_up[i + a] = J6[a]
                        e_up[i + a] = e6[a]
                else:  # FORCE: tangents and orientation as motion rows, the normal as force
                    n0, n1, n2 = par[P_N], par[P_N + 1], par[P_N + 2]
                    t = tangents(n0, n1, n2)
                    for b in range(2):
                        for c in range(nv):
                            J_up[i + b, c] = t[b, 0] * J6[0, c] + t[b, 1] * J6[1, c] \
                                + t[b, 2] * J6[2, c]
                        e_up[i + b] = t[b, 0] * e6[0] + t[b, 1] * e6[1] + t[b, 2] * e6[2]
                    for a in range(3):
                        J_up[i + 2 + a] = J6[3 + a]
                        e_up[i + 2 + a] = e6[3 + a]
                    for c in range(nv):
                        J_force[f, c] = n0 * J6[0, c] + n1 * J6[1, c] + n2 * J6[2, c]
                    F_force[f] = par[P_F]
                    f += 1
                    if par[P_HASW] != 0.0:  # h ← h − J_bᵀ [R w_f; R w_m]
                        wf = R @ par[P_WR:P_WR + 3].copy()
                        wm = R @ par[P_WR + 3:P_WR + 6].copy()
                        for c in range(nv):
                            h[c] -= (J6[0, c] * wf[0] + J6[1, c] * wf[1] + J6[2, c] * wf[2]
                                     + J6[3, c] * wm[0] + J6[4, c] * wm[1] + J6[5, c] * wm[2])
        i += ROWS[kind]
    return J_up, e_up, sizes, i_am, J_force, F_force


@kernel((f8, f8, f8))
def tangents(n0, n1, n2):  # pragma: no cover - compiled
    """(2, 3) tangents t_1, t_2 of a unit normal (``body_tasks.tangents``)."""
    a0, a1 = (1.0, 0.0) if abs(n0) < 0.9 else (0.0, 1.0)
    d = a0 * n0 + a1 * n1
    t0, t1, t2 = a0 - d * n0, a1 - d * n1, -d * n2
    norm = np.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
    t0, t1, t2 = t0 / norm, t1 / norm, t2 / norm
    out = np.empty((2, 3))
    out[0, 0], out[0, 1], out[0, 2] = t0, t1, t2
    out[1, 0], out[1, 1], out[1, 2] = n1 * t2 - n2 * t1, n2 * t0 - n0 * t2, n0 * t1 - n1 * t0
    return out


@kernel((F2, F2, I2))
def orthogonalize(W_com, W_int, spec):  # pragma: no cover - compiled
    """``grasp.orthogonalize``: NORMAL_FORCE rows of W_int (in place) made unit and orthogonal
    to W_com's rows and the other rows, in row order."""
    m, N = W_int.shape
    basis = np.zeros((N, 6 + m))
    others = 0
    for a in range(6):
        basis[:, others] = W_com[a]
        others += 1
    for k in range(m):
        if spec[k, 0] != 2:
            basis[:, others] = W_int[k]
            others += 1
    Q = np.linalg.qr(np.ascontiguousarray(basis[:, :others]))[0]
    cols = Q.shape[1]
    Qx = np.zeros((N, cols + m))
    Qx[:, :cols] = Q
    for k in range(m):
        if spec[k, 0] != 2:
            continue
        Q = np.ascontiguousarray(Qx[:, :cols])
        r = W_int[k] - Q @ (np.ascontiguousarray(Q.T) @ W_int[k])
        r /= np.sqrt(np.dot(r, r))
        W_int[k] = r
        Qx[:, cols] = r
        cols += 1


@kernel((F2, F3, F1, F2, I2, i8))
def linkage_model(anchors, rotations, com, W_com, spec, ortho):  # pragma: no cover - compiled
    """Stage 4's model: W_com (eq. 16) into ``W_com`` and (W_int, eq. 82 axis k or −1): for
    two contacts the rows of App. C eq. 82 with the sole axis of contact 2 most perpendicular
    to e_12 (``grasp.eq82_spec``), else the rows ``spec``; W_int empty if a tension line has
    zero length."""
    n_s = anchors.shape[0]
    surface_resultant(anchors, com, W_com)
    k82 = -1
    if n_s == 2:
        e0 = anchors[1, 0] - anchors[0, 0]
        e1 = anchors[1, 1] - anchors[0, 1]
        e2 = anchors[1, 2] - anchors[0, 2]
        R2 = rotations[1]
        k82 = 0 if abs(R2[0, 0] * e0 + R2[1, 0] * e1 + R2[2, 0] * e2) \
            <= abs(R2[0, 1] * e0 + R2[1, 1] * e1 + R2[2, 1] * e2) else 1
        spec = model_rows(spec, k82)
    offsets = np.arange(n_s) * 6
    W_int = np.empty((spec.shape[0], 6 * n_s))
    if not linkage(spec, anchors, rotations, offsets, W_int):
        return np.empty((0, 6 * n_s)), k82
    if ortho:
        orthogonalize(W_com, W_int, spec)
    return W_int, k82


@kernel((F2, F1, F2f, F2f, F2f, F1, F1, F1, F1, ro(F2s), F1, F1,
         B2, I1, F2, F1, i8, i8, I1, F2, I2, F2, F2, I1, F2, I2, F1, F2, F1, F1, F1, F1, F2))
def wbc_stages(Minv, h, J, dJ, Jcom, com, vcom, acom, L_G, oMf, q, v, mask, fids, centres,
               consts, j0, qj0, sup, sup_local, tasks, task_par, post, flags, R_ref, spec,
               f_int_user, w_meas, integral, tau_prev, f_int_start, scal,
               unload):  # pragma: no cover - compiled
    """Stages 1–4 of a control step of ``wbc`` (module docstring) with every intermediate.

    Returns:
        (code, Γ, damped, anchors, origins, rotations, D, f0, G, T, W_com, W_int, k82, f_task,
        F_int,ref, F_int,cmd, F_int,meas, α, F_int,start): code 0 done (Γ with Γ_int when
        ``flags[F_LAW]`` = 1, the task torques otherwise), 1 the support is singular (Λ_s⁻¹
        not positive definite: the caller takes the numpy path, which counts it), 2 two
        commanded CoPs coincide; ``damped`` the levels (and the internal-force solve) where the
        damping acted; k82 the retained axis of eq. 82 (−1 otherwise); α the load shares
        (empty when none); F_int,start the ramp's start (recomputed at a change).
    """
    nv = J.shape[1]
    n = nv - j0
    n_s = sup.size
    rcond, damping = consts[C_RCOND], consts[C_DAMP]
    anchors, origins, rotations, J_s, gamma_s = support_rows(J, dJ, oMf, mask, fids, v, sup,
                                                             sup_local)
    if flags[F_HEADING] != 0 and n_s > 0:  # upright, the stance soles' mean heading
        x0 = x1 = 0.0
        for k in range(n_s):
            x0 += rotations[k, 0, 0]
            x1 += rotations[k, 1, 0]
        yaw = np.arctan2(x1, x0)
        c, s = np.cos(yaw), np.sin(yaw)
        R_ref[:] = 0.0
        R_ref[0, 0], R_ref[0, 1], R_ref[1, 0], R_ref[1, 1], R_ref[2, 2] = c, -s, s, c, 1.0
        if flags[F_EASE] != 0:  # the start-up blend (``control.startup``): exp([e ρ₀]×) R_up
            R_ref[:] = np.ascontiguousarray(scal[S_EASE:S_EASE + 9]).reshape(3, 3) @ R_ref
    hh = h.copy()
    J_up, e_up, sizes, i_am, J_force, F_force = task_rows(
        J, dJ, Jcom, com, vcom, acom, oMf, mask, fids, v, consts, tasks, task_par, R_ref, hh)
    m_s = 6 * n_s
    ok, D, B, a0, f0 = constrained_space(Minv, hh, J_s, gamma_s, j0, rcond)
    W_com = np.zeros((6, m_s))
    none1, none2 = np.zeros(0), np.zeros((0, 0))
    if not ok:
        return (1, none1, 0, anchors, origins, rotations, none2, none1, none2, none2, W_com,
                none2, -1, none1, none1, none1, none1, none1, none1)
    G = psd_factor(np.ascontiguousarray(B[j0:]), rcond)
    T = whitening(G)
    W_int, k82 = np.zeros((0, m_s)), -1
    if n_s >= 2:
        W_int, k82 = linkage_model(anchors, rotations, com.copy(), W_com, spec,
                                   flags[F_ORTHO])
        if W_int.shape[0] == 0:
            return (2, none1, 0, anchors, origins, rotations, D, f0, G, T, W_com, W_int, k82,
                    none1, none1, none1, none1, none1, none1)
    w_am, e_am = np.zeros(m_s), 0.0
    if i_am >= 0:  # damping of e_12·L_G (App. B): the force row w_am f, f = f0 − D Γ
        w_am = np.ascontiguousarray(W_int[0, :3]) @ np.ascontiguousarray(W_com[3:])
        e12L = W_int[0, 0] * L_G[0] + W_int[0, 1] * L_G[1] + W_int[0, 2] * L_G[2]
        e_am = -consts[C_KD_AM] * e12L
    kp, kd = consts[C_KP_POST], consts[C_KD_POST]
    e_post = np.empty(n)
    for j in range(n):  # joint posture (last level, eq. 31)
        x = -kd * v[j0 + j]
        if flags[F_POST_Q] != 0:
            x += kp * (post[0, j] - q[qj0 + j])
        if flags[F_POST_V] != 0:
            x += kd * post[1, j]
        if flags[F_POST_A] != 0:
            x += post[2, j]
        e_post[j] = x
    tau, damped = task_torques(B, G, T, D, f0, a0, j0, J_up, e_up, sizes, i_am, w_am, e_am,
                               e_post, J_force, F_force, damping)
    f_task = none1
    if flags[F_LAW] == 0:
        return (0, tau, damped, anchors, origins, rotations, D, f0, G, T, W_com, W_int, k82,
                f_task, none1, none1, none1, none1, none1)
    f_task = f0 - D @ tau
    # 4. internal forces (eqs. 32–42): the reference ramps from the start after a change
    m_int = W_int.shape[0]
    start = f_int_start
    if flags[F_START] != 0:
        start = W_int @ (f0 - D @ tau_prev)
    if flags[F_NO_SLIP] != 0:  # no tangential force at the no-slip contacts
        contacts, free, preload_free = no_slip_rows(flags[F_NO_SLIP], anchors, rotations, spec,
                                                    k82, m_int)
        user = np.empty(m_int)
        no_slip(contacts, rotations, W_com, W_int, f_task, f_int_user, free, scal[S_PRELOAD],
                preload_free, user)
        f_int_user = user
    ramp = scal[S_RAMP]
    ref = f_int_user.copy()
    if ramp < 1.0 and start.size == m_int:
        ref = start + ramp * (f_int_user - start)
    if flags[F_UNLOAD] != 0:  # the unloading contacts' target wrenches; no load shares then
        contacts, targets, free = unloading_rows(flags[F_UNLOAD], flags[F_UNLOAD_KNOWN], unload,
                                                 spec, k82, f_task, f0, tau_prev, D)
        unloaded = np.empty(m_int)
        unloading(contacts, targets, W_com, W_int, f_task, ref, free, unloaded)
        ref = unloaded
        alpha = np.zeros(0)
    else:
        alpha = load_shares(centres, sup, rotations, origins, scal, consts, flags[F_SHARE])
        if alpha.size and k82 >= 0:
            moment_share(W_int, rotations, f_task, alpha[0], ref)
    tension = alpha[0] - alpha[1] if alpha.size else 0.0
    has_meas = flags[F_HAS_MEAS] != 0
    F_meas = np.zeros(m_s if has_meas else 0)
    if has_meas:
        wrenches_at(w_meas, rotations, origins, anchors, F_meas)
    d_tau, damped_int, ref, cmd, meas = internal_force_law(
        W_int, D, G, T, f_task, F_meas, has_meas, ref, tension, integral, consts[C_KP_INT],
        consts[C_KI_DT], consts[C_INT_LIMIT], flags[F_PI_ON] != 0, flags[F_TORQUES_ON] != 0,
        damping)
    if d_tau.size:
        tau = tau + d_tau
    return (0, tau, damped + damped_int, anchors, origins, rotations, D, f0, G, T, W_com, W_int,
            k82, f_task, ref, cmd, meas, alpha, start)


@kernel((F2, F1, F2f, F2f, F2f, F1, F1, F1, F1, ro(F2s), F1, F1,
         B2, I1, F2, F1, i8, i8, I1, F2, I2, F2, F2, I1, F2, I2, F1, F2, F1, F1, F1, F1,
         F2, F1, F1, F2))
def wbc_step(Minv, h, J, dJ, Jcom, com, vcom, acom, L_G, oMf, q, v, mask, fids, centres, consts,
             j0, qj0, sup, sup_local, tasks, task_par, post, flags, R_ref, spec, f_int_user,
             w_meas, integral, tau_prev, f_int_start, scal, unload, limit, tau_offset,
             cops):  # pragma: no cover - compiled
    """One control step of ``wbc``: ``wbc_stages`` (``flags[F_LAW]`` 0 or 1), then step 5 —
    the torque offset of a change of support decaying along σ = ``scal[S_RAMP]``
    (recomputed as Γ_prev − Γ where ``flags[F_OFFSET_NEW]``), the clamp to ±``limit`` — and
    the figures of ``info``: predicted wrenches f = f0 − D Γ_cmd (eq. 20), their resultant
    W_com f and internal forces W_int f, the measured CoPs ``cops`` (sole frames, NaN rows
    unloaded) in the world.

    Returns:
        (code, damped, k82, saturated, offset valid, sizes (F_int,ref, F_int,meas, α,
        F_int,start), out, geo): ``out`` = [Γ_cmd, offset, f, W_com f, W_int f, F_int,ref,
        F_int,cmd, F_int,meas, α, F_int,start], ``geo`` = [anchors; CoPs]; code as
        ``wbc_stages``' (``out`` empty unless 0).
    """
    (code, tau, damped, anchors, origins, rotations, D, f0, G, T, W_com, W_int, k82, f_task,
     ref, cmd, meas, alpha, start) = wbc_stages(
        Minv, h, J, dJ, Jcom, com, vcom, acom, L_G, oMf, q, v, mask, fids, centres, consts, j0,
        qj0, sup, sup_local, tasks, task_par, post, flags, R_ref, spec, f_int_user, w_meas,
        integral, tau_prev, f_int_start, scal, unload)
    n_s = sup.size
    if code != 0:
        return code, damped, k82, 0, False, (0, 0, 0, 0), np.zeros(0), np.zeros((0, 3))
    n = tau.size
    ramp = scal[S_RAMP]
    offset = np.zeros(n)
    has_offset = False
    if flags[F_OFFSET_NEW] != 0:
        offset = tau_prev - tau
        has_offset = True
    elif tau_offset.size:
        offset = tau_offset.copy()
        has_offset = True
    if has_offset:
        if ramp < 1.0:
            tau = tau + (1.0 - ramp) * offset
        else:
            has_offset = False
    tau_cmd = np.empty(n)
    saturated = 0
    for j in range(n):
        tau_cmd[j] = min(max(tau[j], -limit[j]), limit[j])
        if tau_cmd[j] != tau[j]:
            saturated += 1
    m_s, m = 6 * n_s, W_int.shape[0]
    f_pred = f0 - D @ tau_cmd if n_s else np.zeros(0)
    if n_s == 1:
        surface_resultant(anchors, com, W_com)
    F_com = W_com @ f_pred if n_s else np.zeros(0)
    F_int = W_int @ f_pred if m else np.zeros(0)
    sizes = (ref.size, meas.size, alpha.size, start.size)
    out = np.empty(2 * n + m_s + F_com.size + m + 2 * ref.size + meas.size + alpha.size
                   + start.size)
    i = 0
    for part in (tau_cmd, offset, f_pred, F_com, F_int, ref, cmd, meas, alpha, start):
        out[i:i + part.size] = part
        i += part.size
    geo = np.empty((2 * n_s, 3))
    geo[:n_s] = anchors
    for k in range(n_s):  # measured CoPs, sole frame → world (NaN where unloaded)
        if cops[k, 2] == 0.0:
            geo[n_s + k] = origins[k] + rotations[k] @ cops[k]
        else:
            geo[n_s + k] = cops[k]
    return code, damped, k82, saturated, has_offset, sizes, out, geo


@kernel((F2, I1, F3, F2, F1, F1, i8))
def load_shares(centres, sup, rotations, origins, scal, consts,
                mode):  # pragma: no cover - compiled
    """α = (α_1, α_2) of two stance bodies (``ctc.reference_load_shares``): mode 1 the
    reference's planned α_2 (``scal[S_A2]``), mode 2 from the reference's cart-table ZMP
    (CoM and its acceleration in ``scal``) projected on the line between the sole centres
    o_k + R_k c_k; clipped to [α_min, 1 − α_min]. Empty for mode 0 or coincident centres."""
    if mode == 0:
        return np.zeros(0)
    if mode == 1:
        a2 = scal[S_A2]
    else:
        c1 = origins[0] + rotations[0] @ centres[sup[0]]
        c2 = origins[1] + rotations[1] @ centres[sup[1]]
        g = consts[C_G]
        height = scal[S_CZ] - 0.5 * (c1[2] + c2[2])
        px = scal[S_CX] - height * scal[S_AX] / (g + scal[S_AZ])
        py = scal[S_CY] - height * scal[S_AY] / (g + scal[S_AZ])
        dx, dy = c2[0] - c1[0], c2[1] - c1[1]
        dd = dx * dx + dy * dy
        if dd < 1e-12:
            return np.zeros(0)
        a2 = ((px - c1[0]) * dx + (py - c1[1]) * dy) / dd
    a2 = min(max(a2, MIN_SHARE), 1.0 - MIN_SHARE)
    out = np.empty(2)
    out[0], out[1] = 1.0 - a2, a2
    return out


__all__ = ["frame_rows", "linkage_model", "load_shares", "log3", "orthogonalize", "placement",
           "support_rows", "tangents", "task_rows", "wbc_stages", "wbc_step"]
