"""``lean_on_table``: the humanoid leans on a table with one hand and pushes an object off it
(Chardonnet, Miossec, Kheddar, Arisumi, Hirukawa, Pierrot, Yokoi 2006, Figs. 3 and 6: HRP-2
leaning forward with a hand on a table, μ = 0.4, to reach and push an object that slides and
falls).

References for ``wbc`` (with contact transitions), times relative to the start, each motion a
quintic blend σ(s) = 10s³ − 15s⁴ + 6s⁵ (``control.multicontact``):

1. reach (``reach_time``): the left palm from its pose at q0 to 3 cm above its table point
   (x = ``table_x``, y = ``hand_y``, z = ``table_height``), level (normal up), rising before
   it advances (it starts below the table top); the CoM pre-leans ``pre_lean`` forward on the
   feet, their CoPs under it (the table is out of the arm's reach from q0); the right hand is
   carried with the CoM;
2. land (``land_time``): the left palm descends to 5 mm below the table top, asked into the
   support from the start of the descent (the controller adds it once flat and loaded);
3. lean (``lean_time``, after ``settle``): three-contact support (feet, left hand), the CoM
   moves ``lean`` − ``pre_lean`` further forward — past the toes with the defaults: the robot
   would fall without the hand — and ``lean_y`` towards the hand;
4. approach (``approach_time``): the right palm, level, to ``push_height`` above the table,
   its front edge 1 cm behind the object's near face (x = ``object_x``, y = ``object_y``);
5. push (``push_time``): the right hand moves ``push_distance`` forward (+x) and pushes the
   object with the front of the hand; then holds (``hold``).

Posture references: the left arm's configuration with its palm on the table point (inverse
kinematics, ``multicontact.arm_posture``), the body pre-leaned, then leaned. Internal forces:
the hand has no tangential force (``Reference.no_slip``: a table of μ = 0.4, the feet carry
the horizontal forces) and at least ``hand_load`` (``Reference.preload``); CoPs at their
references. The object's slide distance is the scenario's measurement (the world and the
contact model decide it, not this behaviour).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from biped_contact_sim.control.base import (
    FootTarget,
    LazyValues,
    Reference,
    range_checker,
)
from biped_contact_sim.control.multicontact import (
    APPROACH,
    FEET,
    HAND_SUPPORT,
    PRESS,
    REACH_RISE,
    HandsBehavior,
    _move,
    _sigma,
    arm_posture,
    check_hand_params,
)

_ZERO3 = np.zeros(3)
PALM_HALF_LENGTH = 0.05  # the humanoid's palm: 0.10 × 0.08 m (config/humanoid.yaml)
# the right hand's move behind the object (``multicontact._move``, ``REACH_RISE``): its
# horizontal move starts late, or its palm touches the table's front edge
APPROACH_RISE = (0.5, 0.3)


_check = range_checker("lean_on_table")


@dataclass(frozen=True)
class LeanOnTableParams:
    """Parameters of ``lean_on_table`` (module docstring) [m, s].

    Attributes:
        table_height: height of the table top [m].
        table_x: x of the left palm's point on the table [m].
        hand_y: y of the left palm's point on the table [m].
        lean: forward CoM shift in all [m], ``pre_lean`` of it during the reach (inside the
            feet's support) and the rest in three-contact support (past the toes).
        pre_lean: forward CoM shift during the reach [m].
        lean_y: sideways CoM shift towards the hand during the lean [m] (the hand, beside
            the body, would otherwise unload the foot on its side).
        object_x: x of the object's near face [m].
        object_y: y of the object's centre (the push line) [m].
        hand_load: least normal force of the left hand on the table [N]
            (``Reference.preload``): the feet's CoPs move back so that it carries at least this
            much; leaning past them, the CoM loads it more.
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

    table_height: float = 0.85
    table_x: float = 0.38
    hand_y: float = 0.22
    lean: float = 0.12
    pre_lean: float = 0.05
    lean_y: float = 0.05
    object_x: float = 0.39
    object_y: float = -0.20
    hand_load: float = 30.0
    push_height: float = 0.02
    push_distance: float = 0.11
    reach_time: float = 1.5
    land_time: float = 0.5
    settle: float = 1.0
    lean_time: float = 1.5
    approach_time: float = 1.5
    push_time: float = 1.5
    hold: float = 1.0

    def __post_init__(self):
        check_hand_params(self, _check, ("settle", "hold"), ("hand_load",),
                          ("lean", "pre_lean", "lean_y", "push_distance", "push_height"), 0.5)


class LeanOnTableBehavior(HandsBehavior):
    """Lean on a table with the left hand and push an object with the right (module
    docstring). Arguments and errors: ``HandsBehavior``'s, with ``**params`` the fields of
    ``LeanOnTableParams``.
    """

    name = "lean_on_table"
    controller_defaults: ClassVar[dict[str, dict[str, Any]]] = {"wbc": HAND_SUPPORT}

    def __init__(self, robot, q0, **params: Any):
        p, names, data = self._start(robot, q0, LeanOnTableParams, params)
        # x of the sole frames at q0: the feet CoPs follow the CoM during the pre-lean
        self.sole_x = {n: float(data.oMf[names[n].frame_id].translation[0]) for n in FEET}
        self.level = np.eye(3)
        self.table_point = np.array([p.table_x, p.hand_y, p.table_height])
        self.pre_push = np.array([p.object_x - PALM_HALF_LENGTH - 0.01, p.object_y,
                                  p.table_height + p.push_height])
        # Posture references with the left palm on the table (``arm_posture``): the body at
        # q0, and translated by the lean (the pelvis moves about as far as the CoM).
        palm = names["left_hand"].frame_id
        on_table = self.table_point - np.array([0.0, 0.0, PRESS])
        self.q_on_table = arm_posture(robot, self.q0, palm, "l", on_table, self.level,
                                      shift=np.array([p.pre_lean, 0.0, 0.0]))
        self.q_leaned = arm_posture(robot, self.q0, palm, "l", on_table, self.level,
                                    shift=np.array([p.lean, p.lean_y, 0.0]))
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
            return _move(t, 0.0, self.params.reach_time, p0, above, R0, self.level,
                         rise=REACH_RISE)
        return _move(t, self.t_land, self.params.land_time, above,
                     self.table_point - np.array([0.0, 0.0, PRESS]), self.level, self.level)

    def _right(self, t: float, carry: FootTarget) -> FootTarget:
        """The right palm: carried with the CoM (its pose at q0 moved as ``carry``: position,
        velocity, acceleration of the CoM shift) until the approach, then behind the object,
        then the push."""
        p = self.params
        p0, R0 = self.start["right_hand"]
        if t < self.t_approach:
            return FootTarget(p0 + carry.p, carry.v, carry.a, rotation=R0, omega=_ZERO3,
                              alpha=_ZERO3)
        p0 = p0 + np.array([p.lean, 0.0, 0.0])
        if t < self.t_push:
            return _move(t, self.t_approach, p.approach_time, p0, self.pre_push, R0,
                         self.level, rise=APPROACH_RISE)
        end = self.pre_push + np.array([p.push_distance, 0.0, 0.0])
        return _move(t, self.t_push, p.push_time, self.pre_push, end, self.level, self.level)

    def reference(self, t: float) -> Reference:
        """Stance, CoM, hand targets (module docstring)."""
        p = self.params
        t = max(float(t), 0.0)
        s0, ds0, dds0 = _sigma(t / p.reach_time)
        s, ds, dds = _sigma((t - self.t_lean) / p.lean_time)
        rest = p.lean - p.pre_lean
        direction = np.array([rest, p.lean_y, 0.0])
        com = self.com0 + np.array([p.pre_lean * s0, 0.0, 0.0]) + s * direction
        vel = np.array([p.pre_lean * ds0 / p.reach_time, 0.0, 0.0]) \
            + ds / p.lean_time * direction
        acc = np.array([p.pre_lean * dds0 / p.reach_time ** 2, 0.0, 0.0]) \
            + dds / p.lean_time ** 2 * direction
        carry = FootTarget(com - self.com0, vel, acc)
        hands = LazyValues(("left_hand", "right_hand"),  # built when read
                           lambda name: self._left(t) if name == "left_hand"
                           else self._right(t, carry))
        if t < self.t_land:  # towards the arm's posture on the table, with the hand
            posture = self.q_joints + s0 * (self.q_on_table - self.q_joints)
        else:
            posture = self.q_on_table + s * (self.q_leaned - self.q_on_table)
        # The feet's CoPs (x, world) under the CoM while it pre-leans on two feet (a
        # quasi-static ZMP), then held there: leaning past them loads the hand.
        x = self.com0[0] + p.pre_lean * s0
        cop = {n: np.array([x - self.sole_x[n], 0.0]) for n in FEET}
        return Reference(stance=self.stance_at(t), com=com, com_vel=vel, com_acc=acc, cop=cop,
                         feet=hands, q_joints=posture, no_slip=self.no_slip,
                         preload=p.hand_load)


__all__ = ["LeanOnTableBehavior", "LeanOnTableParams"]
