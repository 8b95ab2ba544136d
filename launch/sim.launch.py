"""Simulator + controller + robot_state_publisher (+ RViz).

    ros2 launch biped_contact_sim sim.launch.py contact_model:=gauss_seidel controller:=wbc \
        behavior:=sway rviz:=true

The default is the closed loop in lockstep with real-time pacing: the simulator advances one
control period per command answering its last state, never faster than the wall clock, and
slower (its achieved real-time factor in /diagnostics) when the controller cannot keep up —
never on a stale torque. lockstep:=false runs the simulator free: it waits for late commands
(max_command_delay) and holds at t = 0 until the controller's first command.

The simulator and the controller read config/<robot>.yaml (the robot file biped-sim reads, a ROS
params file) and their own config/sim_node.yaml / config/controller_node.yaml; the launch
arguments come last and win (every file is keyed /**; the nodes are given their namespace, so
launch_ros keys the arguments by the node's full name). robot_state_publisher gets the URDF text
of urdf/<robot>.urdf.
"""

from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition, UnlessCondition
from launch.substitutions import Command, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from biped_contact_sim.ros.params import ControllerNodeConfig, SimNodeConfig  # the defaults
from launch import LaunchDescription

PACKAGE = "biped_contact_sim"

ARGUMENTS = [
    ("robot", "biped3d", "Robot: config/<robot>.yaml and urdf/<robot>.urdf of this package"),
    ("scenario", SimNodeConfig.scenario, "Scenario giving terrain, initial state and contact "
     "defaults (biped-sim list); walk for behavior:=walk"),
    ("world", "", "World file of geometry contacts (config/worlds/<name>.yaml or a path); empty: "
     "the scenario's"),
    ("contacts", "", "Contact points: points (the sole points) or geometry (every collision "
     "geometry against the world); empty: the scenario's default"),
    ("contact_model", SimNodeConfig.contact_model, "Contact model of the simulator "
     "(spring_damper, penalty_fl, gauss_seidel, time_stepping, acceleration_lcp); settable at run "
     "time with ros2 param set"),
    ("controller", ControllerNodeConfig.controller, "Controller: ctc (computed torque) or wbc "
     "(whole-body with internal forces)"),
    ("behavior", ControllerNodeConfig.behavior, "Behaviour of the controller: stand, sway, "
     "walk or planar_walk (the humanoid's: lean_on_table, multicontact)"),
    ("rviz", "false", "Start RViz with config/biped.rviz"),
    ("lockstep", "true", "The simulator advances one control period per command answering its "
     "last state (deterministic); false: free running, waiting for late commands"),
    ("real_time_factor", "1.0", "Simulated seconds per wall second at most; 0 = as fast as "
     "possible (deterministic with lockstep:=true)"),
    ("use_sim_time", "true", "robot_state_publisher and RViz follow the simulator's /clock (the "
     "controller is stamped by its measurements and needs no clock)"),
    ("composed", "true", "Simulator and controller in one process (composed_node: the same "
     "nodes, topics and parameters; the state and the command pass in process); false: two "
     "processes talking over DDS, as a controller and a robot's driver do"),
]


def generate_launch_description():
    share = FindPackageShare(PACKAGE)
    robot = LaunchConfiguration("robot")
    use_sim_time = ParameterValue(LaunchConfiguration("use_sim_time"), value_type=bool)
    # Lists of substitutions are concatenated into one path (works on Humble and Jazzy).
    robot_yaml = [PathJoinSubstitution([share, "config"]), "/", robot, ".yaml"]
    urdf_file = [PathJoinSubstitution([share, "urdf"]), "/", robot, ".urdf"]
    robot_description = ParameterValue(Command(["cat ", *urdf_file]), value_type=str)

    composed = LaunchConfiguration("composed")
    sim_values = {
        "robot_config": robot,
        "scenario": LaunchConfiguration("scenario"),
        # value_type str: an empty launch argument would be read as YAML null
        "world": ParameterValue(LaunchConfiguration("world"), value_type=str),
        "contacts": ParameterValue(LaunchConfiguration("contacts"), value_type=str),
        "contact_model": LaunchConfiguration("contact_model"),
        "lockstep": ParameterValue(LaunchConfiguration("lockstep"), value_type=bool),
        "real_time_factor": ParameterValue(LaunchConfiguration("real_time_factor"),
                                           value_type=float),
        "wait_for_first_command": True,
    }
    controller_values = {
        "robot_config": robot,
        "controller": LaunchConfiguration("controller"),
        "behavior": LaunchConfiguration("behavior"),
        "sync": "exact",
    }
    simulator = Node(
        package=PACKAGE,
        executable="simulator_node",
        name="simulator",
        namespace="",
        output="screen",
        parameters=[robot_yaml, PathJoinSubstitution([share, "config", "sim_node.yaml"]),
                    sim_values],
        condition=UnlessCondition(composed),
    )
    controller = Node(
        package=PACKAGE,
        executable="controller_node",
        name="controller",
        namespace="",
        output="screen",
        parameters=[robot_yaml, PathJoinSubstitution([share, "config", "controller_node.yaml"]),
                    controller_values],
        condition=UnlessCondition(composed),
    )
    # One process, both nodes: no name remapping (it would rename both), so the parameters are
    # keyed /** and each node takes its own (the two files agree on the keys they share).
    both = Node(
        package=PACKAGE,
        executable="composed_node",
        namespace="",
        output="screen",
        parameters=[robot_yaml, PathJoinSubstitution([share, "config", "sim_node.yaml"]),
                    PathJoinSubstitution([share, "config", "controller_node.yaml"]),
                    {**sim_values, **controller_values}],
        condition=IfCondition(composed),
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
        simulator,
        controller,
        both,
        state_publisher,
        rviz,
    ])
