"""The contact-model contract, checked for every model of the registry in both contact modes
(as crocoddyl's factories test every action model): a model added to ``CONTACT_MODELS`` gets
these tests by being registered.

A 1 kg box on flat ground (μ = 0.6) is the test body: on its four bottom corners (``points``)
and as its collision box against the ground plane (``geometry``), resting, sliding at 0.5 m/s
while it spins, and held 5 cm above the ground. Per model:

* no force when every point is separated;
* every force inside the friction cone (f_n ≥ 0, ‖f_t‖ ≤ μ f_n) along a slide;
* an unknown setting refused with a message naming it and the allowed ones;
* ``compute(commit=False)`` changes nothing: asked twice it answers the same, and the committed
  step after it is a fresh model's;
* the compiled path equals the numpy reference where the model has one (``compute_reference``;
  the LCP models' kernels are compared with their references in test_kernels, test_lemke and
  test_gauss_seidel_fb);
* determinism: two models on the same sequence of states give bit-identical forces;
* warm start (where the model has one) agrees with a cold start to the solver's tolerance, in
  the body's acceleration, on the box at rest on a slope (four coplanar corners carry a rigid
  box in many ways: the force distribution is not unique, its resultant is).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pinocchio as pin
import pytest

from biped_contact_sim.contact import CONTACT_MODELS, make_contact_model
from biped_contact_sim.errors import ConfigError
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.robot.config import ContactBodyConfig, load_robot_config
from biped_contact_sim.sim.simulator import SimSettings, Simulator
from biped_contact_sim.sim.terrain import PlaneTerrain

MODELS = sorted(CONTACT_MODELS)
MODES = ("points", "geometry")
MU = 0.6
DT = 5e-4  # spring_damper's stiffness needs it for a 1 kg box
CORNERS = [[x, y, -0.025] for x in (-0.1, 0.1) for y in (-0.05, 0.05)]


def box_robot() -> RobotModel:
    config = load_robot_config("brick")
    body = ContactBodyConfig("brick", "brick", CORNERS)
    return RobotModel(dataclasses.replace(config, base="free_flyer", contact_bodies=(body,)))


def box_sim(model: str, mode: str, height: float = 0.0, v=(0.0,) * 6,
            settings: dict | None = None, slope_deg: float = 0.0) -> Simulator:
    robot = box_robot()
    terrain = PlaneTerrain(slope=np.radians(slope_deg), mu=MU)
    sim = Simulator(robot, make_contact_model(model, **(settings or {})), terrain,
                    SimSettings(dt=DT), contacts=mode)
    q = pin.neutral(robot.model)
    q[:3] = terrain.R @ np.array([0.0, 0.0, 0.025 + height])
    q[3:7] = pin.Quaternion(terrain.R).coeffs()
    sim.reset(q, np.array(v, dtype=float))
    return sim


def states(sim: Simulator, n: int):
    """The contact states of n steps (the state before each step)."""
    out = []
    for _ in range(n):
        _, state = sim.contact_state(*sim.full_state(), np.zeros(0))
        out.append(state)
        sim.step(np.zeros(0))
    return out


SLIDE = (0.5, 0.0, 0.0, 0.0, 0.0, 2.0)  # m/s along x, spinning 2 rad/s about the normal


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("model", MODELS)
class TestContactModelContract:

    def test_no_force_when_separated(self, model, mode):
        sim = box_sim(model, mode, height=0.05)
        _, state = sim.contact_state(*sim.full_state(), np.zeros(0))
        result = sim.contact.compute(state)
        assert np.array_equal(result.f, np.zeros_like(result.f))
        assert not np.any(result.active)

    def test_forces_stay_inside_the_friction_cone(self, model, mode):
        sim = box_sim(model, mode, v=SLIDE)
        for _ in range(300):
            step = sim.step(np.zeros(0))
            f = step.f_contact
            scale = max(1.0, np.abs(f).max())
            assert np.all(f[:, 2] >= -1e-9 * scale)
            tangential = np.hypot(f[:, 0], f[:, 1])
            assert np.all(tangential <= MU * f[:, 2] + 1e-9 * scale), (tangential, f[:, 2])

    def test_unknown_setting_is_refused_naming_it(self, model, mode):
        with pytest.raises(ConfigError) as info:
            make_contact_model(model, no_such_setting=1.0)
        text = str(info.value)
        assert "no_such_setting" in text and "Allowed:" in text
        first = dataclasses.fields(CONTACT_MODELS[model].Settings)[0].name
        assert first in text

    def test_compute_without_commit_changes_nothing(self, model, mode):
        sim = box_sim(model, mode, v=SLIDE)
        history = states(sim, 40)  # committed by the simulator's model
        _, last = sim.contact_state(*sim.full_state(), np.zeros(0))
        twin = make_contact_model(model)
        twin.reset(sim.robot.n_points)
        for state in history:
            twin.compute(state, commit=True)
        probe = [sim.contact.compute(last, commit=False) for _ in range(2)]
        committed = sim.contact.compute(last, commit=True)
        reference = twin.compute(last, commit=True)
        for result in (*probe, committed):
            np.testing.assert_array_equal(result.f, reference.f)
            np.testing.assert_array_equal(result.active, reference.active)

    def test_compiled_path_equals_the_numpy_reference(self, model, mode):
        sim = box_sim(model, mode, v=SLIDE)
        compiled = sim.contact
        if not hasattr(compiled, "compute_reference"):
            pytest.skip(f"{model}: its kernels are compared with their numpy references in "
                        "test_kernels, test_lemke and test_gauss_seidel_fb")
        reference = make_contact_model(model)
        reference.reset(sim.robot.n_points)
        for _ in range(200):  # the reference commits what the simulator's step commits
            _, state = sim.contact_state(*sim.full_state(), np.zeros(0))
            got = compiled.compute(state, commit=False)
            want = reference.compute_reference(state, commit=True)
            scale = max(1.0, np.abs(want.f).max())
            np.testing.assert_allclose(got.f, want.f, rtol=0, atol=1e-9 * scale)
            sim.step(np.zeros(0))

    def test_runs_are_deterministic(self, model, mode):
        a, b = box_sim(model, mode, v=SLIDE), box_sim(model, mode, v=SLIDE)
        for _ in range(200):
            sa, sb = a.step(np.zeros(0)), b.step(np.zeros(0))
            np.testing.assert_array_equal(sa.f_contact, sb.f_contact)
            np.testing.assert_array_equal(sa.q, sb.q)

    def test_warm_start_agrees_with_a_cold_start(self, model, mode):
        fields = {f.name for f in dataclasses.fields(CONTACT_MODELS[model].Settings)}
        if "warm_start" not in fields:
            pytest.skip(f"{model} has no warm start")
        # at rest on a 10° slope (μ = 0.6 holds it): the contact forces' resultant is unique
        # (any two solutions differ by a null vector of G, which is one of J_cᵀ); a sliding
        # and spinning box would have several valid resultants
        sim = box_sim(model, mode, settings={"warm_start": True}, slope_deg=10.0)
        for k in range(200):
            if k >= 50 and k % 25 == 0:
                _, state = sim.contact_state(*sim.full_state(), np.zeros(0))
                warm = sim.contact.compute(state, commit=False)
                cold_model = make_contact_model(model, warm_start=False)
                cold_model.reset(sim.robot.n_points)
                cold = cold_model.compute(state, commit=False)
                a_warm = state.contact_acceleration(warm.f)
                a_cold = state.contact_acceleration(cold.f)
                scale = max(1.0, np.abs(a_cold).max())
                np.testing.assert_allclose(a_warm, a_cold, rtol=0, atol=1e-6 * scale)
            sim.step(np.zeros(0))
