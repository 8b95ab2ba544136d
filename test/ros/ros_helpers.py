"""Helpers shared by the ROS 2 node tests (imported by the test files, not collected)."""

import os
import time

import rclpy
from ament_index_python.packages import get_package_share_directory
from launch_ros.actions import Node

PACKAGE = "biped_contact_sim"
SHARE = get_package_share_directory(PACKAGE)


def share_file(*parts: str) -> str:
    return os.path.join(SHARE, *parts)


def simulator_node(**parameters) -> Node:
    """The simulator node with the robot and node params files, plus ``parameters``."""
    robot = parameters.get("robot_config", "biped3d")
    return Node(
        package=PACKAGE,
        executable="simulator_node",
        name="simulator",
        output="screen",
        parameters=[share_file("config", f"{robot}.yaml"),
                    share_file("config", "sim_node.yaml"), parameters],
        additional_env={"PYTHONUNBUFFERED": "1", "OPENBLAS_NUM_THREADS": "1"},
    )


def controller_node(**parameters) -> Node:
    robot = parameters.get("robot_config", "biped3d")
    return Node(
        package=PACKAGE,
        executable="controller_node",
        name="controller",
        output="screen",
        parameters=[share_file("config", f"{robot}.yaml"),
                    share_file("config", "controller_node.yaml"), parameters],
        additional_env={"PYTHONUNBUFFERED": "1", "OPENBLAS_NUM_THREADS": "1"},
    )


def stamp_ns(msg) -> int:
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


def spin_until(node, condition, timeout: float) -> bool:
    """Spin ``node`` until ``condition()`` holds or ``timeout`` wall seconds pass."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return True
        rclpy.spin_once(node, timeout_sec=0.05)
    return condition()


def call(node, client, request, timeout: float = 10.0):
    """Call a service and return its response (None on timeout)."""
    if not client.wait_for_service(timeout_sec=timeout):
        return None
    future = client.call_async(request)
    rclpy.spin_until_future_complete(node, future, timeout_sec=timeout)
    return future.result()
