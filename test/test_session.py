"""The session layer: ``SimConfig`` (its split of ``--set`` pairs, its metadata), ``build``
(names refused with what is allowed, robot sources) and ``run`` against the simulator stepped
by hand."""

import shutil
import subprocess
import sys

import numpy as np
import pytest

from biped_contact_sim.contact import make_contact_model
from biped_contact_sim.control.joint_pd import JointPD, JointPDSettings
from biped_contact_sim.errors import ConfigError
from biped_contact_sim.session import (
    ContactConfig,
    ControlConfig,
    RobotSource,
    SimConfig,
    WorldConfig,
    build,
    config_fields,
    run,
)
from biped_contact_sim.session.builder import contact_model
from biped_contact_sim.sim.scenarios import get_scenario
from biped_contact_sim.sim.simulator import SimSettings, Simulator


def test_from_sets_splits_the_keys_as_the_command_line_gives_them():
    config = SimConfig.from_sets("walk", "gauss_seidel", "wbc", duration=1.0, dt=5e-4,
                                 integrator="rk4", record_rate=100.0, sets={
                                     "mu": 0.5, "robot": "humanoid", "contact.iterations": 40,
                                     "controller.kp": 200.0, "behavior.n_steps": 3,
                                     "world": "table", "contacts": "geometry"})
    assert config.world == WorldConfig("walk", {"mu": 0.5, "robot": "humanoid"}, "table",
                                       "geometry")
    assert config.contact == ContactConfig("gauss_seidel", {"iterations": 40})
    assert config.control == ControlConfig("wbc", {"kp": 200.0}, {"n_steps": 3})
    assert (config.dt, config.integrator, config.duration, config.record_rate) == (
        5e-4, "rk4", 1.0, 100.0)
    # what Scenario.resolve reads: the scenario's keys, world and contacts among them
    assert config.world.scenario_sets() == {"mu": 0.5, "robot": "humanoid", "world": "table",
                                            "contacts": "geometry"}
    # nothing given: every default
    assert SimConfig.from_sets("stand") == SimConfig()
    # a world/contacts value that is not a name stays for resolve to refuse, as before
    assert SimConfig.from_sets("stand", sets={"contacts": 3}).world.sets == {"contacts": 3}


@pytest.mark.parametrize(("config", "named"), [
    (SimConfig.from_sets("no_such_scenario"), ["ball", "stand", "walk"]),
    (SimConfig.from_sets("ball", "no_such_model"), ["penalty_fl", "gauss_seidel"]),
    (SimConfig.from_sets("stand", controller="no_such_controller"), ["joint_pd", "wbc"]),
    (SimConfig.from_sets("ball", sets={"no_such_key": 1}), ["height", "mu"]),
    (SimConfig.from_sets("ball", sets={"contact.no_such_setting": 1}), ["kp", "kv"]),
    (SimConfig.from_sets("drop", controller="joint_pd", sets={"controller.no_gain": 1}),
     ["controller.kp", "controller.kd"]),
    (SimConfig.from_sets("ball", integrator="euler"), ["semi_implicit_euler", "rk4"]),
    (SimConfig.from_sets("ball", "gauss_seidel", integrator="rk4"), ["semi_implicit_euler"]),
    (SimConfig.from_sets("drop", controller="joint_pd", sets={"behavior.n_steps": 2}),
     ["ctc", "wbc"]),
])
def test_build_refuses_unknown_names_naming_what_is_allowed(config, named):
    with pytest.raises(ConfigError) as info:
        build(config)
    for name in named:
        assert name in str(info.value)


def test_contact_model_checks_dt_and_integrator_for_the_nodes():
    assert contact_model("penalty_fl", {"kp": 2.0}, 1e-3, "rk4").settings.kp == 2.0
    with pytest.raises(ConfigError, match="semi_implicit_euler"):
        contact_model("time_stepping", {}, 1e-3, "rk4")


def test_every_leaf_field_has_its_default_type_unit_and_meaning():
    fields = {f.name: f for f in config_fields()}
    assert {"robot.config", "robot.urdf_path", "robot.description", "robot.overrides",
            "world.scenario", "world.sets", "world.world",
            "world.contacts", "contact.model", "contact.settings", "control.controller",
            "control.settings", "control.behavior", "dt", "integrator", "max_speed",
            "duration", "record_rate"} == set(fields)
    for f in fields.values():
        assert f.doc and isinstance(f.unit, str) and f.type, f
    assert fields["dt"].unit == "s" and fields["record_rate"].unit == "Hz"
    # defaults another layer owns are its own values; names come with the allowed ones
    assert fields["integrator"].default == SimSettings.integrator
    assert fields["max_speed"].default == SimSettings.max_speed
    assert fields["contact.model"].default == "penalty_fl"
    assert "penalty_fl" in fields["contact.model"].choices
    assert {"none", "joint_pd", "wbc"} <= set(fields["control.controller"].choices)
    assert "walk" in fields["world.scenario"].choices
    assert fields["integrator"].choices == ("semi_implicit_euler", "rk4")


