"""World scenarios with geometry contacts (fall, step, box_push, box_stack) through the runner,
and the observables of geometry contacts (per-body wrenches, ZMP only on coplanar support)."""

from __future__ import annotations

import numpy as np
import pytest

from biped_contact_sim.cli.runner import run
from biped_contact_sim.contact import make_contact_model
from biped_contact_sim.errors import ConfigError
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.sim.observables import Observer
from biped_contact_sim.sim.scenarios import get_scenario
from biped_contact_sim.sim.simulator import SimSettings, Simulator
from biped_contact_sim.sim.world import parse_world

G = 9.81


# The depth each model may reach in the limp fall (README "World and collision"). The three
# constraint models: only the drift their stabilisation removes (1 mm). penalty_fl: eq. 17's
# closed loop φ̈ = −k_v φ̇ − k_p φ per point gives 3.9 mm per m/s of approach speed for
# (k_p, k_v) = (500, 250), 2.1 cm at the fall's fastest touchdown (5.5 m/s, a swinging
# foot); the 8 corners of one rigid link cannot all follow it (24 rows, 6 DOF: least
# squares), measured 2.6 cm: 3 cm allowed. spring_damper: its springs can only store the
# mechanical energy the robot lost (checked per step below); it cannot come to rest at the
# scenario's dt = 1 ms: with k = 1e5 N/m and c = 100 N s/m a 10 kg share of the torso bounces
# back with e ≈ exp(−πζ) ≈ 0.85 (ζ = c/(2√(k m)) = 0.05), and more damping is unstable on the
# feet (dt·λ·c < 2 with 1/λ = 0.068 kg: c < 135 N s/m); at dt = 0.1 ms, c = 800 N s/m
# (ζ = 0.4) is stable and it lies still (measured 1.8 cm deep).
FALL_DEPTH = {"time_stepping": 1e-3, "gauss_seidel": 1e-3, "acceleration_lcp": 1e-3,
              "penalty_fl": 0.03, "spring_damper": 0.03}
FALL_RUN = {"spring_damper": {"dt": 1e-4, "sets": {"contact.damping": 800.0}}}


@pytest.mark.parametrize("model", sorted(FALL_DEPTH))
def test_limp_fall_lies_on_the_ground_without_deep_penetration_or_energy_gain(model):
    """The limp biped dropped on its side from 0.5 m: at rest on the ground after 1.5 s, no
    point deeper than the model's depth (``FALL_DEPTH``), no energy created beyond the
    runner's tolerance. spring_damper: at every step the energy its linear springs hold,
    Σ ½ k δᵢ², is at most the mechanical energy the robot has lost, E₀ − E (a limp robot:
    only gravity and the contacts work; a damped, clamped spring stores no more than the work
    done on it)."""
    extra = FALL_RUN.get(model, {})
    result = run("fall", contact_model=model, duration=1.5, record_rate=1000, **extra)
    assert result.outcome == "completed", result.error
    assert result.max_penetration < FALL_DEPTH[model]
    assert result.energy["created_J"] <= result.energy["tolerance_J"]
    last = result.samples[-1]
    assert last.step.q[2] < 0.25  # lying: the pelvis is near the ground, not standing
    assert np.abs(last.step.v).max() < 0.5
    if model == "spring_damper":
        k, tol = result.contact_settings["stiffness"], result.energy["tolerance_J"]
        e0 = result.samples[0].step.energy_prev
        stored = [(0.5 * k * np.square(np.minimum(s.step.phi, 0.0)).sum(),
                   e0 - s.step.energy_prev) for s in result.samples]
        assert max(u for u, _ in stored) > 1.0  # the impact loads the springs
        assert all(u <= lost + tol for u, lost in stored)


