"""The message writers of the nodes (biped_contact_sim/ros/writers.py: serialized CDR for the
per-period messages, in place for the markers) produce the messages ``fill_message`` makes from
the trace's field builders (msgs/messages.py, msgs/markers.py), as rclpy reads them back; the
CDR readers (msgs/cdr.py) read what rclpy serializes."""

import numpy as np
import pytest
from geometry_msgs.msg import Point, WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.serialization import deserialize_message, serialize_message
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from visualization_msgs.msg import Marker, MarkerArray

from biped_contact_sim.msgs import cdr, messages
from biped_contact_sim.msgs import markers as mk
from biped_contact_sim.msgs.messages import fill_message
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
    """The serialized messages, read back by rclpy, are the messages of the fields."""
    robot = session.robot
    writer = StateWriter(robot.actuated_joint_names, "world", robot.base_link,
                         [b.frame for b in robot.contact_bodies])
    data = writer.write(session.sample())
    types = [Clock, JointState, Odometry] + [WrenchStamped] * len(robot.contact_bodies)
    topics = ["/clock", "joint_states", "odom"] + [f"contact_wrench/{b.name}"
                                                   for b in robot.contact_bodies]
    expected = dict(session.measurement_fields())
    assert set(topics) == expected.keys()
    for topic, msg_type, raw in zip(topics, types, data, strict=True):
        reference = fill_message(msg_type(), expected[topic])
        assert_same(as_data(deserialize_message(raw, msg_type)), as_data(reference), topic)
    # only the messages someone listens to (the others are not written: None), the same bytes
    wanted = [k % 2 == 1 for k in range(len(data))]
    fresh = StateWriter(robot.actuated_joint_names, "world", robot.base_link,
                        [b.frame for b in robot.contact_bodies])
    some = fresh.write(session.sample(), wanted)
    assert [x is not None for x in some] == wanted
    assert all(x == y for x, y, w in zip(some, data, wanted, strict=True) if w)


