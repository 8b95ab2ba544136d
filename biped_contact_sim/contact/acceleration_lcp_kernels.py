"""Compiled (numba) step of ``acceleration_lcp`` (contact/acceleration_lcp.py, whose module
docstring gives the method: impacts, active set, the acceleration LCP with its warm start,
Fischer–Burmeister then Lemke, the impulsive Painlevé fallback).

``build_lcp_kernel`` is tested equal to the readable numpy
``AccelerationLCPContact.build_lcp_reference``; the solvers it calls are tested against their numpy
references (test_lemke, test_gauss_seidel_fb).
"""

from __future__ import annotations

import math

import numpy as np

from biped_contact_sim.contact.acceleration_lcp_warm_kernels import FAILED, SOLVED, warm_basis_step
from biped_contact_sim.contact.base_kernels import packed_delassus
from biped_contact_sim.contact.gauss_seidel_kernels import (
    candidates,
    gather_contacts,
    impact_kernel,
)
from biped_contact_sim.jit import B1, F1, F2, I1, I2, F1s, I1s, b1, f8, i8, kernel
from biped_contact_sim.robot.model_kernels import unpack
from biped_contact_sim.solvers.fischer_burmeister_kernels import fischer_burmeister_kernel
from biped_contact_sim.solvers.gauss_seidel_kernels import gauss_seidel_kernel
from biped_contact_sim.solvers.lemke_kernels import lemke_kernel, pivoting_basis_solve
from biped_contact_sim.solvers.warm_start_kernels import basic_flags, match_keys


@kernel((F2, F1, F2, F1, F1, B1, f8, F2, f8, f8, F2, F2, F1))
def build_lcp_kernel(G, b, vc, phi, mu, sticking, dt, D, beta, eps, slip_u, A, q):
    """The acceleration LCP of step 3 (``AccelerationLCPContact.build_lcp_reference``), compiled.

    Over a active points (G (3a, 3a), b (3a,), vc (a, 3)); ``sticking`` (a,) bool; ``slip_u``
    (a, 2) receives the sliding directions ``ṗ_t/‖ṗ_t‖``. Unknowns ``z = [f_n; β; λ]`` (β, λ
    of the sticking points in order). A and q must be (n, n) and (n,), n = a + (d + 1)·ns.
    """
    a = phi.shape[0]
    d = D.shape[1]
    ns = 0
    for i in range(a):
        if sticking[i]:
            ns += 1
    nf = a + d * ns  # force unknowns f_n, β
    # B: contact forces (3a) from [f_n; β] (module docstring); GB = G B.
    B = np.zeros((3 * a, nf))
    k = 0
    for i in range(a):
        B[3 * i + 2, i] = 1.0
        if sticking[i]:
            for j in range(d):
                B[3 * i, a + d * k + j] = D[0, j]
                B[3 * i + 1, a + d * k + j] = D[1, j]
            k += 1
        else:
            speed = math.hypot(vc[i, 0], vc[i, 1])
            slip_u[i, 0] = vc[i, 0] / speed
            slip_u[i, 1] = vc[i, 1] / speed
            B[3 * i, i] = -mu[i] * slip_u[i, 0]  # f_t = −μ f_n u folded into the f_n column
            B[3 * i + 1, i] = -mu[i] * slip_u[i, 1]
    GB = G @ B
    A[:, :] = 0.0
    for i in range(a):
        for c in range(nf):
            A[i, c] = GB[3 * i + 2, c]
        ph = phi[i]
        target = (-(max(ph, 0.0) + beta * min(ph, 0.0)) / dt - vc[i, 2]) / dt
        q[i] = b[3 * i + 2] - target
    for r in range(nf):
        A[r, r] += eps
    k = 0
    for i in range(a):
        if not sticking[i]:
            continue
        lam = nf + k
        for j in range(d):
            row = a + d * k + j
            for c in range(nf):
                A[row, c] += D[0, j] * GB[3 * i, c] + D[1, j] * GB[3 * i + 1, c]
            A[row, lam] = 1.0
            q[row] = D[0, j] * (b[3 * i] + vc[i, 0] / dt) + D[1, j] * (b[3 * i + 1]
                                                                       + vc[i, 1] / dt)
            A[lam, row] = -1.0
        A[lam, i] = mu[i]
        q[lam] = 0.0
        k += 1