def test_step_scenario_stands_on_the_step_and_its_edge():
    result = run("step", contact_model="time_stepping", duration=0.5, record_rate=50)
    assert result.outcome == "completed", result.error
    step = result.samples[-1].step
    on_edge = np.isclose(step.p[:, 0], -0.04, atol=1e-6) & step.active
    assert on_edge.sum() >= 2  # the soles' sections at the edge carry the heels' side
    np.testing.assert_allclose(step.frames[step.active][:, :, 2],
                               np.tile([0.0, 0.0, 1.0], (step.active.sum(), 1)), atol=1e-9)
    weight = result.robot.mass * G
    assert step.f_world[:, 2].sum() == pytest.approx(weight, rel=0.05)


def test_box_push_and_stack_scenarios_run_and_report():
    push = run("box_push", contact_model="gauss_seidel", duration=0.5, record_rate=50)
    assert push.outcome == "completed" and push.samples[-1].step.q[0] > 0.05
    stack = run("box_stack", contact_model="time_stepping", duration=0.3, record_rate=50)
    assert stack.outcome == "completed"
    assert np.abs(stack.samples[-1].step.q_objects[:2]).max() < 1e-4


def test_contacts_and_world_keys_are_checked():
    scenario = get_scenario("drop")
    with pytest.raises(ConfigError, match="--set contacts='mesh': allowed points, geometry"):
        scenario.resolve({"contacts": "mesh"})
    with pytest.raises(ConfigError, match="Unknown world: 'moon'"):
        scenario.simulator_options(scenario.resolve({"world": "moon"}))
    with pytest.raises(ConfigError, match="needs --set contacts=geometry"):
        scenario.simulator_options(scenario.resolve({"world": "table_panel",
                                                     "contacts": "points"}))
    options = scenario.simulator_options(scenario.resolve({"world": "table_panel"}))
    assert options["contacts"] == "geometry" and len(options["world"].boxes) == 2


def _box_observation(world):
    robot = RobotModel.load("box")
    sim = Simulator(robot, make_contact_model("time_stepping"), settings=SimSettings(),
                    contacts="geometry", world=parse_world(world))
    z = 0.05 + (0.5 if world.get("boxes") else 0.0)
    sim.reset(robot.configuration([0.1, 0.0, z]))
    obs, step = None, None
    observer = Observer(robot, sim.terrain)
    for _ in range(100):
        q, v = sim.q, sim.v
        step = sim.step(np.zeros(0))
        obs = observer.observe(step, q, v)
    return robot, step, obs


def test_geometry_observables_zmp_on_the_ground_and_null_off_it():
    robot, step, obs = _box_observation({})
    weight = robot.mass * G
    np.testing.assert_allclose(obs.zmp[:2], [0.1, 0.0], atol=1e-6)
    assert obs.zmp_reason is None and obs.zmp_in_support
    assert obs.feet[0].normal_force == pytest.approx(weight, rel=1e-6)
    np.testing.assert_allclose(obs.bodies["root_joint"][:3], [0.0, 0.0, weight], atol=1e-6)
    assert len(obs.support_polygon) == 4
    table = {"name": "table", "size": [1, 1, 0.1], "position": [0, 0, 0.45]}
    robot, step, obs = _box_observation({"ground": None, "boxes": [table]})
    assert obs.zmp is None and "not coplanar" in obs.zmp_reason
    assert obs.feet[0].cop[0] == pytest.approx(0.1, abs=1e-6)


