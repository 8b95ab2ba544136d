"""What both nodes share in rclpy: parameter declaration, the spin loop, optional TF, main().

**The spin loop** (:class:`NodeLoop`). rclpy's executors rebuild their wait set from every
entity of the node on each wait (parameter services, type-description service, timers, the
subscriptions): in Python that costs several times a 1 kHz period, so a closed loop of two
nodes spent most of its time there. :class:`NodeLoop` waits on one rcl wait set holding the
node's subscriptions, services, timers and clients; it takes the messages of ready
subscriptions itself (``take_message``, what the executor does) and calls their callbacks, and
hands everything else (services such as ``set_parameters`` and ``~/reset``, timers, QoS event
waitables) to a ``SingleThreadedExecutor`` only when one of them is ready (waitables also once
a second). Between waits the node's ``on_wake`` runs its periodic work and says when it next
needs to run. rclpy's own ``wait_for_message`` uses the same wait-set API.

**Shutdown** (:func:`run_node`, ``ros/signals.py``). rclpy's default signal handler shuts the
context down from a signal thread, so a publish in progress raised ``RCLError: publisher's
context is invalid``, and a second Ctrl-C during ``destroy_node`` a ``KeyboardInterrupt``
traceback. The nodes initialise rclpy without its signal handlers; SIGINT and SIGTERM are taken
by one thread of ours (``signals.Stopper``): during start-up they end the process at once; once
the loop runs they ask it to stop (a wait lasts at most :data:`MAX_WAIT`), then the node is
destroyed and rclpy shut down, exit code 0, no traceback; a node that has not ended
``signals.GRACE`` seconds after the request exits at once. That exit needs the GIL; a teardown
stuck in a C call that holds it is ended by faulthandler's watchdog after
:data:`TEARDOWN_LIMIT` (exit code 1, every thread's stack on stderr). Each phase of the start-up
is logged with the time it took.

**TF** (:func:`optional_tf_broadcaster`): ``tf2_ros`` is not among the ROS 2 wheels on PyPI;
TF is only for visualisation, so without it the simulator warns once and skips it.
"""

from __future__ import annotations

import faulthandler
import gc
import time
from collections.abc import Callable
from typing import Any

import rclpy
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor, TimeoutException
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.logging import get_logger
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from biped_contact_sim.errors import ConfigError
from biped_contact_sim.msgs.messages import fill_message
from biped_contact_sim.msgs.stamps import NS
from biped_contact_sim.robot.config import load_robot_config
from biped_contact_sim.robot.source import robot_parameters
from biped_contact_sim.ros import signals
from biped_contact_sim.ros.param_spec import ParamSpec
from biped_contact_sim.ros.params import common_robot_specs

DESCRIPTOR_FACTORIES = {"floating_point_range": FloatingPointRange,
                        "integer_range": IntegerRange}
MAX_WAIT = 0.05  # [s] longest single wait: a stop request is seen within this
#: [s] the node's teardown (destroy, rclpy shutdown) ends the process by faulthandler past this,
#: after ``signals.GRACE`` (which needs the GIL) had its chance
TEARDOWN_LIMIT = 2 * signals.GRACE
EXECUTOR_PERIOD = 1.0  # [s] the executor also runs this often (QoS event waitables)


def declare(node: Node, spec: ParamSpec):
    """Declare a parameter with its descriptor (description, units, range, read-only).

    rclpy refuses an override out of the descriptor's range, or of another type, with an
    exception at declaration; the parameter is then declared without those constraints so that
    its value reaches the node's validation, which reports every bad value at once, in the
    words of the schema (``dt = -1.0 must be in [1e-05, 0.1] s``).
    """
    descriptor = fill_message(ParameterDescriptor(), spec.descriptor_fields(),
                              DESCRIPTOR_FACTORIES)
    try:
        return node.declare_parameter(spec.name, spec.default, descriptor).value
    except (InvalidParameterValueException, InvalidParameterTypeException):
        loose = ParameterDescriptor(description=descriptor.description, dynamic_typing=True,
                                    read_only=descriptor.read_only)
        return node.declare_parameter(spec.name, spec.default, loose).value