@kernel((F2, F1, F2, F1, F1, f8, f8, f8, i8, F2))
def _impulsive(G, b, vc, phi, mu, dt, beta, gs_tol, gs_max, f):
    """Step 4: exact velocity-level Coulomb impulse over one step; f ← impulse/dt (a, 3).

    Returns ``(converged, residual)``.
    """
    a = phi.shape[0]
    c = np.empty(3 * a)
    for i in range(a):
        for r in range(3):
            c[3 * i + r] = dt * b[3 * i + r] + vc[i, r]
        c[3 * i + 2] += (max(phi[i], 0.0) + beta * min(phi[i], 0.0)) / dt
    P = np.zeros(3 * a)
    v = np.empty(3 * a)
    converged, _, res = gauss_seidel_kernel(G, c, mu, P, gs_tol, gs_max, 1.0, v)
    for i in range(a):
        for r in range(3):
            f[i, r] = P[3 * i + r] / dt
    return converged, res


# Statistics of one acceleration_lcp step, in the order of the kernel's stats array.
ACC_STATS = ("candidates", "active", "sliding", "system_size", "impacts", "zeno_events",
              "impact_failures", "solver_iterations", "warm_starts", "solver_failures",
              "lemke_fallbacks", "painleve_events", "residual")


# Principal pivots tried on a warm basis that misses the test (pivoting_basis_solve).
MAX_FLIPS = 4
# Length of the params array (acceleration_lcp_kernels).
N_PARAMS = 11


@kernel((F1, i8, i8, i8, b1, F2, F1, F1s, f8, I1s, F2, F1, F1, B1, I2, i8, B1))
def acceleration_lcp_step(W, m, nv, nj, drift, vc_all, phi_all, mu_all, dt, keys_all, f_all,
                          stats, work, impacting_all, keys_buf, stored, active):
    """The step on the simulator's buffer in one call: the warm basis on the factor
    (``acceleration_lcp_warm_kernels.warm_basis_step``), else ``acceleration_lcp_kernel`` on
    ``packed_delassus(W, m, nv, nj, all points, drift)``.

    ``work`` = [params (N_PARAMS) | D (2, d) | e (m) | rows (2, m, width)] and ``keys_buf``
    (2, m): the pair ``stored`` (0 or 1; −1: none) holds the previous step's rows and keys,
    the other pair receives this step's (``rows_out`` and ``keys_all``). ``active`` ← f_n > 0.
    """
    # len(work) = N_PARAMS + 2d + m (1 + 2 width) with width = 2d + 5
    d = (work.shape[0] - N_PARAMS - 11 * m) // (2 * (2 * m + 1))
    width = 2 * d + 5
    params = work[:N_PARAMS]
    D = work[N_PARAMS:N_PARAMS + 2 * d].reshape((2, d))
    o = N_PARAMS + 2 * d
    e_all = work[o:o + m]
    rows = work[o + m:o + m + 2 * m * width].reshape((2, m, width))
    nxt = 1 if stored == 0 else 0
    keys_out = keys_buf[nxt]
    keys_out[:] = keys_all
    rows_out = rows[nxt]
    if stored < 0:
        warm_keys = keys_buf[0, :0]
        warm_rows = rows[0, :0]
    else:
        warm_keys = keys_buf[stored]
        warm_rows = rows[stored]
    Jc, gc, X, _, _, _, af, _ = unpack(W, m, nv, nj)
    code = warm_basis_step(X, Jc, af, gc, drift, vc_all, phi_all, mu_all, dt, D, params,
                           warm_keys, warm_rows, keys_all, f_all, rows_out, stats, MAX_FLIPS)
    if code == SOLVED:
        impacting_all[:] = False
    else:
        G, b = packed_delassus(W, m, nv, nj, np.arange(m), drift)
        acceleration_lcp_kernel(G, b, vc_all, phi_all, mu_all, e_all, dt, D, params, warm_keys,
                                warm_rows, keys_all, f_all, impacting_all, rows_out, stats,
                                code != FAILED)
    for i in range(m):
        active[i] = f_all[i, 2] > 0.0


