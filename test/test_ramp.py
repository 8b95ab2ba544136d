"""Brick on a ramp (Rengifo §II-B): sticks if μ > tan α, else slides at g(sin α − μ cos α)."""

import numpy as np
import pytest

from biped_contact_sim.session.runner import run_scenario

SLOPE = 20.0


def along_slope(result):
    R = result.sim.terrain.R
    t = np.array([s.step.t for s in result.samples])
    x = np.array([s.step.p[0] @ R[:, 0] for s in result.samples])
    v = np.array([s.step.vc[0, 0] for s in result.samples])
    return t, x, v


@pytest.mark.parametrize("model", ["penalty_fl", "spring_damper"])
def test_brick_sticks_and_stays_when_mu_exceeds_tan_alpha(model):
    assert 0.5 > np.tan(np.radians(SLOPE))
    result = run_scenario("ramp", model, duration=3.0, sets={"mu": 0.5, "slope_deg": SLOPE})
    assert result.error is None
    t, x, v = along_slope(result)
    stop = np.flatnonzero(np.abs(v) < 1e-4)[0]
    assert t[stop] < 0.9  # it stops ...
    after = x[(t >= t[stop]) & (t <= t[stop] + 2.0)]
    assert np.abs(after - after[0]).max() < 1e-4  # ... and stays (drift over 2 s)


@pytest.mark.parametrize("model", ["penalty_fl", "spring_damper"])
def test_brick_slides_at_coulomb_acceleration(model):
    mu = 0.2
    result = run_scenario("ramp", model, duration=2.0, sets={"mu": mu, "slope_deg": SLOPE})
    t, x, v = along_slope(result)
    late = t > 0.5
    accel = np.polyfit(t[late], v[late], 1)[0]
    a = np.radians(SLOPE)
    assert accel == pytest.approx(9.81 * (np.sin(a) - mu * np.cos(a)), rel=0.01)


# --- A rigid box on its four bottom corners (config/box.yaml): every model --------------------

BOX_SETTINGS = {  # the light box needs a softer spring_damper than its defaults (stability check)
    "spring_damper": {"stiffness": 2e4, "damping": 50.0, "tangential_stiffness": 2e4,
                      "tangential_damping": 50.0},
}


def box_on_ramp(model, mu, duration):
    """The box resting on a 20° ramp, its sole on the plane; per step: t, downhill speed of its
    corners (one rigid body: their mean) and the steps' warnings-worthy statistics."""
    import pinocchio as pin

    from biped_contact_sim.contact import make_contact_model
    from biped_contact_sim.robot import RobotModel
    from biped_contact_sim.sim.simulator import Simulator
    from biped_contact_sim.sim.terrain import PlaneTerrain

    robot = RobotModel.load("box")
    terrain = PlaneTerrain(slope=np.radians(SLOPE), mu=mu)
    sim = Simulator(robot, make_contact_model(model, **BOX_SETTINGS.get(model, {})), terrain)
    q = robot.configuration()
    q[3:7] = pin.Quaternion(terrain.R).coeffs()  # sole parallel to the ramp
    q[:3] = terrain.R @ np.array([0.0, 0.0, 0.05])  # sole on the plane
    sim.reset(q)
    t, v, fallbacks = [], [], 0.0
    for _ in range(round(duration / sim.dt)):
        step = sim.step(np.zeros(0))
        t.append(step.t)
        v.append(step.vc_next[:, 0].mean())
        fallbacks += step.stats.get("fallbacks", 0.0)
    return np.array(t), np.array(v), fallbacks


MODELS = ("spring_damper", "penalty_fl", "gauss_seidel", "time_stepping", "acceleration_lcp")


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("mu", [0.40, 0.45])
def test_box_on_four_corners_sticks_when_mu_exceeds_tan_alpha(model, mu):
    """μ clearly above tan 20° = 0.364: the rigid body sticks, creep below 1 µm/s (penalty_fl's
    per-point saturation, the paper's eqs. 19–20, creeps ~3 mm/s at μ = 0.40)."""
    assert mu > 1.09 * np.tan(np.radians(SLOPE))
    t, v, fallbacks = box_on_ramp(model, mu, 1.5)
    assert np.abs(v[t > 1.0]).max() < 1e-6
    assert fallbacks == 0


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("mu", [0.25, 0.33])
def test_box_on_four_corners_slides_at_coulomb_acceleration(model, mu):
    """μ clearly below tan α: the rigid body slides at g (sin α − μ cos α) within 1 %, every
    corner's friction on its cone (penalty_fl: the coupled friction active set)."""
    assert mu < 0.91 * np.tan(np.radians(SLOPE))
    t, v, fallbacks = box_on_ramp(model, mu, 1.0)
    late = t > 0.3
    accel = np.polyfit(t[late], v[late], 1)[0]
    a = np.radians(SLOPE)
    assert accel == pytest.approx(9.81 * (np.sin(a) - mu * np.cos(a)), rel=0.01)
    assert fallbacks == 0


def test_penalty_fl_per_point_saturation_misses_the_boundary():
    """The paper's per-point saturation (friction="per_point") after the coupled solve: the box
    at μ = 0.40 > tan α creeps (the defect the coupled active set removes)."""
    import pinocchio as pin

    from biped_contact_sim.contact import make_contact_model
    from biped_contact_sim.robot import RobotModel
    from biped_contact_sim.sim.simulator import Simulator
    from biped_contact_sim.sim.terrain import PlaneTerrain

    robot = RobotModel.load("box")
    terrain = PlaneTerrain(slope=np.radians(SLOPE), mu=0.40)
    speeds = {}
    for friction in ("per_point", "coupled"):
        sim = Simulator(robot, make_contact_model("penalty_fl", friction=friction), terrain)
        q = robot.configuration()
        q[3:7] = pin.Quaternion(terrain.R).coeffs()
        q[:3] = terrain.R @ np.array([0.0, 0.0, 0.05])
        sim.reset(q)
        for _ in range(1500):
            step = sim.step(np.zeros(0))
        speeds[friction] = step.vc_next[:, 0].mean()
    assert speeds["per_point"] > 1e-4 and abs(speeds["coupled"]) < 1e-6
