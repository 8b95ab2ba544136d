"""Simulator + controller + robot_state_publisher (+ RViz).

    ros2 launch biped_contact_sim sim.launch.py contact_model:=gauss_seidel controller:=wbc \
        behavior:=sway rviz:=true lockstep:=true

The simulator and the controller read config/<robot>.yaml (the robot file biped-sim reads, a
ROS params file) and their own config/sim_node.yaml / config/controller_node.yaml; the launch
arguments override those. robot_state_publisher gets the URDF text from urdf/<robot>.urdf.
"""

from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import Command, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription

PACKAGE = "biped_contact_sim"

ARGUMENTS = [
    ("robot", "biped3d", "Robot: config/<robot>.yaml and urdf/<robot>.urdf of this package"),
    ("scenario", "stand", "Scenario giving terrain, initial state and contact defaults "
     "(biped-sim list)"),
    ("contact_model", "penalty_fl", "Contact model of the simulator (spring_damper, penalty_fl, "
     "gauss_seidel, time_stepping, acceleration_lcp); settable at run time with ros2 param set"),
    ("controller", "wbc", "Controller: ctc (computed torque) or wbc (whole-body with internal "
     "forces)"),
    ("behavior", "stand", "Behaviour of the controller: stand, sway, walk or planar_walk"),
    ("rviz", "false", "Start RViz with config/biped.rviz"),
    ("lockstep", "false", "Deterministic closed loop: the simulator advances one control "
     "period per command"),
    ("real_time_factor", "1.0", "Simulated seconds per wall second; 0 = as fast as possible "
     "(use with lockstep:=true when a controller runs)"),
    ("use_sim_time", "true", "Controller, robot_state_publisher and RViz follow the "
     "simulator's /clock"),
]


def generate_launch_description():
    share = FindPackageShare(PACKAGE)
    robot = LaunchConfiguration("robot")
    use_sim_time = ParameterValue(LaunchConfiguration("use_sim_time"), value_type=bool)
    # Lists of substitutions are concatenated into one path (works on Humble and Jazzy).
    robot_yaml = [PathJoinSubstitution([share, "config"]), "/", robot, ".yaml"]
    urdf_file = [PathJoinSubstitution([share, "urdf"]), "/", robot, ".urdf"]
    robot_description = ParameterValue(Command(["cat ", *urdf_file]), value_type=str)

    simulator = Node(
        package=PACKAGE,
        executable="simulator_node",
        name="simulator",
        output="screen",
        parameters=[
            robot_yaml,
            PathJoinSubstitution([share, "config", "sim_node.yaml"]),
            {
                "robot_config": robot,
                "scenario": LaunchConfiguration("scenario"),
                "contact_model": LaunchConfiguration("contact_model"),
                "lockstep": ParameterValue(LaunchConfiguration("lockstep"), value_type=bool),
                "real_time_factor": ParameterValue(LaunchConfiguration("real_time_factor"),
                                                   value_type=float),
            },
        ],
    )
    controller = Node(
        package=PACKAGE,
        executable="controller_node",
        name="controller",
        output="screen",
        parameters=[
            robot_yaml,
            PathJoinSubstitution([share, "config", "controller_node.yaml"]),
            {
                "robot_config": robot,
                "controller": LaunchConfiguration("controller"),
                "behavior": LaunchConfiguration("behavior"),
                "sync": "exact",
                "use_sim_time": use_sim_time,
            },
        ],
    )
    state_publisher = Node(
        package="robot_state_publisher",
        executable="robot_state_publisher",
        output="screen",
        parameters=[{"robot_description": robot_description, "use_sim_time": use_sim_time}],
    )
    rviz = Node(
        package="rviz2",
        executable="rviz2",
        output="screen",
        arguments=["-d", PathJoinSubstitution([share, "config", "biped.rviz"])],
        parameters=[{"use_sim_time": use_sim_time}],
        condition=IfCondition(LaunchConfiguration("rviz")),
    )
    return LaunchDescription([
        *(DeclareLaunchArgument(name, default_value=default, description=description)
          for name, default, description in ARGUMENTS),
        simulator,
        controller,
        state_publisher,
        rviz,
    ])
