"""What decides, each control period, which torque the simulator applies and when it steps.

* :class:`CommandValidator`: unknown joint names, wrong lengths, duplicates, NaN/Inf → a reason;
* :class:`CommandTracker` (free running): the command is fresh when it answers a recent state;
  a late one makes the simulator wait (its clock slows), a dead controller the safe command;
* :class:`SafeCommand`: what is applied without a fresh command (a joint hold by default);
* :class:`LockstepGate`: one control period per command answering the last published state;
* :class:`Pacer`, :class:`RealTimeMeter`: periods due by the wall clock for a real-time factor,
  overrun and resync counters, the real-time factor achieved.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence

import numpy as np

from biped_contact_sim.errors import ConfigError
from biped_contact_sim.msgs.stamps import NS
from biped_contact_sim.ros.params import STALE_ACTIONS


class CommandValidator:
    """Checks a ``joint_torque_cmd`` (names, efforts) and orders it like the robot's joints.

    A command must name every actuated joint exactly once, with one finite effort per name
    (in any order). Efforts beyond the effort limits are not refused: the simulator clamps.
    The order of the last accepted name list is remembered, so a controller that always sends
    the same names costs one list comparison per command.

    Args:
        joint_names: the robot's actuated joints, in τ order.
    """

    def __init__(self, joint_names: Sequence[str]):
        self.joint_names = list(joint_names)
        self._index = {n: i for i, n in enumerate(self.joint_names)}
        self._last_names: list[str] | None = None
        self._last_order: np.ndarray | None = None

    def check(self, names: Sequence[str], efforts: Sequence[float]) -> tuple[np.ndarray | None,
                                                                             str | None]:
        """``(tau, None)`` for a valid command, ``(None, reason)`` otherwise."""
        names = list(names)
        efforts = np.asarray(efforts, dtype=float).reshape(-1)
        if names == self._last_names:
            if len(efforts) != len(names):
                return None, (f"joint_torque_cmd has {len(names)} names but {len(efforts)} "
                              "efforts")
            if not np.all(np.isfinite(efforts)):
                bad = [names[i] for i in np.flatnonzero(~np.isfinite(efforts))]
                return None, f"joint_torque_cmd effort is NaN or Inf for {', '.join(bad)}"
            tau = np.empty(len(self.joint_names))
            tau[self._last_order] = efforts
            return tau, None
        n = len(self.joint_names)
        if len(names) != len(efforts):
            return None, f"joint_torque_cmd has {len(names)} names but {len(efforts)} efforts"
        unknown = [x for x in names if x not in self._index]
        if unknown:
            return None, (f"joint_torque_cmd names unknown joint(s) {', '.join(map(repr, unknown))}"
                          f"; actuated joints: {', '.join(self.joint_names)}")
        duplicates = sorted({x for x in names if names.count(x) > 1})
        if duplicates:
            return None, f"joint_torque_cmd names joint(s) twice: {', '.join(duplicates)}"
        if len(names) != n:
            missing = [x for x in self.joint_names if x not in names]
            return None, (f"joint_torque_cmd has {len(names)} joints, expected {n}; missing: "
                          f"{', '.join(missing)}")
        bad = [names[i] for i in np.flatnonzero(~np.isfinite(efforts))]
        if bad:
            return None, f"joint_torque_cmd effort is NaN or Inf for {', '.join(bad)}"
        order = np.array([self._index[x] for x in names], dtype=int)
        self._last_names, self._last_order = names, order
        tau = np.empty(n)
        tau[order] = efforts
        return tau, None


class CommandTracker:
    """How recent the torque command is, by the state it answers (free-running simulator).

    Every command carries the stamp of the measurement it answers. At a period boundary, at
    simulated time t, the newest accepted command is

    * ``none``: no command yet: the stale action is applied and the simulator runs on;
    * ``fresh``: it answers a state at most ``max_delay`` older than t: it is applied;
    * ``late``: it answers an older state: the simulator waits for a newer command (its clock
      slows), at most ``timeout`` wall seconds in a row (0: as long as it takes);
    * ``stale``: it waited longer than ``timeout``: the stale action is applied and the
      simulator runs on until a fresh command arrives.

    :meth:`decide` returns the state; :meth:`transition` the state when it changed since the
    last call (so the node logs each transition once). ``late_periods`` counts the periods that
    waited, ``wait_time`` their total wall time.

    Args:
        max_delay: largest age of the answered state that still counts as fresh [s].
        timeout: longest wait for a late command [s of wall time]; 0 waits without limit.
    """

    NONE, FRESH, LATE, STALE = "none", "fresh", "late", "stale"

    def __init__(self, max_delay: float, timeout: float):
        self.max_delay_ns = round(float(max_delay) * NS)
        self.timeout = float(timeout)
        self.reset()

    def reset(self) -> None:
        self.stamp: int | None = None
        self.tau: np.ndarray | None = None
        self.state = self.NONE
        self.late_periods = 0
        self.wait_time = 0.0
        self.wait_start: float | None = None
        self._reported: str | None = None

    def feed(self, stamp: int, tau: np.ndarray) -> str | None:
        """A valid command answering the state stamped ``stamp``; a reason when it is ignored
        (older than the command in hand)."""
        if self.stamp is not None and stamp < self.stamp:
            return (f"joint_torque_cmd stamped {stamp} ns answers an older state than the "
                    f"command in hand ({self.stamp} ns)")
        self.stamp, self.tau = int(stamp), tau
        return None

    def decide(self, t_ns: int, wall: float) -> str:
        """The command's state for the period starting at simulated time ``t_ns`` (module doc)."""
        if self.stamp is None:
            state = self.NONE
        elif t_ns - self.stamp <= self.max_delay_ns:
            state = self.FRESH
        elif self.state == self.STALE:
            state = self.STALE
        else:
            if self.wait_start is None:
                self.wait_start = wall
                self.late_periods += 1
            state = self.LATE
            if self.timeout > 0.0 and wall - self.wait_start > self.timeout:
                state = self.STALE
        if state != self.LATE and self.wait_start is not None:
            self.wait_time += wall - self.wait_start
            self.wait_start = None
        self.state = state
        return state

    def transition(self) -> str | None:
        """The state when it differs from the last reported one, else None."""
        if self.state != self._reported:
            self._reported = self.state
            return self.state
        return None


