"""Virtual-linkage grasp matrix (Sentis et al. eqs. 12–17, App. C–D) and feasibility (eqs. 44–52).

Every expected value is analytic: statics of forces at known points, ranks stated by the paper,
the support polygon of two rectangular soles.
"""

import numpy as np
import pinocchio as pin
import pytest

from biped_contact_sim.control.feasibility import (
    feasibility_indices,
    plot_stability_cloud,
    robot_stability_cloud,
    stability_cloud,
    torsional_limit,
)
from biped_contact_sim.control.grasp import ContactAnchor, grasp_model, tension
from biped_contact_sim.robot import RobotModel

COM = np.array([0.02, 0.0, 0.7])
FEET = [ContactAnchor([0.02, 0.1, 0.0], name="L"), ContactAnchor([0.02, -0.1, 0.0], name="R")]


def _rot(r, p, y):
    return pin.rpy.rpyToMatrix(r, p, y)


def _models():
    """Grasp models of several stances: coplanar biped, a step, 3 and 4 contacts with hands."""
    hand = ContactAnchor([0.45, 0.3, 0.9], _rot(0.3, -1.2, 0.2), name="hand")
    point = ContactAnchor([0.5, -0.3, 1.0], _rot(-0.2, 0.5, 0.1), kind="3d", name="finger")
    step = [FEET[0], ContactAnchor([0.25, -0.1, 0.15], name="R_step")]
    return {
        "eq82": grasp_model(FEET, COM),
        "step": grasp_model(step, COM),
        "three": grasp_model([*FEET, hand], COM),
        "four": grasp_model([*FEET, hand, ContactAnchor([0.5, -0.3, 1.0], _rot(0.2, 1.0, -0.3))],
                            COM),
        "with_point": grasp_model([*FEET, hand, point], COM),
    }


@pytest.mark.parametrize("name", ["eq82", "step", "three", "four", "with_point"])
def test_grasp_matrix_properties(name):
    g = _models()[name]
    N = g.G.shape[1]
    assert g.G.shape == (N, N)
    assert g.W_int.shape[0] == N - 6  # 6(n_s − 1) for surface contacts (eq. 14)
    assert np.linalg.matrix_rank(g.W_int) == N - 6  # independent internal quantities
    np.testing.assert_allclose(g.G @ g.G_inv, np.eye(N), atol=1e-9)
    rng = np.random.default_rng(0)
    for _ in range(5):
        F_int = rng.normal(size=N - 6) * 20
        F_r = g.compose(np.zeros(6), F_int)
        np.testing.assert_allclose(g.W_com @ F_r, 0, atol=1e-9)  # no resultant on the CoM
        np.testing.assert_allclose(g.W_int @ F_r, F_int, atol=1e-9)


def _null_space(A, tol=1e-10):
    """Orthonormal basis of the null space of A by SVD (the brute-force reference)."""
    _, sv, Vt = np.linalg.svd(A)
    rank = int(np.sum(sv > tol * sv[0]))
    return Vt[rank:].T


@pytest.mark.parametrize("name", ["three", "four"])
def test_virtual_linkage_against_brute_force_null_space(name):
    """n_s surface contacts in general position (eqs. 10–17, App. D): 6(n_s − 1) internal
    forces — 3(n_s − 2) edge tensions, 2 n_s tangential CoP moments, n_s normal moments — whose
    rows are independent, G of rank 6 n_s, and W_int restricted to the wrenches with no
    resultant (null space of W_com, by SVD) invertible: internal forces are coordinates of
    exactly the zero-resultant wrenches."""
    g = _models()[name]
    N = g.G.shape[1]
    n_s = N // 6
    assert g.model == "general" and g.W_int.shape == (6 * (n_s - 1), N)
    kinds = [lab.split("_")[0] + ("_n" if lab.startswith("m_n") else "") for lab in g.labels]
    assert kinds.count("tension") == 3 * (n_s - 2)
    assert kinds.count("m") == 2 * n_s and kinds.count("m_n") == n_s
    assert np.linalg.matrix_rank(g.W_int) == 6 * (n_s - 1)
    assert np.linalg.matrix_rank(g.G) == 6 * n_s
    Z = _null_space(g.W_com)
    assert Z.shape == (N, N - 6)
    assert np.linalg.matrix_rank(g.W_int @ Z) == N - 6
    rng = np.random.default_rng(4)
    F_r = Z @ rng.normal(size=N - 6) * 30.0  # an internal wrench found without the model
    np.testing.assert_allclose(g.W_com @ F_r, 0.0, atol=1e-9)
    np.testing.assert_allclose(g.compose(np.zeros(6), g.internal(F_r)), F_r, atol=1e-9)


