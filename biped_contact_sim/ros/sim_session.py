"""The simulator node's session, without ROS: world, stepping, commands, state messages.

:class:`SimSession` is the simulator node's state machine (reset, pause, divergence, run-time
contact-model switch keeping the state, lockstep and real-time scheduling from
:mod:`.scheduling`) and builds the fields of the messages it publishes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from biped_contact_sim.contact import ContactModel
from biped_contact_sim.errors import DivergenceError
from biped_contact_sim.msgs import messages
from biped_contact_sim.msgs.markers import WEIGHT_ARROW_LENGTH
from biped_contact_sim.msgs.stamps import stamp_ns
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.robot.base_state import base_pose_twist
from biped_contact_sim.ros import sim_outputs
from biped_contact_sim.ros.events import Event
from biped_contact_sim.ros.param_spec import parse_key_values
from biped_contact_sim.ros.params import SimNodeConfig, substeps
from biped_contact_sim.ros.scheduling import (
    CommandTracker,
    CommandValidator,
    LockstepGate,
    Pacer,
    RealTimeMeter,
    SafeCommand,
)
from biped_contact_sim.ros.sim_outputs import StateSample, VisualSample
from biped_contact_sim.session.builder import build, contact_model
from biped_contact_sim.session.config import (
    ContactConfig,
    ControlConfig,
    RobotSource,
    SimConfig,
    WorldConfig,
)
from biped_contact_sim.sim.observables import Observer, foot_wrenches
from biped_contact_sim.sim.simulator import Simulator, StepResult


@dataclass
class World:
    """What the simulator node simulates (``session.build``'s, without a controller)."""

    robot: RobotModel
    sim: Simulator
    q0: np.ndarray
    v0: np.ndarray
    scenario: str
    params: dict[str, Any]
    world_name: str = ""  # the world file simulated ("" with points contacts and no world)


def build_world(config: SimNodeConfig, robot_overrides: Mapping[str, Any] | None = None
                ) -> World:
    """Robot, terrain, contact model, simulator and initial state for the simulator node:
    the node's parameters as a ``SimConfig`` (no controller: commands come over ROS), made by
    ``session.build`` as ``biped-sim`` makes a run.

    The robot is the scenario's own (as ``biped-sim``) when ``robot_config`` names it and
    nothing overrides it; otherwise it is loaded from the node's parameters (config name or
    path, ``urdf_path``, ``robot_description``, ``robot.*`` overrides from a params file).

    Args:
        config: the node's validated config.
        robot_overrides: ``robot.*`` parameter values (a params file may change them).

    Raises:
        ConfigError: bad robot, scenario settings or contact model.
    """
    built = build(SimConfig(
        robot=RobotSource(config.robot_config, config.urdf_path, config.robot_description,
                          dict(robot_overrides or {})),
        world=WorldConfig(config.scenario, parse_key_values(config.scenario_sets,
                                                            "scenario_sets"),
                          config.world, config.contacts),
        contact=ContactConfig(config.contact_model, config.contact.get(config.contact_model, {})),
        control=ControlConfig(controller="none"),
        dt=config.dt, integrator=config.integrator, max_speed=config.max_speed))
    return World(built.robot, built.sim, np.asarray(built.q0, float),
                 np.asarray(built.v0, float), built.scenario.name, built.params, built.world)


class SimSession:
    """The simulator node's state machine, without ROS.

    Per control period (``config.substeps`` physics steps of a zero-order-hold torque) the
    torque is, in lockstep, that of the command answering the last published state (the
    gate: the period runs when that command is here and, with a real-time factor, when the
    period is due); free running, that of the newest command while it is fresh
    (:class:`~.scheduling.CommandTracker`): a late command makes the simulator wait (its clock
    slows, the achieved real-time factor is reported) and a controller that stopped answering
    gets the stale action after ``command_timeout``. Late commands, the time waited and the
    overruns of the simulator's own computation are counted. After a period the measurement
    topics are due (:meth:`sample`). Divergence stops the stepping (``error`` holds the
    message) until :meth:`reset`.

    Args:
        world: from :func:`build_world`.
        config: the node's config.
        clock: wall clock in seconds (tests pass a fake one).
    """

    def __init__(self, world: World, config: SimNodeConfig,
                 clock: Callable[[], float] = time.perf_counter):
        self.world, self.config, self.clock = world, config, clock
        self.robot, self.sim = world.robot, world.sim
        self.n_sub = substeps(config.control_period, config.dt)
        self.validator = CommandValidator(self.robot.actuated_joint_names)
        self.tracker = CommandTracker(config.max_command_delay, config.command_timeout)
        self.safe = self._safe_command(config)
        self.gate = LockstepGate()
        self.pacer = Pacer(config.control_period, config.real_time_factor)
        self.meter = RealTimeMeter()
        self.observer = Observer(self.robot, self.sim.terrain)
        self._data = self.robot.create_data()
        gravity = float(np.linalg.norm(self.robot.model.gravity.linear))
        self.force_scale = WEIGHT_ARROW_LENGTH / (self.robot.mass * gravity)
        self.events: list[Event] = []
        self._log_times: dict[str, tuple[float, int]] = {}  # kind → (last logged, suppressed)
        self.paused = bool(config.start_paused)
        self.accepted = 0
        self.rejected = 0
        self.last_rejection = ""
        self.reset()

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        """Back to the initial state at t = 0; clears divergence, commands and counters."""
        self.sim.reset(self.world.q0, self.world.v0)
        self.error: str | None = None
        self.tau_applied = np.zeros(self.robot.n_joints)
        self.last_step: StepResult | None = None
        self.q_prev, self.v_prev = self.sim.q.copy(), self.sim.v.copy()
        self.steps = 0
        self.periods = 0
        self.step_time = 0.0
        self.late_commands = 0
        self.wait_time = 0.0
        self.waiting = False
        self.holding = False  # lockstep: running on the safe command (the controller is gone)
        self.hold_pacer: Pacer | None = None
        self.gate_since = self.clock()  # wall time since which the gate awaits its command
        self.tracker.reset()
        self.gate.reset()
        self.meter.reset()
        wall = self.clock()
        self.pacer.hold(wall, self.sim.t)
        self.meter.add(wall, self.sim.t)
        self.state_due = True  # the initial state is published (and awaited in lockstep)
        self.stamp = stamp_ns(self.sim.t)
        if self.config.lockstep:
            self.gate.expect(self.stamp)

    def _safe_command(self, config: SimNodeConfig) -> SafeCommand:
        return SafeCommand(self.robot, config.stale_command_action, config.hold_stiffness,
                           config.hold_damping, config.stale_damping, config.control_period)

    def note(self, kind: str, severity: str, text: str, every: float = 5.0) -> None:
        """Queue a log line of ``kind`` at most once per ``every`` wall seconds; the ones
        dropped in between are counted in the next (a condition that repeats every period is
        one line, not a thousand a second)."""
        now = self.clock()
        last, suppressed = self._log_times.get(kind, (-math.inf, 0))
        if now - last < every:
            self._log_times[kind] = (last, suppressed + 1)
            return
        if suppressed:
            text += f" ({suppressed} more since the last such line)"
        self._log_times[kind] = (now, 0)
        self.events.append(Event(severity, text))

    def set_paused(self, paused: bool) -> None:
        self.paused = bool(paused)
        wall = self.clock()
        self.pacer.hold(wall, self.sim.t)
        self.meter.reset()
        self.meter.add(wall, self.sim.t)

    def switch_contact_model(self, name: str, settings: Mapping[str, Any],
                             model: ContactModel | None = None) -> None:
        """Replace the contact model, keeping q, v and t (its internal state starts afresh);
        ``model``: the model already built from name and settings (``check_sim_update``).

        Raises:
            ConfigError: the model does not build or refuses dt/integrator (nothing changes).
        """
        if model is None:
            model = contact_model(name, settings, self.sim.dt, self.sim.settings.integrator)
        model.reset(self.robot.n_points)
        self.sim.contact = model

    def update_config(self, config: SimNodeConfig, model: ContactModel | None = None) -> None:
        """Apply run-time changes (real-time factor, command timing, stale action, contact
        model; ``model``: the new contact model when the check built it already)."""
        old, self.config = self.config, config
        if config.real_time_factor != old.real_time_factor:
            wall = self.clock()
            self.pacer.set_factor(config.real_time_factor, wall, self.sim.t)
            self.meter.reset()
            self.meter.add(wall, self.sim.t)
        self.tracker.timeout = config.command_timeout
        self.tracker.max_delay_ns = round(config.max_command_delay * 1e9)
        if (config.stale_command_action, config.hold_stiffness, config.hold_damping,
                config.stale_damping) != (old.stale_command_action, old.hold_stiffness,
                                          old.hold_damping, old.stale_damping):
            periods = self.safe.periods
            self.safe = self._safe_command(config)
            self.safe.periods = periods
        if (config.contact_model != old.contact_model
                or config.contact.get(config.contact_model)
                != old.contact.get(config.contact_model)):
            self.switch_contact_model(config.contact_model,
                                      config.contact.get(config.contact_model, {}), model)
            self.events.append(Event("info", f"Contact model is now {config.contact_model!r} "
                                     f"(state kept at t = {self.sim.t:.3f} s)"))

    # ------------------------------------------------------------------ commands
    def command(self, stamp: int, names: Sequence[str], efforts: Sequence[float],
                wall: float | None = None) -> str | None:
        """Handle a ``joint_torque_cmd`` answering the state stamped ``stamp`` [ns]; returns
        the rejection reason, or None when it is accepted."""
        tau, reason = self.validator.check(names, efforts)
        if reason is None and stamp > self.stamp:
            reason = (f"joint_torque_cmd stamped {stamp} ns answers no published state (the "
                      f"newest is stamped {self.stamp} ns)")
        if reason is None:
            if self.config.lockstep:
                if self.holding and stamp != self.gate.expected:
                    # a controller answers again (an older state: the hold ran on): stop here
                    # and wait for its answer to the state now published (lockstep resumes)
                    self.holding = False
                    self.gate_since = self.clock()
                    self.events.append(Event("info", "joint_torque_cmd again at t = "
                                             f"{self.sim.t:.3f} s: lockstep resumes"))
                    self.accepted += 1
                    return None
                reason = self.gate.offer(stamp, tau, self.clock() if wall is None else wall)
            else:
                reason = self.tracker.feed(stamp, tau)
        if reason is not None:
            return self.reject(reason)
        self.accepted += 1
        return None

    def reject(self, reason: str) -> str:
        """Count a rejected command (also one that could not even be read) and keep its
        reason; returns it."""
        self.rejected += 1
        self.last_rejection = reason
        return reason

    def _free_torque(self, wall: float) -> np.ndarray | None:
        """Torque for the next period when free running; None to wait for a late command."""
        tracker = self.tracker
        state = tracker.decide(self.stamp, wall)
        if state == CommandTracker.NONE and self.config.wait_for_first_command:
            state = CommandTracker.LATE
        changed = tracker.transition()
        what = self.safe.describe()
        if changed in (CommandTracker.STALE, CommandTracker.NONE):
            self.safe.start(self.sim.q)  # hold the posture the robot has now
        if changed == CommandTracker.STALE:
            self.note("stale", "warning", f"No joint_torque_cmd answering a recent state for "
                      f"{tracker.timeout:g} s of wall time (command_timeout) at t = "
                      f"{self.sim.t:.3f} s: applying {what}")
        elif changed == CommandTracker.FRESH:
            self.note("fresh", "info", f"Receiving joint_torque_cmd (t = {self.sim.t:.3f} s)")
        elif changed == CommandTracker.LATE and tracker.stamp is not None:
            self.note("late", "info", f"joint_torque_cmd late at t = {self.sim.t:.3f} s: "
                      "waiting for the controller (the simulated clock slows)")
        elif changed == CommandTracker.NONE:
            self.note("none", "info", f"No joint_torque_cmd yet: applying {what} until one "
                      "arrives")
        self.waiting = state == CommandTracker.LATE
        if self.waiting:
            return None
        if state == CommandTracker.FRESH:
            return tracker.tau
        return self.safe.torque(self.sim.q, self.sim.v)

    # ------------------------------------------------------------------ stepping
    def run_period(self, tau: np.ndarray) -> bool:
        """Advance one control period; False (and ``error`` set) if the simulation diverged."""
        start = self.clock()
        for _ in range(self.n_sub):
            q_prev, v_prev = self.sim.q, self.sim.v
            t0 = time.perf_counter()
            try:
                step = self.sim.step(tau)
            except DivergenceError as exc:
                self.error = str(exc)
                self.events.append(Event("error", f"{exc}. The node keeps running; call "
                                         "~/reset to start again"))
                return False
            self.step_time += time.perf_counter() - t0
            self.steps += 1
            self.last_step, self.q_prev, self.v_prev = step, q_prev, v_prev
        self.tau_applied = self.last_step.tau
        self.periods += 1
        self.stamp = stamp_ns(self.sim.t)
        wall = self.clock()
        self.pacer.record(wall - start)
        self.meter.add(wall, self.sim.t)
        self.state_due = True
        return True

    def tick(self, budget: float = 0.02, max_periods: int | None = None) -> int:
        """Run the control periods due now (at most ``budget`` wall seconds and ``max_periods``
        periods); returns how many.

        Lockstep: at most one period, when the gate is open and (with a real-time factor) the
        period is due; a command that came after its period was due is counted late, and the
        periods behind the schedule then run as their commands come, back to back, until the
        simulated clock has caught up with the wall clock (a schedule more than the pacer's
        ``max_lag`` behind restarts from now instead). Free running: the periods the pacer says
        are due, each with the torque of :meth:`_free_torque`; waiting for a late command
        (``max_command_delay``) restarts the schedule from now. Nothing runs while paused or
        diverged.
        """
        wall = self.clock()
        if self.paused or self.error is not None:
            return 0
        pacer = self.pacer
        if self.config.lockstep:
            if not self.gate.ready:
                return self._hold_periods(wall, budget, max_periods)
            due = pacer.next_due(self.sim.t)
            if due is not None:
                if wall < due:
                    return 0
                arrival = self.gate.arrival if self.gate.arrival is not None else wall
                if arrival > due:
                    self.late_commands += 1
                    # waited for: past its due time and past the state it answers (a period
                    # due before its state was out is behind the schedule, not waiting)
                    self.wait_time += max(0.0, arrival - max(due, self.gate_since))
                # the periods behind the wall clock run back to back (a late one is made up,
                # as when running free) unless they are more than max_lag behind: then the
                # schedule restarts from now (resyncs)
                pacer.due(wall, self.sim.t)
            if not self.run_period(self.gate.take()):
                return 0
            self.gate.expect(self.stamp)
            self.gate_since = self.clock()
            return 1
        n_due = pacer.due(wall, self.sim.t)
        if max_periods is not None:
            n_due = min(n_due, max_periods)
        done = 0
        while done < n_due and self.clock() - wall < budget:
            tau = self._free_torque(self.clock())
            if tau is None:
                pacer.restart(self.clock(), self.sim.t)
                break
            if not self.run_period(tau):
                break
            done += 1
        self.late_commands = self.tracker.late_periods
        self.wait_time = self.tracker.wait_time
        return done

    def _hold_timed_out(self, wall: float) -> bool:
        """Lockstep: the awaited command has not come for ``lockstep_timeout`` wall seconds,
        after commands had come (a controller that died; not one that is still starting)."""
        timeout = self.config.lockstep_timeout
        return (self.holding or (self.accepted > 0 and timeout > 0.0
                                 and wall - self.gate_since > timeout))

    def _hold_periods(self, wall: float, budget: float, max_periods: int | None) -> int:
        """Lockstep without its command for ``lockstep_timeout``: the safe command (a joint
        hold by default) at the real-time factor (1 when as fast as possible), each period's
        state published and awaited; a command answering one of them ends it (``command``)."""
        if not self._hold_timed_out(wall):
            return 0
        if not self.holding:
            self.holding = True
            self.safe.start(self.sim.q)
            self.hold_pacer = Pacer(self.config.control_period,
                                    self.config.real_time_factor or 1.0)
            self.hold_pacer.hold(wall, self.sim.t)
            self.note("lockstep_hold", "warning", "No joint_torque_cmd for the published state "
                      f"in {self.config.lockstep_timeout:g} s of wall time (lockstep_timeout) at "
                      f"t = {self.sim.t:.3f} s: applying {self.safe.describe()} until a "
                      "controller answers")
        n_due = self.hold_pacer.due(wall, self.sim.t)
        if max_periods is not None:
            n_due = min(n_due, max_periods)
        done = 0
        while done < n_due and self.clock() - wall < budget:
            if not self.run_period(self.safe.torque(self.sim.q, self.sim.v)):
                break
            self.gate.expect(self.stamp)
            done += 1
        return done

    def next_wakeup(self) -> float | None:
        """Wall time at which :meth:`tick` may run the next period without a new message (None:
        only a message can make it run: a command, a service call)."""
        if self.paused or self.error is not None:
            return None
        if self.config.lockstep and not self.gate.ready:
            if self.holding:
                return self.hold_pacer.next_due(self.sim.t)
            if self.accepted > 0 and self.config.lockstep_timeout > 0.0:
                return self.gate_since + self.config.lockstep_timeout
            return None
        if not self.config.lockstep and self.waiting:
            start = self.tracker.wait_start
            if self.tracker.timeout > 0.0 and start is not None:
                return start + self.tracker.timeout
            return None
        due = self.pacer.next_due(self.sim.t)
        return self.clock() if due is None else due

    # ------------------------------------------------------------------ outputs
    def sample(self) -> StateSample:
        """The measurement of the state now (see :class:`StateSample`); clears ``state_due``."""
        robot, sim = self.robot, self.sim
        pos, quat, lin, ang = base_pose_twist(robot.model, self._data, sim.q, sim.v)
        if self.last_step is not None:
            feet = foot_wrenches(robot, self._data, self.q_prev, self.last_step)
            wrenches = [(feet[b.name][:3], feet[b.name][3:]) for b in robot.contact_bodies]
        else:
            wrenches = [(np.zeros(3), np.zeros(3)) for _ in robot.contact_bodies]
        self.state_due = False
        return StateSample(self.stamp, sim.t, sim.q[robot.q_idx], sim.v[robot.v_idx],
                           self.tau_applied, pos, quat, lin, ang, wrenches)

    def measurement_fields(self) -> list[tuple[str, dict[str, Any]]]:
        """``/clock``, ``joint_states``, ``odom`` and ``contact_wrench/<foot>`` of the state now
        (:func:`.sim_outputs.measurement_fields`)."""
        return sim_outputs.measurement_fields(self.sample(), self.robot, self.config.world_frame)

    def tf_fields(self) -> dict[str, Any]:
        """The ``world → base link`` TransformStamped of the state now."""
        pos, quat, _, _ = base_pose_twist(self.robot.model, self._data, self.sim.q, self.sim.v)
        return messages.transform_stamped(self.sim.t, self.config.world_frame,
                                          self.robot.base_link, pos, quat)

    def visual_sample(self) -> VisualSample | None:
        """CoPs, ZMP, support polygon and contact forces of the last step (None before it)."""
        step = self.last_step
        if step is None:
            return None
        obs = self.observer.observe(step, self.q_prev, self.v_prev)
        terrain = self.sim.terrain
        # The support polygon is stored in the terrain plane's (t1, t2) coordinates.
        polygon = np.array([0.0, 0.0, terrain.height]) + obs.support_polygon @ terrain.R[:, :2].T
        mu, normal = terrain.mu, terrain.normal
        if step.contacts is not None:  # geometry contacts: each its own normal and μ
            mu, normal = step.contacts.mu, step.frames[:, :, 2]
        return VisualSample(stamp_ns(step.t), step.t, [(f.name, f.cop) for f in obs.feet],
                            obs.zmp, polygon, step.p, step.f_world, step.active, mu,
                            self.force_scale, normal)

    def visual_fields(self) -> list[tuple[str, dict[str, Any]]]:
        """``cop/<foot>``, ``zmp`` (while defined) and ``contact_markers`` of the last step
        (:func:`.sim_outputs.visual_fields`; none before the first step)."""
        v = self.visual_sample()
        return [] if v is None else sim_outputs.visual_fields(v, self.config.world_frame)

    def status(self) -> dict[str, Any]:
        """The simulator's ``DiagnosticStatus`` fields (:func:`.sim_outputs.sim_status`)."""
        return sim_outputs.sim_status(self)
