"""A sphere and a cylinder on a 20° ramp, every contact model, against their exact motion.

The ball robot with a free-flyer root (r = 0.1 m, 1 kg, I = 2/5 m r²) and a free cylinder
object (r = 0.1 m, 0.3 m long, 1 kg, I = ½ m r² about its axis) side by side on the ramp
(world plane, geometry contacts), started at rest. With g = 9.81 and α = 20°:

* rolling without slip (μ = 1): the centre accelerates at ``g sin α / (1 + I/(m r²))``, 5/7 g sin α
  for the sphere and 2/3 g sin α for the cylinder, and the contact point does not move;
* slipping (μ = 0.05, below 2/7 tan α for the sphere and tan α / 3 for the cylinder): the centre
  accelerates at ``g (sin α − μ cos α)`` and the spin grows at ``μ m g cos α r / I``:
  5 μ g cos α / (2 r) for the sphere, 2 μ g cos α / r for the cylinder; the friction force is
  on its cone, ``‖f_t‖ = μ f_n`` (the slip runs along a facet of the polyhedral cones of
  time_stepping and acceleration_lcp, so they reach it too).

Targets: accelerations within 0.5 %, ‖f_t‖/(μ f_n) = 1 ± 1e-6 on every sliding step.
"""

import dataclasses

import numpy as np
import pinocchio as pin
import pytest

from biped_contact_sim.contact import CONTACT_MODELS, make_contact_model
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.robot.config import load_robot_config
from biped_contact_sim.sim.simulator import SimSettings, Simulator
from biped_contact_sim.sim.world import parse_world

MODELS = sorted(CONTACT_MODELS)
G, ALPHA, R, DT = 9.81, np.radians(20.0), 0.1, 1e-3
NORMAL = np.array([np.sin(ALPHA), 0.0, np.cos(ALPHA)])
DOWNHILL = np.array([np.cos(ALPHA), 0.0, -np.sin(ALPHA)])
#: settings for 1 kg bodies: spring_damper stable at 1 ms (check_inertia), penalty_fl with its
#: separation damping (without it a contact point leaves the active set on a micrometre rebound
#: and the mean normal force, hence the friction, is a few tenths of a percent low)
SETTINGS = {"spring_damper": {"stiffness": 2e4, "damping": 50.0, "tangential_stiffness": 2e4,
                              "tangential_damping": 50.0},
            "penalty_fl": {"separation_damping": True}}


def free_ball() -> RobotModel:
    """The ball robot (urdf/ball.urdf: a sphere of 0.1 m, 1 kg) with a free-flyer root."""
    return RobotModel(dataclasses.replace(load_robot_config("ball"), base="free_flyer"))


def ramp(model: str, mu: float) -> Simulator:
    world = parse_world({
        "ground": None,
        "planes": [{"name": "ramp", "normal": NORMAL.tolist(), "point": [0.0, 0.0, 0.0]}],
        "objects": [{"name": "roller", "shape": "cylinder", "radius": R, "length": 0.3,
                     "mass": 1.0, "position": (R * NORMAL + [0.0, 0.5, 0.0]).tolist(),
                     "rpy": [np.pi / 2, 0.0, 0.0]}],
        "materials": {"default": {"mu": mu}}})
    robot = free_ball()
    sim = Simulator(robot, make_contact_model(model, **SETTINGS.get(model, {})),
                    settings=SimSettings(dt=DT), world=world, contacts="geometry")
    q = pin.neutral(robot.model)
    q[:3] = R * NORMAL
    sim.reset(q)
    return sim


