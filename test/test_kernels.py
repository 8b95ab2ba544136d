"""The compiled hot path against its references.

* robot terms: ``TermsWorkspace`` + ``robot.model_kernels`` against ``RobotModel.terms``
  (pinocchio's point frames, itself tested against finite differences in test_robot_model)
  and a dense M⁻¹;
* penalty_fl: the compiled eqs. 17–20 against the numpy implementation (LAPACK's pivoted
  Cholesky), on random problems and on states captured from runs;
* spring_damper: the compiled law against the numpy one; anchors follow contact ids.
"""

import numpy as np
import pinocchio as pin
import pytest

from biped_contact_sim.contact import ContactState, make_contact_model
from biped_contact_sim.contact.penalty_fl_kernels import min_norm_kernel
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.session.builder import build
from biped_contact_sim.session.config import SimConfig
from biped_contact_sim.sim.collision import _alloc
from biped_contact_sim.sim.simulator import SimSettings, Simulator
from biped_contact_sim.sim.terrain import PlaneTerrain
from biped_contact_sim.sim.world import parse_world
from biped_contact_sim.solvers import min_norm_solve

TOL = 1e-10


@pytest.mark.parametrize(("name", "slope"), [("biped3d", 0.0), ("biped3d", 0.3),
                                              ("planar_biped", 0.0), ("ball", 0.2)])
def test_step_terms_equal_the_reference_terms(name, slope):
    robot = RobotModel.load(name)
    terrain = PlaneTerrain(slope=slope, height=0.05)
    sim = Simulator(robot, make_contact_model("penalty_fl"), terrain)
    assert sim.workspace._live  # pinocchio's arrays are read in place
    rng = np.random.default_rng(3)
    for _ in range(3):
        q = pin.randomConfiguration(robot.model, -np.ones(robot.nq), np.ones(robot.nq))
        v = rng.standard_normal(robot.nv)
        tau = rng.standard_normal(robot.n_joints) * 500  # beyond the limits: clamped
        terms, state = sim.contact_state(q, v, tau)
        ref = robot.terms(robot.create_data(), q, v)
        m, R = robot.n_points, terrain.R
        local = (ref.p - [0.0, 0.0, terrain.height]) @ R
        Jc = np.einsum("ji,mjn->min", R, ref.J.reshape(m, 3, -1)).reshape(3 * m, -1)
        tau_c = np.clip(tau, -robot.effort_limit, robot.effort_limit)
        tau_free = -ref.h
        tau_free[robot.v_idx] += tau_c
        assert np.allclose(terms.p, ref.p, atol=TOL, rtol=0)
        assert np.allclose(state.phi, local[:, 2], atol=TOL, rtol=0)
        assert np.allclose(state.p_tangent, local[:, :2], atol=TOL, rtol=0)
        assert np.allclose(state.Jc, Jc, atol=TOL, rtol=0)
        assert np.allclose(state.vc.ravel(), Jc @ v, atol=TOL, rtol=0)
        assert np.allclose(state.gamma_c, (ref.gamma.reshape(m, 3) @ R).ravel(), atol=1e-9)
        assert np.allclose(terms.tau, tau_c, atol=0, rtol=0)
        assert np.allclose(state.tau_free, tau_free, atol=1e-9, rtol=0)
        assert np.allclose(state.Minv, ref.Minv, atol=1e-9, rtol=1e-9)
        assert np.allclose(state.a_free, ref.Minv @ tau_free, rtol=1e-9, atol=1e-9)
        dense = ContactState(state.dt, state.phi, state.vc, Jc, state.gamma_c, ref.Minv,
                             tau_free, state.p_tangent, state.mu)
        idx = np.arange(0, m, 2)
        for got, want in zip(state.delassus(idx), dense.delassus(idx), strict=True):
            assert np.allclose(got, want, rtol=1e-9, atol=1e-9)
        # without the drift: the same floating-point result as b − γ_c (velocity models)
        G, b = state.delassus(idx)
        Gv, bv = state.delassus(idx, drift=False)
        rows = (3 * idx[:, None] + np.arange(3)).ravel()
        assert np.array_equal(Gv, G) and np.array_equal(bv, b - state.gamma_c[rows])
        for got, want in zip(state.delassus(idx, False), dense.delassus(idx, False),
                             strict=True):
            assert np.allclose(got, want, rtol=1e-9, atol=1e-9)
        f = rng.standard_normal((m, 3))
        assert np.allclose(state.contact_acceleration(f), dense.contact_acceleration(f),
                           rtol=1e-9, atol=1e-9)
        # Assigning τ_free moves a_free with it (tests add forces that way).
        state.tau_free = tau_free + 1.0
        assert np.allclose(state.a_free, ref.Minv @ (tau_free + 1.0), rtol=1e-9, atol=1e-9)


