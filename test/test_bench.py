"""``biped-sim bench``: the MuJoCo peer is the same robot, and the outputs carry the ratios.

No timing is asserted (speed is what ``biped-sim bench`` reports, not a test).
"""

import json
import sys

import numpy as np
import pinocchio as pin
import pytest

from biped_contact_sim.cli import main as cli
from biped_contact_sim.cli.bench import PEER_MISSING, make_peer
from biped_contact_sim.contact import CONTACT_MODELS


def test_bench_smoke_writes_ratios_for_every_model_and_closed_loop(tmp_path, capsys):
    pytest.importorskip("mujoco", reason="MuJoCo (requirements-bench.txt) is not installed")
    assert cli.main(["bench", "--smoke", "--out", str(tmp_path)]) == 0
    bench = json.loads((tmp_path / "bench.json").read_text())
    assert bench["peer"] == "mujoco"
    # The peer stands: its contact forces carry the weight (Σ f_n = m g at rest).
    assert bench["peer_model"]["normal_force_ratio"] == pytest.approx(1.0, abs=0.02)
    assert bench["peer_model"]["contacts"] == 8  # four box corners per foot
    assert [r["contact_model"] for r in bench["results"]] == list(CONTACT_MODELS)
    for row in bench["results"]:
        assert row["error"] is None
        assert row["peer"] == "mujoco"
        assert row["peer_step_us"] > 0 and row["ratio_to_peer"] > 0
    loops = {(r["scenario"], r["controller"]) for r in bench["closed_loop"]}
    assert {("stand", "wbc"), ("walk", "ctc")} <= loops
    for row in bench["closed_loop"]:
        assert row["error"] is None
        assert row["ratio_to_peer"] > 0 and row["real_time_factor"] > 0
        shares = row["time_shares"]  # where the loop's time goes: step, control, the rest
        assert set(shares) == {"step", "control", "observers"}
        assert sum(shares.values()) == pytest.approx(1.0) and min(shares.values()) >= 0.0
    assert "× MuJoCo" in capsys.readouterr().out


@pytest.mark.parametrize("contacts", ["points", "geometry"])
def test_bench_contacts_mode_reaches_every_step(tmp_path, contacts):
    """--contacts sets the simulator's contact mode: geometry contacts time their detection
    apart (detect_us), points contacts have none."""
    assert cli.main(["bench", "--smoke", "--peer", "none", "--loop-steps", "0", "--contacts",
                     contacts, "--out", str(tmp_path)]) == 0
    bench = json.loads((tmp_path / "bench.json").read_text())
    assert bench["contacts"] == contacts
    for row in bench["results"]:
        assert row["error"] is None
        assert ("detect_us" in row) == (contacts == "geometry")


def test_bench_without_mujoco_says_how_to_install(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "mujoco", None)  # import mujoco raises ImportError
    assert cli.main(["bench", "--smoke", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert PEER_MISSING in err and "pip install" in err
    # --peer none still benchmarks, with absolute times only.
    assert cli.main(["bench", "--smoke", "--peer", "none", "--loop-steps", "0",
                     "--out", str(tmp_path)]) == 0
    bench = json.loads((tmp_path / "bench.json").read_text())
    assert bench["peer"] is None
    assert all(r["ratio_to_peer"] is None and r["median_step_us"] > 0
               for r in bench["results"])


def test_mujoco_peer_is_the_same_robot_on_the_same_contact_points():
    mujoco = pytest.importorskip("mujoco", reason="MuJoCo (requirements-bench.txt) is not "
                                 "installed")
    peer = make_peer("stand")
    peer.settle(0.5)
    from biped_contact_sim.robot import RobotModel

    robot = RobotModel.load("biped3d")
    assert mujoco.mj_getTotalmass(peer.model) == pytest.approx(robot.mass, rel=1e-12)
    # MuJoCo's configuration in pinocchio's order (quaternion w, x, y, z → x, y, z, w).
    qpos = peer.data.qpos
    q = np.concatenate([qpos[:3], qpos[[4, 5, 6, 3]], qpos[7:]])
    assert list(robot.actuated_joint_names) == [peer.model.joint(j).name
                                                for j in range(1, peer.model.njnt)]
    data = robot.create_data()
    pin.framesForwardKinematics(robot.model, data, q)
    ours = robot.point_positions(data, q)
    contacts = np.array([peer.data.contact[i].pos for i in range(peer.data.ncon)])
    assert len(contacts) == robot.n_points
    # Each MuJoCo contact sits at one of our sole points (up to its sub-millimetre penetration).
    dist = np.linalg.norm(contacts[:, None, :] - ours[None, :, :], axis=2)
    assert sorted(dist.argmin(axis=1)) == list(range(robot.n_points))
    assert dist.min(axis=1).max() < 1e-3


def test_compare_in_parallel_equals_compare_in_one_process(tmp_path):
    """Runs are deterministic: two processes give the table of one, row for row."""
    import csv

    rows = {}
    for jobs in ("1", "2"):
        out = tmp_path / jobs
        assert cli.main(["compare", "ball", "ramp", "--duration", "0.05", "--jobs", jobs,
                         "--out", str(out)]) == 0
        with open(out / "comparison.csv") as f:
            rows[jobs] = [{k: v for k, v in r.items() if k != "mean_step_us"}
                          for r in csv.DictReader(f)]
    assert len(rows["1"]) == 2 * len(CONTACT_MODELS)
    assert rows["1"] == rows["2"]


def test_compare_refuses_zero_jobs(tmp_path, capsys):
    assert cli.main(["compare", "ball", "--jobs", "0", "--out", str(tmp_path)]) == 2
    assert "--jobs" in capsys.readouterr().err
