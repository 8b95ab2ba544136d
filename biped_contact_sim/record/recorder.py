"""Recorder: a run's ``summary.json``, ``timeseries.csv``, ``trace.mcap`` and ``replay.html``.

:class:`StreamingRecorder` writes them while the run goes (the runner calls it with each
recorded sample): CSV rows and MCAP messages reach the disk every second, so memory does not
grow with the length of the run and a killed run loses at most its last second; the summary
and the replay are written at the end (or when the run is stopped or diverges: whatever exists
is written). The physics (forces, CoPs, ZMPs) comes from
the simulator's ``StepResult`` and the observer's ``Observation`` of each sample. ROS 2 message
fields come only from :mod:`.messages`; the MCAP carries the nodes' topics under their default,
absolute names (docs/architecture.md "Topics"), every link transform in ``/tf`` and the fixed
frames (soles, contact points) in ``/tf_static``.
"""

from __future__ import annotations

import csv
import json
import math
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from biped_contact_sim.record import messages
from biped_contact_sim.record.flushing import PeriodicFlush
from biped_contact_sim.record.mcap_writer import McapTraceWriter
from biped_contact_sim.record.outdir import OutputFolder
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.sim.observables import configured_point_values

if TYPE_CHECKING:  # the runner (cli layer) produces what is recorded; only its types are used
    from biped_contact_sim.cli.runner import RunResult, Sample
    from biped_contact_sim.sim.terrain import PlaneTerrain

WORLD_FRAME = "world"
SUMMARY_FILE = "summary.json"
TIMESERIES_FILE = "timeseries.csv"
TRACE_FILE = "trace.mcap"
REPLAY_FILE = "replay.html"

# Names of the root joint's configuration entries per ``RobotConfig.base`` (pinocchio order;
# the free-flyer quaternion is stored x, y, z, w).
BASE_COORDINATES = {
    "free_flyer": ("x", "y", "z", "qx", "qy", "qz", "qw"),
    "planar_xz": ("x", "z", "pitch"),
    "translation": ("x", "y", "z"),
}

# Arrow length of a force equal to the robot's weight in ``contact_markers`` [m]: one scale per
# robot keeps a 1 kg ball's and a 40 kg biped's forces readable in RViz.
WEIGHT_ARROW_LENGTH = 0.5

# contact_markers are written at most at this rate [Hz] of simulated time: RViz and Foxglove draw
# at display rate, and the cones make a MarkerArray ~100 times larger than the other messages
# (at 1 kHz they would dominate the file size and the recording time).
MARKER_RATE = 20.0

# Topics (docs/architecture.md "Topics") and their message types, as the nodes name them
# (relative); the trace writes them absolute (:func:`absolute`), as ``ros2 bag record`` does for
# nodes in the root namespace.
JOINT_STATES = ("joint_states", "sensor_msgs/JointState")
ODOM = ("odom", "nav_msgs/Odometry")
TF = ("/tf", "tf2_msgs/TFMessage")
CONTACT_WRENCH = ("contact_wrench/{foot}", "geometry_msgs/WrenchStamped")
COP = ("cop/{foot}", "geometry_msgs/PointStamped")
ZMP = ("zmp", "geometry_msgs/PointStamped")
CONTACT_MARKERS = ("contact_markers", "visualization_msgs/MarkerArray")
CLOCK = ("/clock", "rosgraph_msgs/Clock")
TF_STATIC = ("/tf_static", "tf2_msgs/TFMessage")
DIAGNOSTICS = ("/diagnostics", "diagnostic_msgs/DiagnosticArray")
DIAGNOSTICS_RATE = 1.0  # [Hz] of simulated time, as the nodes' default diagnostics_rate
DIAGNOSTICS_NAME = "biped_contact_sim: simulator"  # the simulator node's status name


def absolute(topic: str) -> str:
    """The name a topic gets in the root namespace: ``joint_states`` → ``/joint_states``."""
    return topic if topic.startswith("/") else "/" + topic


