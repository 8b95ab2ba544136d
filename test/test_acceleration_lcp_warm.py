"""acceleration_lcp's warm basis: the pivoting re-solve against brute force, and the re-solve on
the factor (contact/acceleration_lcp_warm_kernels.py) against the dense kernel and the numpy LCP.
"""

import itertools

import numpy as np
import pytest
from test_constraint_models import box_on_plane

from biped_contact_sim.contact import acceleration_lcp_kernels as acc_kernel
from biped_contact_sim.contact.acceleration_lcp_warm_kernels import SOLVED, warm_basis_step
from biped_contact_sim.robot.model_kernels import unpack
from biped_contact_sim.session.builder import build
from biped_contact_sim.session.config import SimConfig
from biped_contact_sim.solvers.lemke_kernels import basis_solve, pivoting_basis_solve


def brute_force(A, b):
    """The solution of a P-matrix LCP by enumeration of the 2ⁿ complementary bases."""
    n = len(b)
    for k in range(n + 1):
        for B in itertools.combinations(range(n), k):
            B = list(B)
            z = np.zeros(n)
            if B:
                z[B] = np.linalg.solve(A[np.ix_(B, B)], -b[B])
            if z.min() >= -1e-12 and (A @ z + b).min() >= -1e-12:
                return z, np.array([i in B for i in range(n)])
    raise AssertionError("a P-matrix LCP has a solution")


def fb_norm(A, b, z):
    w = A @ z + b
    return np.abs(z + w - np.hypot(z, w)).max()


def random_p(rng, n):
    B = rng.standard_normal((n, n))
    K = rng.standard_normal((n, n))
    return B @ B.T + 0.5 * np.eye(n) + (K - K.T) * (rng.random() < 0.5), rng.standard_normal(n)


def test_pivoting_basis_solve_equals_brute_force():
    """From the solution's basis: no pivot, basis_solve's point. With one or two variables on
    the wrong side: when it reports success, the point is the unique solution (and meets the
    test); on these well-separated P-matrix problems the largest violation finds it nearly
    always."""
    rng = np.random.default_rng(7)
    found = tried = 0
    for n in range(2, 8):
        for _ in range(30):
            A, b = random_p(rng, n)
            z_star, basis = brute_force(A, b)
            tol = 1e-10 * max(1.0, np.abs(b).max())
            z, w = np.empty(n), np.empty(n)
            mask = basis.copy()
            ok, flips, res = pivoting_basis_solve(A, b, mask, z, w, tol, 0)
            z2, w2 = np.empty(n), np.empty(n)
            basis_solve(A, b, basis.copy(), z2, w2)
            assert ok and flips == 0 and np.array_equal(mask, basis)
            assert np.array_equal(z, z2) and np.array_equal(w, w2)
            assert res == pytest.approx(fb_norm(A, b, z), abs=1e-14) and res <= tol
            for wrong in (1, 2):
                mask = basis.copy()
                mask[rng.choice(n, size=min(wrong, n), replace=False)] ^= True
                ok, flips, res = pivoting_basis_solve(A, b, mask, z, w, tol, 2 * n)
                tried += 1
                if ok:
                    found += 1
                    assert res <= tol and fb_norm(A, b, z) <= tol
                    assert np.allclose(z, z_star, atol=1e-9 * max(1.0, np.abs(z_star).max()))
                    assert np.allclose(w, A @ z + b, atol=1e-12)
                    assert flips <= 2 * n
                else:
                    assert res > tol
    assert found >= 0.9 * tried


def test_pivoting_basis_solve_reports_a_singular_basis():
    A = np.array([[1.0, 1.0], [1.0, 1.0]])
    b = np.array([-1.0, -1.0])
    ok, flips, _ = pivoting_basis_solve(A, b, np.ones(2, dtype=bool), np.empty(2), np.empty(2),
                                        1e-10, 3)
    assert not ok and flips == 0


def warm_and_dense(model, state):
    """The step by warm_basis_step and by the dense kernel, from the model's stored rows."""
    s = model.settings
    W, m, nv, nj = state.packed
    Jc, gc, X, _, _, _, af, _ = unpack(W, m, nv, nj)
    phi, vc = np.ascontiguousarray(state.phi), np.ascontiguousarray(state.vc)
    keys = np.asarray(state.ids, dtype=np.int64)
    n_stats = len(acc_kernel.ACC_STATS)
    out = [(np.empty((m, 3)), np.empty((m, model._warm.width)), np.empty(n_stats))
           for _ in range(2)]
    code = warm_basis_step(X, Jc, af, gc, s.drift_term, vc, phi, state.mu, state.dt, model._D,
                           model._params, model._warm.keys, model._warm.rows, keys, *out[0],
                           acc_kernel.MAX_FLIPS)
    G, b = state.delassus(model._all, s.drift_term)
    acc_kernel.acceleration_lcp_kernel(G, b, vc, phi, state.mu, model._e, state.dt, model._D,
                                       model._params, model._warm.keys, model._warm.rows, keys,
                                       out[1][0], np.empty(m, dtype=bool), out[1][1], out[1][2],
                                       True)
    return code, out[0], out[1]


