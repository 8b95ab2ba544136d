"""The closed loop over ROS, timed: lockstep periods per second and the real-time factor achieved.

    python -m biped_contact_sim.ros.bench [--seconds S] [--out FILE.json]
    biped-sim bench --ros            (runs this module and adds its rows to bench.json)

For the default demo (biped3d, stand under wbc, penalty_fl, geometry contacts) and the humanoid
(multicontact under wbc, penalty_fl), in both forms — the two node processes, and both nodes in
one process (``composed_node``) — the nodes run from their entry points in a private ROS domain
with localhost discovery:

* lockstep as fast as possible (``real_time_factor`` 0): control periods per wall second, from
  the simulated time the simulator's /diagnostics reports;
* lockstep at real time (``real_time_factor`` 1, the default demo) with a /joint_states
  subscriber running as ``ros2 topic hz /joint_states`` does (sensor-data QoS: best effort,
  depth 5; messages deserialized): the real-time factor the simulator reports it achieved over
  the window;
* the hardware form (``hardware.launch.py`` with the simulator as the robot's driver): the
  simulator free running at real time, 1 kHz states, applying the newest command like a
  driver (``max_command_delay`` 20 ms, so it never waits on a command that is a few periods
  old), the controller on its 1 kHz timer (``sync: latest``): the real-time factor, the
  controller's missed deadlines (``missed_fraction``: commands later than a period plus
  states never answered), its mean compute time, saturated torques and whether it diverged.

Each figure is over ``--seconds`` of wall time after the loop has started; the CPU seconds of
the node processes over the same window are reported too (``/proc``), since on a shared
machine wall time also counts the moments a process waits for a core.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from biped_contact_sim.ros.executables import node_executable
from biped_contact_sim.ros.overhead import cpu_seconds

#: (label, robot, simulator parameters, controller parameters)
LOOPS = (
    ("biped3d stand/wbc", "biped3d", {"scenario": "stand"},
     {"controller": "wbc", "behavior": "stand"}),
    ("humanoid multicontact/wbc", "humanoid", {"scenario": "multicontact"},
     {"controller": "wbc", "behavior": "multicontact"}),
)
FORMS = ("separate", "composed")
#: the simulator as a robot's driver: free running at real time, the newest command applied
#: while it answers a state at most 20 ms old (a driver does not wait for a late command)
HARDWARE_DRIVER = {"lockstep": False, "real_time_factor": 1.0, "max_command_delay": 0.02,
                   "wait_for_first_command": False}


def _args(params: dict) -> list[str]:
    out = []
    for key, value in params.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        out += ["-p", f"{key}:={text}"]
    return out


class Loop:
    """The nodes of one closed loop as processes, observed by a probe node."""

    def __init__(self, robot: str, sim: dict, ctrl: dict, form: str, domain: int,
                 subscribe_joint_states: bool):
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.qos import qos_profile_sensor_data
        from rclpy.signals import SignalHandlerOptions
        from sensor_msgs.msg import JointState

        from biped_contact_sim.ros.node_common import NodeLoop

        env = dict(os.environ, ROS_DOMAIN_ID=str(domain),
                   ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", OPENBLAS_NUM_THREADS="1",
                   OMP_NUM_THREADS="1")
        os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
        common = {"robot_config": robot, "diagnostics_rate": 10.0}
        sim_params = {**common, "lockstep": True, **sim}
        ctrl_params = {**common, "sync": "exact", **ctrl}
        self.log = tempfile.TemporaryFile()
        if form == "composed":
            commands = [[node_executable("composed_node"), "--ros-args",
                         *_args({**sim_params, **ctrl_params})]]
        else:
            commands = [[node_executable("simulator_node"), "--ros-args", *_args(sim_params)],
                        [node_executable("controller_node"), "--ros-args",
                         *_args(ctrl_params)]]
        self.procs = [subprocess.Popen(c, env=env, stdout=self.log, stderr=subprocess.STDOUT)
                      for c in commands]
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain,
                   signal_handler_options=SignalHandlerOptions.NO)
        self.node = rclpy.create_node("bench_probe", context=self.context)
        self.loop = NodeLoop(self.node, lambda: None)
        self.values: dict[str, str] = {}
        self.controller: dict[str, str] = {}
        self.states = 0
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_status, 10)
        if subscribe_joint_states:  # as `ros2 topic hz` subscribes: sensor-data QoS
            self.node.create_subscription(JointState, "joint_states", self._on_state,
                                          qos_profile_sensor_data)

    def _on_status(self, msg) -> None:
        for status in msg.status:
            if status.name.endswith("simulator"):
                self.values = {kv.key: kv.value for kv in status.values}
            elif status.name.endswith("controller"):
                self.controller = {kv.key: kv.value for kv in status.values}

    def _on_state(self, _msg) -> None:
        self.states += 1

    def sim_time(self) -> float:
        return float(self.values.get("sim_time_s") or 0.0)

    def window(self, seconds: float) -> dict:
        """Simulated seconds per wall second, periods per second and the nodes' CPU over a
        window of ``seconds`` (after the loop runs)."""
        if not self.loop.spin_until(lambda: self.sim_time() > 0.2, 600.0):
            raise RuntimeError("the closed loop did not start")
        t0 = self.sim_time()
        self.loop.spin_until(lambda: self.sim_time() != t0, 30.0)
        t0, wall0 = self.sim_time(), time.perf_counter()
        cpu0 = sum(cpu_seconds(p.pid) for p in self.procs)
        states0 = self.states
        self.loop.spin_until(lambda: time.perf_counter() - wall0 > seconds, seconds + 1)
        t1 = self.sim_time()
        self.loop.spin_until(lambda: self.sim_time() != t1, 30.0)
        wall = time.perf_counter() - wall0
        cpu = sum(cpu_seconds(p.pid) for p in self.procs) - cpu0
        simulated = self.sim_time() - t0
        period = float(self.values.get("control_period_s") or 0.001)
        ctrl = self.controller

        def number(key: str) -> float | None:
            text = ctrl.get(key, "")
            return float(text) if text else None

        return {"wall_s": wall, "simulated_s": simulated,
                "real_time_factor": simulated / wall, "periods_per_s": simulated / period / wall,
                "node_cpu_per_period_us": 1e6 * cpu / max(simulated / period, 1.0),
                "joint_states_received_per_s": (self.states - states0) / wall,
                "controller_mean_compute_us": number("mean_compute_us"),
                "controller_missed_fraction": number("missed_fraction"),
                "controller_saturated": number("info.saturated"),
                "diverged": self.values.get("diverged", "")}

    def close(self) -> None:
        import rclpy

        for p in self.procs:
            p.send_signal(signal.SIGINT)
        for p in self.procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
        self.loop.close()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


def run(seconds: float, loops=LOOPS, forms=FORMS, report=print) -> list[dict]:
    """Every (loop, form, mode) row (module docstring)."""
    rows = []
    domain = 60 + os.getpid() % 40
    modes = (("lockstep, as fast as possible", {"real_time_factor": 0.0}, {}, False),
             ("lockstep, real_time_factor 1, joint_states subscriber",
              {"real_time_factor": 1.0}, {}, True),
             ("hardware form: free-running driver at 1 kHz, controller sync latest",
              HARDWARE_DRIVER, {"sync": "latest"}, False))
    for label, robot, sim, ctrl in loops:
        for form in forms:
            for mode, sim_mode, ctrl_mode, subscribe in modes:
                if form == "composed" and sim_mode is HARDWARE_DRIVER:
                    continue  # a robot's driver is its own process
                domain += 1
                loop = Loop(robot, {**sim, **sim_mode}, {**ctrl, **ctrl_mode}, form, domain,
                            subscribe)
                try:
                    row = {"loop": label, "form": form, "mode": mode, **loop.window(seconds)}
                finally:
                    loop.close()
                rows.append(row)
                missed = row["controller_missed_fraction"]
                report(f"  {label:27s} {form:9s} {mode[:40]:40s} {row['periods_per_s']:5.0f} "
                       f"periods/s, real-time factor {row['real_time_factor']:.2f}, node CPU "
                       f"{row['node_cpu_per_period_us']:.0f} us/period, controller "
                       f"{row['controller_mean_compute_us'] or 0:.0f} us, missed "
                       f"{100 * (missed or 0):.1f} %"
                       + (f", DIVERGED: {row['diverged']}" if row["diverged"] else ""))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="wall seconds per window")
    parser.add_argument("--out", type=Path, help="write the rows to this JSON file")
    parser.add_argument("--quick", action="store_true",
                        help="the biped's loop only, separate nodes (a check, not a figure)")
    args = parser.parse_args(argv)
    loops, forms = (LOOPS[:1], FORMS[:1]) if args.quick else (LOOPS, FORMS)
    print(f"closed loops over ROS 2 ({args.seconds:g} s windows, {os.cpu_count()} cores):")
    rows = run(args.seconds, loops, forms)
    if args.out is not None:
        args.out.write_text(json.dumps({"ros": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
