"""Geometry contacts in the simulator (sim/contact_geometry.py): Jacobians and gaps against
finite differences, and analytic answers for every contact model (a box at rest on its four
corners carries m g; stick/slide on a ramp; a pushed box; a stack; a rolling sphere)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from biped_contact_sim.contact import CONTACT_MODELS, make_contact_model
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.sim.simulator import ExternalForce, SimSettings, Simulator
from biped_contact_sim.sim.world import parse_world

G = 9.81
FRICTION_MODELS = [m for m in CONTACT_MODELS if m != "spring_damper"] + ["spring_damper"]
# Settings for a 2 kg box at dt = 1 ms (the biped's defaults are tuned for its feet).
BOX_SETTINGS = {"penalty_fl": {"separation_damping": True},
                "spring_damper": {"stiffness": 2e4, "damping": 50.0,
                                  "tangential_stiffness": 2e4, "tangential_damping": 50.0}}


def _sim(model, world=None, robot="box", dt=1e-3):
    robot = RobotModel.load(robot)
    contact = make_contact_model(model, **BOX_SETTINGS.get(model, {}))
    return Simulator(robot, contact, settings=SimSettings(dt=dt), contacts="geometry",
                     world=None if world is None else parse_world(world))


def _run(sim, seconds):
    step = None
    for _ in range(round(seconds / sim.dt)):
        step = sim.step(np.zeros(sim.robot.n_joints))
    return step


@pytest.mark.parametrize("model", CONTACT_MODELS)
def test_box_dropped_flat_rests_on_its_four_corners_carrying_mg(model):
    sim = _sim(model)
    sim.reset(sim.robot.configuration([0.0, 0.0, 0.05 + 0.01]))
    step = _run(sim, 0.5)
    assert len(step.phi) == 4
    corners = sorted(map(tuple, np.round(step.p[:, :2], 6)))
    assert corners == sorted((sx * 0.1, sy * 0.05) for sx in (-1, 1) for sy in (-1, 1))
    weight = sim.robot.mass * G
    assert step.f_world[:, 2].sum() == pytest.approx(weight, rel=2e-3)
    assert abs(step.f_world[:, :2].sum(axis=0)).max() < 1e-6 * weight
    assert -step.phi.min() < 1e-3  # the penalty models' documented sink: m g / (4 k) < 1 mm


def _fd_check(sim, q, v, eps=1e-7):
    """Gaps and contact-frame velocities of the same feature points against finite
    differences of the configuration: φ(q ⊕ ε δ) − φ(q) = ε (J_c δ)_n, v_c = J_c v."""
    geo = sim.geometry
    geo.workspace.compute(q, v)
    contacts = geo.detect()
    assert len(contacts) > 0
    tau = np.zeros(sim.robot.n_joints)
    _, _, state, _ = geo.state(v, tau, sim._limit, sim._v_idx, sim._zero_nv, sim.dt,
                               sim.robot.n_joints, contacts)
    np.testing.assert_allclose(state.phi, contacts.phi, atol=1e-12)
    Jc = state.Jc.reshape(len(contacts), 3, -1)
    np.testing.assert_allclose(state.vc, np.einsum("mij,j->mi", Jc, v), atol=1e-9)
    rng = np.random.default_rng(3)
    for _ in range(3):
        d = rng.standard_normal(sim.model.nv)
        geo.workspace.compute(pin.integrate(sim.model, q, eps * d), v)
        _, p_plus, s_plus, _ = geo.state(v, tau, sim._limit, sim._v_idx, sim._zero_nv,
                                         sim.dt, sim.robot.n_joints, contacts)
        geo.workspace.compute(pin.integrate(sim.model, q, -eps * d), v)
        _, p_minus, s_minus, _ = geo.state(v, tau, sim._limit, sim._v_idx, sim._zero_nv,
                                           sim.dt, sim.robot.n_joints, contacts)
        dphi = (s_plus.phi - s_minus.phi) / (2 * eps)
        np.testing.assert_allclose(dphi, Jc[:, 2] @ d, atol=1e-6)
    return contacts


def test_biped_jacobians_and_gaps_against_finite_differences():
    world = {"boxes": [{"name": "step", "size": [0.6, 1.0, 0.05], "position": [0.35, 0, -0.02],
                        "rpy": [0.0, 0.05, 0.1]}]}
    sim = _sim("time_stepping", world, robot="biped3d")
    q = sim.robot.standing_configuration()
    q[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(0.03, -0.02, 0.2)).coeffs()
    v = np.random.default_rng(0).standard_normal(sim.robot.nv)
    contacts = _fd_check(sim, q, v)
    assert (contacts.body2 == 0).all() and len(set(contacts.other)) == 2  # ground and step


def test_object_on_object_jacobian_is_the_relative_one():
    world = {"objects": [{"name": "top", "shape": "box", "size": [0.1, 0.1, 0.1], "mass": 1.0,
                          "position": [0.02, 0.01, 0.149], "rpy": [0.0, 0.0, 0.3]}]}
    sim = _sim("time_stepping", world)
    q = np.concatenate([sim.robot.configuration([0.0, 0.0, 0.05]), sim.q_objects])
    v = np.random.default_rng(1).standard_normal(sim.model.nv)
    contacts = _fd_check(sim, q, v)
    assert (contacts.body2 != 0).any()  # the box on the box: two moving bodies


@pytest.mark.parametrize("model", FRICTION_MODELS)
@pytest.mark.parametrize("mu", [0.2, 0.6])
def test_box_on_a_ramp_sticks_or_slides_at_g_sin_minus_mu_cos(model, mu):
    alpha = np.radians(20.0)
    n = [np.sin(alpha), 0.0, np.cos(alpha)]
    world = {"ground": None, "planes": [{"name": "ramp", "normal": n}],
             "materials": {"default": {"mu": mu}}}
    sim = _sim(model, world)
    R = pin.rpy.rpyToMatrix(0.0, alpha, 0.0)
    q = sim.robot.configuration()
    q[:3] = R @ np.array([0.0, 0.0, 0.05])
    q[3:7] = pin.Quaternion(R).coeffs()
    sim.reset(q)
    _run(sim, 0.3)
    t0, s0, u0 = sim.t, sim.q[:3] @ R[:, 0], _downhill_speed(sim, R)
    _run(sim, 0.4)
    T = sim.t - t0
    s1 = sim.q[:3] @ R[:, 0]
    if mu > np.tan(alpha):
        assert abs(s1 - s0) < 1e-3 and abs(_downhill_speed(sim, R)) < 1e-2
    else:
        a = G * (np.sin(alpha) - mu * np.cos(alpha))
        accel = 2 * (s1 - s0 - u0 * T) / T**2
        assert accel == pytest.approx(a, rel=0.03)


def _downhill_speed(sim, R):
    """Velocity of the box's centre along the downhill tangent t₁ (free-flyer v is local)."""
    Rb = pin.Quaternion(sim.q[3:7]).toRotationMatrix()
    return float((Rb @ sim.v[:3]) @ R[:, 0])