class StreamingRecorder:
    """Writes a run's outputs as the run goes; memory stays bounded whatever its length, and
    at most the last second is lost however the process ends.

    Call it with the run and each recorded sample (the runner's ``on_sample``), then
    :meth:`finish` with the ``RunResult`` (also for a diverged or interrupted run), and
    :meth:`close` in any case (a ``finally``: the trace gets its footer). The files are opened,
    and the previous run's outputs removed (those the folder's manifest lists, :mod:`.outdir`),
    at the first sample, so a run refused for its settings leaves the folder as it was. While
    the run goes, the CSV and the trace reach the disk every second (:mod:`.flushing`); the
    summary and the replay are written at the end, each to a temporary file renamed into place
    (a reader never sees half of one). The replay keeps its own bounded, decimated frames
    (:mod:`.replay`).

    Args:
        out_dir: Output folder: an :class:`.outdir.OutputFolder` (``OutputFolder.claim``: locked
            for this run) or a path (its manifest is kept, nothing is locked).
        replay: Also write ``replay.html``.
        view: Show the run live in the browser (``--view``, :class:`.replay.LiveView`).
        view_address: Where the live view listens (``127.0.0.1``: this machine only).
    """

    def __init__(self, out_dir: Path | OutputFolder, replay: bool = True, view: bool = False,
                 view_address: str = "127.0.0.1"):
        self.folder = out_dir if isinstance(out_dir, OutputFolder) else OutputFolder(out_dir)
        self.out_dir = self.folder.path
        self.paths = {"timeseries": self.out_dir / TIMESERIES_FILE,
                      "trace": self.out_dir / TRACE_FILE}
        self.replay, self.view, self.view_address = replay, view, view_address
        self.samples = 0
        self.warnings: list[str] = []  # what could not be written or shown, and why
        self.robot: RobotModel | None = None
        self._csv_file = None
        self._trace: TraceRecorder | None = None
        self._replay = None
        self._live = None
        self._lock = threading.Lock()  # held while a sample is written and while flushing
        self._flusher: PeriodicFlush | None = None

    def _open(self, result: RunResult, q0: np.ndarray) -> None:
        self.folder.will_write(*self.paths.values())  # clears the previous run's files first
        robot, terrain = result.robot, result.sim.terrain
        self.robot = robot
        self._csv_file = open(self.paths["timeseries"], "w", newline="")  # closed by close()
        self._csv = csv.writer(self._csv_file)
        self._csv.writerow(timeseries_header(robot))
        self._trace = TraceRecorder(self.paths["trace"], robot, terrain)
        self._flusher = PeriodicFlush(self._lock, self._flush, self._sync).start()
        if self.replay or self.view:
            try:
                import meshcat  # noqa: F401

                from biped_contact_sim.record import replay  # meshcat: imported when used
            except ImportError as exc:
                self.warnings.append(f"no replay.html and no --view: {exc} "
                                     "(pip install meshcat)")
                return
            world = result.sim.world if result.sim.geometry is not None else None
            if self.replay:
                self._replay = replay.ReplayRecorder(robot, terrain, world)
            if self.view:
                try:
                    self._live = replay.LiveView(robot, terrain, q0, world=world,
                                                 address=self.view_address)
                except replay.view_server.ViewServerError as exc:
                    self.warnings.append(f"no --view: {exc}")

    def _flush(self) -> None:
        """Hand the CSV rows and the trace's chunk to the operating system (lock held)."""
        self._csv_file.flush()
        self._trace.writer.flush()

    def _sync(self) -> None:
        """Ask the disk to keep them (no lock needed)."""
        os.fsync(self._csv_file.fileno())
        self._trace.writer.sync()

    def __call__(self, result: RunResult, sample: Sample) -> None:
        """Record one sample (CSV row, MCAP messages, replay frame, live view)."""
        if self.robot is None:
            self._open(result, sample.step.q)
        with self._lock:
            self._csv.writerow(timeseries_row(self.robot, sample))
            self._trace.write(sample, result)
        if self._replay is not None:
            self._replay.add(sample)
        if self._live is not None:
            self._live.frame(sample)
        self.samples += 1

    def finish(self, result: RunResult) -> dict[str, Path]:
        """Close the CSV and the MCAP, write ``summary.json`` and ``replay.html``.

        Returns:
            ``{"summary": path, "timeseries": path, "trace": path[, "replay": path]}``.
        """
        if self.robot is None:  # no sample (diverged at once): empty files, still a summary
            self._open(result, result.sim.q)
        self.close()
        paths = {"summary": self.out_dir / SUMMARY_FILE, **self.paths}
        self.folder.will_write(paths["summary"])
        write_summary(result.summary(), paths["summary"])
        if self._replay is not None:
            final = self.out_dir / REPLAY_FILE
            partial = final.with_name(final.name + ".partial")
            self.folder.will_write(final, partial)
            self._replay.write(partial, title=_replay_title(result))
            os.replace(partial, final)
            paths["replay"] = final
        return paths

    def close(self) -> None:
        """Close the open files (idempotent); what was written stays readable."""
        if self._flusher is not None:
            self._flusher.stop()
            self.warnings += self._flusher.errors
            self._flusher = None
        if self._csv_file is not None and not self._csv_file.closed:
            self._csv_file.close()
        if self._trace is not None:
            self._trace.close()
        if self._live is not None:
            self._live.close()
            if self._live.warning:
                self.warnings.append(self._live.warning)
            self._live = None


