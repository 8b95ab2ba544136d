"""Lemke's algorithm against brute-force enumeration of all 2ⁿ complementary bases.

Properties from the LCP theory Lemke relies on (Cottle, Pang & Stone): a P-matrix LCP has a
unique solution for every b and Lemke finds it; for a copositive-plus matrix (PSD, or the
Anitescu–Potra time-stepping matrix) Lemke finds a solution whenever the LCP is feasible and a
ray termination proves infeasibility.
"""

import itertools
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import linprog

from biped_contact_sim.contact import ContactState
from biped_contact_sim.contact.time_stepping import TimeSteppingContact
from biped_contact_sim.errors import InputError
from biped_contact_sim.solvers import STATUS_MAX_PIVOTS, STATUS_RAY, lemke
from biped_contact_sim.solvers.lemke import RESIDUAL_TOL, default_max_pivots

TOL = 1e-9


def brute_force(A, b, tol=TOL):
    """Every solution found by solving A_BB z_B = −b_B over all 2ⁿ index sets B."""
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
            w = A @ z + b
            if z.min() >= -tol and w.min() >= -tol:
                sols.append(z)
    return sols


def is_p_matrix(A):
    n = len(A)
    return all(np.linalg.det(A[np.ix_(B, B)]) > 0
               for k in range(1, n + 1) for B in itertools.combinations(range(n), k))


def assert_solves(res, A, b, tol=TOL):
    z = res.x
    w = A @ z + b
    assert res.converged
    assert z.min() >= -tol and w.min() >= -tol
    assert np.abs(z * w).max() <= tol * max(1.0, np.abs(b).max())
    assert np.allclose(res.w, w, atol=1e-12)
    assert res.residual <= tol


def random_pd(rng, n):
    B = rng.standard_normal((n, n))
    return B @ B.T + 0.1 * np.eye(n), rng.standard_normal(n)


def random_p_nonsymmetric(rng, n):
    """P-matrices that are not symmetric: PD plus skew, and triangular (indefinite sym part)."""
    if rng.random() < 0.5:
        B = rng.standard_normal((n, n))
        K = rng.standard_normal((n, n))
        A = B @ B.T + 0.5 * np.eye(n) + (K - K.T)
    else:
        A = np.tril(3.0 * rng.standard_normal((n, n)), -1) + np.diag(rng.uniform(0.5, 2.0, n))
    return A, rng.standard_normal(n)


def random_psd_solvable(rng, n):
    """A = BᵀB of rank < n and b = −A z* + w* with complementary z*, w* ≥ 0 (a solution)."""
    k = int(rng.integers(1, n)) if n > 1 else 1
    B = rng.standard_normal((k, n))
    A = B.T @ B if n > 1 else np.zeros((1, 1))
    active = rng.random(n) < 0.5
    zs = np.where(active, rng.random(n), 0.0)
    ws = np.where(active, 0.0, rng.random(n) * (rng.random(n) < 0.7))
    return A, -A @ zs + ws


@pytest.mark.parametrize("n", range(1, 9))
def test_positive_definite_unique_solution_equals_brute_force(n):
    rng = np.random.default_rng(100 + n)
    for _ in range(6):
        A, b = random_pd(rng, n)
        sols = brute_force(A, b)
        assert len(sols) == 1
        res = lemke(A, b)
        assert_solves(res, A, b)
        assert np.allclose(res.x, sols[0], atol=TOL)


@pytest.mark.parametrize("n", range(1, 9))
def test_nonsymmetric_p_matrix_unique_solution_equals_brute_force(n):
    rng = np.random.default_rng(200 + n)
    for _ in range(6):
        A, b = random_p_nonsymmetric(rng, n)
        assert is_p_matrix(A)
        sols = brute_force(A, b)
        assert len(sols) == 1
        res = lemke(A, b)
        assert_solves(res, A, b)
        assert np.allclose(res.x, sols[0], atol=TOL)


@pytest.mark.parametrize("n", range(1, 9))
def test_singular_psd_solvable_lcp_is_solved(n):
    rng = np.random.default_rng(300 + n)
    for _ in range(6):
        A, b = random_psd_solvable(rng, n)
        assert np.linalg.eigvalsh(A).min() > -1e-10
        assert brute_force(A, b), "constructed to have a solution"
        assert_solves(lemke(A, b), A, b)


def test_random_covering_vector_gives_the_same_unique_solution():
    rng = np.random.default_rng(7)
    A, b = random_pd(rng, 6)
    expected = brute_force(A, b)[0]
    for _ in range(5):
        res = lemke(A, b, covering=rng.uniform(0.1, 10.0, 6))
        assert np.allclose(res.x, expected, atol=TOL)


