"""Field dicts of msgs.messages and msgs.markers, round-tripped through a real MCAP file; the
CDR encoder of msgs.cdr against mcap_ros2's."""

import warnings
from types import SimpleNamespace

import numpy as np
import pytest

from biped_contact_sim.msgs import markers as mk
from biped_contact_sim.msgs import messages, msgdefs, stamps
from biped_contact_sim.msgs.topics import ROBOT_DESCRIPTION
from biped_contact_sim.record.mcap_writer import McapTraceWriter


def read_back(path):
    """Return {topic: [(log_time, decoded message), ...]} of an MCAP file."""
    with warnings.catch_warnings():
        # mcap_ros2.reader warns about itself on import; read_ros2_messages is what we test.
        warnings.simplefilter("ignore", DeprecationWarning)
        from mcap_ros2.reader import read_ros2_messages

    out = {}
    for item in read_ros2_messages(str(path)):
        out.setdefault(item.channel.topic, []).append((item.log_time_ns, item.ros_msg))
    return out


def round_trip(tmp_path, datatype, fields, t=1.5):
    """Write one message to an MCAP file and return it decoded."""
    path = tmp_path / "one.mcap"
    with McapTraceWriter(path) as writer:
        writer.write("/topic", datatype, fields, t)
    decoded = read_back(path)["/topic"]
    assert len(decoded) == 1
    log_time, msg = decoded[0]
    assert log_time == round(t * 1e9)
    return msg


def xyz(v):
    return [v.x, v.y, v.z]


# -- stamp -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("t", "expected"),
    [
        (0.0, (0, 0)),
        (0.9999999999, (1, 0)),
        (1e-10, (0, 0)),
        (1.5, (1, 500_000_000)),
        (-1.7, (-2, 300_000_000)),
        (-1e-10, (0, 0)),
        (1_700_000_000.123456789, (1_700_000_000, 123_456_717)),
        (2_000_000_000.25, (2_000_000_000, 250_000_000)),
    ],
)
def test_stamp_edge_cases(t, expected):
    result = stamps.stamp(t)
    assert (result["sec"], result["nanosec"]) == expected
    assert 0 <= result["nanosec"] < 1_000_000_000
    assert type(result["sec"]) is int and type(result["nanosec"]) is int


def test_stamp_large_t_keeps_resolution_of_the_float():
    t = 1_700_000_000.123456789
    result = stamps.stamp(t)
    # The nearest float64 to t is 1700000000.1234567165...; the split keeps that exactly.
    assert abs(result["nanosec"] - (t - 1_700_000_000) * 1e9) <= 0.5


@pytest.mark.parametrize("t", [float("nan"), float("inf"), 2.0**31, -(2.0**31) - 1.0])
def test_stamp_rejects_unrepresentable_times(t):
    with pytest.raises(ValueError):
        stamps.stamp(t)


# -- round trips through MCAP ----------------------------------------------------------------


def test_joint_state_round_trip(tmp_path):
    names = ["hip", "knee", "ankle"]
    fields = messages.joint_state(2.25, names, np.array([0.1, -0.2, 0.3]), [1.0, 2.0, 3.0], None)
    msg = round_trip(tmp_path, "sensor_msgs/JointState", fields, t=2.25)
    assert list(msg.name) == names
    assert list(msg.position) == pytest.approx([0.1, -0.2, 0.3])
    assert list(msg.velocity) == pytest.approx([1.0, 2.0, 3.0])
    assert list(msg.effort) == []
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (2, 250_000_000)
    assert msg.header.frame_id == ""


def test_joint_state_rejects_wrong_lengths():
    with pytest.raises(ValueError):
        messages.joint_state(0.0, ["a", "b"], [1.0], None, None)


def test_wrench_stamped_round_trip(tmp_path):
    fields = messages.wrench_stamped(1.5, "l_foot", [1.0, 2.0, 300.0], np.array([0.1, 0.2, 0.3]))
    msg = round_trip(tmp_path, "geometry_msgs/WrenchStamped", fields)
    assert msg.header.frame_id == "l_foot"
    assert xyz(msg.wrench.force) == pytest.approx([1.0, 2.0, 300.0])
    assert xyz(msg.wrench.torque) == pytest.approx([0.1, 0.2, 0.3])


