"""ROS 2 messages without ROS 2 (docs/architecture.md layer "msgs"): the topic table, the
message builders and definitions, the one CDR encoder of the trace and the nodes, the TF."""
