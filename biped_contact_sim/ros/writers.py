"""In-place writers of the messages sent every control period.

``joint_states``, ``odom``, ``contact_wrench/<foot>``, ``/clock`` (simulator) and
``joint_torque_cmd`` (controller) carry the fields of :mod:`biped_contact_sim.record.messages`
(the recorder's conversion), but building a field dict and copying it with ``fill_message``
costs 0.2–0.5 ms per message in rclpy (per-element type checks of the generated setters),
several times a whole control period of Python. So each node allocates these messages once,
writes the constant fields (names, frames) once, and per period only the stamp and the numbers;
float sequences are assigned as ``array.array('d')``, which the generated setters take without
per-element checks. The node test suite checks that every writer produces the message
``fill_message`` makes from the ``messages`` fields of the same values.

Nothing here imports rclpy: the writers set attributes of the message objects the nodes pass.
"""

from __future__ import annotations

import array
from collections.abc import Sequence
from typing import Any

import numpy as np

from biped_contact_sim.ros.sim_session import StateSample

NS = 1_000_000_000


def doubles(values: np.ndarray) -> array.array:
    """A float64 ``array.array`` copy of an array (what rclpy stores for ``float64[]``)."""
    out = array.array("d")
    out.frombytes(np.ascontiguousarray(values, dtype=np.float64).tobytes())
    return out


def write_stamp(stamp: Any, ns: int) -> None:
    """``builtin_interfaces/Time`` of an integer nanosecond time (exact)."""
    stamp.sec = ns // NS
    stamp.nanosec = ns % NS


def write_xyz(vector: Any, values: np.ndarray) -> None:
    """``geometry_msgs/Vector3`` or ``Point`` fields."""
    vector.x, vector.y, vector.z = float(values[0]), float(values[1]), float(values[2])


class StateWriter:
    """Writes a :class:`~biped_contact_sim.ros.sim_session.StateSample` into preallocated
    ``/clock``, ``joint_states``, ``odom`` and ``contact_wrench/<foot>`` messages.

    Args:
        clock, joint_states, odom: the message objects (Clock, JointState, Odometry).
        wrenches: one WrenchStamped per contact body, in the robot's order.
        joint_names: actuated joints, in τ order.
        world_frame, base_link: ``odom`` frame and child frame.
        sole_frames: the frame of each contact body's wrench.
    """

    def __init__(self, clock: Any, joint_states: Any, odom: Any, wrenches: Sequence[Any],
                 joint_names: Sequence[str], world_frame: str, base_link: str,
                 sole_frames: Sequence[str]):
        self.clock, self.joint_states, self.odom = clock, joint_states, odom
        self.wrenches = list(wrenches)
        joint_states.name = [str(n) for n in joint_names]
        joint_states.header.frame_id = ""
        odom.header.frame_id = str(world_frame)
        odom.child_frame_id = str(base_link)
        for msg, frame in zip(self.wrenches, sole_frames, strict=True):
            msg.header.frame_id = str(frame)

    def write(self, s: StateSample) -> None:
        """Stamp and values of the state; the messages are ready to publish."""
        write_stamp(self.clock.clock, s.stamp)
        js = self.joint_states
        write_stamp(js.header.stamp, s.stamp)
        js.position = doubles(s.q_joints)
        js.velocity = doubles(s.v_joints)
        js.effort = doubles(s.tau)
        odom = self.odom
        write_stamp(odom.header.stamp, s.stamp)
        pose, twist = odom.pose.pose, odom.twist.twist
        write_xyz(pose.position, s.position)
        o = pose.orientation
        o.x, o.y, o.z, o.w = (float(v) for v in s.quat_xyzw)
        write_xyz(twist.linear, s.linear)
        write_xyz(twist.angular, s.angular)
        for msg, (force, torque) in zip(self.wrenches, s.wrenches, strict=True):
            write_stamp(msg.header.stamp, s.stamp)
            write_xyz(msg.wrench.force, force)
            write_xyz(msg.wrench.torque, torque)


class CommandWriter:
    """Writes torques into a preallocated ``joint_torque_cmd`` (JointState: names and efforts,
    empty positions and velocities, stamped with the measurement it answers).

    Args:
        msg: the JointState object.
        joint_names: actuated joints, in τ order.
    """

    def __init__(self, msg: Any, joint_names: Sequence[str]):
        self.msg = msg
        msg.name = [str(n) for n in joint_names]
        msg.header.frame_id = ""

    def write(self, stamp: int, tau: np.ndarray) -> Any:
        """The command answering the measurement stamped ``stamp`` [ns]; returns the message."""
        write_stamp(self.msg.header.stamp, stamp)
        self.msg.effort = doubles(tau)
        return self.msg
