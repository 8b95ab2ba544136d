"""Observables of a step (docs/methods.md §3): foot wrenches, CoPs, ZMPs, support polygon, energy.

Per contact body k with points i ∈ k and sole frame ``(o_k, R_k)``:

    F_k = Σ f_i,  τ_k = Σ (p_i − o_k) × f_i   (world), published as ``(R_kᵀ F_k, R_kᵀ τ_k)``;
    CoP_k = Σ f_n,i p_i / Σ f_n,i   (undefined — None — when Σ f_n,i < ``min_normal_force``).

ZMP from forces: the CoP of all ground-reaction forces. ZMP from the centroidal dynamics
(Bravo & Rengifo §4.3), flat ground z = 0, from the CoM G, its acceleration and the rate of
the centroidal angular momentum L̇ (pinocchio ``computeCentroidalMomentumTimeVariation``):

    x_zmp = x_G − z_G ẍ_G/(z̈_G + g) − L̇_y/(m(z̈_G + g)),
    y_zmp = y_G − z_G ÿ_G/(z̈_G + g) + L̇_x/(m(z̈_G + g)).

Both are computed independently (forces versus motion), so their agreement checks the
simulation. The cone violation is ``max(‖f_t‖ − μ f_n, 0)`` per point [N].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from biped_contact_sim.robot import RobotModel
from biped_contact_sim.sim.observables_kernels import (
    contact_extremes,
    geometry_sole_wrenches,
    geometry_wrenches,
    ground_support,
    sole_wrenches,
    support_terms,
)
from biped_contact_sim.sim.simulator import StepResult
from biped_contact_sim.sim.terrain import PlaneTerrain

MIN_NORMAL_FORCE = 1.0  # [N] below this a CoP / ZMP is undefined


@dataclass
class FootObservation:
    """Wrench of contact body k in its sole frame and its CoP (world) or None."""

    name: str
    frame: str
    force: np.ndarray  # sole frame
    torque: np.ndarray  # sole frame, about the sole origin
    normal_force: float
    cop: np.ndarray | None


@dataclass
class Observation:
    """What the recorder, the plots and the tests read from one step."""

    t: float
    feet: list[FootObservation]
    zmp: np.ndarray | None  # force ZMP (world)
    zmp_centroidal: np.ndarray | None
    com: np.ndarray
    support_polygon: np.ndarray  # (k, 2) convex hull of the active points, counter-clockwise
    zmp_in_support: bool | None
    penetration: float  # max(0, −min φ) [m]
    cone_violation: float  # [N]
    min_normal_force: float  # most negative normal force (sticking forces show here) [N]
    energy: float  # kinetic + potential [J]
    #: geometry contacts: per body in contact (joint name), ``[F; τ]`` (6,) in the world frame,
    #: τ about the joint origin; None with points contacts (``feet`` has the wrenches)
    bodies: dict[str, np.ndarray] | None = None
    zmp_reason: str | None = None  # why ``zmp`` is None when the support is not coplanar


def hull_2d_reference(points: np.ndarray) -> np.ndarray:
    """Counter-clockwise convex hull of 2-D points (Andrew's monotone chain).

    Handles the degenerate cases qhull refuses (fewer than 3 points, collinear points).
    """
    pts = np.unique(np.round(points, 12), axis=0)
    if len(pts) <= 2:
        return pts

    def turns_left(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]) > 0

    def half(seq):
        out: list[np.ndarray] = []
        for p in seq:
            while len(out) >= 2 and not turns_left(out[-2], out[-1], p):
                out.pop()
            out.append(p)
        return out[:-1]

    return np.array(half(pts) + half(pts[::-1]))


def in_polygon_reference(point: np.ndarray, polygon: np.ndarray, tol: float = 1e-9) -> bool:
    """Whether a 2-D point lies in a counter-clockwise convex polygon (or on its segment)."""
    if len(polygon) == 0:
        return False
    if len(polygon) == 1:
        return bool(np.linalg.norm(point - polygon[0]) <= tol)
    if len(polygon) == 2:
        a, b = polygon
        ab, ap = b - a, point - a
        s = np.clip(ap @ ab / (ab @ ab), 0.0, 1.0)
        return bool(np.linalg.norm(ap - s * ab) <= tol)
    edges = np.roll(polygon, -1, axis=0) - polygon
    rel = point - polygon
    return bool(np.all(edges[:, 0] * rel[:, 1] - edges[:, 1] * rel[:, 0] >= -tol))


def foot_wrenches(robot: RobotModel, data: pin.Data, q: np.ndarray,
                  step: StepResult) -> dict[str, np.ndarray]:
    """Per contact body k, the wrench ``[R_kᵀ F_k; R_kᵀ τ_k]`` (6,) in its sole frame about the
    sole origin, from the step's point forces, at the configuration q the forces acted on.

    This is what F/T sensors under the soles measure, i.e. ``contact_wrench/<foot>`` and the
    controllers' ``Measurement.wrenches``. When q is the step's start configuration, the sole
    placements come from the joint placements the step computed (no kinematics again).
    """
    if step.contacts is not None:
        if _from_step(step, q):
            c = step.contacts
            W = geometry_sole_wrenches(c.body1, c.body2, c.p1, c.p2, c.frames, step.f_contact,
                                       step.joint_placements, *_geometry_layout(robot))
            return {body.name: W[k] for k, body in enumerate(robot.contact_bodies)}
        return _geometry_feet(robot, data, q, step, MIN_NORMAL_FORCE, False)[1]
    if step.placements is not None and step.q_prev is not None and (
            q is step.q_prev or np.array_equal(q, step.q_prev)):
        layout = _layout(robot)
        W, _, _ = sole_wrenches(step.p, step.f_world, step.f_contact[:, 2], step.placements,
                                *layout, MIN_NORMAL_FORCE)
        return {body.name: W[k] for k, body in enumerate(robot.contact_bodies)}
    pin.framesForwardKinematics(robot.model, data, q)
    out = {}
    for body in robot.contact_bodies:
        idx = list(body.points)
        oMs = data.oMf[body.frame_id]
        force = step.f_world[idx].sum(axis=0)
        torque = np.cross(step.p[idx] - oMs.translation, step.f_world[idx]).sum(axis=0)
        out[body.name] = np.concatenate([oMs.rotation.T @ force, oMs.rotation.T @ torque])
    return out


class Observer:
    """Computes ``Observation``s for one robot and terrain (owns its pinocchio Data)."""

    def __init__(self, robot: RobotModel, terrain: PlaneTerrain,
                 min_normal_force: float = MIN_NORMAL_FORCE):
        self.robot = robot
        self.terrain = terrain
        self.min_normal_force = min_normal_force
        self.data = robot.create_data()
        self.g = float(np.linalg.norm(robot.model.gravity.linear))
        self._R_t = terrain.R.T.copy()
        self._origin = np.array([0.0, 0.0, terrain.height])

    def observe(self, step: StepResult, q_prev: np.ndarray, v_prev: np.ndarray) -> Observation:
        """Observables of ``step``, taken at the state the forces acted on (q_prev, v_prev).

        From the step's own joint placements by the compiled ``sole_wrenches`` and
        ``support_hull`` when q_prev is the step's start; else ``observe_reference``.
        """
        if step.contacts is not None:
            return self.observe_geometry(step, q_prev, v_prev)
        if step.placements is None or step.q_prev is None or not (
                q_prev is step.q_prev or np.array_equal(q_prev, step.q_prev)):
            return self.observe_reference(step, q_prev, v_prev)
        robot, terrain = self.robot, self.terrain
        p, fc = step.p, step.f_contact
        fn = fc[:, 2]
        W, normal, cop = sole_wrenches(p, step.f_world, fn, step.placements, *_layout(robot),
                                       self.min_normal_force)
        feet = []
        for k, body in enumerate(robot.contact_bodies):
            feet.append(FootObservation(body.name, body.frame, W[k, :3], W[k, 3:],
                                        float(normal[k]), None if np.isnan(cop[k, 0])
                                        else cop[k]))
        local = terrain.to_contact(p)[:, :2]
        zmp, hull, in_support, cone, fmin, pen = support_terms(
            p, local, fc, step.phi, step.active, terrain.mu, self.min_normal_force, self._R_t,
            self._origin)
        zmp_c, com = self._centroidal(step, q_prev, v_prev)
        return Observation(
            t=step.t, feet=feet, zmp=None if np.isnan(zmp[0]) else zmp, zmp_centroidal=zmp_c,
            com=com, support_polygon=hull, zmp_in_support=None if in_support < 0
            else bool(in_support), penetration=pen, cone_violation=cone, min_normal_force=fmin,
            energy=self._energy(step))

    def observe_geometry(self, step: StepResult, q_prev: np.ndarray,
                         v_prev: np.ndarray) -> Observation:
        """Observables of a step with geometry contacts (``StepResult.contacts``).

        Contact i acts on body 1 with ``f_i`` (world) at p₁ and on body 2 with ``−f_i`` at p₂.
        Per configured contact body (sole or palm frame k): its wrench and CoP from the
        contacts on that body's link (as ``feet`` with points contacts). Per body in contact:
        ``[Σ f; Σ (p − o_j) × f]`` about its joint origin o_j (world; a free object's torque is
        about the mean of its contact points). ZMP: the CoP of the
        ground contacts (normal forces along the ground normal) — defined only when every
        contact carrying force is on the ground plane, else None with ``zmp_reason``; the
        support polygon: the hull of those ground points.

        From the step's own joint placements (``StepResult.joint_placements``) by the compiled
        ``geometry_wrenches``, ``hull_2d`` and ``in_polygon`` when q_prev is the step's start;
        else ``observe_geometry_reference`` (numpy and pinocchio's frames).
        """
        if not _from_step(step, q_prev):
            return self.observe_geometry_reference(step, q_prev, v_prev)
        robot = self.robot
        c, fc = step.contacts, step.f_contact
        fn = fc[:, 2]
        W, normal, cop, B, side1, side2 = _compiled_geometry(robot, step, self.min_normal_force)
        feet = [FootObservation(body.name, body.frame, W[k, :3], W[k, 3:], float(normal[k]),
                                None if np.isnan(cop[k, 0]) else cop[k])
                for k, body in enumerate(robot.contact_bodies)]
        bodies: dict[str, np.ndarray] = {}
        names = c.joint_names
        for j in (*np.flatnonzero(side1), *np.flatnonzero(side2 & ~side1)):
            name = names[j]
            bodies[name] = bodies[name] + B[j] if name in bodies else B[j]
        zmp, reason, in_support, polygon = self._ground_support(c, fn, step.active, True)
        zmp_c, com = self._centroidal(step, q_prev, v_prev)
        cone, fmin, pen = contact_extremes(fc, step.phi, step.active, c.mu)
        return Observation(
            t=step.t, feet=feet, zmp=zmp, zmp_centroidal=zmp_c, com=com,
            support_polygon=polygon, zmp_in_support=in_support, penetration=pen,
            cone_violation=cone, min_normal_force=fmin,
            energy=self._energy(step), bodies=bodies,
            zmp_reason=reason)

    def _ground_support(self, c, fn: np.ndarray, active: np.ndarray, compiled: bool):
        """ZMP (the CoP of the ground contacts) or None with the reason, whether it lies in the
        support polygon, and that polygon (the hull of the ground points carrying force):
        ``observe_geometry``'s, by the compiled ``ground_support`` or by numpy."""
        if compiled:
            zmp, polygon, code, inside = ground_support(c.p2, fn, active, c.on_ground,
                                                        self.terrain.R, self._origin,
                                                        self.min_normal_force)
            if code == 0:
                return zmp, None, bool(inside), polygon
            if code == 2:
                return None, "no ground contact carrying force", None, polygon
            carrying = active & (fn > 0)
            names = sorted({c.joint_names[j] for j in c.body1[carrying & ~c.on_ground]})
            return None, ("support not coplanar: contacts off the ground plane on "
                          + ", ".join(names)), None, polygon
        carrying = active & (fn > 0)
        ground = carrying & c.on_ground
        zmp, reason, in_support = None, None, None
        polygon = np.zeros((0, 2))
        if ground.any():
            polygon = hull_2d_reference(self.terrain.to_contact(c.p2[ground])[:, :2])
        if (carrying & ~c.on_ground).any():
            names = sorted({c.joint_names[j] for j in c.body1[carrying & ~c.on_ground]})
            reason = "support not coplanar: contacts off the ground plane on " + ", ".join(names)
        elif fn[ground].sum() < self.min_normal_force:
            reason = "no ground contact carrying force"
        else:
            zmp = (fn[ground] @ c.p2[ground]) / fn[ground].sum()
            in_support = in_polygon_reference(self.terrain.to_contact(zmp[None])[0, :2], polygon,
                                          tol=1e-6)
        return zmp, reason, in_support, polygon

    def observe_geometry_reference(self, step: StepResult, q_prev: np.ndarray,
                                   v_prev: np.ndarray) -> Observation:
        """``observe_geometry`` (the same observables, defined there) with numpy and
        pinocchio's frames only: the reference of the compiled path, and the path for a q_prev
        that is not the step's start."""
        robot, data = self.robot, self.data
        c, fc, fw = step.contacts, step.f_contact, step.f_world
        fn = fc[:, 2]
        feet, _, oMi = _geometry_feet(robot, data, q_prev, step, self.min_normal_force)
        bodies: dict[str, np.ndarray] = {}
        for side, sign, points in ((c.body1, 1.0, c.p1), (c.body2, -1.0, c.p2)):
            for j in np.unique(side):
                if j == 0:
                    continue
                sel = side == j
                origin = oMi[j] if j < len(oMi) else points[sel].mean(axis=0)
                f = sign * fw[sel]
                w = np.concatenate([f.sum(axis=0), _moment_sum(points[sel] - origin, f)])
                name = c.joint_names[j]
                bodies[name] = bodies[name] + w if name in bodies else w
        zmp, reason, in_support, polygon = self._ground_support(c, fn, step.active, False)
        zmp_c, com = self._centroidal(step, q_prev, v_prev)
        cone, fmin, pen = contact_extremes_reference(fc, step.phi, step.active, c.mu)
        return Observation(
            t=step.t, feet=feet, zmp=zmp, zmp_centroidal=zmp_c, com=com,
            support_polygon=polygon, zmp_in_support=in_support,
            penetration=pen, cone_violation=cone, min_normal_force=fmin,
            energy=self._energy(step), bodies=bodies,
            zmp_reason=reason)

    def _energy(self, step: StepResult) -> float:
        """Kinetic + potential energy at the step's end."""
        model, data = self.robot.model, self.data
        pin.computeKineticEnergy(model, data, step.q, step.v)
        pin.computePotentialEnergy(model, data, step.q)
        return float(data.kinetic_energy + data.potential_energy)

    def _centroidal(self, step: StepResult, q_prev: np.ndarray, v_prev: np.ndarray):
        """ZMP from the centroidal dynamics (module docstring) and the CoM at (q_prev, v_prev)."""
        model, data = self.robot.model, self.data
        pin.computeCentroidalMomentumTimeVariation(model, data, q_prev, v_prev, step.a)
        mass = data.mass[0]
        com, ddc, dL = data.com[0].copy(), data.dhg.linear / mass, data.dhg.angular
        zmp_c = None
        denom = ddc[2] + self.g
        if self.terrain.flat and abs(denom) > 1e-6:
            zc = com[2] - self.terrain.height
            zmp_c = np.array([com[0] - zc * ddc[0] / denom - dL[1] / (mass * denom),
                              com[1] - zc * ddc[1] / denom + dL[0] / (mass * denom),
                              self.terrain.height])
        return zmp_c, com

    def observe_reference(self, step: StepResult, q_prev: np.ndarray,
                          v_prev: np.ndarray) -> Observation:
        """``observe`` with numpy and pinocchio's frames only (the reference of the compiled
        path, and the path for a q_prev that is not the step's start)."""
        robot, data, model = self.robot, self.data, self.robot.model
        pin.framesForwardKinematics(model, data, q_prev)
        p, f, fn = step.p, step.f_world, step.f_contact[:, 2]
        feet = []
        for body in robot.contact_bodies:
            idx = list(body.points)
            oMs = data.oMf[body.frame_id]
            force = f[idx].sum(axis=0)
            torque = np.cross(p[idx] - oMs.translation, f[idx]).sum(axis=0)
            total_n = fn[idx].sum()
            cop = (fn[idx] @ p[idx]) / total_n if total_n >= self.min_normal_force else None
            feet.append(FootObservation(body.name, body.frame, oMs.rotation.T @ force,
                                        oMs.rotation.T @ torque, float(total_n), cop))
        total_n = fn.sum()
        zmp = (fn @ p) / total_n if total_n >= self.min_normal_force else None
        zmp_c, com = self._centroidal(step, q_prev, v_prev)

        in_contact = step.active & (fn > 0)
        polygon = hull_2d_reference(self.terrain.to_contact(p[in_contact])[:, :2]) \
            if in_contact.any() else np.zeros((0, 2))
        in_support = None
        if zmp is not None:
            in_support = in_polygon_reference(self.terrain.to_contact(zmp[None])[0, :2], polygon,
                                          tol=1e-6)
        cone, fmin, pen = contact_extremes_reference(step.f_contact, step.phi, step.active,
                                                     self.terrain.mu)
        return Observation(
            t=step.t, feet=feet, zmp=zmp, zmp_centroidal=zmp_c, com=com,
            support_polygon=polygon, zmp_in_support=in_support,
            penetration=pen, cone_violation=cone, min_normal_force=fmin,
            energy=self._energy(step))


def contact_extremes_reference(fc: np.ndarray, phi: np.ndarray, active: np.ndarray,
                               mu) -> tuple[float, float, float]:
    """``contact_extremes`` in numpy: the largest cone violation, the smallest normal force of
    the active points and the deepest penetration (0 where there is none)."""
    fn = fc[:, 2]
    cone = np.maximum(np.sqrt((fc[:, :2] ** 2).sum(axis=1)) - mu * fn, 0.0)
    return (float(cone.max()) if len(cone) else 0.0,
            float(fn[active].min()) if active.any() else 0.0,
            float(max(0.0, -phi.min())) if len(phi) else 0.0)


def _moment_sum(r: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Σ_i r_i × f_i (3,) of rows r, f (n, 3), by components: np.cross on a few rows costs
    ~20 µs of dispatch (speed only)."""
    return np.array([r[:, 1] @ f[:, 2] - r[:, 2] @ f[:, 1],
                     r[:, 2] @ f[:, 0] - r[:, 0] @ f[:, 2],
                     r[:, 0] @ f[:, 1] - r[:, 1] @ f[:, 0]])


def _geometry_feet(robot: RobotModel, data: pin.Data, q: np.ndarray, step: StepResult,
                   min_normal_force: float, origins: bool = True
                   ) -> tuple[list, dict, list[np.ndarray] | None]:
    """With geometry contacts, per configured contact body k (sole frame (o_k, R_k) on joint
    j_k): the contacts on j_k's link, ``[R_kᵀ F_k; R_kᵀ τ_k]`` about o_k, Σ f_n and the CoP
    (None below ``min_normal_force``), at q. Returns (FootObservations, {name: wrench},
    joint origins (world), None unless ``origins``)."""
    pin.framesForwardKinematics(robot.model, data, q)
    c, fw, fn = step.contacts, step.f_world, step.f_contact[:, 2]
    oMi = [data.oMi[j].translation.copy() for j in range(robot.model.njoints)] if origins \
        else None
    feet, wrenches = [], {}
    for body in robot.contact_bodies:
        j = robot.model.frames[body.frame_id].parentJoint
        oMs = data.oMf[body.frame_id]
        s1, s2 = c.body1 == j, c.body2 == j
        p = np.concatenate([c.p1[s1], c.p2[s2]])
        f = np.concatenate([fw[s1], -fw[s2]])
        force = f.sum(axis=0)
        torque = _moment_sum(p - oMs.translation, f)
        normal = np.concatenate([fn[s1], fn[s2]])
        total = float(normal.sum())
        cop = (normal @ p) / total if total >= min_normal_force else None
        R = oMs.rotation
        wrenches[body.name] = np.concatenate([R.T @ force, R.T @ torque])
        feet.append(FootObservation(body.name, body.frame, R.T @ force, R.T @ torque, total,
                                    cop))
    return feet, wrenches, oMi


def _from_step(step: StepResult, q: np.ndarray) -> bool:
    """Whether the step's own joint placements hold at q (q is the step's start)."""
    return step.joint_placements is not None and step.q_prev is not None and (
        q is step.q_prev or np.array_equal(q, step.q_prev))


def _geometry_layout(robot: RobotModel) -> tuple[np.ndarray, np.ndarray]:
    """Per contact body: its parent joint in the model and the sole frame's placement in that
    joint's frame (3, 4) (cached)."""
    cached = getattr(robot, "_geometry_layout", None)
    if cached is None:
        model = robot.model
        joints = np.array([model.frames[b.frame_id].parentJoint for b in robot.contact_bodies],
                          dtype=np.int64)
        sole = np.array([model.frames[b.frame_id].placement.homogeneous[:3]
                         for b in robot.contact_bodies]).reshape(-1, 3, 4)
        cached = (joints, sole)
        robot._geometry_layout = cached
    return cached


def _compiled_geometry(robot: RobotModel, step: StepResult, min_normal_force: float):
    """``geometry_wrenches`` of a step with geometry contacts (its joint placements)."""
    c = step.contacts
    return geometry_wrenches(c.body1, c.body2, c.p1, c.p2, c.frames, step.f_contact,
                             step.joint_placements, *_geometry_layout(robot),
                             robot.model.njoints, min_normal_force)


def geometry_wrenches_reference(body1, body2, p1, p2, frames, fc, placements, body_joint, sole,
                                n_robot_joints, min_normal_force):
    """``geometry_wrenches`` in numpy (its reference in the tests)."""
    fw = np.einsum("mij,mj->mi", frames, fc)
    nj, nb = len(placements), len(body_joint)
    W, normal, cop = np.zeros((nb, 6)), np.zeros(nb), np.full((nb, 3), np.nan)
    for k, j in enumerate(body_joint):
        P = np.vstack([placements[j], [0.0, 0.0, 0.0, 1.0]])
        S = P @ np.vstack([sole[k], [0.0, 0.0, 0.0, 1.0]])
        R, o = S[:3, :3], S[:3, 3]
        s1, s2 = body1 == j, body2 == j
        p = np.concatenate([p1[s1], p2[s2]])
        f = np.concatenate([fw[s1], -fw[s2]])
        fn = np.concatenate([fc[s1, 2], fc[s2, 2]])
        W[k] = np.concatenate([R.T @ f.sum(axis=0), R.T @ np.cross(p - o, f).sum(axis=0)])
        normal[k] = fn.sum()
        if normal[k] >= min_normal_force:
            cop[k] = fn @ p / normal[k]
    B = np.zeros((nj, 6))
    sides = []
    for side, sign, points in ((body1, 1.0, p1), (body2, -1.0, p2)):
        present = np.zeros(nj, dtype=bool)
        for j in np.unique(side[side > 0]):
            present[j] = True
            sel = side == j
            o = placements[j, :, 3] if j < n_robot_joints else points[sel].mean(axis=0)
            f = sign * fw[sel]
            B[j] += np.concatenate([f.sum(axis=0), np.cross(points[sel] - o, f).sum(axis=0)])
        sides.append(present)
    return W, normal, cop, B, sides[0], sides[1]


def _layout(robot: RobotModel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per contact body: the index of its joint in ``robot.contact_joints``, the sole frame's
    placement in that joint's frame (3, 4), and its first and last+1 point (cached)."""
    cached = getattr(robot, "_observer_layout", None)
    if cached is None:
        model, joints = robot.model, robot.contact_joints
        idx = np.array([joints.index(model.frames[b.frame_id].parentJoint)
                        for b in robot.contact_bodies], dtype=np.int64)
        sole = np.array([model.frames[b.frame_id].placement.homogeneous[:3]
                         for b in robot.contact_bodies]).reshape(-1, 3, 4)
        ranges = np.array([(b.points[0], b.points[-1] + 1) for b in robot.contact_bodies],
                          dtype=np.int64).reshape(-1, 2)
        cached = (idx, sole, ranges)
        robot._observer_layout = cached
    return cached


def configured_point_rows(robot: RobotModel, contacts, tol: float = 1e-6) -> np.ndarray:
    """For each configured contact point i of the robot (the sole vertices of its config), the
    row of the geometry contact at that point, or −1 when none is there (the point is farther
    than the detection margin from everything): a contact on the point's joint whose point
    in that joint's frame (``Contacts.local1``) is the point's, within ``tol`` [m]. With the
    biped's sole boxes, the corners of a sole on the ground are exactly its configured points,
    so the papers' per-vertex figures read geometry runs too."""
    cached = getattr(robot, "_point_joint_local", None)
    if cached is None:
        frames = [robot.model.frames[f] for f in robot.point_frame_ids]
        cached = (np.array([f.parentJoint for f in frames], dtype=np.int64),
                  np.array([f.placement.translation for f in frames]).reshape(-1, 3))
        robot._point_joint_local = cached
    joints, local = cached
    rows = np.full(len(joints), -1, dtype=np.int64)
    for i, (j, x) in enumerate(zip(joints, local, strict=True)):
        hit = np.flatnonzero((contacts.body1 == j)
                             & (np.abs(contacts.local1 - x).max(axis=1) <= tol))
        if len(hit):
            rows[i] = hit[0]
    return rows


def configured_point_values(robot: RobotModel, step: StepResult,
                            values: np.ndarray) -> np.ndarray:
    """Per-contact ``values`` (m, ...) of a step at the robot's configured points: as given
    with points contacts, else the rows of ``configured_point_rows`` (NaN where no contact)."""
    if step.contacts is None:
        return values
    rows = configured_point_rows(robot, step.contacts)
    out = np.full((len(rows), *values.shape[1:]), np.nan)
    out[rows >= 0] = values[rows[rows >= 0]]
    return out
