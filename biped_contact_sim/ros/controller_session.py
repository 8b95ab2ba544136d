"""The controller node's logic, without ROS: measurement assembly and the controller session.

* :class:`MeasurementAssembler`: ``joint_states`` + ``odom`` + ``contact_wrench/<foot>`` →
  pinocchio ``q``, ``v`` and sole wrenches (base pose and twist converted for free-flyer,
  planar and translation bases), synchronised by stamp (``exact``) or newest (``latest``);
* :class:`ControllerSession`: builds the controller and behaviour on the first measurement,
  computes torques, the command fields and the diagnostics (DiagnosticArray, CoM points,
  internal-force arrays).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pinocchio as pin

from biped_contact_sim.control import (
    Controller,
    ControlOutput,
    Measurement,
    make_behavior,
    make_controller,
)
from biped_contact_sim.errors import BipedSimError, ConfigError
from biped_contact_sim.msgs import messages
from biped_contact_sim.msgs.messages import (
    DIAG_OK,
    DIAG_WARN,
    diagnostic_array,
    diagnostic_status,
    float64_multi_array,
)
from biped_contact_sim.msgs.stamps import NS as _NS
from biped_contact_sim.msgs.stamps import stamp_fields
from biped_contact_sim.msgs.topics import (
    COM,
    COM_REF,
    CONTROLLER_STATUS_NAME,
    INTERNAL_FORCES,
    INTERNAL_FORCES_REF,
)
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.robot.base_state import base_state_from_odometry
from biped_contact_sim.ros.events import Event
from biped_contact_sim.ros.params import SYNC_MODES, ControllerNodeConfig


@dataclass
class _Parts:
    q_joints: np.ndarray | None = None
    v_joints: np.ndarray | None = None
    q_base: np.ndarray | None = None
    v_base: np.ndarray | None = None
    wrenches: dict[str, np.ndarray] = field(default_factory=dict)
    stamps: dict[str, int] = field(default_factory=dict)
    arrival: float = 0.0  # wall time of the newest part (the measurement's, once complete)


@dataclass
class AssembledMeasurement:
    """A complete measurement: stamp (ns) of the joint states, q, v and sole wrenches, and the
    wall time its last part arrived (``arrival``: when a command for it could first be
    computed; 0 when unknown)."""

    stamp: int
    q: np.ndarray
    v: np.ndarray
    wrenches: dict[str, np.ndarray]
    arrival: float = 0.0


class MeasurementAssembler:
    """Builds ``(q, v, wrenches)`` from ``joint_states``, ``odom`` and ``contact_wrench/<foot>``.

    Modes:

    * ``exact``: a measurement is complete when joint states, odometry and every foot's wrench
      carrying the same stamp have arrived (a simulator publishes them together; required for
      lockstep); the newest complete one is handed out, once, and older complete ones that
      were never handed out are dropped and counted (``skipped``: a controller slower than
      the measurements computes on the newest state, never on a queue of stale ones), except
      that a complete state older than the last one handed out is a reset of the simulator
      (time jumped back) and is handed out.
    * ``latest``: the newest message of each kind; complete when all kinds have arrived and the
      oldest is at most ``max_age`` seconds older than the newest joint states (hardware).
      A joint-states stamp is handed out once. :meth:`whole` tells when the newest messages
      all carry the newest joint states' stamp (a driver that stamps one period's messages
      alike has sent all of them): the controller computes then, without waiting for its
      timer.

    Joint states are matched by name: extra joints are ignored, a missing actuated joint makes
    the message rejected (with a reason).
    """

    def __init__(self, robot: RobotModel, sync: str = "exact", max_age: float = 0.05,
                 keep: int = 16, clock: Callable[[], float] = time.perf_counter):
        if sync not in SYNC_MODES:
            raise ConfigError(f"sync = {sync!r} is not one of: {', '.join(SYNC_MODES)}")
        self.robot, self.sync, self.max_age, self.keep = robot, sync, float(max_age), keep
        self.clock = clock
        self.skipped = 0
        self.feet = [b.name for b in robot.contact_bodies]
        self._parts: dict[int, _Parts] = {}
        self._latest = _Parts()
        self.last_stamp: int | None = None
        root = robot.model.joints[1]
        self._iq, self._nq_b = root.idx_q, root.nq
        self._iv, self._nv_b = root.idx_v, root.nv
        self._names: list[str] | None = None
        self._order: np.ndarray | None = None

    def reset(self) -> None:
        self._parts.clear()
        self._latest = _Parts()
        self.last_stamp = None

    def _slot(self, stamp: int) -> _Parts:
        if self.sync == "latest":
            return self._latest
        if stamp not in self._parts:
            self._parts[stamp] = _Parts()
            for old in sorted(self._parts)[:-self.keep]:
                del self._parts[old]
        return self._parts[stamp]

    def joint_state(self, stamp: int, names: Sequence[str], position: Sequence[float],
                    velocity: Sequence[float]) -> str | None:
        """Store joint positions/velocities; returns a rejection reason or None.

        The order found for a list of names is remembered, so a driver that always sends the
        same names costs one list comparison per message."""
        names = list(names)
        if names != self._names:
            index = {n: i for i, n in enumerate(names)}
            missing = [j for j in self.robot.actuated_joint_names if j not in index]
            if missing:
                return f"joint_states lacks actuated joint(s): {', '.join(missing)}"
            self._names = names
            self._order = np.array([index[j] for j in self.robot.actuated_joint_names], int)
        if len(position) != len(names) or len(velocity) != len(names):
            return (f"joint_states has {len(names)} names, {len(position)} positions and "
                    f"{len(velocity)} velocities (positions and velocities are required)")
        q = np.asarray(position, dtype=float)[self._order]
        v = np.asarray(velocity, dtype=float)[self._order]
        if not math.isfinite(q.sum() + v.sum()):  # NaN or ±Inf anywhere makes the sum so
            if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v))):
                return "joint_states contains NaN or Inf"
        slot = self._slot(stamp)
        slot.q_joints, slot.v_joints = q, v
        slot.stamps["joint_states"] = int(stamp)
        slot.arrival = self.clock()
        return None

    def odometry(self, stamp: int, position, quat_xyzw, linear, angular) -> str | None:
        """Store the base pose and twist; returns a rejection reason or None."""
        try:
            qb, vb = base_state_from_odometry(self.robot.config.base, position, quat_xyzw,
                                              linear, angular)
        except ValueError as exc:
            return str(exc)
        slot = self._slot(stamp)
        slot.q_base, slot.v_base = qb, vb
        slot.stamps["odom"] = int(stamp)
        slot.arrival = self.clock()
        return None

    def wrench(self, foot: str, stamp: int, force, torque) -> str | None:
        """Store a foot's sole wrench; returns a rejection reason or None."""
        if foot not in self.feet:
            return f"unknown foot {foot!r}; contact bodies: {', '.join(self.feet)}"
        w = np.concatenate((np.asarray(force, dtype=float).reshape(-1),
                            np.asarray(torque, dtype=float).reshape(-1)))
        if w.shape != (6,):
            return f"contact_wrench/{foot} needs 3 force and 3 torque values"
        if not math.isfinite(w.sum()) and not np.all(np.isfinite(w)):  # (the sum may overflow)
            return f"contact_wrench/{foot} contains NaN or Inf"
        slot = self._slot(stamp)
        slot.wrenches[foot] = w
        slot.stamps[foot] = int(stamp)
        slot.arrival = self.clock()
        return None

    def state(self, sample: Any, joint_names: Sequence[str], bodies: Sequence[str]
              ) -> list[str]:
        """A simulator's :class:`~biped_contact_sim.ros.sim_outputs.StateSample` taken as its
        ``joint_states`` (``joint_names``: its joints' order), ``odom`` and one
        ``contact_wrench/<body>`` per body of ``bodies`` would be (the values they carry,
        float64, are the sample's); returns the rejection reasons."""
        s = sample
        reasons = [self.joint_state(s.stamp, joint_names, s.q_joints, s.v_joints),
                   self.odometry(s.stamp, s.position, s.quat_xyzw, s.linear, s.angular)]
        reasons += [self.wrench(body, s.stamp, force, torque)
                    for body, (force, torque) in zip(bodies, s.wrenches, strict=True)]
        return [r for r in reasons if r is not None]

    def _complete(self, slot: _Parts) -> bool:
        return (slot.q_joints is not None and slot.q_base is not None
                and all(f in slot.wrenches for f in self.feet))

    def _assemble(self, stamp: int, slot: _Parts) -> AssembledMeasurement:
        q = pin.neutral(self.robot.model)
        v = np.zeros(self.robot.nv)
        q[self._iq:self._iq + self._nq_b] = slot.q_base
        v[self._iv:self._iv + self._nv_b] = slot.v_base
        q[self.robot.q_idx] = slot.q_joints
        v[self.robot.v_idx] = slot.v_joints
        self.last_stamp = stamp
        return AssembledMeasurement(stamp, q, v, {f: slot.wrenches[f].copy() for f in self.feet},
                                    slot.arrival)

    def missing(self) -> list[str]:
        """What the newest incomplete measurement still lacks (for a diagnostic message)."""
        slot = self._latest if self.sync == "latest" else (
            self._parts[max(self._parts)] if self._parts else _Parts())
        out = [] if slot.q_joints is not None else ["joint_states"]
        out += [] if slot.q_base is not None else ["odom"]
        out += [f"contact_wrench/{f}" for f in self.feet if f not in slot.wrenches]
        return out

    def whole(self, min_advance: int = 0) -> bool:
        """``latest``: whether the newest messages make a state whose parts all carry one stamp
        (every message of the driver's newest period has arrived), at least ``min_advance`` ns
        after the last state handed out."""
        slot = self._latest
        if not self._complete(slot):
            return False
        stamp = slot.stamps["joint_states"]
        if self.last_stamp is not None and stamp - self.last_stamp < max(min_advance, 1):
            return False
        for other in slot.stamps.values():
            if other != stamp:
                return False
        return True

    def pop(self) -> AssembledMeasurement | None:
        """The next complete measurement not handed out yet, or None."""
        if self.sync == "latest":
            slot = self._latest
            if not self._complete(slot):
                return None
            stamp = slot.stamps["joint_states"]
            if self.last_stamp is not None and stamp == self.last_stamp:
                return None
            if stamp - min(slot.stamps.values()) > self.max_age * _NS:
                return None
            return self._assemble(stamp, slot)
        last = self.last_stamp
        complete = [s for s in sorted(self._parts) if self._complete(self._parts[s])]
        newer = [s for s in complete if last is None or s > last]
        if newer:
            stamp = newer[-1]
            self.skipped += len(newer) - 1  # complete states never answered: too slow
            slot = self._parts.pop(stamp)
            for older in [s for s in self._parts if s < stamp]:
                del self._parts[older]
            return self._assemble(stamp, slot)
        if last is not None and last in self._parts:
            del self._parts[last]  # a re-sent state, answered already
        older = [s for s in complete if s < last] if last is not None else []
        if older:
            # A whole state older than the last one: time jumped back (the simulator was
            # reset); what was newer belongs to before the reset.
            slot = self._parts.pop(older[-1])
            self._parts.clear()
            return self._assemble(older[-1], slot)
        return None