@pytest.mark.parametrize("feet", [FEET, [ContactAnchor([0.0, 0.0, 0.0], name="L"),
                                         ContactAnchor([0.3, 0.05, 0.0], name="R")]])
def test_general_model_of_two_feet_is_eq82(feet):
    """The general construction on two coplanar feet picks App. C eq. 82's rows: the tension,
    both tangential moments of contact 1, the moment of contact 2 about its sole axis most
    perpendicular to P_1P_2 (the other depends on F_com), both normal moments."""
    g82 = grasp_model(feet, COM)
    gen = grasp_model(feet, COM, biped="general")
    assert g82.model == "eq82" and gen.model == "general"
    np.testing.assert_allclose(gen.W_int, g82.W_int, atol=1e-12)
    assert gen.labels == g82.labels


def test_four_coplanar_contacts_add_a_normal_force():
    """Feet on the ground and both hands on a table, symmetric: the four anchors lie in one
    plane, whose normal forces form an internal mode no tension measures. The model keeps 5 of
    the 6 tensions and an out-of-plane squeeze instead (orthogonal to the resultant); G stays
    invertible (rank 24)."""
    hands = [ContactAnchor([0.45, 0.25, 0.8], name="lh"), ContactAnchor([0.45, -0.25, 0.8],
                                                                         name="rh")]
    anchors = [*FEET, *hands]
    P = np.array([a.position for a in anchors])
    assert np.linalg.matrix_rank(P[1:] - P[0]) == 2  # coplanar
    g = grasp_model(anchors, COM)
    assert g.W_int.shape == (18, 24) and np.linalg.matrix_rank(g.G) == 24
    assert sum(lab.startswith("tension") for lab in g.labels) == 5
    assert sum(lab.startswith("f_out_of_plane") for lab in g.labels) == 1
    k = next(i for i, lab in enumerate(g.labels) if lab.startswith("f_out_of_plane"))
    np.testing.assert_allclose(g.W_com @ g.W_int[k], 0.0, atol=1e-12)  # a pure internal mode
    Z = _null_space(g.W_com)
    assert np.linalg.matrix_rank(g.W_int @ Z) == 18


def test_tension_count_general_model():
    """3(n_s − 2) tensions for n_s ≥ 3 surface contacts (eq. 10)."""
    g = _models()
    assert sum(lab.startswith("tension") for lab in g["three"].labels) == 3
    assert sum(lab.startswith("tension") for lab in g["four"].labels) == 6


def test_resultant_is_statics_about_the_com():
    """W_com F_r = [Σf; Σ (P_i − c) × f_i + m_i] (eq. 12), here by hand."""
    g = grasp_model(FEET, COM)
    f1, m1, f2, m2 = [0, 3, 200], [1, -2, 0.5], [4, -1, 190], [0.3, 0.1, -0.2]
    F_r = np.concatenate([f1, m1, f2, m2])
    moment = (np.cross(FEET[0].position - COM, f1) + np.cross(FEET[1].position - COM, f2)
              + np.add(m1, m2))
    np.testing.assert_allclose(g.resultant(F_r), np.concatenate([np.add(f1, f2), moment]))