def roll(model: str, mu: float, seconds: float = 1.0):
    """Per step: the centres' speeds along the ramp and their spins about n × t (the axis of
    rolling downhill), and, after 0.1 s (the onset of spring_damper's slip is elastic), the
    friction ratios ‖f_t‖/(μ f_n) of the sliding contacts. Returns (t, speeds (k, 2), spins
    (k, 2), ratios)."""
    sim = ramp(model, mu)
    axis = np.cross(NORMAL, DOWNHILL)  # ω = (n × v)/r rolls downhill
    t, speeds, spins, ratios = [], [], [], []
    for _ in range(round(seconds / DT)):
        step = sim.step(np.zeros(0))
        row_v, row_w = [], []
        for q, v in ((sim.q, sim.v), (sim.q_objects, sim.v_objects)):
            Rm = pin.Quaternion(q[3:7]).toRotationMatrix()
            row_v.append(Rm @ v[:3] @ DOWNHILL)
            row_w.append(Rm @ v[3:6] @ axis)
        t.append(step.t)
        speeds.append(row_v)
        spins.append(row_w)
        f, vt = step.f_contact, np.hypot(*step.vc_next[:, :2].T)
        sliding = (f[:, 2] > 0.0) & (vt > 1e-3)
        if step.t >= 0.1:
            ratios += list(np.hypot(f[sliding, 0], f[sliding, 1]) / (mu * f[sliding, 2]))
    return np.array(t), np.array(speeds), np.array(spins), np.array(ratios)


def slope(t: np.ndarray, y: np.ndarray) -> float:
    """Least-squares rate of y over t ≥ 0.2 s (after the penalty models settle)."""
    sel = t >= 0.2
    return float(np.polyfit(t[sel], y[sel], 1)[0])


@pytest.mark.parametrize("model", MODELS)
def test_sphere_and_cylinder_roll_without_slipping(model):
    t, speeds, spins, _ = roll(model, mu=1.0)
    for k, ratio in enumerate((5.0 / 7.0, 2.0 / 3.0)):  # sphere, cylinder
        a = slope(t, speeds[:, k])
        assert a == pytest.approx(ratio * G * np.sin(ALPHA), rel=5e-3), (k, a)
        # rolling: the contact point is at rest, v = ω r
        assert np.abs(speeds[t >= 0.2, k] - R * spins[t >= 0.2, k]).max() < 1e-3, k


@pytest.mark.parametrize("model", MODELS)
def test_sphere_and_cylinder_slip_by_coulombs_law(model):
    mu = 0.05
    t, speeds, spins, ratios = roll(model, mu)
    spin_up = (2.5 * mu * G * np.cos(ALPHA) / R, 2.0 * mu * G * np.cos(ALPHA) / R)
    for k in range(2):
        assert slope(t, speeds[:, k]) == pytest.approx(G * (np.sin(ALPHA) - mu * np.cos(ALPHA)),
                                                       rel=5e-3), k
        assert slope(t, spins[:, k]) == pytest.approx(spin_up[k], rel=5e-3), k
    assert len(ratios) > 1500 and np.abs(ratios - 1.0).max() <= 1e-6, \
        (len(ratios), np.abs(ratios - 1.0).max())


