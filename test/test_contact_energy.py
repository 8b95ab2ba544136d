"""Contacts never create energy (docs/methods.md §3.1), every contact model.

Per step, with E the kinetic + potential energy of every body and no torque or external force:

* ``ΔT_c = Pᵀv_c⁺ − ½PᵀGP`` (``StepResult.contact_work``) is the kinetic energy the contact
  impulse P = dt f gives at the step's configuration; friction and compression only take energy,
  so ``ΔT_c ≤ W_sep = Σ P_n max(v_n⁺, 0)``, the impulse's work on points leaving their surface
  (a penalty model's restitution and penetration recovery; zero for the constraint models, which
  hold v_n⁺ = 0 on a resting point);
* a step gains at most semi-implicit Euler's own error of a free fall, ½ m (g dt)², beyond that
  restitution (1e-4 J for the 2 kg box at 1 ms).

A 2 kg box thrown off a landing tumbles down three 0.1 m steps (world ``steps``); three boxes
stacked (world ``box_stack3``) stay at rest.
"""

import numpy as np
import pytest

from biped_contact_sim.contact import CONTACT_MODELS, make_contact_model
from biped_contact_sim.errors import ConfigError
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.session.runner import run_scenario
from biped_contact_sim.sim.scenarios import SCENARIOS
from biped_contact_sim.sim.simulator import SimSettings, Simulator
from biped_contact_sim.sim.world import load_world

MODELS = sorted(CONTACT_MODELS)
G, DT = 9.81, 1e-3
#: the box scenarios' settings (spring_damper stable on the box at 1 ms; penalty_fl's
#: separation damping)
BOX = SCENARIOS["box_push"].contact_defaults


def box_in(world: str, model: str, dt: float = DT) -> tuple[Simulator, RobotModel]:
    robot = RobotModel.load("box")
    sim = Simulator(robot, make_contact_model(model, **BOX.get(model, {})),
                    settings=SimSettings(dt=dt), world=load_world(world), contacts="geometry")
    sim.reset(robot.configuration([0.0, 0.0, 0.05]))
    return sim, robot


@pytest.mark.parametrize("model", MODELS)
def test_a_box_tumbling_down_three_steps_creates_no_energy(model):
    """Thrown at 2 m/s with a 3 rad/s spin off the landing, 2.5 s: it reaches the ground; in
    no step does the contact give more than its restitution, and the constraint models and
    penalty_fl gain at most ½ m (g dt)² per step beyond it. (spring_damper: its stiction
    springs give back what they stored, and its stiff springs' explicit integration gains up
    to a few mJ in a step; the whole run creates nothing.)"""
    sim, robot = box_in("steps", model)
    sim.reset(sim.q, np.array([2.0, 0.0, 0.0, 0.0, -3.0, 0.0]))
    energy = e0 = sim.energy()
    rows = []
    for _ in range(2500):
        step = sim.step(np.zeros(0))
        after = sim.energy()
        rows.append((after - energy, step.contact_work, step.contact_separation))
        energy = after
    gain, work, separation = np.array(rows).T
    bound = 0.5 * robot.mass * (G * DT) ** 2
    assert sim.q[2] == pytest.approx(-0.25, abs=2e-3)  # down all three steps, flat
    assert energy < e0 - 1.0  # the landings dissipate
    if model == "spring_damper":
        assert np.all(np.cumsum(gain) <= 1e-9)  # never above its initial energy
        return
    assert np.all(work - separation <= 1e-9)
    assert np.all(gain - separation <= bound)
    if model != "penalty_fl":  # the constraint models restore nothing
        assert np.all(work <= 1e-9) and np.all(gain <= bound)


@pytest.mark.parametrize("model", MODELS)
def test_three_stacked_boxes_rest(model):
    """2 kg, 1 kg and 0.5 kg boxes stacked (world box_stack3), 2 s: no box creeps (< 1 µm/s
    over the last second) and the ground carries their weight. spring_damper refuses 1 ms
    (its lightest contact mode) and holds the stack at the 0.5 ms it accepts (its anchors
    moved with the contact points: the upper boxes crept 4 and 19 mm/s)."""
    dt = DT
    if model == "spring_damper":
        with pytest.raises(ConfigError, match="spring_damper unstable"):
            box_in("box_stack3", model)
        dt = 5e-4
    sim, robot = box_in("box_stack3", model, dt)
    n = round(2.0 / dt)
    positions, ground = [], []
    for _ in range(n):
        step = sim.step(np.zeros(0))
        positions.append(np.concatenate([sim.q[:3], sim.q_objects[:3], sim.q_objects[7:10]]))
        on_ground = step.contacts.body2 == 0
        ground.append(step.f_world[on_ground, 2].sum())
    positions = np.array(positions)
    creep = np.abs(positions[-1] - positions[n // 2]) / 1.0
    assert creep.max() < 1e-6, creep
    assert np.mean(ground[n // 2:]) == pytest.approx(3.5 * G, rel=1e-6)


def test_the_energy_balance_reports_contact_work_and_explains_a_gain():
    """summary.json's energy balance: the contact work (negative: the landing dissipates),
    restitution apart, friction and compression never positive; the limp biped dropped on its
    sole points (its legs fold through the ground at up to 100 rad/s) gains joules in single
    steps with no contact work: the warning says the integrator did and that dt reduces it,
    and half the step at least halves the largest gain (first order or better)."""
    gains = []
    for dt in (1e-3, 5e-4):
        result = run_scenario("drop", "gauss_seidel", "none", duration=0.9, dt=dt,
                              sets={"contacts": "points"})
        energy = result.summary()["energy_balance"]
        assert energy["contact_work_J"] < -100.0
        assert energy["contact_created_max_step_J"] <= 1e-9
        gains.append(energy["gain_unexplained_max_step_J"])
        if dt == 1e-3:
            assert energy["gain_max_step_J"] > 1.0
            warning = next(w for w in result.warnings if w.startswith("energy gained in one"))
            assert "the integrator" in warning and "a smaller dt reduces it" in warning
    assert gains[1] < 0.5 * gains[0], gains
    quiet = run_scenario("box_push", "gauss_seidel", duration=0.5).summary()
    assert quiet["energy_balance"]["contact_work_max_step_J"] <= 1e-9
    assert not quiet["warnings"]