def assert_meets_fb_test(model, state, rows):
    """z of the warm path's rows meets Fischer–Burmeister's test ``‖Φ‖∞ ≤ tol`` on the numpy LCP
    (``AccelerationLCPContact.build_lcp_reference``) of its active points (the candidates: no
    impacts)."""
    s = model.settings
    d = s.directions
    idx = np.flatnonzero(state.phi + state.dt * np.minimum(state.vc[:, 2], 0.0) <= s.margin)
    sticking = rows[idx, 2 * (2 + d)] != 0.0
    A, q, _, _ = model.build_lcp_reference(state, idx, state.vc[idx], sticking)
    st = idx[sticking]
    z = np.concatenate([rows[idx, 0], rows[st, 1:1 + d].ravel(), rows[st, 1 + d]])
    assert fb_norm(A, q, z) <= 2 * s.tolerance * max(1.0, np.abs(q).max())


@pytest.mark.parametrize("contacts", ["geometry", "points"])
def test_warm_basis_on_the_factor_equals_the_dense_kernel(contacts):
    """On the steps of stand that the warm path solves (nearly all), its z meets
    Fischer–Burmeister's test on the numpy LCP (``AccelerationLCPContact.build_lcp_reference``)
    and its forces agree with the dense kernel's: to the conditioning of the ε-regularised
    friction block (cond ~ 1/ε: ~5e-10 relative seen) with equal statistics when both end in the
    same basis (the same pivots and test; A_BB formed as Y_rᵀY_c instead of from G), and to 1e-6
    when rounding tips a pivot decision on a facet force at ~tol into another basis that also
    meets the test (~2e-8 seen). Which of the two happens depends on the CPU's rounding, so the
    test asserts the properties of each, not how often each occurs."""
    built = build(SimConfig.from_sets("stand", "acceleration_lcp", controller="joint_pd",
                                      sets={"contacts": contacts}))
    sim, control = built.sim, built.control
    model = sim.contact
    width = 2 + model.settings.directions
    solved = 0
    for _ in range(150):
        tau = control(sim.t, sim.q, sim.v)
        _, state = sim.contact_state(sim.q, sim.v, tau)
        code, (f, rows, stats), (f2, rows2, stats2) = warm_and_dense(model, state)
        if code == SOLVED:
            solved += 1
            scale = np.abs(f2).max()
            if np.array_equal(rows[:, width:], rows2[:, width:]):  # basis, sticking
                assert np.allclose(f, f2, rtol=0, atol=1e-8 * scale)
                assert np.allclose(rows[:, :width], rows2[:, :width], rtol=0,
                                   atol=1e-8 * scale)
                assert np.array_equal(stats[:12], stats2[:12])
            else:
                assert np.allclose(f, f2, rtol=0, atol=1e-6 * scale)
            assert_meets_fb_test(model, state, rows)
        sim.step(tau)
    assert solved >= 120  # the warm path carries the standing robot (148 of 150 seen)


@pytest.mark.parametrize(("slope", "omega"), [(0.0, 4.0), (20.0, 0.0)])
def test_warm_basis_with_sliding_points_equals_the_dense_kernel(slope, omega):
    """A box spinning on flat ground (each corner slips its own way, then sticks) and one
    sliding down a 20° slope: the sliding normal columns ``n − μ u`` of the warm path, and its
    hand-over to the dense path (a new contact set, changed flags, a slip reversal)."""
    sim = box_on_plane("acceleration_lcp", mu=0.3, slope_deg=slope, omega=(0.0, 0.0, omega))
    sim.reset(sim.q, np.array([0.3, 0.0, 0.0, 0.0, 0.0, omega]))
    model = sim.contact
    solved = sliding = 0
    for _ in range(200):
        _, state = sim.contact_state(sim.q, sim.v, np.zeros(0))
        code, (f, rows, stats), (f2, rows2, stats2) = warm_and_dense(model, state)
        if code == SOLVED:
            solved += 1
            sliding += stats[2] > 0
            scale = np.abs(f2).max()
            if np.array_equal(rows[:, 6:], rows2[:, 6:]):  # the stand test's tolerances
                assert np.allclose(f, f2, rtol=0, atol=1e-8 * scale)
                assert np.array_equal(stats[:12], stats2[:12])
            else:
                assert np.allclose(f, f2, rtol=0, atol=1e-6 * scale)
            assert_meets_fb_test(model, state, rows)
        sim.step(np.zeros(0))
    assert solved >= 180 and sliding >= 100  # 196 and 100+ seen
