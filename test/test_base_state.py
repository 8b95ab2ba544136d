"""The root link's pose and twist from a state and back: the odometry conventions
(biped_contact_sim/robot/base_state.py)."""

import numpy as np
import pinocchio as pin
import pytest

from biped_contact_sim.robot import RobotModel
from biped_contact_sim.robot.base_state import base_pose_twist, base_state_from_odometry


@pytest.fixture(scope="module")
def biped():
    return RobotModel.load("biped3d")


# ------------------------------------------------------------------------------ odometry


def random_state(robot, seed):
    rng = np.random.default_rng(seed)
    q = pin.randomConfiguration(robot.model, -np.ones(robot.nq), np.ones(robot.nq))
    return q, rng.normal(size=robot.nv)


@pytest.mark.parametrize("name", ["biped3d", "planar_biped", "ball"])
def test_base_state_from_odometry_inverts_pinocchio(name):
    robot = RobotModel.load(name)
    data = robot.create_data()
    root = robot.model.joints[1]
    for seed in range(5):
        q, v = random_state(robot, seed)
        pos, quat, lin, ang = base_pose_twist(robot.model, data, q, v)
        # The published pose is the root joint's placement and the twist its local velocity,
        # as pinocchio's kinematics give them (the free flyer's are read off q and v).
        ref = robot.create_data()
        pin.forwardKinematics(robot.model, ref, q, v)
        np.testing.assert_allclose(np.concatenate([lin, ang]), ref.v[1].vector, atol=1e-12)
        np.testing.assert_allclose(pos, ref.oMi[1].translation, atol=1e-12)
        R = pin.Quaternion(quat[3], quat[0], quat[1], quat[2]).toRotationMatrix()
        np.testing.assert_allclose(R, ref.oMi[1].rotation, atol=1e-12)
        qb, vb = base_state_from_odometry(robot.config.base, pos, quat, lin, ang)
        q_root = q[root.idx_q:root.idx_q + root.nq]
        if robot.config.base == "free_flyer" and np.dot(qb[3:], q_root[3:]) < 0:
            qb[3:] *= -1  # q and -q are the same rotation
        np.testing.assert_allclose(qb, q_root, atol=1e-12)
        np.testing.assert_allclose(vb, v[root.idx_v:root.idx_v + root.nv], atol=1e-12)


def test_free_flyer_twist_is_the_body_frame_one(biped):
    """A base yawed by 90° moving along world x has body-frame linear velocity along −y."""
    q = biped.standing_configuration()
    q[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(0.0, 0.0, np.pi / 2)).coeffs()
    v = np.zeros(biped.nv)
    v[:3] = [0.0, -1.0, 0.0]  # body frame
    pos, quat, lin, ang = base_pose_twist(biped.model, biped.create_data(), q, v)
    data = biped.create_data()
    pin.forwardKinematics(biped.model, data, q, v)
    world = pin.getVelocity(biped.model, data, 1, pin.LOCAL_WORLD_ALIGNED).linear
    np.testing.assert_allclose(world, [1.0, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(lin, [0.0, -1.0, 0.0], atol=1e-12)


def test_odometry_rejects_bad_quaternions_and_nan():
    with pytest.raises(ValueError, match="not a unit quaternion"):
        base_state_from_odometry("free_flyer", [0, 0, 0], [0, 0, 0, 2], [0] * 3, [0] * 3)
    with pytest.raises(ValueError, match="NaN or Inf"):
        base_state_from_odometry("free_flyer", [0, 0, np.nan], [0, 0, 0, 1], [0] * 3,
                                    [0] * 3)
