"""The topic table: every topic the nodes and the trace share, its message type and QoS.

Names are relative (``joint_states``) where the nodes publish them relative, so that a
namespace moves them all; in the root namespace and in ``trace.mcap`` they are absolute
(:func:`absolute`). ``{foot}`` stands for a contact body's name (``contact_wrench/left_foot``).
docs/architecture.md "Topics" describes their contents.

Each topic has one :class:`Topic` entry in :data:`TOPICS`: its ROS 2 message type (the schema
name of :mod:`.msgdefs` and the key of :mod:`.cdr`'s encoders), whether it is sent every control
period (serialized by :mod:`.cdr` templates on the nodes' per-period path), and whether it is
latched (transient-local: a late subscriber still gets the last message).
"""

from __future__ import annotations

from dataclasses import dataclass

# The interface of docs/architecture.md "Topics".
JOINT_TORQUE_CMD = "joint_torque_cmd"
JOINT_STATES = "joint_states"
ODOM = "odom"
CONTACT_WRENCH = "contact_wrench/{foot}"
COP = "cop/{foot}"
ZMP = "zmp"
CONTACT_MARKERS = "contact_markers"
CLOCK = "/clock"
TF = "/tf"
TF_STATIC = "/tf_static"
ROBOT_DESCRIPTION = "/robot_description"
DIAGNOSTICS = "/diagnostics"  # the ROS convention (diagnostic_aggregator, rqt_robot_monitor)
# Controller diagnostics, private to the controller node (``~/com`` → /controller_node/com).
COM = "~/com"
COM_REF = "~/com_ref"
INTERNAL_FORCES = "~/internal_forces"
INTERNAL_FORCES_REF = "~/internal_forces_ref"

WORLD_FRAME = "world"  # fixed frame of odom, TF, CoPs, ZMP and markers
# DiagnosticStatus names of the two nodes (the trace's /diagnostics is the simulator's).
SIM_STATUS_NAME = "biped_contact_sim: simulator"
CONTROLLER_STATUS_NAME = "biped_contact_sim: controller"


@dataclass(frozen=True)
class Topic:
    """A row of the topic table.

    Attributes:
        type: ROS 2 message type, ``pkg/msg/Name``.
        per_period: Sent once per control period (the measurement and the command).
        latched: Transient-local durability (else volatile).
    """

    type: str
    per_period: bool = False
    latched: bool = False


TOPICS: dict[str, Topic] = {
    JOINT_TORQUE_CMD: Topic("sensor_msgs/msg/JointState", per_period=True),
    JOINT_STATES: Topic("sensor_msgs/msg/JointState", per_period=True),
    ODOM: Topic("nav_msgs/msg/Odometry", per_period=True),
    CONTACT_WRENCH: Topic("geometry_msgs/msg/WrenchStamped", per_period=True),
    CLOCK: Topic("rosgraph_msgs/msg/Clock", per_period=True),
    COP: Topic("geometry_msgs/msg/PointStamped"),
    ZMP: Topic("geometry_msgs/msg/PointStamped"),
    CONTACT_MARKERS: Topic("visualization_msgs/msg/MarkerArray"),
    TF: Topic("tf2_msgs/msg/TFMessage"),
    TF_STATIC: Topic("tf2_msgs/msg/TFMessage", latched=True),
    ROBOT_DESCRIPTION: Topic("std_msgs/msg/String", latched=True),
    DIAGNOSTICS: Topic("diagnostic_msgs/msg/DiagnosticArray"),
    COM: Topic("geometry_msgs/msg/PointStamped"),
    COM_REF: Topic("geometry_msgs/msg/PointStamped"),
    INTERNAL_FORCES: Topic("std_msgs/msg/Float64MultiArray"),
    INTERNAL_FORCES_REF: Topic("std_msgs/msg/Float64MultiArray"),
}


def absolute(topic: str) -> str:
    """The name a topic gets in the root namespace: ``joint_states`` → ``/joint_states``."""
    return topic if topic.startswith("/") else "/" + topic


def topic(name: str) -> Topic:
    """The table entry of a topic name, relative or absolute, with ``{foot}`` filled in
    (``/contact_wrench/left_foot`` → the ``contact_wrench/{foot}`` entry).

    Raises:
        KeyError: The name is not in the table (the message lists the table's names).
    """
    relative = name[1:] if name.startswith("/") and name not in TOPICS else name
    for key in (name, relative):
        if key in TOPICS:
            return TOPICS[key]
    for key, entry in TOPICS.items():
        head, sep, _ = key.partition("{foot}")
        if sep and relative.startswith(head) and "/" not in relative[len(head):] \
                and len(relative) > len(head):
            return entry
    raise KeyError(f"Unknown topic {name!r}; the topics are {', '.join(TOPICS)}")