def test_point_stamped_round_trip(tmp_path):
    fields = messages.point_stamped(1.5, "world", np.array([[0.01, -0.02, 0.0]]))
    msg = round_trip(tmp_path, "geometry_msgs/msg/PointStamped", fields)
    assert msg.header.frame_id == "world"
    assert xyz(msg.point) == pytest.approx([0.01, -0.02, 0.0])


def test_odometry_round_trip(tmp_path):
    fields = messages.odometry(
        1.5,
        "odom",
        "base_link",
        [1.0, 2.0, 0.8],
        [0.0, 0.0, 0.38268343, 0.92387953],
        [0.5, 0.0, -0.1],
        [0.0, 0.2, 0.3],
    )
    msg = round_trip(tmp_path, "nav_msgs/Odometry", fields)
    assert msg.header.frame_id == "odom"
    assert msg.child_frame_id == "base_link"
    assert xyz(msg.pose.pose.position) == pytest.approx([1.0, 2.0, 0.8])
    q = msg.pose.pose.orientation
    assert [q.x, q.y, q.z, q.w] == pytest.approx([0.0, 0.0, 0.38268343, 0.92387953])
    assert xyz(msg.twist.twist.linear) == pytest.approx([0.5, 0.0, -0.1])
    assert xyz(msg.twist.twist.angular) == pytest.approx([0.0, 0.2, 0.3])
    assert list(msg.pose.covariance) == [0.0] * 36
    assert list(msg.twist.covariance) == [0.0] * 36


def test_tf_message_round_trip(tmp_path):
    fields = messages.tf_message(
        [
            messages.transform_stamped(1.5, "world", "base_link", [0.0, 0.1, 0.9], [0, 0, 0, 1]),
            messages.transform_stamped(
                1.5, "base_link", "l_foot", [0.0, 0.1, -0.8], [0.0, 0.70710678, 0.0, 0.70710678]
            ),
        ]
    )
    msg = round_trip(tmp_path, "tf2_msgs/TFMessage", fields)
    assert [tf.child_frame_id for tf in msg.transforms] == ["base_link", "l_foot"]
    assert [tf.header.frame_id for tf in msg.transforms] == ["world", "base_link"]
    assert xyz(msg.transforms[1].transform.translation) == pytest.approx([0.0, 0.1, -0.8])
    r = msg.transforms[1].transform.rotation
    assert [r.x, r.y, r.z, r.w] == pytest.approx([0.0, 0.70710678, 0.0, 0.70710678])


def test_clock_and_string_round_trip(tmp_path):
    path = tmp_path / "two.mcap"
    with McapTraceWriter(path, robot_description="<robot name='r'/>") as writer:
        for t in (0.0, 0.001, 0.002):
            writer.write("/clock", "rosgraph_msgs/Clock", messages.clock(t), t)
        writer.write("/chatter", "std_msgs/String", messages.string("héllo"), 0.002)
    decoded = read_back(path)
    clocks = [(m.clock.sec, m.clock.nanosec) for _, m in decoded["/clock"]]
    assert clocks == [(0, 0), (0, 1_000_000), (0, 2_000_000)]
    assert [t for t, _ in decoded["/clock"]] == [0, 1_000_000, 2_000_000]
    assert decoded["/chatter"][0][1].data == "héllo"
    ((log_time, description),) = decoded[ROBOT_DESCRIPTION]
    assert log_time == 0
    assert description.data == "<robot name='r'/>"


def test_writer_registers_each_schema_once_and_checks_topic_types(tmp_path):
    from mcap.reader import make_reader

    path = tmp_path / "schemas.mcap"
    with McapTraceWriter(path) as writer:
        for t in (0.0, 0.1):
            writer.write("/a", "std_msgs/String", messages.string("a"), t)
            writer.write("/b", "std_msgs/msg/String", messages.string("b"), t)
        with pytest.raises(ValueError):
            writer.write("/a", "rosgraph_msgs/Clock", messages.clock(0.2), 0.2)
        with pytest.raises(ValueError):
            writer.write("/c", "std_msgs/String", messages.string("c"), -1.0)
        with pytest.raises(KeyError):
            writer.write("/d", "std_msgs/Float64", {"data": 1.0}, 0.0)
    with open(path, "rb") as f:
        summary = make_reader(f).get_summary()
    assert [s.name for s in summary.schemas.values()] == ["std_msgs/msg/String"]
    assert summary.schemas[1].encoding == "ros2msg"
    assert sorted(c.topic for c in summary.channels.values()) == ["/a", "/b"]
    with pytest.raises(ValueError):
        writer.write("/a", "std_msgs/String", messages.string("late"), 1.0)


