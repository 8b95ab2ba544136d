"""The ROS files agree with the code: launch files, RViz config, setup.py and package.xml."""

import py_compile

import pytest
import yaml
from ros_logic_helpers import ROOT

# ------------------------------------------------------------------------------ ROS files


@pytest.mark.parametrize("path", [
    "biped_contact_sim/ros/sim_node.py", "biped_contact_sim/ros/controller_node.py",
    "launch/sim.launch.py", "launch/hardware.launch.py",
    *(str(p.relative_to(ROOT)) for p in sorted((ROOT / "test/ros").glob("*.py")))])
def test_ros_files_byte_compile(path, tmp_path):
    py_compile.compile(str(ROOT / path), cfile=str(tmp_path / "out.pyc"), doraise=True)


def test_launch_arguments_are_described():
    for name in ("sim.launch.py", "hardware.launch.py"):
        text = (ROOT / "launch" / name).read_text()
        assert "DeclareLaunchArgument(name, default_value=default, description=description)" \
            in text
    sim = (ROOT / "launch/sim.launch.py").read_text()
    for arg in ("robot", "contact_model", "controller", "behavior", "rviz", "lockstep",
                "use_sim_time"):
        assert f'("{arg}", ' in sim


def test_rviz_config_shows_the_contact_topics():
    config = yaml.safe_load((ROOT / "config/biped.rviz").read_text())
    manager = config["Visualization Manager"]
    assert manager["Global Options"]["Fixed Frame"] == "world"
    by_class = {}
    for display in manager["Displays"]:
        by_class.setdefault(display["Class"], []).append(display.get("Topic", {}).get("Value"))
    assert "rviz_default_plugins/RobotModel" in by_class
    assert "rviz_default_plugins/TF" in by_class
    assert by_class["rviz_default_plugins/MarkerArray"] == ["/contact_markers"]
    assert sorted(by_class["rviz_default_plugins/Wrench"]) == [  # the humanoid's hands too
        "/contact_wrench/left_foot", "/contact_wrench/left_hand",
        "/contact_wrench/right_foot", "/contact_wrench/right_hand"]
    assert sorted(by_class["rviz_default_plugins/PointStamped"]) == [
        "/cop/left_foot", "/cop/right_foot", "/zmp"]


def test_setup_installs_the_ros_files_and_entry_points():
    text = (ROOT / "setup.py").read_text()
    assert 'glob("launch/*.launch.py")' in text and 'glob("config/*.rviz")' in text
    assert "simulator_node = biped_contact_sim.ros.entry:simulator" in text
    assert "controller_node = biped_contact_sim.ros.entry:controller" in text
    assert 'install_requires=["setuptools"]' in text
    xml = (ROOT / "package.xml").read_text()
    for key in ("rclpy", "sensor_msgs", "geometry_msgs", "nav_msgs", "visualization_msgs",
                "rosgraph_msgs", "std_msgs", "std_srvs", "tf2_ros", "rcl_interfaces",
                "diagnostic_msgs", "launch", "launch_ros", "robot_state_publisher", "rviz2",
                "pinocchio", "python3-numpy", "python3-scipy"):
        assert f"depend>{key}</" in xml, key
    for key in ("launch_testing", "launch_testing_ros"):
        assert f"<test_depend>{key}</test_depend>" in xml
