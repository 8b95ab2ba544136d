"""``biped-sim sweep --executor ray`` on a real two-node Ray cluster on this machine.

The module's fixture starts a head node and one worker node (``ray start --block``, each a
process group of its own, one CPU each, a small object store, no dashboard, loopback only),
so that tasks cross processes and nodes; it stops both at the end, failures included, and
checks that no process of the cluster survives. Skipped, saying why, only where Ray is not
installed (it has no wheel for this Python or platform).
"""

import csv
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from biped_contact_sim.study import table

ray = pytest.importorskip("ray", reason="Ray is not installed: no wheel for this Python or "
                                        "platform (pip install 'ray[client]')")

ROOT = Path(__file__).resolve().parents[1]
RAY = str(Path(sys.executable).with_name("ray")) if Path(sys.executable).with_name(
    "ray").exists() else (shutil.which("ray") or "ray")
OBJECT_STORE = str(80 * 1024 * 1024)  # bytes; Ray's minimum is 75 MiB
START_TIMEOUT = 120.0  # [s] for the cluster to show both nodes (a loaded CI machine)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def session_processes(sessions: set[int]) -> list[int]:
    """Pids of the processes in the given sessions: a ``ray start`` started with a session of
    its own keeps every process of its node in it (gcs, raylet, agents and the workers, whose
    command lines Ray renames to ``ray::...``), even after a parent died."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        session = int(stat.rsplit(")", 1)[1].split()[3])  # state ppid pgrp session
        if session in sessions:
            pids.append(int(entry.name))
    return pids


class Cluster:
    """A head and a worker node started here; ``stop`` ends both process groups."""

    def __init__(self):
        self.temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: socket paths ≤ 107 B
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
            "RAY_USAGE_STATS_ENABLED": "0"}
        self.procs: list[subprocess.Popen] = []
        self.logs: list = []

    def start(self) -> None:
        common = ["--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--object-store-memory",
                  OBJECT_STORE, "--disable-usage-stats", "--block"]
        self._start([RAY, "start", "--head", "--port", str(self.port),
                     "--include-dashboard=false", "--temp-dir", self.temp, *common], "head")
        self._wait_nodes(1)
        self._start([RAY, "start", "--address", self.address, "--dashboard-agent-listen-port",
                     str(free_port()), *common], "worker")
        self._wait_nodes(2)

    def _start(self, argv: list[str], name: str) -> None:
        log = open(Path(self.temp) / f"{name}.log", "w")  # closed in stop()
        self.logs.append(log)
        self.procs.append(subprocess.Popen(argv, env=self.env, stdout=log, stderr=log,
                                           start_new_session=True))

    def _wait_nodes(self, n: int) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            status = subprocess.run([RAY, "status", "--address", self.address],
                                    capture_output=True, text=True, env=self.env)
            if status.returncode == 0 and status.stdout.count(" node_") >= n:
                return
            if any(p.poll() is not None for p in self.procs):
                break
            time.sleep(1.0)
        raise RuntimeError(f"the Ray cluster did not show {n} node(s); logs in {self.temp}")

    def processes(self) -> list[int]:
        """The pids of the cluster's processes now."""
        return session_processes({p.pid for p in self.procs})

    def stop(self) -> list[int]:
        """SIGTERM to each ``ray start --block`` (it drains and ends its node's processes),
        then SIGKILL to whatever of the groups is left. Returns the cluster's survivors."""
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pass
        for proc in self.procs:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        deadline = time.monotonic() + 20
        while self.processes() and time.monotonic() < deadline:
            time.sleep(0.5)
        survivors = self.processes()
        for pid in survivors:  # ours: started by this cluster
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for log in self.logs:
            log.close()
        shutil.rmtree(self.temp, ignore_errors=True)
        return survivors


@pytest.fixture(scope="module")
def cluster():
    c = Cluster()
    try:
        c.start()
        yield c
    finally:  # also when starting failed half-way
        survivors = c.stop()
        assert not survivors, f"Ray processes survived the cluster: {survivors}"


