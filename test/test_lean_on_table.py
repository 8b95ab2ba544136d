"""``lean_on_table`` in the simulated world (Chardonnet et al. 2006, Figs. 3 and 6): the
humanoid leans past its toes on a table with its left palm (μ = 0.4) and pushes a 0.5 kg box
off the table with its right hand, geometry contacts, whole-body control reading only the
measured wrenches.

Analytic bounds on the box's slide: it leaves the table only once its centre passes the
table's far edge (x = 0.52 m, 8 cm from where it starts), and the hand's stroke (11 cm, 1 cm
gap) pushes it at most 10 cm; after the hand leaves it, Coulomb friction stops a box moving
at v within v²/(2 μ g) (< 2 mm at the stroke's peak speed of 0.14 m/s).
"""

import pytest

from biped_contact_sim.session.runner import run_scenario


@pytest.mark.parametrize("model", ["gauss_seidel", "penalty_fl"])
def test_lean_on_table_catches_the_lean_and_pushes_the_box_off(model):
    result = run_scenario("lean_on_table", model)
    summary = result.summary()
    assert summary["outcome"] == "completed", summary["error"]
    metrics = summary["metrics"]
    box = metrics["objects"]["box"]
    assert box["left_support"] and box["final_position_m"][2] < 0.1  # on the floor
    assert 0.08 - 0.005 <= box["slide_distance_m"] <= 0.10 + 0.002
    assert metrics["stance_slip_m"]["left_hand"] < 2e-3  # the slip bound
    assert metrics["torque_saturation_fraction"] == 0.0
    # past the toes (x = 0.13 m): the hand carries the rest of the weight
    beh = result.behavior
    assert beh.com0[0] + beh.params.lean > 0.13
    last = result.samples[-1]
    assert last.info["stance"] == ("left_foot", "right_foot", "left_hand")
    hand = next(f for f in last.obs.feet if f.name == "left_hand")
    assert hand.normal_force > beh.params.hand_load
