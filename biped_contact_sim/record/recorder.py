"""Recorder: a run's ``summary.json``, ``timeseries.csv``, ``trace.mcap`` and ``replay.html``.

:class:`StreamingRecorder` writes them while the run goes (the runner calls it with each
recorded sample): CSV rows and MCAP messages reach the disk every second, so memory does not
grow with the length of the run and a killed run loses at most its last second; the summary
and the replay are written at the end (or when the run is stopped or diverges: whatever exists
is written). The physics (forces, CoPs, ZMPs) comes from
the simulator's ``StepResult`` and the observer's ``Observation`` of each sample; the trace's
messages from :class:`.trace.TraceRecorder`. What is read of the run is stated in :mod:`.inputs`.
"""

from __future__ import annotations

import csv
import json
import math
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from biped_contact_sim.record.flushing import PeriodicFlush
from biped_contact_sim.record.inputs import RecordedRun, RecordedSample
from biped_contact_sim.record.outdir import OutputFolder
from biped_contact_sim.record.trace import TraceRecorder
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.sim.observables import configured_point_values

SUMMARY_FILE = "summary.json"
TIMESERIES_FILE = "timeseries.csv"
TRACE_FILE = "trace.mcap"
REPLAY_FILE = "replay.html"

# Names of the root joint's configuration entries per ``RobotConfig.base`` (pinocchio order;
# the free-flyer quaternion is stored x, y, z, w).
BASE_COORDINATES = {
    "free_flyer": ("x", "y", "z", "qx", "qy", "qz", "qw"),
    "planar_xz": ("x", "z", "pitch"),
    "translation": ("x", "y", "z"),
}

