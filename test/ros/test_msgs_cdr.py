"""One CDR encoder for the trace and the nodes (biped_contact_sim/msgs/cdr.py): the bytes the
trace writes for a message are the bytes the nodes publish for it, and both are the bytes rclpy's
own serializer makes (but for the alignment padding, which Fast CDR leaves unwritten and we
zero); rclpy's deserializer reads back the message the field builders describe."""

import warnings

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PointStamped, TransformStamped, WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.serialization import deserialize_message, serialize_message
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from test_nodes_writers import as_data

from biped_contact_sim.msgs import cdr, messages, topics
from biped_contact_sim.msgs.messages import fill_message
from biped_contact_sim.record.mcap_writer import McapTraceWriter
from biped_contact_sim.ros import params, sim_session
from biped_contact_sim.ros.writers import CommandWriter, StateWriter

try:  # not among the wheels of requirements-ros.txt (TF broadcasting is optional)
    from tf2_msgs.msg import TFMessage
except ImportError:
    TFMessage = None

CLASSES = {"sensor_msgs/msg/JointState": JointState, "nav_msgs/msg/Odometry": Odometry,
           "tf2_msgs/msg/TFMessage": TFMessage,
           "geometry_msgs/msg/WrenchStamped": WrenchStamped,
           "geometry_msgs/msg/PointStamped": PointStamped, "rosgraph_msgs/msg/Clock": Clock,
           "diagnostic_msgs/msg/DiagnosticArray": DiagnosticArray}
FACTORIES = {"transforms": TransformStamped, "status": DiagnosticStatus, "values": KeyValue}


def built_messages():
    """Field dicts of every type the encoder writes, from the builders (odd lengths of names
    and frames, so that every alignment is exercised)."""
    m = messages
    status = m.diagnostic_status(m.DIAG_ERROR, "biped_contact_sim: simulator", "diverged",
                                 "biped3d", {"steps": 12, "fell": True, "dt_s": 1e-3})
    return {
        "sensor_msgs/msg/JointState": m.joint_state(
            1.5, ["l_hip", "knee", "é"], [0.1, -0.2, 0.3], [1.0, 2.0, 3.0], [-4.0, 5.0, 6.5]),
        "nav_msgs/msg/Odometry": m.odometry(2.25, "world", "pelvis", [1.0, 2.0, 3.0],
                                            [0.0, 0.0, 0.6, 0.8], [0.1, 0.2, 0.3],
                                            [-0.1, -0.2, -0.3]),
        "tf2_msgs/msg/TFMessage": m.tf_message([
            m.transform_stamped(0.001, "world", "base", [0.0, 0.1, 0.87], [0, 0, 0, 1]),
            m.transform_stamped(0.002, "base", "l_hip_yaw_link", [0.0, 0.1, -0.05],
                                [0.0, 0.0, 0.38268343, 0.92387953])]),
        "geometry_msgs/msg/WrenchStamped": m.wrench_stamped(3.0, "l_sole", [1.0, -2.0, 3.5],
                                                            [0.1, 0.2, -0.3]),
        "geometry_msgs/msg/PointStamped": m.point_stamped(4.0, "world", [0.5, -0.25, 0.0]),
        "rosgraph_msgs/msg/Clock": m.clock(12.345678901),
        "diagnostic_msgs/msg/DiagnosticArray": m.diagnostic_array(5.0, [status, status]),
    }


@pytest.mark.parametrize("datatype", list(CLASSES))
def test_encoder_bytes_are_rclpys_and_read_back_by_rclpy(datatype):
    """A message built by msgs/: ``deserialize_message`` of our bytes is the rclpy message the
    fields fill, and our bytes are ``serialize_message``'s of it: the same length, and where
    they differ ours are zero (padding: rclpy's are whatever its buffer held)."""
    fields = built_messages()[datatype]
    msg_class = CLASSES[datatype]
    if msg_class is None:
        pytest.skip(f"{datatype}: no message package (test_messages checks its bytes against "
                    "mcap_ros2's encoder)")
    reference = fill_message(msg_class(), fields, FACTORIES)
    data = cdr.FieldEncoder().encode(datatype, fields)
    assert as_data(deserialize_message(data, msg_class)) == as_data(reference)
    theirs = serialize_message(reference)
    assert len(data) == len(theirs)
    assert all(ours == 0 for ours, rclpy in zip(data, theirs, strict=True) if ours != rclpy)


def test_every_per_period_topic_has_an_encoder():
    encoder = cdr.FieldEncoder()
    for name, entry in topics.TOPICS.items():
        if entry.per_period:
            assert entry.type in encoder.types, name


@pytest.fixture(scope="module")
def session():
    config = params.sim_config({"real_time_factor": 0.0})
    s = sim_session.SimSession(sim_session.build_world(config), config)
    for _ in range(30):
        s.tick(max_periods=1)
    return s


def trace_bytes(tmp_path, written):
    """Write ``(topic, fields)`` pairs with the trace's writer; the raw data of each message."""
    from mcap.reader import make_reader

    path = tmp_path / "same.mcap"
    with McapTraceWriter(path) as writer:
        for topic, fields in written:
            writer.write(topics.absolute(topic), topics.topic(topic).type, fields, 1.0)
    with open(path, "rb") as f, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return {channel.topic: message.data
                for _, channel, message in make_reader(f).iter_messages()}


def test_trace_and_nodes_write_the_same_bytes(session, tmp_path):
    """The simulator node's serialized state (StateWriter) and the controller's command
    (CommandWriter) are, byte for byte, what the trace writes for the same fields."""
    robot = session.robot
    state = StateWriter(robot.actuated_joint_names, session.config.world_frame,
                        robot.base_link, [b.frame for b in robot.contact_bodies])
    nodes = state.write(session.sample())
    fields = session.measurement_fields()
    assert len(nodes) == len(fields)
    tau = np.linspace(-3.0, 4.0, robot.n_joints)
    command = messages.joint_state(0.0, robot.actuated_joint_names, None, None, tau)
    command["header"]["stamp"] = {"sec": 17, "nanosec": 42}
    nodes.append(CommandWriter(robot.actuated_joint_names).write(17 * 10**9 + 42, tau))
    fields.append((topics.JOINT_TORQUE_CMD, command))
    trace = trace_bytes(tmp_path, fields)
    for (topic, _), data in zip(fields, nodes, strict=True):
        assert trace[topics.absolute(topic)] == data, topic
