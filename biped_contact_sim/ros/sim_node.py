"""Simulator node: ``ros2 run biped_contact_sim simulator_node``.

Wiring only: parameters, publishers, subscription, timers and services are connected to
:class:`biped_contact_sim.ros.node_core.SimSession`, which holds every decision
(validation, watchdog, lockstep, pacing, contact-model switch) and builds the message fields
with :mod:`biped_contact_sim.record.messages`. Topics, parameters and diagnostics: README
"Using it with ROS 2".
"""

from __future__ import annotations

import sys
import time

import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Point, PointStamped, TransformStamped, WrenchStamped
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    SetParametersResult,
)
from rclpy.executors import ExternalShutdownException
from rclpy.logging import get_logger
from rclpy.node import Node
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_srvs.srv import SetBool, Trigger
from tf2_ros import TransformBroadcaster
from visualization_msgs.msg import Marker, MarkerArray

from biped_contact_sim.errors import ConfigError
from biped_contact_sim.record.messages import fill_message
from biped_contact_sim.robot.config import load_robot_config
from biped_contact_sim.ros import node_core as core

NODE_NAME = "simulator"
DESCRIPTOR_FACTORIES = {"floating_point_range": FloatingPointRange,
                        "integer_range": IntegerRange}
FACTORIES = {"markers": Marker, "points": Point, "status": DiagnosticStatus,
             "values": KeyValue}
REJECT_LOG_PERIOD = 1.0  # [s] throttle of the "rejected joint_torque_cmd" log line
LOCKSTEP_REPUBLISH = 1.0  # [s] re-send the awaited state for a controller that joined late
QOS_DEPTH = 10


def declare(node: Node, spec: core.ParamSpec):
    """Declare a parameter with its descriptor (description, units, range, read-only)."""
    descriptor = fill_message(ParameterDescriptor(), spec.descriptor_fields(),
                              DESCRIPTOR_FACTORIES)
    return node.declare_parameter(spec.name, spec.default, descriptor).value


