"""Bouncing ball (Rengifo et al. §II-A) against the paper's analytic statements."""

from itertools import pairwise

import numpy as np
import pytest

from biped_contact_sim.contact import make_contact_model
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.sim.simulator import SimSettings, Simulator

G = 9.81


def drop(model, settings, height, duration, dt, mass_scale=1.0):
    """Drop the ball; return times, gaps, gap rates and normal forces of every step."""
    robot = RobotModel.load("ball", mass_scale)
    sim = Simulator(robot, make_contact_model(model, **settings), settings=SimSettings(dt=dt))
    sim.reset(robot.configuration([0.0, 0.0, height + 0.1]))
    rows = []
    for _ in range(round(duration / dt)):
        s = sim.step(np.zeros(0))
        rows.append((s.t, s.phi[0], s.vc[0, 2], s.f_contact[0, 2]))
    return np.array(rows).T, robot.mass


def test_penalty_fl_peak_force_is_mg_minus_m_kv_impact_velocity():
    (t, phi, dphi, fn), m = drop("penalty_fl", {"kp": 1.0, "kv": 5000.0}, 0.5, 0.5, 2e-4)
    v_impact = -np.sqrt(2 * G * 0.5)  # ṗ_z(t_i), analytic free fall
    assert fn.max() == pytest.approx(m * G - m * 5000.0 * v_impact, rel=0.02)


def test_penalty_fl_no_steady_penetration_with_kp():
    (t, phi, dphi, fn), m = drop("penalty_fl", {"kp": 5.0, "kv": 5000.0}, 0.5, 3.0, 2e-4)
    assert abs(phi[-1]) < 1e-6
    assert fn[-1] == pytest.approx(m * G, rel=1e-6)


def test_penalty_fl_trajectory_independent_of_mass():
    (_, phi1, _, f1), m1 = drop("penalty_fl", {"kp": 5.0, "kv": 5000.0}, 0.3, 1.0, 2e-4)
    (_, phi3, _, f3), m3 = drop("penalty_fl", {"kp": 5.0, "kv": 5000.0}, 0.3, 1.0, 2e-4, 3.0)
    assert m3 == pytest.approx(3 * m1)
    assert np.abs(phi1 - phi3).max() <= 1e-9 * np.abs(phi1).max()
    assert np.allclose(f3, 3 * f1, rtol=1e-9, atol=1e-9)  # forces scale with the mass


def restitution(kp, kv):
    (t, phi, dphi, fn), _ = drop("penalty_fl", {"kp": kp, "kv": kv}, 0.1, 0.5, 1e-4)
    touched = np.flatnonzero(phi <= 0)
    v_in = -dphi[touched[0]]
    left = touched[0] + np.flatnonzero(phi[touched[0]:] > 0)
    return 0.0 if left.size == 0 else dphi[left[0]] / v_in


def test_penalty_fl_restitution_grows_with_kp_over_kv():
    e = [restitution(kp, 500.0) for kp in (0.0, 1e3, 1e4, 1e5, 1e6)]
    assert e[0] == 0.0  # k_p = 0: the ball stays in (Fig. 4, dashed)
    assert all(a < b for a, b in pairwise(e))
    assert 0.0 < e[-1] < 1.0


def test_spring_damper_steady_penetration_is_mg_over_k():
    (t, phi, dphi, fn), m = drop("spring_damper", {"stiffness": 1e4, "damping": 100.0}, 0.01,
                                 2.0, 1e-3)
    assert -phi[-1] == pytest.approx(m * G / 1e4, rel=0.01)


@pytest.mark.parametrize("clamp", [False, True])
def test_spring_damper_sticking_force_only_without_clamp(clamp):
    (t, phi, dphi, fn), _ = drop("spring_damper",
                                 {"stiffness": 1e4, "damping": 20.0, "clamp": clamp},
                                 0.2, 1.0, 1e-3)
    in_contact = phi < 0
    if clamp:
        assert fn[in_contact].min() >= 0.0
    else:  # eq. 2 pulls the ball back just before it separates
        assert fn[in_contact].min() < -1.0
