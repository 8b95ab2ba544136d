"""Run the nodes as processes and talk to them over DDS: shared by the pytest node suite
(test/ros/test_nodes_*.py) and the launch tests (test/ros/test_*_launch.py).

* :class:`NodeProcess`: ``simulator_node``/``controller_node`` from their console entry points
  (or the ament install's ``lib/biped_contact_sim``) with the package's params files, then an
  overrides file keyed ``/**`` — what ``launch_ros`` writes for a parameter dict — so every test
  also checks that later values win over the node files. Output goes to a file.
* :class:`Probe`: an rclpy node in its own context (a per-test ``ROS_DOMAIN_ID``, localhost
  discovery), spun with the nodes' own :class:`~biped_contact_sim.ros.node_common.NodeLoop` so
  that a 1 kHz topic costs the test process little.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import rclpy
import yaml
from rcl_interfaces.srv import GetParameters, SetParameters
from rclpy.parameter import Parameter, parameter_value_to_python
from rclpy.signals import SignalHandlerOptions

from biped_contact_sim.msgs.stamps import ns_from_stamp
from biped_contact_sim.robot.config import load_robot_config
from biped_contact_sim.ros.executables import node_executable
from biped_contact_sim.ros.node_common import NodeLoop

PACKAGE = "biped_contact_sim"
ROOT = Path(__file__).resolve().parents[2]
NS = 1_000_000_000
_domain_counter = [0]
# Discovery on this machine only: Jazzy's variable, or Humble's (deprecated on Jazzy).
LOCALHOST = ({"ROS_LOCALHOST_ONLY": "1"} if os.environ.get("ROS_DISTRO") == "humble"
             else {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"})


def stamp_ns(msg) -> int:
    """Integer nanoseconds of a message's header stamp."""
    return ns_from_stamp(msg.header.stamp.sec, msg.header.stamp.nanosec)


def share_dir() -> Path:
    """The package's urdf/ and config/: the source tree, or the ament share directory."""
    if (ROOT / "config" / "sim_node.yaml").is_file():
        return ROOT
    from ament_index_python.packages import get_package_share_directory

    return Path(get_package_share_directory(PACKAGE))


def executable(name: str) -> str | None:
    """Path of a node's executable (``ros.executables.node_executable``), or None when it is
    nowhere."""
    try:
        return node_executable(name)
    except FileNotFoundError:
        return None


def fresh_domain() -> int:
    """A ROS domain id for one test: different per test and per test process (100…229; the
    launch tests run in the environment's, colcon test and ros2/jazzy_check.sh pick below)."""
    _domain_counter[0] += 1
    return 100 + (os.getpid() * 37 + _domain_counter[0] * 11) % 130


def ros_env(domain: int | None) -> dict[str, str]:
    """Environment of a node process: the domain, localhost discovery, one BLAS thread."""
    env = dict(os.environ)
    if domain is not None:
        env["ROS_DOMAIN_ID"] = str(domain)
    env.update(LOCALHOST)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("OMP_NUM_THREADS", "1")
    env["PYTHONUNBUFFERED"] = "1"
    return env