def check_controller(robot: RobotModel, config: ControllerNodeConfig) -> None:
    """Build the behaviour and controller once at start-up, to refuse bad names and settings.

    The behaviour is built from the robot's standing configuration (or the neutral one); the
    node builds the real one from the first measurement.

    Raises:
        ConfigError: unknown controller/behaviour (listing the valid names) or a bad setting.
    """
    q = robot.standing_configuration() if robot.config.standing else pin.neutral(robot.model)
    try:
        behavior = make_behavior(config.behavior, robot, q, **config.behavior_params)
    except TypeError as exc:
        raise ConfigError(f"behavior_params = {config.behavior_params}: {exc}") from exc
    except ImportError as exc:
        raise ConfigError(f"behavior = {config.behavior!r} cannot be loaded: {exc}") from exc
    try:
        make_controller(config.controller, robot, behavior, config.control_period,
                        **config.controller_settings)
    except TypeError as exc:
        raise ConfigError(f"controller_settings = {config.controller_settings}: {exc}") from exc
    except ImportError as exc:
        raise ConfigError(f"controller = {config.controller!r} cannot be loaded: {exc}") from exc


@dataclass
class ControlCycle:
    """What one control cycle publishes: the torque (``joint_torque_cmd``, stamped with the
    measurement it answers) and, every N-th cycle, the diagnostics topics."""

    stamp: int
    names: list[str]
    tau: np.ndarray
    diagnostics: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @property
    def command(self) -> dict[str, Any]:
        """The ``joint_torque_cmd`` as :mod:`~biped_contact_sim.msgs.messages` fields (the
        node writes the same values into a preallocated message, :mod:`.writers`)."""
        fields = messages.joint_state(self.stamp / _NS, self.names, None, None, self.tau)
        fields["header"]["stamp"] = stamp_fields(self.stamp)
        return fields