def test_config_module_is_light_and_the_package_exports_functions():
    code = ("import sys\n"
            "from biped_contact_sim.session.config import DEFAULT_CONTACT_MODEL, SimConfig\n"
            "SimConfig.from_sets('walk', sets={'contact.kp': 1})\n"
            "print([m for m in ('numpy', 'pinocchio', 'numba') if m in sys.modules])\n"
            "import biped_contact_sim.session.runner\n"
            "from biped_contact_sim.session import build, run\n"
            "print(callable(run), callable(build))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.splitlines() == ["[]", "True True"]


def test_run_equals_the_simulator_stepped_by_hand():
    """A 0.2 s drop under the joint PD (from 5 cm: it lands at ~0.1 s): steps, maximum
    penetration and energy balance of ``run(SimConfig(...))`` equal those of the same objects
    put together and stepped here."""
    result = run(SimConfig(world=WorldConfig(scenario="drop"),
                           control=ControlConfig(controller="joint_pd"), duration=0.2))
    summary = result.summary()

    scenario = get_scenario("drop")
    params = scenario.resolve({})
    robot = scenario.make_robot(params)
    contact = make_contact_model("penalty_fl", **scenario.contact_defaults["penalty_fl"])
    sim = Simulator(robot, contact, scenario.terrain(params), SimSettings(dt=scenario.dt))
    q0, v0 = scenario.initial_state(robot, params)
    sim.reset(q0, v0)
    hold = JointPD(robot, robot.standing_configuration(), JointPDSettings(), sim.dt)
    e0, work, penetration, steps = sim.energy(), 0.0, 0.0, 0
    while steps * sim.dt < 0.2 - sim.dt / 2:
        v_prev = sim.v.copy()
        step = sim.step(hold(sim.t, sim.q, sim.v))
        work += sim.dt * float(step.tau @ (0.5 * (v_prev + step.v))[robot.v_idx])
        penetration = max(penetration, -float(step.phi.min()))
        steps += 1

    assert summary["steps"] == steps == 200 and summary["outcome"] == "completed"
    assert summary["max_penetration_m"] == pytest.approx(penetration, rel=1e-12)
    assert penetration > 1e-5  # it landed
    energy = summary["energy_balance"]
    assert energy["initial_J"] == pytest.approx(e0, rel=1e-12)
    assert energy["final_J"] == pytest.approx(sim.energy(), rel=1e-12)
    assert energy["work_torques_J"] == pytest.approx(work, rel=1e-9, abs=1e-12)
    np.testing.assert_allclose(result.sim.q, sim.q, rtol=0, atol=1e-12)  # to round-off


def test_build_with_a_robot_source_gives_that_robot(tmp_path):
    offsets = [0.15, 0.07, 0.0, 0.15, -0.07, 0.0, -0.1, -0.07, 0.0, -0.1, 0.07, 0.0]
    moved = build(SimConfig(world=WorldConfig(scenario="stand"), robot=RobotSource(
        overrides={"robot.contacts.left_foot.offsets": offsets})))
    left, right = moved.robot.config.contact_bodies
    np.testing.assert_allclose(np.ravel(left.offsets), offsets)
    default = build(SimConfig(world=WorldConfig(scenario="stand")))
    np.testing.assert_allclose(right.offsets, default.robot.config.contact_bodies[1].offsets)
    assert not np.allclose(np.ravel(default.robot.config.contact_bodies[0].offsets), offsets)
    # overrides equal to the file's and the scenario's own config: the scenario's robot
    same = build(SimConfig(robot=RobotSource(config="biped3d", overrides={
        "robot.base": "free_flyer"})))
    assert same.robot.mass == default.robot.mass
    # another URDF file
    urdf = tmp_path / "copy.urdf"
    shutil.copy(default.robot.config.urdf_path, urdf)
    copied = build(SimConfig(robot=RobotSource(urdf_path=str(urdf))))
    assert str(copied.robot.config.urdf_path) == str(urdf)
    assert copied.robot.mass == pytest.approx(default.robot.mass)
    with pytest.raises(ConfigError, match="urdf_path"):
        build(SimConfig(robot=RobotSource(urdf_path=str(tmp_path / "missing.urdf"))))