def test_non_finite_torque_is_refused_and_nothing_changes():
    robot = RobotModel.load("biped3d")
    sim = Simulator(robot, make_contact_model("penalty_fl"))
    sim.reset(robot.standing_configuration())
    q = sim.q.copy()
    tau = np.zeros(robot.n_joints)
    tau[3] = np.nan
    with pytest.raises(ValueError, match="NaN or Inf"):
        sim.step(tau)
    assert np.array_equal(sim.q, q) and sim.t == 0.0


def test_min_norm_kernel_equals_the_lapack_reference():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 25))
        k = int(rng.integers(0, n + 1))
        B = rng.standard_normal((n, k))
        G, r = B @ B.T, rng.standard_normal(n)
        ref = min_norm_solve(G, r, 1e-10)
        x, rank, residual = min_norm_kernel(G, r, 1e-10)
        assert rank == ref.rank
        assert np.allclose(x, ref.x, rtol=0, atol=TOL * max(1.0, np.abs(ref.x).max()))
        assert residual == pytest.approx(ref.residual, rel=1e-6, abs=TOL)


def _random_state(rng, m, nv):
    """A random contact problem: M⁻¹ SPD, J_c full, some points active, some not."""
    A = rng.standard_normal((nv, nv))
    Jc = rng.standard_normal((3 * m, nv))
    Jc[3:6] = Jc[0:3]  # two coincident points: G singular, as coplanar sole points make it
    return ContactState(dt=1e-3, phi=rng.uniform(-1e-3, 1e-3, m),
                        vc=rng.standard_normal((m, 3)) * 0.01, Jc=Jc,
                        gamma_c=rng.standard_normal(3 * m), Minv=A @ A.T / nv + np.eye(nv),
                        tau_free=rng.standard_normal(nv) * 10, p_tangent=np.zeros((m, 2)),
                        mu=np.full(m, 0.6))


@pytest.mark.parametrize("settings", [
    {}, {"unilateral": "clip"}, {"separation_damping": True, "epsilon": 1e-6},
    {"kp": 2e3, "kv": 80.0, "max_active_set_iterations": 2}])
def test_penalty_fl_kernel_equals_the_numpy_reference_on_random_problems(settings):
    rng = np.random.default_rng(5)
    model = make_contact_model("penalty_fl", **settings)
    for _ in range(100):
        state = _random_state(rng, int(rng.integers(2, 9)), int(rng.integers(6, 20)))
        got, want = model.compute(state), model.compute_reference(state)
        assert np.array_equal(got.active, want.active)
        assert np.allclose(got.f, want.f, rtol=0, atol=TOL * max(1.0, np.abs(want.f).max()))
        for key in ("rank", "saturated", "active_set_solves", "dropped"):
            assert got.stats[key] == want.stats[key], key


@pytest.mark.parametrize(("scenario", "model"), [
    ("drop", "penalty_fl"), ("stand", "penalty_fl"), ("ramp", "penalty_fl"),
    ("drop", "spring_damper"), ("ramp", "spring_damper"), ("ball", "spring_damper")])
def test_compiled_models_equal_their_reference_on_captured_states(scenario, model):
    """States captured along a run (touch-down, settling, sliding): forces, active sets and
    statistics of the compiled model equal the numpy reference's, stepping both side by side
    (the reference keeps its own stiction anchors)."""
    built = build(SimConfig.from_sets(
        scenario, model, controller="joint_pd" if scenario in ("drop", "stand") else None))
    robot, sim, control, settings = built.robot, built.sim, built.control, built.contact_settings
    reference = make_contact_model(model, **settings)
    reference.reset(robot.n_points)
    for _ in range(300):
        tau = control(sim.t, sim.q, sim.v) if control else np.zeros(robot.n_joints)
        _, state = sim.contact_state(sim.q, sim.v, tau)
        got = sim.contact.compute(state, commit=False)
        want = reference.compute_reference(state, commit=True)
        assert np.array_equal(got.active, want.active)
        assert np.allclose(got.f, want.f, rtol=0,
                           atol=TOL * max(1.0, np.abs(want.f).max(initial=0.0)))
        for key, value in want.stats.items():
            if key == "saturated":  # a force on the cone boundary to round-off counts either way
                assert abs(got.stats[key] - value) <= 1, key
            elif key != "residual":
                assert got.stats[key] == pytest.approx(value, rel=1e-9, abs=1e-9), key
        sim.step(tau)


