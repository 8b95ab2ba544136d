"""Constraint-based contact models (docs/methods.md §2.3–2.5) against analytic answers, papers.

gauss_seidel (Chardonnet Algorithm 1), time_stepping (Bravo & Rengifo §3, Anitescu–Potra /
Stewart–Trinkle) and acceleration_lcp (Bravo & Rengifo §2, Chardonnet eq. 7). Short runs: the
whole file takes well under a minute on one core.
"""

import numpy as np
import pytest

from biped_contact_sim.cli.runner import build, run
from biped_contact_sim.contact import CONTACT_MODELS, ContactState, make_contact_model
from biped_contact_sim.errors import ConfigError

G = 9.81
MODELS = ("gauss_seidel", "time_stepping", "acceleration_lcp")
SLOPE = 20.0


def test_registry_has_the_three_models():
    assert set(MODELS) <= set(CONTACT_MODELS)


# --- Ball drop (Newton's law of restitution, Chardonnet eq. 4) -------------------------------

@pytest.mark.parametrize("e", [0.0, 0.5])
@pytest.mark.parametrize("model", ["gauss_seidel", "acceleration_lcp"])
def test_ball_rebound_velocity_is_minus_e_impact_velocity(model, e):
    height = 0.5
    result = run("ball", model, duration=0.4, sets={"height": height, "contact.restitution": e})
    assert result.error is None
    steps = [s.step for s in result.samples]  # every step is recorded at dt = 2e-4
    k = next(i for i, s in enumerate(steps) if s.stats["impacts"] > 0)
    v_minus = steps[k].vc[0, 2]  # normal velocity just before the impact
    assert v_minus == pytest.approx(-np.sqrt(2 * G * height), rel=0.01)  # free fall
    v_plus = steps[k].v[2]  # after the impact step (the ball's z is the normal)
    assert abs(v_plus - (-e * v_minus)) <= 0.01 * abs(v_minus)
    assert result.max_penetration < 1e-4


def test_time_stepping_landing_is_inelastic():
    result = run("ball", "time_stepping", duration=0.6, sets={"height": 0.5})
    assert result.error is None
    phi = np.array([s.step.phi[0] for s in result.samples])
    fn = np.array([s.step.f_contact[0, 2] for s in result.samples])
    first = np.flatnonzero(fn > 0)[0]
    assert 0.3 < result.samples[first].step.t < 0.33  # lands after √(2h/g) = 0.319 s
    assert phi[first + 2:].max() <= 1e-4  # stays on the ground: no rebound
    assert result.max_penetration < 1e-6


def test_acceleration_lcp_detects_zeno_and_comes_to_rest():
    """Bounces of e = 0.5 accumulate at t∞ = √(2h/g)·(1 + 2e/(1 − e)) (shock accumulation)."""
    height, e = 0.5, 0.5
    result = run("ball", "acceleration_lcp", duration=1.1,
                 sets={"height": height, "contact.restitution": e})
    assert result.error is None
    t_inf = np.sqrt(2 * height / G) * (1 + 2 * e / (1 - e))
    zeno = [s.step.t for s in result.samples if s.step.stats["zeno_events"] > 0]
    assert zeno and zeno[0] <= t_inf
    last = result.samples[-1].step
    assert abs(last.phi[0]) < 1e-4 and abs(last.v[2]) < 1e-3  # at rest after t∞


# --- Brick on a ramp (Coulomb: sticks iff μ > tan α, else a = g(sin α − μ cos α)) -----------

def along_slope(result):
    R = result.sim.terrain.R
    t = np.array([s.step.t for s in result.samples])
    x = np.array([s.step.p[0] @ R[:, 0] for s in result.samples])
    v = np.array([s.step.vc[0, 0] for s in result.samples])
    return t, x, v


@pytest.mark.parametrize("model", MODELS)
def test_brick_sticks_when_mu_exceeds_tan_alpha(model):
    assert 0.5 > np.tan(np.radians(SLOPE))
    result = run("ramp", model, duration=2.5, sets={"mu": 0.5, "slope_deg": SLOPE})
    assert result.error is None
    t, x, v = along_slope(result)
    stop = np.flatnonzero(np.abs(v) < 1e-4)[0]
    a = np.radians(SLOPE)
    t_stop = 0.5 / (G * (0.5 * np.cos(a) - np.sin(a)))  # 0.5 m/s at the Coulomb deceleration
    assert t[stop] == pytest.approx(t_stop, abs=0.01)
    after = x[(t >= t[stop]) & (t <= t[stop] + 2.0)]
    assert np.abs(after - after[0]).max() < 1e-4  # drift over 2 s


@pytest.mark.parametrize("model", MODELS)
def test_brick_slides_at_coulomb_acceleration(model):
    """time_stepping: the brick slides along t₁ = d₀, a facet direction of the pyramid."""
    mu = 0.2
    result = run("ramp", model, duration=1.5, sets={"mu": mu, "slope_deg": SLOPE})
    assert result.error is None
    t, x, v = along_slope(result)
    late = t > 0.5
    accel = np.polyfit(t[late], v[late], 1)[0]
    a = np.radians(SLOPE)
    assert accel == pytest.approx(G * (np.sin(a) - mu * np.cos(a)), rel=0.01)


