"""Recorder: a ``RunResult`` → ``summary.json``, ``timeseries.csv`` and ``trace.mcap``.

The recorder converts and schedules; the physics (forces, CoPs, ZMPs) comes from the
simulator's ``StepResult`` and the observer's ``Observation`` of each recorded sample. ROS 2
message fields come only from :mod:`.messages`, and the MCAP carries the topics of
docs/architecture.md with their relative names, so a namespace (or ``ros2 bag play --remap``) moves
them all.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from biped_contact_sim.record import messages
from biped_contact_sim.record.mcap_writer import McapTraceWriter
from biped_contact_sim.robot import RobotModel

if TYPE_CHECKING:  # the runner (cli layer) produces what is recorded; only its types are used
    from biped_contact_sim.cli.runner import RunResult, Sample

WORLD_FRAME = "world"
SUMMARY_FILE = "summary.json"
TIMESERIES_FILE = "timeseries.csv"
TRACE_FILE = "trace.mcap"

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
MARKER_RATE = 50.0

# Topics (docs/architecture.md "Topics") and their message types.
JOINT_STATES = ("joint_states", "sensor_msgs/JointState")
ODOM = ("odom", "nav_msgs/Odometry")
TF = ("/tf", "tf2_msgs/TFMessage")
CONTACT_WRENCH = ("contact_wrench/{foot}", "geometry_msgs/WrenchStamped")
COP = ("cop/{foot}", "geometry_msgs/PointStamped")
ZMP = ("zmp", "geometry_msgs/PointStamped")
CONTACT_MARKERS = ("contact_markers", "visualization_msgs/MarkerArray")
CLOCK = ("/clock", "rosgraph_msgs/Clock")


def write_outputs(result: RunResult, out_dir: Path) -> dict[str, Path]:
    """Write the summary, the time series and the MCAP trace of a run.

    Args:
        result: The run (also a diverged one: everything recorded up to the divergence is
            written, and the summary carries ``error``).
        out_dir: Output folder, created if missing.

    Returns:
        ``{"summary": path, "timeseries": path, "trace": path}``.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {
        "summary": out_dir / SUMMARY_FILE,
        "timeseries": out_dir / TIMESERIES_FILE,
        "trace": out_dir / TRACE_FILE,
    }
    write_summary(result.summary(), paths["summary"])
    write_timeseries(result, paths["timeseries"])
    write_trace(result, paths["trace"])
    return paths


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
    """Write ``summary.json`` (strict JSON, indented).

    Args:
        summary: ``RunResult.summary()`` or any JSON-convertible dict.
        path: Output file.
    """
    with open(path, "w") as f:
        json.dump(json_safe(summary), f, indent=2, allow_nan=False)
        f.write("\n")


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
    row += step.phi.tolist()
    row += step.f_contact[:, 2].tolist()
    for foot in obs.feet:
        row += _xy(foot.cop)
    row += _xy(obs.zmp)
    row += _xy(obs.zmp_centroidal)
    row.append(float(obs.energy))
    return row


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


def write_trace(result: RunResult, path: Path) -> None:
    """Write ``trace.mcap`` with the simulator node's topics, ``/tf`` and ``/robot_description``.

    Per recorded sample: ``/clock``, ``joint_states``, ``odom``, ``/tf`` (world → base link),
    ``contact_wrench/<foot>`` (sole frame), ``cop/<foot>`` and ``zmp`` (world; skipped while
    undefined); ``contact_markers`` at most at ``MARKER_RATE`` (on the first sample, then on
    the first sample at least 1/``MARKER_RATE`` later).

    Args:
        result: The run.
        path: Output file.
    """
    robot, terrain = result.robot, result.sim.terrain
    urdf = Path(robot.config.urdf_path).read_text()
    base_link = robot.base_link
    model, data = robot.model, robot.create_data()
    gravity = float(np.linalg.norm(model.gravity.linear))
    force_scale = WEIGHT_ARROW_LENGTH / (robot.mass * gravity)
    plane_origin = np.array([0.0, 0.0, terrain.height])
    tangents = terrain.R[:, :2]
    next_marker_t = -math.inf
    with McapTraceWriter(path, robot_description=urdf) as writer:
        for sample in result.samples:
            step, obs, t = sample.step, sample.obs, sample.step.t
            writer.write(*CLOCK, messages.clock(t), t)
            writer.write(*JOINT_STATES, messages.joint_state(
                t, robot.actuated_joint_names, step.q[robot.q_idx], step.v[robot.v_idx],
                step.tau), t)
            oMb, v_local = base_motion(model, data, step.q, step.v)
            quat = pin.Quaternion(oMb.rotation).coeffs()  # x, y, z, w
            writer.write(*ODOM, messages.odometry(
                t, WORLD_FRAME, base_link, oMb.translation, quat, v_local.linear,
                v_local.angular), t)
            writer.write(*TF, messages.tf_message([messages.transform_stamped(
                t, WORLD_FRAME, base_link, oMb.translation, quat)]), t)
            for foot in obs.feet:
                writer.write(CONTACT_WRENCH[0].format(foot=foot.name), CONTACT_WRENCH[1],
                             messages.wrench_stamped(t, foot.frame, foot.force, foot.torque), t)
                if foot.cop is not None:
                    writer.write(COP[0].format(foot=foot.name), COP[1],
                                 messages.point_stamped(t, WORLD_FRAME, foot.cop), t)
            if obs.zmp is not None:
                writer.write(*ZMP, messages.point_stamped(t, WORLD_FRAME, obs.zmp), t)
            if t >= next_marker_t:
                next_marker_t = t + 1.0 / MARKER_RATE - 1e-9  # tolerance: t is a sum of dt's
                # The support polygon is stored in the terrain plane's (t₁, t₂) coordinates.
                polygon = plane_origin + obs.support_polygon @ tangents.T
                writer.write(*CONTACT_MARKERS, messages.contact_markers(
                    t, WORLD_FRAME, step.p, step.f_world, step.active,
                    [foot.cop for foot in obs.feet], obs.zmp, polygon, mu=terrain.mu,
                    force_scale=force_scale, normals=terrain.normal), t)