def test_spring_damper_anchors_follow_contact_ids():
    """The same points in another order (same ids) get the same forces; the stiction spring
    stretches by the material slip, e += dt ṗ_t, not by the contact point's motion (a rolling
    contact point moves over the surfaces without slip: no force); a point that leaves the set
    and comes back is anchored anew where it touches down."""
    model = make_contact_model("spring_damper", stiffness=1e4, damping=10.0,
                               tangential_stiffness=1e4, tangential_damping=0.0)
    model.reset(0)
    rng = np.random.default_rng(2)
    pt = rng.standard_normal((3, 2)) * 0.01
    u = rng.standard_normal((3, 2))  # slip velocities [m/s]

    def state(order, slip=0.0, shift=0.0, phi=-1e-3):
        o = np.asarray(order)
        vc = np.zeros((len(o), 3))
        vc[:, :2] = slip * u[o]
        return ContactState(dt=1e-3, phi=np.full(len(o), phi), vc=vc,
                            Jc=np.zeros((3 * len(o), 1)), gamma_c=np.zeros(3 * len(o)),
                            Minv=np.eye(1), tau_free=np.zeros(1), p_tangent=pt[o] + shift,
                            mu=np.full(len(o), 100.0), ids=np.array([10, 20, 30])[o])

    model.compute(state([0, 1, 2]))  # touch-down: e = 0
    rolled = model.compute(state([0, 1, 2], shift=1e-3), commit=False).f
    assert np.array_equal(rolled[:, :2], np.zeros((3, 2)))
    moved = model.compute(state([0, 1, 2], slip=1.0), commit=False).f
    permuted = model.compute(state([2, 0, 1], slip=1.0), commit=False).f
    assert np.allclose(permuted, moved[[2, 0, 1]], atol=0)
    assert np.allclose(moved[:, :2], -1e4 * 1e-3 * u, rtol=1e-12)  # k_t e, e = dt u
    model.compute(state([0, 1, 2], slip=1.0))
    model.compute(state([0, 2], slip=1.0))  # id 20 left the set: its anchor is forgotten
    back = model.compute(state([0, 1, 2]), commit=False).f
    assert np.allclose(back[1, :2], 0.0, atol=1e-12)  # re-anchored at touch-down
    assert np.allclose(back[0, :2], -1e4 * 2e-3 * u[0], rtol=1e-12)


def test_rk4_and_euler_steps_use_the_same_terms():
    """Both integrators run on the compiled terms (one step from rest, no contact): v⁺ equals
    dt times pinocchio's ABA acceleration for Euler and, for constant a, for RK4 too."""
    robot = RobotModel.load("biped3d")
    for integrator in ("semi_implicit_euler", "rk4"):
        sim = Simulator(robot, make_contact_model("penalty_fl"),
                        settings=SimSettings(dt=1e-4, integrator=integrator))
        q = robot.standing_configuration()
        q[2] += 0.5  # in the air
        sim.reset(q)
        step = sim.step(np.zeros(robot.n_joints))
        a = pin.aba(robot.model, robot.create_data(), q, np.zeros(robot.nv),
                    np.zeros(robot.nv))
        assert np.allclose(step.v, 1e-4 * a, rtol=1e-3, atol=1e-9)


def test_convex_hull_kernel_equals_the_reference():
    from biped_contact_sim.sim.observables import hull_2d_reference, in_polygon_reference
    from biped_contact_sim.sim.observables_kernels import hull_2d, in_polygon

    rng = np.random.default_rng(0)
    for trial in range(500):
        n = int(rng.integers(1, 10))
        pts = rng.standard_normal((n, 2)).round(int(rng.integers(0, 3)))  # repeats, ties
        if trial % 3 == 0:
            pts[:, 1] = 2 * pts[:, 0]  # collinear
        want, got = hull_2d_reference(pts), hull_2d(pts)
        assert np.array_equal(got, want)
        q = rng.standard_normal(2)
        assert in_polygon(q, got, 1e-6) == in_polygon_reference(q, want, 1e-6)


@pytest.mark.parametrize(("scenario", "model"), [("stand", "penalty_fl"),
                                                 ("walk", "penalty_fl"),
                                                 ("ramp", "spring_damper")])
