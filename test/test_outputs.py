"""What a run leaves behind: the trace's TF tree, QoS and names; a checked ``--out``; flat
memory; bad input named; quick start-up. (Stops: test_stops.py; reused and shared folders:
test_outdir.py.)"""

import itertools
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import yaml

from biped_contact_sim.cli import main as cli
from biped_contact_sim.cli import progress
from biped_contact_sim.record import recorder
from biped_contact_sim.record.buffer import DecimatingBuffer, deep_sizeof
from biped_contact_sim.record.mcap_writer import QOS_METADATA_KEY
from biped_contact_sim.robot import RobotModel

ENV = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}


def biped_sim(*args, **kwargs):
    """``biped-sim ARGS`` as a subprocess (the entry point's module, this interpreter)."""
    return subprocess.Popen([sys.executable, "-m", "biped_contact_sim.cli.main", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=ENV, **kwargs)


def read_trace(path):
    """({topic: channel metadata}, {topic: [decoded messages]})."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from mcap_ros2.reader import read_ros2_messages
    metadata, messages = {}, {}
    for item in read_ros2_messages(str(path)):
        metadata[item.channel.topic] = dict(item.channel.metadata)
        messages.setdefault(item.channel.topic, []).append(item.ros_msg)
    return metadata, messages


@pytest.fixture(scope="module")
def walk_trace(tmp_path_factory):
    """``run walk`` to mid-step (t = 2.2 s, one foot in the air), recorded at 100 Hz."""
    out = tmp_path_factory.mktemp("walk")
    code = cli.main(["-q", "run", "walk", "--duration", "2.2", "--record-rate", "100",
                     "--no-plots", "--no-replay", "--out", str(out)])
    assert code == 0
    return out


def se3(transform):
    t, r = transform.translation, transform.rotation
    return pin.XYZQUATToSE3(np.array([t.x, t.y, t.z, r.x, r.y, r.z, r.w]))


def test_tf_places_the_soles_where_pinocchio_does(walk_trace):
    """Chain /tf (moving links) and /tf_static (soles, contact points) from world to each sole
    and compare with pinocchio's forward kinematics of the recorded configuration."""
    metadata, messages = read_trace(walk_trace / "trace.mcap")
    robot = RobotModel.load("biped3d")
    static = {tr.child_frame_id: tr for tr in messages["/tf_static"][0].transforms}
    assert {"l_sole", "r_sole", "left_foot_point0", "right_foot_point3"} <= set(static)
    links = {f.name for f in robot.model.frames if f.type == pin.FrameType.BODY}
    odoms = {key(m.header.stamp): m for m in messages["/odom"]}
    states = {key(m.header.stamp): m for m in messages["/joint_states"]}
    data = robot.create_data()
    highest = 0.0
    for tf in messages["/tf"]:  # every recorded instant, 100 Hz
        moving = {tr.child_frame_id: tr for tr in tf.transforms}
        # every link moved by a joint, and the root from the world
        assert set(moving) | set(static) >= links
        assert moving["base_link"].header.frame_id == "world"  # the root link
        parents = {c: tr.header.frame_id for c, tr in (*static.items(), *moving.items())}
        transforms = {**static, **moving}

        def world_pose(frame, transforms=transforms, parents=parents):
            pose = pin.SE3.Identity()
            while frame != "world":
                pose = se3(transforms[frame].transform) * pose
                frame = parents[frame]
            return pose

        # the configuration of the same instant, from /odom and /joint_states
        stamp = key(tf.transforms[0].header.stamp)
        odom, js = odoms[stamp], states[stamp]
        p, o = odom.pose.pose.position, odom.pose.pose.orientation
        q = robot.configuration([p.x, p.y, p.z], dict(zip(js.name, js.position, strict=True)))
        q[3:7] = [o.x, o.y, o.z, o.w]
        pin.framesForwardKinematics(robot.model, data, q)
        for sole in ("l_sole", "r_sole"):
            expected = data.oMf[robot.model.getFrameId(sole)]
            got = world_pose(sole)
            np.testing.assert_allclose(got.translation, expected.translation, atol=1e-9)
            np.testing.assert_allclose(got.rotation, expected.rotation, atol=1e-9)
            highest = max(highest, got.translation[2])
    # a sole was in the air (a step): the check is not only about a standing robot
    assert highest > 5e-3


def key(stamp):
    return stamp.sec, stamp.nanosec


def test_trace_topics_are_absolute_with_offered_qos(walk_trace):
    metadata, messages = read_trace(walk_trace / "trace.mcap")
    assert all(topic.startswith("/") for topic in metadata)
    assert {"/joint_states", "/odom", "/contact_wrench/left_foot", "/zmp", "/contact_markers",
            "/tf", "/tf_static", "/clock", "/robot_description"} <= set(metadata)
    for topic, meta in metadata.items():
        qos = yaml.safe_load(meta[QOS_METADATA_KEY])[0]
        latched = topic in ("/robot_description", "/tf_static")
        assert qos["durability"] == (1 if latched else 2), topic  # 1 = transient local
        assert qos["reliability"] == 1
    assert len(messages["/tf_static"]) == len(messages["/robot_description"]) == 1
    rows = (walk_trace / "timeseries.csv").read_text().splitlines()
    # --record-rate 100 over 2.2 s: steps 0, 10, ..., 2190 and the last one (plus the header)
    assert len(rows) - 1 == len(messages["/tf"]) == 221


def test_unwritable_out_fails_before_simulating(tmp_path, capsys, monkeypatch):
    from biped_contact_sim.session import runner

    def no_run(*args, **kwargs):
        raise AssertionError("simulated although --out is unusable")

    monkeypatch.setattr(runner, "Run", no_run)
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    for out in (a_file, Path("/proc/nope")):
        assert cli.main(["run", "drop", "--out", str(out)]) == cli.EXIT_OUTPUT
        err = capsys.readouterr().err
        assert err.startswith(f"error: --out {out}") and "Traceback" not in err


def peak_rss_mb(duration: float, out: Path, scenario: str = "ramp", *options: str) -> float:
    """Peak resident memory [MB] of ``biped-sim run SCENARIO`` lasting ``duration`` s, recorded
    at 200 Hz, with its replay unless ``options`` say otherwise (no plots)."""
    code = (
        "import resource, sys\n"
        "from biped_contact_sim.cli.main import main\n"
        f"rc = main(['-q', 'run', '{scenario}', '--duration', '{duration}', '--no-plots',"
        f" '--record-rate', '200', *{list(options)!r}, '--out', r'{out}'])\n"
        "assert rc == 0, rc\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=ENV, check=True)
    return float(result.stdout.split()[-1])


# Past the fill of every bounded buffer (the plot samples' 16 MB after ~16 s of the ramp, the
# replay's 2 048 frames after 68 s), twice the duration may not cost more than this [MB] of peak
# memory (measured: +0.8 MB from 70 s to 140 s; memory does not grow with the run).
RSS_GROWTH_BOUND_MB = 5.0


def test_memory_stays_flat_once_the_buffers_are_full(tmp_path):
    short = peak_rss_mb(70.0, tmp_path / "short")
    long = peak_rss_mb(140.0, tmp_path / "long")
    print(f"peak RSS: 70 s run {short:.0f} MB, 140 s run {long:.0f} MB")
    assert long - short < RSS_GROWTH_BOUND_MB
    summary = json.loads((tmp_path / "long" / "summary.json").read_text())
    assert summary["steps"] == 140_000
    rows = (tmp_path / "long" / "timeseries.csv").read_text().count("\n")
    assert rows == 28_001 + 1  # every recorded sample is on disk (steps 0, 5, ..., and the last)


def test_stand_memory_is_flat_after_its_first_seconds(tmp_path):
    """The probe of issue 26: ``stand`` grew 3.3 MB per simulated second until 41 s (its plot
    samples: ~13 kB each, 200 per second). Now they fill 16 MB in ~6 s: from 8 s to 24 s the
    peak grows by no more than the noise (without the replay, whose 2 048 frames fill until
    68 s)."""
    short = peak_rss_mb(8.0, tmp_path / "short", "stand", "--no-replay")
    long = peak_rss_mb(24.0, tmp_path / "long", "stand", "--no-replay")
    print(f"peak RSS of stand: 8 s run {short:.0f} MB, 24 s run {long:.0f} MB")
    assert long - short < RSS_GROWTH_BOUND_MB  # was +53 MB


def test_the_plot_buffer_is_bounded_in_bytes():
    """Samples of ~1 kB each in a 64 kB budget: the buffer halves itself whenever it would
    exceed it, and its samples stay evenly spaced from the first one."""
    buffer = DecimatingBuffer(capacity=8192, budget=64 * 1024)
    for k in range(5000):
        buffer.append((k, np.zeros(120)))  # 960 bytes of data, ~1.2 kB with the headers
        assert buffer.nbytes <= 64 * 1024
    kept = [k for k, _ in buffer]
    assert kept[0] == 0 and len(kept) >= 20
    assert len({b - a for a, b in itertools.pairwise(kept)}) == 1
    assert buffer.nbytes == pytest.approx(len(kept) * deep_sizeof((0, np.zeros(120))), rel=0.01)


def test_decimating_buffer_keeps_evenly_spaced_samples():
    buffer = DecimatingBuffer(8)
    for k in range(8):
        buffer.append(k)
    assert list(buffer) == list(range(8)) and not buffer.decimated
    for k in range(8, 37):
        buffer.append(k)
    assert list(buffer) == [0, 8, 16, 24, 32]  # stride 8 once 33 samples were offered
    assert len(buffer) <= 8 and buffer[0] == 0


def test_absurd_step_counts_are_refused_with_the_count(tmp_path, capsys):
    assert cli.main(["run", "ball", "--dt", "1e-7", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "25000000 steps" in err and "--max-steps 25000000" in err


@pytest.mark.parametrize(("sets", "words"), [
    (["height=-1"], ["height", ">= 0"]),
    (["mu=nan"], ["mu", ">= 0"]),
    (["height=abc"], ["height", "expected a float"]),
])
def test_ball_settings_out_of_range_are_refused(tmp_path, capsys, sets, words):
    argv = ["run", "ball", "--out", str(tmp_path)]
    for pair in sets:
        argv += ["--set", pair]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert all(w in err for w in words), err


def test_plate_grid_must_be_an_integer(tmp_path, capsys):
    assert cli.main(["run", "plate", "--set", "grid=2.5", "--out", str(tmp_path)]) == 2
    assert "grid=2.5: expected an int in [2, 12]" in capsys.readouterr().err


def write_robot(tmp_path, **changes):
    """A copy of config/biped3d.yaml with entries of ``robot`` replaced."""
    from biped_contact_sim.robot.config import package_share

    raw = yaml.safe_load((package_share() / "config" / "biped3d.yaml").read_text())
    robot = raw["/**"]["ros__parameters"]["robot"]
    for key, value in changes.items():
        target = robot
        *parents, last = key.split(".")
        for part in parents:
            target = target[part]
        target[last] = value
    robot["urdf"] = str(package_share() / "urdf" / "biped3d.urdf")
    path = tmp_path / "robot.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


@pytest.mark.parametrize(("changes", "key"), [
    ({"contacts.left_foot.offsets": ["a", 0.0, 0.0]}, "robot.contacts.left_foot.offsets"),
    ({"contacts.left_foot.offsets": [float("nan"), 0.0, 0.0]},
     "robot.contacts.left_foot.offsets"),
    ({"standing.joint_names": ["l_hip_yaw", "no_such_joint"],
      "standing.positions": [0.0, 0.0]}, "no_such_joint"),
])
def test_robot_config_errors_name_file_and_key(tmp_path, capsys, changes, key):
    path = write_robot(tmp_path, **changes)
    assert cli.main(["run", "stand", "--robot", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and key in err and "Traceback" not in err


def test_missing_robot_config_file(tmp_path, capsys):
    missing = tmp_path / "missing.yaml"
    assert cli.main(["run", "stand", "--robot", str(missing), "--out", str(tmp_path)]) == 2
    assert f"robot config file {missing} does not exist" in capsys.readouterr().err


def test_help_and_version_import_no_simulation_layers():
    code = ("import sys\n"
            "from biped_contact_sim.cli.main import main\n"
            "for argv in (['--help'], ['--version'], ['run', '--help']):\n"
            "    try:\n"
            "        main(argv)\n"
            "    except SystemExit:\n"
            "        pass\n"
            "heavy = [m for m in ('pinocchio', 'numba', 'matplotlib', 'numpy', 'meshcat')\n"
            "         if m in sys.modules]\n"
            "print('HEAVY', heavy)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=ENV, check=True)
    assert "HEAVY []" in result.stdout
    assert "--record-rate" in result.stdout and "Exit codes" in result.stdout


def test_progress_off_a_terminal_is_one_line_per_tenth(capsys):
    bar = progress.progress_bar(1000, "walk/penalty_fl")  # stderr is not a terminal here
    for _ in range(100):
        bar.update(10)
    bar.close()
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 10 and "\r" not in err
    assert lines[-1].startswith("walk/penalty_fl: 100 % (1000/1000 step")
    progress.set_quiet(True)
    try:
        progress.progress_bar(10, "x").update(10)
        assert capsys.readouterr().err == ""
    finally:
        progress.set_quiet(False)


def test_summary_is_strict_json_for_divergence_and_interrupts():
    summary = {"error": None, "x": float("nan"), "interrupted": True}
    assert recorder.json_safe(summary) == {"error": None, "x": None, "interrupted": True}


def test_foxglove_layout_reads_topics_the_trace_has(walk_trace):
    """Every topic the layout's panels read is in a biped trace, with the field it plots."""
    from biped_contact_sim.robot.config import package_share

    layout = json.loads((package_share() / "config" / "foxglove_layout.json").read_text())
    _, messages = read_trace(walk_trace / "trace.mcap")
    panels = layout["configById"]
    assert {"3D!robot", "DiagnosticSummary!diag"} <= set(panels)
    assert panels["3D!robot"]["layers"]["robot"]["topic"] == "/robot_description"
    paths = [p["value"] for k, cfg in panels.items() if k.startswith("Plot!")
             for p in cfg["paths"]]
    assert paths
    for path in paths:
        topic, *fields = path.split(".")
        assert topic in messages, path
        value = messages[topic][-1]
        for field in fields:
            value = getattr(value, field)
        assert isinstance(value, float), path
    for topic in [*panels["3D!robot"]["topics"], panels["DiagnosticSummary!diag"][
            "topicToRender"]]:
        assert topic in messages, topic
    status = messages["/diagnostics"][-1].status[0]
    values = {kv.key: kv.value for kv in status.values}
    assert status.name == "biped_contact_sim: simulator" and status.level == 0
    assert values["contact_model"] == "penalty_fl" and int(values["steps"]) > 0
    # one status per simulated second, from t = 0
    assert len(messages["/diagnostics"]) == 3
