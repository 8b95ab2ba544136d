"""Compiled warm-started step of ``acceleration_lcp`` on the factor, without forming G or A.

The step of contact/acceleration_lcp.py (module docstring, step 3) first re-solves the previous
step's complementary basis. On a step without impacts whose contacts and stick/slide flags are
those of the stored basis, this module does that re-solve from ``X = D^{-1/2} U⁻¹ J_cᵀ``
(``G = XᵀX``, contact/base.py) directly: with ``Y_c = X B_c`` (the column of the force unknown
c) and ``Y_r = X C_r`` (the row of unknown r: the normal for ``f_n``, the facet for β), the
force block of the LCP matrix is ``A_rc = Y_rᵀ Y_c + ε δ_rc``, so only the entries of the basic
set (8–16 of the 48 unknowns of a standing biped) are formed, and ``w = A z + q`` over all
unknowns comes from ``u = Σ_c Y_c z_c`` and ``Xᵀ u``. The dense path
(``acceleration_lcp_kernels``) forms the (3a × 3a) G, the (n × n) A and solves the same basis:
the same LCP, the same acceptance test, a few times the work.

The re-solve is repaired by single principal pivots (``solvers.lemke_kernels.
pivoting_basis_solve``, the same rule on the dense A) and taken only when it meets
Fischer–Burmeister's convergence test ``‖Φ‖∞ ≤ tol``; otherwise the dense path runs
Fischer–Burmeister from the previous solution (and Lemke), as before.
``test_acceleration_lcp_warm`` checks this path against the dense one and the numpy LCP.
"""

from __future__ import annotations

import math

import numpy as np

from biped_contact_sim.jit import F1, F2, I1, F1s, I1s, b1, f8, i8, kernel
from biped_contact_sim.solvers.lemke_kernels import lu_solve_inplace, most_violated

# Return codes of warm_basis_step.
NOT_TRIED, SOLVED, FAILED = 0, 1, -1


