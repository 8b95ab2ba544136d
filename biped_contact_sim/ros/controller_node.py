"""Controller node: ``ros2 run biped_contact_sim controller_node``.

Reads only ``joint_states``, ``odom`` and ``contact_wrench/<foot>`` (so a hardware driver can
replace the simulator) and publishes ``joint_torque_cmd`` plus its diagnostics. Wiring only:
:class:`~biped_contact_sim.ros.controller_session.MeasurementAssembler` turns the messages into
pinocchio ``q``, ``v`` and sole wrenches, :class:`~biped_contact_sim.ros.controller_session.
ControllerSession` runs the controller; the inputs are read from, and the command written as,
serialized messages (:mod:`~biped_contact_sim.msgs.cdr`,
:class:`~biped_contact_sim.ros.writers.CommandWriter`). The node spins with
:class:`~biped_contact_sim.ros.node_common.NodeLoop`: with ``sync`` exact it computes as soon as
a measurement is complete; with ``sync`` latest as soon as the newest messages all carry the
newest joint states' stamp (``MeasurementAssembler.whole``), else every ``control_period`` of
wall time on the newest messages. In ``composed_node`` the simulator in the same process hands
each state sample to :meth:`ControllerNode.deliver` and takes the command in process
(``command_sink``); the state topics are then not subscribed.
"""

from __future__ import annotations

import struct
import sys
import time
from collections.abc import Callable

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PointStamped, WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from biped_contact_sim.msgs import cdr, stamps, topics
from biped_contact_sim.msgs.messages import fill_message
from biped_contact_sim.robot import source as robot_source
from biped_contact_sim.ros import controller_session, params
from biped_contact_sim.ros.node_common import (
    NodeLoop,
    declare,
    declare_robot_parameters,
    load_kernels,
    log_events,
    plain,
    run_node,
)
from biped_contact_sim.ros.writers import CommandWriter

NODE_NAME = "controller"
FACTORIES = {"status": DiagnosticStatus, "values": KeyValue, "dim": MultiArrayDimension}
REJECT_LOG_PERIOD = 1.0  # [s] throttle of the log lines about rejected input messages
QOS_DEPTH = 10
#: sync latest: a whole new state is answered at once if its stamp is at least this many control
#: periods after the last one answered (a driver faster than the controller does not make it
#: compute faster than its control period: its integrals take dt = control_period) ...
EVENT_ADVANCE = 0.75
#: ... and the control timer fires only if no whole state came this many periods after a cycle
TIMER_AFTER_EVENT = 1.5
#: [s] how often the output topics' subscriber counts are asked (the per-cycle topics are
#: published only for someone; composed, the simulator gets the command in process)
SUBSCRIBERS_PERIOD = 0.2


