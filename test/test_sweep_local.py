"""``biped-sim sweep`` on the local process pool: real runs of the brick on the ramp and the
ball, the results table, failure rows, a lost worker, resume after a crash, the report."""

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from biped_contact_sim.cli import main as cli
from biped_contact_sim.cli.sweep import run_row
from biped_contact_sim.study import executors, table

ROOT = Path(__file__).resolve().parents[1]
TAN_20 = 0.36397  # tan 20°


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def journal_lines(out):
    return (out / table.JOURNAL).read_text().splitlines()


RAMP_STUDY = """
name: ramp_boundary
scenario: ramp
duration: 0.2
set: {speed: 0.0, slope_deg: 20.0}
axes:
  mu: [0.30, 0.34, 0.38, 0.42]
  contact_model: [penalty_fl, gauss_seidel]
metrics: [final_speed_m_s, base_travel_m, max_penetration_m]
figure: {metric: final_speed_m_s, x: mu, series: contact_model}
"""


def test_ramp_study_finds_the_stick_slip_boundary_at_tan_alpha(tmp_path):
    study = tmp_path / "ramp.yaml"
    study.write_text(RAMP_STUDY)
    out = tmp_path / "out"
    assert cli.main(["sweep", str(study), "--out", str(out), "--jobs", "2"]) == 0
    rows = read_csv(out / table.CSV)
    assert len(rows) == 8 and len({r["run_id"] for r in rows}) == 8
    assert {r["outcome"] for r in rows} == {"completed"}
    for model in ("penalty_fl", "gauss_seidel"):
        speed = {float(r["mu"]): float(r["final_speed_m_s"]) for r in rows
                 if r["contact_model"] == model}
        # μ < tan 20°: slides at g (sin α − μ cos α); μ > tan 20°: stays where it was put.
        for mu, v in speed.items():
            if mu < TAN_20:
                assert v == pytest.approx(9.81 * (0.34202 - mu * 0.93969) * 0.2, rel=0.05)
            else:
                assert v < 1e-3, (model, mu, v)
    pq = pytest.importorskip("pyarrow.parquet")
    parquet = pq.read_table(out / table.PARQUET).to_pylist()
    assert [r["run_id"] for r in parquet] == [r["run_id"] for r in rows]
    assert all(float(c["final_speed_m_s"]) == p["final_speed_m_s"]  # CSV keeps every digit
               for c, p in zip(rows, parquet, strict=True))
    assert (out / table.FIGURE).stat().st_size > 10_000


def test_failures_are_rows_with_their_outcome(tmp_path):
    study = tmp_path / "fail.yaml"
    # contact.kp is a penalty_fl setting: spring_damper refuses it; a 1 MN push from t = 0
    # under a joint PD diverges.
    study.write_text("scenario: push\ncontroller: joint_pd\nduration: 0.05\n"
                     "set: {push_time: 0.0, contact.kp: 500.0}\n"
                     "axes:\n  push_force: [10.0, 1.0e6]\n"
                     "  contact_model: [penalty_fl, spring_damper]\n"
                     "metrics: [fell, max_penetration_m]\n")
    out = tmp_path / "out"
    assert cli.main(["sweep", str(study), "--out", str(out), "--jobs", "2"]) == 0
    rows = {(float(r["push_force"]), r["contact_model"]): r for r in read_csv(out / table.CSV)}
    assert len(rows) == 4
    assert rows[10.0, "penalty_fl"]["outcome"] == "completed"
    assert rows[1e6, "penalty_fl"]["outcome"] == "diverged"
    assert "DivergenceError" in rows[1e6, "penalty_fl"]["error"]
    for force in (10.0, 1e6):
        assert rows[force, "spring_damper"]["outcome"] == "refused"
        assert "kp" in rows[force, "spring_damper"]["error"]


def die_on_second(config):
    """A row function whose worker process dies on the run with mu = 0.2."""
    if config["sets"]["mu"] == 0.2:
        os._exit(3)
    return {"run_id": str(config["sets"]["mu"]), "pid": os.getpid()}


def test_a_worker_that_dies_loses_only_its_run_after_the_retries():
    configs = [{"sets": {"mu": mu}} for mu in (0.1, 0.2, 0.3, 0.4, 0.5)]
    results = dict(executors.run_local(die_on_second, configs, jobs=2))
    assert sorted(results) == [0, 1, 2, 3, 4]  # one result per run, none twice
    lost = results[1]
    assert isinstance(lost, executors.Lost) and lost.attempts == executors.MAX_ATTEMPTS
    assert [results[i]["run_id"] for i in (0, 2, 3, 4)] == ["0.1", "0.3", "0.4", "0.5"]


