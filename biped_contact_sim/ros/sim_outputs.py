"""What the simulator node publishes, as message fields: the measurement of each control
period (:class:`StateSample`: ``/clock``, ``joint_states``, ``odom``, ``contact_wrench/<foot>``),
the visual topics of the last step (:class:`VisualSample`: ``cop/<foot>``, ``zmp``,
``contact_markers``) and its ``/diagnostics`` status.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from biped_contact_sim.msgs import markers, messages
from biped_contact_sim.msgs.messages import DIAG_ERROR, DIAG_OK, DIAG_WARN, diagnostic_status
from biped_contact_sim.msgs.stamps import stamp_fields
from biped_contact_sim.msgs.topics import (
    CLOCK,
    CONTACT_MARKERS,
    CONTACT_WRENCH,
    COP,
    JOINT_STATES,
    ODOM,
    SIM_STATUS_NAME,
    ZMP,
)
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.ros.scheduling import CommandTracker

if TYPE_CHECKING:
    from biped_contact_sim.ros.sim_session import SimSession


@dataclass
class StateSample:
    """The measurement the simulator publishes every control period (one source for the
    ``joint_states``, ``odom``, ``contact_wrench/<foot>`` and ``/clock`` messages).

    Attributes:
        stamp: simulated time [ns] (exact; ``stamp_ns(t)``).
        t: simulated time [s].
        q_joints, v_joints: actuated joint positions [rad] and velocities [rad/s], robot order.
        tau: torques applied over the last period [N m] (zeros before the first).
        position, quat_xyzw: world pose of the root link (quaternion x, y, z, w).
        linear, angular: root-link twist in its own frame [m/s, rad/s] (odometry convention).
        wrenches: per contact body, (force [N], torque [N m]) in its sole frame about the sole
            origin, from the last step's forces at the configuration they acted on.
    """

    stamp: int
    t: float
    q_joints: np.ndarray
    v_joints: np.ndarray
    tau: np.ndarray
    position: np.ndarray
    quat_xyzw: np.ndarray
    linear: np.ndarray
    angular: np.ndarray
    wrenches: list[tuple[np.ndarray, np.ndarray]]


@dataclass
class VisualSample:
    """What the visual topics show of the last step (``cop/<foot>``, ``zmp``,
    ``contact_markers``): CoP per contact body (None where undefined), ZMP, support polygon
    vertices [m, world], contact points, forces on the robot [N], active flags, μ, arrow scale
    [m/N] and the terrain normal (geometry contacts: a varying number of contacts, each with its
    own μ and normal)."""

    stamp: int
    t: float
    cops: list[tuple[str, np.ndarray | None]]
    zmp: np.ndarray | None
    polygon: np.ndarray
    points: np.ndarray
    forces: np.ndarray
    active: np.ndarray
    mu: float | np.ndarray
    force_scale: float
    normal: np.ndarray


def measurement_fields(s: StateSample, robot: RobotModel, frame: str
                       ) -> list[tuple[str, dict[str, Any]]]:
    """``/clock``, ``joint_states``, ``odom`` and ``contact_wrench/<foot>`` of a state sample,
    as :mod:`~biped_contact_sim.msgs.messages` fields (the node writes the same values into
    preallocated messages, :mod:`.writers`)."""

    out = [
        (CLOCK, messages.clock(s.t)),
        (JOINT_STATES, messages.joint_state(s.t, robot.actuated_joint_names, s.q_joints,
                                            s.v_joints, s.tau)),
        (ODOM, messages.odometry(s.t, frame, robot.base_link, s.position, s.quat_xyzw,
                                 s.linear, s.angular)),
    ]
    for body, (force, torque) in zip(robot.contact_bodies, s.wrenches, strict=True):
        out.append((CONTACT_WRENCH.format(foot=body.name),
                    messages.wrench_stamped(s.t, body.frame, force, torque)))
    for _, fields in out:  # the exact integer stamp (messages.stamp rounds the float t)
        stamp = fields["header"]["stamp"] if "header" in fields else fields["clock"]
        stamp.update(stamp_fields(s.stamp))
    return out


def visual_fields(v: VisualSample, frame: str) -> list[tuple[str, dict[str, Any]]]:
    """``cop/<foot>``, ``zmp`` (while defined) and ``contact_markers`` of a visual sample, as
    :mod:`~biped_contact_sim.msgs` fields (the node writes the markers in place,
    :class:`~.writers.MarkerWriter`)."""
    out = [(COP.format(foot=name), messages.point_stamped(v.t, frame, cop))
           for name, cop in v.cops if cop is not None]
    if v.zmp is not None:
        out.append((ZMP, messages.point_stamped(v.t, frame, v.zmp)))
    out.append((CONTACT_MARKERS, markers.contact_markers(
        v.t, frame, v.points, v.forces, v.active, [c for _, c in v.cops], v.zmp,
        v.polygon, mu=v.mu, force_scale=v.force_scale, normals=v.normal)))
    return out


def sim_status(session: SimSession) -> dict[str, Any]:
    """The simulator's ``DiagnosticStatus`` fields (layout in :func:`sim_status_values`)."""
    level, message = DIAG_OK, "running"
    measured = session.meter.value
    target = session.config.real_time_factor
    if session.error is not None:
        level, message = DIAG_ERROR, f"diverged: {session.error} (call ~/reset)"
    elif session.paused:
        message = "paused"
    elif session.config.lockstep and session.holding:
        level, message = DIAG_WARN, (f"lockstep: no command for lockstep_timeout: applying "
                                     f"the safe command ({session.safe.describe()})")
    elif session.config.lockstep and not session.gate.ready:
        message = "lockstep: waiting for the command of the published state"
    elif not session.config.lockstep and session.tracker.state in (CommandTracker.STALE,
                                                                   CommandTracker.NONE):
        level, message = DIAG_WARN, (f"torque command {session.tracker.state}: applying the "
                                     f"safe command ({session.safe.describe()})")
    elif not session.config.lockstep and session.waiting:
        message = ("waiting for a late joint_torque_cmd" if session.tracker.stamp is not None
                   else "waiting for the first joint_torque_cmd")
    if level == DIAG_OK and target > 0 and measured is not None and measured < 0.9 * target:
        level, message = DIAG_WARN, (f"slower than real_time_factor {target:g} (achieved "
                                     f"{measured:.3g}; late commands {session.late_commands}, "
                                     f"overruns {session.pacer.overruns})")
    return diagnostic_status(level, SIM_STATUS_NAME, message, session.robot.name,
                             sim_status_values(session))


def sim_status_values(session: SimSession) -> dict[str, Any]:
    """Key/values of the simulator status (README "Diagnostics")."""
    return {
        "sim_time_s": session.sim.t,
        "steps": session.steps,
        "contact_model": session.sim.contact.name,
        "contacts": session.sim.contacts,
        "world": session.world.world_name,
        "dt_s": session.sim.dt,
        "control_period_s": session.config.control_period,
        "real_time_factor_target": session.config.real_time_factor,
        "real_time_factor_measured": session.meter.value,
        "real_time_factor_overall": session.meter.overall,
        "overruns": session.pacer.overruns,
        "resyncs": session.pacer.resyncs,
        "late_commands": session.late_commands,
        "wait_time_s": session.wait_time,
        "mean_step_us": 1e6 * session.step_time / session.steps if session.steps else None,
        "lockstep": session.config.lockstep,
        "paused": session.paused,
        "command_state": ("hold" if session.holding else "lockstep") if session.config.lockstep
        else session.tracker.state,
        "safe_command": session.config.stale_command_action,
        "safe_command_periods": session.safe.periods,
        "commands_accepted": session.accepted,
        "commands_rejected": session.rejected,
        "last_rejection": session.last_rejection,
        "diverged": session.error or "",
    }
