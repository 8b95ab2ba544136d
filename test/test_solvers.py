"""Minimum-norm solve against numpy's pseudo-inverse (brute force)."""

import numpy as np
import pytest

from biped_contact_sim.solvers import min_norm_solve


@pytest.mark.parametrize(("n", "k"), [(24, 12), (24, 24), (12, 6), (3, 1), (8, 5), (1, 1)])
def test_min_norm_solution_equals_pseudo_inverse(n, k):
    rng = np.random.default_rng(n * 100 + k)
    A = rng.standard_normal((n, k))
    G = A @ A.T
    r = rng.standard_normal(n)  # generally not in the range of G: least squares
    sol = min_norm_solve(G, r)
    expected = np.linalg.pinv(G, hermitian=True) @ r
    assert sol.rank == k
    assert np.allclose(sol.x, expected, rtol=1e-8, atol=1e-10)
    assert sol.residual == pytest.approx(np.linalg.norm(G @ expected - r), rel=1e-6, abs=1e-12)


def test_zero_matrix_and_shape_errors():
    assert np.all(min_norm_solve(np.zeros((3, 3)), np.ones(3)).x == 0)
    with pytest.raises(ValueError, match=r"\(n, n\)"):
        min_norm_solve(np.zeros((3, 2)), np.ones(3))