class ControllerSession:
    """The controller node's logic: measurement → controller → ``joint_torque_cmd``.

    The behaviour and the controller are built on the first measurement (the behaviour's
    footholds come from that configuration) and rebuilt when time jumps back (a simulator
    reset). The controller's time is the stamp minus the first stamp, so a behaviour starts at
    t = 0 in simulation and on hardware alike. The command carries the measurement's exact stamp
    (what the simulator's lockstep gate and command tracker read).

    Args:
        robot: the robot model (the controller owns its own pinocchio Data).
        config: the node's config.
        clock: wall clock for the compute-time statistic.
    """

    def __init__(self, robot: RobotModel, config: ControllerNodeConfig,
                 clock: Callable[[], float] = time.perf_counter):
        self.robot, self.config, self.clock = robot, config, clock
        self.names = list(robot.actuated_joint_names)
        self.controller: Controller | None = None
        self.t0: int | None = None
        self.last: int | None = None
        self.cycles = 0
        self.failures = 0
        self.compute_time = 0.0
        self.max_compute = 0.0
        self.missed = 0  # commands published later than one control period after their state
        self.latency_sum = 0.0
        self.max_latency = 0.0
        self.latencies = 0
        self.skipped = 0  # complete measurements never answered (the assembler's count)
        self.inputs_rejected = 0
        self.last_input_rejection = ""
        self.last_error = ""
        self.last_output: ControlOutput | None = None
        self.last_measurement: AssembledMeasurement | None = None
        self.events: list[Event] = []
        self._data = robot.create_data()

    def reset(self) -> None:
        self.controller, self.t0, self.last = None, None, None

    def _build(self, q: np.ndarray) -> None:
        cfg = self.config
        behavior = make_behavior(cfg.behavior, self.robot, q, **cfg.behavior_params)
        self.controller = make_controller(cfg.controller, self.robot, behavior,
                                          cfg.control_period, **cfg.controller_settings)
        self.events.append(Event("info", f"Controller {cfg.controller!r} with behaviour "
                                 f"{cfg.behavior!r} started"))

    @property
    def t(self) -> float:
        """The controller's time of the last measurement [s] (0 before the first)."""
        if self.last is None or self.t0 is None:
            return 0.0
        return (self.last - self.t0) / _NS

    def step(self, meas: AssembledMeasurement) -> ControlCycle | None:
        """One control cycle; None when the controller failed (an event says why).

        Raises:
            ConfigError: the controller or behaviour cannot be built (bad name or setting).
        """
        if self.last is not None and meas.stamp < self.last:
            self.events.append(Event("warning", "Time jumped back (simulator reset?): "
                                     "restarting the controller and its behaviour"))
            self.reset()
        if self.controller is None:
            self._build(meas.q)
            self.t0 = meas.stamp
        self.last = meas.stamp
        self.last_measurement = meas
        t = (meas.stamp - self.t0) / _NS
        start = self.clock()
        try:
            out = self.controller.compute(Measurement(t, meas.q, meas.v, meas.wrenches))
            tau = np.asarray(out.tau, dtype=float).reshape(-1)
            if tau.shape != (self.robot.n_joints,) or not np.all(np.isfinite(tau)):
                raise ValueError(f"controller returned tau of shape {tau.shape} "
                                 f"(expected ({self.robot.n_joints},)) or with NaN/Inf")
        except (BipedSimError, ValueError, np.linalg.LinAlgError) as exc:
            self.failures += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            self.events.append(Event("error", f"Controller failed at t = {t:.3f} s: "
                                     f"{self.last_error}; no command published"))
            return None
        took = self.clock() - start
        self.compute_time += took
        self.max_compute = max(self.max_compute, took)
        self.cycles += 1
        self.last_output = out
        cycle = ControlCycle(meas.stamp, self.names, tau)
        if (self.cycles - 1) % self.config.diagnostics_decimation == 0:
            cycle.diagnostics = self.diagnostics(meas, t, out)
        return cycle

    def reject_input(self, reason: str) -> str:
        """Count an input message that was not used (unreadable, NaN, wrong joints); returns
        the reason."""
        self.inputs_rejected += 1
        self.last_input_rejection = reason
        return reason

    def published(self, meas: AssembledMeasurement, wall: float) -> None:
        """The command for ``meas`` went out at wall time ``wall``: its latency from the
        measurement's arrival; later than one control period is a missed deadline (a driver
        running at that period has applied an older command meanwhile)."""
        if meas.arrival <= 0.0:
            return
        latency = wall - meas.arrival
        self.latencies += 1
        self.latency_sum += latency
        self.max_latency = max(self.max_latency, latency)
        if latency > self.config.control_period:
            self.missed += 1

    def diagnostics(self, meas: AssembledMeasurement, t: float, out: ControlOutput
                    ) -> list[tuple[str, dict[str, Any]]]:
        """``~/com``, ``~/com_ref``, ``~/internal_forces`` and ``~/internal_forces_ref``
        (README "Diagnostics"); references from the behaviour at t."""
        stamp = meas.stamp / _NS
        frame = self.config.world_frame
        com = pin.centerOfMass(self.robot.model, self._data, meas.q)
        ref = self.controller.behavior.reference(t)
        out_list: list[tuple[str, dict[str, Any]]] = []

        def stamped(fields: dict[str, Any]) -> dict[str, Any]:
            fields["header"]["stamp"] = stamp_fields(meas.stamp)
            return fields

        out_list.append((COM, stamped(messages.point_stamped(stamp, frame, com))))
        if ref.com is not None:
            out_list.append((COM_REF, stamped(messages.point_stamped(stamp, frame, ref.com))))
        internal = out.info.get("internal")
        if internal is not None:
            out_list.append((INTERNAL_FORCES, float64_multi_array(internal, "internal")))
        if ref.internal is not None:
            out_list.append((INTERNAL_FORCES_REF, float64_multi_array(ref.internal,
                                                                       "internal_ref")))
        return out_list

    def status(self, missing: Sequence[str] = ()) -> dict[str, Any]:
        """``/diagnostics`` fields (README "Diagnostics"): WARN while waiting for the first
        complete measurement (``missing`` names what lacks) or after a failure."""
        meas, out = self.last_measurement, self.last_output
        if meas is None or out is None or self.controller is None:
            status = diagnostic_status(DIAG_WARN, CONTROLLER_STATUS_NAME,
                                       "waiting for " + ", ".join(missing or ["a measurement"]),
                                       self.robot.name,
                                       {"cycles": self.cycles, "failures": self.failures,
                                        "missing": list(missing), "last_error": self.last_error,
                                        "inputs_rejected": self.inputs_rejected,
                                        "last_input_rejection": self.last_input_rejection})
            return diagnostic_array(0.0, [status])
        t = self.t
        com = pin.centerOfMass(self.robot.model, self._data, meas.q)
        ref = self.controller.behavior.reference(t)
        values = {
            "t_s": t,
            "controller": self.config.controller,
            "behavior": self.config.behavior,
            "stance": ", ".join(ref.stance),
            "cycles": self.cycles,
            "failures": self.failures,
            "mean_compute_us": 1e6 * self.compute_time / self.cycles if self.cycles else None,
            "max_compute_us": 1e6 * self.max_compute,
            "mean_latency_us": (1e6 * self.latency_sum / self.latencies if self.latencies
                                else None),
            "max_latency_us": 1e6 * self.max_latency,
            "missed_deadlines": self.missed,
            "skipped_measurements": self.skipped,
            "missed_fraction": ((self.missed + self.skipped) / (self.cycles + self.skipped)
                                if self.cycles + self.skipped else None),
            "inputs_rejected": self.inputs_rejected,
            "last_input_rejection": self.last_input_rejection,
            "com": com,
            "com_ref": ref.com,
            "tau": out.tau,
        }
        values.update({f"info.{k}": v for k, v in out.info.items()})
        level, message = DIAG_OK, "running"
        missed = values["missed_fraction"]
        # against a free-running driver (sync latest) a missed deadline is an older torque
        # applied; a lockstep simulator waits for every command, so there it is only a figure
        if self.config.sync == "latest" and missed is not None and missed > 0.01:
            level, message = DIAG_WARN, (f"missed deadlines: {100 * missed:.1f} % of the "
                                         f"measurements (compute mean "
                                         f"{values['mean_compute_us']:.0f} us)")
        if self.failures and self.last_error:
            level, message = DIAG_WARN, f"last failure: {self.last_error}"
            values["last_error"] = self.last_error
        status = diagnostic_status(level, CONTROLLER_STATUS_NAME, message, self.robot.name,
                                   values)
        array = diagnostic_array(0.0, [status])
        array["header"]["stamp"] = stamp_fields(meas.stamp)
        return array