@pytest.mark.parametrize("model", FRICTION_MODELS)
def test_pushed_box_sticks_below_mu_m_g_and_slides_above_at_the_analytic_acceleration(model):
    mu = 0.5
    for factor in (0.8, 1.5):
        sim = _sim(model, {"materials": {"default": {"mu": mu}}})
        m = sim.robot.mass
        force = factor * mu * m * G
        sim.add_external_force(ExternalForce(sim.robot.base_link, (force, 0.0, 0.0), 0.2))
        sim.reset(sim.robot.configuration([0.0, 0.0, 0.05]))
        _run(sim, 0.3)
        x0, u0, t0 = sim.q[0], _world_speed(sim), sim.t
        _run(sim, 0.3)
        T = sim.t - t0
        if factor < 1:
            assert abs(sim.q[0] - x0) < 1e-4, model
        else:
            accel = 2 * (sim.q[0] - x0 - u0 * T) / T**2
            assert accel == pytest.approx((force - mu * m * G) / m, rel=0.03), model


def _world_speed(sim):
    Rb = pin.Quaternion(sim.q[3:7]).toRotationMatrix()
    return float((Rb @ sim.v[:3])[0])


@pytest.mark.parametrize("model", CONTACT_MODELS)
def test_box_stack_rests_without_creep(model):
    world = {"objects": [{"name": "top", "shape": "box", "size": [0.16, 0.08, 0.08],
                          "mass": 1.0, "position": [0.0, 0.0, 0.1 + 0.04]}]}
    sim = _sim(model, world)
    sim.reset(sim.robot.configuration([0.0, 0.0, 0.05]))
    _run(sim, 0.3)
    top0, box0 = sim.q_objects[:3].copy(), sim.q[:3].copy()
    step = _run(sim, 0.5)
    assert np.abs(sim.q_objects[:3] - top0).max() < 2e-4
    assert np.abs(sim.q[:3] - box0).max() < 2e-4
    on_ground = step.contacts.body2 == 0
    total = (sim.robot.mass + 1.0) * G
    assert step.f_world[on_ground, 2].sum() == pytest.approx(total, rel=5e-3)
    # f acts on body 1 (the lower box; the normal points from the top box down to it)
    assert -step.f_world[~on_ground, 2].sum() == pytest.approx(1.0 * G, rel=5e-3)


@pytest.mark.parametrize("model", ["time_stepping", "gauss_seidel", "acceleration_lcp"])
def test_sphere_rolls_down_a_ramp_at_five_sevenths_g_sin_alpha(model):
    alpha = np.radians(15.0)
    r = 0.1
    R = pin.rpy.rpyToMatrix(0.0, alpha, 0.0)
    centre = R @ np.array([0.0, 0.0, 0.5 + r])  # on the ramp box's top face
    world = {"ground": None,
             "boxes": [{"name": "ramp", "size": [4.0, 1.0, 1.0], "position": [0, 0, 0],
                        "rpy": [0.0, float(alpha), 0.0]},
                       {"name": "shelf", "size": [0.5, 0.5, 0.1], "position": [0, 3, -0.05]}],
             "objects": [{"name": "ball", "shape": "sphere", "radius": r, "mass": 1.0,
                          "position": centre.tolist()}],
             "materials": {"default": {"mu": 1.0}}}
    sim = _sim(model, world)
    sim.reset(sim.robot.configuration([0.0, 3.0, 0.05]))
    _run(sim, 0.1)
    s0, t0 = sim.q_objects[:3] @ R[:, 0], sim.t
    u0 = (pin.Quaternion(sim.q_objects[3:7]).toRotationMatrix() @ sim.v_objects[:3]) @ R[:, 0]
    _run(sim, 0.4)
    T = sim.t - t0
    accel = 2 * (sim.q_objects[:3] @ R[:, 0] - s0 - u0 * T) / T**2
    assert accel == pytest.approx(5.0 / 7.0 * G * np.sin(alpha), rel=0.02)
