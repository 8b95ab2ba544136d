"""Gauss–Seidel with exact Coulomb cones, the cone projection and the Fischer–Burmeister solver.

Checked against the law itself (Chardonnet et al. §II-C: separate, stick or slide), analytic
single-contact answers, rigid-body statics, an independent numerical projection, and for the
LCP against brute-force enumeration and Lemke. The compiled kernels (numba) are checked against
their numpy references, the same steps in numpy: equal forces and statuses.
"""

import itertools
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from biped_contact_sim.contact import ContactState
from biped_contact_sim.contact.acceleration_lcp import AccelerationLCPContact
from biped_contact_sim.contact.gauss_seidel import GaussSeidelContact
from biped_contact_sim.contact.time_stepping import TimeSteppingContact
from biped_contact_sim.errors import InputError
from biped_contact_sim.solvers import (
    STATUS_CONVERGED,
    STATUS_MAX_ITER,
    coulomb_residual,
    fb,
    fischer_burmeister_lcp,
    gauss_seidel_coulomb,
    lemke,
    project_cone,
)

LAW_TOL = 1e-8


def classify(f, v, mu, tol=LAW_TOL):
    """Check each contact's Coulomb law directly; return its case."""
    cases = []
    for fi, vi, m in zip(f.reshape(-1, 3), v.reshape(-1, 3), mu, strict=True):
        ft, vt = np.hypot(fi[0], fi[1]), np.hypot(vi[0], vi[1])
        assert fi[2] >= -1e-10
        assert ft <= m * fi[2] + tol
        assert vi[2] >= -tol
        assert abs(fi[2] * vi[2]) <= tol
        if np.abs(fi).max() <= 1e-12:
            cases.append("separate")
        elif np.abs(vi).max() <= tol:
            cases.append("stick")
        else:  # sliding: on the cone, v_n = 0, f_t anti-parallel to v_t
            assert abs(vi[2]) <= tol
            assert abs(ft - m * fi[2]) <= tol
            assert np.allclose(fi[:2] * vt, -m * fi[2] * vi[:2], atol=tol)
            cases.append("slide")
    return cases


def random_contact_problem(rng, m):
    nv = 3 * m + int(rng.integers(0, 6))
    J = rng.standard_normal((3 * m, nv))
    G = J @ J.T
    c = rng.standard_normal(3 * m)
    c[2::3] -= 0.3  # more contacts pressed into the ground than pulled away
    return G, c, rng.uniform(0.2, 1.0, m)


def test_random_problems_satisfy_the_law_with_all_three_cases():
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(40):
        m = int(rng.integers(1, 9))
        G, c, mu = random_contact_problem(rng, m)
        res = gauss_seidel_coulomb(G, c, mu, max_sweeps=1000)
        assert res.converged and res.status == STATUS_CONVERGED
        assert res.residual <= LAW_TOL
        assert np.allclose(res.w, G @ res.x + c)
        seen.update(classify(res.x, res.w, mu))
    assert seen == {"separate", "stick", "slide"}


@pytest.mark.parametrize("omega", [0.7, 1.3])
def test_relaxation_reaches_the_same_law(omega):
    rng = np.random.default_rng(1)
    G, c, mu = random_contact_problem(rng, 5)
    res = gauss_seidel_coulomb(G, c, mu, omega=omega, max_sweeps=2000)
    assert res.converged and res.residual <= LAW_TOL
    classify(res.x, res.w, mu)


def test_warm_start_at_the_solution_stops_after_one_sweep():
    rng = np.random.default_rng(2)
    G, c, mu = random_contact_problem(rng, 4)
    res = gauss_seidel_coulomb(G, c, mu, max_sweeps=1000)
    again = gauss_seidel_coulomb(G, c, mu, f0=res.x)
    assert again.converged and again.iterations == 1


@pytest.mark.parametrize(("ct", "stick"), [((0.1, -0.05), True), ((1.5, 2.0), False),
                                           ((0.0, -3.0), False)])
def test_block_pushed_sideways_analytic(ct, stick):
    """W = m⁻¹ I: stick iff ‖c_t‖ ≤ μ|c_n|, else f_n = −m c_n, f_t = −μ f_n c_t/‖c_t‖."""
    mass, mu, cn = 2.0, 0.5, -0.4
    G = np.eye(3) / mass
    c = np.array([*ct, cn])
    res = gauss_seidel_coulomb(G, c, np.array([mu]))
    if stick:
        expected = -mass * c
    else:
        fn = -mass * cn
        expected = np.array([*(-mu * fn * np.array(ct) / np.hypot(*ct)), fn])
    assert np.hypot(*ct) <= mu * abs(cn) if stick else np.hypot(*ct) > mu * abs(cn)
    assert res.converged
    assert np.allclose(res.x, expected, atol=1e-12)
    assert res.residual <= 1e-12