class NodeProcess:
    """One node process (module docstring).

    Args:
        kind: ``simulator``, ``controller`` or ``composed`` (both nodes in one process).
        domain: ROS domain id (None: the environment's).
        overrides: parameter values given after the params files (as a launch file's dict).
        robot: robot config name (``config/<robot>.yaml`` is the first params file).
        node_files: pass ``config/sim_node.yaml``/``controller_node.yaml`` (default) or not.
        extra_args: more ``--ros-args`` arguments (e.g. ``-p name:=value``).
        env: environment variables set for the process, over the test's.
    """

    EXECUTABLES: ClassVar[dict[str, str]] = {"simulator": "simulator_node",
                                             "controller": "controller_node",
                                             "composed": "composed_node"}
    NODE_FILES: ClassVar[dict[str, tuple[str, ...]]] = {
        "simulator": ("sim_node.yaml",), "controller": ("controller_node.yaml",),
        "composed": ("sim_node.yaml", "controller_node.yaml")}

    def __init__(self, kind: str, domain: int | None, overrides: dict[str, Any] | None = None,
                 robot: str = "biped3d", node_files: bool = True,
                 extra_args: tuple[str, ...] = (), env: dict[str, str] | None = None):
        exe = executable(self.EXECUTABLES[kind])
        if exe is None:
            raise FileNotFoundError(f"{self.EXECUTABLES[kind]} is not installed (pip install -e "
                                    ". or colcon build)")
        self.kind = kind
        self.dir = Path(tempfile.mkdtemp(prefix=f"{kind}_"))
        # Kept until the test process ends (tests read the log after stop()), then removed.
        atexit.register(shutil.rmtree, self.dir, True)
        share = share_dir()
        args = [exe, "--ros-args", "--params-file", str(share / "config" / f"{robot}.yaml")]
        if node_files:
            for name in self.NODE_FILES[kind]:
                args += ["--params-file", str(share / "config" / name)]
        if overrides:
            path = self.dir / "overrides.yaml"
            path.write_text(yaml.safe_dump({"/**": {"ros__parameters": dict(overrides)}}))
            args += ["--params-file", str(path)]
        args += list(extra_args)
        self.args = args
        self.log_path = self.dir / "output.log"
        self._log = open(self.log_path, "w")  # closed in stop()
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT,
                                     env={**ros_env(domain), **(env or {})},
                                     start_new_session=True)
        self.returncode: int | None = None

    @property
    def output(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def wait_for_output(self, text: str, timeout: float) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if text in self.output:
                return True
            if not self.alive():
                return text in self.output
            time.sleep(0.1)
        return False

    def signal(self, signum: int) -> None:
        if self.alive():
            self.proc.send_signal(signum)

    def wait(self, timeout: float) -> int | None:
        try:
            self.returncode = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        return self.returncode

    def stop(self, timeout: float = 20.0) -> int:
        """SIGINT (as ``ros2 launch`` and Ctrl-C), then SIGTERM/SIGKILL if it hangs."""
        if self.alive():
            self.proc.send_signal(signal.SIGINT)
            if self.wait(timeout) is None:
                self.proc.terminate()
                if self.wait(5.0) is None:
                    self.proc.kill()
                    self.wait(5.0)
        self.returncode = self.proc.returncode
        self._log.close()
        return self.returncode


class Probe:
    """The test's own node (module docstring): records topics, publishes, calls services.

    Args:
        domain: ROS domain id (None: the environment's, e.g. under launch_testing).
        name: node name.
    """

    def __init__(self, domain: int | None = None, name: str = "probe"):
        os.environ.update(LOCALHOST)
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain,
                   signal_handler_options=SignalHandlerOptions.NO)
        self.node = rclpy.create_node(name, context=self.context)
        self.loop = NodeLoop(self.node, lambda: None)
        self.received: dict[str, list] = {}
        self.arrival: dict[str, list[float]] = {}

    def close(self) -> None:
        self.loop.close()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)

    # ------------------------------------------------------------------ topics
    def record(self, topic: str, msg_type: type, callback: Callable | None = None,
               depth: int = 100) -> list:
        """Keep every message of ``topic`` (and its wall arrival time); returns the list."""
        msgs = self.received.setdefault(topic, [])
        times = self.arrival.setdefault(topic, [])

        def on_msg(msg):
            msgs.append(msg)
            times.append(time.monotonic())
            if callback is not None:
                callback(msg)

        self.node.create_subscription(msg_type, topic, on_msg, depth)
        return msgs

    def since(self, topic: str, wall: float) -> list:
        """Messages of ``topic`` that arrived after the wall time ``wall`` (time.monotonic)."""
        return [m for m, t in zip(self.received[topic], self.arrival[topic], strict=True)
                if t > wall]

    def publisher(self, topic: str, msg_type: type, depth: int = 10):
        return self.node.create_publisher(msg_type, topic, depth)

    # ------------------------------------------------------------------ spinning
    def spin_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            self.loop.spin_once(min(left, 0.05))

    def spin_until(self, condition: Callable[[], Any], timeout: float) -> bool:
        """Spin until ``condition()`` is true or ``timeout`` wall seconds pass."""
        end = time.monotonic() + timeout
        while not condition():
            left = end - time.monotonic()
            if left <= 0:
                return bool(condition())
            self.loop.spin_once(min(left, 0.05))
        return True

    def wait_for_subscribers(self, pub, timeout: float = 60.0) -> bool:
        return self.spin_until(lambda: pub.get_subscription_count() > 0, timeout)

    # ------------------------------------------------------------------ services
    def call(self, srv_type: type, service: str, request, timeout: float = 30.0):
        """Call a service; its response, or None when it is not there within ``timeout``."""
        client = self.node.create_client(srv_type, service)
        try:
            if not self.spin_until(client.service_is_ready, timeout):
                return None
            future = client.call_async(request)
            self.spin_until(future.done, timeout)
            return future.result() if future.done() else None
        finally:
            self.node.destroy_client(client)

    def set_parameters(self, node: str, timeout: float = 30.0, **values) -> list:
        """``ros2 param set``: the SetParametersResult of each value, in order."""
        request = SetParameters.Request()
        request.parameters = [Parameter(name, value=value).to_parameter_msg()
                              for name, value in values.items()]
        response = self.call(SetParameters, f"/{node}/set_parameters", request, timeout)
        assert response is not None, f"/{node}/set_parameters did not answer"
        return list(response.results)

    def get_parameters(self, node: str, *names: str, timeout: float = 30.0) -> dict[str, Any]:
        """``ros2 param get``: Python values by name."""
        response = self.call(GetParameters, f"/{node}/get_parameters",
                             GetParameters.Request(names=list(names)), timeout)
        assert response is not None, f"/{node}/get_parameters did not answer"
        return {name: parameter_value_to_python(value)
                for name, value in zip(names, response.values, strict=True)}


