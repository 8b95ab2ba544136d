"""``multicontact`` in the simulated world (Sentis, Park, Khatib 2010, Fig. 6 on our
humanoid): both palms onto a table (four contacts), the CoM leans towards it, the right hand
is unloaded and leaves (three contacts), then presses 60 N on a smooth side panel (μ = 0.1)
while sliding along it, the CoM following a vertical sinusoid; geometry contacts, whole-body
control reading only the measured wrenches. The issue's acceptance figures, from
``summary.json`` (``metrics.multicontact``): all transitions, no fall, no contact slip above
2 mm, internal tensions and normal moments within 5 N / 0.5 N·m of zero (the paper's
F_int,ref = 0) and CoPs within 10 mm of their references in the steady phases, CoM error
below 5 mm, no torque saturated, the panel force within 5 N of 60 N while sliding."""

import pytest

from biped_contact_sim.session.runner import run_scenario

FEET = ["left_foot", "right_foot"]


@pytest.mark.parametrize("model", ["gauss_seidel", "penalty_fl"])
def test_multicontact_sequence_in_the_world(model):
    summary = run_scenario("multicontact", model).summary()
    assert summary["outcome"] == "completed", summary["error"]
    m = summary["metrics"]
    mc = m["multicontact"]
    assert mc["transitions"] == [FEET, [*FEET, "left_hand", "right_hand"],
                                 [*FEET, "left_hand"]]
    assert max(m["stance_slip_m"].values()) < 2e-3
    assert mc["steady_tension_max_N"] < 5.0
    assert mc["steady_normal_moment_max_Nm"] < 0.5
    assert mc["steady_cop_error_max_m"] < 0.01
    assert m["com_error_max_m"] < 5e-3
    assert m["torque_saturation_fraction"] == 0.0
    assert mc["right_hand_force_error_max_N"] < 5.0