def sweep(args: list[str], env: dict[str, str], **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "biped_contact_sim.cli.main", "-q",
                             "sweep", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def rows_of(out: Path) -> dict[str, dict[str, str]]:
    with open(out / table.CSV, newline="") as f:
        return {r["run_id"]: r for r in csv.DictReader(f)}


STUDY = """
name: ray_ramp
scenario: ramp
duration: 0.3
set: {speed: 0.0}
axes:
  mu: [0.2, 0.5]
  slope_deg: [10.0, 30.0]
  contact_model: [penalty_fl, spring_damper]
metrics: [final_speed_m_s, base_travel_m, max_penetration_m, max_cone_violation_N,
          energy_balance.dissipated_J]
"""


def test_ray_and_local_give_bit_identical_rows(cluster, tmp_path):
    study = tmp_path / "study.yaml"
    study.write_text(STUDY)
    local = sweep([str(study), "--out", str(tmp_path / "local"), "--jobs", "2"], cluster.env)
    remote = sweep([str(study), "--out", str(tmp_path / "ray"), "--executor", "ray",
                    "--address", cluster.address], cluster.env)
    for proc in (local, remote):
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
    a, b = rows_of(tmp_path / "local"), rows_of(tmp_path / "ray")
    assert len(a) == 8 and a.keys() == b.keys()
    metrics = ["outcome", "final_speed_m_s", "base_travel_m", "max_penetration_m",
               "max_cone_violation_N", "energy_balance.dissipated_J"]
    for run_id in a:  # the CSV holds every digit (repr): equal text is equal doubles
        assert [a[run_id][m] for m in metrics] == [b[run_id][m] for m in metrics]
    # Ray rows name the node that ran them: both nodes took tasks.
    nodes = {r["worker"].split("/")[1].split(":")[0] for r in b.values()}
    assert len(nodes) == 2
    assert all(math.isfinite(float(r["final_speed_m_s"])) for r in b.values())


KILL_STUDY = """
name: ray_balls
scenario: ball
duration: 0.6
axes:
  height: {start: 0.2, stop: 0.9, num: 8}
metrics: [max_penetration_m, final_speed_m_s]
"""


def running_tasks(cluster: Cluster) -> list[int]:
    """Pids of the cluster's workers that are running one of our tasks now (Ray titles a
    worker process ``ray::<function>`` while it runs it)."""
    pids = []
    for pid in cluster.processes():
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if cmd.startswith("ray::_ray_call"):
            pids.append(pid)
    return pids


def test_a_killed_worker_is_retried_and_the_study_completes(cluster, tmp_path):
    study = tmp_path / "kill.yaml"
    study.write_text(KILL_STUDY)
    out = tmp_path / "out"
    proc = sweep([str(study), "--out", str(out), "--executor", "ray", "--address",
                  cluster.address], cluster.env)
    killed = None
    try:
        deadline = time.monotonic() + 300
        while killed is None and time.monotonic() < deadline and proc.poll() is None:
            journal = out / table.JOURNAL
            started = journal.exists() and journal.read_text().count("\n") >= 1
            tasks = running_tasks(cluster) if started else []
            if tasks:  # mid-study: a row is written and a task is running
                killed = tasks[0]
                os.kill(killed, signal.SIGKILL)
            time.sleep(0.02)
        _, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert killed is not None, "no running task was seen to kill"
    assert proc.returncode == 0, err
    lines = (out / table.JOURNAL).read_text().splitlines()
    ids = [json.loads(line)["run_id"] for line in lines]
    assert len(ids) == len(set(ids)) == 8  # no duplicate, none missing
    rows = rows_of(out)
    assert set(rows) == set(ids)
    assert {r["outcome"] for r in rows.values()} == {"completed"}  # the killed run was redone
    assert not Path(f"/proc/{killed}").exists() or "ray::" not in Path(
        f"/proc/{killed}/cmdline").read_text(errors="replace")  # the kill took
