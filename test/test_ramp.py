"""Brick on a ramp (Rengifo §II-B): sticks if μ > tan α, else slides at g(sin α − μ cos α)."""

import numpy as np
import pytest

from biped_contact_sim.cli.runner import run

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
    result = run("ramp", model, duration=3.0, sets={"mu": 0.5, "slope_deg": SLOPE})
    assert result.error is None
    t, x, v = along_slope(result)
    stop = np.flatnonzero(np.abs(v) < 1e-4)[0]
    assert t[stop] < 0.9  # it stops ...
    after = x[(t >= t[stop]) & (t <= t[stop] + 2.0)]
    assert np.abs(after - after[0]).max() < 1e-4  # ... and stays (drift over 2 s)


@pytest.mark.parametrize("model", ["penalty_fl", "spring_damper"])
def test_brick_slides_at_coulomb_acceleration(model):
    mu = 0.2
    result = run("ramp", model, duration=2.0, sets={"mu": mu, "slope_deg": SLOPE})
    t, x, v = along_slope(result)
    late = t > 0.5
    accel = np.polyfit(t[late], v[late], 1)[0]
    a = np.radians(SLOPE)
    assert accel == pytest.approx(9.81 * (np.sin(a) - mu * np.cos(a)), rel=0.01)
