"""World scenarios with geometry contacts (fall, step, box_push, box_stack) through the runner,
and the observables of geometry contacts (per-body wrenches, ZMP only on coplanar support)."""

from __future__ import annotations

import numpy as np
import pytest

from biped_contact_sim.contact import CONTACT_MODELS, make_contact_model
from biped_contact_sim.errors import ConfigError
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.session.runner import run_scenario
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
    result = run_scenario("fall", contact_model=model, duration=1.5, record_rate=1000, **extra)
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
    result = run_scenario("step", contact_model="time_stepping", duration=0.5, record_rate=50)
    assert result.outcome == "completed", result.error
    step = result.samples[-1].step
    on_edge = np.isclose(step.p[:, 0], -0.04, atol=1e-6) & step.active
    assert on_edge.sum() >= 2  # the soles' sections at the edge carry the heels' side
    np.testing.assert_allclose(step.frames[step.active][:, :, 2],
                               np.tile([0.0, 0.0, 1.0], (step.active.sum(), 1)), atol=1e-9)
    weight = result.robot.mass * G
    assert step.f_world[:, 2].sum() == pytest.approx(weight, rel=0.05)


def test_box_push_and_stack_scenarios_run_and_report():
    push = run_scenario("box_push", contact_model="gauss_seidel", duration=0.5, record_rate=50)
    assert push.outcome == "completed" and push.samples[-1].step.q[0] > 0.05
    stack = run_scenario("box_stack", contact_model="time_stepping", duration=0.3, record_rate=50)
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
    result = run_scenario("box_stack", contact_model="time_stepping", duration=0.1, record_rate=100)
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
    runs = {mode: run_scenario("stand", contact_model="time_stepping", controller="joint_pd",
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


# The geometry plate (grid² studs) at rest. spring_damper: the plate scenario keeps that
# model's biped defaults, too stiff for a 1 kg plate on more than 4 points (check_inertia
# refuses them from grid = 3), so the test takes the ramp brick's gains (2e4 N/m, 50 N s/m:
# dt·λ·c < 2 and dt²·λ·k < 4 − 2 dt·λ·c hold for λ < 33 /kg, and grid 4's lightest modes,
# pitch on 16 studs, λ = Σx²/I_yy = 25.1 /kg, and sliding with it, 26.7 /kg, are below).
PLATE_SPRING = {"contact.stiffness": 2e4, "contact.damping": 50.0,
                "contact.tangential_stiffness": 2e4, "contact.tangential_damping": 50.0}
PLATE_SETTLE_S, PLATE_WATCH_S = 0.2, 0.2


@pytest.mark.parametrize("grid", [2, 3, 4])
@pytest.mark.parametrize("model", sorted(CONTACT_MODELS))
def test_geometry_plate_rests_on_grid_squared_studs_carrying_mg_at_its_centre(model, grid):
    """The 1 kg plate placed on the ground on its grid × grid studs (geometry contacts, the
    scenario's default), watched from 0.2 s to 0.4 s. Analytic answers:

    * exactly grid² contacts, all active, one under each stud: the grid points
      (±0.1 m, ±0.05 m and between) of the bottom face;
    * Σ f_n = m g: the constraint models stop the plate at every step (relative 1e-6: the
      solvers' tolerances; gauss_seidel's sweeps stop at a force change below theirs);
      spring_damper's transient has decayed (a normal mode of G with eigenvalue λ, all
      underdamped here, k λ > (c λ / 2)², decays at c λ / 2 ≥ 100 /s, λ ≥ 4 /kg: e^(−20)
      by 0.2 s);
      penalty_fl approaches φ = −ε on its slow mode φ + ε ∝ e^(−(k_p/k_v) t) whose
      acceleration (k_p/k_v)²|φ + ε| is below k_p ε = 5e-4 m/s², 5.1e-5 g;
    * no creep: the plate neither slides nor turns (horizontal drift and the quaternion's
      vector part < 1e-9 over 0.2 s: no tangential load on a level plate); vertically it may
      move only by what the model still sinks: penalty_fl's approach to −ε (< ε), the others
      < 1 nm;
    * the depth each model documents (docs/methods.md §2): spring_damper's linear springs
      rest at φ = −m g / (grid² k) on every stud (equal loads on a symmetric rigid plate) and,
      released from φ = 0, never sink beyond twice that (the undamped overshoot of a spring
      under a constant load); penalty_fl settles towards φ = −ε and never below it; the
      constraint models only keep the drift their stabilisation removes (< 10 nm, a
      thousandth of g dt², the sink of one unconstrained step);
    * the centre of pressure of the symmetric plate at its centre (x, y) = (0, 0), within
      1e-8 m (the residual moment over m g of the solvers' tolerances).
    """
    sets = {"grid": grid, **(PLATE_SPRING if model == "spring_damper" else {})}
    result = run_scenario("plate", contact_model=model, duration=PLATE_SETTLE_S + PLATE_WATCH_S,
                          record_rate=100, sets=sets)
    assert result.outcome == "completed", result.error
    assert result.sim.contacts == "geometry"
    m = grid * grid
    settled = next(s.step for s in result.samples if s.step.t >= PLATE_SETTLE_S - 1e-9)
    last = result.samples[-1]
    step = last.step
    assert len(step.phi) == m and int(step.active.sum()) == m
    xs, ys = np.linspace(-0.1, 0.1, grid), np.linspace(-0.05, 0.05, grid)
    grid_points = sorted((round(x, 9), round(y, 9)) for x in xs for y in ys)
    assert sorted(map(tuple, np.round(step.p[:, :2], 9))) == grid_points
    weight = result.robot.mass * G
    settings = result.contact_settings
    eps = settings.get("epsilon", 0.0)
    rel = settings["kp"] * eps / G if model == "penalty_fl" else 1e-6
    assert step.f_world[:, 2].sum() == pytest.approx(weight, rel=rel)
    assert np.abs(step.q[:2] - settled.q[:2]).max() < 1e-9
    assert np.abs(step.q[3:6]).max() < 1e-9
    assert abs(step.q[2] - settled.q[2]) < (eps if model == "penalty_fl" else 1e-9)
    if model == "spring_damper":
        rest = weight / (m * settings["stiffness"])
        np.testing.assert_allclose(step.phi, -rest, rtol=1e-6)
        assert result.max_penetration <= 2.0 * rest
    elif model == "penalty_fl":
        assert np.all(step.phi < 0.0) and result.max_penetration <= eps
    else:
        assert result.max_penetration < 1e-8
    (foot,) = last.obs.feet
    np.testing.assert_allclose(foot.cop[:2], 0.0, atol=1e-8)


def test_plate_studs_touch_at_the_configured_points_as_the_points_contacts_do():
    """With ``--set contacts=points`` the plate is the configured points of before; with its
    studs, the same places carry the same forces (grid 3, time_stepping: 1e-9 N)."""
    runs = {mode: run_scenario("plate", contact_model="time_stepping", duration=0.1,
                               record_rate=100, sets={"grid": 3, "contacts": mode})
            for mode in ("points", "geometry")}
    assert runs["points"].sim.contacts == "points" and runs["points"].robot.n_points == 9
    from biped_contact_sim.sim.observables import configured_point_values

    robot = runs["geometry"].robot
    geo, pts = runs["geometry"].samples[-1].step, runs["points"].samples[-1].step
    np.testing.assert_allclose(configured_point_values(robot, geo, geo.p), pts.p, atol=1e-12)
    np.testing.assert_allclose(configured_point_values(robot, geo, geo.f_world),
                               pts.f_world, atol=1e-9)


def test_bench_scaling_times_the_plate_on_points_and_on_studs(tmp_path, monkeypatch, capsys):
    """``biped-sim bench --scaling`` (two grids, two steps: no timing is asserted): a row per
    (model, contacts, m) with m contacts found and closed, the detection timed only with
    geometry contacts, a fitted exponent per (model, contacts); ``--contacts`` keeps one mode."""
    import json

    from biped_contact_sim.cli import bench, main

    monkeypatch.setattr(bench, "SCALING_GRIDS", (2, 3))
    assert main.main(["bench", "--scaling", "--steps", "2", "--out", str(tmp_path)]) == 0
    out = json.loads((tmp_path / "scaling.json").read_text())
    rows = out["results"]
    assert {(r["contact_model"], r["contacts"], r["m"]) for r in rows} == {
        (model, mode, m) for model in bench.SCALING_MODELS for mode in ("points", "geometry")
        for m in (4, 9)}
    for r in rows:
        assert r["contacts_found"] == r["active_points"] == r["m"]
        assert (r["detect_us"] is not None) == (r["contacts"] == "geometry")
    assert set(out["exponents"]) == {f"{model}/{mode}" for model in bench.SCALING_MODELS
                                     for mode in ("points", "geometry")}
    assert (tmp_path / "scaling.png").is_file()
    assert main.main(["bench", "--scaling", "--steps", "2", "--contacts", "points",
                      "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "scaling.json").read_text())["results"]
    assert {r["contacts"] for r in rows} == {"points"}
