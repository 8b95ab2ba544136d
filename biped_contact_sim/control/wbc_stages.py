"""The numbered stages of ``wbc`` in numpy and pinocchio: the reference of ``wbc_kernels``.

``WholeBodyController`` runs a control step as one compiled call (``wbc_kernels.wbc_step``)
or, with ``compiled = False``, as these functions, which the tests call one by one and compare
with the compiled step on the same measurements (docs/methods.md §4.2; Sentis et al. 2010):

1. ``support_rows``: anchors P_k at the commanded CoPs and the support rows J_s, γ_s = J̇_s v
   (eq. 18), from pinocchio's LOCAL_WORLD_ALIGNED frame Jacobians and classical accelerations
   transported to P_k;
2. ``linalg.constrained_space_reference``: D, B, v̇₀, f₀ (eqs. 20–26) and Φ* = G Gᵀ, T (eq. 29);
3. ``task_rows`` (the rows of the CoM, angular-momentum, pose, force/position and orientation
   tasks, and the external force of a pressing body on h) and ``linalg.task_torques_reference`` (the
   damped priority recursion, eqs. 27–31);
4. ``InternalForces`` (the virtual linkage and the law of eqs. 32–42).

The plan of a step — which bodies support, which tasks in which order with which targets — is
the same tables for both paths (``wbc_kernels``' layout), so that a test compares the
arithmetic only.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from biped_contact_sim.control.body_tasks import tangents
from biped_contact_sim.control.wbc_kernels import (
    AM,
    C_KD_COM,
    C_KP_COM,
    COM,
    FORCE,
    ORIENT,
    P_A,
    P_AL,
    P_F,
    P_HAS,
    P_HASW,
    P_KD,
    P_KP,
    P_N,
    P_P,
    P_R,
    P_V,
    P_W,
    P_WR,
    POSE,
    ROWS,
)

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


def skew(r: np.ndarray) -> np.ndarray:
    """[r]×, so that [r]× x = r × x."""
    return np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])


def point_terms(model, data, frame_id: int, r: np.ndarray) -> tuple:
    """(J_P (6, nv), γ_P (6,), [ṗ_P; ω]) of the point at world offset r from a frame's origin:
    J_P = [J_lin − [r]× J_ang; J_ang], γ_P = [a + α × r + ω × (ω × r); α] (a, α the frame's
    classical acceleration at v̇ = 0), ṗ_P = ṗ_o + ω × r. Needs ``data`` after
    ``computeAllTerms`` and the frame placements."""
    J = pin.getFrameJacobian(model, data, frame_id, LWA)
    acc = pin.getFrameClassicalAcceleration(model, data, frame_id, LWA)
    vel = pin.getFrameVelocity(model, data, frame_id, LWA)
    w = vel.angular
    J[:3] -= skew(r) @ J[3:]
    gamma = np.concatenate([acc.linear + np.cross(acc.angular, r)
                            + np.cross(w, np.cross(w, r)), acc.angular])
    return J, gamma, np.concatenate([vel.linear + np.cross(w, r), w])


def support_rows(model, data, fids: np.ndarray, sup: np.ndarray, sup_local: np.ndarray
                 ) -> tuple:
    """Stage 1 (eq. 18): (anchors P_k = o_k + R_k c_k, origins o_k, rotations R_k, J_s
    (6 n_s, nv), γ_s) of the support bodies ``sup`` (slots of ``fids``), c_k = ``sup_local``
    the commanded CoPs in the body frames."""
    n_s, nv = len(sup), model.nv
    anchors, origins = np.empty((n_s, 3)), np.empty((n_s, 3))
    rotations = np.empty((n_s, 3, 3))
    J_s, gamma_s = np.empty((6 * n_s, nv)), np.empty(6 * n_s)
    for k, s in enumerate(sup):
        fid = int(fids[s])
        oMf = data.oMf[fid]
        rotations[k], origins[k] = oMf.rotation, oMf.translation
        r = rotations[k] @ sup_local[k]
        anchors[k] = origins[k] + r
        J_s[6 * k:6 * k + 6], gamma_s[6 * k:6 * k + 6], _ = point_terms(model, data, fid, r)
    return anchors, origins, rotations, J_s, gamma_s


def task_rows(model, data, fids: np.ndarray, consts: np.ndarray, tasks: np.ndarray,
              task_par: np.ndarray, R_ref: np.ndarray, h: np.ndarray) -> tuple:
    """Stage 3's rows of the task table (``wbc_kernels.task_rows``): (J_up, e_up = ẍ_des − J̇ v,
    sizes, i_am, J_force, F_force); h ← h − J_bᵀ w_b (in place) for the measured wrench of a
    body under a force task.

    * CoM (eq. 59): J_com, kp (c_ref − c) + kd (ċ_ref − ċ) + c̈_ref − J̇_com v;
    * pose of a body (``body_tasks``): J_o, [a + kd (v_ref − ṗ_o) + kp (p_ref − p_o);
      kp log(R_ref Rᵀ) − kd ω + kd ω_ref + α_ref] − J̇_o v, or −kd [ṗ_o; ω] − J̇_o v without a
      target;
    * unified force/position (§V-A): the pose rows along the surface's tangents and the
      orientation, the normal n as a force row nᵀ J_lin with the operational force F;
    * orientation of a frame (base, torso): J_ang, kp log(R_ref Rᵀ) − kd ω − α;
    * angular momentum: a placeholder row at i_am, filled after stage 2.
    """
    nv = model.nv
    sizes = np.array([ROWS[k] for k in tasks[:, 0]], dtype=np.int64)
    J_up, e_up = np.zeros((sizes.sum(), nv)), np.zeros(sizes.sum())
    n_f = int(np.count_nonzero(tasks[:, 0] == FORCE))
    J_force, F_force = np.zeros((n_f, nv)), np.zeros(n_f)
    i, i_am, f = 0, -1, 0
    for (kind, s), par in zip(tasks, task_par, strict=True):
        if kind == COM:
            J_up[i:i + 3] = data.Jcom
            e_up[i:i + 3] = (consts[C_KP_COM] * (par[P_P:P_P + 3] - data.com[0])
                             + consts[C_KD_COM] * (par[P_V:P_V + 3] - data.vcom[0])
                             + par[P_A:P_A + 3] - data.acom[0])
        elif kind == AM:
            i_am = i
        else:
            fid = int(fids[s])
            J6, g6, vel = point_terms(model, data, fid, np.zeros(3))
            R, o = data.oMf[fid].rotation, data.oMf[fid].translation
            kp, kd = par[P_KP], par[P_KD]
            if kind == ORIENT:
                J_up[i:i + 3] = J6[3:]
                e_up[i:i + 3] = kp * pin.log3(R_ref @ R.T) - kd * vel[3:] - g6[3:]
            else:
                if par[P_HAS] == 0.0:
                    e6 = -kd * vel - g6
                else:
                    R_t = par[P_R:P_R + 9].reshape(3, 3)
                    e6 = np.concatenate([
                        par[P_A:P_A + 3] + kd * (par[P_V:P_V + 3] - vel[:3])
                        + kp * (par[P_P:P_P + 3] - o),
                        kp * pin.log3(R_t @ R.T) - kd * vel[3:] + kd * par[P_W:P_W + 3]
                        + par[P_AL:P_AL + 3]]) - g6
                if kind == POSE:
                    J_up[i:i + 6], e_up[i:i + 6] = J6, e6
                else:  # FORCE
                    n_hat = par[P_N:P_N + 3]
                    t = tangents(n_hat)
                    J_up[i:i + 2], e_up[i:i + 2] = t @ J6[:3], t @ e6[:3]
                    J_up[i + 2:i + 5], e_up[i + 2:i + 5] = J6[3:], e6[3:]
                    J_force[f], F_force[f] = n_hat @ J6[:3], par[P_F]
                    f += 1
                    if par[P_HASW] != 0.0:
                        w = par[P_WR:P_WR + 6]
                        h -= J6[:3].T @ (R @ w[:3]) + J6[3:].T @ (R @ w[3:])
        i += ROWS[kind]
    return J_up, e_up, sizes, i_am, J_force, F_force


__all__ = ["point_terms", "skew", "support_rows", "task_rows"]
