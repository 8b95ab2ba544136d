"""penalty_fl's two documented extensions against analytic answers.

* ``unilateral = "active_set"``: the forces solve the complementarity problem
  0 ≤ f_n ⊥ G f − (p̈ᵈ − b) ≥ 0 on the normal rows, where the paper's one-shot clip (eq. 19) of
  the joint solve does not.
* ``separation_damping``: with eq. 17's −k_v min(0, φ̇), a point rising inside the active set
  follows φ̈ = −k_p(φ + ε), i.e. φ(t) = −ε + (u/ω) sin ωt, and leaves contact iff u > ω ε
  (ω = √k_p); damping φ̇ both ways keeps it in contact.
"""

import numpy as np
import pytest

from biped_contact_sim.contact import ContactState, make_contact_model
from biped_contact_sim.session.builder import build
from biped_contact_sim.session.config import SimConfig


def _two_coupled_points() -> ContactState:
    """Two active points whose normal rows couple through M⁻¹ = I:
    G_nn = J Jᵀ = [[1.25, 1], [1, 1.25]], and p̈ᵈ − b = (1, −2) on the normal rows."""
    Jc = np.zeros((6, 2))
    Jc[2] = (1.0, 0.5)
    Jc[5] = (0.5, 1.0)
    gamma = np.zeros(6)
    gamma[[2, 5]] = (-1.0, 2.0)  # b = J M⁻¹ τ_free + γ with τ_free = 0; p̈ᵈ = 0 at φ = −ε
    eps = 1e-6
    return ContactState(dt=1e-3, phi=np.full(2, -eps), vc=np.zeros((2, 3)), Jc=Jc,
                        gamma_c=gamma, Minv=np.eye(2), tau_free=np.zeros(2),
                        p_tangent=np.zeros((2, 2)), mu=np.full(2, 0.8))


def test_active_set_solves_the_normal_lcp_where_the_clip_does_not():
    state = _two_coupled_points()
    G = np.array([[1.25, 1.0], [1.0, 1.25]])
    r = np.array([1.0, -2.0])
    # The LCP by enumeration of its four complementary bases.
    solutions = []
    for basis in ((), (0,), (1,), (0, 1)):
        f = np.zeros(2)
        if basis:
            idx = list(basis)
            f[idx] = np.linalg.solve(G[np.ix_(idx, idx)], r[idx])
        w = G @ f - r
        if (f >= -1e-12).all() and (w >= -1e-12).all():
            solutions.append(f)
    assert len(solutions) == 1  # G is positive definite: unique
    kw = {"kp": 500.0, "kv": 250.0, "epsilon": 1e-6}
    f_as = make_contact_model("penalty_fl", unilateral="active_set", **kw).compute(state).f
    assert f_as[:, 2] == pytest.approx(solutions[0], abs=1e-9)
    # The paper's clip keeps the first point's force from the joint solve with the pull.
    f_clip = make_contact_model("penalty_fl", unilateral="clip", **kw).compute(state).f
    joint = np.linalg.solve(G, r)
    assert f_clip[:, 2] == pytest.approx(np.maximum(joint, 0.0), abs=1e-9)
    assert abs(f_clip[0, 2] - f_as[0, 2]) > 1.0


@pytest.mark.parametrize(("separation_damping", "leaves"), [(False, True), (True, False)])
def test_rising_point_leaves_contact_only_without_separation_damping(separation_damping,
                                                                     leaves):
    kp, kv, eps = 500.0, 250.0, 1e-6
    u = 5.0 * np.sqrt(kp) * eps  # 5 × the escape speed ω ε of the undamped rising half
    built = build(SimConfig.from_sets("ball", "penalty_fl", sets={
        "contact.kp": kp, "contact.kv": kv, "contact.epsilon": eps,
        "contact.separation_damping": separation_damping}))
    sim = built.sim
    q = sim.q.copy()
    q[2] -= sim.contact_state(sim.q, sim.v, np.zeros(0))[1].phi[0] + eps  # put φ at −ε
    sim.reset(q, np.array([0.0, 0.0, u]))
    assert sim.contact_state(sim.q, sim.v, np.zeros(0))[1].phi[0] == pytest.approx(-eps)
    phis = [sim.step(np.zeros(0)).phi[0] for _ in range(round(0.2 / sim.dt))]
    assert (max(phis) > 0.0) == leaves


def _standing_delassus(contacts: str) -> np.ndarray:
    """G over the standing biped's active sole points (rank 12 of 24: two rigid soles)."""
    built = build(SimConfig.from_sets("stand", "penalty_fl", sets={"contacts": contacts}))
    robot, sim = built.robot, built.sim
    _, state = sim.contact_state(sim.q, sim.v, np.zeros(robot.n_joints))
    G, _ = state.delassus(np.arange(state.n_points))
    return G


def test_left_looking_pivoted_cholesky_equals_lapack_dpstrf():
    """``pivoted_cholesky`` (left-looking) gives LAPACK dpstrf's rank, pivots and factor on
    random PSD matrices of every rank; on the standing biped's Delassus operator (coplanar
    soles: near-tied pivots, which round-off orders differently) its rank and a factor of G."""
    from scipy.linalg import lapack

    from biped_contact_sim.contact.penalty_fl_kernels import pivoted_cholesky

    rng = np.random.default_rng(3)
    for k in range(202):
        if k < 2:
            G = _standing_delassus(("geometry", "points")[k])
        else:
            n = int(rng.integers(1, 30))
            B = rng.standard_normal((n, int(rng.integers(0, n + 1))))
            G = B @ B.T
        tol = 1e-10 * max(G.diagonal().max(), 1e-300)
        U, perm, rank = pivoted_cholesky(G, tol)
        U_ref, piv, rank_ref, _ = lapack.dpstrf(G, lower=0, tol=tol)
        assert rank == rank_ref
        assert not U[rank:].any()
        Uk = U[:rank]
        scale = max(1.0, np.abs(G).max())
        assert np.allclose(Uk.T @ Uk, G[np.ix_(perm, perm)], rtol=0, atol=1e-12 * scale)
        if k >= 2:
            assert np.array_equal(perm, piv - 1)
            ref = np.triu(U_ref)[:rank]
            assert np.allclose(Uk, ref, rtol=0, atol=1e-10 * max(1.0, np.abs(ref).max(initial=0)))


def test_min_norm_kernel_equals_the_lapack_reference_on_the_standing_biped():
    """The compiled eq. 18 solve against ``solvers.min_norm_solve`` on the captured G."""
    from biped_contact_sim.contact.penalty_fl_kernels import min_norm_kernel
    from biped_contact_sim.solvers import min_norm_solve

    rng = np.random.default_rng(4)
    for contacts in ("geometry", "points"):
        G = _standing_delassus(contacts)
        for r in (rng.standard_normal(len(G)), G @ rng.standard_normal(len(G))):
            ref = min_norm_solve(G, r, 1e-10)
            x, rank, residual = min_norm_kernel(G, r, 1e-10)
            assert rank == ref.rank == 12
            assert np.allclose(x, ref.x, rtol=0, atol=1e-10 * max(1.0, np.abs(ref.x).max()))
            assert residual == pytest.approx(ref.residual, rel=1e-6, abs=1e-10)
