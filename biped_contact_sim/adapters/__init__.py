"""Adapters: command line, MCAP recorder, ROS 2 message conversion and nodes."""
