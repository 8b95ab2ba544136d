"""ROS 2 message definitions (``.msg`` texts) for the MCAP recorder, and their full schemas.

The texts are those of ROS 2 Jazzy with the comments and blank lines stripped; field types,
names, default values, constants and array bounds are unchanged. Sources:

* ``builtin_interfaces/{Time,Duration}`` and ``rosgraph_msgs/Clock``: ros2/rcl_interfaces.
* ``visualization_msgs/{Marker,MarkerArray,UVCoordinate,MeshFile}``, ``std_msgs/{Header,
  ColorRGBA}``, ``geometry_msgs/{Point,Quaternion,Pose,Vector3,Twist,Transform,
  TransformStamped}`` and ``sensor_msgs/CompressedImage``: the Jazzy snapshot in
  foxglove/rosmsg-msgs-common (``msgdefs/ros2jazzy``), checked against ros2/common_interfaces.
* ``std_msgs/String``, ``nav_msgs/Odometry``, ``diagnostic_msgs/{DiagnosticArray,
  DiagnosticStatus,KeyValue}``: ros2/common_interfaces.
* ``geometry_msgs/{Wrench,WrenchStamped,PointStamped,PoseWithCovariance,TwistWithCovariance}``,
  ``sensor_msgs/JointState`` and ``tf2_msgs/TFMessage`` (ros2/geometry2): the ROS 2 API
  documentation pages of these files (unchanged since Foxy).

Jazzy-specific details that differ from other distributions: ``Marker`` has the constant
``ARROW_STRIP=12`` (added in common_interfaces 5.3.3, absent from Humble's 4.x), and
``UVCoordinate`` is ``float32 u, v`` (Rolling changed it to ``float64``); Humble's ``Marker``
already has ``texture_resource``, ``texture``, ``uv_coordinates``, ``mesh_file`` and
``mesh_use_embedded_materials``. Rolling's ``ColorRGBA`` gives ``a`` the default 1; Jazzy's
has no default.

:func:`full_definition` concatenates a definition with those of its dependencies the way
rosbag2 does for the ``ros2msg`` schema encoding (``LocalMessageDefinitionSource::get_full_text``
in rosbag2_cpp): the main text, then, depth first and each dependency once (the dependencies of
one text in sorted order), a newline, a line of 80 ``=``, a line ``MSG: pkg/Name`` and the
dependency's text followed by its own dependencies. mcap_ros2 parses exactly this layout.
"""

import re
from collections.abc import Mapping
from types import MappingProxyType

SEPARATOR = "=" * 80

_DEFINITIONS: dict[str, str] = {
    "builtin_interfaces/Duration": "int32 sec\nuint32 nanosec\n",
    "builtin_interfaces/Time": "int32 sec\nuint32 nanosec\n",
    "diagnostic_msgs/DiagnosticArray": "std_msgs/Header header\nDiagnosticStatus[] status\n",
    "diagnostic_msgs/DiagnosticStatus": (
        "byte OK=0\n"
        "byte WARN=1\n"
        "byte ERROR=2\n"
        "byte STALE=3\n"
        "byte level\n"
        "string name\n"
        "string message\n"
        "string hardware_id\n"
        "KeyValue[] values\n"
    ),
    "diagnostic_msgs/KeyValue": "string key\nstring value\n",
    "geometry_msgs/Point": "float64 x\nfloat64 y\nfloat64 z\n",
    "geometry_msgs/PointStamped": "std_msgs/Header header\nPoint point\n",
    "geometry_msgs/Pose": "Point position\nQuaternion orientation\n",
    "geometry_msgs/PoseWithCovariance": "Pose pose\nfloat64[36] covariance\n",
    "geometry_msgs/Quaternion": "float64 x 0\nfloat64 y 0\nfloat64 z 0\nfloat64 w 1\n",
    "geometry_msgs/Transform": "Vector3 translation\nQuaternion rotation\n",
    "geometry_msgs/TransformStamped": (
        "std_msgs/Header header\nstring child_frame_id\nTransform transform\n"
    ),
    "geometry_msgs/Twist": "Vector3  linear\nVector3  angular\n",
    "geometry_msgs/TwistWithCovariance": "Twist twist\nfloat64[36] covariance\n",
    "geometry_msgs/Vector3": "float64 x\nfloat64 y\nfloat64 z\n",
    "geometry_msgs/Wrench": "Vector3  force\nVector3  torque\n",
    "geometry_msgs/WrenchStamped": "std_msgs/Header header\nWrench wrench\n",
    "nav_msgs/Odometry": (
        "std_msgs/Header header\n"
        "string child_frame_id\n"
        "geometry_msgs/PoseWithCovariance pose\n"
        "geometry_msgs/TwistWithCovariance twist\n"
    ),
    "rosgraph_msgs/Clock": "builtin_interfaces/Time clock\n",
    "sensor_msgs/CompressedImage": "std_msgs/Header header\nstring format\nuint8[] data\n",
    "sensor_msgs/JointState": (
        "std_msgs/Header header\n"
        "string[] name\n"
        "float64[] position\n"
        "float64[] velocity\n"
        "float64[] effort\n"
    ),
    "std_msgs/ColorRGBA": "float32 r\nfloat32 g\nfloat32 b\nfloat32 a\n",
    "std_msgs/Header": "builtin_interfaces/Time stamp\nstring frame_id\n",
    "std_msgs/String": "string data\n",
    "tf2_msgs/TFMessage": "geometry_msgs/TransformStamped[] transforms\n",
    "visualization_msgs/Marker": (
        "int32 ARROW=0\n"
        "int32 CUBE=1\n"
        "int32 SPHERE=2\n"
        "int32 CYLINDER=3\n"
        "int32 LINE_STRIP=4\n"
        "int32 LINE_LIST=5\n"
        "int32 CUBE_LIST=6\n"
        "int32 SPHERE_LIST=7\n"
        "int32 POINTS=8\n"
        "int32 TEXT_VIEW_FACING=9\n"
        "int32 MESH_RESOURCE=10\n"
        "int32 TRIANGLE_LIST=11\n"
        "int32 ARROW_STRIP=12\n"
        "int32 ADD=0\n"
        "int32 MODIFY=0\n"
        "int32 DELETE=2\n"
        "int32 DELETEALL=3\n"
        "std_msgs/Header header\n"
        "string ns\n"
        "int32 id\n"
        "int32 type\n"
        "int32 action\n"
        "geometry_msgs/Pose pose\n"
        "geometry_msgs/Vector3 scale\n"
        "std_msgs/ColorRGBA color\n"
        "builtin_interfaces/Duration lifetime\n"
        "bool frame_locked\n"
        "geometry_msgs/Point[] points\n"
        "std_msgs/ColorRGBA[] colors\n"
        "string texture_resource\n"
        "sensor_msgs/CompressedImage texture\n"
        "UVCoordinate[] uv_coordinates\n"
        "string text\n"
        "string mesh_resource\n"
        "MeshFile mesh_file\n"
        "bool mesh_use_embedded_materials\n"
    ),
    "visualization_msgs/MarkerArray": "Marker[] markers\n",
    "visualization_msgs/MeshFile": "string filename\nuint8[] data\n",
    "visualization_msgs/UVCoordinate": "float32 u\nfloat32 v\n",
}