def test_observers_from_the_step_equal_the_reference(scenario, model):
    """Sole wrenches, CoPs, ZMP, support polygon and the per-step maxima, from the step's own
    terms (compiled) and from pinocchio's frames (numpy): equal along a run."""
    from biped_contact_sim.session.accounting import RESIDUAL_KEYS, accumulate_step_reference
    from biped_contact_sim.session.config import SimConfig
    from biped_contact_sim.session.runner import Run, RunResult
    from biped_contact_sim.sim.observables import foot_wrenches

    # the points path (geometry contacts: ZMP on the ground plane, test_world_scenarios)
    run = Run(SimConfig.from_sets(scenario, model, duration=1.5 if scenario == "walk" else 0.4,
                                  sets={"contacts": "points"}))
    reference = RunResult(run.result.scenario, {}, model, {}, "", run.robot, run.sim)
    data = run.robot.create_data()
    while not run.done:
        q, v = run.sim.q, run.sim.v
        run.advance(1)
        step = run.result.samples[-1].step
        got, want = run.observer.observe(step, q, v), run.observer.observe_reference(step, q, v)
        for a, b in zip(got.feet, want.feet, strict=True):
            assert np.allclose(a.force, b.force, atol=1e-9) and \
                np.allclose(a.torque, b.torque, atol=1e-9)
            assert (a.cop is None) == (b.cop is None)
            assert a.cop is None or np.allclose(a.cop, b.cop, atol=1e-12)
        assert (got.zmp is None) == (want.zmp is None)
        assert got.zmp is None or np.allclose(got.zmp, want.zmp, atol=1e-12)
        assert got.zmp_in_support == want.zmp_in_support
        assert np.allclose(got.support_polygon, want.support_polygon, atol=1e-12)
        for key in ("penetration", "cone_violation", "min_normal_force", "energy"):
            assert getattr(got, key) == pytest.approx(getattr(want, key), abs=1e-9), key
        fast = foot_wrenches(run.robot, data, q, step)
        step.placements = None  # the kinematics route
        slow = foot_wrenches(run.robot, data, q, step)
        for name in fast:
            assert np.allclose(fast[name], slow[name], atol=1e-9)
        accumulate_step_reference(reference, step, run.sim.terrain.mu)
    result = run.finish()
    assert result.max_penetration == pytest.approx(reference.max_penetration, abs=1e-15)
    assert result.max_cone_violation == pytest.approx(reference.max_cone_violation, abs=1e-12)
    assert result.min_normal_force == pytest.approx(reference.min_normal_force, abs=1e-12)
    for key in RESIDUAL_KEYS:
        assert result.residuals[key] == pytest.approx(reference.residuals[key], abs=1e-12)
        assert result.residual_sums[key] == pytest.approx(reference.residual_sums[key],
                                                          rel=1e-12, abs=1e-12)
    for key, want in reference.stats.items():
        got = result.stats[key]
        assert (got.count, got.min, got.max) == (want.count, want.min, want.max), key
        assert got.sum == pytest.approx(want.sum, rel=1e-12, abs=1e-12), key


def test_geometry_wrenches_kernel_equals_the_numpy_reference_on_random_problems():
    """Sole and per-body wrenches of geometry contacts (a changing number of contacts, any
    normals, bodies on either side, free objects after the robot's joints): compiled equals
    numpy to 1e-10."""
    from biped_contact_sim.sim.observables import geometry_wrenches_reference
    from biped_contact_sim.sim.observables_kernels import geometry_wrenches

    rng = np.random.default_rng(3)
    for _ in range(300):
        m, nj, n_robot, nb = int(rng.integers(0, 12)), 9, 7, int(rng.integers(1, 4))
        body1 = rng.integers(1, nj, m)
        body2 = rng.integers(0, nj, m)
        p1, p2 = rng.standard_normal((m, 3)), rng.standard_normal((m, 3))
        frames = np.array([np.linalg.qr(rng.standard_normal((3, 3)))[0] for _ in range(m)])
        frames = frames.reshape(m, 3, 3)
        fc = rng.standard_normal((m, 3)) * 50.0
        placements = np.array([np.hstack([np.linalg.qr(rng.standard_normal((3, 3)))[0],
                                          rng.standard_normal((3, 1))]) for _ in range(nj)])
        body_joint = rng.integers(1, n_robot, nb).astype(np.int64)
        sole = np.array([np.hstack([np.linalg.qr(rng.standard_normal((3, 3)))[0],
                                    rng.standard_normal((3, 1))]) for _ in range(nb)])
        args = (body1, body2, p1, p2, frames, fc, placements, body_joint, sole, n_robot, 1.0)
        for got, want in zip(geometry_wrenches(*args), geometry_wrenches_reference(*args),
                             strict=True):
            assert got.shape == want.shape
            assert np.allclose(got, want, rtol=0.0, atol=1e-10, equal_nan=True)


@pytest.mark.parametrize(("scenario", "controller", "model"), [
    ("walk", "ctc", "penalty_fl"), ("stand", "wbc", "gauss_seidel"),
    ("box_stack", None, "gauss_seidel")])
