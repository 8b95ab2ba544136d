"""The checks of the node test suite, shared by the pytest suite (test/ros/test_nodes_*.py, the
nodes started from their entry points) and the launch tests (test/ros/test_*_launch.py, the
nodes started by the package's launch files under launch_testing).

Each check takes a :class:`~harness.Probe` connected to the nodes' domain and asserts with plain
``assert`` (pytest and unittest report both). A check never relies on a message sent before the
action it checks: it keeps only what arrived after the action and, where a stamp tells, what
belongs to the state after it. Checks return the figures they measured, for the report.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PointStamped, WrenchStamped
from harness import NS, Probe, stamp_ns
from nav_msgs.msg import Odometry
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_srvs.srv import SetBool, Trigger
from visualization_msgs.msg import MarkerArray

from biped_contact_sim.msgs.topics import CONTROLLER_STATUS_NAME, SIM_STATUS_NAME

FEET = ("left_foot", "right_foot")
SOLES = {"left_foot": "l_sole", "right_foot": "r_sole"}
GRAVITY = 9.81


# --------------------------------------------------------------------------------- helpers


def statuses(msgs, name: str) -> list[tuple[int, str, dict[str, str]]]:
    """(level, message, values) of every status called ``name`` in DiagnosticArray messages."""
    out = []
    for msg in msgs:
        for status in msg.status:
            if status.name == name:
                level = status.level[0] if isinstance(status.level, bytes) else status.level
                out.append((int(level), status.message,
                            {kv.key: kv.value for kv in status.values}))
    return out


def latest_status(probe: Probe, name: str, after: float, timeout: float,
                  condition=lambda level, message, values: True):
    """The first status ``name`` received after wall time ``after`` that meets ``condition``."""
    found = []

    def seek():
        for level, message, values in statuses(probe.since("/diagnostics", after), name):
            if condition(level, message, values):
                found.append((level, message, values))
                return True
        return False

    assert probe.spin_until(seek, timeout), (
        f"no {name!r} status meeting the condition within {timeout} s; last: "
        f"{statuses(probe.received.get('/diagnostics', [])[-1:], name)}")
    return found[0]


@dataclass
class Recorder:
    """The probe subscribed to the simulator's topics (``bodies``: the robot's contact bodies,
    the biped's feet by default)."""

    probe: Probe
    bodies: tuple[str, ...] = FEET

    def __post_init__(self):
        p = self.probe
        p.record("joint_states", JointState, depth=1000)
        p.record("odom", Odometry, depth=1000)
        p.record("/clock", Clock, depth=1000)
        for body in self.bodies:
            p.record(f"contact_wrench/{body}", WrenchStamped, depth=1000)
            p.record(f"cop/{body}", PointStamped)
        p.record("zmp", PointStamped)
        p.record("contact_markers", MarkerArray)
        p.record("/diagnostics", DiagnosticArray)

    def latest_stamp(self, timeout: float = 60.0) -> int:
        msgs = self.probe.received["joint_states"]
        assert self.probe.spin_until(lambda: msgs, timeout), "no joint_states"
        return stamp_ns(msgs[-1])


def pd_torque(msg: JointState, q_ref: np.ndarray, kp: float = 200.0, kd: float = 5.0):
    """A joint PD answer to a joint_states message."""
    return kp * (q_ref - np.asarray(msg.position)) - kd * np.asarray(msg.velocity)


def command(names, effort, stamp_msg) -> JointState:
    cmd = JointState(name=list(names), effort=[float(x) for x in effort])
    cmd.header.stamp = stamp_msg
    return cmd


# --------------------------------------------------------------------------------- topics


