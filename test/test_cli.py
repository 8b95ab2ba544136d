"""``biped-sim`` end to end through ``cli.main``: outputs, MCAP topics and types, exit codes."""

import csv
import json
import warnings

import numpy as np
import pytest

from biped_contact_sim.cli import main as cli
from biped_contact_sim.contact import CONTACT_MODELS
from biped_contact_sim.sim.scenarios import SCENARIOS

SUMMARY_KEYS = (
    "scenario", "contact_model", "controller", "dt", "duration_s", "steps", "wall_time_s",
    "real_time_factor", "mean_step_us", "max_penetration_m", "max_cone_violation_N", "fell",
    "zmp_in_support_fraction", "solver_stats", "warnings",
)


def read_mcap(path):
    """Return ({topic: schema name}, {topic: [decoded message, ...]}) of an MCAP file."""
    with warnings.catch_warnings():
        # mcap_ros2.reader warns about itself on import; read_ros2_messages is what we use.
        warnings.simplefilter("ignore", DeprecationWarning)
        from mcap_ros2.reader import read_ros2_messages

    schemas, messages = {}, {}
    for item in read_ros2_messages(str(path)):
        schemas[item.channel.topic] = item.schema.name
        messages.setdefault(item.channel.topic, []).append(item.ros_msg)
    return schemas, messages


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def ball_run(tmp_path_factory):
    """``run ball`` with plots (the paper's extra runs last the run's 0.5 s, past the impact)."""
    out = tmp_path_factory.mktemp("ball")
    code = cli.main(["run", "ball", "--duration", "0.5", "--out", str(out)])
    return code, out


@pytest.fixture(scope="module")
def stand_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("stand")
    code = cli.main(["run", "stand", "--duration", "0.2", "--no-plots", "--out", str(out)])
    return code, out


def test_run_writes_all_outputs(ball_run):
    code, out = ball_run
    assert code == 0
    for name in ("summary.json", "timeseries.csv", "trace.mcap"):
        assert (out / name).stat().st_size > 0
    pngs = {p.name for p in (out / "plots").glob("*.png")}
    assert {"ball_height.png", "ball_force.png", "energy.png"} <= pngs


def test_summary_has_the_design_keys(ball_run):
    summary = json.loads((ball_run[1] / "summary.json").read_text())
    assert set(SUMMARY_KEYS) <= set(summary)
    assert summary["scenario"] == "ball"
    assert summary["contact_model"] == "penalty_fl"
    assert summary["contacts"] == "points"  # the ball's sphere point on the plane
    assert summary["steps"] == round(0.5 / summary["dt"])
    assert summary["error"] is None
    # meaningless for a ball: no support polygon to hold a ZMP, nothing to fall
    assert summary["zmp_in_support_fraction"] is None and summary["fell"] is None


def test_mcap_topics_types_and_counts(ball_run):
    out = ball_run[1]
    schemas, messages = read_mcap(out / "trace.mcap")
    expected = {
        "/joint_states": "sensor_msgs/msg/JointState",
        "/odom": "nav_msgs/msg/Odometry",
        "/tf": "tf2_msgs/msg/TFMessage",
        "/contact_wrench/ball": "geometry_msgs/msg/WrenchStamped",
        "/cop/ball": "geometry_msgs/msg/PointStamped",
        "/zmp": "geometry_msgs/msg/PointStamped",
        "/contact_markers": "visualization_msgs/msg/MarkerArray",
        "/clock": "rosgraph_msgs/msg/Clock",
        "/robot_description": "std_msgs/msg/String",
    }
    assert {topic: schemas.get(topic) for topic in expected} == expected
    rows = read_csv(out / "timeseries.csv")
    assert len(messages["/joint_states"]) == len(rows) == len(messages["/clock"])
    assert len(messages["/robot_description"]) == 1
    assert "<robot" in messages["/robot_description"][0].data
    odom = messages["/odom"][-1]
    assert (odom.header.frame_id, odom.child_frame_id) == ("world", "base_link")
    transform = messages["/tf"][-1].transforms[0]
    assert (transform.header.frame_id, transform.child_frame_id) == ("world", "base_link")
    # The ball rests on the ground at the end: its centre 0.1 m above it (less the penetration).
    assert odom.pose.pose.position.z == pytest.approx(float(rows[-1]["base_z"]))
    assert odom.pose.pose.position.z == pytest.approx(0.1, abs=1e-3)
    # A CoP exists only while in contact, so there are fewer CoPs than samples.
    assert 0 < len(messages["/cop/ball"]) < len(rows)