def test_eq82_biped_model():
    """App. C, eq. 82: [tension, 2 + 1 tangential CoP moments, 2 normal moments], rank 6."""
    g = grasp_model(FEET, COM)
    assert g.model == "eq82" and g.n_internal == 6 and g.rank == 12
    # Contact 2 keeps the moment about its sole x axis (perpendicular to the line along y).
    assert g.labels == ("tension_L_R", "m_cop_L_x", "m_cop_L_y", "m_cop_R_x", "m_n_L", "m_n_R")
    # Analytic wrenches: feet squeezed together by 10 N each, 196 N normal, CoP of L shifted by
    # d = (0.01, −0.02) from its anchor (moment d × f about the anchor), R at its anchor.
    f1, f2 = np.array([0, -10.0, 196]), np.array([0, 10.0, 196])
    d = np.array([0.01, -0.02, 0.0])
    F_r = np.concatenate([f1, np.cross(d, f1) + np.array([0, 0, 0.7]), f2, [0, 0, -0.4]])
    F_int = g.internal(F_r)
    assert F_int[0] == pytest.approx(20.0)  # (f_1 − f_2)·e_12, e_12 = −y
    assert tension(F_r, FEET[0].position, FEET[1].position) == pytest.approx(20.0)
    # CoP = anchor + (−m_y/f_z, m_x/f_z) recovers d.
    assert -F_int[2] / 196 == pytest.approx(0.01) and F_int[1] / 196 == pytest.approx(-0.02)
    assert F_int[3] == pytest.approx(0.0, abs=1e-12)
    assert F_int[4:] == pytest.approx([0.7 - 0.1, -0.4])  # (d × f_1)_z = −0.1


def test_noncoplanar_biped_models():
    """Eq. 83 (4 tangential + 2 normal moments) has W_int of rank 6, but its G is singular:
    a tension pair ±t e_12 has zero resultant and zero moments. The paper's alternative
    (tension + 4 tangential + 1 normal moment) is invertible."""
    step = [FEET[0], ContactAnchor([0.25, -0.1, 0.15], name="R")]
    g83 = grasp_model(step, COM, noncoplanar="eq83")
    assert g83.model == "eq83" and np.linalg.matrix_rank(g83.W_int) == 6
    assert g83.rank == 11
    e = step[1].position - step[0].position
    e /= np.linalg.norm(e)
    pair = np.concatenate([e, np.zeros(3), -e, np.zeros(3)])
    np.testing.assert_allclose(g83.G @ pair, 0, atol=1e-12)
    with pytest.raises(np.linalg.LinAlgError):
        _ = g83.G_inv
    gt = grasp_model(step, COM, noncoplanar="tension")
    assert gt.model == "noncoplanar_tension" and gt.rank == 12 and gt.labels[0].startswith("t")
    # The coplanar model stays full rank off the plane too (used by the controller).
    assert grasp_model(step, COM, biped="eq82").rank == 12


def test_bad_inputs():
    with pytest.raises(ValueError, match="noncoplanar"):
        grasp_model(FEET, COM, noncoplanar="nope")
    with pytest.raises(ValueError, match="share their CoP"):
        grasp_model([FEET[0], FEET[0], FEET[1]], COM)
    with pytest.raises(ValueError, match="kind"):
        ContactAnchor([0, 0, 0], kind="2d")


# ---------------------------------------------------------------- feasibility (eqs. 44–52)
LO, HI = np.array([[-0.09, -0.06]]), np.array([[0.13, 0.06]])


