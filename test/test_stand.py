"""3-D biped standing: statics and observables at rest, under whole-body control (the scenario
default) and under the runner's joint PD hold."""

import numpy as np
import pytest

from biped_contact_sim.session.runner import run_scenario
from biped_contact_sim.sim.observables import (
    configured_point_values,
    hull_2d_reference,
    in_polygon_reference,
)

KNOWN_NOT_AT_REST = pytest.mark.xfail(
    strict=True, reason="known: the PD-held biped rocks on its ankles with spring_damper "
    "(a limit cycle of the joint PD on compliant soles, not at rest after 3 s); the whole-body "
    "controller holds it at rest")


@pytest.fixture(scope="module", params=[("penalty_fl", "wbc"), ("spring_damper", "wbc"),
                                        ("penalty_fl", "joint_pd"),
                                        ("spring_damper", "joint_pd")],
                ids=lambda p: "-".join(p))
def standing(request):
    model, controller = request.param
    return run_scenario("stand", model, controller=controller, duration=3.0, record_rate=200)


def test_stand_statics_at_rest(standing, request):
    if standing.contact_model == "spring_damper" and standing.controller == "joint_pd":
        request.applymarker(KNOWN_NOT_AT_REST)
    assert standing.error is None and not standing.fell
    last = standing.samples[-1]
    assert np.abs(last.step.v).max() < 1e-3  # at rest
    total_fn = sum(foot.normal_force for foot in last.obs.feet)
    mg = standing.robot.mass * 9.81
    assert total_fn == pytest.approx(mg, rel=0.005)
    # Force ZMP (CoP of all forces) against the ZMP of the centroidal dynamics.
    assert np.linalg.norm(last.obs.zmp[:2] - last.obs.zmp_centroidal[:2]) < 2e-3


def test_stand_contact_quality(standing):
    if standing.contact_model == "penalty_fl":
        assert standing.max_penetration < 1e-4
    assert standing.max_cone_violation <= 1e-9
    for sample in standing.samples[len(standing.samples) // 2:]:
        for foot, body in zip(sample.obs.feet, standing.robot.contact_bodies, strict=True):
            corners = configured_point_values(standing.robot, sample.step, sample.step.p)
            sole = hull_2d_reference(corners[list(body.points), :2])
            assert foot.cop is not None and in_polygon_reference(foot.cop[:2], sole, tol=1e-9)


def test_drop_comes_to_rest_under_the_joint_pd_on_penalty_fl():
    """issue 11 item 5: the PD-held biped dropped on penalty_fl settles, Σ f_n = m g within 0.5 %
    after 1 s. Cause of the former cycling (0–524 N for the whole run, mg = 392 N): eq. 17
    damps only approach (−k_v min(0, φ̇)), so a sole vertex rising on a micrometre rebound
    leaves the active set and the landing repeats; the scenario uses separation_damping."""
    def normal_force(separation_damping):
        result = run_scenario("drop", "penalty_fl", "joint_pd", duration=2.0,
                              sets={"contact.separation_damping": separation_damping})
        late = [s.step for s in result.samples if s.step.t >= 1.0]
        return np.array([step.f_contact[:, 2].sum() for step in late]), result

    fn, result = normal_force(True)
    mg = result.robot.mass * 9.81
    assert result.outcome == "completed" and not result.warnings
    assert np.abs(fn - mg).max() < 5e-3 * mg
    cycling, _ = normal_force(False)  # the paper's eq. 17: the known limit, kept as evidence
    assert cycling.min() < 0.5 * mg and cycling.max() > 1.2 * mg


def test_stance_soles_hold_after_a_start_up_transient():
    """The hardware form's start: the robot stands unheld for 10 ms (a driver applies its own
    command before the controller's first one), then wbc holds it. With separation damping (the
    bipeds' default) the soles stay where they stood (1 µm seen over 5 s); with the paper's
    approach-only damping a rocking sole's designed accelerations are no rigid motion, the
    least-squares forces let both soles creep back and sink (1.2 mm in 5 s seen), and a
    standing robot diverged after ~40 s."""
    import pinocchio as pin

    from biped_contact_sim.session import SimConfig, build

    def sole_travel(separation_damping: bool) -> float:
        built = build(SimConfig.from_sets(
            "stand", "penalty_fl", sets={"contact.separation_damping": separation_damping}))
        sim, loop, robot = built.sim, built.control, built.robot
        data = robot.create_data()

        def soles():
            pin.framesForwardKinematics(robot.model, data, sim.q)
            return np.array([data.oMf[b.frame_id].translation for b in robot.contact_bodies])

        start = soles()
        for _ in range(10):
            sim.step(np.zeros(robot.n_joints))
        for _ in range(5000):
            q = sim.q
            loop.observe(q, sim.step(loop(sim.t, q, sim.v)))
        return float(np.abs(soles() - start).max())

    assert sole_travel(True) < 1e-5
    assert sole_travel(False) > 2e-4  # the paper's law: the known limit, kept as evidence