BALL_STUDY = """
name: balls
scenario: ball
duration: 0.3
axes:
  height: {start: 0.2, stop: 0.9, num: 8}
  contact_model: [penalty_fl, spring_damper]
metrics: [max_penetration_m, final_speed_m_s]
"""


def test_resume_after_a_crash_repeats_no_run_and_loses_none(tmp_path):
    study = tmp_path / "balls.yaml"
    study.write_text(BALL_STUDY)
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "biped_contact_sim.cli.main", "sweep", str(study),
            "--out", str(out), "--jobs", "2"]
    # The sweep in a process group of its own: killing the group kills it and its workers.
    proc = subprocess.Popen(argv, cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            if (out / table.JOURNAL).exists() and len(journal_lines(out)) >= 3:
                break
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)  # the crash: no clean-up of any kind
    finally:
        proc.wait()
    before = journal_lines(out)
    assert 3 <= len(before) < 16, "the sweep ended before it could be killed"
    assert not (out / table.CSV).exists()  # it never finished
    with open(out / table.JOURNAL, "a") as f:
        f.write('{"run_id": "torn')  # a row half written when the power went
    assert cli.main(["sweep", str(study), "--out", str(out), "--jobs", "2", "--resume"]) == 0
    after = journal_lines(out)
    assert after[:len(before)] == before  # the rows of before the crash are kept as they were
    ids = [json.loads(line)["run_id"] for line in after]
    assert len(ids) == len(set(ids)) == 16  # none run twice, none lost, the torn line gone
    rows = read_csv(out / table.CSV)
    assert sorted(r["run_id"] for r in rows) == sorted(ids)
    # A second resume finds nothing to do.
    assert cli.main(["sweep", str(study), "--out", str(out), "--resume"]) == 0
    assert journal_lines(out) == after


def test_an_existing_study_folder_needs_resume(tmp_path, capsys):
    study = tmp_path / "one.yaml"
    study.write_text("scenario: ball\nduration: 0.01\naxes: {height: [0.1, 0.2]}\n")
    out = tmp_path / "out"
    assert cli.main(["sweep", str(study), "--out", str(out), "--jobs", "1", "--keep-runs"]) == 0
    for row in read_csv(out / table.CSV):  # --keep-runs: each run's own outputs by its id
        summary = json.loads((out / "runs" / row["run_id"] / "summary.json").read_text())
        assert summary["params"]["height"] == float(row["height"])
    capsys.readouterr()
    assert cli.main(["sweep", str(study), "--out", str(out)]) == 2
    assert "--resume" in capsys.readouterr().err


def test_report_redraws_the_figure_from_the_table(tmp_path, capsys):
    study = tmp_path / "two.yaml"
    study.write_text("scenario: ramp\nduration: 0.1\nset: {speed: 0.0}\n"
                     "axes:\n  mu: [0.1, 0.5]\n  slope_deg: [10.0, 30.0]\n"
                     "metrics: [final_speed_m_s, max_penetration_m]\n")
    out = tmp_path / "out"
    assert cli.main(["sweep", str(study), "--out", str(out), "--jobs", "1"]) == 0
    figure = out / table.FIGURE
    first = figure.read_bytes()
    figure.unlink()
    table_before = (out / table.CSV).read_bytes()
    assert cli.main(["sweep", "report", str(out)]) == 0
    assert figure.read_bytes() == first  # the same figure, from the table alone
    other = tmp_path / "penetration.png"
    assert cli.main(["sweep", "report", str(out), "--metric", "max_penetration_m",
                     "--png", str(other)]) == 0
    assert other.exists() and other.read_bytes() != first
    assert (out / table.CSV).read_bytes() == table_before
    capsys.readouterr()
    assert cli.main(["sweep", "report", str(out), "--metric", "nope"]) == 2
    assert "nope" in capsys.readouterr().err


def test_run_row_keeps_metrics_by_name_and_times_the_run():
    config = {"scenario": "ball", "contact_model": "penalty_fl", "controller": "none",
              "duration": 0.05, "dt": 2e-4, "integrator": "semi_implicit_euler",
              "record_rate": None, "sets": {"height": 0.3}}
    row = run_row(config, ("steps", "energy_balance.initial_J", "solver_stats.rank.max",
                           "metrics.nothing"))
    assert row["outcome"] == "completed" and row["error"] is None
    assert row["steps"] == 250
    assert row["energy_balance.initial_J"] == pytest.approx(9.81 * 0.4, rel=1e-3)  # m g (h + r)
    assert row["metrics.nothing"] is None  # a nested key the run does not have
    assert row["height"] == 0.3 and row["wall_time_s"] > 0 and row["cpu_time_s"] > 0