def test_feasibility_indices_analytic():
    mu = 0.5
    # f at 60° from the surface in x: α_x = 60° > atan(1/μ) = 63.4°? No: infeasible.
    f_z = 100.0
    fx = f_z / np.tan(np.radians(60))
    F = np.array([[[fx, 0, f_z, 0, 0, 0]]])
    ind = feasibility_indices(F, np.zeros((1, 1, 2)), LO, HI, mu, 0.01)
    assert ind.alpha[0, 0, 0] == pytest.approx(np.radians(60))
    assert ind.alpha[0, 0, 1] == pytest.approx(np.pi / 2)
    assert not ind.in_cone[0, 0] and not ind.feasible[0]
    # Inside the cone, rotational index 0.005 m within 0.01, CoP (0.05, −0.02) inside the sole.
    F = np.array([[[30, -20, f_z, -0.02 * f_z, -0.05 * f_z, 0.5]]])
    ind = feasibility_indices(F, np.zeros((1, 1, 2)), LO, HI, mu, 0.01)
    assert ind.beta[0, 0] == pytest.approx(0.005)
    np.testing.assert_allclose(ind.cop[0, 0], [0.05, -0.02])
    assert ind.feasible[0]
    # CoP outside the heel, then a normal moment beyond the rotational bound.
    F = np.array([[[0, 0, f_z, 0, 0.1 * f_z, 0]], [[0, 0, f_z, 0, 0, 2.0]]])
    ind = feasibility_indices(F, np.zeros((2, 1, 2)), LO, HI, mu, 0.01)
    assert not ind.cop_ok[0, 0] and ind.rot_ok[0, 0]
    assert ind.cop_ok[1, 0] and not ind.rot_ok[1, 0]
    # Pulling on the ground is never feasible; a circular cone is stricter than the pyramid.
    F = np.array([[[0, 0, -5, 0, 0, 0]], [[0.45 * f_z, 0.45 * f_z, f_z, 0, 0, 0]]])
    pyr = feasibility_indices(F, np.zeros((2, 1, 2)), LO, HI, mu, 0.01)
    circ = feasibility_indices(F, np.zeros((2, 1, 2)), LO, HI, mu, 0.01, cone="circular")
    assert not pyr.feasible[0] and pyr.feasible[1] and not circ.feasible[1]


def test_torsional_limit_of_a_disc_like_square():
    """μ × mean distance from the centre; for a square of side a: a·0.3826 (known constant)."""
    assert torsional_limit(1.0, 1.0, 1.0, n=400) == pytest.approx(0.38259785, rel=1e-4)


@pytest.fixture(scope="module")
def robot():
    return RobotModel.load("biped3d")


def test_stability_cloud_is_the_support_polygon(robot, tmp_path):
    """Zero internal forces, flat ground, no external force: statically the ZMP is the CoM
    projection (eqs. 80–81) and coplanar CoPs must enclose it (App. B), so the cloud (union over
    CoP anchors) is the support polygon: the hull of the soles x ∈ [−0.09, 0.13],
    |y| ≤ 0.16. Up to the anchor grid: everything at least one anchor step inside is
    feasible, nothing outside is."""
    q = robot.standing_configuration()
    x = np.linspace(-0.15, 0.19, 35)
    y = np.linspace(-0.22, 0.22, 45)
    grid = 9
    cloud = robot_stability_cloud(robot, q, x, y, anchor_grid=grid)
    X, Y = np.meshgrid(x, y)
    step_x, step_y = 0.22 / (grid - 1), 0.12 / (grid - 1)
    inside = (X >= -0.09 - 1e-9) & (X <= 0.13 + 1e-9) & (np.abs(Y) <= 0.16 + 1e-9)
    deep = ((X >= -0.09 + step_x) & (X <= 0.13 - step_x) & (np.abs(Y) <= 0.16 - step_y))
    assert not np.any(cloud.feasible & ~inside)
    assert np.all(cloud.feasible[deep])
    assert cloud.feasible.sum() >= 0.9 * inside.sum()
    out = tmp_path / "cloud.png"
    plot_stability_cloud(cloud, out)
    assert out.stat().st_size > 1000


def test_stability_cloud_with_fixed_anchors(robot):
    """Anchors fixed at the sole centres: in eq. 82 only the right foot's CoP x is free, so the
    CoM must lie in the triangle with vertex the left anchor (0.02, 0.1) and base the right
    sole's centre line x ∈ [−0.09, 0.13] at y = −0.1."""
    q = robot.standing_configuration()
    x = np.linspace(-0.12, 0.16, 29)
    y = np.linspace(-0.14, 0.14, 29)
    cloud = robot_stability_cloud(robot, q, x, y, anchors=np.array([[0.02, 0.0], [0.02, 0.0]]))
    X, Y = np.meshgrid(x, y)
    s = (0.1 - Y) / 0.2  # fraction of the way from the left anchor to the right line
    half = s * 0.11  # half width of the triangle at that y
    centre = 0.02 + s * 0.0
    triangle = (s >= -1e-9) & (s <= 1 + 1e-9) & (np.abs(X - centre) <= half + 1e-9)
    margin = (s >= 0.05) & (s <= 0.95) & (np.abs(X - centre) <= half - 0.011)
    outside = ~triangle & ~((s >= -0.05) & (s <= 1.05) & (np.abs(X - centre) <= half + 0.011))
    assert np.all(cloud.feasible[margin])
    assert not np.any(cloud.feasible[outside])


