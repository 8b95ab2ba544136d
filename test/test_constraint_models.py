"""Constraint-based contact models (docs/methods.md §2.3–2.5) against analytic answers, papers.

gauss_seidel (Chardonnet Algorithm 1), time_stepping (Bravo & Rengifo §3, Anitescu–Potra /
Stewart–Trinkle) and acceleration_lcp (Bravo & Rengifo §2, Chardonnet eq. 7). Short runs: the
whole file takes a few minutes on one core.
"""

import dataclasses
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from biped_contact_sim.contact import CONTACT_MODELS, ContactState, make_contact_model
from biped_contact_sim.contact import acceleration_lcp as acc
from biped_contact_sim.contact import acceleration_lcp_kernels as acc_kernel
from biped_contact_sim.contact import time_stepping as ts
from biped_contact_sim.contact import time_stepping_kernels as tsk
from biped_contact_sim.errors import ConfigError
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.robot.config import ContactBodyConfig, load_robot_config
from biped_contact_sim.session.builder import build
from biped_contact_sim.session.config import SimConfig
from biped_contact_sim.session.runner import run_scenario
from biped_contact_sim.sim.simulator import Simulator
from biped_contact_sim.sim.terrain import PlaneTerrain

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
    result = run_scenario("ball", model, duration=0.4,
                          sets={"height": height, "contact.restitution": e})
    assert result.error is None
    steps = [s.step for s in result.samples]  # every step is recorded at dt = 2e-4
    k = next(i for i, s in enumerate(steps) if s.stats["impacts"] > 0)
    v_minus = steps[k].vc[0, 2]  # normal velocity just before the impact
    assert v_minus == pytest.approx(-np.sqrt(2 * G * height), rel=0.01)  # free fall
    v_plus = steps[k].v[2]  # after the impact step (the ball's z is the normal)
    assert abs(v_plus - (-e * v_minus)) <= 0.01 * abs(v_minus)
    assert result.max_penetration < 1e-4


