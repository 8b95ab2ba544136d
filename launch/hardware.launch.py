"""Controller + robot_state_publisher (+ RViz) against a hardware driver, no simulator.

    ros2 launch biped_contact_sim hardware.launch.py robot:=biped3d controller:=wbc

The driver (and a state estimator) must provide the topics of README "Using it with ROS 2":
joint_states (position and velocity of every actuated joint), odom (base pose in the world,
twist in the base frame), contact_wrench/<foot> (sole frame, about the sole origin), and apply
joint_torque_cmd (name + effort, stamped with the measurement it answers), with its own
watchdog. The controller (sync:=latest) computes on the newest messages as soon as a state is
whole, or on its timer when the driver's topics carry different stamps.

Launch arguments come after the params files and win (see sim.launch.py).
"""

from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import Command, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from biped_contact_sim.ros.params import ControllerNodeConfig  # the defaults
from launch import LaunchDescription

PACKAGE = "biped_contact_sim"

ARGUMENTS = [
    ("robot", "biped3d", "Robot: config/<robot>.yaml and urdf/<robot>.urdf of this package"),
    ("controller", ControllerNodeConfig.controller, "Controller: ctc (computed torque) or wbc "
     "(whole-body with internal forces)"),
    ("behavior", ControllerNodeConfig.behavior, "Behaviour of the controller: stand, sway, "
     "walk or planar_walk"),
    ("sync", "latest", "latest: the newest messages, as soon as they share a stamp, else on a "
     "control timer; exact: once per stamp when all inputs share it"),
    ("control_period", "0.001", "Control period [s]"),
    ("rviz", "false", "Start RViz with config/biped.rviz"),
    ("use_sim_time", "false", "Use /clock (true only when replaying a bag with --clock)"),
]


def generate_launch_description():
    share = FindPackageShare(PACKAGE)
    robot = LaunchConfiguration("robot")
    use_sim_time = ParameterValue(LaunchConfiguration("use_sim_time"), value_type=bool)
    robot_yaml = [PathJoinSubstitution([share, "config"]), "/", robot, ".yaml"]
    urdf_file = [PathJoinSubstitution([share, "urdf"]), "/", robot, ".urdf"]
    robot_description = ParameterValue(Command(["cat ", *urdf_file]), value_type=str)

    controller = Node(
        package=PACKAGE,
        executable="controller_node",
        name="controller",
        namespace="",
        output="screen",
        parameters=[
            robot_yaml,
            PathJoinSubstitution([share, "config", "controller_node.yaml"]),
            {
                "robot_config": robot,
                "controller": LaunchConfiguration("controller"),
                "behavior": LaunchConfiguration("behavior"),
                "sync": LaunchConfiguration("sync"),
                "control_period": ParameterValue(LaunchConfiguration("control_period"),
                                                 value_type=float),
                "use_sim_time": use_sim_time,
            },
        ],
    )
    state_publisher = Node(
        package="robot_state_publisher",
        executable="robot_state_publisher",
        namespace="",
        output="screen",
        parameters=[{"robot_description": robot_description, "use_sim_time": use_sim_time}],
    )
    rviz = Node(
        package="rviz2",
        executable="rviz2",
        namespace="",
        output="screen",
        arguments=["-d", PathJoinSubstitution([share, "config", "biped.rviz"])],
        parameters=[{"use_sim_time": use_sim_time}],
        condition=IfCondition(LaunchConfiguration("rviz")),
    )
    return LaunchDescription([
        *(DeclareLaunchArgument(name, default_value=default, description=description)
          for name, default, description in ARGUMENTS),
        controller,
        state_publisher,
        rviz,
    ])