def test_geometry_observers_from_the_step_equal_the_reference(scenario, controller, model):
    """Geometry contacts: the observation and the closed loop's sole wrenches from the step's
    joint placements (compiled) equal those from pinocchio's frames (numpy) along a run."""
    from biped_contact_sim.session.config import SimConfig
    from biped_contact_sim.session.runner import Run
    from biped_contact_sim.sim.observables import MIN_NORMAL_FORCE, _geometry_feet, foot_wrenches

    run = Run(SimConfig.from_sets(scenario, model, controller, duration=0.3, record_rate=1000.0,
                                  sets={"contacts": "geometry"}))
    data = run.robot.create_data()
    while not run.done:
        q, v = run.sim.q, run.sim.v
        run.advance(1)
        step = run.result.samples[-1].step
        got = run.observer.observe(step, q, v)
        want = run.observer.observe_geometry_reference(step, q, v)
        for a, b in zip(got.feet, want.feet, strict=True):
            assert np.allclose(a.force, b.force, rtol=0.0, atol=1e-10)
            assert np.allclose(a.torque, b.torque, rtol=0.0, atol=1e-10)
            assert (a.cop is None) == (b.cop is None)
            assert a.cop is None or np.allclose(a.cop, b.cop, rtol=0.0, atol=1e-10)
            assert a.normal_force == pytest.approx(b.normal_force, abs=1e-10)
        assert list(got.bodies) == list(want.bodies)
        for name in got.bodies:
            assert np.allclose(got.bodies[name], want.bodies[name], rtol=0.0, atol=1e-10)
        assert (got.zmp is None) == (want.zmp is None) and got.zmp_reason == want.zmp_reason
        assert got.zmp is None or np.allclose(got.zmp, want.zmp, rtol=0.0, atol=1e-12)
        assert got.zmp_in_support == want.zmp_in_support
        assert got.support_polygon.shape == want.support_polygon.shape
        assert np.allclose(got.support_polygon, want.support_polygon, rtol=0.0, atol=1e-12)
        for key in ("penetration", "cone_violation", "min_normal_force", "energy"):
            assert getattr(got, key) == pytest.approx(getattr(want, key), abs=1e-12), key
        fast = foot_wrenches(run.robot, data, q, step)
        slow = _geometry_feet(run.robot, data, q, step, MIN_NORMAL_FORCE, False)[1]
        for name in fast:
            assert np.allclose(fast[name], slow[name], rtol=0.0, atol=1e-10)


def test_ground_support_kernel_equals_the_numpy_reference_on_random_problems():
    """ZMP, reason, ZMP-in-support and support polygon of geometry contacts (contacts on and
    off the ground plane, with and without force, on a flat and a sloped ground): compiled
    equals numpy to 1e-10."""
    from types import SimpleNamespace

    from biped_contact_sim.sim.observables import Observer

    rng = np.random.default_rng(11)
    robot = RobotModel.load("biped3d")
    for slope in (0.0, 0.2):
        observer = Observer(robot, PlaneTerrain(slope=slope, height=0.03))
        for trial in range(400):
            m = int(rng.integers(0, 10))
            c = SimpleNamespace(p2=rng.standard_normal((m, 3)) * 0.1,
                                on_ground=rng.random(m) < (0.7 if trial % 2 else 1.0),
                                body1=rng.integers(1, robot.model.njoints, m),
                                joint_names=tuple(robot.model.names))
            fn = rng.standard_normal(m) * 50.0 + (20.0 if trial % 3 else 0.0)
            active = rng.random(m) < 0.8
            got = observer._ground_support(c, fn, active, True)
            want = observer._ground_support(c, fn, active, False)
            assert (got[0] is None) == (want[0] is None)
            assert got[0] is None or np.allclose(got[0], want[0], rtol=0.0, atol=1e-10)
            assert got[1] == want[1] and got[2] == want[2]
            assert got[3].shape == want[3].shape
            assert np.allclose(got[3], want[3], rtol=0.0, atol=1e-10)


def _skew(p):
    return np.array([[0.0, -p[2], p[1]], [p[2], 0.0, -p[0]], [-p[1], p[0], 0.0]])


def _point_reference(model, data, j, local):
    """World point, point Jacobian (3, nv), velocity and classical acceleration at q̈ = 0 of
    the point ``local`` of joint j (0: the static world), from pinocchio's own results."""
    nv, j = model.nv, int(j)
    if j == 0:
        return local.copy(), np.zeros((3, nv)), np.zeros(3), np.zeros(3)
    M, V, A = data.oMi[j], data.v[j], data.a[j]
    p = M.act(local)
    Jw = pin.getJointJacobian(model, data, j, pin.ReferenceFrame.WORLD)
    Jp = Jw[:3] - _skew(p) @ Jw[3:]
    vl = V.linear + np.cross(V.angular, local)
    gl = A.linear + np.cross(A.angular, local) + np.cross(V.angular, vl)
    return p, Jp, M.rotation @ vl, M.rotation @ gl


