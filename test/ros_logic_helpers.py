"""Helpers shared by the tests of the ROS layer's logic (imported, not collected)."""

import dataclasses
from pathlib import Path

from biped_contact_sim.msgs import stamps
from biped_contact_sim.ros import params as ros_params
from biped_contact_sim.ros import sim_session

ROOT = Path(__file__).resolve().parents[1]
MS = 1_000_000  # ns


class FakeClock:
    """A wall clock the test advances by hand."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def make_session(config=None, clock=None, **changes):
    config = dataclasses.replace(config or ros_params.sim_config({}), **changes)
    return sim_session.SimSession(sim_session.build_world(config), config, clock or FakeClock())


def pd_command(session, stamp, kp=50.0, kd=2.0):
    """A deterministic 'controller' answering a published state."""
    q, v = session.sim.q, session.sim.v
    robot = session.robot
    tau = kp * (session.world.q0[robot.q_idx] - q[robot.q_idx]) - kd * v[robot.v_idx]
    return session.command(stamp, robot.actuated_joint_names, tau)


def feed(assembler, session):
    """Give the assembler the measurement messages the simulator session publishes."""
    fields = dict(session.measurement_fields())
    js, od = fields["joint_states"], fields["odom"]
    stamp = stamps.ns_from_stamp(**js["header"]["stamp"])
    assert assembler.joint_state(stamp, js["name"], js["position"], js["velocity"]) is None
    pose, twist = od["pose"]["pose"], od["twist"]["twist"]
    xyz = ("x", "y", "z")
    assert assembler.odometry(stamp, [pose["position"][k] for k in xyz],
                              [pose["orientation"][k] for k in (*xyz, "w")],
                              [twist["linear"][k] for k in xyz],
                              [twist["angular"][k] for k in xyz]) is None
    for body in session.robot.contact_bodies:
        w = fields[f"contact_wrench/{body.name}"]["wrench"]
        assert assembler.wrench(body.name, stamp, [w["force"][k] for k in xyz],
                                [w["torque"][k] for k in xyz]) is None
    return stamp


def run_steps(sim, control, steps: int, closed: bool = True) -> None:
    """``steps`` simulator steps under ``control(t, q, v)``; a closed loop (``ClosedLoop``)
    also observes each step (its sole wrenches for the next measurement)."""
    for _ in range(steps):
        q = sim.q
        step = sim.step(control(sim.t, q, sim.v))
        if closed:
            control.observe(q, step)