def check_topics_at_their_rates(rec: Recorder, control_period: float, publish_rate: float,
                                diagnostics_rate: float, window: float = 4.0) -> dict:
    """Every control period's state on every measurement topic (joint_states, odom, /clock,
    contact_wrench/<foot>, one stamp per period, the same stamps on all), the visual topics at
    ``publish_rate`` and /diagnostics at ``diagnostics_rate`` of wall time. Returns the wall
    rates and the simulator's achieved real-time factor."""
    probe = rec.probe
    rec.latest_stamp()
    start = time.monotonic()
    probe.spin_for(window)
    measurement = ["joint_states", "odom", "/clock", *(f"contact_wrench/{f}" for f in FEET)]
    stamps = {}
    for topic in measurement:
        msgs = probe.since(topic, start)
        stamps[topic] = [ns_of(m) for m in msgs]
        assert len(msgs) > 0, f"no {topic} in {window} s"
    period = round(control_period * NS)
    js = stamps["joint_states"]
    assert all(s % period == 0 for s in js), "joint_states stamps are not period multiples"
    assert all(b > a for a, b in itertools.pairwise(js)), "stamps go back"
    periods = (js[-1] - js[0]) // period + 1
    # One state per period: the probe (a Python subscriber) may miss a few under load.
    assert len(set(js)) >= 0.8 * periods, f"{len(set(js))} joint_states for {periods} periods"
    for topic in measurement[1:]:
        common = set(stamps[topic]) & set(js)
        assert len(common) >= 0.8 * len(js), f"{topic} stamps differ from joint_states'"
    rates = {t: len(probe.since(t, start)) / window for t in
             [*measurement, "zmp", "contact_markers", "cop/left_foot", "/diagnostics"]}
    for topic in ("contact_markers", "zmp", "cop/left_foot"):
        assert 0.3 * publish_rate <= rates[topic] <= 1.5 * publish_rate, (topic, rates[topic])
    sim = statuses(probe.since("/diagnostics", start), SIM_STATUS_NAME)
    assert 0.3 * diagnostics_rate * window <= len(sim) <= 1.5 * diagnostics_rate * window + 1
    rates["real_time_factor"] = (js[-1] - js[0]) / NS / window
    return rates


def ns_of(msg) -> int:
    return stamp_ns(msg) if hasattr(msg, "header") else (msg.clock.sec * NS + msg.clock.nanosec)


def check_messages_agree_with_the_model(rec: Recorder, joint_names: list[str]) -> None:
    """joint_states names every actuated joint in τ order with positions, velocities and
    efforts; odom is world → base_link with a unit quaternion; wrenches are in the sole frames;
    messages of one period share its stamp."""
    probe = rec.probe
    rec.latest_stamp()
    start = time.monotonic()
    probe.spin_until(lambda: len(probe.since("contact_wrench/right_foot", start)) >= 5, 30.0)
    js = probe.since("joint_states", start)[-1]
    assert list(js.name) == joint_names
    assert len(js.position) == len(js.velocity) == len(js.effort) == len(joint_names)
    assert np.all(np.isfinite(js.position)) and np.all(np.isfinite(js.velocity))
    odom = probe.since("odom", start)[-1]
    assert (odom.header.frame_id, odom.child_frame_id) == ("world", "base_link")
    o = odom.pose.pose.orientation
    assert math.isclose(o.x ** 2 + o.y ** 2 + o.z ** 2 + o.w ** 2, 1.0, rel_tol=1e-9)
    for foot in FEET:
        w = probe.since(f"contact_wrench/{foot}", start)[-1]
        assert w.header.frame_id == SOLES[foot]
    by_stamp = {ns_of(m) for m in probe.since("odom", start)}
    assert stamp_ns(js) in by_stamp or stamp_ns(js) > max(by_stamp)


def check_standing_wrenches_carry_the_weight(rec: Recorder, mass: float,
                                             seconds: float = 1.0) -> float:
    """Standing still, the sole wrenches' normal forces sum to m g (±5 %, over ``seconds`` of
    simulated time): the contact forces the simulator publishes are the ones that hold the
    robot up. Returns Σf_z / (m g)."""
    probe = rec.probe
    first = rec.latest_stamp()
    need = first + round(seconds * NS)
    start = time.monotonic()
    left = probe.received["contact_wrench/left_foot"]
    assert probe.spin_until(lambda: left and stamp_ns(left[-1]) >= need, 600.0)
    sums = {}
    for foot in FEET:
        for m in probe.since(f"contact_wrench/{foot}", start):
            sums.setdefault(stamp_ns(m), []).append(m.wrench.force.z)
    totals = [sum(v) for v in sums.values() if len(v) == 2]
    ratio = float(np.mean(totals)) / (mass * GRAVITY)
    assert abs(ratio - 1.0) < 0.05, f"sole forces sum to {ratio:.3f} m g"
    return ratio