@pytest.mark.parametrize("case", ["biped_on_a_step", "box_stack"])
def test_geometry_step_terms_equal_the_numpy_reference(case):
    """``contact_geometry.geometry_step_terms`` (the contact set's ``F``, ``I`` read whole)
    against pinocchio's joint Jacobians and motions in numpy: ``J_c = Cᵀ(J₁(p₁) − J₂(p₂))``,
    ``γ_c``, ``v_c``, ``φ = nᵀ(p₁ − p₂)``, τ_free, a_free = M⁻¹τ_free and the joint placements,
    to 1e-10 (1e-9 through M⁻¹), at captured configurations and random velocities."""
    rng = np.random.default_rng(5)
    if case == "biped_on_a_step":
        world = {"boxes": [{"name": "step", "size": [0.6, 1.0, 0.05],
                            "position": [0.35, 0, -0.02], "rpy": [0.0, 0.05, 0.1]}]}
        robot = RobotModel.load("biped3d")
        q0 = robot.standing_configuration()
        q0[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(0.03, -0.02, 0.2)).coeffs()
    else:
        world = {"objects": [{"name": "top", "shape": "box", "size": [0.1, 0.1, 0.1],
                              "mass": 1.0, "position": [0.02, 0.01, 0.149],
                              "rpy": [0.0, 0.0, 0.3]}]}
        robot = RobotModel.load("box")
        q0 = robot.configuration([0.0, 0.0, 0.05])
    sim = Simulator(robot, make_contact_model("time_stepping"), contacts="geometry",
                    world=parse_world(world))
    geo = sim.geometry
    model = geo.model
    q = np.concatenate([q0, sim.q_objects])
    data = model.createData()
    for _ in range(3):
        v = rng.standard_normal(model.nv)
        tau = rng.standard_normal(robot.n_joints) * 500  # beyond the limits: clamped
        geo.workspace.compute(q, v)
        c = geo.detect()
        m = len(c)
        assert m > 0
        W, p, state, finite = geo.state(v, tau, sim._limit, sim._v_idx, sim._zero_nv, sim.dt,
                                        robot.n_joints, c)
        assert finite
        pin.computeAllTerms(model, data, q, v)
        pin.forwardKinematics(model, data, q, v, np.zeros(model.nv))
        Jc = np.empty((3 * m, model.nv))
        gc = np.empty(3 * m)
        vc = np.empty((m, 3))
        phi = np.empty(m)
        p1 = np.empty((m, 3))
        for i in range(m):
            C = c.frames[i]
            a, Ja, va, ga = _point_reference(model, data, c.body1[i], c.local1[i])
            b, Jb, vb, gb = _point_reference(model, data, c.body2[i], c.local2[i])
            p1[i] = a
            Jc[3 * i:3 * i + 3] = C.T @ (Ja - Jb)
            gc[3 * i:3 * i + 3] = C.T @ (ga - gb)
            vc[i] = C.T @ (va - vb)
            phi[i] = C[:, 2] @ (a - b)
        tau_c = np.clip(tau, -robot.effort_limit, robot.effort_limit)
        tau_free = -data.nle.copy()
        tau_free[sim._v_idx] += tau_c
        M = data.M.copy()
        M[np.tril_indices(model.nv, -1)] = M.T[np.tril_indices(model.nv, -1)]
        np.testing.assert_allclose(p, p1, atol=TOL, rtol=0)
        np.testing.assert_allclose(state.phi, phi, atol=TOL, rtol=0)
        np.testing.assert_allclose(state.Jc, Jc, atol=TOL, rtol=0)
        np.testing.assert_allclose(state.gamma_c, gc, atol=TOL, rtol=0)
        np.testing.assert_allclose(state.vc, vc, atol=TOL, rtol=0)
        np.testing.assert_allclose(state.tau_free, tau_free, atol=TOL, rtol=0)
        np.testing.assert_allclose(state.a_free, np.linalg.solve(M, tau_free), atol=1e-9,
                                   rtol=1e-9)
        # the step's one call (detection and terms) gives the same numbers
        c2, W2, p2, state2, finite2 = geo.detect_state(v, tau, sim._limit, sim._v_idx,
                                                       sim._zero_nv, sim.dt, robot.n_joints)
        assert finite2
        np.testing.assert_array_equal(c2.floats, c.floats)
        np.testing.assert_array_equal(c2.ints, c.ints)
        for got, want in ((W2, W), (p2, p), (state2.phi, state.phi), (state2.vc, state.vc),
                          (state2.mu, state.mu), (state2.ids, state.ids),
                          (state2.p_tangent, state.p_tangent)):
            np.testing.assert_array_equal(got, want)
        # work arrays too short for the set: grown, and the same numbers again
        geo.detector._capacity, geo.detector._out = 2, _alloc(2)
        c3, W3, _, state3, _ = geo.detect_state(v, tau, sim._limit, sim._v_idx, sim._zero_nv,
                                                sim.dt, robot.n_joints)
        assert geo.detector._capacity >= m
        np.testing.assert_array_equal(c3.floats, c.floats)
        np.testing.assert_array_equal(W3, W)
        np.testing.assert_array_equal(state3.phi, state.phi)
        P = geo.placements
        assert P.shape == (model.njoints, 3, 4)
        for j in range(model.njoints):
            np.testing.assert_array_equal(P[j, :, :3], data.oMi[j].rotation)
            np.testing.assert_array_equal(P[j, :, 3], data.oMi[j].translation)
        q = pin.integrate(model, q, 1e-3 * rng.standard_normal(model.nv))