def test_command_writer_equals_the_message_fields():
    names = [f"j{k}" for k in range(5)]
    tau = np.linspace(-3.0, 4.0, 5)
    stamp = 1_700_000_123_456_789_012
    raw = CommandWriter(names).write(stamp, tau)
    fields = messages.joint_state(0.0, names, None, None, tau)
    fields["header"]["stamp"] = {"sec": stamp // 10**9, "nanosec": stamp % 10**9}
    assert_same(as_data(deserialize_message(raw, JointState)),
                as_data(fill_message(JointState(), fields)))


def random_joint_state(rng, names, frame):
    n = len(names)
    msg = JointState(name=names, position=list(rng.normal(size=n)),
                     velocity=list(rng.normal(size=n)), effort=list(rng.normal(size=n)))
    msg.header.frame_id = frame
    msg.header.stamp.sec, msg.header.stamp.nanosec = 1234, 567_890_123
    return msg


@pytest.mark.parametrize(("names", "frame"), [
    (["a", "bb", "ccc", "dddd", "é"], ""), (["gripper", "l_knee"], "base_link_xyz"),
    ([], "x"), (["only"], "")])
def test_joint_state_reader_reads_what_rclpy_serializes(names, frame):
    """Names and frames of every length (each alignment of the float64 sequences)."""
    rng = np.random.default_rng(len(names) * 7 + len(frame))
    reader = cdr.JointStateReader()
    for _ in range(2):  # the second read reuses the decoded names
        msg = random_joint_state(rng, names, frame)
        stamp, got_names, q, v, e = reader.read(serialize_message(msg))
        assert stamp == 1234 * 10**9 + 567_890_123 and got_names == names
        assert list(q) == list(msg.position) and list(v) == list(msg.velocity)
        assert list(e) == list(msg.effort)


@pytest.mark.parametrize(("frame", "child"), [("world", "base_link"), ("", "b"), ("odom", "")])
def test_odometry_and_wrench_readers_read_what_rclpy_serializes(frame, child):
    rng = np.random.default_rng(len(frame) + 3 * len(child))
    odom = Odometry(child_frame_id=child)
    odom.header.frame_id = frame
    odom.header.stamp.sec = 7
    odom.pose.covariance = list(rng.normal(size=36))  # not read: must not shift the twist
    values = rng.normal(size=13)
    p, o = odom.pose.pose.position, odom.pose.pose.orientation
    p.x, p.y, p.z, o.x, o.y, o.z, o.w = (float(x) for x in values[:7])
    t = odom.twist.twist
    t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z = (
        float(x) for x in values[7:])
    stamp, pose, twist = cdr.read_odometry(serialize_message(odom))
    assert stamp == 7 * 10**9
    assert list(pose) == list(values[:7]) and list(twist) == list(values[7:])
    wrench = WrenchStamped()
    wrench.header.frame_id = child
    wrench.header.stamp.nanosec = 99
    f, m = wrench.wrench.force, wrench.wrench.torque
    f.x, f.y, f.z, m.x, m.y, m.z = (float(x) for x in values[7:])
    stamp, w = cdr.read_wrench_stamped(serialize_message(wrench))
    assert stamp == 99 and list(w) == list(values[7:])


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
    fields = mk.contact_markers(v.t, "world", v.points, v.forces, active, cops, zmp,
                                      polygon, mu=v.mu, force_scale=v.force_scale,
                                      normals=v.normal)
    for marker in fields["markers"]:
        marker["header"]["stamp"] = {"sec": v.stamp // 10**9, "nanosec": v.stamp % 10**9}
    reference = fill_message(MarkerArray(), fields, {"markers": Marker, "points": Point})
    assert_same(as_data(msg), as_data(reference))


def test_marker_writer_follows_a_changing_contact_set():
    """Geometry contacts: the number of contacts changes from step to step. The writer grows to
    the largest set seen; the markers of the n contacts now are those of ``contact_markers``
    (each contact's own normal), the arrows and cones of ids ≥ n are invisible (alpha 0)."""
    config = params.sim_config({"real_time_factor": 0.0, "contacts": "geometry"})
    s = sim_session.SimSession(sim_session.build_world(config), config)
    for _ in range(30):
        s.tick(max_periods=1)
    v = s.visual_sample()
    count = len(v.points)
    assert count >= 4 and v.normal.shape == (count, 3) and np.all(v.mu == v.mu[0])
    cops = [c for _, c in v.cops]
    writer = MarkerWriter(MarkerArray(), Marker, Point, "world", 2, len(cops))
    for n in (count, 3, count):  # grows, shrinks, grows back
        msg = writer.write(v.stamp, v.points[:n], v.forces[:n], v.active[:n], cops, v.zmp,
                           v.polygon, v.mu[:n], v.force_scale, v.normal[:n])
        fields = mk.contact_markers(v.t, "world", v.points[:n], v.forces[:n],
                                          v.active[:n], cops, v.zmp, v.polygon,
                                          mu=float(v.mu[0]), force_scale=v.force_scale,
                                          normals=v.normal[:n])
        for marker in fields["markers"]:
            marker["header"]["stamp"] = {"sec": v.stamp // 10**9, "nanosec": v.stamp % 10**9}
        reference = as_data(fill_message(MarkerArray(), fields,
                                         {"markers": Marker, "points": Point}))["markers"]
        got = as_data(msg)["markers"]
        by_key = {(m["ns"], m["id"]): m for m in got}
        assert len(by_key) == len(got)  # (ns, id) unique
        for m in reference:
            assert_same(by_key[(m["ns"], m["id"])], m, f"{m['ns']}[{m['id']}]")
        hidden = [m for m in got if m["ns"] in (mk.NS_FORCES, mk.NS_CONES)
                  and m["id"] >= n]
        assert len(hidden) == 2 * (count - n)
        assert all(m["color"]["a"] == 0.0 for m in hidden)