def infeasible(A, b):
    """True iff no z ≥ 0 has A z + b ≥ 0 (LP feasibility)."""
    n = len(b)
    lp = linprog(np.zeros(n), A_ub=-A, b_ub=b, bounds=[(0, None)] * n, method="highs")
    return lp.status == 2


@pytest.mark.parametrize(("A", "b"), [
    (np.array([[-1.0]]), np.array([-1.0])),
    (np.array([[0.0, 1.0], [-1.0, 0.0]]), np.array([0.0, -1.0])),  # copositive-plus (skew)
    (np.array([[1.0, -1.0], [-1.0, 1.0]]), np.array([-1.0, -1.0])),  # PSD: w1 + w2 = -2
])
def test_ray_termination_is_reported_on_infeasible_lcps(A, b):
    assert not brute_force(A, b)
    assert infeasible(A, b)
    res = lemke(A, b)
    assert res.status == STATUS_RAY
    assert not res.converged
    assert res.residual > 0.1
    assert res.x.shape == b.shape and res.w.shape == b.shape
    assert np.allclose(res.w, A @ res.x + b)


@pytest.mark.parametrize(("A", "b"), [
    # Murty's cyclic P-matrix with all ratios tied at the first pivot.
    (np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 2.0], [2.0, 0.0, 1.0]]), -np.ones(3)),
    # Zeros in b: degenerate basic variables from the start.
    (np.array([[2.0, 1.0, 0.0, 0.0], [1.0, 2.0, 1.0, 0.0], [0.0, 1.0, 2.0, 1.0],
               [0.0, 0.0, 1.0, 2.0]]), np.array([-1.0, 0.0, -1.0, 0.0])),
    # Identical rows: every ratio test ties.
    (np.ones((4, 4)) + np.eye(4), np.array([-1.0, -1.0, -1.0, -1.0])),
    (np.ones((4, 4)), np.array([-1.0, -1.0, 0.0, 0.0])),  # PSD rank 1 and ties
])
def test_degenerate_problems_terminate_without_cycling(A, b):
    res = lemke(A, b)
    assert res.iterations < 10 * (len(b) + 1)  # far below the cap: no cycling
    assert brute_force(A, b)
    assert_solves(res, A, b)


def test_degenerate_integer_problems_terminate():
    """Small integer data make ties common; every run must end with a valid solution."""
    rng = np.random.default_rng(11)
    for _ in range(60):
        n = int(rng.integers(2, 7))
        B = rng.integers(-2, 3, (n, n)).astype(float)
        A = B @ B.T + np.eye(n)
        b = rng.integers(-2, 2, n).astype(float)
        assert_solves(lemke(A, b), A, b)


def time_stepping_lcp(rng, m, d):
    """The Anitescu–Potra / Stewart–Trinkle LCP of docs/methods.md §2.4 on random data (M = I)."""
    nv = 3 * m + 6
    Jn = rng.standard_normal((m, nv))
    JD = rng.standard_normal((m * d, nv))
    v_free = rng.standard_normal(nv)
    mu = rng.uniform(0.2, 1.0, m)
    E = np.kron(np.eye(m), np.ones((d, 1)))
    N = m * (2 + d)
    J = np.vstack([Jn, JD])
    A = np.zeros((N, N))
    A[:m + m * d, :m + m * d] = J @ J.T
    A[m:m + m * d, m + m * d:] = E
    A[m + m * d:, :m] = np.diag(mu)
    A[m + m * d:, m:m + m * d] = -E.T
    b = np.concatenate([J @ v_free, np.zeros(m)])
    return A, b


def test_time_stepping_lcp_is_solved():
    """Anitescu & Potra (1997): Lemke always solves this LCP (m(2+d) = 48 for m=8, d=4)."""
    rng = np.random.default_rng(5)
    for m, d in [(1, 4), (2, 4), (4, 8), (8, 4)]:
        for _ in range(3):
            A, b = time_stepping_lcp(rng, m, d)
            res = lemke(A, b)
            assert_solves(res, A, b, tol=1e-8)


def test_trivial_cases():
    res = lemke(np.zeros((0, 0)), np.zeros(0))
    assert res.converged and res.iterations == 0 and res.x.shape == (0,)
    A = np.array([[1.0, 2.0], [3.0, 4.0]])
    res = lemke(A, np.array([1.0, 0.0]))
    assert res.converged and res.iterations == 0 and np.all(res.x == 0)


def test_pivot_cap_is_reported_not_hidden():
    rng = np.random.default_rng(3)
    A, b = random_pd(rng, 8)
    b = -np.abs(b) - 1.0  # every w negative at z = 0: needs at least 2 pivots
    res = lemke(A, b, max_pivots=1)
    assert res.status == STATUS_MAX_PIVOTS and not res.converged and res.iterations == 1
    assert res.residual > 0.0
    assert lemke(A, b).converged