class RosTest:
    """One test's ROS world: a fresh domain, a probe node in it, node processes that must all
    stop cleanly on SIGINT (exit code 0, no traceback)."""

    def __init__(self):
        self.domain = fresh_domain()
        self._probe = None
        self.processes = []

    @property
    def probe(self):
        if self._probe is None:
            self._probe = Probe(self.domain, name=f"probe_{self.domain}")
        return self._probe

    def start(self, kind: str, expect_exit: int = 0, robot: str = "biped3d",
              extra_args: tuple[str, ...] = (), env: dict[str, str] | None = None,
              **overrides):
        """Start ``simulator``/``controller`` with parameter overrides; ``expect_exit`` is its
        exit code at the end of the test (0: stopped by SIGINT, cleanly); ``env`` as
        :class:`NodeProcess`'s."""
        proc = NodeProcess(kind, self.domain, overrides, robot=robot, extra_args=extra_args,
                           env=env)
        self.processes.append((proc, expect_exit))
        return proc

    def kill(self, proc: NodeProcess) -> None:
        """SIGKILL a node started here (a crash) and stop checking its exit."""
        proc.proc.kill()
        proc.wait(10.0)
        self.processes = [(p, c) for p, c in self.processes if p is not proc]

    def close(self) -> list[str]:
        problems = []
        for proc, expected in self.processes:
            code = proc.stop()
            if code != expected or "Traceback" in proc.output:
                problems.append(f"{proc.kind}: exit code {code} (expected {expected})\n"
                                f"{proc.output[-3000:]}")
        if self._probe is not None:
            self._probe.close()
        return problems


def robot_joint_names(robot: str = "biped3d") -> list[str]:
    """The actuated joints in τ order (from the robot's model, not from a node)."""
    from biped_contact_sim.robot import RobotModel

    return list(RobotModel(load_robot_config(robot)).actuated_joint_names)


def warm_compiled_kernels() -> None:
    """Every numba kernel compiled or found in numba's cache (``biped-sim warm-up``; see
    test/ros/conftest.py), so that the nodes load them instead of compiling."""
    from biped_contact_sim import jit

    failed = [r for r in jit.warm_up(report=None) if "error" in r]
    assert not failed, failed