class _Unpacked(ContactState):
    """A packed state that hides its buffer from the models (their ``state.delassus`` path)."""

    @property
    def packed(self):
        return None


@pytest.mark.parametrize("contacts", ["points", "geometry"])
@pytest.mark.parametrize("model", ["gauss_seidel", "time_stepping", "acceleration_lcp"])
def test_models_from_the_step_buffer_equal_their_delassus_path(model, contacts):
    """``*_from_packed`` (the Delassus operator made inside the model's compiled call) gives
    exactly the forces, active set and statistics of the model's kernel on
    ``state.delassus``, on states captured along a ``stand`` run (touch-down and rest).
    acceleration_lcp's packed call re-solves the warm basis on the factor without forming G
    (contact/acceleration_lcp_warm_kernels.py): the same LCP solution, to rounding amplified by the
    ε-regularised friction block (test_acceleration_lcp_warm), so there to 1e-8 relative and
    equal statistics but the residual."""
    built = build(SimConfig.from_sets("stand", model, controller="joint_pd",
                                      sets={"contacts": contacts}))
    sim, control = built.sim, built.control
    for k in range(60):
        tau = control(sim.t, sim.q, sim.v)
        _, state = sim.contact_state(*sim.full_state(), tau)
        if k % 6 == 0:
            hidden = _Unpacked.from_packed(state.dt, state.phi, state.vc, state.p_tangent,
                                           state.mu, state.ids, state.packed)
            got = sim.contact.compute(state, commit=False)
            want = sim.contact.compute(hidden, commit=False)
            if model == "acceleration_lcp":
                assert np.allclose(got.f, want.f, rtol=0, atol=1e-8 * np.abs(want.f).max())
                assert np.array_equal(got.active, want.active)
                assert np.array_equal(got.stats.values[:-1], want.stats.values[:-1])
            else:
                assert np.array_equal(got.f, want.f)
                assert np.array_equal(got.active, want.active)
                assert np.array_equal(got.stats.values, want.stats.values)
        sim.step(tau)


def _general_twin(scenario, model, contacts=None, **sets):
    """Two simulators of a scenario: the first takes its step's terms from the compiled call
    (``_fast``), the second from ``contact_state``; both under the first's joint PD."""
    sets = dict(sets, **({"contacts": contacts} if contacts else {}))
    ctrl = "joint_pd" if scenario in ("stand", "step", "drop") else None
    built = build(SimConfig.from_sets(scenario, model, controller=ctrl, sets=sets))
    robot, lean, control = built.robot, built.sim, built.control
    built = build(SimConfig.from_sets(scenario, model, controller=ctrl, sets=sets))
    general = built.sim
    general._fast = None
    return robot, lean, general, control


@pytest.mark.parametrize(("scenario", "model", "contacts"), [
    ("stand", "spring_damper", "geometry"), ("stand", "spring_damper", "points"),
    ("stand", "time_stepping", "geometry"), ("stand", "acceleration_lcp", "points"),
    ("step", "penalty_fl", None), ("ramp", "spring_damper", None), ("fall", "gauss_seidel", None)])