@pytest.mark.parametrize(("args", "kwargs", "match"), [
    ((np.ones((2, 3)), np.ones(2)), {}, r"A must be a square"),
    ((np.eye(2), np.ones(3)), {}, r"b must have shape \(2,\)"),
    ((np.eye(2), np.array([1.0, np.nan])), {}, r"b must be finite"),
    ((np.array([[np.inf, 0], [0, 1]]), np.ones(2)), {}, r"A must be finite"),
    ((np.eye(2), -np.ones(2)), {"covering": np.array([1.0, 0.0])}, r"covering .* > 0"),
    ((np.eye(2), -np.ones(2)), {"covering": np.ones(3)}, r"covering must have shape"),
    ((np.eye(2), -np.ones(2)), {"pivot_tol": -1.0}, r"pivot_tol"),
    ((np.eye(2), -np.ones(2)), {"max_pivots": 2.5}, r"max_pivots"),
])
def test_bad_input_raises_input_error(args, kwargs, match):
    with pytest.raises(InputError, match=match):
        lemke(*args, **kwargs)


def test_near_singular_time_stepping_lcp_is_not_reported_converged():
    """A 48 × 48 time-stepping LCP of the biped's drop (coplanar sole points, cond ≈ 1e18):
    the pivoting terminates normally but its answer misses the problem by ~1e3; it must be
    reported as inaccurate, not converged (the contact model then falls back and counts it)."""
    data = np.load(Path(__file__).parent / "data" / "lemke_near_singular.npz")
    for reference in (False, True):
        result = lemke(data["A"], data["q"], reference=reference)
        w = data["A"] @ result.x + data["q"]
        actual = float(np.abs(np.minimum(result.x, w)).max())
        if actual <= RESIDUAL_TOL * np.abs(data["q"]).max():
            assert result.converged  # a correct answer may be reported as such
        else:
            assert not result.converged and result.status == "inaccurate"


def murty(n):
    """Murty (1978): lower triangular, 1 on the diagonal and 2 below, b = −1."""
    return np.eye(n) + 2.0 * np.tril(np.ones((n, n)), -1), -np.ones(n)


@pytest.mark.parametrize("n", [3, 5, 8])
def test_murty_example_needs_two_to_the_n_pivots_within_the_default_cap(n):
    """Murty's example makes Lemke (covering vector 1) visit 2ⁿ bases: the default cap must
    scale with n (the old 10(n + 1) stopped n = 8 at 90 of its 256 pivots)."""
    A, b = murty(n)
    assert is_p_matrix(A)
    assert default_max_pivots(n) >= 2 ** n
    for reference in (False, True):
        res = lemke(A, b, reference=reference)
        assert res.iterations == 2 ** n
        assert_solves(res, A, b)
        assert np.allclose(res.x, brute_force(A, b)[0], atol=TOL)


def test_residual_tolerance_decides_converged_relative_to_b():
    """``converged`` means max|min(z, w)| ≤ residual_tol·‖b‖∞, relative to b: the same
    pivoting on b and on 1e-6·b is reported the same way; with a tolerance below its rounding
    it is reported inaccurate (a named status, not a silent answer)."""
    data = np.load(Path(__file__).parent / "data" / "lemke_near_singular.npz")
    A, q = data["A"], data["q"]
    res = lemke(A, q)
    assert res.converged and 0.0 < res.residual <= RESIDUAL_TOL * np.abs(q).max()
    small = lemke(A, 1e-6 * q)
    assert small.converged and small.residual <= RESIDUAL_TOL * 1e-6 * np.abs(q).max()
    tight = lemke(A, q, residual_tol=0.5 * res.residual / np.abs(q).max())
    assert tight.status == "inaccurate" and not tight.converged
    with pytest.raises(InputError, match="residual_tol"):
        lemke(A, q, residual_tol=0.0)


# --- The compiled kernel against its numpy reference (same steps, same statuses) --------------

def assert_same(A, b, **kwargs):
    fast = lemke(A, b, **kwargs)
    ref = lemke(A, b, reference=True, **kwargs)
    assert fast.status == ref.status and fast.iterations == ref.iterations
    scale = max(1.0, np.abs(ref.x).max())
    assert np.abs(fast.x - ref.x).max() <= 1e-10 * scale
    assert np.abs(fast.w - ref.w).max() <= 1e-10 * max(1.0, np.abs(ref.w).max())
    return fast