def test_stability_cloud_internal_tension_needs_friction(robot):
    """A large tension (2 × 0.8 × m g / 2 between the feet) exceeds μ = 0.8 at every CoM."""
    q = robot.standing_configuration()
    big = np.array([2.0 * 0.8 * robot.mass * 9.81, 0, 0, 0, 0, 0])
    cloud = robot_stability_cloud(robot, q, np.array([0.02]), np.array([0.0]),
                                  anchors=np.array([[0.02, 0.0], [0.02, 0.0]]), internal=big)
    assert not cloud.feasible.any()


# ---------------------------------------------------------------- multi-contact support
SOLE_LO, SOLE_HI = np.array([-0.09, -0.06]), np.array([0.13, 0.06])
PALM_LO, PALM_HI = np.array([-0.05, -0.04]), np.array([0.05, 0.04])
FOOT_POSES = [(np.eye(3), np.array([0.0, 0.1, 0.0])), (np.eye(3), np.array([0.0, -0.1, 0.0]))]
TABLE_HAND = (np.eye(3), np.array([0.45, 0.25, 0.8]))  # palm on a table: normal up
WALL_HAND = (_rot(0.0, -np.pi / 2, 0.0), np.array([0.6, -0.3, 1.0]))  # wall facing −x


def _centre_anchors(poses, lo, hi):
    return [ContactAnchor(o + R @ np.array([*(0.5 * (lo[k] + hi[k])), 0.0]), R)
            for k, (R, o) in enumerate(poses)]


def _squeeze(poses, lo, hi, mass=45.0):
    """F_int of a statically feasible wrench set: the last hand pushed 60 N into its surface
    (reaction 60 n), a table hand (third contact, if four) pressed with 80 N, the feet carrying
    the rest of the weight and the reaction of the push, no moments at the anchors."""
    g = grasp_model(_centre_anchors(poses, lo, hi), np.zeros(3))
    F = np.zeros(6 * len(poses))
    n = poses[-1][0][:, 2]
    F[-6:-3] = 60.0 * n
    rest = np.array([0.0, 0.0, mass * 9.81]) - F[-6:-3]
    if len(poses) == 4:
        F[12:15] = [0.0, 0.0, 80.0]
        rest -= F[12:15]
    F[0:3] = F[6:9] = rest / 2
    return g.W_int @ F


def _brute_force_feasible(poses, lo, hi, mass, com, mu, beta, F_int):
    """Static feasibility of one CoM with internal forces F_int, written out: any wrench set
    with the right resultant (least squares), corrected along the null space of W_com (SVD) to
    the internal forces, then eqs. 48–52 checked contact by contact in its surface frame."""
    g = grasp_model(_centre_anchors(poses, lo, hi), com)
    F_com = np.array([0.0, 0.0, mass * 9.81, 0.0, 0.0, 0.0])
    F_p = np.linalg.lstsq(g.W_com, F_com, rcond=None)[0]
    Z = _null_space(g.W_com)
    F = F_p - Z @ np.linalg.solve(g.W_int @ Z, g.W_int @ F_p - F_int)
    margin = np.inf
    for k, (R, _) in enumerate(poses):
        f, m = R.T @ F[6 * k:6 * k + 3], R.T @ F[6 * k + 3:6 * k + 6]
        if f[2] <= 0:
            return False, abs(f[2])
        cop = 0.5 * (lo[k] + hi[k]) + np.array([-m[1], m[0]]) / f[2]
        slack = [mu * f[2] - abs(f[0]), mu * f[2] - abs(f[1]), beta * f[2] - abs(m[2]),
                 *(cop - lo[k]), *(hi[k] - cop)]
        if min(slack) < 0:
            return False, abs(min(slack))
        margin = min(margin, min(slack))
    return True, margin