def test_separating_contact_has_zero_force():
    res = gauss_seidel_coulomb(np.eye(3), np.array([1.0, 2.0, 0.3]), np.array([0.5]))
    assert np.all(res.x == 0.0) and res.converged


def test_singular_diagonal_block_planar_contact():
    """A point that cannot move along t2 (planar model): G_ii singular; sliding along t1."""
    G = np.diag([1.0, 0.0, 1.0])
    G[0, 2] = G[2, 0] = 0.3
    c = np.array([2.0, 0.0, -1.0])
    res = gauss_seidel_coulomb(G, c, np.array([0.4]))
    assert res.converged and res.residual <= LAW_TOL
    assert classify(res.x, res.w, [0.4]) == ["slide"]
    # Analytic: f = f_n(−μ, 0, 1) and v_n = 0 ⇒ f_n (1 − 0.3 μ) = 1.
    fn = 1.0 / (1.0 - 0.3 * 0.4)
    assert np.allclose(res.x, [-0.4 * fn, 0.0, fn], atol=1e-10)


def rigid_box(mass=3.0, size=(0.4, 0.2, 0.1), dt=1e-3):
    """Delassus matrix of the 4 bottom vertices of a free box: G = dt J M⁻¹ Jᵀ, rank 6 of 12."""
    lx, ly, lz = size
    inertia = mass / 12.0 * np.array([ly**2 + lz**2, lx**2 + lz**2, lx**2 + ly**2])
    Minv = np.diag(np.concatenate([np.full(3, 1.0 / mass), 1.0 / inertia]))
    verts = np.array([[sx * lx / 2, sy * ly / 2, -lz / 2] for sx in (-1, 1) for sy in (-1, 1)])
    J = np.vstack([np.hstack([np.eye(3), -skew(p)]) for p in verts])  # v_p = v + ω × p
    return dt * J @ Minv @ J.T, J, Minv, verts


def skew(p):
    return np.array([[0, -p[2], p[1]], [p[2], 0, -p[0]], [-p[1], p[0], 0]])


def test_resting_box_on_four_vertices_total_force_is_weight():
    mass, g, dt = 3.0, 9.81, 1e-3
    G, J, Minv, verts = rigid_box(mass, dt=dt)
    assert np.linalg.matrix_rank(G) == 6
    c = np.tile([0.0, 0.0, -g * dt], 4)  # v = 0, free acceleration −g e_z at every vertex
    res = gauss_seidel_coulomb(G, c, np.full(4, 0.8), max_sweeps=2000)
    assert res.converged and res.residual <= LAW_TOL
    F = res.x.reshape(4, 3)
    assert np.allclose(F.sum(axis=0), [0.0, 0.0, mass * g], atol=1e-6)
    assert np.allclose(np.cross(verts, F).sum(axis=0), 0.0, atol=1e-6)  # no net moment
    assert np.allclose(res.w, 0.0, atol=LAW_TOL)  # the box stays at rest


def test_box_sliding_on_four_vertices_loses_mu_g_dt():
    mass, g, dt, mu, v0 = 3.0, 9.81, 1e-3, 0.5, 0.2
    G, J, Minv, verts = rigid_box(mass, dt=dt)
    c = np.tile([v0, 0.0, -g * dt], 4)
    res = gauss_seidel_coulomb(G, c, np.full(4, mu), max_sweeps=2000)
    assert res.converged and res.residual <= LAW_TOL
    F = res.x.reshape(4, 3)
    assert F[:, 2].sum() == pytest.approx(mass * g, rel=1e-7)
    assert F[:, 0].sum() == pytest.approx(-mu * mass * g, rel=1e-7)
    assert np.allclose(res.w.reshape(4, 3)[:, 0], v0 - mu * g * dt, atol=1e-8)
    assert set(classify(res.x, res.w, np.full(4, mu))) == {"slide"}


def test_max_sweeps_is_reported():
    rng = np.random.default_rng(3)
    G, c, mu = random_contact_problem(rng, 6)
    res = gauss_seidel_coulomb(G, c, mu, max_sweeps=1)
    assert res.status == STATUS_MAX_ITER and not res.converged and res.iterations == 1
    assert res.residual == pytest.approx(coulomb_residual(res.x, res.w, mu))