def test_kernel_equals_reference_on_random_problems():
    rng = np.random.default_rng(21)
    statuses = set()
    for k in range(300):
        n = int(rng.integers(1, 25))
        kind = k % 4
        if kind == 0:
            A, b = random_pd(rng, n)
        elif kind == 1:
            A, b = random_p_nonsymmetric(rng, n)
        elif kind == 2:
            A, b = random_psd_solvable(rng, n)
        else:  # small integer data: ties and degenerate pivots
            B = rng.integers(-2, 3, (n, n)).astype(float)
            A, b = B @ B.T + np.eye(n), rng.integers(-2, 2, n).astype(float)
        statuses.add(assert_same(A, b).status)
    for A, b in [(np.array([[-1.0]]), np.array([-1.0])),
                 (np.array([[1.0, -1.0], [-1.0, 1.0]]), np.array([-1.0, -1.0]))]:
        statuses.add(assert_same(A, b).status)
    A, b = random_pd(rng, 8)
    statuses.add(assert_same(A, -np.abs(b) - 1.0, max_pivots=1).status)
    assert statuses == {"converged", "ray_termination", "max_pivots"}


def captured_time_stepping_lcps():
    """Time-stepping LCPs (docs/methods.md §2.4) of contact states captured from the simulator
    (test/data): a box sliding on four coplanar corners, a walking biped on eight sole points.
    With the old regularisation ε_r = 1e-9 Lemke failed on each of them; with the default
    1e-6 on the 'hard' ones."""
    data = np.load(Path(__file__).parent / "data" / "time_stepping_hard_states.npz")
    for name in sorted({k.split("_", 1)[0] for k in data}):
        state = ContactState(
            dt=float(data[f"{name}_dt"]), phi=data[f"{name}_phi"], vc=data[f"{name}_vc"],
            Jc=data[f"{name}_Jc"], gamma_c=data[f"{name}_gamma_c"], Minv=data[f"{name}_Minv"],
            tau_free=data[f"{name}_tau_free"], p_tangent=np.zeros((len(data[f"{name}_phi"]), 2)),
            mu=data[f"{name}_mu"])
        for eps in (1e-9, 1e-6):
            A, q = TimeSteppingContact(regularization=eps).build_lcp_reference(state)
            yield name, eps, A, q


def test_kernel_equals_reference_on_captured_problems():
    """LCPs captured from the simulator: near-singular tableaux, rays and inaccurate ends."""
    data = Path(__file__).parent / "data"
    case = np.load(data / "lemke_near_singular.npz")
    assert_same(case["A"], case["q"])
    statuses = set()
    for _, _, A, q in captured_time_stepping_lcps():
        statuses.add(assert_same(A, q).status)
    assert {"ray_termination", "inaccurate", "converged"} <= statuses


def test_captured_lcps_are_solved_to_the_tolerance_or_named():
    """Every captured LCP ends either ``converged`` with ``max|min(z, w)| ≤ 1e-9·‖q‖∞``
    (checked here from z, not from the solver's word) or with a named failure status."""
    for name, eps, A, q in captured_time_stepping_lcps():
        res = lemke(A, q)
        w = A @ res.x + q
        actual = float(np.abs(np.minimum(res.x, w)).max())
        if res.converged:
            assert actual <= RESIDUAL_TOL * np.abs(q).max(), (name, eps)
        else:
            assert res.status in ("ray_termination", "max_pivots", "inaccurate"), (name, eps)
        if eps == 1e-6 and name.startswith("box"):
            assert res.converged, name  # the default regularisation makes these solvable


def test_lu_solves_equal_numpy_and_refuse_singular_blocks():
    """``lu_solve_inplace`` on the leading k × k block and ``lu_solve`` against numpy's solve;
    an exactly singular block is refused (False), as is a non-finite result."""
    from biped_contact_sim.solvers.lemke_kernels import basis_block, lu_solve, lu_solve_inplace

    rng = np.random.default_rng(11)
    for k in (1, 3, 12, 40):
        M = rng.normal(size=(k + 2, k + 2))
        y = rng.normal(size=k + 2)
        expected = np.linalg.solve(M[:k, :k], y[:k])
        work, out = M.copy(), y.copy()
        assert lu_solve_inplace(work, out, k)
        np.testing.assert_allclose(out[:k], expected, rtol=1e-9, atol=1e-12)
        assert (out[k:] == y[k:]).all()  # only the block is touched
        x = np.zeros(k)
        assert lu_solve(M[:k, :k].copy(), y[:k].copy(), x)
        np.testing.assert_allclose(x, expected, rtol=1e-9, atol=1e-12)
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    x = np.full(2, 7.0)
    assert not lu_solve(singular, np.ones(2), x) and (x == 7.0).all()
    # the basic block of a basis: rows and columns of the set, right-hand side −b_B
    A = rng.normal(size=(5, 5))
    b = rng.normal(size=5)
    mask = np.array([True, False, True, True, False])
    idx, block, rhs = basis_block(A, b, mask)
    assert list(idx) == [0, 2, 3]
    np.testing.assert_array_equal(block, A[np.ix_(idx, idx)])
    np.testing.assert_array_equal(rhs, -b[idx])
