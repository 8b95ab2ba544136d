"""Simulator node: ``ros2 run biped_contact_sim simulator_node``.

Wiring only: parameters, publishers, the command subscription and the services are connected
to :class:`biped_contact_sim.ros.sim_session.SimSession`, which holds every decision
(validation, lockstep, late commands, pacing, contact-model switch). The measurement topics are
serialized by :class:`~biped_contact_sim.ros.writers.StateWriter`; the other topics come
from :mod:`biped_contact_sim.msgs.messages` fields. The node spins with
:class:`~biped_contact_sim.ros.node_common.NodeLoop`: after each wait it runs the control
periods that are due, publishes the state after each, and the visual topics and diagnostics at
their wall-clock rates. Topics, parameters and diagnostics: README "With ROS 2".
"""

from __future__ import annotations

import struct
import sys
import time
from collections.abc import Callable

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Point, PointStamped, TransformStamped, WrenchStamped
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_srvs.srv import SetBool, Trigger
from visualization_msgs.msg import Marker, MarkerArray

from biped_contact_sim.errors import ConfigError
from biped_contact_sim.msgs import cdr, messages, topics
from biped_contact_sim.msgs.messages import fill_message
from biped_contact_sim.ros import params, sim_session
from biped_contact_sim.ros.node_common import (
    NodeLoop,
    declare,
    declare_robot_parameters,
    load_kernels,
    log_events,
    optional_tf_broadcaster,
    plain,
    run_node,
)
from biped_contact_sim.ros.sim_outputs import StateSample
from biped_contact_sim.ros.writers import MarkerWriter, StateWriter

NODE_NAME = "simulator"
FACTORIES = {"markers": Marker, "points": Point, "status": DiagnosticStatus,
             "values": KeyValue}
REJECT_LOG_PERIOD = 1.0  # [s] throttle of the "rejected joint_torque_cmd" log line
REPUBLISH = 1.0  # [s] re-send an awaited state (a controller may have joined after it was sent)
# [s] how often the measurement publishers' subscriber counts are asked (a C call each, five per
# period otherwise); a new subscriber gets the measurement topics at most this much later
SUBSCRIBERS_PERIOD = 0.2
QOS_DEPTH = 10
# History of the per-period measurement publishers (reliable): a subscriber slower than the
# control period for a while (a Python probe, a bag recorder on a loaded machine) still gets
# every state; with 10 the oldest unacknowledged states were dropped for it after 10 periods.
STATE_DEPTH = 200
# Composed form: the in-process commands remembered to recognise their copies on the topic
# (as many as its subscription's queue holds, and a margin)
LOCAL_ECHOES = 2 * STATE_DEPTH
BATCH_BUDGET = 0.02  # [s] longest run of periods between two waits (services stay responsive)
# The kernel modules the simulator runs (loaded at start-up, not in the first period)
SIM_KERNELS = tuple(f"biped_contact_sim.{p}." for p in ("robot", "solvers", "contact", "sim"))