def test_coulomb_residual_zero_on_exact_solutions_positive_on_violations():
    mu = np.array([0.5, 0.5, 0.5])
    f = np.array([0.0, 0.0, 0.0,  0.1, -0.2, 1.0,  -0.3, -0.4, 1.0])
    v = np.array([3.0, -1.0, 2.0,  0.0, 0.0, 0.0,  0.6, 0.8, 0.0])
    assert coulomb_residual(f, v, mu) == pytest.approx(0.0, abs=1e-15)
    def bump(a, k, x):
        a = a.copy()
        a[k] += x
        return a

    bad = [
        (f, bump(v, 2, -2.1)),                  # contact 0 penetrating
        (bump(f, 2, 0.2), v),                   # contact 0 pushes while separating
        (bump(f, 3, 0.5), v),                   # contact 1 outside the cone
        (f, bump(v, 3, 0.1)),                   # contact 1 slips with a force inside the cone
        (f * [1, 1, 1, 1, 1, 1, -1, -1, 1], v), # contact 2 friction along the slip
    ]
    for fb_, vb in bad:
        assert coulomb_residual(fb_, vb, mu) > 1e-3
    assert coulomb_residual(np.zeros(0), np.zeros(0), np.zeros(0)) == 0.0


def brute_projection(f, mu):
    """Nearest point of {‖t‖ ≤ μ n} by a 1-D minimisation over boundary rays (or f itself)."""
    if np.hypot(f[0], f[1]) <= mu * f[2]:
        return f
    best = np.zeros(3)

    def ray_point(phi):
        u = np.array([mu * np.cos(phi), mu * np.sin(phi), 1.0])
        return max(0.0, f @ u / (u @ u)) * u

    grid = np.linspace(-np.pi, np.pi, 721)
    phi0 = grid[np.argmin([np.linalg.norm(f - ray_point(p)) for p in grid])]
    opt = minimize_scalar(lambda p: np.linalg.norm(f - ray_point(p)),
                          bounds=(phi0 - 0.01, phi0 + 0.01), method="bounded",
                          options={"xatol": 1e-12})
    cand = ray_point(opt.x)
    return cand if np.linalg.norm(f - cand) < np.linalg.norm(f - best) else best


def test_project_cone_matches_brute_force_and_is_idempotent():
    rng = np.random.default_rng(4)
    F = rng.standard_normal((60, 3)) * 2.0
    mu = rng.uniform(0.0, 1.5, 60)
    mu[:5] = 0.0
    P = project_cone(F, mu)
    for f, m, p in zip(F, mu, P, strict=True):
        assert np.allclose(p, brute_projection(f, m), atol=1e-7)
    assert np.allclose(project_cone(P, mu), P, atol=1e-15)
    assert np.allclose(project_cone(F.ravel(), mu), P.ravel())  # stacked (3m,) form
    assert np.allclose(project_cone(F[0], mu[0]), P[0])
    assert np.all(np.hypot(P[:, 0], P[:, 1]) <= mu * P[:, 2] + 1e-12)


# ---------------------------------------------------------------- Fischer–Burmeister


def brute_force(A, b, tol=1e-9):
    n = len(b)
    sols = []
    for k in range(n + 1):
        for B in itertools.combinations(range(n), k):
            B = list(B)
            z = np.zeros(n)
            if B:
                M = A[np.ix_(B, B)]
                if abs(np.linalg.det(M)) < 1e-12:
                    continue
                z[B] = np.linalg.solve(M, -b[B])
            if z.min() >= -tol and (A @ z + b).min() >= -tol:
                sols.append(z)
    return sols


def lcp_problems(rng, kind, n):
    if kind == "pd":
        B = rng.standard_normal((n, n))
        return B @ B.T + 0.1 * np.eye(n), rng.standard_normal(n)
    if kind == "p":  # nonsymmetric P-matrix: triangular, positive diagonal
        A = np.tril(2.0 * rng.standard_normal((n, n)), -1) + np.diag(rng.uniform(0.5, 2.0, n))
        return A, rng.standard_normal(n)
    k = int(rng.integers(1, n)) if n > 1 else 1  # PSD, singular, solvable by construction
    B = rng.standard_normal((k, n))
    A = B.T @ B if n > 1 else np.zeros((1, 1))
    active = rng.random(n) < 0.5
    zs = np.where(active, rng.random(n), 0.0)
    ws = np.where(active, 0.0, rng.random(n) * (rng.random(n) < 0.7))
    return A, -A @ zs + ws