# --------------------------------------------------------------------------------- commands


def wait_for_the_loop(probe: Probe, timeout: float = 600.0) -> None:
    """Wait until the controller answers (start-up: imports, its first build)."""
    commands = probe.record("joint_torque_cmd", JointState)
    assert probe.spin_until(lambda: commands, timeout), "the controller does not answer"


def check_bad_commands_are_rejected(rec: Recorder, joint_names: list[str],
                                   closed_loop: bool = False) -> None:
    """Unknown joint, NaN effort, a missing joint: each rejected (counted in /diagnostics), none
    applied, and the node keeps publishing. Without a controller no command is accepted
    meanwhile; in the closed loop (``closed_loop``) the controller's commands go on being
    accepted and every applied effort stays finite."""
    probe = rec.probe
    rec.latest_stamp()
    pub = probe.publisher("joint_torque_cmd", JointState)
    assert probe.wait_for_subscribers(pub)
    before = time.monotonic()
    _, _, values = latest_status(probe, SIM_STATUS_NAME, before, 30.0)
    rejected0 = int(values["commands_rejected"])
    accepted0 = int(values["commands_accepted"])
    n = len(joint_names)
    for bad in (JointState(name=["no_such_joint"], effort=[1.0]),
                JointState(name=joint_names, effort=[float("nan")] * n),
                JointState(name=joint_names[:-1], effort=[0.0] * (n - 1))):
        pub.publish(bad)
    sent = time.monotonic()
    _, _, values = latest_status(probe, SIM_STATUS_NAME, sent, 30.0,
                                 lambda lv, m, v: int(v["commands_rejected"]) >= rejected0 + 3)
    if closed_loop:
        assert int(values["commands_accepted"]) > accepted0, "the controller is no longer served"
    else:
        assert int(values["commands_accepted"]) == accepted0
    assert "joint_torque_cmd" in values["last_rejection"]
    stamp = rec.latest_stamp()
    js = probe.received["joint_states"]
    assert probe.spin_until(lambda: stamp_ns(js[-1]) > stamp + 5 * NS // 1000, 30.0), \
        "the node stopped publishing"
    assert all(np.all(np.isfinite(m.effort)) for m in probe.since("joint_states", before))


def check_wrong_length_after_a_valid_command_is_counted(rec: Recorder,
                                                        joint_names: list[str]) -> None:
    """A valid command, then the same names with too few efforts (the validator's fast path)
    and one stamped in the future: both rejected and counted with their reasons."""
    probe = rec.probe
    pub = probe.publisher("joint_torque_cmd", JointState)
    assert probe.wait_for_subscribers(pub)
    js = probe.received["joint_states"]
    rec.latest_stamp()
    _, _, values = latest_status(probe, SIM_STATUS_NAME, time.monotonic(), 30.0)
    rejected0 = int(values["commands_rejected"])
    msg = js[-1]
    n = len(joint_names)
    pub.publish(command(joint_names, [0.0] * n, msg.header.stamp))
    pub.publish(command(joint_names, [0.0] * (n - 2), msg.header.stamp))
    future = command(joint_names, [0.0] * n, msg.header.stamp)
    future.header.stamp.sec += 100
    pub.publish(future)
    _, _, values = latest_status(probe, SIM_STATUS_NAME, time.monotonic(), 30.0,
                                 lambda lv, m, v: int(v["commands_rejected"]) >= rejected0 + 2)
    assert int(values["commands_rejected"]) == rejected0 + 2
    assert "answers no published state" in values["last_rejection"]


def check_controller_rejects_malformed_inputs(probe: Probe, joint_names: list[str],
                                              feet: tuple[str, ...] = FEET) -> None:
    """Malformed messages on every topic the controller reads — joint states of the wrong
    length, with NaN, lacking a joint; odometry with NaN; a wrench with NaN — are each
    rejected and counted on its /diagnostics, and the node stays up."""
    pubs = {"joint_states": probe.publisher("joint_states", JointState),
            "odom": probe.publisher("odom", Odometry)}
    for foot in feet:
        pubs[foot] = probe.publisher(f"contact_wrench/{foot}", WrenchStamped)
    probe.record("/diagnostics", DiagnosticArray)
    for pub in pubs.values():
        assert probe.wait_for_subscribers(pub)
    _, _, values = latest_status(probe, CONTROLLER_STATUS_NAME, time.monotonic(), 30.0)
    before = int(values["inputs_rejected"])
    n = len(joint_names)
    bad = [("joint_states", JointState(name=joint_names, position=[0.0] * (n - 1),
                                       velocity=[0.0] * n)),
           ("joint_states", JointState(name=joint_names, position=[float("nan")] * n,
                                       velocity=[0.0] * n)),
           ("joint_states", JointState(name=joint_names[1:], position=[0.0] * (n - 1),
                                       velocity=[0.0] * (n - 1)))]
    zero = Odometry()
    zero.pose.pose.orientation.w = 0.0  # a zero quaternion is no orientation
    bad.append(("odom", zero))
    odom = Odometry()
    odom.pose.pose.orientation.w = float("nan")
    bad.append(("odom", odom))
    wrench = WrenchStamped()
    wrench.wrench.force.z = float("nan")
    bad.append((feet[0], wrench))
    for topic, msg in bad:
        pubs[topic].publish(msg)
    _, _, values = latest_status(probe, CONTROLLER_STATUS_NAME, time.monotonic(), 30.0,
                                 lambda lv, m, v: int(v["inputs_rejected"]) >= before + len(bad))
    assert int(values["inputs_rejected"]) == before + len(bad), values
    assert values["last_input_rejection"]
    # still up: it answers a status again
    latest_status(probe, CONTROLLER_STATUS_NAME, time.monotonic(), 30.0)


def check_silent_controller_gets_the_stale_action(rec: Recorder, joint_names: list[str]) -> None:
    """Free running: a command answering the newest state is applied; when no newer one comes
    the simulator waits (late) and after command_timeout applies the safe command (a joint hold
    on the posture it had, by default) and runs on, saying so on /diagnostics."""
    probe = rec.probe
    pub = probe.publisher("joint_torque_cmd", JointState)
    assert probe.wait_for_subscribers(pub)
    js = probe.received["joint_states"]
    rec.latest_stamp()
    msg = js[-1]
    pub.publish(command(msg.name, [0.5] * len(msg.name), msg.header.stamp))
    sent = time.monotonic()
    _, _, values = latest_status(probe, SIM_STATUS_NAME, sent, 60.0,
                                 lambda lv, m, v: v["command_state"] == "stale")
    assert int(values["late_commands"]) >= 1
    stale_at = stamp_ns(js[-1])
    assert values["safe_command"] == "hold"
    assert probe.spin_until(lambda: stamp_ns(js[-1]) > stale_at + 10 * NS // 1000, 30.0), \
        "the simulation does not run on after the stale action"
    # the hold: a PD on the posture it started at (not 0.5 N m everywhere, not zero torque)
    effort = np.array(js[-1].effort)
    assert np.all(np.isfinite(effort)) and not np.allclose(effort, 0.5) \
        and np.abs(effort).max() > 0.0


# --------------------------------------------------------------------------------- parameters


COMPILE_TIMEOUT = 600.0  # [s] a contact model's first step on a cold numba cache, loaded machine


def check_contact_model_switch(rec: Recorder, other: str) -> None:
    """``ros2 param set /simulator contact_model <other>`` switches at run time with the state
    kept (time goes on from where it was); an unknown name is refused, naming it."""
    probe = rec.probe
    before = rec.latest_stamp()
    current = probe.get_parameters("simulator", "contact_model")["contact_model"]
    (result,) = probe.set_parameters("simulator", contact_model=other)
    assert result.successful, result.reason
    # The first step of a model compiles its numba kernels unless numba's cache has them (a
    # fresh install: ~30 s on a quiet 2-core machine), during which the node answers nothing.
    assert probe.get_parameters("simulator", "contact_model",
                                timeout=COMPILE_TIMEOUT)["contact_model"] == other
    switched = time.monotonic()
    _, _, values = latest_status(probe, SIM_STATUS_NAME, switched, COMPILE_TIMEOUT,
                                 lambda lv, m, v: v["contact_model"] == other)
    assert float(values["sim_time_s"]) * NS >= before - NS // 1000  # not reset
    (bad,) = probe.set_parameters("simulator", contact_model="no_such_model")
    assert not bad.successful and "no_such_model" in bad.reason
    assert probe.get_parameters("simulator", "contact_model")["contact_model"] == other
    (back,) = probe.set_parameters("simulator", contact_model=current)
    assert back.successful, back.reason


def check_parameters_reach_the_node(probe: Probe, node: str, expected: dict) -> None:
    """Every given value is the node's parameter (over the params files' own values)."""
    got = probe.get_parameters(node, *expected)
    for name, value in expected.items():
        if isinstance(value, float):
            assert math.isclose(got[name], value), (name, got[name], value)
        else:
            assert got[name] == value, (name, got[name], value)


# --------------------------------------------------------------------------------- services


def check_pause_and_reset(rec: Recorder) -> None:
    """~/pause stops the clock (no newer state while paused), resumes it; ~/reset brings the
    state back to t = 0."""
    probe = rec.probe
    js = probe.received["joint_states"]
    rec.latest_stamp()
    assert probe.call(SetBool, "/simulator/pause", SetBool.Request(data=True)).success
    paused = time.monotonic()
    probe.spin_for(0.5)  # what was in flight arrives
    settled = max([stamp_ns(m) for m in probe.since("joint_states", paused)] + [0])
    later = time.monotonic()
    probe.spin_for(1.0)
    assert all(stamp_ns(m) <= settled for m in probe.since("joint_states", later)), \
        "states published while paused"
    assert probe.call(SetBool, "/simulator/pause", SetBool.Request(data=False)).success
    resumed = time.monotonic()
    assert probe.spin_until(lambda: any(stamp_ns(m) > settled
                                        for m in probe.since("joint_states", resumed)), 30.0)
    newest = stamp_ns(js[-1])
    assert newest > 0
    assert probe.call(Trigger, "/simulator/reset", Trigger.Request()).success
    reset = time.monotonic()
    assert probe.spin_until(lambda: any(stamp_ns(m) < min(newest, NS // 10)
                                        for m in probe.since("joint_states", reset)), 30.0), \
        "no state from t = 0 after ~/reset"


def check_divergence_is_reported_and_the_node_stays_up(rec: Recorder) -> str:
    """A diverging simulation stops with an ERROR status naming the divergence; the node keeps
    serving: ~/reset publishes the initial state (t = 0) again. Returns the status message."""
    probe = rec.probe
    level, message, values = latest_status(probe, SIM_STATUS_NAME, time.monotonic(), 600.0,
                                           lambda lv, m, v: v["diverged"] != "")
    assert level == 2 and message.startswith("diverged:"), (level, message)
    reset = time.monotonic()
    assert probe.call(Trigger, "/simulator/reset", Trigger.Request()).success
    assert probe.spin_until(lambda: any(stamp_ns(m) == 0 for m in
                                        probe.since("joint_states", reset)), 30.0), \
        "no state of t = 0 after ~/reset"
    return message


# --------------------------------------------------------------------------------- lockstep


def run_lockstep_controller(probe: Probe, periods: int, delay_every: int = 0,
                            timeout: float = 600.0) -> list[tuple[int, list, list]]:
    """The probe as a controller in lockstep: a PD answer stamped with each state's stamp, for
    ``periods`` consecutive states from t = 0 (states before the first t = 0 are ignored);
    every ``delay_every``-th answer comes 0.1 s late. Returns (stamp, position, velocity)."""
    pub = probe.publisher("joint_torque_cmd", JointState)
    assert probe.wait_for_subscribers(pub)
    states: list[tuple[int, list, list]] = []
    q_ref: list[np.ndarray] = []

    def answer(msg):
        stamp = stamp_ns(msg)
        if not states and stamp != 0:
            return  # a state of before the (re)start
        if (states and stamp <= states[-1][0]) or len(states) >= periods:
            return  # re-sent, or done
        if not q_ref:
            q_ref.append(np.asarray(msg.position))
        states.append((stamp, list(msg.position), list(msg.velocity)))
        if delay_every and len(states) % delay_every == 0:
            time.sleep(0.1)  # a slow controller must change nothing
        pub.publish(command(msg.name, pd_torque(msg, q_ref[0]), msg.header.stamp))

    probe.node.create_subscription(JointState, "joint_states", answer, 100)
    assert probe.spin_until(lambda: len(states) >= periods, timeout), \
        f"only {len(states)} of {periods} periods"
    return states


def check_lockstep_is_deterministic(probe: Probe, periods: int, control_period: float) -> float:
    """Two lockstep runs of ``periods`` (the second after ~/reset, with slow answers) give
    identical states, one control period per answer. Returns periods per wall second."""
    start = time.monotonic()
    first = run_lockstep_controller(probe, periods)
    rate = periods / (time.monotonic() - start)
    step = round(control_period * NS)
    assert [s for s, _, _ in first] == [k * step for k in range(periods)]
    assert probe.call(Trigger, "/simulator/reset", Trigger.Request()).success
    second = run_lockstep_controller(probe, periods, delay_every=max(periods // 3, 1))
    assert first == second, "the two lockstep runs differ"
    return rate


# --------------------------------------------------------------------------------- closed loop


@dataclass
class LoopReport:
    sim_time: float  # [s] of the simulator status that counted the commands
    wall_time: float
    real_time_factor: float
    min_base_height: float
    commands: int
    late_commands: int
    overruns: int


def check_closed_loop(probe: Probe, duration: float, min_height: float,
                      timeout: float) -> LoopReport:
    """Simulator + controller: ``duration`` simulated seconds without divergence or fall (the
    base stays above ``min_height``), every command accepted. Returns the figures."""
    heights: list[float] = []
    odom = probe.record("odom", Odometry, depth=1000,
                        callback=lambda m: heights.append(m.pose.pose.position.z))
    diagnostics = probe.record("/diagnostics", DiagnosticArray)
    commands = probe.record("joint_torque_cmd", JointState)
    # Start-up (imports, the controller's first build) is not part of the run.
    assert probe.spin_until(lambda: odom and commands, 600.0), "no odom or no command"
    start = time.monotonic()

    def done():
        sim = statuses(diagnostics[-1:], SIM_STATUS_NAME)
        return stamp_ns(odom[-1]) >= round(duration * NS) or (sim and sim[0][2]["diverged"])

    assert probe.spin_until(done, timeout), (
        f"reached t = {stamp_ns(odom[-1]) / NS:.2f} s of {duration} s in {timeout} s")
    wall = time.monotonic() - start
    # A status of the run's end: one published before it can still be queued when the last
    # odom is read (its counts would be those of an earlier time).
    _, _, values = latest_status(
        probe, SIM_STATUS_NAME, time.monotonic() - 0.01, 30.0,
        lambda lv, m, v: float(v["sim_time_s"]) >= duration - 1e-9 or v["diverged"] != "")
    assert values["diverged"] == "", values["diverged"]
    assert min(heights) > min_height, f"fell: base at {min(heights):.3f} m"
    # the controller's next status (a busy control loop can delay its diagnostics timer past
    # a 2 s run: wait for one as for the simulator's)
    _, _, ctrl = latest_status(probe, CONTROLLER_STATUS_NAME, time.monotonic() - 0.01, 30.0)
    assert int(ctrl["failures"]) == 0, ctrl
    assert int(values["commands_rejected"]) == 0, values["last_rejection"]
    return LoopReport(float(values["sim_time_s"]), wall,
                      float(values["real_time_factor_overall"] or "nan"), min(heights),
                      int(values["commands_accepted"]), int(values["late_commands"]),
                      int(values["overruns"]))


# --------------------------------------------------------------------------------- hardware swap


def record_stream(periods: int = 300, robot: str = "biped3d") -> list:
    """The messages a simulator publishes over ``periods`` control periods of a PD stand,
    computed in-process: the recorded 'hardware' stream."""
    from biped_contact_sim.ros import params, sim_session

    config = params.sim_config({"real_time_factor": 0.0, "lockstep": True,
                                "robot_config": robot})
    session = sim_session.SimSession(sim_session.build_world(config), config)
    robot = session.robot
    stream = []
    for _ in range(periods):
        stream.append(session.measurement_fields())
        q, v = session.sim.q, session.sim.v
        tau = 100.0 * (session.world.q0[robot.q_idx] - q[robot.q_idx]) - 5.0 * v[robot.v_idx]
        assert session.command(session.stamp, robot.actuated_joint_names, tau) is None
        assert session.tick() == 1
    return stream


def check_controller_answers_a_recorded_stream(probe: Probe, joint_names: list[str],
                                               periods: int = 100) -> int:
    """The hardware swap: the controller alone (sync latest), fed a driver's stream (its own
    joint order, an extra joint, no /clock), answers every measurement with a command in the
    robot's joint order, stamped with the measurement it answers. The stream is paced by the
    answers (the next measurement goes out when the last one is answered), so the check does
    not depend on the machine's speed. Returns the number of commands."""
    from biped_contact_sim.msgs.messages import fill_message

    types = {"joint_states": JointState, "odom": Odometry,
             "contact_wrench/left_foot": WrenchStamped,
             "contact_wrench/right_foot": WrenchStamped}
    pubs = {t: probe.publisher(t, m) for t, m in types.items()}
    commands = probe.record("joint_torque_cmd", JointState, depth=1000)
    for pub in pubs.values():
        assert probe.wait_for_subscribers(pub, 120.0)
    assert "simulator" not in probe.node.get_node_names()
    for k, fields in enumerate(record_stream(periods)):
        stamp = None
        for topic, data in fields:
            if topic not in pubs:
                continue  # /clock: a driver does not publish it
            msg = fill_message(types[topic](), data)
            if topic == "joint_states":  # a driver's order and an extra joint
                msg.name = ["gripper", *reversed(msg.name)]
                msg.position = [0.0, *reversed(msg.position)]
                msg.velocity = [0.0, *reversed(msg.velocity)]
                msg.effort = [0.0, *reversed(msg.effort)]
                stamp = stamp_ns(msg)
            pubs[topic].publish(msg)
        answered = probe.spin_until(lambda s=stamp: commands and stamp_ns(commands[-1]) == s,
                                    600.0 if k == 0 else 30.0)  # the first: controller start-up
        assert answered, f"measurement {k} (stamp {stamp} ns) not answered"
    for cmd in commands:
        assert list(cmd.name) == joint_names
        assert np.all(np.isfinite(cmd.effort)) and len(cmd.effort) == len(joint_names)
    assert len({stamp_ns(c) for c in commands}) == periods
    return len(commands)


# --------------------------------------------------------------------------------- all models


def check_every_contact_model_runs(rec: Recorder, models: list[str]) -> dict[str, float]:
    """Switched to each contact model in turn at run time, the simulator keeps publishing
    states and reports the model. Each model starts from ~/reset (t = 0): without a controller
    the biped falls and diverges after ~2 simulated seconds, which a slow switch (a model's
    first use loads its compiled kernels) must not reach. Returns the simulated seconds each
    ran for ~1 s of wall."""
    probe = rec.probe
    js = probe.received["joint_states"]
    out = {}
    for model in models:
        # the node may still be starting (imports, its first compiled calls): the first call
        # waits as long as the other checks wait for a node's first message
        reply = probe.call(Trigger, "/simulator/reset", Trigger.Request(), timeout=300.0)
        assert reply is not None and reply.success, "~/reset did not answer"
        (result,) = probe.set_parameters("simulator", contact_model=model)
        assert result.successful, result.reason
        switched = time.monotonic()
        _, _, values = latest_status(probe, SIM_STATUS_NAME, switched, 300.0,
                                     lambda lv, m, v, model=model: v["contact_model"] == model)
        assert values["diverged"] == "", values["diverged"]
        probe.spin_for(0.3)  # states sent before the reset arrive first
        first = rec.latest_stamp()
        assert probe.spin_until(lambda first=first: stamp_ns(js[-1]) > first, 30.0), model
        probe.spin_for(1.0)
        out[model] = (stamp_ns(js[-1]) - first) / NS
    return out


# --------------------------------------------------------------------------------- contact bodies


def check_a_wrench_of_every_contact_body_every_period(
        rec: Recorder, frames: dict[str, str], grounded: tuple[str, ...], periods: int = 60
) -> tuple[dict[str, float], dict[str, set[int]]]:
    """The simulator in lockstep, the probe its PD controller for ``periods`` periods:
    ``contact_wrench/<body>`` of every contact body (``frames``: body → its frame) carries
    every period's stamp, in the body's frame; the ``grounded`` bodies push (f_z > 0), the
    others are in the air and their wrench is exactly zero; ``contact_markers`` has a force
    arrow per contact point of every body and a CoP marker per body. Returns the mean f_z of
    each body and the marker ids of the last contact_markers by namespace."""
    probe = rec.probe
    states = run_lockstep_controller(probe, periods)
    # The first few states may precede the discovery of the probe's wrench subscriptions (the
    # simulator publishes only to subscribers); after them every period's wrench must come.
    wanted = [s for s, _, _ in states[10:]]

    def stamps(body):
        return {stamp_ns(m) for m in probe.received[f"contact_wrench/{body}"]}

    # The last period's wrenches may arrive after its joint_states.
    probe.spin_until(lambda: all(set(wanted) <= stamps(b) for b in frames), 30.0)
    mean_fz = {}
    for body, frame in frames.items():
        msgs = {stamp_ns(m): m for m in probe.received[f"contact_wrench/{body}"]}
        missing = [s for s in wanted if s not in msgs]
        assert not missing, f"contact_wrench/{body}: no message for stamps {missing[:5]}"
        got = [msgs[s] for s in wanted]
        assert all(m.header.frame_id == frame for m in got), (body, got[-1].header.frame_id)
        fz = [m.wrench.force.z for m in got]
        if body in grounded:
            assert min(fz) > 0.0, f"{body} does not push on the ground: f_z = {min(fz)}"
        else:
            for m in got:
                f, t = m.wrench.force, m.wrench.torque
                assert (f.x, f.y, f.z, t.x, t.y, t.z) == (0.0,) * 6, (body, m.wrench)
        mean_fz[body] = float(np.mean(fz))
    markers = probe.received["contact_markers"]
    assert probe.spin_until(lambda: markers, 30.0), "no contact_markers"
    by_ns: dict[str, set[int]] = {}
    for marker in markers[-1].markers:
        by_ns.setdefault(marker.ns, set()).add(marker.id)
    return mean_fz, by_ns


def check_controller_waits_for_every_contact_wrench(probe: Probe, robot: str,
                                                     bodies: list[str]) -> int:
    """The controller (sync exact) reads ``contact_wrench/<body>`` of every contact body: given
    one period's joint_states, odom and the wrenches of all bodies but the last, it reports
    that wrench missing in /diagnostics and does not answer; given that wrench too, it answers
    with a command stamped with the period's stamp. Returns that stamp."""
    from biped_contact_sim.msgs.messages import fill_message

    types = {"joint_states": JointState, "odom": Odometry}
    types.update({f"contact_wrench/{b}": WrenchStamped for b in bodies})
    pubs = {t: probe.publisher(t, m) for t, m in types.items()}
    commands = probe.record("joint_torque_cmd", JointState, depth=100)
    probe.record("/diagnostics", DiagnosticArray)
    for pub in pubs.values():
        assert probe.wait_for_subscribers(pub, 300.0)
    fields = dict(record_stream(1, robot)[0])
    msgs = {t: fill_message(types[t](), fields[t]) for t in types}
    stamp = stamp_ns(msgs["joint_states"])
    last = f"contact_wrench/{bodies[-1]}"
    sent = time.monotonic()
    for topic, msg in msgs.items():
        if topic != last:
            pubs[topic].publish(msg)
    latest_status(probe, CONTROLLER_STATUS_NAME, sent, 300.0,
                  lambda lv, m, v: v["missing"] == last)
    probe.spin_for(0.5)
    assert not commands, "the controller answered without the last contact body's wrench"
    pubs[last].publish(msgs[last])
    assert probe.spin_until(lambda: commands, 600.0), "no command after the last wrench"
    assert stamp_ns(commands[-1]) == stamp
    return stamp
