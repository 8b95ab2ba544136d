"""Recording: the recorder (summary, time series, MCAP trace), the MCAP writer, ROS 2 message
definitions and the one conversion from simulator arrays to message fields (no rclpy)."""