def plain(value):
    """A parameter value as Python data (rclpy may return arrays as ``array.array``)."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
        return value
    return list(value)


def declare_robot_parameters(node: Node) -> dict:
    """Declare the common robot parameters and the read-only ``robot.*`` of the robot config.

    The ``robot.*`` defaults are the values of ``config/<robot>.yaml``; a params file passed by
    the launch (the same YAML file) may override them.
    """
    values = {s.name: declare(node, s) for s in core.common_robot_specs()}
    config = load_robot_config(values["robot_config"])
    overrides = {}
    for name, default in core.robot_parameters(config).items():
        spec = core.ParamSpec(name, default, "Robot config entry (from the robot YAML file)")
        overrides[name] = plain(declare(node, spec))
    values["robot_overrides"] = overrides
    return values


class SimulatorNode(Node):
    """Steps the simulator and publishes the topics of docs/architecture.md (see the module
    docstring)."""

    def __init__(self):
        super().__init__(NODE_NAME)
        if self.get_parameter("use_sim_time").value:
            self.get_logger().warning("use_sim_time is true, but this node publishes /clock: "
                                      "setting it to false")
            self.set_parameters([Parameter("use_sim_time", Parameter.Type.BOOL, False)])
        robot_values = declare_robot_parameters(self)
        scenario = declare(self, next(s for s in core.sim_parameter_specs()
                                      if s.name == "scenario"))
        values = {"scenario": scenario}
        for spec in core.sim_parameter_specs(scenario):
            if spec.name not in ("scenario", *robot_values):
                values[spec.name] = plain(declare(self, spec))
        values.update({k: v for k, v in robot_values.items() if k != "robot_overrides"})
        self.config = core.sim_config(values)  # ConfigError: every bad value, named
        world = core.build_world(self.config, robot_values["robot_overrides"])
        self.session = core.SimSession(world, self.config)
        self.robot = robot = world.robot

        self.msg_types = {
            core.CLOCK: Clock,
            core.JOINT_STATES: JointState,
            core.ODOM: Odometry,
            core.ZMP: PointStamped,
            core.CONTACT_MARKERS: MarkerArray,
            core.DIAGNOSTICS: DiagnosticArray,
        }
        for body in robot.contact_bodies:
            self.msg_types[core.CONTACT_WRENCH.format(foot=body.name)] = WrenchStamped
            self.msg_types[core.COP.format(foot=body.name)] = PointStamped
        self.pubs = {topic: self.create_publisher(msg_type, topic, QOS_DEPTH)
                     for topic, msg_type in self.msg_types.items()}
        self.tf = TransformBroadcaster(self)

        self.create_subscription(JointState, core.JOINT_TORQUE_CMD, self.on_command, QOS_DEPTH)
        self.create_service(Trigger, "~/reset", self.on_reset)
        self.create_service(SetBool, "~/pause", self.on_pause)
        cfg = self.config
        self.create_timer(min(max(cfg.control_period, 1e-3), 0.01), self.on_control_timer)
        self.create_timer(1.0 / cfg.publish_rate, self.on_visual_timer)
        self.create_timer(1.0 / cfg.diagnostics_rate, self.on_diagnostics_timer)
        self.add_on_set_parameters_callback(self.on_set_parameters)
        self.last_publish = time.monotonic()
        self.publish_state()
        self.get_logger().info(
            f"Simulating {robot.name} ({cfg.scenario}) with {cfg.contact_model}, dt = "
            f"{cfg.dt:g} s, control period {cfg.control_period:g} s, real-time factor "
            f"{cfg.real_time_factor:g}{', lockstep' if cfg.lockstep else ''}")

    # ------------------------------------------------------------------ publishing
    def publish(self, topic: str, fields: dict) -> None:
        self.pubs[topic].publish(fill_message(self.msg_types[topic](), fields, FACTORIES))

    def publish_state(self) -> None:
        for topic, fields in self.session.measurement_fields():
            self.publish(topic, fields)
        self.last_publish = time.monotonic()

    def log_events(self) -> None:
        """Log the session's events once each (one call site per severity, as rclpy needs)."""
        events, self.session.events = self.session.events, []
        for event in events:
            if event.severity == "error":
                self.get_logger().error(event.text)
            elif event.severity == "warning":
                self.get_logger().warning(event.text)
            else:
                self.get_logger().info(event.text)

    # ------------------------------------------------------------------ callbacks
    def on_control_timer(self) -> None:
        self.session.tick()
        if self.session.state_due:
            self.publish_state()
        elif (self.config.lockstep and time.monotonic() - self.last_publish > LOCKSTEP_REPUBLISH
              and self.session.error is None):
            self.publish_state()  # the controller may have joined after it was sent
        self.log_events()

    def on_visual_timer(self) -> None:
        self.tf.sendTransform(fill_message(TransformStamped(), self.session.tf_fields()))
        for topic, fields in self.session.visual_fields():
            self.publish(topic, fields)

    def on_diagnostics_timer(self) -> None:
        self.publish(core.DIAGNOSTICS, core.diagnostic_array(
            self.session.sim.t, [self.session.status()]))

    def on_command(self, msg: JointState) -> None:
        stamp = core.ns_from_stamp(msg.header.stamp.sec, msg.header.stamp.nanosec)
        reason = self.session.command(stamp, msg.name, msg.effort)
        if reason is not None:
            self.get_logger().error(f"Rejected joint_torque_cmd: {reason}",
                                    throttle_duration_sec=REJECT_LOG_PERIOD)
        elif self.config.lockstep and self.config.real_time_factor == 0.0:
            self.on_control_timer()  # as fast as the controller answers

    def on_reset(self, request: Trigger.Request, response: Trigger.Response):
        self.session.reset()
        self.publish_state()
        response.success = True
        response.message = "simulation reset to the initial state at t = 0"
        self.get_logger().info(response.message)
        return response

    def on_pause(self, request: SetBool.Request, response: SetBool.Response):
        self.session.set_paused(request.data)
        response.success = True
        response.message = "paused" if request.data else "running"
        self.get_logger().info(f"Simulation {response.message} at t = {self.session.sim.t:.3f} s")
        return response

    def on_set_parameters(self, params: list[Parameter]) -> SetParametersResult:
        """Validate run-time changes (ranges, contact model) and apply the accepted ones."""
        changes = {p.name: p.value for p in params if p.name != "use_sim_time"}
        if any(p.name == "use_sim_time" and p.value for p in params):
            return SetParametersResult(successful=False, reason="use_sim_time must stay false "
                                       "on the simulator node: it publishes /clock")
        if not changes:
            return SetParametersResult(successful=True)
        reason = core.check_sim_update(self.config, changes)
        if reason is not None:
            return SetParametersResult(successful=False, reason=reason)
        try:
            config = core.apply_sim_update(self.config, changes)
            self.session.update_config(config)
        except ConfigError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        self.config = config
        self.log_events()
        return SetParametersResult(successful=True)


def spin_node(make_node, node_name: str, args=None) -> int:
    """init → spin, stopping on Ctrl-C or external shutdown → destroy_node → try_shutdown.

    Shared by both nodes (Humble and Jazzy). A ConfigError at start-up is logged as fatal and
    gives exit code 1.
    """
    rclpy.init(args=args)
    node = None
    code = 0
    try:
        node = make_node()
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except ConfigError as exc:
        get_logger(node_name).fatal(f"Invalid configuration:\n{exc}")
        code = 1
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return code


def main(args=None) -> int:
    """Entry point of ``ros2 run biped_contact_sim simulator_node``."""
    return spin_node(SimulatorNode, NODE_NAME, args)


if __name__ == "__main__":
    sys.exit(main())