@pytest.mark.parametrize("hands", [[TABLE_HAND], [TABLE_HAND, WALL_HAND]])
def test_multicontact_cloud_against_brute_force(hands):
    """Three (feet, a hand on a table) and four (plus a hand on a wall: non-coplanar support)
    contacts, anchors at the surface centres, internal forces of a feasible stance with the
    last hand pushed 60 N into its surface: the 3-D cloud of eqs. 44–52 equals a
    point-by-point brute-force evaluation (away from its boundary)."""
    poses = FOOT_POSES + hands
    lo = np.array([SOLE_LO, SOLE_LO] + [PALM_LO] * len(hands))
    hi = np.array([SOLE_HI, SOLE_HI] + [PALM_HI] * len(hands))
    F_int = _squeeze(poses, lo, hi)
    x, y, z = np.linspace(-0.1, 0.5, 13), np.linspace(-0.3, 0.3, 9), np.array([0.6, 0.8])
    cloud = stability_cloud(poses, lo, hi, 45.0, x, y, z, mu=0.6, beta_max=0.02,
                            anchors="centres", internal=F_int)
    assert cloud.feasible.shape == (2, 9, 13)
    checked = 0
    for iz, zz in enumerate(z):
        for iy, yy in enumerate(y):
            for ix, xx in enumerate(x):
                ok, margin = _brute_force_feasible(poses, lo, hi, 45.0, np.array([xx, yy, zz]),
                                                   0.6, 0.02, F_int)
                if margin > 1e-4:
                    assert cloud.feasible[iz, iy, ix] == ok, (xx, yy, zz)
                    checked += 1
    assert checked > 0.9 * cloud.feasible.size
    assert 0 < cloud.feasible.sum() < cloud.feasible.size  # the bounds bite somewhere
    assert cloud.points().shape == (cloud.feasible.sum(), 3)


def test_table_extends_the_static_balance_region(tmp_path):
    """A hand on a table in front carries part of the weight: CoM positions ahead of the toes
    (x > 0.13 m), statically impossible on the feet alone (the support polygon, App. B), become
    feasible; the feet-only cloud has none of them."""
    x, y = np.linspace(-0.1, 0.4, 26), np.linspace(-0.2, 0.3, 26)
    feet = stability_cloud(FOOT_POSES, [SOLE_LO] * 2, [SOLE_HI] * 2, 45.0, x, y, 0.75,
                           anchor_grid=5)
    lean = stability_cloud([*FOOT_POSES, TABLE_HAND], [SOLE_LO, SOLE_LO, PALM_LO],
                           [SOLE_HI, SOLE_HI, PALM_HI], 45.0, x, y, 0.75, anchors="centres")
    X, _ = np.meshgrid(x, y)
    ahead = X > 0.13 + 1e-9
    assert not feet.feasible[ahead].any()
    assert lean.feasible[ahead].sum() >= 10
    out = tmp_path / "lean.png"
    plot_stability_cloud(lean, out)
    assert out.stat().st_size > 1000
    poses = [*FOOT_POSES, TABLE_HAND, WALL_HAND]
    lo, hi = [SOLE_LO, SOLE_LO] + [PALM_LO] * 2, [SOLE_HI, SOLE_HI] + [PALM_HI] * 2
    cloud3 = stability_cloud(poses, lo, hi, 45.0, x[::5], y[::5], np.array([0.7, 0.8]),
                             anchors="centres", internal=_squeeze(poses, np.array(lo),
                                                                  np.array(hi)))
    plot_stability_cloud(cloud3, tmp_path / "cloud3d.png")
    assert (tmp_path / "cloud3d.png").stat().st_size > 1000
