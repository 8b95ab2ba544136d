"""The in-place message writers of the nodes (biped_contact_sim/ros/writers.py) produce the
messages ``fill_message`` makes from the recorder's field builders (record/messages.py): one
conversion, two ways of filling the real rclpy message classes."""

import numpy as np
import pytest
from geometry_msgs.msg import Point, WrenchStamped
from nav_msgs.msg import Odometry
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from visualization_msgs.msg import Marker, MarkerArray

from biped_contact_sim.record import messages
from biped_contact_sim.record.messages import fill_message
from biped_contact_sim.ros import params, sim_session
from biped_contact_sim.ros.writers import CommandWriter, MarkerWriter, StateWriter


def as_data(msg):
    """A message as nested Python data (floats kept exact), for comparison and messages."""
    if isinstance(msg, (bool, int, float, str, bytes)):
        return msg
    if hasattr(msg, "get_fields_and_field_types"):
        return {name: as_data(getattr(msg, name)) for name in msg.get_fields_and_field_types()}
    if isinstance(msg, (list, tuple)) or hasattr(msg, "tolist"):
        return [as_data(v) for v in msg]
    return msg


def assert_same(a, b, path="msg"):
    """Equal structure; floats equal to 1e-12 (the cone vertices are summed in another order)."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for key in a:
            assert_same(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list):
        assert len(a) == len(b), f"{path}: {len(a)} != {len(b)}"
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{path}[{k}]")
    elif isinstance(a, float):
        assert a == pytest.approx(b, abs=1e-12), path
    else:
        assert a == b, path


@pytest.fixture(scope="module")
def session():
    config = params.sim_config({"real_time_factor": 0.0})
    s = sim_session.SimSession(sim_session.build_world(config), config)
    for _ in range(30):
        s.tick(max_periods=1)
    return s


def test_state_writer_equals_the_message_fields(session):
    robot = session.robot
    clock, js, odom = Clock(), JointState(), Odometry()
    wrenches = [WrenchStamped() for _ in robot.contact_bodies]
    writer = StateWriter(clock, js, odom, wrenches, robot.actuated_joint_names, "world",
                         robot.base_link, [b.frame for b in robot.contact_bodies])
    writer.write(session.sample())
    expected = dict(session.measurement_fields())
    written = {"/clock": clock, "joint_states": js, "odom": odom}
    written.update({f"contact_wrench/{b.name}": w
                    for b, w in zip(robot.contact_bodies, wrenches, strict=True)})
    assert written.keys() == expected.keys()
    for topic, msg in written.items():
        reference = fill_message(type(msg)(), expected[topic])
        assert_same(as_data(msg), as_data(reference), topic)


def test_command_writer_equals_the_message_fields():
    names = [f"j{k}" for k in range(5)]
    tau = np.linspace(-3.0, 4.0, 5)
    stamp = 1_700_000_123_456_789_012
    msg = CommandWriter(JointState(), names).write(stamp, tau)
    fields = messages.joint_state(0.0, names, None, None, tau)
    fields["header"]["stamp"] = {"sec": stamp // 10**9, "nanosec": stamp % 10**9}
    assert_same(as_data(msg), as_data(fill_message(JointState(), fields)))


@pytest.mark.parametrize("case", ["standing", "one foot, no zmp", "no contact"])
def test_marker_writer_equals_contact_markers(session, case):
    v = session.visual_sample()
    cops = [c for _, c in v.cops]
    zmp, polygon, active = v.zmp, v.polygon, v.active.copy()
    if case == "one foot, no zmp":
        cops[1], zmp, polygon = None, None, polygon[:3]
        active[4:] = False
    elif case == "no contact":
        cops, zmp, polygon = [None, None], None, np.zeros((0, 3))
        active[:] = False
    writer = MarkerWriter(MarkerArray(), Marker, Point, "world", len(v.points), len(cops))
    for _ in range(2):  # written twice: reused markers and points must not keep stale values
        msg = writer.write(v.stamp, v.points, v.forces, active, cops, zmp, polygon, v.mu,
                           v.force_scale, v.normal)
    fields = messages.contact_markers(v.t, "world", v.points, v.forces, active, cops, zmp,
                                      polygon, mu=v.mu, force_scale=v.force_scale,
                                      normals=v.normal)
    for marker in fields["markers"]:
        marker["header"]["stamp"] = {"sec": v.stamp // 10**9, "nanosec": v.stamp % 10**9}
    reference = fill_message(MarkerArray(), fields, {"markers": Marker, "points": Point})
    assert_same(as_data(msg), as_data(reference))