@kernel((F2, F2, F1, F1, b1, F2, F1, F1s, f8, F2, F1, I1, F2, I1s, F2, F2, F1, i8))
def warm_basis_step(X, Jc, af, gc, drift, vc_all, phi_all, mu_all, dt, D, params, warm_keys,
                    warm_rows, keys_all, f_all, rows_out, stats, max_flips):
    """The stored basis re-solved on the factor (module docstring); steps 1–3 of
    contact/acceleration_lcp.py when no candidate approaches faster than the impact threshold.

    Arguments as ``acceleration_lcp_kernels.acceleration_lcp_kernel`` (``X, Jc, af, gc`` from
    ``robot.model_kernels.unpack``, ``drift``: keep γ_c in b). Returns ``SOLVED`` (f_all,
    rows_out, stats written as the dense path would), ``NOT_TRIED`` (an impact or a point in
    flight, a contact without a stored row, a changed stick/slide flag, a slide → stick
    reversal: nothing written) or ``FAILED`` (the basis and its pivots miss the test; nothing
    written).
    """
    m_all = phi_all.shape[0]
    margin, thr, slip_v, beta = params[0], params[1], params[2], params[3]
    tol_rel, eps_r = params[4], params[10]
    nv = X.shape[0]
    d = D.shape[1]
    width = 2 + d
    if warm_keys.shape[0] == 0:
        return NOT_TRIED
    n_max = m_all * (d + 2)
    iw = np.empty(4 * m_all + 2 * n_max, dtype=np.int64)  # (one allocation, views of it)
    idx = iw[:m_all]
    na = 0
    for i in range(m_all):
        vn = vc_all[i, 2]
        if phi_all[i] + dt * min(vn, 0.0) <= margin:
            if vn < -thr:  # an impact, or a point in flight: the dense path's step 1
                return NOT_TRIED
            idx[na] = i
            na += 1
    if na == 0:
        return NOT_TRIED
    pos = iw[m_all:2 * m_all]
    sp = iw[2 * m_all:3 * m_all]  # the point of the k-th sticking unknowns
    sticking = iw[3 * m_all:4 * m_all]  # 0/1
    ns = 0
    for x in range(na):
        i = idx[x]
        key = keys_all[i]
        p = -1
        for j in range(warm_keys.shape[0]):
            if warm_keys[j] == key:
                p = j
                break
        if p < 0:
            return NOT_TRIED
        pos[x] = p
        st = math.hypot(vc_all[i, 0], vc_all[i, 1]) < slip_v
        if (warm_rows[p, 2 * width] != 0.0) != st:
            return NOT_TRIED
        sticking[x] = 1 if st else 0
        if st:
            sp[ns] = x
            ns += 1
    n = na + (d + 1) * ns
    nf = na + d * ns
    mask = iw[4 * m_all:4 * m_all + n]
    basic = iw[4 * m_all + n:4 * m_all + 2 * n]
    fw = np.empty(9 * na + 4 * n + nv + 2 * n * nv + n * n + n)
    b = fw[:3 * na]
    acc = fw[3 * na:6 * na]
    slip_u = fw[6 * na:8 * na].reshape((na, 2))
    o = 8 * na
    q = fw[o:o + n]
    z = fw[o + n:o + 2 * n]
    zb = fw[o + 2 * n:o + 3 * n]
    w = fw[o + 3 * n:o + 4 * n]
    o += 4 * n
    u = fw[o:o + nv]
    o += nv
    YbT = fw[o:o + n * nv].reshape((nv, n))
    o += n * nv
    YcT = fw[o:o + n * nv].reshape((nv, n))
    o += n * nv
    M = fw[o:o + n * n].reshape((n, n))
    o += n * n
    sol = fw[o:o + n]
    mu = fw[o + n:o + n + na]
    # b = J_c a_free (+ γ_c) and tr G over the active points (delassus_from_factor's sums,
    # each in the same order; the loops run over j outermost so that the entries accumulate
    # side by side instead of one long chain of dependent additions).
    for x in range(na):
        i = idx[x]
        mu[x] = mu_all[i]
        for r in range(3):
            b[3 * x + r] = gc[3 * i + r]
            acc[3 * x + r] = 0.0
        if not sticking[x]:
            speed = math.hypot(vc_all[i, 0], vc_all[i, 1])
            slip_u[x, 0] = vc_all[i, 0] / speed
            slip_u[x, 1] = vc_all[i, 1] / speed
    for j in range(nv):
        aj = af[j]
        for x in range(na):
            c = 3 * idx[x]
            for r in range(3):
                b[3 * x + r] += Jc[c + r, j] * aj
                acc[3 * x + r] += X[j, c + r] * X[j, c + r]
    trace = 0.0
    for x in range(na):
        for r in range(3):
            trace += acc[3 * x + r]
            if not drift:
                b[3 * x + r] -= gc[3 * idx[x] + r]
    eps = eps_r * max(trace / (3 * na), 0.0)
    # q (build_lcp_kernel) and the stored basis.
    qmax = 0.0
    for x in range(na):
        i = idx[x]
        ph = phi_all[i]
        target = (-(max(ph, 0.0) + beta * min(ph, 0.0)) / dt - vc_all[i, 2]) / dt
        q[x] = b[3 * x + 2] - target
        mask[x] = 1 if warm_rows[pos[x], width] != 0.0 else 0
    for k in range(ns):
        x = sp[k]
        i = idx[x]
        p = pos[x]
        for j in range(d):
            q[na + d * k + j] = D[0, j] * (b[3 * x] + vc_all[i, 0] / dt) \
                + D[1, j] * (b[3 * x + 1] + vc_all[i, 1] / dt)
            mask[na + d * k + j] = 1 if warm_rows[p, width + 1 + j] != 0.0 else 0
        q[nf + k] = 0.0
        mask[nf + k] = 1 if warm_rows[p, width + 1 + d] != 0.0 else 0
    for v in range(n):
        qmax = max(qmax, abs(q[v]))
    tol = tol_rel * max(1.0, qmax)
    flip_tol = 0.1 * tol  # pivoting_basis_solve's rule
    res = np.inf
    solved = False
    for flips in range(max_flips + 1):
        kb = 0
        for v in range(n):
            if mask[v]:
                basic[kb] = v
                kb += 1
        kf = 0  # the force unknowns come first (λ are the last unknowns)
        # Y_c = X B_c and Y_r = X C_r of the basic force unknowns (module docstring): the
        # normal f_n of point x (its column folds −μ u in for a sliding point), or the facet
        # β_kj of the k-th sticking point. (Written out here: a helper taking the arrays costs
        # their reference counts at every call, more than the arithmetic.)
        while kf < kb and basic[kf] < nf:
            v = basic[kf]
            if v < na:
                c = 3 * idx[v]
                if sticking[v]:
                    for j in range(nv):
                        YcT[j, kf] = X[j, c + 2]
                        YbT[j, kf] = X[j, c + 2]
                else:
                    a0 = -mu[v] * slip_u[v, 0]
                    a1 = -mu[v] * slip_u[v, 1]
                    for j in range(nv):
                        YcT[j, kf] = X[j, c + 2]
                        YbT[j, kf] = X[j, c + 2] + a0 * X[j, c] + a1 * X[j, c + 1]
            else:
                k = (v - na) // d
                fct = (v - na) - d * k
                c = 3 * idx[sp[k]]
                d0 = D[0, fct]
                d1 = D[1, fct]
                for j in range(nv):
                    y = d0 * X[j, c] + d1 * X[j, c + 1]
                    YbT[j, kf] = y
                    YcT[j, kf] = y
            kf += 1
        # A_BB: force rows/columns Y_rᵀY_c + ε (accumulated over j outermost, see above);
        # the λ couplings of build_lcp_kernel.
        for a in range(kb):
            r = basic[a]
            sol[a] = -q[r]
            for c in range(kb):
                M[a, c] = 0.0
        for j in range(nv):
            for a in range(kf):
                ya = YcT[j, a]
                for c in range(kf):
                    M[a, c] += ya * YbT[j, c]
        for a in range(kf):
            M[a, a] += eps
        for a in range(kf, kb):
            r = basic[a]
            k = r - nf
            for c in range(kf):
                v = basic[c]
                if v < na:  # a λ row and an f_n column: μ for the same point
                    if sp[k] == v:
                        M[a, c] = mu[v]
                elif (v - na) // d == k:  # a λ row and a β column: −1 for the same point
                    M[a, c] = -1.0
                    M[c, a] = 1.0  # a β row and a λ column: 1 for the same point
        if not lu_solve_inplace(M, sol, kb):
            break
        for v in range(n):
            zb[v] = 0.0
        for a in range(kb):
            zb[basic[a]] = sol[a]
        for v in range(n):
            z[v] = max(zb[v], 0.0)
        # w = A z + q at the clipped point: u = X B z_f, acc = Xᵀu = G B z_f.
        for j in range(nv):
            u[j] = 0.0
        for a in range(kf):
            zv = z[basic[a]]
            if zv != 0.0:
                for j in range(nv):
                    u[j] += YbT[j, a] * zv
        for v in range(3 * na):
            acc[v] = 0.0
        for j in range(nv):
            uj = u[j]
            for x in range(na):
                c = 3 * idx[x]
                for r in range(3):
                    acc[3 * x + r] += X[j, c + r] * uj
        for x in range(na):
            w[x] = acc[3 * x + 2] + q[x] + eps * z[x]
        for k in range(ns):
            x = sp[k]
            lam = z[nf + k]
            sb = 0.0
            for j in range(d):
                v = na + d * k + j
                w[v] = D[0, j] * acc[3 * x] + D[1, j] * acc[3 * x + 1] + q[v] + eps * z[v] + lam
                sb += z[v]
            w[nf + k] = mu[x] * z[x] - sb
        res = 0.0
        for v in range(n):
            zv = z[v]
            wv = w[v]
            # Φ = w − |w| at z = 0, exactly as hypot(0, w) = |w| (a non-basic unknown)
            phi = wv - abs(wv) if zv == 0.0 else zv + wv - math.hypot(zv, wv)
            res = max(res, abs(phi))
        if res <= tol:
            solved = True
            break
        if flips == max_flips:
            break
        # pivoting_basis_solve's rule: the largest sign violation changes side
        worst = most_violated(zb, w, mask, flip_tol)
        if worst < 0:
            break
        mask[worst] = 1 - mask[worst]
    if not solved:
        return FAILED
    # Slide → stick (module docstring, step 3): a reversing slip is re-solved by the dense path.
    n_slide = 0
    for x in range(na):
        if sticking[x]:
            continue
        n_slide += 1
        i = idx[x]
        a0 = acc[3 * x] + b[3 * x]
        a1 = acc[3 * x + 1] + b[3 * x + 1]
        if vc_all[i, 0] * (vc_all[i, 0] + dt * a0) + vc_all[i, 1] * (vc_all[i, 1] + dt * a1) \
                < 0.0:
            return NOT_TRIED
    f_all[:, :] = 0.0
    rows_out[:, :] = 0.0
    for x in range(na):
        i = idx[x]
        fn = z[x]
        f_all[i, 2] = fn
        rows_out[i, 0] = fn
        rows_out[i, width] = 1.0 if mask[x] else 0.0
        if not sticking[x]:
            f_all[i, 0] = -mu[x] * fn * slip_u[x, 0]
            f_all[i, 1] = -mu[x] * fn * slip_u[x, 1]
    for k in range(ns):
        x = sp[k]
        i = idx[x]
        rows_out[i, 2 * width] = 1.0
        f0 = 0.0
        f1 = 0.0
        for j in range(d):
            v = na + d * k + j
            f0 += D[0, j] * z[v]
            f1 += D[1, j] * z[v]
            rows_out[i, 1 + j] = z[v]
            rows_out[i, width + 1 + j] = 1.0 if mask[v] else 0.0
        f_all[i, 0] = f0
        f_all[i, 1] = f1
        rows_out[i, 1 + d] = z[nf + k]
        rows_out[i, width + 1 + d] = 1.0 if mask[nf + k] else 0.0
    stats[:] = 0.0
    stats[0] = na
    stats[1] = na
    stats[2] = n_slide
    stats[3] = n
    stats[8] = 1.0
    stats[12] = res
    return SOLVED