class SimulatorNode(Node):
    """Steps the simulator and publishes the topics of README "Topic contract" (module doc)."""

    def __init__(self, phase=None, composed: bool = False):
        super().__init__(NODE_NAME)
        if self.get_parameter("use_sim_time").value:
            self.get_logger().warning("use_sim_time is true, but this node publishes /clock: "
                                      "setting it to false")
            self.set_parameters([Parameter("use_sim_time", Parameter.Type.BOOL, False)])
        robot_values = declare_robot_parameters(self)
        scenario = declare(self, next(s for s in params.sim_parameter_specs()
                                      if s.name == "scenario"))
        values = {"scenario": scenario}
        for spec in params.sim_parameter_specs(scenario):
            if spec.name not in ("scenario", *robot_values):
                values[spec.name] = plain(declare(self, spec))
        values.update({k: v for k, v in robot_values.items() if k != "robot_overrides"})
        self.config = params.sim_config(values)  # ConfigError: every bad value, named
        phase = phase or (lambda done, following: None)
        phase("parameters declared and checked", "building robot, world and contact model")
        world = sim_session.build_world(self.config, robot_values["robot_overrides"])
        self.session = sim_session.SimSession(world, self.config)
        self.robot = robot = world.robot
        phase(f"robot {robot.name} ({robot.nv} DoF, {robot.n_points} contact points), "
              f"{self.config.contact_model} and the simulator built", "loading compiled kernels")
        load_kernels(self.get_logger().info, SIM_KERNELS, phase, "creating topics and services")

        self.msg_types = {
            topics.CLOCK: Clock,
            topics.JOINT_STATES: JointState,
            topics.ODOM: Odometry,
            topics.ZMP: PointStamped,
            topics.CONTACT_MARKERS: MarkerArray,
            topics.DIAGNOSTICS: DiagnosticArray,
        }
        wrench_topics = [topics.CONTACT_WRENCH.format(foot=b.name) for b in robot.contact_bodies]
        for body, topic in zip(robot.contact_bodies, wrench_topics, strict=True):
            self.msg_types[topic] = WrenchStamped
            self.msg_types[topics.COP.format(foot=body.name)] = PointStamped
        per_period = {topics.CLOCK, topics.JOINT_STATES, topics.ODOM, *wrench_topics}
        self.pubs = {topic: self.create_publisher(
            msg_type, topic, STATE_DEPTH if topic in per_period else QOS_DEPTH)
            for topic, msg_type in self.msg_types.items()}
        self.point_topics = [topics.ZMP, *(topics.COP.format(foot=b.name)
                                           for b in robot.contact_bodies)]
        # Measurement messages: serialized into buffers allocated once (ros/writers.py, cdr.py).
        self.writer = StateWriter(robot.actuated_joint_names, self.config.world_frame,
                                  robot.base_link, [b.frame for b in robot.contact_bodies])
        self.state_pubs = [self.pubs[topic] for topic in
                           (topics.CLOCK, topics.JOINT_STATES, topics.ODOM, *wrench_topics)]
        self.publish_order = [*range(1, len(self.state_pubs)), 0]  # /clock last
        self.live = [False] * len(self.state_pubs)
        self.next_count = 0.0
        self.command_reader = cdr.JointStateReader()
        self.markers = MarkerWriter(MarkerArray(), Marker, Point, self.config.world_frame,
                                    robot.n_points, len(robot.contact_bodies))
        self.tf = optional_tf_broadcaster(self)

        #: composed form: the controller's input (``ControllerNode.deliver``: each state
        #: sample); its command then comes in process (``on_local_command``), and the copies of
        #: it that come back over the topic (published for other subscribers) are dropped
        self.deliver: Callable[[StateSample], None] | None = None
        self.local_commands: dict[bytes, None] = {}
        # Composed, the topic also brings those copies, a batch of periods' worth between two
        # waits: a deeper queue, read whole, so that another node's command is not pushed out.
        command_sub = self.create_subscription(
            JointState, topics.JOINT_TORQUE_CMD, self.on_command,
            STATE_DEPTH if composed else QOS_DEPTH, raw=True)
        self.create_service(Trigger, "~/reset", self.on_reset)
        self.create_service(SetBool, "~/pause", self.on_pause)
        self.add_on_set_parameters_callback(self.on_set_parameters)
        now = time.perf_counter()
        self.last_publish = now
        self.next_visual = now
        self.next_markers = now
        self.next_diagnostics = now
        self.loop = NodeLoop(self, self.on_wake, static=True)
        if composed:
            self.loop.drain(command_sub, STATE_DEPTH)
        phase("topics and services created", "running")
        cfg = self.config
        contacts = world.sim.contacts + (f" in world {world.world_name!r}"
                                         if world.world_name else "")
        self.get_logger().info(
            f"Simulating {robot.name} ({cfg.scenario}) with {cfg.contact_model}, {contacts} "
            f"contacts, dt = "
            f"{cfg.dt:g} s, control period {cfg.control_period:g} s, real-time factor "
            f"{cfg.real_time_factor:g}{', lockstep' if cfg.lockstep else ''}")

    # ------------------------------------------------------------------ publishing
    def publish(self, topic: str, fields: dict) -> None:
        self.pubs[topic].publish(fill_message(self.msg_types[topic](), fields, FACTORIES))

    def publish_state(self) -> None:
        """The measurement topics of the state now, to the topics someone subscribes to (the
        subscriber counts are asked every :data:`SUBSCRIBERS_PERIOD`, not every period); the
        controller's inputs first, ``/clock`` (not one of them) last."""
        now = time.perf_counter()
        if now >= self.next_count:
            self.live = [pub.get_subscription_count() > 0 for pub in self.state_pubs]
            self.next_count = now + SUBSCRIBERS_PERIOD
        sample = self.session.sample()
        if any(self.live):
            data = self.writer.write(sample, self.live)
            for k in self.publish_order:
                if self.live[k]:
                    self.state_pubs[k].publish(data[k])
        self.last_publish = time.perf_counter()
        if self.deliver is not None:
            self.deliver(sample)

    def publish_markers(self) -> None:
        pub = self.pubs[topics.CONTACT_MARKERS]
        if not pub.get_subscription_count():
            return
        v = self.session.visual_sample()
        if v is None:
            return
        pub.publish(self.markers.write(
            v.stamp, v.points, v.forces, v.active, [c for _, c in v.cops], v.zmp, v.polygon,
            v.mu, v.force_scale, v.normal))

    def publish_visual(self) -> None:
        if self.tf is not None:
            self.tf.sendTransform(fill_message(TransformStamped(), self.session.tf_fields()))
        if not any(self.pubs[t].get_subscription_count() for t in self.point_topics):
            return  # the observables cost ~1 ms: only for someone
        v = self.session.visual_sample()
        if v is None:
            return
        frame = self.config.world_frame
        for name, cop in v.cops:
            if cop is not None:
                self.publish(topics.COP.format(foot=name), messages.point_stamped(v.t, frame, cop))
        if v.zmp is not None:
            self.publish(topics.ZMP, messages.point_stamped(v.t, frame, v.zmp))

    def publish_diagnostics(self) -> None:
        self.publish(topics.DIAGNOSTICS, messages.diagnostic_array(
            self.session.sim.t, [self.session.status()]))

    # ------------------------------------------------------------------ the loop
    def on_wake(self) -> float | None:
        """Run the periods due, publish what is due; returns when to run again."""
        session, cfg = self.session, self.config
        if session.state_due:
            self.publish_state()  # initial state, or after a reset
        start = time.perf_counter()
        while time.perf_counter() - start < BATCH_BUDGET:
            done = session.tick(max_periods=1)
            if session.state_due:
                self.publish_state()  # every period's state (the measurement topics' rate)
            if done == 0:
                break
        if session.events:
            log_events(self, session.events)
        now = time.perf_counter()
        awaiting = session.error is None and not session.paused and (
            (cfg.lockstep and not session.gate.ready) or (not cfg.lockstep and session.waiting))
        if awaiting and now - self.last_publish > REPUBLISH:
            self.publish_state()  # the controller may have joined after it was sent
        if now >= self.next_visual:
            self.publish_visual()
            self.next_visual = max(self.next_visual + 1.0 / cfg.publish_rate, now)
        if now >= self.next_markers:
            self.publish_markers()
            self.next_markers = max(self.next_markers + 1.0 / cfg.markers_rate, now)
        if now >= self.next_diagnostics:
            self.publish_diagnostics()
            self.next_diagnostics = max(self.next_diagnostics + 1.0 / cfg.diagnostics_rate, now)
        wake = [self.next_visual, self.next_markers, self.next_diagnostics]
        due = session.next_wakeup()
        if due is not None:
            wake.append(due)
        if awaiting:
            wake.append(self.last_publish + REPUBLISH)
        return min(wake)

    # ------------------------------------------------------------------ callbacks
    def on_local_command(self, stamp: int, names: list[str], effort: np.ndarray,
                         data: bytes | None) -> None:
        """Composed form: the command of the controller in this process, and the message it
        also published (``data``, None when nobody else listens)."""
        if data is not None:
            echoes = self.local_commands
            echoes[data] = None
            if len(echoes) > LOCAL_ECHOES:
                del echoes[next(iter(echoes))]  # the oldest: its copy came or was dropped
        self.command_result(self.session.command(stamp, names, effort))

    def on_command(self, data: bytes) -> None:
        """A serialized ``joint_torque_cmd`` (raw subscription: read by cdr.py)."""
        if data in self.local_commands:
            return  # composed: the topic's copy of a command already taken in process
        try:
            stamp, names, _, _, effort = self.command_reader.read(data)
            reason = self.session.command(stamp, names, effort)
        except (ValueError, IndexError, struct.error, UnicodeDecodeError) as exc:
            reason = self.session.reject(f"joint_torque_cmd could not be read: {exc}")
        self.command_result(reason)

    def command_result(self, reason: str | None) -> None:
        """Log a rejected command (throttled; the session counts it)."""
        if reason is not None:
            self.get_logger().error(f"Rejected joint_torque_cmd ({self.session.rejected} so "
                                    f"far): {reason}", throttle_duration_sec=REJECT_LOG_PERIOD)

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

    def on_set_parameters(self, changed: list[Parameter]) -> SetParametersResult:
        """Validate run-time changes (ranges, contact model) and apply the accepted ones."""
        changes = {p.name: p.value for p in changed if p.name != "use_sim_time"}
        if any(p.name == "use_sim_time" and p.value for p in changed):
            return SetParametersResult(successful=False, reason="use_sim_time must stay false "
                                       "on the simulator node: it publishes /clock")
        if not changes:
            return SetParametersResult(successful=True)
        built: dict = {}  # the contact model the check builds, used by the switch
        reason = params.check_sim_update(self.config, changes, built)
        if reason is not None:
            return SetParametersResult(successful=False, reason=reason)
        try:
            config = params.apply_sim_update(self.config, changes)
            self.session.update_config(config, built.get("contact_model"))
        except ConfigError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        self.config = config
        log_events(self, self.session.events)
        return SetParametersResult(successful=True)


def main(args=None, stopper=None) -> int:
    """Entry point of ``ros2 run biped_contact_sim simulator_node``."""
    return run_node(SimulatorNode, NODE_NAME, args, stopper)


if __name__ == "__main__":
    sys.exit(main())