@pytest.mark.parametrize("model", ["gauss_seidel", "penalty_fl"])
def test_friction_of_a_spinning_sliding_sphere_is_on_its_cone_opposite_the_slip(model):
    """The sphere thrown along x on flat ground (μ = 0.3) with a spin about x and about the
    normal: its contact point slips along (2, r ω_x) and the exact-cone models give, on every
    sliding step, ‖f_t‖ = μ f_n to 1e-6 and f_t opposite the slip after the step to 1e-6 rad
    (Coulomb's maximum dissipation; gauss_seidel gave 0.64 μ f_n here with the body-frame
    step). The slip keeps its direction ŝ (for a sphere friction slows v and ω alike) and the
    centre decelerates at μ g along −ŝ until it rolls."""
    mu, w = 0.3, np.array([-20.0, 0.0, 25.0])
    world = parse_world({"ground": {"height": 0.0}, "materials": {"default": {"mu": mu}}})
    robot = free_ball()
    sim = Simulator(robot, make_contact_model(model, **SETTINGS.get(model, {})),
                    settings=SimSettings(dt=DT), world=world, contacts="geometry")
    q = pin.neutral(robot.model)
    q[2] = R
    sim.reset(q, np.array([2.0, 0.0, 0.0, *w]))
    slip0 = np.array([2.0 - R * w[1], R * w[0]])  # v + ω × (−r e_z) in the plane
    s_hat = slip0 / np.linalg.norm(slip0)
    sliding_steps = 0
    for _ in range(100):  # the slip (2.8 m/s) lasts 2.8 / (3.5 μ g) = 0.27 s
        step = sim.step(np.zeros(0))
        f, v = step.f_contact[0], step.vc_next[0]
        if f[2] > 0.0 and np.hypot(v[0], v[1]) > 1e-2:
            sliding_steps += 1
            ft, vt = f[:2], v[:2]
            assert np.linalg.norm(ft) / (mu * f[2]) == pytest.approx(1.0, abs=1e-6)
            cos = -ft @ vt / (np.linalg.norm(ft) * np.linalg.norm(vt))
            assert np.arccos(min(cos, 1.0)) <= 1e-6
            assert vt @ s_hat / np.linalg.norm(vt) == pytest.approx(1.0, abs=1e-9)
    assert sliding_steps >= 95
    Rm = pin.Quaternion(sim.q[3:7]).toRotationMatrix()
    dv = (Rm @ sim.v[:3])[:2] - [2.0, 0.0]
    np.testing.assert_allclose(dv, -mu * G * sim.t * s_hat, rtol=5e-3)


def test_the_normal_drift_of_curved_contacts_is_the_gaps_second_derivative():
    """γ_n of a contact on a sphere or a cylinder's rim (``contact_geometry.curved_drift``)
    equals φ̈ at v̇ = 0, the second difference of the detected gap along the motion with a
    constant body twist (q(t) = q ⊕ t ν): not the material point's acceleration, which for a
    ball turning at ω is r ω² larger (penalty_fl read it as the ball lifting off and let it
    sink). Spheres and cylinders (lying, tilted) with random twists, on the ground."""
    rng = np.random.default_rng(5)
    tilt = pin.rpy.rpyToMatrix(0.6, 0.4, 0.0)[:, 2]  # the tilted cylinder's axis
    lowest = 0.15 * abs(tilt[2]) + 0.08 * np.sqrt(1.0 - tilt[2] ** 2)
    objects = [{"name": "ball", "shape": "sphere", "radius": 0.1, "mass": 1.0,
                "position": [0.0, 0.0, 0.0999]},
               {"name": "lying", "shape": "cylinder", "radius": 0.1, "length": 0.3,
                "mass": 1.0, "position": [1.0, 0.0, 0.0999], "rpy": [np.pi / 2, 0.0, 0.3]},
               {"name": "tilted", "shape": "cylinder", "radius": 0.08, "length": 0.3,
                "mass": 1.0, "position": [2.0, 0.0, lowest - 1e-4], "rpy": [0.6, 0.4, 0.0]}]
    world = parse_world({"ground": {"height": 0.0}, "objects": objects})
    robot = free_ball()
    sim = Simulator(robot, make_contact_model("penalty_fl"), world=world, contacts="geometry")
    q_robot = pin.neutral(robot.model)
    q_robot[:3] = (5.0, 0.0, 1.0)  # out of the way
    sim.reset(q_robot)
    model = sim.model
    q0, _ = sim.full_state()
    for _ in range(3):
        v = rng.standard_normal(model.nv) * 3.0
        v[:6] = 0.0
        _, state = sim.contact_state(q0, v, np.zeros(0), momentum=False)  # the geometry alone
        contacts = sim.last_contacts
        gaps = []
        for h in (-1e-4, 0.0, 1e-4):
            sim.geometry.workspace.compute(pin.integrate(model, q0, h * v), v)
            gaps.append(sim.geometry.detect().phi)
        assert all(len(g) == len(contacts.phi) for g in gaps)
        second = (gaps[0] - 2.0 * gaps[1] + gaps[2]) / 1e-8
        np.testing.assert_allclose(state.gamma_c[2::3], second, rtol=1e-4, atol=1e-4)