# The ``.msg`` text of every bundled type, keyed by ``pkg/Name``.
MSG_DEFINITIONS: Mapping[str, str] = MappingProxyType(_DEFINITIONS)

# The same field-type pattern as rosbag2's MSG_FIELD_TYPE_REGEX, applied line by line.
_FIELD_TYPE = re.compile(r"^\s*([a-zA-Z0-9_/]+)(?:\[[^\]]*\])?\s+")
_PRIMITIVE_TYPES = frozenset(
    (
        "bool byte char float32 float64 int8 uint8 int16 uint16 int32 uint32 int64 uint64 string"
    ).split()
)


def normalize_datatype(datatype: str) -> str:
    """Return the ``pkg/Name`` form of a message type name.

    Args:
        datatype: ``pkg/Name`` or ``pkg/msg/Name``.

    Returns:
        The type name as ``pkg/Name``.

    Raises:
        KeyError: The type has no bundled definition.
    """
    parts = datatype.split("/")
    if len(parts) == 3 and parts[1] == "msg":
        parts = [parts[0], parts[2]]
    name = "/".join(parts)
    if name not in _DEFINITIONS:
        raise KeyError(
            f"No message definition for {datatype!r}. Bundled types: "
            + ", ".join(sorted(_DEFINITIONS))
        )
    return name


def schema_name(datatype: str) -> str:
    """Return the MCAP schema name rosbag2 uses for a type, ``pkg/msg/Name``.

    Args:
        datatype: ``pkg/Name`` or ``pkg/msg/Name``.

    Returns:
        The type name as ``pkg/msg/Name``.

    Raises:
        KeyError: The type has no bundled definition.
    """
    package, name = normalize_datatype(datatype).split("/")
    return f"{package}/msg/{name}"


def dependencies(datatype: str) -> list[str]:
    """Return the message types a definition refers to directly, sorted as rosbag2 sorts them.

    Args:
        datatype: ``pkg/Name`` or ``pkg/msg/Name``.

    Returns:
        The ``pkg/Name`` of every non-primitive field type, each once, in sorted order; a type
        without a package is resolved in the package of ``datatype``.

    Raises:
        KeyError: The type has no bundled definition.
    """
    name = normalize_datatype(datatype)
    package = name.split("/")[0]
    found: set[str] = set()
    for line in _DEFINITIONS[name].splitlines():
        match = _FIELD_TYPE.match(line)
        if match is None or match.group(1) in _PRIMITIVE_TYPES:
            continue
        field_type = match.group(1)
        found.add(field_type if "/" in field_type else f"{package}/{field_type}")
    return sorted(found)


def full_definition(datatype: str) -> str:
    """Return the concatenated ``ros2msg`` definition of a type, as rosbag2 writes it.

    Args:
        datatype: ``pkg/Name`` or ``pkg/msg/Name``.

    Returns:
        The definition of ``datatype`` followed by every dependency (recursively, each once),
        each introduced by a newline, a line of 80 ``=`` and a line ``MSG: pkg/Name``.

    Raises:
        KeyError: The type or one of its dependencies has no bundled definition.
    """
    seen: set[str] = set()

    def append_recursive(name: str) -> str:
        text = _DEFINITIONS[normalize_datatype(name)]
        for dep in dependencies(name):
            if dep not in seen:
                seen.add(dep)
                text += f"\n{SEPARATOR}\nMSG: {dep}\n" + append_recursive(dep)
        return text

    return append_recursive(datatype)