def sliding_point_state(theta, mass=2.0, mu=0.5, speed=1.0, dt=1e-3):
    """One point mass on flat ground sliding at angle θ from t₁ (contact frame = world)."""
    return ContactState(dt=dt, phi=np.zeros(1),
                        vc=np.array([[speed * np.cos(theta), speed * np.sin(theta), 0.0]]),
                        Jc=np.eye(3), gamma_c=np.zeros(3), Minv=np.eye(3) / mass,
                        tau_free=np.array([0.0, 0.0, -mass * G]), p_tangent=np.zeros((1, 2)),
                        mu=np.full(1, mu))


@pytest.mark.parametrize(("model", "d", "theta", "ratio"), [
    ("time_stepping", 4, 0.0, 1.0),  # along a facet direction: exact
    ("time_stepping", 4, np.pi / 4, np.cos(np.pi / 4)),  # between facets: −29.3 %
    ("time_stepping", 8, np.pi / 8, np.cos(np.pi / 8)),  # between facets: −7.6 %
    ("gauss_seidel", None, np.pi / 4, 1.0),  # exact cone: no direction is privileged
])
def test_friction_against_sliding_direction(model, d, theta, ratio):
    """Maximal dissipation over the inscribed pyramid gives μ f_n cos θ against the motion."""
    settings = {"directions": d} if d else {}
    contact = make_contact_model(model, **settings)
    contact.reset(1)
    state = sliding_point_state(theta)
    f = contact.compute(state).f[0]
    u = state.vc[0, :2] / np.linalg.norm(state.vc[0, :2])
    assert f[2] == pytest.approx(2.0 * G, rel=1e-6)
    assert -f[:2] @ u == pytest.approx(ratio * 0.5 * f[2], rel=1e-6)
    assert np.linalg.norm(f[:2]) <= 0.5 * f[2] * (1 + 1e-9)  # inside the exact cone


# --- 3-D biped standing on 8 sole points ------------------------------------------------------

@pytest.fixture(scope="module", params=MODELS)
def standing(request):
    return run("stand", request.param, duration=0.6, record_rate=200)


def test_stand_carries_the_weight(standing):
    assert standing.error is None and not standing.fell
    settled = [s for s in standing.samples if s.step.t > 0.3]
    total_fn = np.mean([s.step.f_contact[:, 2].sum() for s in settled])
    assert total_fn == pytest.approx(standing.robot.mass * G, rel=0.005)
    assert standing.max_penetration < 5e-4


def test_stand_friction_cone(standing):
    """gauss_seidel solves the exact cone; acceleration_lcp's sticking pyramid is inscribed and
    its sliding law lies on the cone; time_stepping's pyramid is inscribed, up to the Lemke
    residual of a degenerate LCP."""
    bound = 1e-3 if standing.contact_model == "time_stepping" else 1e-6
    assert standing.max_cone_violation <= bound


def test_stand_system_size_statistic(standing):
    """8 sole points: 3m = 24 for Gauss–Seidel (Chardonnet §IV), m(2 + d) = 48 for d = 4."""
    expected = {"gauss_seidel": 24, "time_stepping": 48, "acceleration_lcp": 8 + 5 * 8}
    assert max(standing.stats["system_size"]) == expected[standing.contact_model]


# --- System sizes -----------------------------------------------------------------------------

def standing_state(model, sets=None):
    _, _, robot, sim, *_ = build("stand", model, sets=sets)
    _, state = sim.contact_state(sim.q, sim.v, np.zeros(robot.n_joints))
    return sim.contact, state


@pytest.mark.parametrize("d", [4, 8])
def test_time_stepping_lcp_size_is_m_times_2_plus_d(d):
    contact, state = standing_state("time_stepping", {"contact.directions": d})
    m = state.n_points
    assert m == 8 and np.all(state.phi <= contact.settings.margin)
    A, q = contact.lcp(state)
    assert A.shape == (m * (2 + d), m * (2 + d)) and q.shape == (m * (2 + d),)


def test_gauss_seidel_system_size_is_3m():
    contact, state = standing_state("gauss_seidel")
    G_c, c = contact.velocity_system(state)
    assert G_c.shape == (3 * 8, 3 * 8) and c.shape == (3 * 8,)


# --- Settings errors --------------------------------------------------------------------------

@pytest.mark.parametrize(("model", "settings", "name"), [
    ("gauss_seidel", {"restitution": 1.5}, "gauss_seidel.restitution"),
    ("gauss_seidel", {"restitution": -0.1}, "gauss_seidel.restitution"),
    ("acceleration_lcp", {"restitution": 2.0}, "acceleration_lcp.restitution"),
    ("time_stepping", {"directions": 5}, "time_stepping.directions"),
    ("acceleration_lcp", {"directions": 5}, "acceleration_lcp.directions"),
    ("gauss_seidel", {"tolerance": -1e-9}, "gauss_seidel.tolerance"),
    ("acceleration_lcp", {"tolerance": -1e-9}, "acceleration_lcp.tolerance"),
    ("gauss_seidel", {"omega": 2.0}, "gauss_seidel.omega"),
])
def test_bad_settings_name_the_setting(model, settings, name):
    with pytest.raises(ConfigError, match=name.replace(".", r"\.")):
        make_contact_model(model, **settings)