def test_time_stepping_landing_is_inelastic():
    result = run_scenario("ball", "time_stepping", duration=0.6, sets={"height": 0.5})
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
    result = run_scenario("ball", "acceleration_lcp", duration=1.1,
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
    result = run_scenario("ramp", model, duration=2.5, sets={"mu": 0.5, "slope_deg": SLOPE})
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
    result = run_scenario("ramp", model, duration=1.5, sets={"mu": mu, "slope_deg": SLOPE})
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
    return run_scenario("stand", request.param, duration=0.6, record_rate=200)


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
    assert standing.stats["system_size"].max == expected[standing.contact_model]


# --- System sizes -----------------------------------------------------------------------------

def standing_state(model, sets=None):
    built = build(SimConfig.from_sets("stand", model, sets=sets))
    robot, sim = built.robot, built.sim
    _, state = sim.contact_state(sim.q, sim.v, np.zeros(robot.n_joints))
    return sim.contact, state


@pytest.mark.parametrize("d", [4, 8])
def test_time_stepping_lcp_size_is_m_times_2_plus_d(d):
    contact, state = standing_state("time_stepping", {"contact.directions": d})
    m = state.n_points
    assert m == 8 and np.all(state.phi <= contact.settings.margin)
    A, q = contact.build_lcp_reference(state)
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


# --- Rigid box on four coplanar corners: the stick/slip boundary of a rigid body ------------

CORNERS = np.array([(x, y, -0.025) for x in (-0.1, 0.1) for y in (-0.05, 0.05)])


def box_robot():
    """The brick (1 kg, 0.2 × 0.1 × 0.05 m) as a free rigid body on its four bottom corners."""
    config = load_robot_config("brick")
    body = ContactBodyConfig("brick", "brick", CORNERS)
    return RobotModel(dataclasses.replace(config, base="free_flyer", contact_bodies=(body,)))


def box_on_plane(model, mu=0.8, slope_deg=0.0, settings=None, height=0.0, rpy=(0, 0, 0),
                 omega=(0, 0, 0)):
    """A simulator with the box resting on a plane (corners on it), or dropped from height."""
    robot = box_robot()
    terrain = PlaneTerrain(slope=np.radians(slope_deg), mu=mu)
    sim = Simulator(robot, make_contact_model(model, **(settings or {})), terrain)
    R = terrain.R @ pin.rpy.rpyToMatrix(*rpy)
    q = pin.neutral(robot.model)
    q[:3] = terrain.R @ np.array([0.0, 0.0, 0.025 + height + 0.12 * np.abs(rpy).max()])
    q[3:7] = pin.Quaternion(R).coeffs()
    v = np.zeros(6)
    v[3:] = omega
    sim.reset(q, v)
    return sim


FALLBACKS = {"gauss_seidel": ("impact_failures", "solver_failures"),
             "time_stepping": ("fallbacks", "solver_failures"),
             "acceleration_lcp": ("impact_failures", "painleve_events")}


def slide_along_slope(sim, duration):
    """Times, downhill position and speed of the box centre; the summed failure statistics."""
    t, x, v, failures = [], [], [], 0.0
    t1 = sim.terrain.R[:, 0]
    for _ in range(round(duration / sim.dt)):
        step = sim.step(np.zeros(0))
        t.append(step.t)
        x.append(step.q[:3] @ t1)
        v.append(step.vc_next[:, 0].mean())  # every corner moves with the body
        failures += sum(step.stats[k] for k in FALLBACKS[sim.contact.name])
    return np.array(t), np.array(x), np.array(v), failures


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("mu", [0.5, 0.4])
def test_box_on_four_corners_sticks_above_tan_alpha(model, mu):
    """Coulomb: a rigid body on a ramp sticks iff μ > tan α (0.364 for 20°): creep < 1 µm/s."""
    assert mu > 1.09 * np.tan(np.radians(SLOPE))
    sim = box_on_plane(model, mu, SLOPE)
    t, x, _, failures = slide_along_slope(sim, 1.0)
    late = t >= 0.5
    creep = (x[late][-1] - x[late][0]) / (t[late][-1] - t[late][0])
    assert abs(creep) < 1e-6
    assert failures == 0


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("mu", [0.2, 0.33])
def test_box_on_four_corners_slides_at_coulomb_acceleration(model, mu):
    """Below the boundary it slides at a = g (sin α − μ cos α), within 1 %, without a
    frictionless fallback (the time_stepping LCP of four coplanar corners is degenerate)."""
    assert mu < 0.91 * np.tan(np.radians(SLOPE))
    sim = box_on_plane(model, mu, SLOPE)
    t, _, v, failures = slide_along_slope(sim, 0.8)
    late = t > 0.2
    accel = np.polyfit(t[late], v[late], 1)[0]
    a = np.radians(SLOPE)
    assert accel == pytest.approx(G * (np.sin(a) - mu * np.cos(a)), rel=0.01)
    assert failures == 0


# --- Energy: the contact adds none but the documented stabilisation work -----------------------

def contact_energy_steps(sim, n_steps, tau):
    """Per step: the kinetic energy the contact impulse P = dt f gives at the step's q,
    ``Pᵀv_c⁺ − ½PᵀGP`` (= ½v⁺ᵀMv⁺ − ½v_fᵀMv_f with v⁺ = v_f + M⁻¹J_cᵀP, whatever the free
    step v_f; v_c⁺ = J_c v⁺ is ``vc_next``), the bound Σᵢ P_n,i β max(−φ_i, 0)/dt of the models'
    docstrings (the work of pulling penetrating points out at β|φ|/dt) and the kinetic energy
    (the scale)."""
    beta = sim.contact.settings.stabilization
    out = []
    for _ in range(n_steps):
        _, state = sim.contact_state(sim.q, sim.v, tau)
        G = state.delassus(np.arange(state.n_points))[0]
        kinetic = 0.5 * sim.v @ np.linalg.solve(state.Minv, sim.v)
        step = sim.step(tau)
        P = sim.dt * step.f_contact.ravel()
        gain = P @ step.vc_next.ravel() - 0.5 * P @ G @ P
        bound = float(P[2::3] @ (beta * np.maximum(-state.phi, 0.0) / sim.dt))
        out.append((gain, bound, kinetic))
    return np.array(out)


@pytest.mark.parametrize("model", MODELS)
def test_contact_adds_no_energy_beyond_the_stabilisation_bound(model):
    """Box landings flat, on an edge and spinning, and a limp biped's landing: in no step does
    the contact add more kinetic energy than the stabilisation's work (with the drift term
    J̇v in the velocity prediction it added up to joules per step on the limp biped)."""
    cases = [box_on_plane(model, height=0.02), box_on_plane(model, height=0.03, rpy=(0.4, 0.2, 0)),
             box_on_plane(model, height=0.05, rpy=(0.5, 0.25, 0.2), omega=(8.0, 2.4, 4.0))]
    runs = [contact_energy_steps(sim, 400, np.zeros(0)) for sim in cases]
    built = build(SimConfig.from_sets("drop", model, controller="none"))
    robot, sim = built.robot, built.sim
    runs.append(contact_energy_steps(sim, 300, np.zeros(robot.n_joints)))
    for steps in runs:
        gain, bound, kinetic = steps.T
        assert np.all(gain <= bound + 1e-9 * np.maximum(kinetic, 1.0))
        assert gain.min() < -1e-3  # the landing itself dissipates


# --- Warm starts follow contact ids, not array positions -----------------------------------

def shuffled_runs(model, scenario, n_steps=50):
    """Contact states of a run fed to three fresh models: in order; shuffled every step with
    the ids of the contacts; shuffled with the positions as ids (a warm start keyed by array
    position). Returns the per-step generalized contact forces Jᵀf and statistics of each."""
    if scenario == "stand":
        built = build(SimConfig.from_sets("stand", model, controller="joint_pd"))
        sim, control = built.sim, built.control
    else:  # a box sliding and spinning on flat ground: each corner slips its own way
        sim = box_on_plane(model, mu=0.3, omega=(0.0, 0.0, 4.0))
        sim.reset(sim.q, np.array([0.3, 0.0, 0.0, 0.0, 0.0, 4.0]))
        control = lambda t, q, v: np.zeros(0)  # noqa: E731
    models = [make_contact_model(model) for _ in range(3)]
    rng = np.random.default_rng(3)
    out = [([], []) for _ in models]
    for _ in range(n_steps):
        tau = control(sim.t, sim.q, sim.v)
        _, state = sim.contact_state(sim.q, sim.v, tau)
        perm = rng.permutation(state.n_points)
        rows = (3 * perm[:, None] + np.arange(3)).ravel()
        shuffled = []
        for ids in (perm, np.arange(state.n_points)):
            s = ContactState(state.dt, state.phi[perm], state.vc[perm], state.Jc[rows],
                             state.gamma_c[rows], state.Minv, state.tau_free,
                             state.p_tangent[perm], state.mu[perm])
            s.ids = ids  # what the collision layer will provide
            shuffled.append(s)
        for (forces, stats), contact, st in zip(out, models, [state, *shuffled], strict=True):
            res = contact.compute(st)
            forces.append(st.Jc.T @ res.f.ravel())
            stats.append(res.stats)
        sim.step(tau)
    return [(np.array(f), s) for f, s in out]


@pytest.mark.parametrize("model", MODELS)
def test_warm_start_follows_contact_ids(model):
    """The same contacts presented in another order every step, with their ids, give the same
    forces and solver work as in a fixed order; keyed by position instead, the warm starts go
    to the wrong contacts and the solvers work much harder (the test can tell)."""
    for scenario in ("stand", "spinning_box"):
        if model == "gauss_seidel" and scenario != "stand":
            continue  # slow sliding convergence: the sweep order changes the iterate at tol
        (f_fixed, s_fixed), (f_ids, s_ids), (_, s_pos) = shuffled_runs(model, scenario)
        scale = np.abs(f_fixed).max()
        assert np.abs(f_ids - f_fixed).max() <= 1e-8 * scale
        work = "warm_starts" if model == "acceleration_lcp" else "solver_iterations"
        # (from the second step: the first, cold, depends on the order for Gauss–Seidel)
        assert [s[work] for s in s_ids[1:]] == [s[work] for s in s_fixed[1:]]
        it_ids, it_pos = (sum(s["solver_iterations"] for s in run[10:]) for run in (s_ids, s_pos))
        if (model, scenario) in (("gauss_seidel", "stand"), ("time_stepping", "spinning_box")):
            assert it_pos > 3 * it_ids


# --- The compiled LCP builders equal the readable numpy ones ----------------------------------

def test_compiled_lcp_builders_equal_the_numpy_forms():
    sim = box_on_plane("time_stepping", 0.3, SLOPE)
    for _ in range(5):
        sim.step(np.zeros(0))
    _, state = sim.contact_state(sim.q, sim.v, np.zeros(0))
    idx = np.arange(state.n_points)
    G, b = state.delassus(idx)
    b = b - state.gamma_c
    for d in (4, 8):
        model = ts.TimeSteppingContact(directions=d)
        A, q = model.build_lcp_reference(state)
        A2, q2 = np.empty_like(A), np.empty_like(q)
        eps = model.settings.regularization * np.mean(np.diag(G))
        tsk.build_lcp_kernel(G, b, state.vc, np.ascontiguousarray(state.phi), state.mu,
                            state.dt, ts.friction_directions(d), model.settings.stabilization,
                            eps, A2, q2)
        assert np.allclose(A2, A, rtol=1e-12, atol=1e-15) and np.allclose(q2, q, atol=1e-15)
        model = acc.AccelerationLCPContact(directions=d)
        vc = state.vc.copy()
        vc[1, 0] += 0.1  # one point slides
        for sticking in (np.ones(4, bool), np.array([True, False, True, True])):
            A, q, _, _ = model.build_lcp_reference(state, idx, vc, sticking)
            A2, q2 = np.empty_like(A), np.empty_like(q)
            acc_kernel.build_lcp_kernel(G, b, vc, np.ascontiguousarray(state.phi), state.mu,
                                        sticking, state.dt, ts.friction_directions(d),
                                        model.settings.stabilization, eps, np.zeros((4, 2)),
                                        A2, q2)
            assert np.allclose(A2, A, rtol=1e-12, atol=1e-15)
            assert np.allclose(q2, q, atol=1e-12)


# --- time_stepping on LCPs where Lemke fails (captured from the simulator) --------------------

def captured_states():
    data = np.load(Path(__file__).parent / "data" / "time_stepping_hard_states.npz")
    for n in sorted({k.split("_", 1)[0] for k in data}):
        yield n, ContactState(dt=float(data[f"{n}_dt"]), phi=data[f"{n}_phi"],
                              vc=data[f"{n}_vc"], Jc=data[f"{n}_Jc"],
                              gamma_c=data[f"{n}_gamma_c"], Minv=data[f"{n}_Minv"],
                              tau_free=data[f"{n}_tau_free"],
                              p_tangent=np.zeros((len(data[f"{n}_phi"]), 2)), mu=data[f"{n}_mu"])


def assert_time_stepping_law(state, f, eps_r, tol=1e-7):
    """The Anitescu–Potra conditions checked from the forces (d = 4: the friction polygon is
    ``|P_t1| + |P_t2| ≤ μ P_n``), with ``v_c⁺ = G P + v_c + dt·J_c M⁻¹(Sᵀτ − h)``."""
    dt = state.dt
    G = state.Jc @ state.Minv @ state.Jc.T
    eps = eps_r * np.mean(np.diag(G))
    P = f.ravel() * dt
    v = (G @ P + state.vc.ravel() + dt * state.Jc @ state.a_free).reshape(-1, 3)
    P = P.reshape(-1, 3)
    bias = (np.maximum(state.phi, 0.0) + 0.2 * np.minimum(state.phi, 0.0)) / dt
    scale = max(np.abs(v).max(), np.abs(state.vc).max(), 1e-3)
    wn = v[:, 2] + bias + eps * P[:, 2]
    assert P[:, 2].min() >= 0.0 and wn.min() >= -tol * scale
    assert np.abs(P[:, 2] * wn).max() <= tol * scale * max(P[:, 2].max(), 1e-9)
    friction = np.abs(P[:, 0]) + np.abs(P[:, 1])
    assert np.all(friction <= state.mu * P[:, 2] + 1e-9 * P.max())
    # Maximal dissipation over the polygon: Pₜ·vₜ = min over the polygon = −μ P_n ‖v_t‖∞
    # (up to the ε compliance, whose share of v is ε·P).
    dissipation = (P[:, :2] * (v[:, :2] + eps * P[:, :2])).sum(axis=1)
    assert np.allclose(dissipation, -state.mu * P[:, 2] * np.abs(v[:, :2] + eps * P[:, :2])
                       .max(axis=1), atol=tol * scale * max(P.max(), 1e-9))


def test_time_stepping_solves_lcps_lemke_fails_on_and_names_the_failure():
    """Captured states where Lemke fails (a ray or an inaccurate end) with ε_r = 1e-9, and
    even with the default ε_r on the 'hard' ones: the failure is counted by its cause, the
    second method (Fischer–Burmeister) solves the LCP, and no step loses its friction."""
    causes = {"ray_terminations": 0, "inaccurate": 0, "pivot_caps": 0}
    for name, state in captured_states():
        for eps_r in (1e-9, 1e-6):
            model = ts.TimeSteppingContact(regularization=eps_r, warm_start=False)
            result = model.compute(state)
            stats = result.stats
            failed = sum(stats[k] for k in causes)
            if (eps_r == 1e-6) == name.startswith("hard"):  # the failures they were kept for
                assert failed == 1, (name, eps_r, stats)
            for k in causes:
                causes[k] += stats[k]
            assert stats["fb_solves"] == failed and stats["fallbacks"] == 0, (name, stats)
            assert_time_stepping_law(state, result.f, eps_r)
    assert causes["ray_terminations"] and causes["inaccurate"]


def test_time_stepping_fallback_keeps_friction():
    """When neither Lemke nor the second method solve (here: both given no iterations), the
    fallback is the exact-cone law with the circle inscribed in the pyramid: friction kept."""
    _, state = next(s for s in captured_states() if s[0].startswith("box"))
    model = ts.TimeSteppingContact(regularization=1e-9, warm_start=False, fb_max_iterations=1)
    result = model.compute(state)
    assert result.stats["fallbacks"] == 1
    f = result.f
    inscribed = state.mu * np.cos(np.pi / 4) * f[:, 2]
    friction = np.hypot(f[:, 0], f[:, 1])
    assert np.all(friction <= inscribed * (1 + 1e-9) + 1e-12)
    assert friction.sum() == pytest.approx(inscribed.sum(), rel=1e-6)  # the box slides


def test_warm_basis_solve_equals_the_lemke_kernel_basis_solve():
    """``time_stepping.warm_basis_solve`` (the basis's block of A only, w in the contact space)
    against ``lemke_kernel.basis_solve`` on ``build_lcp_kernel``'s A, on the LCPs of a standing
    biped and of a box sliding on four corners, with the bases Lemke ends on and with wrong
    guesses (random flips, singular blocks included): the same z to the last bit where a point
    of the basis slides (the same LU), to the conditioning of A_BB where none does (Cholesky);
    w and the residual to rounding."""
    from biped_contact_sim.solvers.lemke import lemke
    from biped_contact_sim.solvers.lemke_kernels import basis_solve

    rng = np.random.default_rng(8)
    sims = [build(SimConfig.from_sets("stand", "time_stepping", sets={"contacts": c})).sim
            for c in ("geometry", "points")]
    sims += [box_on_plane("time_stepping", 0.3, SLOPE), box_on_plane("time_stepping", 0.6, SLOPE)]
    solved = {True: 0, False: 0}  # Lemke's bases taken, by whether the block is SPD
    for sim in sims:
        for d in (4, 8):
            model = ts.TimeSteppingContact(directions=d)
            tau = np.zeros(sim.robot.n_joints)
            for _ in range(3):
                _, state = sim.contact_state(sim.q, sim.v, tau)
                idx = np.flatnonzero(state.phi <= model.settings.margin)
                G, b = state.delassus(idx, False)
                eps = model.settings.regularization * max(float(np.mean(np.diag(G))), 0.0)
                m = len(idx)
                n = m * (2 + d)
                A, q = np.empty((n, n)), np.empty(n)  # the step's A (the same entries)
                tsk.build_lcp_kernel(G, b, state.vc[idx], state.phi[idx], state.mu[idx],
                                    state.dt, ts.friction_directions(d),
                                    model.settings.stabilization, eps, A, q)
                res = lemke(A, q)
                for k, mask in enumerate((res.x > 0.0, (res.x > 0.0) ^ (rng.random(n) < 0.1),
                                          rng.random(n) < 0.5)):
                    z0, w0, z1, w1 = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
                    ok0, res0 = basis_solve(A, q, mask, z0, w0)
                    ok1, res1 = tsk.warm_basis_solve(G, ts.friction_directions(d),
                                                    state.mu[idx], eps, q, np.flatnonzero(mask),
                                                    z1, w1)
                    spd = not mask[n - m:].any()
                    assert ok0 == ok1
                    if spd:
                        A_BB = A[np.ix_(mask, mask)]
                        tol = 1e-14 * np.linalg.cond(A_BB) * max(1.0, np.abs(z0).max())
                    else:
                        tol = 0.0
                    assert np.allclose(z1, z0, rtol=0, atol=tol)
                    scale = 1e-12 * max(1.0, np.abs(w0).max()) + np.abs(A).max() * tol * n
                    assert np.allclose(w0, w1, rtol=0, atol=scale)
                    assert res1 == pytest.approx(res0, rel=0, abs=scale)
                    if k == 0 and ok0 and res0 <= 1e-9 * np.abs(q).max():
                        solved[spd] += 1
                sim.step(tau)
    assert solved[True] >= 12 and solved[False] >= 4


def test_spd_solve_equals_numpy_and_refuses_indefinite_matrices():
    rng = np.random.default_rng(9)
    for _ in range(200):
        n = int(rng.integers(1, 30))
        B = rng.standard_normal((n, n))
        M, rhs, x = B @ B.T + 1e-3 * np.eye(n), rng.standard_normal(n), np.empty(n)
        assert tsk.spd_solve(M, rhs, x)
        ref = np.linalg.solve(M, rhs)
        assert np.allclose(x, ref, rtol=0, atol=1e-14 * np.linalg.cond(M) * np.abs(ref).max())
        M[0, 0] = -1.0
        x[:] = 7.0
        assert not tsk.spd_solve(M, rhs, x) and (x == 7.0).all()