def test_fb_function():
    a = np.array([0.0, 2.0, 0.0, -1.0, 3.0, 1e200])
    b = np.array([0.0, 0.0, 5.0, 2.0, 4.0, 0.0])
    assert np.allclose(fb(a, b), [0.0, 0.0, 0.0, 1.0 - np.sqrt(5.0), 2.0, 0.0])


@pytest.mark.parametrize("kind", ["pd", "p", "psd"])
def test_fb_converges_and_agrees_with_lemke_and_brute_force(kind):
    rng = np.random.default_rng({"pd": 10, "p": 20, "psd": 30}[kind])
    for _ in range(40):
        n = int(rng.integers(1, 9))
        A, b = lcp_problems(rng, kind, n)
        res = fischer_burmeister_lcp(A, b)
        assert res.converged and res.status == STATUS_CONVERGED, (kind, n, res)
        z, w = res.x, A @ res.x + b
        assert res.residual <= 1e-10
        assert np.abs(fb(z, w)).max() <= 1e-10
        assert z.min() >= -1e-8 and w.min() >= -1e-8 and np.abs(z * w).max() <= 1e-8
        if kind != "psd":  # unique solution
            sols = brute_force(A, b)
            assert len(sols) == 1
            assert np.allclose(z, sols[0], atol=1e-8)
            assert np.allclose(z, lemke(A, b).x, atol=1e-8)


def test_fb_is_scale_invariant_on_impulse_sized_problems():
    """Entries ~1e-7 (dt·G of a heavy robot): Newton steps must still be accepted."""
    rng = np.random.default_rng(6)
    A, b = lcp_problems(rng, "pd", 6)
    res = fischer_burmeister_lcp(1e-7 * A, 1e-7 * b, tol=1e-18)
    assert res.converged and res.iterations < 30
    assert np.allclose(res.x, lemke(A, b).x, atol=1e-8)


def test_fb_failures_are_reported():
    A, b = np.array([[-1.0]]), np.array([-1.0])  # infeasible LCP
    res = fischer_burmeister_lcp(A, b)
    assert not res.converged and res.status in ("max_iterations", "line_search_failed")
    assert res.residual > 0.1
    rng = np.random.default_rng(8)
    A, b = lcp_problems(rng, "pd", 8)
    res = fischer_burmeister_lcp(A, b, max_iter=1)
    assert res.status == "max_iterations" and res.iterations == 1 and not res.converged
    assert res.residual == pytest.approx(np.abs(fb(res.x, A @ res.x + b)).max())


@pytest.mark.parametrize(("call", "match"), [
    (lambda: gauss_seidel_coulomb(np.eye(4), np.zeros(4), [0.5]), r"\(3m, 3m\)"),
    (lambda: gauss_seidel_coulomb(np.eye(3), np.zeros(6), [0.5]), r"c must have shape"),
    (lambda: gauss_seidel_coulomb(np.eye(3), np.zeros(3), [-0.5]), r"mu .* >= 0"),
    (lambda: gauss_seidel_coulomb(np.eye(3), np.zeros(3), [0.5, 0.5]), r"mu must have shape"),
    (lambda: gauss_seidel_coulomb(np.eye(3), [0, np.nan, 0], [0.5]), r"c must be finite"),
    (lambda: gauss_seidel_coulomb(np.eye(3), np.zeros(3), [0.5], omega=2.0), r"omega"),
    (lambda: gauss_seidel_coulomb(np.eye(3), np.zeros(3), [0.5], f0=np.zeros(2)), r"f0"),
    (lambda: coulomb_residual(np.zeros(3), np.zeros(6), [0.5]), r"v must have shape"),
    (lambda: project_cone(np.zeros(4), 0.5), r"f.shape"),
    (lambda: project_cone(np.zeros(3), -0.5), r"mu"),
    (lambda: fischer_burmeister_lcp(np.ones((2, 3)), np.ones(2)), r"A must be a square"),
    (lambda: fischer_burmeister_lcp(np.eye(2), np.ones(3)), r"b must have shape"),
    (lambda: fischer_burmeister_lcp(np.eye(2), [np.nan, 1.0]), r"b must be finite"),
    (lambda: fischer_burmeister_lcp(np.eye(2), np.ones(2), beta=1.5), r"beta"),
])
def test_bad_input_raises_input_error(call, match):
    with pytest.raises(InputError, match=match):
        call()


# ---------------------------------------------------------------- compiled kernels vs references

DATA = Path(__file__).parent / "data"