@kernel((F2, F1, F2, F1, F1s, F1, f8, F2, F1, I1, F2, I1s, F2, B1, F2, F1, b1))
def acceleration_lcp_kernel(G_all, b_all, vc_all, phi_all, mu_all, e_all, dt, D, params,
                            warm_keys, warm_rows, keys_all, f_all, impacting_all, rows_out,
                            stats, try_basis):
    """Steps 1–4 of the module docstring (compiled), over all m_all points.

    ``params`` = (margin, v_thr, slip_velocity, β_s, tolerance, max_iterations, pivot_tol,
    residual_tol, gs_tolerance, gs_max_sweeps, ε_r); ``e_all`` the restitution per point
    (after the Zeno rule). A warm-start row per contact id: ``(f_n, β, λ)``, their basis flags,
    and whether it was sticking; ``rows_out`` (m_all, 2(2 + d) + 1) receives this step's.
    Writes ``f_all`` (m_all, 3), ``impacting_all`` and ``stats`` (order of ``ACC_STATS``).
    ``try_basis`` False: the stored basis already failed (``warm_basis_step``), start with
    Fischer–Burmeister.
    """
    margin, thr, slip_v, beta = params[0], params[1], params[2], params[3]
    tol_rel, max_it, pivot_tol = params[4], int(params[5]), params[6]
    residual_tol, gs_tol, gs_max, eps_r = params[7], params[8], int(params[9]), params[10]
    d = D.shape[1]
    width = 2 + d
    stats[:] = 0.0
    f_all[:, :] = 0.0
    rows_out[:, :] = 0.0
    impacting_all[:] = False
    idx = candidates(phi_all, vc_all, dt, margin)
    m = idx.shape[0]
    if m == 0:
        return
    G, b, vc, phi, mu, _ = gather_contacts(idx, G_all, b_all, vc_all, phi_all, mu_all)
    e = e_all[idx]
    # Step 1: impacts (eq. 5 by Lemke, eq. 6).
    p = np.empty(m)
    vc1 = np.empty((m, 3))
    impacting = np.empty(m, dtype=np.bool_)
    code = impact_kernel(G, vc, phi, dt, e, thr, pivot_tol, max(10, 10 * m * m), residual_tol,
                         p, vc1, impacting)
    failed = code > 0
    stats[0] = m
    n_imp = 0
    for a in range(m):
        impacting_all[idx[a]] = impacting[a]
        if impacting[a]:
            n_imp += 1
    stats[4] = n_imp
    stats[6] = 1.0 if failed else 0.0
    # Step 2: the active set, after the impacts: neither rebounding nor still approaching.
    act = np.empty(m, dtype=np.int64)
    na = 0
    for a in range(m):
        vn1 = vc1[a, 2]
        if failed or (not (impacting[a] and e[a] > 0.0 and vn1 > thr) and vn1 >= -thr):
            act[na] = a
            na += 1
    stats[1] = na
    fc = np.zeros((m, 3))
    if na:
        Ga, ba, va, pa, ma, diag = gather_contacts(act[:na], G, b, vc1, phi, mu)
        fa = np.zeros((na, 3))
        if failed:  # the impulsive fallback takes every candidate (the law separates)
            _, gres = _impulsive(Ga, ba, va, pa, ma, dt, beta, gs_tol, gs_max, fa)
            stats[12] = gres
        else:
            eps = eps_r * max(diag / (3 * na), 0.0)
            keys = np.empty(na, dtype=np.int64)
            for x in range(na):
                keys[x] = keys_all[idx[act[x]]]
            pos = np.empty(na, dtype=np.int64)
            found = match_keys(warm_keys, keys, pos)
            sticking = np.empty(na, dtype=np.bool_)
            for x in range(na):
                sticking[x] = math.hypot(va[x, 0], va[x, 1]) < slip_v
            slip_u = np.zeros((na, 2))
            painleve = False
            for _ in range(2):
                ns = 0
                for x in range(na):
                    if sticking[x]:
                        ns += 1
                n = na + (d + 1) * ns
                nf = na + d * ns
                A = np.empty((n, n))
                q = np.empty(n)
                build_lcp_kernel(Ga, ba, va, pa, ma, sticking, dt, D, beta, eps, slip_u, A, q)
                tol = tol_rel * max(1.0, np.abs(q).max())
                # Warm start from the previous step's rows when every flag is unchanged.
                same = found == na
                if same:
                    for x in range(na):
                        if (warm_rows[pos[x], 2 * width] != 0.0) != sticking[x]:
                            same = False
                            break
                z = np.zeros(n)
                w = np.empty(n)
                zmask = np.zeros(n, dtype=np.bool_)
                if same:
                    k = 0
                    for x in range(na):
                        row = warm_rows[pos[x]]
                        z[x] = row[0]
                        zmask[x] = row[width] != 0.0
                        if sticking[x]:
                            for j in range(d):
                                z[na + d * k + j] = row[1 + j]
                                zmask[na + d * k + j] = row[width + 1 + j] != 0.0
                            z[nf + k] = row[1 + d]
                            zmask[nf + k] = row[width + 1 + d] != 0.0
                            k += 1
                solved = False
                res = 0.0
                if same and try_basis:
                    zb = np.empty(n)
                    ok, _, res = pivoting_basis_solve(A, q, zmask, zb, w, tol, MAX_FLIPS)
                    if ok:
                        solved = True
                        z[:] = zb
                        stats[8] = 1.0
                try_basis = True  # a slide → stick re-solve has a new basis
                if not solved:
                    zmask[:] = False
                    st, its, res = fischer_burmeister_kernel(A, q, z, tol, max_it, 30, 1e-4,
                                                             0.5, w)
                    stats[7] += its
                    solved = st == 0
                    if solved:
                        basic_flags(z, zmask, tol)
                if not solved:
                    stats[9] = 1.0
                    st, _, res = lemke_kernel(A, q, np.ones(n), pivot_tol, max(10, 10 * n * n),
                                              residual_tol, z, w, zmask)
                    solved = st == 0
                    if solved:
                        stats[10] = 1.0
                if not solved:
                    painleve = True
                    break
                # Forces of the active points from z (module docstring, step 3).
                k = 0
                for x in range(na):
                    fn = max(z[x], 0.0)
                    fa[x, 2] = fn
                    if sticking[x]:
                        f0 = 0.0
                        f1 = 0.0
                        for j in range(d):
                            bj = max(z[na + d * k + j], 0.0)
                            f0 += D[0, j] * bj
                            f1 += D[1, j] * bj
                        fa[x, 0] = f0
                        fa[x, 1] = f1
                        k += 1
                    else:
                        fa[x, 0] = -ma[x] * fn * slip_u[x, 0]
                        fa[x, 1] = -ma[x] * fn * slip_u[x, 1]
                # Slide → stick within the step: a sliding point whose friction would reverse
                # its slip by the end of the step comes to rest in it (re-solved once).
                reverses = False
                for x in range(na):
                    if sticking[x]:
                        continue
                    acc0 = ba[3 * x]
                    acc1 = ba[3 * x + 1]
                    for y in range(na):
                        for s in range(3):
                            acc0 += Ga[3 * x, 3 * y + s] * fa[y, s]
                            acc1 += Ga[3 * x + 1, 3 * y + s] * fa[y, s]
                    if va[x, 0] * (va[x, 0] + dt * acc0) + va[x, 1] * (va[x, 1] + dt * acc1) \
                            < 0.0:
                        sticking[x] = True
                        reverses = True
                if not reverses:
                    break
            if painleve:
                stats[11] = 1.0
                _, gres = _impulsive(Ga, ba, va, pa, ma, dt, beta, gs_tol, gs_max, fa)
                stats[12] = gres
            else:
                stats[12] = res
                stats[3] = n
                ns = 0
                k = 0
                for x in range(na):
                    row = rows_out[idx[act[x]]]
                    row[0] = max(z[x], 0.0)
                    row[width] = 1.0 if zmask[x] else 0.0
                    row[2 * width] = 1.0 if sticking[x] else 0.0
                    if sticking[x]:
                        for j in range(d):
                            v = max(z[na + d * k + j], 0.0)
                            row[1 + j] = v
                            row[width + 1 + j] = 1.0 if zmask[na + d * k + j] else 0.0
                        lam = z[nf + k]
                        row[1 + d] = max(lam, 0.0)
                        row[width + 1 + d] = 1.0 if zmask[nf + k] else 0.0
                        k += 1
                    else:
                        ns += 1
                stats[2] = ns
        for x in range(na):
            for r in range(3):
                fc[act[x], r] = fa[x, r]
    for a in range(m):
        i = idx[a]
        for r in range(3):
            f_all[i, r] = fc[a, r]
        f_all[i, 2] += p[a] / dt