def plain(value):
    """A parameter value as Python data (rclpy may return arrays as ``array.array``)."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
        return value
    return list(value)


def declare_robot_parameters(node: Node) -> dict:
    """Declare the common robot parameters and the read-only ``robot.*`` of the robot config.

    The ``robot.*`` defaults are the values of ``config/<robot>.yaml``; a params file passed by
    the launch (the same YAML file) may override them.
    """
    values = {s.name: declare(node, s) for s in common_robot_specs()}
    config = load_robot_config(values["robot_config"])
    overrides = {}
    for name, default in robot_parameters(config).items():
        spec = ParamSpec(name, default, "Robot config entry (from the robot YAML file)")
        overrides[name] = plain(declare(node, spec))
    values["robot_overrides"] = overrides
    return values


def load_kernels(log: Callable[[str], None], prefixes: tuple[str, ...], phase: Callable,
                 following: str) -> None:
    """Load the compiled kernels of the modules under ``prefixes`` (``jit.load_imported``:
    the node's own, not every module it happens to import) and end the start-up phase with how
    many came from numba's cache; from now on ``log`` announces any kernel that compiles
    (``biped-sim warm-up`` did not run on this machine, or a source changed since).

    Args:
        phase: the node's start-up phase logger, ``phase(done, following)``.
        following: the phase that comes next.
    """
    from biped_contact_sim import jit

    jit.set_compile_notice(log)
    kernels, compiled = jit.load_imported(prefixes)
    phase(f"{kernels} compiled kernels loaded"
          + (f" ({compiled} compiled: run `biped-sim warm-up` once after installing)"
             if compiled else " from numba's cache"), following)


def optional_tf_broadcaster(node: Node):
    """A ``tf2_ros.TransformBroadcaster``, or None (one warning) when tf2_ros is missing."""
    try:
        from tf2_ros import TransformBroadcaster
    except ImportError:
        node.get_logger().warning("tf2_ros is not installed (it is not among the ROS 2 wheels "
                                  "on PyPI): no TF broadcast of the base pose; everything else "
                                  "works (odom carries the same pose)")
        return None
    return TransformBroadcaster(node)


def log_events(node: Node, events: list, error_throttle: float | None = None) -> None:
    """Log session events once each (one call site per severity, as rclpy's throttling
    needs)."""
    for event in events:
        if event.severity == "error":
            if error_throttle:
                node.get_logger().error(event.text, throttle_duration_sec=error_throttle)
            else:
                node.get_logger().error(event.text)
        elif event.severity == "warning":
            node.get_logger().warning(event.text)
        else:
            node.get_logger().info(event.text)
    events.clear()


class NodeLoop:
    """Spins one node with one wait set (module docstring).

    Args:
        node: the node; its subscriptions, services, timers and clients are waited on.
        on_wake: called after every wait (message or timeout); returns the
            ``time.perf_counter()`` time at which it must run again, or None (only a message
            or a service call needs it).
        static: the node creates its subscriptions, services, timers and clients before the
            loop and destroys none while it runs (the two nodes): their handles are looked up
            once a second instead of before every wait (a C call per entity and wait; the
            nodes have ~12). A node that creates or destroys clients as it runs (a test probe)
            passes False.
    """

    def __init__(self, node: Node, on_wake: Callable[[], float | None], static: bool = False):
        self.node, self.static = node, static
        self.nodes, self.wakes = [node], [on_wake]
        self.executor = SingleThreadedExecutor(context=node.context)
        self.executor.add_node(node)
        self.stop_requested = False
        self._wait_set = None
        self._counts: tuple[int, ...] = ()
        self._next_executor = time.perf_counter() + EXECUTOR_PERIOD
        self._next_refresh = 0.0
        self._subs: list = []
        self._adds: list = []
        self._drains: dict[int, int] = {}

    def add(self, node: Node, on_wake: Callable[[], float | None]) -> None:
        """Spin another node of the same context in this loop (the composed form: simulator
        and controller in one process, one wait set)."""
        self.nodes.append(node)
        self.wakes.append(on_wake)
        self.executor.add_node(node)
        self._next_refresh = 0.0

    def drain(self, subscription, limit: int) -> None:
        """Take up to ``limit`` messages of ``subscription`` per wait, not one."""
        self._drains[subscription.handle.pointer] = int(limit)

    def on_wake(self) -> float | None:
        """Every node's periodic work; the earliest time one of them must run again."""
        due = None
        for wake in self.wakes:
            t = wake()
            if t is not None and (due is None or t < due):
                due = t
        return due

    def _entities(self) -> tuple[list, list, list, list]:
        subs, services, timers, clients = [], [], [], []
        for node in self.nodes:
            subs += node.subscriptions
            services += node.services
            timers += node.timers
            clients += node.clients
        return subs, services, timers, clients

    def _run_executor(self) -> None:
        """Execute every callback the executor finds ready now (services, timers, waitables)."""
        for _ in range(100):
            try:
                handler, _entity, _node = self.executor.wait_for_ready_callbacks(timeout_sec=0)
            except TimeoutException:
                return
            handler()
            exception = handler.exception()
            if exception is not None:
                raise exception

    def _refresh(self, now: float) -> None:
        """Look up the node's entities and their handles (every wait; with ``static`` once per
        ``EXECUTOR_PERIOD``)."""
        subs, services, timers, clients = self._entities()
        counts = (len(subs), len(services), len(timers), len(clients))
        if counts != self._counts:
            self._wait_set = _rclpy.WaitSet(counts[0], 0, counts[2], counts[3], counts[1], 0,
                                            self.node.context.handle)
            self._counts = counts
        self._subs = subs
        ws = self._wait_set
        self._adds = [(ws.add_subscription, [s.handle for s in subs]),
                      (ws.add_service, [s.handle for s in services]),
                      (ws.add_timer, [t.handle for t in timers]),
                      (ws.add_client, [c.handle for c in clients])]
        self._next_refresh = now + EXECUTOR_PERIOD

    def spin_once(self, timeout: float) -> None:
        """Wait at most ``timeout`` seconds, take ready messages, run ready services."""
        if not self.static or time.perf_counter() >= self._next_refresh:
            self._refresh(time.perf_counter())
        subs = self._subs
        ws = self._wait_set
        ws.clear_entities()
        for add, handles in self._adds:
            for handle in handles:
                add(handle)
        ws.wait(max(0, int(timeout * NS)))
        if not self.node.context.ok():
            raise ExternalShutdownException()
        ready = ws.get_ready_entities("subscription")
        if ready:
            # one message each (a queue with more makes the next wait return), all of a
            # drained one's
            for sub in subs:
                pointer = sub.handle.pointer
                if pointer in ready:
                    for _ in range(self._drains.get(pointer, 1)):
                        taken = sub.handle.take_message(sub.msg_type, sub.raw)
                        if taken is None:
                            break
                        # Jazzy's callbacks may also take the MessageInfo (Humble's never do).
                        kind = getattr(sub, "_callback_type", None)
                        if kind is None or kind is sub.CallbackType.MessageOnly:
                            sub.callback(taken[0])
                        else:
                            sub.callback(*taken)
        now = time.perf_counter()
        if (ws.get_ready_entities("service") or ws.get_ready_entities("timer")
                or ws.get_ready_entities("client") or now >= self._next_executor):
            self._next_executor = now + EXECUTOR_PERIOD
            self._run_executor()

    def spin_until(self, condition: Callable[[], Any], timeout: float) -> bool:
        """Spin until ``condition()`` holds or ``timeout`` seconds (wall) pass; whether it
        holds."""
        end = time.monotonic() + timeout
        while not condition() and time.monotonic() < end:
            self.spin_once(0.05)
        return bool(condition())

    def spin(self) -> None:
        """Run until :meth:`request_stop` (a signal) or the context shuts down."""
        deadline = self.on_wake()
        while not self.stop_requested:
            timeout = MAX_WAIT if deadline is None else min(
                MAX_WAIT, max(0.0, deadline - time.perf_counter()))
            self.spin_once(timeout)
            if self.stop_requested:
                break
            deadline = self.on_wake()

    def request_stop(self, *_args: Any) -> None:
        self.stop_requested = True

    def close(self) -> None:
        """Release the executor's guard conditions now, while the context is valid (left to the
        garbage collector, after rclpy's shutdown, they print an InvalidHandle traceback)."""
        self.executor.shutdown(timeout_sec=0)


def run_node(make_nodes: Callable[..., Node | list[Node]], node_name: str, args=None,
             stopper: signals.Stopper | None = None) -> int:
    """init (without rclpy's signal handlers) → node(s) → one :class:`NodeLoop` until
    SIGINT/SIGTERM → destroy → shutdown (module docstring). ``make_nodes(phase)`` builds the
    node (or the nodes of a composed process, spun by the first one's loop), logging each
    phase of its start-up with ``phase(done, next)`` (``signals.timed_phase``). A ConfigError
    at start-up is logged as fatal and gives exit code 1, without a traceback.

    Args:
        stopper: the process's signal taker (``ros.entry`` installs it before the heavy
            imports); installed here when the node is started otherwise.
    """
    if stopper is None:
        stopper = signals.install(node_name)
    logger = get_logger(node_name)
    phase = signals.timed_phase(stopper, logger.info)
    phase("imported rclpy, pinocchio and numba", "initialising rclpy")
    nodes: list[Node] = []
    code = 0
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    try:
        stopper.phase = "building the node"
        made = make_nodes(phase)
        nodes = list(made) if isinstance(made, (list, tuple)) else [made]
        loop = nodes[0].loop
        for node in nodes[1:]:
            loop.add(node, node.loop.on_wake)
        stopper.attach(loop.request_stop)
        # Everything built so far (rclpy, pinocchio, numba's kernels: ~10⁵ objects) lives as
        # long as the process: out of the collector's reach, a full collection takes µs
        # instead of the ~30 ms that would stall ~30 control periods.
        gc.collect()
        gc.freeze()
        loop.spin()
    except ExternalShutdownException:
        pass
    except ConfigError as exc:
        logger.fatal(f"Invalid configuration:\n{exc}")
        code = 1
    finally:
        # A teardown stuck in the middleware with the GIL held leaves the signal thread no way to
        # end the process (seen once: ros2 launch escalated to SIGKILL after 15 s). faulthandler's
        # watchdog is a C thread: past TEARDOWN_LIMIT it prints every thread's stack and exits.
        faulthandler.dump_traceback_later(TEARDOWN_LIMIT, exit=True)
        try:
            for node in nodes:
                node.loop.close()
                node.destroy_node()
            rclpy.try_shutdown()
        finally:
            faulthandler.cancel_dump_traceback_later()
        stopper.finished()
    return code
