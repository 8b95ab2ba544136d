"""Every input checked at its door: files that are not UTF-8, quaternions that are not unit,
measurements that are not finite, settings and durations whose rule the message states."""

import re
from pathlib import Path

import numpy as np
import pytest

from biped_contact_sim.cli import main as cli
from biped_contact_sim.control import Measurement
from biped_contact_sim.errors import InputError
from biped_contact_sim.session.builder import build
from biped_contact_sim.session.config import SimConfig

ROBOT_CONFIG = Path(__file__).resolve().parents[1] / "config" / "biped3d.yaml"


def run_cli(capsys, *argv):
    """``biped-sim -q ARGV`` in this process: (exit code, stderr)."""
    code = cli.main(["-q", *argv])
    return code, capsys.readouterr().err


def test_world_file_that_is_not_utf8_is_named_exit_2(tmp_path, capsys):
    world = tmp_path / "latin1_world.yaml"
    world.write_bytes("world:\n  boxes: []  # caf\u00e9\n".encode("latin-1"))
    code, err = run_cli(capsys, "run", "ball", "--set", f"world={world}",
                        "--out", str(tmp_path / "out"))
    assert code == cli.EXIT_CONFIG
    assert f"error: {world}: not UTF-8 text (byte 0xe9" in err
    assert "Traceback" not in err


def test_robot_config_that_is_not_utf8_is_named_exit_2(tmp_path, capsys):
    robot = tmp_path / "utf16_robot.yaml"
    robot.write_bytes(ROBOT_CONFIG.read_text().encode("utf-16"))
    code, err = run_cli(capsys, "run", "drop", "--robot", str(robot),
                        "--out", str(tmp_path / "out"))
    assert code == cli.EXIT_CONFIG
    assert f"error: {robot}: not UTF-8 text" in err and "save it as UTF-8" in err
    assert "Traceback" not in err


@pytest.fixture(scope="module")
def stand():
    """The ``stand`` scenario built: (robot, simulator, q0, v0)."""
    built = build(SimConfig.from_sets("stand", None, "joint_pd"))
    robot, sim, q0, v0 = built.robot, built.sim, built.q0, built.v0
    return robot, sim, q0, v0


@pytest.mark.parametrize("quaternion", [[0, 0, 0, 0], [0, 0, 0, 0.5], [0, 0, 0.01, 1]])
def test_reset_refuses_a_quaternion_that_is_not_unit_and_keeps_the_state(stand, quaternion):
    robot, sim, q0, v0 = stand
    sim.reset(q0, v0)
    q = q0.copy()
    q[3:7] = quaternion
    with pytest.raises(InputError, match=r"q\[3:7\] = .* has norm .* must be a unit quaternion"):
        sim.reset(q, v0, t=1.0)
    np.testing.assert_array_equal(sim.q, q0)
    assert sim.t == 0.0


def test_reset_accepts_a_quaternion_within_the_tolerance(stand):
    robot, sim, q0, v0 = stand
    q = q0.copy()
    q[3:7] *= 1 + 5e-7  # a unit quaternion written with 6 decimals
    sim.reset(q, v0)
    np.testing.assert_array_equal(sim.q, q)
    sim.reset(q0, v0)


def spoil(field, meas):
    """``meas`` with one entry of ``field`` made NaN or infinite."""
    q, v = meas.q.copy(), meas.v.copy()
    wrenches = {k: w.copy() for k, w in meas.wrenches.items()}
    if field == "q":
        q[8] = np.nan
    elif field == "v":
        v[7] = np.inf
    elif field == "wrenches":
        wrenches[next(iter(wrenches))][2] = np.nan
    else:
        return Measurement(np.nan, q, v, wrenches)
    return Measurement(meas.t, q, v, wrenches)


@pytest.mark.parametrize("scenario, controller", [("stand", "wbc"), ("walk", "ctc")])
@pytest.mark.parametrize("field", ["q", "v", "wrenches", "t"])
def test_controllers_refuse_non_finite_measurements_state_unchanged(scenario, controller, field):
    """A refused measurement leaves no trace: the torques that follow equal those of a twin
    controller that never saw it."""
    def make():
        built = build(SimConfig.from_sets(scenario, None, controller))
        robot, loop, q0, v0 = built.robot, built.control, built.q0, built.v0
        return loop.controller, robot, q0, v0

    tested, robot, q0, v0 = make()
    twin = make()[0]
    wrenches = {b.name: np.array([0, 0, 100.0, 0, 0, 0]) for b in robot.contact_bodies}
    first = Measurement(0.0, q0, v0, wrenches)
    later = Measurement(0.002, q0, v0, wrenches)
    tested.compute(first)
    twin.compute(first)
    with pytest.raises(InputError) as refused:
        tested.compute(spoil(field, Measurement(0.001, q0, v0, wrenches)))
    assert str(refused.value).startswith(f"measurement.{field}")
    assert "must be finite" in str(refused.value)
    np.testing.assert_array_equal(tested.compute(later).tau, twin.compute(later).tau)


def test_controllers_refuse_wrong_lengths_naming_them():
    built = build(SimConfig.from_sets("walk", None, "ctc"))
    robot, loop, q0, v0 = built.robot, built.control, built.q0, built.v0
    with pytest.raises(InputError, match=rf"measurement.v must have {robot.nv} values"):
        loop.controller.compute(Measurement(0.0, q0, v0[:-1], {}))


def test_joint_pd_refuses_non_finite_state():
    built = build(SimConfig.from_sets("drop", None, "joint_pd"))
    pd, q0, v0 = built.control, built.q0, built.v0
    tau = pd(0.0, q0, v0)
    q = q0.copy()
    q[10] = np.nan
    with pytest.raises(InputError, match=r"measurement.q\[10\] = nan must be finite"):
        pd(0.0, q, v0)
    np.testing.assert_array_equal(pd(0.0, q0, v0), tau)


@pytest.mark.parametrize(("argv", "says"), [
    (["--set", "mu=inf"], "--set mu=inf is out of range: it must be finite and >= 0"),
    (["--set", "contact.kp=inf"], "penalty_fl.kp = inf must be finite and >= 0"),
    (["--duration", "inf"], "--duration inf must be finite and > 0"),
    (["--duration", "1e-9"], "duration = 1e-09 s is less than half a step (dt = 0.0002 s): "
                             "nothing would be simulated"),
    (["--duration", "1e300"], "duration = 1e+300 s is 5e+303 steps of dt = 0.0002 s, more "
                              "than 1e+12"),
])
def test_messages_state_the_rule(tmp_path, capsys, argv, says):
    code, err = run_cli(capsys, "run", "ball", *argv, "--out", str(tmp_path))
    assert code == cli.EXIT_CONFIG
    assert says in err, err
    assert not re.search(r"\d{16}", err)  # no number of hundreds of digits
    assert "Traceback" not in err
    assert not (tmp_path / "summary.json").exists()


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_quiet_compare_finishes(tmp_path, capsys, jobs):
    code = cli.main(["-q", "compare", "ball", "--duration", "0.01", "--jobs", jobs,
                     "--out", str(tmp_path)])
    captured = capsys.readouterr()
    assert code == cli.EXIT_OK, captured.err
    assert "Traceback" not in captured.err
    assert (tmp_path / "comparison.csv").read_text().count("\nball,") == 5
