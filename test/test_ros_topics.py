"""Stamps, diagnostics fields, topic names and odometry ↔ pinocchio base state
(biped_contact_sim/ros/topics.py)."""


import numpy as np
import pinocchio as pin
import pytest
from ros_logic_helpers import MS

from biped_contact_sim.robot import RobotModel
from biped_contact_sim.ros import topics as ros_topics


@pytest.fixture(scope="module")
def biped():
    return RobotModel.load("biped3d")


def test_stamps_are_exact_nanoseconds():
    assert ros_topics.stamp_ns(0.001) == 1 * MS
    assert ros_topics.stamp_ns(sum([0.001] * 1000)) == 1_000_000_000
    assert ros_topics.stamp_fields(1_700_000_000_123_456_789) == {"sec": 1_700_000_000,
                                                          "nanosec": 123_456_789}
    assert ros_topics.ns_from_stamp(3, 5) == 3_000_000_005


def test_diagnostic_and_multiarray_fields():
    status = ros_topics.diagnostic_status(ros_topics.DIAG_WARN, "n", "m", "hw", {
        "f": 0.123456789, "i": 3, "b": True, "arr": np.array([1.0, 2.5]), "none": None,
        "names": ("left_foot", "right_foot")})
    assert status["level"] == b"\x01"
    assert status["values"] == [
        {"key": "f", "value": "0.123457"}, {"key": "i", "value": "3"},
        {"key": "b", "value": "true"}, {"key": "arr", "value": "1, 2.5"},
        {"key": "none", "value": ""}, {"key": "names", "value": "left_foot, right_foot"}]
    with pytest.raises(ValueError):
        ros_topics.diagnostic_status(7, "n", "m", "hw", {})
    arr = ros_topics.float64_multi_array(np.arange(6), "internal")
    assert arr == {"layout": {"dim": [{"label": "internal", "size": 6, "stride": 6}],
                              "data_offset": 0},
                   "data": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]}


def test_topic_names_agree_with_the_recorded_trace():
    """The trace's topics are the nodes' names resolved in the root namespace."""
    recorder = pytest.importorskip("biped_contact_sim.record.recorder")

    def resolved(name):
        return name if name.startswith("/") else "/" + name

    for ours, theirs in ((ros_topics.JOINT_STATES, recorder.JOINT_STATES),
                         (ros_topics.ODOM, recorder.ODOM),
                         (ros_topics.CONTACT_WRENCH, recorder.CONTACT_WRENCH),
                         (ros_topics.COP, recorder.COP), (ros_topics.ZMP, recorder.ZMP),
                         (ros_topics.CONTACT_MARKERS, recorder.CONTACT_MARKERS),
                         (ros_topics.CLOCK, recorder.CLOCK), (ros_topics.TF, recorder.TF)):
        assert resolved(ours) == resolved(theirs[0])
    assert recorder.WEIGHT_ARROW_LENGTH == ros_topics.WEIGHT_ARROW_LENGTH
    assert recorder.WORLD_FRAME == ros_topics.WORLD_FRAME


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
        pos, quat, lin, ang = ros_topics.base_pose_twist(robot.model, data, q, v)
        # The published pose is the root joint's placement and the twist its local velocity,
        # as pinocchio's kinematics give them (the free flyer's are read off q and v).
        ref = robot.create_data()
        pin.forwardKinematics(robot.model, ref, q, v)
        np.testing.assert_allclose(np.concatenate([lin, ang]), ref.v[1].vector, atol=1e-12)
        np.testing.assert_allclose(pos, ref.oMi[1].translation, atol=1e-12)
        R = pin.Quaternion(quat[3], quat[0], quat[1], quat[2]).toRotationMatrix()
        np.testing.assert_allclose(R, ref.oMi[1].rotation, atol=1e-12)
        qb, vb = ros_topics.base_state_from_odometry(robot.config.base, pos, quat, lin, ang)
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
    pos, quat, lin, ang = ros_topics.base_pose_twist(biped.model, biped.create_data(), q, v)
    data = biped.create_data()
    pin.forwardKinematics(biped.model, data, q, v)
    world = pin.getVelocity(biped.model, data, 1, pin.LOCAL_WORLD_ALIGNED).linear
    np.testing.assert_allclose(world, [1.0, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(lin, [0.0, -1.0, 0.0], atol=1e-12)


def test_odometry_rejects_bad_quaternions_and_nan():
    with pytest.raises(ValueError, match="not a unit quaternion"):
        ros_topics.base_state_from_odometry("free_flyer", [0, 0, 0], [0, 0, 0, 2], [0] * 3, [0] * 3)
    with pytest.raises(ValueError, match="NaN or Inf"):
        ros_topics.base_state_from_odometry("free_flyer", [0, 0, np.nan], [0, 0, 0, 1], [0] * 3,
                                    [0] * 3)