def test_lean_step_equals_the_general_step(scenario, model, contacts):
    """``Simulator.step`` with its terms from one compiled call (views of one output buffer)
    gives bit for bit the results it gives with them from ``contact_state``."""
    robot, lean, general, control = _general_twin(scenario, model, contacts)
    assert lean._fast is not None
    for k in range(150):
        tau = control(lean.t, lean.q, lean.v) if control else np.zeros(robot.n_joints)
        if k == 60 and lean.geometry is not None:  # work arrays too short: grown on the way
            lean.geometry.detector._capacity, lean.geometry.detector._out = 2, _alloc(2)
        a, b = lean.step(tau), general.step(tau)
        for name in ("q", "v", "a", "tau", "p", "phi", "vc", "f_contact", "f_world", "active",
                     "vc_next", "ids", "q_prev", "q_objects", "v_objects"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
        for name in ("placements", "joint_placements", "frames", "f_external",
                     "tau_external"):
            x, y = getattr(a, name), getattr(b, name)
            assert (x is None) == (y is None), name
            if x is not None:
                np.testing.assert_array_equal(x, y, err_msg=name)
        assert a.t == b.t and a.energy_prev == b.energy_prev
        assert np.array_equal(a.stats.values, b.stats.values) if hasattr(a.stats, "values") \
            else a.stats == b.stats
        if a.contacts is not None:
            np.testing.assert_array_equal(a.contacts.floats, b.contacts.floats)
            np.testing.assert_array_equal(a.contacts.ints, b.contacts.ints)
    # a kept result does not change with later steps
    kept = lean.step(tau)
    q, p, phi = kept.q.copy(), kept.p.copy(), kept.phi.copy()
    for _ in range(3):
        lean.step(tau)
    assert np.array_equal(kept.q, q) and np.array_equal(kept.p, p) \
        and np.array_equal(kept.phi, phi)
    # pickled (runs in worker processes): the lazy views made, the same arrays
    import pickle

    restored = pickle.loads(pickle.dumps(kept))
    for name in ("p", "placements", "joint_placements", "frames", "f_world", "q", "phi"):
        x, y = getattr(kept, name), getattr(restored, name)
        assert (x is None) == (y is None) and (x is None or np.array_equal(x, y)), name


def test_points_step_equals_step_terms():
    """``robot.model_kernels.points_step`` (packed fixed arrays, all joints' stacked placements,
    outputs into given buffers) gives ``step_terms``'s numbers bit for bit, at random states
    and torques beyond the limits."""
    from biped_contact_sim.robot.model_kernels import (
        points_positions,
        points_step,
        points_views,
        step_terms,
    )

    rng = np.random.default_rng(7)
    for name, slope in (("biped3d", 0.0), ("biped3d", 0.3), ("planar_biped", 0.1),
                        ("ball", 0.2)):
        robot = RobotModel.load(name)
        sim = Simulator(robot, make_contact_model("penalty_fl"), PlaneTerrain(slope=slope))
        assert sim._fast is not None
        ws, m, nj = sim.workspace, robot.n_points, robot.n_joints
        for _ in range(5):
            q = pin.randomConfiguration(robot.model, -np.ones(robot.nq), np.ones(robot.nq))
            v = rng.standard_normal(robot.nv)
            tau = rng.standard_normal(nj) * 500
            ws.compute(q, v)
            W, out = np.empty(sim._W_size), np.empty(sim._out_size)
            finite = points_step(*sim._points_args, v, tau, W, out)
            Wr, p, phi, pt, vc, placements, finite_r = step_terms(
                ws.J, ws.U, ws.D, ws.nle, v, tau, sim._limit, sim._v_idx, sim._zero_nv,
                ws.rotations, ws.translations, ws.velocities, ws.accelerations, ws.support,
                ws.point_body, ws.joint_ids, ws.local, sim._frames, sim._origins)
            assert finite == finite_r
            phi2, pt2, vc2, tau2 = points_views(out, m, nj)
            for got, want in ((W, Wr), (points_positions(out, m, nj, sim._nb), p),
                              (phi2, phi), (pt2, pt), (vc2, vc), (tau2, Wr[len(Wr) - nj:]),
                              (out[9 * m + nj:].reshape(-1, 3, 4), placements)):
                np.testing.assert_array_equal(got, want)


def test_euler_into_equals_euler_step():
    """``euler_into`` (one output buffer, forces of any layout) gives ``euler_step``'s v̇, v⁺,
    J_c v⁺, max|v⁺| and numpy's dt·v⁺ bit for bit."""
    from biped_contact_sim.robot.model_kernels import euler_into, euler_step

    built = build(SimConfig.from_sets("stand", "penalty_fl", controller="joint_pd",
                                      sets={"contacts": "geometry"}))
    sim, control = built.sim, built.control
    rng = np.random.default_rng(3)
    for _ in range(20):
        tau = control(sim.t, sim.q, sim.v)
        _, state = sim.contact_state(*sim.full_state(), tau)
        W, m, nv, nj = state.packed
        f = rng.standard_normal((3, m)).T  # not C-contiguous
        v = sim.v + rng.standard_normal(nv)
        out = np.empty(3 * (nv + m))
        vmax = euler_into(W, m, nv, nj, f, v, 1e-3, out)
        a, vn, vc, vmax_r = euler_step(W, m, nv, nj, f.copy().reshape(-1), v, 1e-3)
        assert vmax == vmax_r
        for got, want in ((out[:nv], a), (out[nv:2 * nv], vn), (out[2 * nv:3 * nv], 1e-3 * vn),
                          (out[3 * nv:], vc.ravel())):
            np.testing.assert_array_equal(got, want)
        sim.step(tau)
