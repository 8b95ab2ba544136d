"""What ROS costs per control period: the closed loop in lockstep over DDS against the same loop
in-process.

    python -m biped_contact_sim.ros.overhead --controller wbc --behavior stand --rounds 3

In-process, one Python process runs per period what the two nodes run: the simulator session's
period and state sample, the measurement assembly from that sample, the controller session's
step. Over DDS, ``simulator_node`` (lockstep, real_time_factor 0) and ``controller_node`` run
as processes from their entry points in a private ROS domain (localhost discovery). Windows of
both are interleaved (the DDS loop paused with ``~/pause`` while the in-process one runs), and
for each the wall time and the CPU time (user + system, both node processes for DDS) per
period are measured; the overhead is the difference of the medians. On a busy machine the wall
time over DDS also holds the scheduler's delays of two processes handing over every period; the
CPU time does not.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from biped_contact_sim.ros import controller_session, params, sim_session
from biped_contact_sim.ros.executables import node_executable

SCENARIO = {"stand": "stand", "sway": "stand", "walk": "walk"}


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class InProcessLoop:
    """The two nodes' per-period work in one process, without messages."""

    def __init__(self, controller: str, behavior: str):
        config = params.sim_config({"lockstep": True, "real_time_factor": 0.0,
                                    "scenario": SCENARIO[behavior]})
        self.sim = sim_session.SimSession(sim_session.build_world(config), config)
        robot = self.sim.robot
        self.names = list(robot.actuated_joint_names)
        self.feet = [b.name for b in robot.contact_bodies]
        self.assembler = controller_session.MeasurementAssembler(robot)
        self.ctrl = controller_session.ControllerSession(
            robot, params.controller_config({"controller": controller, "behavior": behavior}))

    def period(self) -> None:
        a = self.assembler
        a.state(self.sim.sample(), self.names, self.feet)
        cycle = self.ctrl.step(a.pop())
        if cycle is None:
            raise RuntimeError(self.ctrl.last_error)
        if self.sim.command(cycle.stamp, self.names, cycle.tau) is not None:
            raise RuntimeError(self.sim.last_rejection)
        if self.sim.tick() != 1:
            raise RuntimeError(self.sim.error or "the period did not run")

    def window(self, seconds: float) -> tuple[float, float]:
        """(wall, CPU) seconds per period over about ``seconds`` of wall time."""
        n, wall0, cpu0 = 0, time.perf_counter(), time.process_time()
        while time.perf_counter() - wall0 < seconds:
            self.period()
            n += 1
        return (time.perf_counter() - wall0) / n, (time.process_time() - cpu0) / n


