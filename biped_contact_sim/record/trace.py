"""The MCAP trace of a run: the nodes' topics, written sample by sample without ROS 2.

:class:`TraceRecorder` turns each recorded sample into the messages the simulator node would
publish (:mod:`biped_contact_sim.msgs`: topic table, field builders, the nodes' CDR encoder, TF)
under their absolute names (docs/architecture.md "Topics"), plus every link transform in
``/tf``, the fixed frames (soles, contact points) in ``/tf_static`` and the URDF on
``/robot_description``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from biped_contact_sim.msgs import markers, messages, topics
from biped_contact_sim.msgs.tf import frame_transforms, tf_tree
from biped_contact_sim.msgs.topics import WORLD_FRAME
from biped_contact_sim.record.inputs import RecordedRun, RecordedSample
from biped_contact_sim.record.mcap_writer import McapTraceWriter
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.robot.base_state import base_motion

if TYPE_CHECKING:
    from biped_contact_sim.sim.terrain import PlaneTerrain

# contact_markers are written at most at this rate [Hz] of simulated time: RViz and Foxglove draw
# at display rate, and the cones make a MarkerArray ~100 times larger than the other messages
# (at 1 kHz they would dominate the file size and the recording time).
MARKER_RATE = 20.0
DIAGNOSTICS_RATE = 1.0  # [Hz] of simulated time, as the nodes' default diagnostics_rate


def run_status(result: RecordedRun, t: float) -> dict[str, Any]:
    """The run so far as a DiagnosticStatus (the keys of the simulator node's status that a
    recorded run has)."""
    steps = max(result.steps, 1)
    level = messages.DIAG_ERROR if result.error else messages.DIAG_OK
    return messages.diagnostic_status(
        level, topics.SIM_STATUS_NAME, result.error or "running", result.robot.name,
        {"sim_time_s": float(t), "steps": result.steps, "contact_model": result.contact_model,
         "controller": result.controller, "mean_step_us": 1e6 * result.step_time_s / steps,
         "mean_control_us": 1e6 * result.control_time_s / steps,
         "max_penetration_m": float(result.max_penetration),
         "max_cone_violation_N": float(result.max_cone_violation),
         "fell": bool(result.fell)})


class TraceRecorder:
    """Writes ``trace.mcap`` sample by sample (opened at construction, finished by ``close``).

    Per recorded sample: ``/clock``, ``/joint_states``, ``/odom``, ``/tf`` (world → root link
    and every link moved by a joint, from pinocchio's forward kinematics of the sample),
    ``/contact_wrench/<body>`` (every contact body of the config, in its sole/palm frame),
    ``/cop/<body>`` and ``/zmp`` (world; skipped while undefined); ``/contact_markers`` at
    most at ``MARKER_RATE``; ``/diagnostics`` (the run's counters, as the simulator node's
    status) at ``DIAGNOSTICS_RATE``. Once, at t = 0:
    ``/robot_description`` and ``/tf_static`` (links behind fixed joints: soles, contact
    points), both with transient-local QoS so that a late subscriber (RViz) still gets them.
    """

    def __init__(self, path: Path, robot: RobotModel, terrain: PlaneTerrain):
        self.robot, self.terrain = robot, terrain
        self.model, self.data = robot.model, robot.create_data()
        self.edges = tf_tree(self.model)
        self.moving = [e for e in self.edges if e[2]]
        gravity = float(np.linalg.norm(self.model.gravity.linear))
        self.force_scale = markers.WEIGHT_ARROW_LENGTH / (robot.mass * gravity)
        self.plane_origin = np.array([0.0, 0.0, terrain.height])
        self.next_marker_t = -math.inf
        self.next_diagnostics_t = 0.0
        self._channels: dict[str, tuple[str, str, bool]] = {}
        urdf = Path(robot.config.urdf_path).read_text()
        self.writer = McapTraceWriter(path, robot_description=urdf)
        static = [e for e in self.edges if not e[2]]
        if static:
            pin.framesForwardKinematics(self.model, self.data, robot.configuration())
            self._write(topics.TF_STATIC, messages.tf_message(
                frame_transforms(self.model, self.data, static, 0.0)), 0.0)

    def _write(self, topic: str, fields: dict[str, Any], t: float) -> None:
        """Write a message on a topic of the table, under its absolute name, with its type
        and QoS."""
        channel = self._channels.get(topic)
        if channel is None:
            entry = topics.topic(topic)
            channel = self._channels[topic] = (topics.absolute(topic), entry.type, entry.latched)
        name, datatype, latched = channel
        self.writer.write(name, datatype, fields, t, latched=latched)

    def write(self, sample: RecordedSample, result: RecordedRun | None = None) -> None:
        """Write the messages of one sample (and, given the run so far, ``/diagnostics`` at
        ``DIAGNOSTICS_RATE``)."""
        robot, write = self.robot, self._write
        step, obs, t = sample.step, sample.obs, sample.step.t
        write(topics.CLOCK, messages.clock(t), t)
        write(topics.JOINT_STATES, messages.joint_state(
            t, robot.actuated_joint_names, step.q[robot.q_idx], step.v[robot.v_idx],
            step.tau), t)
        oMb, v_local = base_motion(self.model, self.data, step.q, step.v)
        quat = pin.Quaternion(oMb.rotation).coeffs()  # x, y, z, w
        write(topics.ODOM, messages.odometry(
            t, WORLD_FRAME, robot.base_link, oMb.translation, quat, v_local.linear,
            v_local.angular), t)
        pin.updateFramePlacements(self.model, self.data)  # joints placed by base_motion
        transforms = list(frame_transforms(self.model, self.data, self.moving, t))
        if len(step.q_objects):  # a world's free objects: world → <object> (geometry contacts)
            world = getattr(getattr(result, "sim", None), "world", None)
            names = [o.name for o in world.objects] if world is not None else \
                [f"object_{k}" for k in range(len(step.q_objects) // 7)]
            for k, name in enumerate(names):
                q = step.q_objects[7 * k:7 * k + 7]
                transforms.append(messages.transform_stamped(t, WORLD_FRAME, name, q[:3], q[3:]))
        write(topics.TF, messages.tf_message(transforms), t)
        for foot in obs.feet:
            write(topics.CONTACT_WRENCH.format(foot=foot.name),
                  messages.wrench_stamped(t, foot.frame, foot.force, foot.torque), t)
            if foot.cop is not None:
                write(topics.COP.format(foot=foot.name),
                      messages.point_stamped(t, WORLD_FRAME, foot.cop), t)
        if obs.zmp is not None:
            write(topics.ZMP, messages.point_stamped(t, WORLD_FRAME, obs.zmp), t)
        if t >= self.next_marker_t:
            self.next_marker_t = t + 1.0 / MARKER_RATE - 1e-9  # tolerance: t is a sum of dt's
            # The support polygon is stored in the terrain plane's (t₁, t₂) coordinates.
            polygon = self.plane_origin + obs.support_polygon @ self.terrain.R[:, :2].T
            write(topics.CONTACT_MARKERS, markers.contact_markers(
                t, WORLD_FRAME, step.p, step.f_world, step.active,
                [foot.cop for foot in obs.feet], obs.zmp, polygon,
                mu=self.terrain.mu, force_scale=self.force_scale,
                normals=self.terrain.normal), t)
        if result is not None and t >= self.next_diagnostics_t:
            self.next_diagnostics_t = t + 1.0 / DIAGNOSTICS_RATE - 1e-9
            write(topics.DIAGNOSTICS, messages.diagnostic_array(t, [run_status(result, t)]), t)

    def close(self) -> None:
        """Finish the MCAP file (idempotent)."""
        self.writer.close()
