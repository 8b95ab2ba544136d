"""``planar_walk``: optimal cubic joint references for the planar biped (Bravo & Rengifo §4.2).

Every step is a single-support phase of duration T on a flat stance foot. The paper exchanges
the feet instantaneously at the step boundaries; we insert a double-support phase of duration
T_ds (``ds_time``) after every step but the last (our addition, below). The joint references are
cubic polynomials (eq. 41) written with their boundary positions and velocities (eqs. 42–43,
cubic Hermite form, σ = t/T_i over a cubic's interval T_i):

    q(t) = h₀₀(σ) q(0) + h₁₀(σ) T_i q̇(0) + h₀₁(σ) q(T_i) + h₁₁(σ) T_i q̇(T_i).

The stance leg follows one cubic per step. The swing leg follows two cubics joined at
mid-step (a knot whose position and velocity are optimised too). This is a deliberate
extension of the paper: with one cubic per step, impact-free ends (both soles at rest at the
exchange) and a repeated step, the swing knee at mid-step is the mean of its end values plus
T/8 (q̇_trail − q̇_lead), while the stance knee gets T/8 (q̇_lead − q̇_trail); forward torso speed
makes q̇_trail − q̇_lead < 0 (the trailing leg extends, the leading one flexes), so the swing
foot is lower than at its ends — it scuffs. The knot gives the swing leg its lift.

Boundary conditions (chosen here; the paper does not print them):

* impact-free exchange: at every step boundary both soles are flat on the ground and at rest,
  so q and v are continuous across the exchange and nothing impacts. Such a state is fixed by
  the torso pose (x, z, pitch) relative to the stance sole and its velocity (3 + 3 numbers);
  the joints follow by planar-leg inverse kinematics (``PlanarGaitModel.boundary``);
* periodicity: the middle steps repeat one step with the legs swapped: the end-of-step state
  E (swing sole landed ``step_length`` ahead), carried through the double support (below), is,
  seen from the new stance sole, the state at the start of the next step;
* the first step starts from q0 at rest with the feet together (swing sole lands
  ``step_length`` ahead), the last ends in q0's posture at rest with the feet together.

Double support (our addition to the paper's instantaneous exchange). Closed loop, an
instantaneous exchange asks the landing foot to carry the whole weight at once, at the instant
it carries nothing and, after the stance sole's few µm of contact compliance, may still hover
above the ground: seen with ``ctc`` on ``penalty_fl``, the robot rocked between its feet and
fell at the first exchange. So after every step but the last, both soles stay on their
footholds for T_ds while

* the torso keeps the velocity it has at E: base pose E + (ẋ, ż, θ̇) t, v̇_b = 0, the joints
  from the closed chain (leg IK, q̇ and q̈ from both sole constraints); the next step starts
  from E advanced by (ẋ, ż, θ̇) T_ds, still impact-free and continuous in q and v;
* the planned load share of the landing foot rises as α(σ) = 10σ³ − 15σ⁴ + 6σ⁵ from 0 to 1
  (σ = t/T_ds) and the lifting foot's falls as 1 − α; the behaviour hands it to ``ctc`` in
  ``Reference.load_share``, so the landing foot is loaded gradually and the lifting foot is
  unloaded by the time it swings. The same ramp moves the load onto the first stance foot
  during the last T_ds of the initial hold (feet together: only the internal forces change),
  and back to equal shares during the first T_ds of the final hold.

Unknowns: E (6) and the swing-leg knot (3 positions + 3 velocities) of the start, periodic
and stop steps: 24 numbers. Cost (eq. 40), summed over the gait (start + (n − 2) × periodic +
stop), Simpson's rule on ``n_nodes`` nodes per step:

    J = Σ_steps ∫₀ᵀ τᵀτ dt + (n − 1) ∫₀^T_ds τᵀτ dt,

τ from the stance-constrained inverse dynamics (eqs. 30–38, the ``ctc`` equations with
q̈_aᵈ = q̈_ref; in double support with the minimum-norm wrenches, as ``dynamics`` computes).
Constraints at every node (scipy SLSQP; forward-difference gradients, each knot perturbing
only its own step):

* ZMP bound (§4.3, eq. 45): −l_heel + m ≤ x_zmp ≤ l_toe − m on the stance sole, x_zmp = −τ_y/f_z,
  margin m = ``zmp_margin``;
* unilateral and friction: f_z ≥ 0.2 m g, |f_x| ≤ μ_plan f_z;
* foot clearance: both swing-sole points at height ≥ c (4σ(1 − σ))² (apex c = ``clearance``;
  the quartic envelope lets the sole leave and land with zero velocity);
* knee angle ≥ its URDF lower limit;
* double support: net f_z ≥ 0.2 m g and |f_x| ≤ μ_plan f_z; the net ZMP within reach of the
  planned shares, (1 − α) x_lift⁻ + α x_land⁻ ≤ x_zmp ≤ (1 − α) x_lift⁺ + α x_land⁺ with
  x_k^∓ the foot's heel/toe bounds (margin included): the shares times CoPs inside each sole
  must add up to the ZMP.

The robot holds q0 for ``t_start`` before the first step and for ``t_end`` after the last one
(double support, zero joint velocity).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from biped_contact_sim.control.base import Behavior, Reference, behavior_params
from biped_contact_sim.control.planar_gait_plan import (
    DoublePhase,
    Phase,
    PlanarGaitModel,
    PlanarGaitParams,
    PlanarGaitPlanner,
)
from biped_contact_sim.control.walking import quintic
from biped_contact_sim.errors import ConfigError

#: Optimal unknowns (E; knots of the start, periodic and stop steps, see the module docstring)
#: for the default parameters, robot ``planar_biped`` and its standing configuration. Used
#: instead of optimising when they apply (``optimize=False``, the default).
DEFAULT_SOLUTION: tuple[float, ...] | None = (
    0.0203369426947, 0.633201893475, 0.156558861985, 0.364685391602, 0.0968686306814,
    -0.482191756383, -0.696814713755, 1.05789110736, -0.482818799767, -1.70781205468,
    1.50233241584, -0.385533550841, -0.446846882684, 0.863739214557, -0.549341606039,
    -2.84072474453, 3.07920098385, -0.600120056601, -0.100253189067, 0.54423762716,
    -0.461989899541, -1.11466271026, 1.53512498261, -0.270160995619,
)


_CACHE: dict[tuple, np.ndarray] = {}


class PlanarWalkBehavior(Behavior):
    """Optimal cubic gait of the planar biped (module docstring; Bravo & Rengifo eqs. 40–45).

    Args:
        robot: the planar biped ``RobotModel``.
        q0: initial configuration, both soles flat together on the ground, at rest.
        **params: fields of ``PlanarGaitParams``.

    Attributes:
        phases: the steps (``Phase``); doubles: the double supports between them
            (``DoublePhase``); solution: the optimal unknowns; result: scipy's result
            (None when taken from ``DEFAULT_SOLUTION`` or the in-process cache); cost: J of
            eq. 40; footsteps: foothold x of the feet, the initial one then one per step [m];
            planned_distance [m].

    Raises:
        ConfigError: unknown/invalid parameter, wrong robot, or no feasible gait found.
    """

    name = "planar_walk"

    def __init__(self, robot, q0, **params: Any):
        self.params = p = behavior_params("planar_walk", PlanarGaitParams, params)
        self.robot = robot
        self.gm = PlanarGaitModel(robot)
        q0 = np.asarray(q0, float)
        self.planner = PlanarGaitPlanner(self.gm, q0, p)
        self.result = None
        key = (robot.name, robot.mass, tuple(np.round(q0, 9)),
               dataclasses.astuple(dataclasses.replace(p, optimize=False)))
        stored_applies = (DEFAULT_SOLUTION is not None and robot.name == "planar_biped"
                          and dataclasses.replace(p, optimize=False) == PlanarGaitParams()
                          and np.allclose(q0, robot.standing_configuration(), atol=1e-9))
        if not p.optimize and stored_applies:
            self.solution = np.array(DEFAULT_SOLUTION)
        elif not p.optimize and key in _CACHE:
            self.solution = _CACHE[key].copy()
        else:
            self.solution, self.result = self.planner.optimize()
            _CACHE[key] = self.solution.copy()
        found = self.planner.evaluate(self.solution)
        if found is None or found[1].min() < -1e-5:
            worst = "unreachable" if found is None else f"{found[1].min():.3g}"
            raise ConfigError(f"planar_walk: no feasible gait found (worst constraint {worst})")
        self.cost = found[0]
        self.phases, self.doubles = self.planner.gait(self.solution)
        self.t_walk_end = p.t_start + p.n_steps * p.step_time + (p.n_steps - 1) * p.ds_time
        self.duration = self.t_walk_end + p.t_end
        self.footsteps = np.array([self.planner.x0] + [
            ph.x + (p.step_length if k < p.n_steps - 1 else 0.0)
            for k, ph in enumerate(self.phases)])
        self.planned_distance = float(self.footsteps[-1] - self.footsteps[0])
        self._both = self.gm.names

    def _locate(self, t: float) -> tuple[Phase | None, DoublePhase | None]:
        """(step, double support) running at t; (None, None) during the holds."""
        p = self.params
        if t < p.t_start or t >= self.t_walk_end:
            return None, None
        k, r = divmod(t - p.t_start, p.step_time + p.ds_time)
        k = min(int(k), p.n_steps - 1)
        if r < p.step_time or k == p.n_steps - 1:
            return self.phases[k], None
        return None, self.doubles[k]

    def phase_at(self, t: float) -> Phase | None:
        """The step (single support) running at t, else None."""
        return self._locate(t)[0]

    def double_at(self, t: float) -> DoublePhase | None:
        """The double support between steps running at t, else None."""
        return self._locate(t)[1]

    def hold_shares(self, t: float) -> dict[str, float]:
        """Planned load shares during the holds: from equal to all on the first stance foot
        over the last ``ds_time`` before the walk, back to equal over the first ``ds_time``
        after it (quintic ramps; feet together, so only the internal forces change)."""
        p = self.params
        if t < p.t_start:
            foot, alpha = self.phases[0].stance[0], (t - p.t_start + p.ds_time)
        else:
            foot, alpha = self.phases[-1].stance[0], (self.t_walk_end + p.ds_time - t)
        alpha = quintic(min(max(alpha / p.ds_time, 0.0), 1.0))[0] if p.ds_time > 0 else 0.0
        return {name: 0.5 + (0.5 if name == foot else -0.5) * alpha for name in self._both}

    def reference(self, t: float) -> Reference:
        """Stance and joint references q_joints, v_joints, a_joints at time t; planned load
        shares in double support."""
        step, double = self._locate(t)
        robot = self.robot
        if step is not None:
            q, v, a = step.joints(np.array([t - step.t0]))
            return Reference(stance=step.stance, q_joints=q[0], v_joints=v[0], a_joints=a[0])
        if double is not None:
            q, v, a = self.gm.double_state(double, t - double.t0)
            return Reference(stance=self._both, q_joints=q[robot.q_idx],
                             v_joints=v[robot.v_idx], a_joints=a[robot.v_idx],
                             load_share=double.shares(t - double.t0))
        n = robot.n_joints
        return Reference(stance=self._both, q_joints=self.planner.qa0.copy(),
                         v_joints=np.zeros(n), a_joints=np.zeros(n),
                         load_share=self.hold_shares(t))

    def planned_state(self, t: float):
        """Planned full (q, v, v̇) at t during the walk (None during the holds)."""
        step, double = self._locate(t)
        if step is not None:
            return self.gm.phase_state(step, t - step.t0)
        return None if double is None else self.gm.double_state(double, t - double.t0)