def captured_states():
    """Contact states captured from the simulator (test/data): a box sliding on four coplanar
    corners and a walking biped on eight sole points, where the LCPs are degenerate."""
    data = np.load(DATA / "time_stepping_hard_states.npz")
    names = sorted({k.split("_", 1)[0] for k in data})
    return [ContactState(dt=float(data[f"{n}_dt"]), phi=data[f"{n}_phi"], vc=data[f"{n}_vc"],
                         Jc=data[f"{n}_Jc"], gamma_c=data[f"{n}_gamma_c"],
                         Minv=data[f"{n}_Minv"], tau_free=data[f"{n}_tau_free"],
                         p_tangent=np.zeros((len(data[f"{n}_phi"]), 2)), mu=data[f"{n}_mu"])
            for n in names]


def assert_same_gs(G, c, mu, **kwargs):
    fast = gauss_seidel_coulomb(G, c, mu, **kwargs)
    ref = gauss_seidel_coulomb(G, c, mu, reference=True, **kwargs)
    assert fast.status == ref.status and fast.iterations == ref.iterations
    scale = max(1.0, np.abs(ref.x).max())
    assert np.abs(fast.x - ref.x).max() <= 1e-10 * scale
    assert fast.residual == pytest.approx(ref.residual, rel=1e-6, abs=1e-12)
    return fast


def test_gauss_seidel_kernel_equals_reference_on_random_problems():
    rng = np.random.default_rng(40)
    statuses, cases = set(), set()
    for k in range(120):
        m = int(rng.integers(1, 10))
        G, c, mu = random_contact_problem(rng, m)
        if k % 5 == 0:
            mu[0] = 0.0  # frictionless contact
        sweeps = 3 if k % 4 == 0 else 1000  # some runs stop at the cap
        res = assert_same_gs(G, c, mu, max_sweeps=sweeps, omega=1.3 if k % 7 == 0 else 1.0)
        statuses.add(res.status)
        if res.converged:
            cases.update(classify(res.x, res.w, mu))
    assert statuses == {STATUS_CONVERGED, STATUS_MAX_ITER}
    assert cases == {"separate", "stick", "slide"}


def test_gauss_seidel_kernel_equals_reference_on_captured_problems():
    """Velocity systems of captured states and of the rigid box: G of rank 6 per rigid body."""
    for state in captured_states():
        G, c = GaussSeidelContact().velocity_system(state, np.arange(state.n_points))
        for mu in (state.mu, 0.2 * state.mu):  # sticking and sliding
            assert_same_gs(G, c, mu, max_sweeps=300)
    G = rigid_box()[0]
    for mu in (0.8, 0.05):
        assert_same_gs(G, np.tile([0.1, 0.0, -0.01], 4), np.full(4, mu), max_sweeps=300)


def assert_same_fb(A, b, **kwargs):
    fast = fischer_burmeister_lcp(A, b, **kwargs)
    ref = fischer_burmeister_lcp(A, b, reference=True, **kwargs)
    assert fast.status == ref.status and fast.iterations == ref.iterations
    scale = max(1.0, np.abs(ref.x).max())
    assert np.abs(fast.x - ref.x).max() <= 1e-10 * scale
    return fast


def test_fischer_burmeister_kernel_equals_reference_on_random_problems():
    rng = np.random.default_rng(41)
    statuses = set()
    for k in range(150):
        n = int(rng.integers(1, 12))
        A, b = lcp_problems(rng, ("pd", "p", "psd")[k % 3], n)
        statuses.add(assert_same_fb(A, b, max_iter=3 if k % 10 == 0 else 100).status)
    statuses.add(assert_same_fb(np.array([[-1.0]]), np.array([-1.0])).status)
    assert {"converged", "max_iterations"} <= statuses
    assert statuses - {"converged", "max_iterations"} <= {"line_search_failed"}


def test_fischer_burmeister_kernel_equals_reference_on_captured_problems():
    """Acceleration LCPs (acceleration_lcp, docs/methods.md §2.5) of captured states, sticking
    and sliding, and the time-stepping LCPs that made Lemke fail (degenerate, PSD)."""
    for state in captured_states():
        idx = np.arange(state.n_points)
        model = AccelerationLCPContact()
        for sticking in (np.ones(len(idx), bool), np.arange(len(idx)) % 2 == 0):
            vc = state.vc.copy()
            vc[~sticking, 0] += 0.05  # sliding points need a slip direction
            A, q, _, _ = model.build_lcp_reference(state, idx, vc, sticking)
            assert_same_fb(A, q, tol=1e-10 * max(1.0, np.abs(q).max()))
        A, q = TimeSteppingContact(regularization=1e-9).build_lcp_reference(state, idx)
        assert_same_fb(A, q, tol=1e-12 * np.abs(q).max(), max_iter=200)