class ControllerNode(Node):
    """Runs ``ctc`` or ``wbc`` with a behaviour on measured states (module docstring)."""

    def __init__(self, phase=None, composed: bool = False):
        super().__init__(NODE_NAME)
        robot_values = declare_robot_parameters(self)
        values = {s.name: plain(declare(self, s)) for s in params.controller_parameter_specs()
                  if s.name not in robot_values}
        values.update({k: v for k, v in robot_values.items() if k != "robot_overrides"})
        self.config = params.controller_config(values)  # ConfigError: every bad value, named
        cfg = self.config
        phase = phase or (lambda done, following: None)
        phase("parameters declared and checked", "loading the robot and the controller")
        self.robot = robot_source.load_robot(cfg.robot_config, cfg.urdf_path,
                                             cfg.robot_description,
                                             robot_values["robot_overrides"])
        controller_session.check_controller(self.robot, cfg)
        self.assembler = controller_session.MeasurementAssembler(self.robot, cfg.sync,
                                                                 cfg.max_measurement_age)
        self.session = controller_session.ControllerSession(self.robot, cfg)
        phase(f"robot {self.robot.name} and controller {cfg.controller} built",
              "loading compiled kernels")
        load_kernels(self.get_logger().info, ("biped_contact_sim.control.",), phase,
                     "creating topics")

        self.msg_types = {
            topics.JOINT_TORQUE_CMD: JointState,
            topics.COM: PointStamped,
            topics.COM_REF: PointStamped,
            topics.INTERNAL_FORCES: Float64MultiArray,
            topics.INTERNAL_FORCES_REF: Float64MultiArray,
            topics.DIAGNOSTICS: DiagnosticArray,
        }
        self.pubs = {topic: self.create_publisher(msg_type, topic, QOS_DEPTH)
                     for topic, msg_type in self.msg_types.items()}
        self.command_pub = self.pubs[topics.JOINT_TORQUE_CMD]
        self.command = CommandWriter(self.robot.actuated_joint_names)
        self.feet = [body.name for body in self.robot.contact_bodies]
        # The per-period inputs as serialized bytes, read by cdr.py (no message objects).
        self.joint_state_reader = cdr.JointStateReader()
        #: composed form: the simulator's command input (``SimulatorNode.on_local_command``),
        #: and the joint order and contact bodies of the states it hands to ``deliver`` (the
        #: inputs then come from there, not from subscriptions)
        self.command_sink: Callable[[int, list[str], np.ndarray, bytes | None], None] | None = None
        self.state_names: list[str] = []
        self.state_bodies: list[str] = []
        self.live: dict[str, bool] = {}
        self.next_count = 0.0
        if not composed:
            self.create_subscription(JointState, topics.JOINT_STATES, self.on_joint_states,
                                     QOS_DEPTH, raw=True)
            self.create_subscription(Odometry, topics.ODOM, self.on_odom, QOS_DEPTH, raw=True)
            for foot in self.feet:
                self.create_subscription(
                    WrenchStamped, topics.CONTACT_WRENCH.format(foot=foot),
                    lambda data, foot=foot: self.on_wrench(foot, data), QOS_DEPTH, raw=True)
        now = time.perf_counter()
        self.next_cycle = now
        self.event_advance = int(EVENT_ADVANCE * cfg.control_period * stamps.NS)
        self.next_diagnostics = now
        self.loop = NodeLoop(self, self.on_wake, static=True)
        phase("topics created", "running")
        self.get_logger().info(
            f"Controller {cfg.controller!r}, behaviour {cfg.behavior!r} on {self.robot.name}, "
            f"control period {cfg.control_period:g} s, sync {cfg.sync!r}")

    @staticmethod
    def stamp(msg) -> int:
        return stamps.ns_from_stamp(msg.header.stamp.sec, msg.header.stamp.nanosec)

    def rejected(self, reason: str | None) -> None:
        if reason is not None:
            self.session.reject_input(reason)
            self.get_logger().error(f"Ignored input ({self.session.inputs_rejected} so far): "
                                    f"{reason}", throttle_duration_sec=REJECT_LOG_PERIOD)

    # ------------------------------------------------------------------ inputs
    def read(self, topic: str, reader, data: bytes):
        """``reader(data)``, or None (the message logged as ignored) when it cannot be read."""
        try:
            return reader(data)
        except (ValueError, IndexError, struct.error, UnicodeDecodeError) as exc:
            self.rejected(f"{topic} could not be read: {exc}")
            return None

    def on_joint_states(self, data: bytes) -> None:
        got = self.read(topics.JOINT_STATES, self.joint_state_reader.read, data)
        if got is not None:
            stamp, names, position, velocity, _ = got
            self.rejected(self.assembler.joint_state(stamp, names, position, velocity))

    def on_odom(self, data: bytes) -> None:
        got = self.read(topics.ODOM, cdr.read_odometry, data)
        if got is not None:
            stamp, pose, twist = got
            self.rejected(self.assembler.odometry(stamp, pose[:3], pose[3:], twist[:3],
                                                  twist[3:]))

    def on_wrench(self, foot: str, data: bytes) -> None:
        got = self.read(f"contact_wrench/{foot}", cdr.read_wrench_stamped, data)
        if got is not None:
            stamp, wrench = got
            self.rejected(self.assembler.wrench(foot, stamp, wrench[:3], wrench[3:]))

    def deliver(self, sample) -> None:
        """The composed form's input: the simulator's state sample, taken as its
        ``joint_states``, ``odom`` and ``contact_wrench/<body>`` messages would be
        (``MeasurementAssembler.state``), then answered as they would be (:meth:`answer`)."""
        for reason in self.assembler.state(sample, self.state_names, self.state_bodies):
            self.rejected(reason)
        self.answer(time.perf_counter())

    # ------------------------------------------------------------------ outputs
    def publish(self, topic: str, fields: dict) -> None:
        self.pubs[topic].publish(fill_message(self.msg_types[topic](), fields, FACTORIES))

    def run_cycle(self) -> None:
        """Compute and publish for the newest complete measurement not handled yet (older
        ones are skipped and counted: never a queue of stale states)."""
        meas = self.assembler.pop()
        if meas is None:
            return
        session = self.session
        cycle = session.step(meas)
        session.skipped = self.assembler.skipped
        if session.events:
            log_events(self, session.events, REJECT_LOG_PERIOD)
        if cycle is None:
            return
        now = time.perf_counter()
        if now >= self.next_count:
            # who listens (asked every SUBSCRIBERS_PERIOD: a C call per topic); composed, the
            # simulator's own subscription to the commands (for other nodes') is one of them
            self.live = {topic: pub.get_subscription_count() > (
                1 if topic == topics.JOINT_TORQUE_CMD and self.command_sink else 0)
                for topic, pub in self.pubs.items()}
            self.next_count = now + SUBSCRIBERS_PERIOD
        if self.command_sink is None:
            self.command_pub.publish(self.command.write(cycle.stamp, cycle.tau))
        else:  # composed: to the simulator in process; on the topic for someone listening
            data = None
            if self.live[topics.JOINT_TORQUE_CMD]:
                data = self.command.write(cycle.stamp, cycle.tau)
                self.command_pub.publish(data)
            self.command_sink(cycle.stamp, cycle.names, cycle.tau, data)
        session.published(meas, time.perf_counter())
        for topic, fields in cycle.diagnostics:
            if self.live[topic]:
                self.publish(topic, fields)

    def answer(self, now: float) -> bool:
        """A control cycle on the measurement just completed (sync exact), or on the driver's
        newest state once it is whole (sync latest); whether one ran."""
        if self.config.sync == "exact":
            self.run_cycle()
            return True
        if self.assembler.whole(self.event_advance):
            # the driver's newest state is whole: answer it now, not at the next timer tick (two
            # free-running clocks would add up to a period of waiting); the timer stays the
            # fallback for drivers whose topics carry different stamps
            self.run_cycle()
            self.next_cycle = now + TIMER_AFTER_EVENT * self.config.control_period
            return True
        return False

    def on_wake(self) -> float | None:
        """Control cycles (on complete measurements, or on the timer with sync latest) and the
        /diagnostics status at its rate; returns when to run again."""
        cfg = self.config
        now = time.perf_counter()
        if not self.answer(now) and cfg.sync == "latest" and now >= self.next_cycle:
            self.run_cycle()
            self.next_cycle = max(self.next_cycle + cfg.control_period, now)
        if now >= self.next_diagnostics:
            fields = self.session.status(self.assembler.missing())
            if self.session.last_measurement is None:
                fields["header"]["stamp"] = stamps.stamp_fields(
                    self.get_clock().now().nanoseconds)
            self.publish(topics.DIAGNOSTICS, fields)
            self.next_diagnostics = max(self.next_diagnostics + 1.0 / cfg.diagnostics_rate, now)
            if self.session.cycles == 0:
                self.get_logger().info("Waiting for " + ", ".join(self.assembler.missing()),
                                       throttle_duration_sec=10.0)
        wake = [self.next_diagnostics]
        if cfg.sync == "latest":
            wake.append(self.next_cycle)
        return min(wake)


def main(args=None, stopper=None) -> int:
    """Entry point of ``ros2 run biped_contact_sim controller_node``."""
    return run_node(ControllerNode, NODE_NAME, args, stopper)


if __name__ == "__main__":
    sys.exit(main())