def run_status(result: RunResult, t: float) -> dict[str, Any]:
    """The run so far as a DiagnosticStatus (the keys of the simulator node's status that a
    recorded run has)."""
    steps = max(result.steps, 1)
    level = 2 if result.error else 0
    return messages.diagnostic_status(
        level, DIAGNOSTICS_NAME, result.error or "running", result.robot.name,
        {"sim_time_s": float(t), "steps": result.steps, "contact_model": result.contact_model,
         "controller": result.controller, "mean_step_us": 1e6 * result.step_time_s / steps,
         "mean_control_us": 1e6 * result.control_time_s / steps,
         "max_penetration_m": float(result.max_penetration),
         "max_cone_violation_N": float(result.max_cone_violation),
         "fell": bool(result.fell)})


def _replay_title(result: RunResult) -> str:
    """The replay's title: scenario, model, controller and how the run ended, unless it
    completed."""
    outcome = result.outcome
    state = f" ({outcome})" if outcome in ("interrupted", "terminated", "diverged") else ""
    return (f"{result.scenario.name} / {result.contact_model} / {result.controller}"
            f"{state}")


def json_safe(value: Any) -> Any:
    """Convert numpy scalars/arrays, tuples and paths to JSON types, recursively.

    Non-finite floats become None: ``json`` would otherwise write ``NaN``/``Infinity``, which
    strict JSON readers (browsers, ``jq``) refuse.

    Args:
        value: Any nesting of dicts, lists, tuples, numpy values and Python scalars.

    Returns:
        The same content made of dict, list, str, int, float, bool and None.
    """
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [json_safe(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, Path):
        return str(value)
    return value


def write_summary(summary: dict[str, Any], path: Path) -> None:
    """Write ``summary.json`` (strict JSON, indented), atomically.

    Args:
        summary: ``RunResult.summary()`` or any JSON-convertible dict.
        path: Output file.
    """
    text = json.dumps(json_safe(summary), indent=2, allow_nan=False) + "\n"
    partial = Path(path).with_name(Path(path).name + ".partial")
    partial.write_text(text)
    os.replace(partial, path)  # a reader sees the old summary or the new one, never half


def base_coordinate_names(robot: RobotModel) -> list[str]:
    """Column names of the root joint's configuration entries, e.g. ``base_qw``.

    Args:
        robot: The robot.

    Returns:
        One ``base_<coordinate>`` name per configuration entry of the root joint.
    """
    return [f"base_{c}" for c in BASE_COORDINATES[robot.config.base]]


def timeseries_header(robot: RobotModel) -> list[str]:
    """Column names of ``timeseries.csv`` for a robot.

    Args:
        robot: The robot.

    Returns:
        ``t``, the base coordinates, ``q_<joint>``, ``tau_<joint>``, ``gap_<point>``,
        ``fn_<point>``, ``cop_<foot>_x/_y``, ``zmp_x/_y``, ``zmp_centroidal_x/_y``, ``energy``.
    """
    joints = robot.actuated_joint_names
    return [
        "t",
        *base_coordinate_names(robot),
        *(f"q_{j}" for j in joints),
        *(f"tau_{j}" for j in joints),
        *(f"gap_{p}" for p in robot.point_names),
        *(f"fn_{p}" for p in robot.point_names),
        *(f"cop_{b.name}_{c}" for b in robot.contact_bodies for c in "xy"),
        "zmp_x",
        "zmp_y",
        "zmp_centroidal_x",
        "zmp_centroidal_y",
        "energy",
    ]


def _xy(point: np.ndarray | None) -> list[float | str]:
    """x and y of a point, or two empty cells where it is undefined."""
    return ["", ""] if point is None else [float(point[0]), float(point[1])]


def timeseries_row(robot: RobotModel, sample: Sample) -> list[float | str]:
    """One ``timeseries.csv`` row (order of :func:`timeseries_header`).

    Args:
        robot: The robot.
        sample: A recorded sample.

    Returns:
        The row's cells; undefined CoPs and ZMPs are empty strings.
    """
    step, obs = sample.step, sample.obs
    root_q = robot.model.idx_qs[1]
    n_base = len(BASE_COORDINATES[robot.config.base])
    row: list[float | str] = [float(step.t)]
    row += step.q[root_q:root_q + n_base].tolist()
    row += step.q[robot.q_idx].tolist()
    row += step.tau.tolist()
    if step.contacts is None:
        row += step.phi.tolist()
        row += step.f_contact[:, 2].tolist()
    else:  # geometry contacts: the contact at each configured point, empty where there is none
        for values in (step.phi, step.f_contact[:, 2]):
            row += ["" if np.isnan(x) else float(x)
                    for x in configured_point_values(robot, step, values)]
    for foot in obs.feet:
        row += _xy(foot.cop)
    row += _xy(obs.zmp)
    row += _xy(obs.zmp_centroidal)
    row.append(float(obs.energy))
    return row


def write_outputs(result: RunResult, out_dir: Path, replay: bool = False) -> dict[str, Path]:
    """Write the outputs of a finished run from its kept samples (the non-streaming way: the
    CLI streams with :class:`StreamingRecorder`; this serves scripts and tests).

    Args:
        result: The run (also a diverged one: what was recorded is written).
        out_dir: Output folder, created if missing.
        replay: Also write ``replay.html``.

    Returns:
        The paths written, as :meth:`StreamingRecorder.finish`.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    recorder = StreamingRecorder(out_dir, replay=replay)
    try:
        for sample in result.samples:
            recorder(result, sample)
    finally:
        recorder.close()
    return recorder.finish(result)


def write_timeseries(result: RunResult, path: Path) -> None:
    """Write ``timeseries.csv``: one row per recorded sample.

    As in ``StepResult``, ``t`` and the configuration are those at the end of the step, the gaps
    those at its start, and the forces (hence CoPs and force ZMP) act over it.

    Args:
        result: The run.
        path: Output file.
    """
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(timeseries_header(result.robot))
        for sample in result.samples:
            writer.writerow(timeseries_row(result.robot, sample))


def base_motion(model: pin.Model, data: pin.Data, q: np.ndarray,
                v: np.ndarray) -> tuple[pin.SE3, pin.Motion]:
    """Placement of the root link in the world and its velocity in its own frame.

    The root joint's frame is the root link's frame, and its local velocity is the body-frame
    twist that ``nav_msgs/Odometry`` wants, for every base type alike (free-flyer, planar,
    translation).

    Args:
        model: The robot's pinocchio model.
        data: A ``Data`` of that model (its kinematics are overwritten).
        q: Configuration.
        v: Velocity.

    Returns:
        ``(oMb, v_b)``: world placement and local spatial velocity of the root link (views into
        ``data``, valid until its next use).
    """
    pin.forwardKinematics(model, data, q, v)
    return data.oMi[1], data.v[1]


def tf_tree(model: pin.Model) -> list[tuple[int, int, bool]]:
    """The TF tree of a pinocchio model: one edge per link (BODY frame) and per operational frame
    (contact points), from its nearest ancestor link.

    Returns:
        ``(parent frame id, child frame id, moving)`` per edge; parent 0 (``universe``) is the
        world frame. ``moving`` is False when only fixed joints separate the two frames (those
        go to ``/tf_static``).
    """
    edges = []
    for fid, frame in enumerate(model.frames):
        if fid == 0 or frame.type not in (pin.FrameType.BODY, pin.FrameType.OP_FRAME):
            continue
        parent, moving = frame.parentFrame, False
        while parent != 0 and model.frames[parent].type != pin.FrameType.BODY:
            moving = moving or model.frames[parent].type == pin.FrameType.JOINT
            parent = model.frames[parent].parentFrame
        if parent == 0 and frame.type == pin.FrameType.BODY:
            # the root link: moving if a root joint (free-flyer, planar, ...) carries it
            moving = moving or frame.parentJoint != 0
        edges.append((parent, fid, moving))
    return edges


def frame_transforms(model: pin.Model, data: pin.Data, edges: list[tuple[int, int, bool]],
                     t: float) -> list[dict[str, Any]]:
    """TransformStamped fields of ``edges`` from the frame placements in ``data.oMf`` (run
    ``pin.framesForwardKinematics`` first): ``parentMchild = oMparent⁻¹ · oMchild``."""
    # Built here rather than by messages.transform_stamped: the same fields without its
    # per-vector checks, which cost more than the kinematics for 15 links at 1 kHz.
    stamp = messages.stamp(t)
    frames = model.frames
    out = []
    oMf = data.oMf
    for parent, child, _ in edges:
        oMc = oMf[child]
        # one pinocchio call for translation and quaternion (x, y, z, qx, qy, qz, qw)
        x = pin.SE3ToXYZQUAT(oMc if parent == 0 else oMf[parent].actInv(oMc)).tolist()
        out.append({
            "header": {"stamp": stamp,
                       "frame_id": WORLD_FRAME if parent == 0 else frames[parent].name},
            "child_frame_id": frames[child].name,
            "transform": {"translation": {"x": x[0], "y": x[1], "z": x[2]},
                          "rotation": {"x": x[3], "y": x[4], "z": x[5], "w": x[6]}},
        })
    return out


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
        self.force_scale = WEIGHT_ARROW_LENGTH / (robot.mass * gravity)
        self.plane_origin = np.array([0.0, 0.0, terrain.height])
        self.next_marker_t = -math.inf
        self.next_diagnostics_t = 0.0
        urdf = Path(robot.config.urdf_path).read_text()
        self.writer = McapTraceWriter(path, robot_description=urdf)
        static = [e for e in self.edges if not e[2]]
        if static:
            pin.framesForwardKinematics(self.model, self.data, robot.configuration())
            self.writer.write(*TF_STATIC, messages.tf_message(
                frame_transforms(self.model, self.data, static, 0.0)), 0.0, latched=True)

    def write(self, sample: Sample, result: RunResult | None = None) -> None:
        """Write the messages of one sample (and, given the run so far, ``/diagnostics`` at
        ``DIAGNOSTICS_RATE``)."""
        robot, writer = self.robot, self.writer
        step, obs, t = sample.step, sample.obs, sample.step.t
        writer.write(*CLOCK, messages.clock(t), t)
        writer.write(absolute(JOINT_STATES[0]), JOINT_STATES[1], messages.joint_state(
            t, robot.actuated_joint_names, step.q[robot.q_idx], step.v[robot.v_idx],
            step.tau), t)
        oMb, v_local = base_motion(self.model, self.data, step.q, step.v)
        quat = pin.Quaternion(oMb.rotation).coeffs()  # x, y, z, w
        writer.write(absolute(ODOM[0]), ODOM[1], messages.odometry(
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
        writer.write(*TF, messages.tf_message(transforms), t)
        for foot in obs.feet:
            writer.write(absolute(CONTACT_WRENCH[0].format(foot=foot.name)), CONTACT_WRENCH[1],
                         messages.wrench_stamped(t, foot.frame, foot.force, foot.torque), t)
            if foot.cop is not None:
                writer.write(absolute(COP[0].format(foot=foot.name)), COP[1],
                             messages.point_stamped(t, WORLD_FRAME, foot.cop), t)
        if obs.zmp is not None:
            writer.write(absolute(ZMP[0]), ZMP[1],
                         messages.point_stamped(t, WORLD_FRAME, obs.zmp), t)
        if t >= self.next_marker_t:
            self.next_marker_t = t + 1.0 / MARKER_RATE - 1e-9  # tolerance: t is a sum of dt's
            # The support polygon is stored in the terrain plane's (t₁, t₂) coordinates.
            polygon = self.plane_origin + obs.support_polygon @ self.terrain.R[:, :2].T
            writer.write(absolute(CONTACT_MARKERS[0]), CONTACT_MARKERS[1],
                         messages.contact_markers(
                             t, WORLD_FRAME, step.p, step.f_world, step.active,
                             [foot.cop for foot in obs.feet], obs.zmp, polygon,
                             mu=self.terrain.mu, force_scale=self.force_scale,
                             normals=self.terrain.normal), t)
        if result is not None and t >= self.next_diagnostics_t:
            self.next_diagnostics_t = t + 1.0 / DIAGNOSTICS_RATE - 1e-9
            writer.write(*DIAGNOSTICS, messages.diagnostic_array(t, [run_status(result, t)]), t)

    def close(self) -> None:
        """Finish the MCAP file (idempotent)."""
        self.writer.close()
