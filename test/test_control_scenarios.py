"""The whole-body-control scenarios end to end through the runner (numbers of summary.json).

Acceptance of the issue (Sentis et al. Fig. 8 on our biped, and the push): internal tension
tracks its 20 N, 0.5 Hz sinusoid within 2 N, CoPs within 5 mm of their targets, CoM within
5 mm; a 50 N, 0.1 s lateral push on the pelvis is absorbed without a step and without a sole
vertex unloading.
"""

import pytest

from biped_contact_sim.session.runner import run_scenario


@pytest.fixture(scope="module")
def sway():
    return run_scenario("sway", "penalty_fl", duration=3.0, record_rate=200)


def test_sway_tracks_tension_cops_and_com(sway):
    summary = sway.summary()
    m = summary["metrics"]
    assert summary["error"] is None and not summary["fell"]
    assert m["tension_error_max_N"] < 2.0
    assert m["cop_error_max_m"] < 5e-3
    assert m["com_error_max_m"] < 5e-3
    assert m["stance_slip_max_m"] < 2e-3
    assert summary["zmp_in_support_fraction"] == 1.0
    # the tension reference really is a 20 N sinusoid (the test is not vacuous)
    refs = [s.info["tension_ref"] for s in sway.samples if "tension_ref" in s.info]
    assert max(refs) == pytest.approx(20.0, abs=0.5) and min(refs) == pytest.approx(-20.0, abs=0.5)


def test_push_recovers_without_step_or_lifting_foot():
    result = run_scenario("push", "penalty_fl", duration=2.5, record_rate=200)
    summary = result.summary()
    m = summary["metrics"]
    assert summary["error"] is None and not summary["fell"]
    assert m["min_point_normal_force_N"] > 0.0  # all 8 vertices loaded throughout
    assert m["stance_slip_max_m"] < 2e-3
    assert m["torque_saturation_fraction"] == 0.0
    # the push happened (the CoM was displaced sideways) and was recovered
    lateral = [abs(s.info["com"][1] - s.info["com_ref"][1]) for s in result.samples]
    assert max(lateral) > 2e-3
    assert lateral[-1] < 1e-3