# -- contact markers ---------------------------------------------------------------------------

POINTS = np.array([[0.1, 0.1, 0.0], [0.1, -0.1, 0.0], [-0.1, 0.1, 0.0]])
FORCES = np.array([[0.0, 0.0, 200.0], [10.0, 0.0, 100.0], [0.0, 0.0, 0.0]])
ACTIVE = np.array([True, True, False])
POLYGON = np.array([[0.1, 0.1, 0.0], [0.1, -0.1, 0.0], [-0.1, 0.1, 0.0]])


def make_markers(**overrides):
    kwargs = dict(
        t=1.5,
        frame_id="world",
        points=POINTS,
        forces=FORCES,
        active=ACTIVE,
        cops=[np.array([0.05, 0.0, 0.0]), None],
        zmp=np.array([0.02, 0.01, 0.0]),
        support_polygon=POLYGON,
        mu=0.8,
    )
    kwargs.update(overrides)
    return mk.contact_markers(**kwargs)


def by_ns(markers):
    out = {}
    for m in markers:
        out.setdefault(m.ns, []).append(m)
    return out


def test_contact_markers_round_trip(tmp_path):
    msg = round_trip(tmp_path, "visualization_msgs/MarkerArray", make_markers())
    groups = by_ns(msg.markers)
    assert sorted(groups) == ["cones", "cop", "forces", "support_polygon", "zmp"]
    assert len(msg.markers) == 3 + 3 + 1 + 2 + 1
    for m in msg.markers:
        assert m.header.frame_id == "world"
        assert (m.header.stamp.sec, m.header.stamp.nanosec) == (1, 500_000_000)
        assert (m.lifetime.sec, m.lifetime.nanosec) == (0, 0)
        assert m.frame_locked is False

    forces = groups["forces"]
    assert [m.id for m in forces] == [0, 1, 2]
    assert all(m.type == mk.MARKER_ARROW and m.action == mk.MARKER_ADD for m in forces)
    assert xyz(forces[1].points[0]) == pytest.approx(POINTS[1])
    assert xyz(forces[1].points[1]) == pytest.approx(POINTS[1] + 0.002 * FORCES[1])
    assert [m.color.a for m in forces] == [1.0, 1.0, 0.0]  # the inactive point is invisible

    cones = groups["cones"]
    assert all(m.type == mk.MARKER_TRIANGLE_LIST for m in cones)
    assert all(len(m.points) == 3 * mk.CONE_SEGMENTS for m in cones)
    assert [m.color.a > 0 for m in cones] == [True, True, False]
    apex, rim = np.array(xyz(cones[0].points[0])), np.array(xyz(cones[0].points[1]))
    assert apex == pytest.approx(POINTS[0])
    height, radius = rim[2] - apex[2], np.linalg.norm(rim[:2] - apex[:2])
    assert height == pytest.approx(mk.CONE_HEIGHT)
    assert radius / height == pytest.approx(0.8)

    (polygon,) = groups["support_polygon"]
    assert polygon.type == mk.MARKER_LINE_STRIP
    assert np.array([xyz(p) for p in polygon.points]) == pytest.approx(
        np.vstack([POLYGON, POLYGON[:1]])
    )

    cop_defined, cop_undefined = groups["cop"]
    assert (cop_defined.id, cop_defined.type, cop_defined.action) == (0, 2, mk.MARKER_ADD)
    assert xyz(cop_defined.pose.position) == pytest.approx([0.05, 0.0, 0.0])
    assert (cop_undefined.id, cop_undefined.action) == (1, mk.MARKER_DELETE)

    (zmp,) = groups["zmp"]
    assert (zmp.type, zmp.action) == (mk.MARKER_SPHERE, mk.MARKER_ADD)
    assert xyz(zmp.pose.position) == pytest.approx([0.02, 0.01, 0.0])


