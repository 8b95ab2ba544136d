"""Integrators, the energy balance and the named outcomes of a run.

* order: on a tumbling free body (no gravity, no contact) the angular momentum, a conserved
  quantity, drifts by C·dt⁴ with the Lie-group RK4 (error ratio 16 per halved step); semi-implicit
  Euler's momentum transport keeps it to round-off (test_free_body has the exact motion);
* energy: work of the torques and external forces − Δ(kinetic + potential) = dissipated, against
  analytic values, and no energy created on a limp biped's landing under any model;
* outcomes: a numerical divergence is ``diverged`` (with its time and cause), a fall ``fell``.
"""

import numpy as np
import pinocchio as pin
import pytest

from biped_contact_sim.contact import CONTACT_MODELS, make_contact_model
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.session.runner import run_scenario
from biped_contact_sim.sim.simulator import SimSettings, Simulator


def angular_momentum_drift(integrator: str, dt: float, duration: float = 1.0) -> float:
    """|L(T) − L(0)| of the box tumbling about an axis near its intermediate one (world frame,
    about the CoM: pinocchio's centroidal momentum)."""
    robot = RobotModel.load("box")
    robot.model.gravity.linear = np.zeros(3)  # this robot object only
    # No contact happens (the box is 10 m up); penalty_fl's check just needs dt·kv < 2.
    sim = Simulator(robot, make_contact_model("penalty_fl", kp=1.0, kv=1.0),
                    settings=SimSettings(dt=dt, integrator=integrator))
    q, v = robot.configuration([0.0, 0.0, 10.0]), np.array([0.3, -0.2, 0.1, 1.0, 6.0, 0.2])
    sim.reset(q, v)
    data = robot.create_data()

    def momentum(q, v):
        pin.computeCentroidalMomentum(robot.model, data, q, v)
        return data.hg.angular.copy()

    start = momentum(q, v)
    for _ in range(round(duration / dt)):
        sim.step(np.zeros(0))
    return float(np.linalg.norm(momentum(sim.q, sim.v) - start))


def test_rk4_is_fourth_order_on_a_tumbling_free_body():
    errors = [angular_momentum_drift("rk4", dt) for dt in (4e-3, 2e-3)]
    assert errors[0] / errors[1] == pytest.approx(16.0, rel=0.05)
    assert errors[1] < 1e-12  # fourth order: round-off is close


def test_semi_implicit_euler_keeps_the_angular_momentum_of_a_tumbling_free_body():
    """The momentum transport of the free-flyer (docs/methods.md §1.1) conserves it to
    round-off at any step (the body-frame velocity advanced explicitly drifted at first
    order, an error ratio of 2 per halved step)."""
    for dt in (4e-3, 2e-3):
        assert angular_momentum_drift("semi_implicit_euler", dt) < 1e-14


def test_energy_balance_of_a_dropped_ball():
    """No torque, no external force: all of m g h is dissipated by the landings (penalty_fl
    brings the ball to rest on the ground), nothing created."""
    result = run_scenario("ball", "penalty_fl", duration=1.0)
    energy = result.summary()["energy_balance"]
    assert energy["work_torques_J"] == 0.0 and energy["work_external_J"] == 0.0
    assert energy["dissipated_J"] == pytest.approx(1.0 * 9.81 * 0.5, rel=1e-3)
    assert energy["created_J"] == 0.0 and not result.warnings


def test_energy_balance_counts_the_work_of_a_push():
    """A standing robot pushed on the pelvis: the push's work W = ∫ F·ṗ dt (from the pelvis
    velocity, independently of the runner) is in the balance, and the controller and contacts
    then take the energy out (dissipated + torque work ≥ 0)."""
    result = run_scenario("push", "penalty_fl", duration=1.3, sets={"push_force": 50.0})
    energy = result.summary()["energy_balance"]
    assert energy["work_external_J"] > 0.0
    data = result.robot.create_data()
    work = 0.0
    for a, b in zip(result.samples[:-1], result.samples[1:], strict=True):
        if 1.0 <= a.step.t < 1.1:  # the push acts on [1.0, 1.1) s along +y
            J = pin.computeFrameJacobian(result.robot.model, data, b.step.q_prev,
                                         result.robot.model.getFrameId("pelvis"),
                                         pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)[:3]
            v_mid = 0.5 * (b.step.v + a.step.v)
            work += 50.0 * (J @ v_mid)[1] * (b.step.t - a.step.t)
    assert energy["work_external_J"] == pytest.approx(work, rel=0.05)
    assert energy["created_J"] <= energy["tolerance_J"]


@pytest.mark.parametrize("model", sorted(CONTACT_MODELS))
def test_limp_biped_landing_creates_no_energy(model):
    """A limp biped (zero torque) dropped 5 cm: the contacts only take energy out. Stated
    tolerance: the runner's (0.01 J + 2e-3 of the energy scale, ~0.6 J here) at dt = 0.1 ms;
    at dt = 1 ms the collapsing limbs make semi-implicit Euler's own energy error reach tens
    of joules (the summary warns)."""
    result = run_scenario("drop", model, "none", duration=0.6, dt=1e-4)
    energy = result.energy
    assert energy["created_J"] <= energy["tolerance_J"], energy
    assert energy["dissipated_J"] > 10.0  # the landing dissipates


def test_forced_divergence_is_diverged_and_a_fall_is_fell():
    diverged = run_scenario("push", "penalty_fl", "joint_pd", duration=0.1,
                            sets={"push_force": 1e6, "push_time": 0.0}).summary()
    assert diverged["outcome"] == "diverged" and not diverged["fell"]
    assert 0.0 < diverged["diverged"]["t"] <= 0.1
    assert "max_speed" in diverged["diverged"]["cause"]
    fallen = run_scenario("drop", "penalty_fl", "none", duration=1.0).summary()
    assert fallen["outcome"] == "fell" and fallen["diverged"] is None and fallen["error"] is None
    standing = run_scenario("stand", "penalty_fl", duration=0.2).summary()
    assert standing["outcome"] == "completed" and not standing["warnings"]


def test_solver_events_are_warnings():
    """A step counted in a failure statistic (here: Gauss–Seidel with a one-sweep cap, which
    cannot converge on a landing) appears in summary.json's warnings, with the count."""
    result = run_scenario("drop", "gauss_seidel", duration=0.2, sets={"contact.max_sweeps": 1})
    summary = result.summary()
    assert summary["solver_stats"]["solver_failures"]["max"] == 1.0
    assert any("solver_failures" in w and "did not converge" in w for w in summary["warnings"])