def test_replay_draws_the_world_boxes_and_moves_the_free_objects(tmp_path, monkeypatch):
    """replay.html holds the world file's static boxes where the file puts them and an
    animation clip per free object that follows the object's simulated placement."""
    pytest.importorskip("meshcat")
    from biped_contact_sim.record import replay
    from biped_contact_sim.sim.terrain import PlaneTerrain
    from biped_contact_sim.sim.world import load_world

    world = load_world("step")
    shapes = {s.name: s for s in replay.world_shapes(PlaneTerrain(), world=world)}
    assert "ground" in shapes
    for box in world.boxes:
        shape = shapes[f"box/{box.name}"]
        assert shape.kind == "box" and np.allclose(shape.size, box.size)
        np.testing.assert_allclose(shape.placement, box.pose.homogeneous)
    result = run("box_stack", contact_model="time_stepping", duration=0.1, record_rate=100)
    recorder = replay.ReplayRecorder(result.robot, result.sim.terrain, result.sim.world)
    for sample in result.samples:
        recorder.add(sample)
    clips = {}
    real_clip = replay._clip

    def spy(path, times, values):
        clips[path] = values
        return real_clip(path, times, values)

    monkeypatch.setattr(replay, "_clip", spy)
    recorder.write(tmp_path / "replay.html")
    top = clips["world/objects/top"]
    q_top = result.samples[-1].step.q_objects  # position, quaternion x y z w
    np.testing.assert_allclose(top[-1, :7], q_top, atol=1e-6)
    assert top[-1, 2] == pytest.approx(0.14, abs=1e-3)  # resting on the box robot


def test_trace_has_the_free_objects_in_tf(tmp_path):
    """trace.mcap's /tf carries world → <object> for each free object of the world."""
    import warnings

    from biped_contact_sim.cli import main as cli

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        reader = pytest.importorskip("mcap_ros2.reader")
    code = cli.main(["-q", "run", "box_stack", "--contact-model", "time_stepping",
                     "--duration", "0.05", "--no-plots", "--no-replay", "--out", str(tmp_path)])
    assert code == 0
    poses = [tf for item in reader.read_ros2_messages(str(tmp_path / "trace.mcap"))
             if item.channel.topic == "/tf" for tf in item.ros_msg.transforms
             if tf.child_frame_id == "top"]
    assert poses and poses[-1].header.frame_id == "world"
    assert poses[-1].transform.translation.z == pytest.approx(0.14, abs=1e-3)
    assert poses[-1].transform.rotation.w == pytest.approx(1.0, abs=1e-6)


def test_robot_scenarios_default_to_geometry_and_the_papers_scenarios_to_points():
    """Geometry contacts are the default of the biped scenarios and of plate (its studs); the
    papers' single-body scenarios keep their configured points; ``--set contacts=points``
    gives the points back."""
    for name in ("drop", "stand", "sway", "push", "walk", "planar_walk", "fall", "step",
                 "plate"):
        scenario = get_scenario(name)
        assert scenario.simulator_options(scenario.resolve({}))["contacts"] == "geometry", name
        points = scenario.resolve({"contacts": "points"})
        if scenario.world is None:
            assert scenario.simulator_options(points)["contacts"] == "points", name
    for name in ("ball", "ramp"):
        scenario = get_scenario(name)
        assert scenario.simulator_options(scenario.resolve({}))["contacts"] == "points", name


def test_stand_with_points_and_with_geometry_carries_the_weight_on_the_same_corners():
    """On flat ground the soles' geometry contacts are their configured corners: the two modes
    give the same sole vertices and the same load to 1e-6 N."""
    runs = {mode: run("stand", contact_model="time_stepping", controller="joint_pd",
                      duration=0.2, record_rate=50, sets={"contacts": mode})
            for mode in ("points", "geometry")}
    weight = runs["points"].robot.mass * G
    steps = {mode: r.samples[-1].step for mode, r in runs.items()}
    assert steps["geometry"].contacts is not None and steps["points"].contacts is None
    from biped_contact_sim.sim.observables import configured_point_values

    robot = runs["geometry"].robot
    fn = {mode: configured_point_values(robot, step, step.f_contact[:, 2])
          for mode, step in steps.items()}
    corners = configured_point_values(robot, steps["geometry"], steps["geometry"].p)
    np.testing.assert_allclose(corners, steps["points"].p, atol=1e-9)
    for mode in fn:
        assert fn[mode].sum() == pytest.approx(weight, rel=1e-6)
    np.testing.assert_allclose(fn["geometry"], fn["points"], atol=1e-6)
