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
