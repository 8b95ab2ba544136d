"""Controller node: ``ros2 run biped_contact_sim controller_node``.

Reads only ``joint_states``, ``odom`` and ``contact_wrench/<foot>`` (so a hardware driver can
replace the simulator) and publishes ``joint_torque_cmd`` plus its diagnostics. Wiring only:
:class:`biped_contact_sim.ros.node_core.MeasurementAssembler` turns the messages into
pinocchio ``q``, ``v`` and sole wrenches, :class:`~biped_contact_sim.ros.node_core.
ControllerSession` runs the controller and builds the message fields.
"""

from __future__ import annotations

import sys

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PointStamped, WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from biped_contact_sim.record.messages import fill_message
from biped_contact_sim.ros import node_core as core
from biped_contact_sim.ros.sim_node import (
    declare,
    declare_robot_parameters,
    plain,
    spin_node,
)

NODE_NAME = "controller"
FACTORIES = {"status": DiagnosticStatus, "values": KeyValue, "dim": MultiArrayDimension}
REJECT_LOG_PERIOD = 1.0  # [s] throttle of the log lines about rejected input messages
WAITING_PERIOD = 1.0  # [s] period of the "waiting for ..." diagnostics before the first cycle
QOS_DEPTH = 10


class ControllerNode(Node):
    """Runs ``ctc`` or ``wbc`` with a behaviour on measured states (module docstring)."""

    def __init__(self):
        super().__init__(NODE_NAME)
        robot_values = declare_robot_parameters(self)
        values = {s.name: plain(declare(self, s)) for s in core.controller_parameter_specs()
                  if s.name not in robot_values}
        values.update({k: v for k, v in robot_values.items() if k != "robot_overrides"})
        self.config = core.controller_config(values)  # ConfigError: every bad value, named
        cfg = self.config
        self.robot = core.load_robot(cfg.robot_config, cfg.urdf_path, cfg.robot_description,
                                     robot_values["robot_overrides"])
        core.check_controller(self.robot, cfg)
        self.assembler = core.MeasurementAssembler(self.robot, cfg.sync, cfg.max_measurement_age)
        self.session = core.ControllerSession(self.robot, cfg)

        self.msg_types = {
            core.JOINT_TORQUE_CMD: JointState,
            core.COM: PointStamped,
            core.COM_REF: PointStamped,
            core.INTERNAL_FORCES: Float64MultiArray,
            core.INTERNAL_FORCES_REF: Float64MultiArray,
            core.DIAGNOSTICS: DiagnosticArray,
        }
        self.pubs = {topic: self.create_publisher(msg_type, topic, QOS_DEPTH)
                     for topic, msg_type in self.msg_types.items()}
        self.create_subscription(JointState, core.JOINT_STATES, self.on_joint_states, QOS_DEPTH)
        self.create_subscription(Odometry, core.ODOM, self.on_odom, QOS_DEPTH)
        for body in self.robot.contact_bodies:
            self.create_subscription(
                WrenchStamped, core.CONTACT_WRENCH.format(foot=body.name),
                lambda msg, foot=body.name: self.on_wrench(foot, msg), QOS_DEPTH)
        if cfg.sync == "latest":
            self.create_timer(cfg.control_period, self.run_cycle)
        self.create_timer(WAITING_PERIOD, self.on_waiting_timer)
        self.get_logger().info(
            f"Controller {cfg.controller!r}, behaviour {cfg.behavior!r} on {self.robot.name}, "
            f"control period {cfg.control_period:g} s, sync {cfg.sync!r}")

    @staticmethod
    def stamp(msg) -> int:
        return core.ns_from_stamp(msg.header.stamp.sec, msg.header.stamp.nanosec)

    def rejected(self, reason: str | None) -> None:
        if reason is not None:
            self.get_logger().error(f"Ignored input: {reason}",
                                    throttle_duration_sec=REJECT_LOG_PERIOD)
        elif self.config.sync == "exact":
            self.run_cycle()

    # ------------------------------------------------------------------ inputs
    def on_joint_states(self, msg: JointState) -> None:
        self.rejected(self.assembler.joint_state(self.stamp(msg), msg.name, msg.position,
                                                 msg.velocity))

    def on_odom(self, msg: Odometry) -> None:
        pose, twist = msg.pose.pose, msg.twist.twist
        p, o = pose.position, pose.orientation
        self.rejected(self.assembler.odometry(
            self.stamp(msg), (p.x, p.y, p.z), (o.x, o.y, o.z, o.w),
            (twist.linear.x, twist.linear.y, twist.linear.z),
            (twist.angular.x, twist.angular.y, twist.angular.z)))

    def on_wrench(self, foot: str, msg: WrenchStamped) -> None:
        f, t = msg.wrench.force, msg.wrench.torque
        self.rejected(self.assembler.wrench(foot, self.stamp(msg), (f.x, f.y, f.z),
                                            (t.x, t.y, t.z)))

    # ------------------------------------------------------------------ outputs
    def publish(self, topic: str, fields: dict) -> None:
        self.pubs[topic].publish(fill_message(self.msg_types[topic](), fields, FACTORIES))

    def run_cycle(self) -> None:
        """Compute and publish for every complete measurement not handled yet."""
        while (meas := self.assembler.pop()) is not None:
            cycle = self.session.step(meas)
            self.log_events()
            if cycle is None:
                continue
            self.publish(core.JOINT_TORQUE_CMD, cycle.command)
            for topic, fields in cycle.diagnostics:
                self.publish(topic, fields)

    def on_waiting_timer(self) -> None:
        if self.session.cycles == 0:
            missing = self.assembler.missing()
            self.publish(core.DIAGNOSTICS, self.session.waiting_status(
                self.get_clock().now().nanoseconds / 1e9, missing))
            self.get_logger().info("Waiting for " + ", ".join(missing),
                                   throttle_duration_sec=10.0)

    def log_events(self) -> None:
        """Log the session's events (one call site per severity, as rclpy needs)."""
        events, self.session.events = self.session.events, []
        for event in events:
            if event.severity == "error":
                self.get_logger().error(event.text, throttle_duration_sec=REJECT_LOG_PERIOD)
            elif event.severity == "warning":
                self.get_logger().warning(event.text)
            else:
                self.get_logger().info(event.text)


def main(args=None) -> int:
    """Entry point of ``ros2 run biped_contact_sim controller_node``."""
    return spin_node(ControllerNode, NODE_NAME, args)


if __name__ == "__main__":
    sys.exit(main())