class SafeCommand:
    """The torque the simulator applies without a fresh command — before the first one, after
    ``command_timeout`` — as a robot's driver does (``stale_command_action``):

    * ``hold`` (default): a joint PD hold on the posture the robot has when the safe command
      starts, ``τ = K_p (q_hold − q_a) − K_d v_a`` (``hold_stiffness``, ``hold_damping``,
      K_d capped by each joint's inertia as ``control.joint_pd``; no gravity model: a driver
      holds positions, it does not know the robot's masses);
    * ``damping``: ``τ = −d v_a`` (``stale_damping``);
    * ``zero``: no torque (the robot falls).

    :meth:`start` captures the posture (a new hold each time the command goes missing);
    :meth:`torque` evaluates it; ``periods`` counts the periods it was applied.
    """

    def __init__(self, robot, action: str, stiffness: float, damping: float,
                 stale_damping: float, dt: float):
        if action not in STALE_ACTIONS:
            raise ConfigError(f"stale_command_action = {action!r} is not one of: "
                              + ", ".join(STALE_ACTIONS))
        self.robot, self.action, self.dt = robot, action, float(dt)
        self.stiffness, self.damping, self.stale_damping = (float(stiffness), float(damping),
                                                            float(stale_damping))
        self._hold = None
        self.periods = 0

    def describe(self) -> str:
        if self.action == "hold":
            return (f"a joint hold (K_p {self.stiffness:g} N m/rad, K_d {self.damping:g} "
                    "N m s/rad) on the current posture")
        if self.action == "damping":
            return f"joint damping {self.stale_damping:g} N m s/rad"
        return "zero torque"

    def start(self, q: np.ndarray) -> None:
        """Hold the posture q from now on (``hold``)."""
        from biped_contact_sim.control.joint_pd import JointPD, JointPDSettings

        if self.action == "hold":
            self._hold = JointPD(self.robot, np.array(q, dtype=float), JointPDSettings(
                kp=self.stiffness, kd=self.damping, gravity_compensation=False), self.dt)

    def torque(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """The safe torque at (q, v) (before clamping to the effort limits)."""
        self.periods += 1
        if self.action == "hold":
            if self._hold is None:
                self.start(q)
            return self._hold(0.0, q, v)
        v_joints = np.asarray(v, dtype=float)[self.robot.v_idx]
        if self.action == "damping":
            return -self.stale_damping * v_joints
        return np.zeros(len(v_joints))


class LockstepGate:
    """Lets the simulator advance one control period per command for the published state.

    After publishing the state at stamp S the simulator calls ``expect(S)``; only a command
    stamped S (the controller copies the measurement's stamp) opens the gate; ``take()``
    returns its torque and closes the gate until the next ``expect``. Commands for other
    stamps, and repeats, are ignored with a reason. ``arrival`` is the wall time at which the
    awaited command came (for the late-command count).
    """

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.expected: int | None = None
        self.arrival: float | None = None
        self._tau: np.ndarray | None = None

    def expect(self, stamp_ns: int) -> None:
        self.expected, self._tau, self.arrival = int(stamp_ns), None, None

    @property
    def ready(self) -> bool:
        return self._tau is not None

    def offer(self, stamp_ns: int, tau: np.ndarray, wall: float = 0.0) -> str | None:
        """Accept the command for the awaited stamp; else return why it is ignored."""
        if self.expected is None:
            return "lockstep: no state awaits a command"
        if int(stamp_ns) != self.expected:
            return (f"lockstep: command stamped {stamp_ns} ns ignored, waiting for the state "
                    f"stamped {self.expected} ns")
        if self._tau is not None:
            return f"lockstep: second command for stamp {stamp_ns} ns ignored"
        self._tau = np.array(tau, dtype=float)
        self.arrival = float(wall)
        return None

    def take(self) -> np.ndarray:
        """The accepted torque; the gate closes."""
        if self._tau is None:
            raise RuntimeError("LockstepGate.take() without an accepted command")
        tau, self._tau, self.expected = self._tau, None, None
        return tau


class Pacer:
    """Wall-clock pacing of control periods for a real-time factor r.

    With r > 0 the simulated time follows ``t_anchor + r (wall − wall_anchor)``: the period
    that ends at ``t + period`` is due at :meth:`next_due`, and :meth:`due` says how many
    periods are due now. Periods behind the schedule are caught up (they are due at once)
    unless the simulation falls behind by more than ``max_lag`` wall seconds: then the schedule
    is dropped and re-anchored (``resyncs`` counts it) instead of bursting to catch up. Running
    free, a period that had to wait for its late command is not caught up either:
    :meth:`restart` re-anchors so that it runs now and the clock goes on from there (the
    simulated clock slows; :class:`RealTimeMeter` reports the factor achieved). With r = 0
    every call says ``max_batch`` periods are due (as fast as possible; the caller also bounds
    a batch by a wall-time budget). ``overruns`` counts the periods whose own computation took
    longer than their real-time budget (period / r).
    """

    def __init__(self, period: float, factor: float, max_lag: float = 0.1, max_batch: int = 100):
        self.period = float(period)
        self.factor = float(factor)
        self.max_lag = float(max_lag)
        self.max_batch = int(max_batch)
        self.overruns = 0
        self.resyncs = 0
        self._wall0: float | None = None
        self._t0 = 0.0

    def hold(self, wall: float, t: float) -> None:
        """Anchor the schedule at (wall, t): the next period is due one period later (start,
        pause, reset)."""
        self._wall0, self._t0 = float(wall), float(t)

    def restart(self, wall: float, t: float) -> None:
        """Anchor the schedule so that the period starting at t is due now (after a wait)."""
        if self.factor > 0.0:
            self.hold(wall - self.period / self.factor, t)

    def set_factor(self, factor: float, wall: float, t: float) -> None:
        self.factor = float(factor)
        self.hold(wall, t)

    def next_due(self, t: float) -> float | None:
        """Wall time at which the period starting at t is due (None when r = 0 or unanchored)."""
        if self.factor <= 0.0 or self._wall0 is None:
            return None
        return self._wall0 + (t + self.period - self._t0) / self.factor

    def due(self, wall: float, t: float) -> int:
        """Control periods to run now, for simulated time t at wall time ``wall``."""
        if self.factor <= 0.0:
            return self.max_batch
        if self._wall0 is None:
            self.hold(wall, t)
        target = self._t0 + self.factor * (wall - self._wall0)
        lag = target - t
        if lag / self.factor > self.max_lag:
            self.resyncs += 1
            self.restart(wall, t)  # one period due, from now on
            return 1
        return max(0, min(self.max_batch, math.floor(lag / self.period + 1e-9)))

    def record(self, compute_time: float) -> bool:
        """Count an overrun when one period's computation exceeded period / factor."""
        if self.factor > 0.0 and compute_time > self.period / self.factor:
            self.overruns += 1
            return True
        return False


class RealTimeMeter:
    """Achieved real-time factor: simulated over wall time, within a sliding wall-time window
    (:attr:`value`) and since the last :meth:`reset` (:attr:`overall`)."""

    def __init__(self, window: float = 2.0):
        self.window = float(window)
        self._samples: deque[tuple[float, float]] = deque()
        self._first: tuple[float, float] | None = None
        self._last: tuple[float, float] | None = None

    def reset(self) -> None:
        self._samples.clear()
        self._first = self._last = None

    def add(self, wall: float, t: float) -> None:
        sample = (float(wall), float(t))
        self._samples.append(sample)
        if self._first is None:
            self._first = sample
        self._last = sample
        while len(self._samples) > 2 and self._samples[-1][0] - self._samples[1][0] >= self.window:
            self._samples.popleft()

    @staticmethod
    def _ratio(a: tuple[float, float] | None, b: tuple[float, float] | None) -> float | None:
        if a is None or b is None or b[0] <= a[0]:
            return None
        return (b[1] - a[1]) / (b[0] - a[0])

    @property
    def value(self) -> float | None:
        """Δt_sim / Δt_wall over the window, None with fewer than two samples."""
        if len(self._samples) < 2:
            return None
        return self._ratio(self._samples[0], self._samples[-1])

    @property
    def overall(self) -> float | None:
        """Δt_sim / Δt_wall since the last reset (None with fewer than two samples)."""
        return self._ratio(self._first, self._last)