def test_timeseries_columns(ball_run):
    rows = read_csv(ball_run[1] / "timeseries.csv")
    first, last = rows[0], rows[-1]
    assert {"t", "base_x", "base_y", "base_z", "gap_ball_point0", "fn_ball_point0",
            "cop_ball_x", "cop_ball_y", "zmp_x", "zmp_y", "zmp_centroidal_x",
            "zmp_centroidal_y", "energy"} <= set(first)
    assert first["cop_ball_x"] == ""  # in the air: no CoP
    assert float(last["fn_ball_point0"]) == pytest.approx(9.81, rel=1e-2)


def test_stand_wrenches_match_the_csv_normal_forces(stand_run):
    code, out = stand_run
    assert json.loads((out / "summary.json").read_text())["contacts"] == "geometry"
    assert code == 0
    assert not (out / "plots").exists()
    rows = read_csv(out / "timeseries.csv")
    schemas, messages = read_mcap(out / "trace.mcap")
    assert schemas["/odom"] == "nav_msgs/msg/Odometry"
    assert messages["/odom"][0].child_frame_id == "base_link"
    assert len(messages["/joint_states"][0].name) == 14
    for foot, sole in (("left_foot", "l_sole"), ("right_foot", "r_sole")):
        wrenches = messages[f"/contact_wrench/{foot}"]
        assert len(wrenches) == len(rows)
        assert {w.header.frame_id for w in wrenches} == {sole}
        columns = [c for c in rows[0] if c.startswith(f"fn_{foot}_")]
        assert len(columns) == 4
        csv_fn = np.array([[float(r[c]) for c in columns] for r in rows]).sum(axis=1)
        # The soles stay flat: the sole-frame z force is the sum of the normal forces.
        fz = np.array([w.wrench.force.z for w in wrenches])
        np.testing.assert_allclose(fz, csv_fn, rtol=1e-3, atol=1e-6)
        assert csv_fn[-1] > 100.0  # each foot carries about half of the 40 kg


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["run", "no_such_scenario"], ["ball", "ramp", "stand"]),
        (["run", "ball", "--contact-model", "no_such_model"], ["penalty_fl", "spring_damper"]),
        (["run", "ball", "--set", "no_such_key=1"], ["height", "mu"]),
        (["run", "ball", "--set", "height"], ["key=value"]),
        (["compare", "no_such_scenario", "--out", "unused"], ["ball", "ramp"]),
        (["bench", "--scenario", "no_such_scenario", "--steps", "5"], ["stand"]),
    ],
)
def test_config_errors_exit_2_with_valid_names(tmp_path, capsys, argv, names):
    assert cli.main([*argv, *(["--out", str(tmp_path)] if argv[0] == "run" else [])]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith("error: ")
    assert "Traceback" not in err
    for name in names:
        assert name in err


def test_divergence_writes_outputs_and_exits_1(tmp_path, capsys):
    # A 1 MN push from t = 0 (spring_damper's stiffness 1e9 is now refused by its stability
    # check, so divergence is forced by the load instead).
    code = cli.main(["run", "push", "--controller", "joint_pd", "--duration", "0.1",
                     "--set", "push_force=1e6", "--set", "push_time=0.0",
                     "--out", str(tmp_path)])
    assert code == 1
    assert "diverged" in capsys.readouterr().err
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert "DivergenceError" in summary["error"]
    assert summary["outcome"] == "diverged" and "max_speed" in summary["diverged"]["cause"]
    assert summary["steps"] < 100
    assert (tmp_path / "trace.mcap").stat().st_size > 0
    assert (tmp_path / "plots" / "energy.png").exists()


def test_set_values_are_yaml_with_exponent_floats():
    assert cli.parse_sets(["a=0.5", "b=1e-6", "c=true", "d=linear", "e=3"]) == {
        "a": 0.5, "b": 1e-6, "c": True, "d": "linear", "e": 3}


def test_list_names_everything_with_defaults_and_meanings(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    for name in [*SCENARIOS, *CONTACT_MODELS, "joint_pd", "slope_deg", "contact.kp", "biped3d"]:
        assert name in out
    # every key with its default and meaning (the keys the README promises among them)
    for line in ("behavior.n_steps = 5  number of steps",
                 "behavior.step_length = 0.12  foothold advance per step [m]",
                 "behavior.tension_amplitude = 20.0",
                 "controller.kp = 300.0  joint stiffness K_p",
                 "contact.epsilon = 0.0  ε, allowed steady penetration depth [m]",
                 "height = 0.5  initial height of the ball's bottom above the ground [m]"):
        assert line in out, line


def test_parser_names_match_the_layers():
    """The parser names defaults without importing the layers; they must agree."""
    from biped_contact_sim.session import config
    from biped_contact_sim.sim import simulator

    assert cli.DEFAULT_CONTACT_MODEL == config.DEFAULT_CONTACT_MODEL
    assert cli.INTEGRATOR_NAMES == simulator.INTEGRATORS
    assert cli.INTEGRATOR_NAMES[0] == simulator.SimSettings.integrator  # --help's default
    from biped_contact_sim.cli import bench

    for name in ("BENCH_SCENARIO", "BENCH_STEPS", "PEERS", "SCALING_MODELS", "SCALING_STEPS"):
        assert getattr(cli, name) == getattr(bench, name), name


def test_bench_writes_one_result_per_model(tmp_path, capsys):
    assert cli.main(["bench", "--steps", "50", "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "bench.json").read_text())["results"]
    assert [r["contact_model"] for r in results] == list(CONTACT_MODELS)
    for r in results:
        assert r["scenario"] == "stand"
        assert r["steps"] == 50
        assert r["mean_step_us"] > 0
    assert "µs/step" in capsys.readouterr().out


def test_compare_writes_table_and_plots(tmp_path):
    # contact.kp is a penalty_fl setting: spring_damper refuses it and gets a row saying so.
    code = cli.main(["compare", "ball", "--duration", "0.4", "--set", "contact.kp=2",
                     "--out", str(tmp_path)])
    assert code == 0
    rows = {r["contact_model"]: r for r in read_csv(tmp_path / "comparison.csv")}
    assert set(rows) == set(CONTACT_MODELS)
    assert rows["penalty_fl"]["error"] == ""
    assert rows["penalty_fl"]["scenario"] == "ball"
    assert int(rows["penalty_fl"]["steps"]) == 2000
    # Dropped from 0.5 m, at rest on the ground: the impact took m g h = 4.905 J.
    assert float(rows["penalty_fl"]["energy_change_J"]) == pytest.approx(-4.905, abs=1e-2)
    # k_p/k_v = 2/5000: (almost) no restitution (Rengifo et al. Fig. 4, k_p small).
    assert 0.0 <= float(rows["penalty_fl"]["rebound_ratio"]) < 0.01
    assert rows["spring_damper"]["error"].startswith("refused:")
    assert "kp" in rows["spring_damper"]["error"]
    assert "| penalty_fl |" in (tmp_path / "comparison.md").read_text()
    for name in ("compare_gaps.png", "compare_normal_force.png", "compare_energy.png",
                 "compare_residuals.png"):
        assert (tmp_path / "ball" / name).exists()


def test_plots_make_no_extra_runs_unless_paper_figures(tmp_path, monkeypatch):
    from biped_contact_sim.cli import plots, plots_paper
    from biped_contact_sim.session.runner import run_scenario

    result = run_scenario("ramp", duration=0.2)
    calls = []
    monkeypatch.setattr(plots_paper, "run", lambda *a, **k: calls.append(a) or result)
    names = {p.name for p in plots.make_plots(result, tmp_path)}
    assert calls == [] and {"ramp_stick_slip.png", "energy.png"} <= names
    plots.make_plots(result, tmp_path, extra_runs=True)
    assert len(calls) == 2  # the sticking and the sliding ramp of the paper's figure


def test_plot_units_follow_the_magnitudes():
    from biped_contact_sim.cli import plots_common, plots_control

    assert plots_common._length_unit(np.array([-9e-7, 0.0])) == (1e6, "µm")
    assert plots_common._length_unit(np.array([-2e-3, 0.5])) == (1e3, "mm")
    assert plots_control._internal_force_label("tension_left_foot_right_foot")[1] == "N"
    title, unit, _ = plots_control._internal_force_label("m_cop_left_foot_x")
    assert unit == "N·m" and "left CoP" in title
