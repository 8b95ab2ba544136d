"""ROS 2 layer: the simulator and controller nodes and the logic they wire (tested without ROS
too)."""