class RosLoop:
    """The two node processes in lockstep, observed through the simulator's diagnostics."""

    def __init__(self, controller: str, behavior: str, domain: int):
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.signals import SignalHandlerOptions

        from biped_contact_sim.ros.node_common import NodeLoop

        env = dict(os.environ, ROS_DOMAIN_ID=str(domain),
                   ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", OPENBLAS_NUM_THREADS="1",
                   OMP_NUM_THREADS="1")
        os.environ.update({k: env[k] for k in ("ROS_AUTOMATIC_DISCOVERY_RANGE",)})
        self.log = tempfile.TemporaryFile()
        sim_args = ["--ros-args", "-p", "lockstep:=true", "-p", "real_time_factor:=0.0", "-p",
                    f"scenario:={SCENARIO[behavior]}", "-p", "diagnostics_rate:=20.0"]
        ctrl_args = ["--ros-args", "-p", f"controller:={controller}", "-p",
                     f"behavior:={behavior}"]
        self.procs = [subprocess.Popen([node_executable(exe), *args], env=env, stdout=self.log,
                                       stderr=subprocess.STDOUT)
                      for exe, args in (("simulator_node", sim_args),
                                        ("controller_node", ctrl_args))]
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain,
                   signal_handler_options=SignalHandlerOptions.NO)
        self.node = rclpy.create_node("overhead_probe", context=self.context)
        self.loop = NodeLoop(self.node, lambda: None)
        self.sim_time = None
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_status, 10)
        if not self.loop.spin_until(lambda: self.sim_time is not None and self.sim_time > 0.05,
                                300.0):
            raise RuntimeError("the nodes did not start a closed loop")

    def _on_status(self, msg) -> None:
        for status in msg.status:
            if status.name.endswith("simulator"):
                values = {kv.key: kv.value for kv in status.values}
                self.sim_time = float(values["sim_time_s"])

    def pause(self, paused: bool) -> None:
        from std_srvs.srv import SetBool

        client = self.node.create_client(SetBool, "/simulator/pause")
        self.loop.spin_until(client.service_is_ready, 60.0)
        future = client.call_async(SetBool.Request(data=paused))
        self.loop.spin_until(future.done, 60.0)
        self.node.destroy_client(client)

    def window(self, seconds: float, period: float) -> tuple[float, float]:
        """(wall, CPU of both nodes) seconds per period over about ``seconds`` of wall time."""
        self.pause(False)
        self.loop.spin_once(0.0)
        t0 = self.sim_time
        self.loop.spin_until(lambda: self.sim_time != t0, 30.0)
        t0, wall0 = self.sim_time, time.perf_counter()
        cpu0 = sum(cpu_seconds(p.pid) for p in self.procs)
        self.loop.spin_until(lambda: time.perf_counter() - wall0 > seconds, seconds + 1)
        t1 = self.sim_time
        self.loop.spin_until(lambda: self.sim_time != t1, 30.0)
        wall, cpu = time.perf_counter() - wall0, sum(cpu_seconds(p.pid) for p in self.procs)
        n = round((self.sim_time - t0) / period)
        self.pause(True)
        return wall / n, (cpu - cpu0) / n

    def close(self) -> None:
        import signal

        for p in self.procs:
            p.send_signal(signal.SIGINT)
        for p in self.procs:
            p.wait(30)
        self.loop.close()
        self.node.destroy_node()
        import rclpy

        rclpy.try_shutdown(context=self.context)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--controller", default="wbc", choices=("ctc", "wbc"))
    parser.add_argument("--behavior", default="stand", choices=sorted(SCENARIO))
    parser.add_argument("--rounds", type=int, default=3, help="interleaved window pairs")
    parser.add_argument("--seconds", type=float, default=5.0, help="wall seconds per window")
    parser.add_argument("--domain", type=int, default=90 + os.getpid() % 100)
    args = parser.parse_args(argv)
    local = InProcessLoop(args.controller, args.behavior)
    local.window(1.0)  # warm-up (numba caches, first controller build)
    ros = RosLoop(args.controller, args.behavior, args.domain)
    rows = {"in-process": [], "over DDS": []}
    try:
        for _ in range(args.rounds):
            rows["in-process"].append(local.window(args.seconds))
            rows["over DDS"].append(ros.window(args.seconds, 0.001))
    finally:
        ros.close()
    print(f"closed loop {args.behavior}/{args.controller}, lockstep, real_time_factor 0, "
          f"{args.rounds} interleaved windows of {args.seconds:g} s (medians):")
    med = {}
    for name, values in rows.items():
        wall = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        med[name] = (wall, cpu)
        print(f"  {name:10s} {1 / wall:7.0f} periods/s   {1e3 * wall:6.3f} ms/period wall   "
              f"{1e3 * cpu:6.3f} ms/period CPU")
    dw = med["over DDS"][0] - med["in-process"][0]
    dc = med["over DDS"][1] - med["in-process"][1]
    print(f"  ROS overhead per period: {1e3 * dw:.3f} ms wall, {1e3 * dc:.3f} ms CPU; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0 if np.isfinite(dw) else 1


if __name__ == "__main__":
    sys.exit(main())