class StreamingRecorder:
    """Writes a run's outputs as the run goes; memory stays bounded whatever its length, and
    at most the last second is lost however the process ends.

    Call it with the run and each recorded sample (the runner's ``on_sample``), then
    :meth:`finish` with the run's result (also for a diverged or interrupted run), and
    :meth:`close` in any case (a ``finally``: the trace gets its footer). The files are opened,
    and the previous run's outputs removed (those the folder's manifest lists, :mod:`.outdir`),
    at the first sample, so a run refused for its settings leaves the folder as it was. While
    the run goes, the CSV and the trace reach the disk every second (:mod:`.flushing`); the
    summary and the replay are written at the end, each to a temporary file renamed into place
    (a reader never sees half of one). The replay keeps its own bounded, decimated frames
    (:mod:`.replay`).

    Args:
        out_dir: Output folder: an :class:`.outdir.OutputFolder` (``OutputFolder.claim``: locked
            for this run) or a path (its manifest is kept, nothing is locked).
        replay: Also write ``replay.html``.
        view: Show the run live in the browser (``--view``, :class:`.replay.LiveView`).
        view_address: Where the live view listens (``127.0.0.1``: this machine only).
    """

    def __init__(self, out_dir: Path | OutputFolder, replay: bool = True, view: bool = False,
                 view_address: str = "127.0.0.1"):
        self.folder = out_dir if isinstance(out_dir, OutputFolder) else OutputFolder(out_dir)
        self.out_dir = self.folder.path
        self.paths = {"timeseries": self.out_dir / TIMESERIES_FILE,
                      "trace": self.out_dir / TRACE_FILE}
        self.replay, self.view, self.view_address = replay, view, view_address
        self.samples = 0
        self.warnings: list[str] = []  # what could not be written or shown, and why
        self.robot: RobotModel | None = None
        self._csv_file = None
        self._trace: TraceRecorder | None = None
        self._replay = None
        self._live = None
        self._lock = threading.Lock()  # held while a sample is written and while flushing
        self._flusher: PeriodicFlush | None = None

    def _open(self, result: RecordedRun, q0: np.ndarray) -> None:
        self.folder.will_write(*self.paths.values())  # clears the previous run's files first
        robot, terrain = result.robot, result.sim.terrain
        self.robot = robot
        self._csv_file = open(self.paths["timeseries"], "w", newline="")  # closed by close()
        self._csv = csv.writer(self._csv_file)
        self._csv.writerow(timeseries_header(robot))
        self._trace = TraceRecorder(self.paths["trace"], robot, terrain)
        self._flusher = PeriodicFlush(self._lock, self._flush, self._sync).start()
        if self.replay or self.view:
            try:
                import meshcat  # noqa: F401

                from biped_contact_sim.record import replay  # meshcat: imported when used
            except ImportError as exc:
                self.warnings.append(f"no replay.html and no --view: {exc} "
                                     "(pip install meshcat)")
                return
            world = result.sim.world if result.sim.geometry is not None else None
            if self.replay:
                self._replay = replay.ReplayRecorder(robot, terrain, world)
            if self.view:
                try:
                    self._live = replay.LiveView(robot, terrain, q0, world=world,
                                                 address=self.view_address)
                except replay.view_server.ViewServerError as exc:
                    self.warnings.append(f"no --view: {exc}")

    def _flush(self) -> None:
        """Hand the CSV rows and the trace's chunk to the operating system (lock held)."""
        self._csv_file.flush()
        self._trace.writer.flush()

    def _sync(self) -> None:
        """Ask the disk to keep them (no lock needed)."""
        os.fsync(self._csv_file.fileno())
        self._trace.writer.sync()

    def __call__(self, result: RecordedRun, sample: RecordedSample) -> None:
        """Record one sample (CSV row, MCAP messages, replay frame, live view)."""
        if self.robot is None:
            self._open(result, sample.step.q)
        with self._lock:
            self._csv.writerow(timeseries_row(self.robot, sample))
            self._trace.write(sample, result)
        if self._replay is not None:
            self._replay.add(sample)
        if self._live is not None:
            self._live.frame(sample)
        self.samples += 1

    def finish(self, result: RecordedRun) -> dict[str, Path]:
        """Close the CSV and the MCAP, write ``summary.json`` and ``replay.html``.

        Returns:
            ``{"summary": path, "timeseries": path, "trace": path[, "replay": path]}``.
        """
        if self.robot is None:  # no sample (diverged at once): empty files, still a summary
            self._open(result, result.sim.q)
        self.close()
        paths = {"summary": self.out_dir / SUMMARY_FILE, **self.paths}
        self.folder.will_write(paths["summary"])
        write_summary(result.summary(), paths["summary"])
        if self._replay is not None:
            final = self.out_dir / REPLAY_FILE
            partial = final.with_name(final.name + ".partial")
            self.folder.will_write(final, partial)
            self._replay.write(partial, title=_replay_title(result))
            os.replace(partial, final)
            paths["replay"] = final
        return paths

    def close(self) -> None:
        """Close the open files (idempotent); what was written stays readable."""
        if self._flusher is not None:
            self._flusher.stop()
            self.warnings += self._flusher.errors
            self._flusher = None
        if self._csv_file is not None and not self._csv_file.closed:
            self._csv_file.close()
        if self._trace is not None:
            self._trace.close()
        if self._live is not None:
            self._live.close()
            if self._live.warning:
                self.warnings.append(self._live.warning)
            self._live = None


def _replay_title(result: RecordedRun) -> str:
    """The replay's title: scenario, model, controller and how the run ended, unless it
    completed."""
    outcome = result.outcome
    state = f" ({outcome})" if outcome in ("interrupted", "terminated", "diverged") else ""
    return (f"{result.scenario.name} / {result.contact_model} / {result.controller}"
            f"{state}")


