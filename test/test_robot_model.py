"""Robot model layer against pinocchio's own algorithms and finite differences."""

import numpy as np
import pinocchio as pin
import pytest

from biped_contact_sim.errors import ConfigError
from biped_contact_sim.robot import RobotModel, load_robot_config


@pytest.fixture(scope="module")
def biped():
    return RobotModel.load("biped3d")


def random_state(robot, seed):
    rng = np.random.default_rng(seed)
    q = pin.randomConfiguration(robot.model, -np.ones(robot.nq), np.ones(robot.nq))
    q[:3] = [0.1, -0.2, 0.8]
    return q, rng.standard_normal(robot.nv), rng.standard_normal(robot.n_joints) * 10


def test_biped3d_dimensions(biped):
    assert (biped.nv, biped.n_joints, biped.n_points) == (20, 14, 8)
    assert 30.0 <= biped.mass <= 60.0
    assert [b.name for b in biped.contact_bodies] == ["left_foot", "right_foot"]


def test_planar_biped_dimensions():
    robot = RobotModel.load("planar_biped")
    assert (robot.nv, robot.n_joints, robot.n_points) == (9, 6, 4)
    assert robot.n_base_v == 3


@pytest.mark.parametrize("seed", range(3))
def test_mass_matrix_spd_and_dynamics_equal_aba(biped, seed):
    q, v, tau = random_state(biped, seed)
    terms = biped.terms(biped.create_data(), q, v)
    assert np.allclose(terms.M, terms.M.T, atol=0)
    assert np.linalg.eigvalsh(terms.M).min() > 0
    a = terms.Minv @ (biped.S.T @ tau - terms.h)
    a_aba = pin.aba(biped.model, biped.create_data(), q, v, biped.S.T @ tau)
    assert np.allclose(a, a_aba, atol=1e-9)


@pytest.mark.parametrize("seed", range(3))
def test_point_jacobians_and_drifts_match_finite_differences(biped, seed):
    q, v, _ = random_state(biped, seed)
    terms = biped.terms(biped.create_data(), q, v)
    eps = 1e-6
    plus, minus = (pin.integrate(biped.model, q, s * eps * v) for s in (1, -1))
    dp = (biped.point_positions(biped.create_data(), plus)
          - biped.point_positions(biped.create_data(), minus)).ravel() / (2 * eps)
    assert np.allclose(terms.J @ v, dp, atol=1e-7)
    # γ = J̇ v: derivative of J(q(t)) v along the motion, by central differences.
    Jv = [biped.terms(biped.create_data(), qq, v).J @ v for qq in (plus, minus)]
    assert np.allclose(terms.gamma, (Jv[0] - Jv[1]) / (2 * eps), atol=1e-6)


@pytest.mark.parametrize("name", ["biped3d", "planar_biped"])
def test_point_terms_equal_pinocchio_point_frames(name):
    """The per-body rigid transport equals pinocchio's own Jacobian and classical acceleration
    of every point frame."""
    robot = RobotModel.load(name)
    rng = np.random.default_rng(7)
    q = robot.standing_configuration()
    q[robot.q_idx] += rng.uniform(-0.5, 0.5, robot.n_joints)
    v = rng.standard_normal(robot.nv)
    terms = robot.terms(robot.create_data(), q, v)
    data = robot.create_data()
    lwa = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    pin.computeJointJacobians(robot.model, data, q)
    pin.forwardKinematics(robot.model, data, q, v, np.zeros(robot.nv))
    pin.updateFramePlacements(robot.model, data)
    for i, f in enumerate(robot.point_frame_ids):
        assert np.allclose(terms.p[i], data.oMf[f].translation, atol=1e-12)
        assert np.allclose(terms.J[3 * i:3 * i + 3],
                           pin.getFrameJacobian(robot.model, data, f, lwa)[:3], atol=1e-12)
        acc = pin.getFrameClassicalAcceleration(robot.model, data, f, lwa).linear
        assert np.allclose(terms.gamma[3 * i:3 * i + 3], acc, atol=1e-10)


def test_unknown_contact_frame_names_frame_and_lists_frames(tmp_path):
    config = load_robot_config("brick")
    bad = type(config)(config.name, config.urdf_path, config.base,
                       (type(config.contact_bodies[0])("brick", "no_such_frame",
                                                       np.zeros((1, 3))),))
    with pytest.raises(ConfigError, match="no_such_frame") as err:
        RobotModel(bad)
    assert "brick" in str(err.value)  # the existing frames are listed


def test_unknown_robot_lists_robots():
    with pytest.raises(ConfigError, match="biped3d"):
        RobotModel.load("nonexistent_robot")


@pytest.mark.parametrize("name", ["biped3d", "planar_biped", "ball", "brick"])
def test_base_link_is_the_urdf_root_link(name):
    assert RobotModel.load(name).base_link == "base_link"  # massless, for KDL (test_urdf)