def test_contact_markers_without_mu_zmp_or_polygon():
    markers = make_markers(mu=None, zmp=None, support_polygon=np.zeros((0, 3)))["markers"]
    groups = {}
    for m in markers:
        groups.setdefault(m["ns"], []).append(m)
    assert "cones" not in groups
    assert [m["action"] for m in groups["zmp"]] == [mk.MARKER_DELETE]
    assert [m["action"] for m in groups["support_polygon"]] == [mk.MARKER_DELETE]


def test_contact_markers_cone_follows_normal():
    normal = np.array([1.0, 0.0, 1.0]) / np.sqrt(2.0)
    markers = make_markers(normals=normal)["markers"]
    cone = next(m for m in markers if m["ns"] == "cones")
    apex = np.array(list(cone["points"][0].values()))
    rim = np.array([list(p.values()) for p in cone["points"][1::3]])
    axis_part = (rim - apex) @ normal
    assert axis_part == pytest.approx(np.full(len(rim), mk.CONE_HEIGHT))


def test_contact_markers_rejects_mismatched_shapes():
    with pytest.raises(ValueError):
        make_markers(active=[True])


# -- schemas ---------------------------------------------------------------------------------


def test_full_definition_of_marker_array_has_every_dependency_once():
    text = msgdefs.full_definition("visualization_msgs/MarkerArray")
    sections = text.split("\n" + "=" * 80 + "\n")
    assert sections[0] == "Marker[] markers\n"
    names = [s.splitlines()[0] for s in sections[1:]]
    assert all(n.startswith("MSG: ") for n in names)
    expected = {
        "visualization_msgs/Marker",
        "std_msgs/Header",
        "builtin_interfaces/Time",
        "builtin_interfaces/Duration",
        "geometry_msgs/Pose",
        "geometry_msgs/Point",
        "geometry_msgs/Quaternion",
        "geometry_msgs/Vector3",
        "std_msgs/ColorRGBA",
        "sensor_msgs/CompressedImage",
        "visualization_msgs/UVCoordinate",
        "visualization_msgs/MeshFile",
    }
    assert sorted(n.removeprefix("MSG: ") for n in names) == sorted(expected)


def test_full_definition_layout_matches_rosbag2():
    text = msgdefs.full_definition("geometry_msgs/msg/PointStamped")
    bar = "=" * 80
    assert text == (
        "std_msgs/Header header\nPoint point\n"
        f"\n{bar}\nMSG: geometry_msgs/Point\nfloat64 x\nfloat64 y\nfloat64 z\n"
        f"\n{bar}\nMSG: std_msgs/Header\nbuiltin_interfaces/Time stamp\nstring frame_id\n"
        f"\n{bar}\nMSG: builtin_interfaces/Time\nint32 sec\nuint32 nanosec\n"
    )


def test_every_bundled_definition_resolves():
    for name in msgdefs.MSG_DEFINITIONS:
        for dep in msgdefs.dependencies(name):
            assert dep in msgdefs.MSG_DEFINITIONS, (name, dep)
    with pytest.raises(KeyError):
        msgdefs.full_definition("std_msgs/Float64")


# -- fill_message ----------------------------------------------------------------------------


def stand_in(template):
    """A SimpleNamespace tree with the attributes of a message template (dicts nest)."""
    return SimpleNamespace(
        **{k: stand_in(v) if isinstance(v, dict) else v for k, v in template.items()}
    )


TIME = {"sec": 0, "nanosec": 0}
HEADER = {"stamp": TIME, "frame_id": ""}
VECTOR3 = {"x": 0.0, "y": 0.0, "z": 0.0}
QUATERNION = {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0}
TRANSFORM_STAMPED = {
    "header": HEADER,
    "child_frame_id": "",
    "transform": {"translation": VECTOR3, "rotation": QUATERNION},
}


def test_fill_message_nested_and_primitive_lists():
    msg = stand_in({"header": HEADER, "name": [], "position": [], "velocity": [], "effort": []})
    header = msg.header
    messages.fill_message(msg, messages.joint_state(3.25, ["a", "b"], [1.0, 2.0], None, None))
    assert msg.header is header  # nested messages are filled in place
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (3, 250_000_000)
    assert msg.name == ["a", "b"]
    assert msg.position == [1.0, 2.0]
    assert msg.velocity == []