def json_safe(value: Any) -> Any:
    """Convert numpy scalars/arrays, tuples and paths to JSON types, recursively.

    Non-finite floats become None: ``json`` would otherwise write ``NaN``/``Infinity``, which
    strict JSON readers (browsers, ``jq``) refuse.

    Args:
        value: Any nesting of dicts, lists, tuples, numpy values and Python scalars.

    Returns:
        The same content made of dict, list, str, int, float, bool and None.
    """
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [json_safe(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, Path):
        return str(value)
    return value


def write_summary(summary: dict[str, Any], path: Path) -> None:
    """Write ``summary.json`` (strict JSON, indented), atomically.

    Args:
        summary: the run's ``summary()`` or any JSON-convertible dict.
        path: Output file.
    """
    text = json.dumps(json_safe(summary), indent=2, allow_nan=False) + "\n"
    partial = Path(path).with_name(Path(path).name + ".partial")
    partial.write_text(text)
    os.replace(partial, path)  # a reader sees the old summary or the new one, never half


def base_coordinate_names(robot: RobotModel) -> list[str]:
    """Column names of the root joint's configuration entries, e.g. ``base_qw``.

    Args:
        robot: The robot.

    Returns:
        One ``base_<coordinate>`` name per configuration entry of the root joint.
    """
    return [f"base_{c}" for c in BASE_COORDINATES[robot.config.base]]


def timeseries_header(robot: RobotModel) -> list[str]:
    """Column names of ``timeseries.csv`` for a robot.

    Args:
        robot: The robot.

    Returns:
        ``t``, the base coordinates, ``q_<joint>``, ``tau_<joint>``, ``gap_<point>``,
        ``fn_<point>``, ``cop_<foot>_x/_y``, ``zmp_x/_y``, ``zmp_centroidal_x/_y``, ``energy``.
    """
    joints = robot.actuated_joint_names
    return [
        "t",
        *base_coordinate_names(robot),
        *(f"q_{j}" for j in joints),
        *(f"tau_{j}" for j in joints),
        *(f"gap_{p}" for p in robot.point_names),
        *(f"fn_{p}" for p in robot.point_names),
        *(f"cop_{b.name}_{c}" for b in robot.contact_bodies for c in "xy"),
        "zmp_x",
        "zmp_y",
        "zmp_centroidal_x",
        "zmp_centroidal_y",
        "energy",
    ]


def _xy(point: np.ndarray | None) -> list[float | str]:
    """x and y of a point, or two empty cells where it is undefined."""
    return ["", ""] if point is None else [float(point[0]), float(point[1])]


def timeseries_row(robot: RobotModel, sample: RecordedSample) -> list[float | str]:
    """One ``timeseries.csv`` row (order of :func:`timeseries_header`).

    Args:
        robot: The robot.
        sample: A recorded sample.

    Returns:
        The row's cells; undefined CoPs and ZMPs are empty strings.
    """
    step, obs = sample.step, sample.obs
    root_q = robot.model.idx_qs[1]
    n_base = len(BASE_COORDINATES[robot.config.base])
    row: list[float | str] = [float(step.t)]
    row += step.q[root_q:root_q + n_base].tolist()
    row += step.q[robot.q_idx].tolist()
    row += step.tau.tolist()
    if step.contacts is None:
        row += step.phi.tolist()
        row += step.f_contact[:, 2].tolist()
    else:  # geometry contacts: the contact at each configured point, empty where there is none
        for values in (step.phi, step.f_contact[:, 2]):
            row += ["" if np.isnan(x) else float(x)
                    for x in configured_point_values(robot, step, values)]
    for foot in obs.feet:
        row += _xy(foot.cop)
    row += _xy(obs.zmp)
    row += _xy(obs.zmp_centroidal)
    row.append(float(obs.energy))
    return row


def write_outputs(result: RecordedRun, out_dir: Path, replay: bool = False) -> dict[str, Path]:
    """Write the outputs of a finished run from its kept samples (the non-streaming way: the
    CLI streams with :class:`StreamingRecorder`; this serves scripts and tests).

    Args:
        result: The run (also a diverged one: what was recorded is written).
        out_dir: Output folder, created if missing.
        replay: Also write ``replay.html``.

    Returns:
        The paths written, as :meth:`StreamingRecorder.finish`.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    recorder = StreamingRecorder(out_dir, replay=replay)
    try:
        for sample in result.samples:
            recorder(result, sample)
    finally:
        recorder.close()
    return recorder.finish(result)


def write_timeseries(result: RecordedRun, path: Path) -> None:
    """Write ``timeseries.csv``: one row per recorded sample.

    As in ``StepResult``, ``t`` and the configuration are those at the end of the step, the gaps
    those at its start, and the forces (hence CoPs and force ZMP) act over it.

    Args:
        result: The run.
        path: Output file.
    """
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(timeseries_header(result.robot))
        for sample in result.samples:
            writer.writerow(timeseries_row(result.robot, sample))
