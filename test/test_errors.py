"""Bad input gets a clear error naming what was wrong; the state is kept."""

import numpy as np
import pytest

from biped_contact_sim.contact import CONTACT_MODELS, make_contact_model
from biped_contact_sim.errors import ConfigError, DivergenceError, InputError
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.session.runner import run_scenario
from biped_contact_sim.sim.scenarios import get_scenario
from biped_contact_sim.sim.simulator import ExternalForce, SimSettings, Simulator


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(ConfigError, match=r"Unknown contact_model: 'foobar'\. Valid names: "
                       r"acceleration_lcp, gauss_seidel, penalty_fl, spring_damper, time_stepping"):
        make_contact_model("foobar")
    with pytest.raises(ConfigError,
                       match="ball, box_push, box_stack, drop, fall, lean_on_table, "
                             "multicontact, planar_walk, plate, push, ramp, stand, step, sway, "
                             "walk"):
        get_scenario("walk_on_moon")
    with pytest.raises(ConfigError, match="semi_implicit_euler, rk4"):
        SimSettings(integrator="verlet")
    with pytest.raises(ConfigError, match=r"'kp' for contact model 'spring_damper'\. Allowed: "
                       r"clamp, damping, hc_damping, hc_exponent, law, stiffness, "
                       r"tangential_damping, tangential_stiffness"):
        make_contact_model("spring_damper", kp=1.0)


@pytest.mark.parametrize("name", sorted(CONTACT_MODELS))
def test_every_registered_name_round_trips(name):
    assert make_contact_model(name).name == name


def test_unstable_penalty_fl_settings_refused():
    robot = RobotModel.load("ball")
    with pytest.raises(ConfigError, match=r"dt·kv = .* must be < 2"):
        Simulator(robot, make_contact_model("penalty_fl", kv=5000.0), settings=SimSettings(1e-3))
    with pytest.raises(ConfigError, match="dt²·kp"):
        Simulator(robot, make_contact_model("penalty_fl", kp=1e7, kv=10.0),
                  settings=SimSettings(1e-3))
    with pytest.raises(ConfigError, match=r"penalty_fl\.kv = -1\.0 must be finite and > 0"):
        make_contact_model("penalty_fl", kv=-1.0)


def test_bad_torque_refused_and_state_kept():
    robot = RobotModel.load("biped3d")
    sim = Simulator(robot, make_contact_model("penalty_fl"))
    sim.reset(robot.standing_configuration())
    q, v, t = sim.q.copy(), sim.v.copy(), sim.t
    for bad in (np.zeros(3), np.full(14, np.nan), np.full(14, np.inf)):
        with pytest.raises(InputError):
            sim.step(bad)
        assert np.array_equal(sim.q, q) and np.array_equal(sim.v, v) and sim.t == t
    sim.step(np.zeros(14))  # and it goes on
    assert sim.t > t


def test_divergence_is_named_and_not_committed():
    robot = RobotModel.load("ball")
    sim = Simulator(robot, make_contact_model("spring_damper", stiffness=1e4, damping=10.0),
                    settings=SimSettings(dt=1e-3))
    sim.add_external_force(ExternalForce("ball", (0.0, 0.0, 1e8)))  # 1 kg: 1e8 m/s²
    sim.reset(robot.configuration([0.0, 0.0, 0.1]), np.array([0.0, 0.0, -1.0]))
    with pytest.raises(DivergenceError, match="diverged"):
        for _ in range(1000):
            q_before = sim.q.copy()
            sim.step(np.zeros(0))
    assert np.all(np.isfinite(sim.q)) and np.array_equal(sim.q, q_before)


def test_runner_reports_divergence_instead_of_raising():
    result = run_scenario("push", "penalty_fl", "joint_pd", duration=0.5,
                          sets={"push_force": 1e6, "push_time": 0.0})
    assert result.error is not None and "DivergenceError" in result.error
    assert result.outcome == "diverged" and result.diverged["t"] < 0.5
    assert result.summary()["error"] == result.error
    assert result.error in result.summary()["warnings"]


def test_unstable_spring_damper_settings_refused_for_the_robot():
    """spring_damper's forces are in N/m: its explicit stability depends on the robot's lightest
    contact mode (Delassus eigenvalue λ): dt·λ·c < 2 and dt²·λ·k < 4 − 2 dt·λ·c."""
    robot = RobotModel.load("biped3d")
    with pytest.raises(ConfigError, match=r"spring_damper\.stiffness = 1e\+09.*must be < 4"):
        Simulator(robot, make_contact_model("spring_damper", stiffness=1e9, damping=100.0))
    with pytest.raises(ConfigError, match=r"spring_damper\.damping = 5000.*must be < 2"):
        Simulator(robot, make_contact_model("spring_damper", damping=5000.0))
    with pytest.raises(ConfigError, match="tangential_stiffness"):
        Simulator(robot, make_contact_model("spring_damper", damping=10.0,
                                            tangential_stiffness=1e9, tangential_damping=1.0))
    # The bound is the analytic one: a 1 kg ball (λ = 1/m = 1) at dt = 1 ms, damping-free.
    ball = RobotModel.load("ball")
    k_max = 4.0 / (1e-3 ** 2 * 1.0)  # dt²·λ·k < 4
    Simulator(ball, make_contact_model("spring_damper", stiffness=0.99 * k_max, damping=0.0))
    with pytest.raises(ConfigError):
        Simulator(ball, make_contact_model("spring_damper", stiffness=1.01 * k_max,
                                           damping=0.0))


def test_torques_are_clamped_to_effort_limits():
    robot = RobotModel.load("biped3d")
    sim = Simulator(robot, make_contact_model("penalty_fl"))
    sim.reset(robot.standing_configuration())
    step = sim.step(np.full(14, 1e6))
    assert np.array_equal(step.tau, robot.effort_limit)


@pytest.mark.parametrize(("sets", "match"), [
    ({"mu": "abc"}, "--set mu='abc': expected a float"),
    ({"contact.kv": "abc"}, "penalty_fl.kv = 'abc' must be a number"),
    ({"controller.kp": -1.0}, r"controller\.kp = -1\.0 must be finite and >= 0"),
    ({"controller.omega": 1.0}, "Allowed: controller.kp"),
])
def test_badly_typed_set_values_are_config_errors(sets, match):
    with pytest.raises(ConfigError, match=match):
        run_scenario("stand", "penalty_fl", controller="joint_pd", duration=0.01, sets=sets)


def test_zero_dt_is_refused_not_replaced():
    with pytest.raises(ConfigError, match=r"dt = 0\.0 must be in"):
        run_scenario("ball", "penalty_fl", duration=0.01, dt=0.0)
