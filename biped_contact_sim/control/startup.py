"""The start-up blend of ``wbc``: a controller that takes over a robot away from its reference
starts from where the robot is, and eases into the reference.

A controller (re)started on a real robot, or on a simulated one held by a driver, meets a
state that its reference did not plan: the CoM a few centimetres off, the joints bent, the base
leaning. Tracking the reference at once commands that whole error in one step: the CoM task's
acceleration moves the ZMP towards the edge of the feet, and in double support the
angular-momentum task (``wbc`` step 3), which damps e_12·L_G above the base task, meets the
base's return to upright by pitching the waist the other way (measured on the biped after a
300 N·m/rad joint hold, 5.6° back, CoM 3.9 cm behind: the waist ran to −1.1 rad within 0.5 s
and the robot fell; ``test/test_wbc_startup.py``).

At its first step after ``reset``, when the robot is more than 1 cm (CoM) or 1° (base) away
from its reference (``COM_START``, ``BASE_START``), the controller records the offsets of the
measured state from the reference — the CoM Δc = c − c_ref, the posture Δq = q_a − q_a,ref
and the base orientation ρ₀ = log(R_base R_upᵀ) (R_up: upright with the stance soles' mean
heading, what the base task tracks) — and for T = ``startup_time`` tracks, with
τ = (t − t₀)/T and the minimum-jerk decay e(τ) = 1 − (10τ³ − 15τ⁴ + 6τ⁵) (e, ė, ë = 1, 0, 0
at τ = 0 and 0, 0, 0 at τ = 1):

* CoM: c_ref + e Δc, velocity ċ_ref + ė Δc, acceleration c̈_ref + ë Δc;
* posture: q_ref + e Δq, q̇_ref + ė Δq, q̈_ref + ë Δq;
* base: exp(e ρ₀) R_up (the angular velocity and acceleration targets stay zero: the blend is
  slow next to the base task's damping);
* commanded CoPs: each stance contact's shifted with the CoM by e Δc (its horizontal part, in
  the contact's frame), kept within its contact points' extent, so that the moment arms about
  the anchors are the reference's;
* no angular-momentum task while the blend runs: the base and the CoM return together, the
  angular momentum that takes is the motion's own.

This is our addition (the practice of task-space controllers such as TSID, whose tasks start
from the measured state), not part of the papers' method.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pinocchio as pin

from biped_contact_sim.control.base import Reference

#: the blend runs only when the robot starts farther than this from its reference: the CoM
#: [m] or the base orientation [rad, 1°]. Closer, the reference is taken at once, as the tasks
#: handle such errors; a blend would also take the angular-momentum task away for its
#: duration, which leaves the waist's pitch where it went (in double support no task above the
#: posture holds it: measured on ``sway``, a blend of a 2 mm start offset left the waist
#: 0.36 rad off for the rest of the run).
COM_START, BASE_START = 0.01, np.radians(1.0)


def decay(tau: float, duration: float) -> tuple[float, float, float]:
    """(e, ė, ë) of e(τ) = 1 − (10τ³ − 15τ⁴ + 6τ⁵) at τ ∈ [0, 1] over ``duration`` [s]."""
    t2 = tau * tau
    e = 1.0 - t2 * tau * (10.0 - 15.0 * tau + 6.0 * t2)
    de = -30.0 * t2 * (1.0 - tau) ** 2 / duration
    dde = -60.0 * tau * (1.0 - tau) * (1.0 - 2.0 * tau) / duration**2
    return e, de, dde


def heading(rotations) -> np.ndarray:
    """R_up: upright with the mean heading of the x axes of ``rotations`` (the base task's
    target, ``wbc_kernels.wbc_stages``)."""
    x = sum(R[:, 0] for R in rotations)
    return pin.rpy.rpyToMatrix(0.0, 0.0, float(np.arctan2(x[1], x[0])))


class StartupBlend:
    """The blend of the module docstring for one controller.

    Args:
        duration: T [s]; 0 turns the blend off.
        base_frame: the frame id of the base (None: no base task, no base blend).
        qi: the actuated joints' indices in q.
        extents: per contact body, (lo, hi) of its contact points in its frame (x, y) [m].
        centres: per contact body, the default commanded CoP (x, y, z) in its frame [m].
    """

    def __init__(self, duration: float, base_frame: int | None, qi, extents: dict,
                 centres: dict):
        self.duration = float(duration)
        self._base_frame = base_frame
        self._qi = qi
        self._extents = extents
        self._centres = centres
        self.reset()

    def reset(self) -> None:
        """The next step starts a blend from the state it measures."""
        self._start: tuple | None = None
        self.active = self.duration > 0.0
        #: exp([e ρ₀]×) of this step's base target (``apply``), None: the reference's R_up
        self.rotation: np.ndarray | None = None
        #: the offsets measured at the start: {"com": Δc, "posture": Δq, "base": ρ₀} (those
        #: the reference has; empty until the first step)
        self.offsets: dict[str, np.ndarray] = {}

    def apply(self, ref: Reference, t: float, q: np.ndarray, data, bodies) -> Reference:
        """The reference of the step at t, blended (module docstring). ``data`` holds the
        CoM and the frame placements at q; ``bodies`` the stance's contact bodies."""
        if self._start is None:
            self._begin(ref, t, q, data, bodies)
            if not self.active:
                return ref
        t0, shifts = self._start
        tau = (t - t0) / self.duration
        if not 0.0 <= tau < 1.0:  # over (or time went back: a new run should reset)
            self.active, self.rotation = False, None
            return ref
        e, de, dde = decay(tau, self.duration)
        o = self.offsets
        changes = {}
        dc = o.get("com")
        if dc is not None:
            changes.update(com=ref.com + e * dc, com_vel=_plus(ref.com_vel, de * dc),
                           com_acc=_plus(ref.com_acc, dde * dc))
        dq = o.get("posture")
        if dq is not None:
            changes.update(q_joints=ref.q_joints + e * dq, v_joints=_plus(ref.v_joints, de * dq),
                           a_joints=_plus(ref.a_joints, dde * dq))
        if shifts:
            cop = dict(ref.cop)
            for name, shift in shifts.items():
                own = cop.get(name)
                base = self._centres[name][:2] if own is None else np.asarray(own, float)[:2]
                lo, hi = self._extents[name]
                cop[name] = np.clip(base + e * shift, lo, hi)
            changes["cop"] = cop
        rho = o.get("base")
        self.rotation = None if rho is None else pin.exp3(e * rho)
        return dataclasses.replace(ref, **changes) if changes else ref

    def _begin(self, ref: Reference, t: float, q: np.ndarray, data, bodies) -> None:
        """Record the offsets of the state at t from ``ref`` (module docstring)."""
        o = self.offsets
        if ref.com is not None:
            o["com"] = data.com[0] - np.asarray(ref.com, float)
        if ref.q_joints is not None:
            o["posture"] = q[self._qi] - np.asarray(ref.q_joints, float)
        rotations = [data.oMf[b.frame_id].rotation for b in bodies]
        if self._base_frame is not None and rotations:
            R_base = data.oMf[self._base_frame].rotation
            o["base"] = pin.log3(R_base @ heading(rotations).T)
        if (np.linalg.norm(o.get("com", np.zeros(3))) <= COM_START
                and np.linalg.norm(o.get("base", np.zeros(3))) <= BASE_START):
            o.clear()
        shifts = {}
        dc = o.get("com")
        if dc is not None:
            horizontal = np.array([dc[0], dc[1], 0.0])
            for b, R in zip(bodies, rotations, strict=True):
                shifts[b.name] = (R.T @ horizontal)[:2]
        self._start = (t, shifts)
        self.active = bool(o)


def _plus(x, dx: np.ndarray) -> np.ndarray:
    """x + dx, where x may be None (zero)."""
    return dx if x is None else np.asarray(x, float) + dx
