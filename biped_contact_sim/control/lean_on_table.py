"""``lean_on_table``: the humanoid leans on a table with one hand and pushes an object off it
(Chardonnet, Miossec, Kheddar, Arisumi, Hirukawa, Pierrot, Yokoi 2006, Figs. 3 and 6: HRP-2
leaning forward with a hand on a table, μ = 0.4, to reach and push an object that slides and
falls).

References for ``wbc`` (with contact transitions), times relative to the start, each motion a
quintic blend σ(s) = 10s³ − 15s⁴ + 6s⁵ (``control.multicontact``):

1. reach (``reach_time``): the left palm from its pose at q0 to 3 cm above its table point
   (x = ``table_x``, y = ``hand_y``, z = ``table_height``), level (normal up); the right hand
   holds its pose at q0;
2. land (``land_time``): the left palm descends to 5 mm below the table top, asked into the
   support from the start of the descent (the controller adds it once loaded);
3. lean (``lean_time``, after ``settle``): three-contact support (feet, left hand), the CoM
   moves ``lean`` forward — past the toes with the defaults: the robot would fall without the
   hand;
4. approach (``approach_time``): the right palm, level, to ``push_height`` above the table,
   its front edge 1 cm behind the object's near face (x = ``object_x``, y = ``object_y``);
5. push (``push_time``): the right hand moves ``push_distance`` forward (+x) and pushes the
   object with the front of the hand; then holds (``hold``).

Internal forces: the least change from zero that leaves the hand no tangential force
(``Reference.no_slip``: the hand rests on a table of μ = 0.4, the feet carry the horizontal
forces); CoPs at the contact centres. The object's slide distance is the
scenario's measurement (the world and the contact model decide it, not this behaviour).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import pinocchio as pin

from biped_contact_sim.control.base import (
    Behavior,
    FootTarget,
    Reference,
    behavior_params,
    check_range,
)
from biped_contact_sim.control.multicontact import (
    APPROACH,
    FEET,
    HANDS,
    PRESS,
    _move,
    _sigma,
    require_feet_and_hands,
)

PALM_HALF_LENGTH = 0.05  # the humanoid's palm: 0.10 × 0.08 m (config/humanoid.yaml)


def _check(field: str, value, lo: float, hi: float = np.inf, lo_open: bool = True) -> None:
    check_range(f"lean_on_table.{field}", value, lo, hi, lo_open)


@dataclass(frozen=True)
class LeanOnTableParams:
    """Parameters of ``lean_on_table`` (module docstring) [m, s].

    Attributes:
        table_height: height of the table top [m].
        table_x: x of the left palm's point on the table [m].
        hand_y: y of the left palm's point on the table [m].
        lean: forward CoM shift in three-contact support [m].
        object_x: x of the object's near face [m].
        object_y: y of the object's centre (the push line) [m].
        push_height: right palm above the table top while pushing [m].
        push_distance: length of the push stroke along +x [m].
        reach_time: duration of the left hand's reach [s].
        land_time: duration of the left hand's descent onto the table [s].
        settle: pause before the lean [s].
        lean_time: duration of the lean [s].
        approach_time: duration of the right hand's move behind the object [s].
        push_time: duration of the push stroke [s].
        hold: pause at the end [s].
    """

    table_height: float = 0.95
    table_x: float = 0.40
    hand_y: float = 0.22
    lean: float = 0.14
    object_x: float = 0.46
    object_y: float = -0.20
    push_height: float = 0.02
    push_distance: float = 0.14
    reach_time: float = 1.5
    land_time: float = 0.5
    settle: float = 0.5
    lean_time: float = 1.5
    approach_time: float = 1.5
    push_time: float = 1.5
    hold: float = 1.0

    def __post_init__(self):
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name.endswith("_time") or f.name in ("settle", "hold"):
                _check(f.name, value, 0.0, 60.0)
            elif f.name in ("lean", "push_distance", "push_height"):
                _check(f.name, value, -0.5, 0.5, lo_open=False)
            else:
                _check(f.name, value, -2.0, 2.0, lo_open=False)


class LeanOnTableBehavior(Behavior):
    """Lean on a table with the left hand and push an object with the right (module
    docstring).

    Args:
        robot: a free-flyer humanoid with contact bodies ``left_foot``, ``right_foot``,
            ``left_hand``, ``right_hand`` (``humanoid``).
        q0: initial configuration, feet flat on the ground.
        **params: fields of ``LeanOnTableParams``.

    Raises:
        ConfigError: unknown or invalid parameters, or a robot without those contact bodies.
    """

    name = "lean_on_table"

    def __init__(self, robot, q0, **params: Any):
        self.params = p = behavior_params("lean_on_table", LeanOnTableParams, params)
        names = require_feet_and_hands(robot, "lean_on_table")
        self.q0 = np.asarray(q0, float).copy()
        data = robot.create_data()
        pin.framesForwardKinematics(robot.model, data, self.q0)
        self.com0 = pin.centerOfMass(robot.model, data, self.q0).copy()
        self.start = {n: (data.oMf[names[n].frame_id].translation.copy(),
                          data.oMf[names[n].frame_id].rotation.copy()) for n in HANDS}
        self.q_joints = self.q0[robot.q_idx].copy()
        self.level = np.eye(3)
        self.table_point = np.array([p.table_x, p.hand_y, p.table_height])
        self.pre_push = np.array([p.object_x - PALM_HALF_LENGTH - 0.01, p.object_y,
                                  p.table_height + p.push_height])
        # the hand rests on a table of μ = 0.4: the feet carry the horizontal forces
        self.no_slip = ("left_hand",)
        self.t_land = p.reach_time
        self.t_lean = self.t_land + p.land_time + p.settle
        self.t_approach = self.t_lean + p.lean_time
        self.t_push = self.t_approach + p.approach_time
        self.duration = self.t_push + p.push_time + p.hold

    def stance_at(self, t: float) -> tuple[str, ...]:
        """Feet; the left hand from its landing."""
        return FEET if t < self.t_land else (*FEET, "left_hand")

    def _left(self, t: float) -> FootTarget:
        p0, R0 = self.start["left_hand"]
        above = self.table_point + np.array([0.0, 0.0, APPROACH])
        if t < self.t_land:
            return _move(t, 0.0, self.params.reach_time, p0, above, R0, self.level)
        return _move(t, self.t_land, self.params.land_time, above,
                     self.table_point - np.array([0.0, 0.0, PRESS]), self.level, self.level)

    def _right(self, t: float) -> FootTarget:
        p = self.params
        p0, R0 = self.start["right_hand"]
        if t < self.t_push:
            return _move(t, self.t_approach, p.approach_time, p0, self.pre_push, R0,
                         self.level)
        end = self.pre_push + np.array([p.push_distance, 0.0, 0.0])
        return _move(t, self.t_push, p.push_time, self.pre_push, end, self.level, self.level)

    def reference(self, t: float) -> Reference:
        """Stance, CoM, hand targets (module docstring)."""
        p = self.params
        t = max(float(t), 0.0)
        s, ds, dds = _sigma((t - self.t_lean) / p.lean_time)
        com = self.com0 + np.array([p.lean * s, 0.0, 0.0])
        vel = np.array([p.lean * ds / p.lean_time, 0.0, 0.0])
        acc = np.array([p.lean * dds / p.lean_time ** 2, 0.0, 0.0])
        hands = {"left_hand": self._left(t), "right_hand": self._right(t)}
        return Reference(stance=self.stance_at(t), com=com, com_vel=vel, com_acc=acc,
                         feet=hands, q_joints=self.q_joints, no_slip=self.no_slip)


__all__ = ["LeanOnTableBehavior", "LeanOnTableParams"]