def test_fill_message_lists_of_messages_use_factories():
    msg = stand_in({"transforms": []})
    fields = messages.tf_message(
        [
            messages.transform_stamped(1.0, "world", f"link{i}", [i, 0, 0], [0, 0, 0, 1])
            for i in range(2)
        ]
    )
    messages.fill_message(msg, fields, {"transforms": lambda: stand_in(TRANSFORM_STAMPED)})
    assert [tf.child_frame_id for tf in msg.transforms] == ["link0", "link1"]
    assert msg.transforms[1].transform.translation.x == 1.0
    assert msg.transforms[0].transform.rotation.w == 1.0
    assert msg.transforms[0] is not msg.transforms[1]


def test_fill_message_errors():
    with pytest.raises(KeyError):
        messages.fill_message(
            stand_in({"transforms": []}),
            messages.tf_message(
                [messages.transform_stamped(0.0, "a", "b", [0, 0, 0], [0, 0, 0, 1])]
            ),
        )
    with pytest.raises(AttributeError):
        messages.fill_message(stand_in({"data": ""}), {"dat": "typo"})


def _fields_of_every_fast_type(scale=1.0):
    m = messages
    wrench = m.wrench_stamped(1.25, "l_sole", [1.0, -2.0 * scale, 3.5], [0.1, 0.2, -0.3])
    status = m.diagnostic_status(m.DIAG_WARN, "sim", "slow", "biped3d",
                                 {"steps": 3, "mean_step_us": 12.5 * scale, "fell": False})
    return {
        "sensor_msgs/msg/JointState": m.joint_state(0.5, ["a", "knee_joint"], [0.1, -0.2],
                                                     [1.0, 2.0 * scale], [3.0, -4.0]),
        "nav_msgs/msg/Odometry": m.odometry(2.0, "world", "pelvis", [1.0, 2.0, 3.0 * scale],
                                            [0.0, 0.0, 0.6, 0.8], [0.1, 0.2, 0.3],
                                            [-0.1, -0.2, -0.3]),
        "tf2_msgs/msg/TFMessage": m.tf_message([
            m.transform_stamped(0.001, "world", "pelvis", [0.0, 0.1, 0.87], [0, 0, 0, 1]),
            m.transform_stamped(0.001 * scale, "pelvis", "l_hip_yaw_link", [0.0, 0.1, -0.05],
                                [0.0, 0.0, 0.38268343, 0.92387953])]),
        "geometry_msgs/msg/WrenchStamped": wrench,
        "geometry_msgs/msg/PointStamped": m.point_stamped(3.0, "world", [0.5, -0.25 * scale, 0.0]),
        "rosgraph_msgs/msg/Clock": m.clock(12.345678901 * scale),
        "diagnostic_msgs/msg/DiagnosticArray": m.diagnostic_array(4.0 * scale, [status, status]),
    }


def _with_int_levels(fields):
    """mcap_ros2 wants a ``byte`` as an int; rclpy (and the builders) as bytes."""
    if "status" not in fields:
        return fields
    return {**fields, "status": [{**s, "level": s["level"][0]} for s in fields["status"]]}


@pytest.mark.parametrize("name", list(_fields_of_every_fast_type()))
def test_fast_cdr_encoders_give_mcap_ros2_bytes(name):
    """The CDR encoder (msgs.cdr) against mcap_ros2's generic encoder (the reference), byte
    for byte: twice through one encoder (a kept layout, new values), and with empty sequences,
    where alignment padding differs most easily."""
    from mcap_ros2._dynamic import serialize_dynamic

    from biped_contact_sim.msgs import cdr

    reference = serialize_dynamic(name, msgdefs.full_definition(name))[name]
    encoder = cdr.FieldEncoder()
    assert name in encoder.types
    for scale in (1.0, -3.0):
        fields = _fields_of_every_fast_type(scale)[name]
        assert encoder.encode(name, fields) == reference(_with_int_levels(fields))
    if name == "sensor_msgs/msg/JointState":
        empty = {**fields, "name": [], "position": [], "velocity": [], "effort": []}
        assert encoder.encode(name, empty) == reference(empty)
        odd = {**fields, "name": ["abc"], "position": [1.0], "velocity": [], "effort": [2.0]}
        assert encoder.encode(name, odd) == reference(odd)
    assert encoder.encode("std_msgs/msg/String", {"data": "x"}) is None
