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

from biped_contact_sim.jit import B1, F1, F2, F3, I1, I2, F1s, F2s, F3s, I1s, f8, i8, kernel
from biped_contact_sim.robot import RobotModel
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


def convex_hull(points: np.ndarray) -> np.ndarray:
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


def point_in_polygon(point: np.ndarray, polygon: np.ndarray, tol: float = 1e-9) -> bool:
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
        robot, data, model, terrain = self.robot, self.data, self.robot.model, self.terrain
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
        pin.computeKineticEnergy(model, data, step.q, step.v)
        pin.computePotentialEnergy(model, data, step.q)
        return Observation(
            t=step.t, feet=feet, zmp=None if np.isnan(zmp[0]) else zmp, zmp_centroidal=zmp_c,
            com=com, support_polygon=hull, zmp_in_support=None if in_support < 0
            else bool(in_support), penetration=pen, cone_violation=cone, min_normal_force=fmin,
            energy=float(data.kinetic_energy + data.potential_energy))

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
        robot, data, model = self.robot, self.data, self.robot.model
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
        pin.computeKineticEnergy(model, data, step.q, step.v)
        pin.computePotentialEnergy(model, data, step.q)
        cone, fmin, pen = contact_extremes(fc, step.phi, step.active, c.mu)
        return Observation(
            t=step.t, feet=feet, zmp=zmp, zmp_centroidal=zmp_c, com=com,
            support_polygon=polygon, zmp_in_support=in_support, penetration=pen,
            cone_violation=cone, min_normal_force=fmin,
            energy=float(data.kinetic_energy + data.potential_energy), bodies=bodies,
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
            polygon = convex_hull(self.terrain.to_contact(c.p2[ground])[:, :2])
        if (carrying & ~c.on_ground).any():
            names = sorted({c.joint_names[j] for j in c.body1[carrying & ~c.on_ground]})
            reason = "support not coplanar: contacts off the ground plane on " + ", ".join(names)
        elif fn[ground].sum() < self.min_normal_force:
            reason = "no ground contact carrying force"
        else:
            zmp = (fn[ground] @ c.p2[ground]) / fn[ground].sum()
            in_support = point_in_polygon(self.terrain.to_contact(zmp[None])[0, :2], polygon,
                                          tol=1e-6)
        return zmp, reason, in_support, polygon

    def observe_geometry_reference(self, step: StepResult, q_prev: np.ndarray,
                                   v_prev: np.ndarray) -> Observation:
        """``observe_geometry`` (the same observables, defined there) with numpy and
        pinocchio's frames only: the reference of the compiled path, and the path for a q_prev
        that is not the step's start."""
        robot, data, model = self.robot, self.data, self.robot.model
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
        ft = np.sqrt((fc[:, :2] ** 2).sum(axis=1))
        cone = np.maximum(ft - c.mu * fn, 0.0)
        pin.computeKineticEnergy(model, data, step.q, step.v)
        pin.computePotentialEnergy(model, data, step.q)
        return Observation(
            t=step.t, feet=feet, zmp=zmp, zmp_centroidal=zmp_c, com=com,
            support_polygon=polygon, zmp_in_support=in_support,
            penetration=float(max(0.0, -step.phi.min())) if len(step.phi) else 0.0,
            cone_violation=float(cone.max()) if len(cone) else 0.0,
            min_normal_force=float(fn[step.active].min()) if step.active.any() else 0.0,
            energy=float(data.kinetic_energy + data.potential_energy), bodies=bodies,
            zmp_reason=reason)

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

        # Centroidal ZMP from the motion: ḣ_G at (q, v, v̇) of the step.
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

        in_contact = step.active & (fn > 0)
        polygon = convex_hull(self.terrain.to_contact(p[in_contact])[:, :2]) \
            if in_contact.any() else np.zeros((0, 2))
        in_support = None
        if zmp is not None:
            in_support = point_in_polygon(self.terrain.to_contact(zmp[None])[0, :2], polygon,
                                          tol=1e-6)
        ft = np.sqrt((step.f_contact[:, :2] ** 2).sum(axis=1))
        cone = np.maximum(ft - self.terrain.mu * fn, 0.0)
        pin.computeKineticEnergy(model, data, step.q, step.v)
        pin.computePotentialEnergy(model, data, step.q)
        return Observation(
            t=step.t, feet=feet, zmp=zmp, zmp_centroidal=zmp_c, com=com,
            support_polygon=polygon, zmp_in_support=in_support,
            penetration=float(max(0.0, -step.phi.min())) if len(step.phi) else 0.0,
            cone_violation=float(cone.max()) if len(cone) else 0.0,
            min_normal_force=float(fn[step.active].min()) if step.active.any() else 0.0,
            energy=float(data.kinetic_energy + data.potential_energy))


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


@kernel((F2, F2), error_model="numpy")
def _sole_pose(P, S):
    """(R, o) of a sole frame: the joint's placement P = [R_j | p_j] (3 × 4) composed with the
    sole's placement S in the joint (3 × 4), R = R_j R_s, o = R_j p_s + p_j."""
    R = np.empty((3, 3))
    o = np.empty(3)
    for r in range(3):
        for c in range(3):
            R[r, c] = P[r, 0] * S[0, c] + P[r, 1] * S[1, c] + P[r, 2] * S[2, c]
        o[r] = P[r, 0] * S[0, 3] + P[r, 1] * S[1, 3] + P[r, 2] * S[2, 3] + P[r, 3]
    return R, o


@kernel((F3s, F2), error_model="numpy")
def _world_forces(frames, fc):
    """f_i = C_i f_c,i (world) of every contact (m, 3)."""
    m = fc.shape[0]
    fw = np.empty((m, 3))
    for i in range(m):
        for r in range(3):
            fw[i, r] = frames[i, r, 0] * fc[i, 0] + frames[i, r, 1] * fc[i, 1] \
                + frames[i, r, 2] * fc[i, 2]
    return fw


@kernel((I1s, I1s, F2s, F2s, F2, F2, F3, I1, F3, f8, F2, F1, F2), error_model="numpy")
def _sole_wrenches_into(body1, body2, p1, p2, fw, fc, placements, body_joint, sole,
                        min_normal_force, W, normal, cop):
    """W, normal, cop of ``geometry_wrenches`` (its docstring) into the given arrays (W and
    normal zero, cop NaN on entry)."""
    m = body1.shape[0]
    nb = body_joint.shape[0]
    for k in range(nb):
        j = body_joint[k]
        R, o = _sole_pose(placements[j], sole[k])
        F = np.zeros(3)
        T = np.zeros(3)
        cp = np.zeros(3)
        total = 0.0
        for side in range(2):
            for i in range(m):
                if (body1[i] if side == 0 else body2[i]) != j:
                    continue
                sign = 1.0 if side == 0 else -1.0
                x = p1[i] if side == 0 else p2[i]
                d0, d1, d2 = x[0] - o[0], x[1] - o[1], x[2] - o[2]
                f0, f1, f2 = sign * fw[i, 0], sign * fw[i, 1], sign * fw[i, 2]
                F[0] += f0
                F[1] += f1
                F[2] += f2
                T[0] += d1 * f2 - d2 * f1
                T[1] += d2 * f0 - d0 * f2
                T[2] += d0 * f1 - d1 * f0
                total += fc[i, 2]
                for r in range(3):
                    cp[r] += fc[i, 2] * x[r]
        for r in range(3):
            W[k, r] = R[0, r] * F[0] + R[1, r] * F[1] + R[2, r] * F[2]
            W[k, 3 + r] = R[0, r] * T[0] + R[1, r] * T[1] + R[2, r] * T[2]
        normal[k] = total
        if total >= min_normal_force:
            for r in range(3):
                cop[k, r] = cp[r] / total


@kernel((I1s, I1s, F2s, F2s, F3s, F2, F3, I1, F3), error_model="numpy")
def geometry_sole_wrenches(body1, body2, p1, p2, frames, fc, placements, body_joint, sole):
    """W of ``geometry_wrenches`` alone (the sole wrenches a controller measures, every
    step; the observers' other figures are for the recorded steps)."""
    nb = body_joint.shape[0]
    W = np.zeros((nb, 6))
    _sole_wrenches_into(body1, body2, p1, p2, _world_forces(frames, fc), fc, placements,
                        body_joint, sole, np.inf, W, np.zeros(nb), np.full((nb, 3), np.nan))
    return W


@kernel((I1s, I1s, F2s, F2s, F3s, F2, F3, I1, F3, i8, f8), error_model="numpy")
def geometry_wrenches(body1, body2, p1, p2, frames, fc, placements, body_joint, sole,
                      n_robot_joints, min_normal_force):
    """The wrenches of geometry contacts (``Observer.observe_geometry``; numpy reference
    ``_geometry_feet`` and ``observe_geometry_reference``). Contact i pushes body 1 with
    ``f_i = C_i f_c,i`` (world) at p₁ and body 2 with ``−f_i`` at p₂; ``placements`` (nj, 3, 4)
    are the joints' ``[R | t]`` at the step's start.

    Returns:
        W (nb, 6): per contact body k (sole frame (R_k, o_k) on joint j_k),
        ``[R_kᵀ F_k; R_kᵀ Σ (p − o_k) × f]`` of the contacts on j_k; normal (nb,): their Σ f_n;
        cop (nb, 3): ``Σ f_n p / Σ f_n`` (NaN below ``min_normal_force``); B (nj, 6): per joint
        j > 0, ``[Σ f; Σ (p − o_j) × f]`` (world) over its contacts as body 1 plus those as body 2,
        o_j its origin (robot joints, j < n_robot_joints) or, per side, the mean of that side's
        points (free objects); side1, side2 (nj,) bool: j is body 1 / body 2 of a contact.
    """
    nj = placements.shape[0]
    nb = body_joint.shape[0]
    fw = _world_forces(frames, fc)
    W = np.zeros((nb, 6))
    normal = np.zeros(nb)
    cop = np.full((nb, 3), np.nan)
    _sole_wrenches_into(body1, body2, p1, p2, fw, fc, placements, body_joint, sole,
                        min_normal_force, W, normal, cop)
    m = body1.shape[0]
    B = np.zeros((nj, 6))
    side1 = np.zeros(nj, dtype=np.bool_)
    side2 = np.zeros(nj, dtype=np.bool_)
    count = np.zeros(nj)
    mean = np.zeros((nj, 3))
    for side in range(2):
        count[:] = 0.0
        mean[:] = 0.0
        for i in range(m):
            j = body1[i] if side == 0 else body2[i]
            if j == 0:
                continue
            if side == 0:
                side1[j] = True
            else:
                side2[j] = True
            if j >= n_robot_joints:
                x = p1[i] if side == 0 else p2[i]
                count[j] += 1.0
                for r in range(3):
                    mean[j, r] += x[r]
        for j in range(n_robot_joints, nj):
            if count[j] > 0:
                for r in range(3):
                    mean[j, r] /= count[j]
        for i in range(m):
            j = body1[i] if side == 0 else body2[i]
            if j == 0:
                continue
            sign = 1.0 if side == 0 else -1.0
            x = p1[i] if side == 0 else p2[i]
            if j < n_robot_joints:
                o0, o1, o2 = placements[j, 0, 3], placements[j, 1, 3], placements[j, 2, 3]
            else:
                o0, o1, o2 = mean[j, 0], mean[j, 1], mean[j, 2]
            d0, d1, d2 = x[0] - o0, x[1] - o1, x[2] - o2
            f0, f1, f2 = sign * fw[i, 0], sign * fw[i, 1], sign * fw[i, 2]
            B[j, 0] += f0
            B[j, 1] += f1
            B[j, 2] += f2
            B[j, 3] += d1 * f2 - d2 * f1
            B[j, 4] += d2 * f0 - d0 * f2
            B[j, 5] += d0 * f1 - d1 * f0
    return W, normal, cop, B, side1, side2


@kernel((F2s, F1s, B1, B1, F2, F1, f8), error_model="numpy")
def ground_support(p2, fn, active, on_ground, R, origin, min_normal_force):
    """The support of geometry contacts (``Observer._ground_support``, its numpy reference):
    the contacts carrying force (active, f_n > 0) on the ground plane, their hull in surface
    coordinates ``Rᵀ(p₂ − o)`` (``hull_2d``), and a code: 1 when a contact carrying force is off
    the ground plane, else 2 when the ground's Σ f_n < ``min_normal_force``, else 0 with the
    ZMP ``Σ f_n p₂ / Σ f_n`` and whether it lies in the hull (``in_polygon``, tol 1e-6).

    Returns:
        zmp (3,) (NaN unless code 0), hull (k, 2), code, inside (−1 unless code 0).
    """
    m = p2.shape[0]
    sel = np.zeros(m, dtype=np.bool_)
    off = False
    total = 0.0
    z = np.zeros(3)
    k = 0
    for i in range(m):
        if not (active[i] and fn[i] > 0.0):
            continue
        if on_ground[i]:
            sel[i] = True
            k += 1
            total += fn[i]
            for r in range(3):
                z[r] += fn[i] * p2[i, r]
        else:
            off = True
    local = np.empty((k, 2))
    j = 0
    for i in range(m):
        if sel[i]:
            d0, d1, d2 = p2[i, 0] - origin[0], p2[i, 1] - origin[1], p2[i, 2] - origin[2]
            for c in range(2):
                local[j, c] = d0 * R[0, c] + d1 * R[1, c] + d2 * R[2, c]
            j += 1
    hull = hull_2d(local)
    zmp = np.full(3, np.nan)
    if off:
        return zmp, hull, 1, -1
    if total < min_normal_force:
        return zmp, hull, 2, -1
    for r in range(3):
        zmp[r] = z[r] / total
    zl = np.empty(2)
    d0, d1, d2 = zmp[0] - origin[0], zmp[1] - origin[1], zmp[2] - origin[2]
    for c in range(2):
        zl[c] = d0 * R[0, c] + d1 * R[1, c] + d2 * R[2, c]
    return zmp, hull, 0, 1 if in_polygon(zl, hull, 1e-6) else 0


@kernel((F2, F1, B1, F1s), error_model="numpy")
def contact_extremes(fc, phi, active, mu):
    """The cone violation ``max(‖f_t‖ − μ_i f_n, 0)`` over the contacts (0 if none), the most
    negative normal force of the active ones (0 if none) and the penetration
    ``max(0, −min φ)`` (0 if none)."""
    cone, fmin, pen = 0.0, np.inf, 0.0
    for i in range(phi.shape[0]):
        cone = max(cone, np.sqrt(fc[i, 0] ** 2 + fc[i, 1] ** 2) - mu[i] * fc[i, 2])
        if active[i]:
            fmin = min(fmin, fc[i, 2])
        pen = max(pen, -phi[i])
    return cone, 0.0 if fmin == np.inf else fmin, pen


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


@kernel((F2, F2, F1s, F3, I1, F3, I2, f8), error_model="numpy")
def sole_wrenches(p, f_world, fn, placements, body_joint, sole, ranges, min_normal_force):
    """Per contact body k with sole frame ``(R_k, o_k)`` = joint placement × sole placement:
    ``[R_kᵀ Σ f_i; R_kᵀ Σ (p_i − o_k) × f_i]`` (6,), ``Σ f_n,i`` and the CoP
    ``Σ f_n,i p_i / Σ f_n,i`` (NaN below ``min_normal_force``) — module docstring."""
    nb = body_joint.shape[0]
    W = np.zeros((nb, 6))
    normal = np.zeros(nb)
    cop = np.full((nb, 3), np.nan)
    for k in range(nb):
        R, o = _sole_pose(placements[body_joint[k]], sole[k])
        F = np.zeros(3)
        T = np.zeros(3)
        cp = np.zeros(3)
        total = 0.0
        for i in range(ranges[k, 0], ranges[k, 1]):
            d0, d1, d2 = p[i, 0] - o[0], p[i, 1] - o[1], p[i, 2] - o[2]
            f0, f1, f2 = f_world[i, 0], f_world[i, 1], f_world[i, 2]
            F[0] += f0
            F[1] += f1
            F[2] += f2
            T[0] += d1 * f2 - d2 * f1
            T[1] += d2 * f0 - d0 * f2
            T[2] += d0 * f1 - d1 * f0
            total += fn[i]
            for r in range(3):
                cp[r] += fn[i] * p[i, r]
        for r in range(3):
            W[k, r] = R[0, r] * F[0] + R[1, r] * F[1] + R[2, r] * F[2]
            W[k, 3 + r] = R[0, r] * T[0] + R[1, r] * T[1] + R[2, r] * T[2]
        normal[k] = total
        if total >= min_normal_force:
            for r in range(3):
                cop[k, r] = cp[r] / total
    return W, normal, cop


@kernel((F2,), error_model="numpy")
def hull_2d(points):
    """Counter-clockwise convex hull of 2-D points (Andrew's monotone chain), the compiled
    ``convex_hull``: points rounded to 1e-12 and deduplicated first, so collinear and repeated
    points give the same hull."""
    n = points.shape[0]
    pts = np.empty((n, 2))
    for i in range(n):
        pts[i, 0] = np.round(points[i, 0], 12)
        pts[i, 1] = np.round(points[i, 1], 12)
    order = np.argsort(pts[:, 1], kind="mergesort")  # lexicographic: by x, then y
    pts = pts[order]
    order = np.argsort(pts[:, 0], kind="mergesort")
    pts = pts[order]
    u = np.empty((n, 2))
    k = 0
    for i in range(n):
        if k == 0 or pts[i, 0] != u[k - 1, 0] or pts[i, 1] != u[k - 1, 1]:
            u[k] = pts[i]
            k += 1
    if k <= 2:
        return u[:k].copy()
    hull = np.empty((2 * k, 2))
    h = 0
    for sweep in range(2):
        start = h
        for j in range(k):
            i = j if sweep == 0 else k - 1 - j
            while h - start >= 2:
                o, a = hull[h - 2], hull[h - 1]
                cross = (a[0] - o[0]) * (u[i, 1] - o[1]) - (a[1] - o[1]) * (u[i, 0] - o[0])
                if cross > 0:
                    break
                h -= 1
            hull[h] = u[i]
            h += 1
        h -= 1  # the last point of each chain starts the other
    return hull[:h].copy()


@kernel((F1, F2, f8), error_model="numpy")
def in_polygon(point, polygon, tol):
    """The compiled ``point_in_polygon`` (counter-clockwise convex polygon, or a segment or a
    point)."""
    n = polygon.shape[0]
    if n == 0:
        return False
    if n == 1:
        return np.hypot(point[0] - polygon[0, 0], point[1] - polygon[0, 1]) <= tol
    if n == 2:
        ab0, ab1 = polygon[1, 0] - polygon[0, 0], polygon[1, 1] - polygon[0, 1]
        ap0, ap1 = point[0] - polygon[0, 0], point[1] - polygon[0, 1]
        s = min(1.0, max(0.0, (ap0 * ab0 + ap1 * ab1) / (ab0 * ab0 + ab1 * ab1)))
        return np.hypot(ap0 - s * ab0, ap1 - s * ab1) <= tol
    for i in range(n):
        j = (i + 1) % n
        e0, e1 = polygon[j, 0] - polygon[i, 0], polygon[j, 1] - polygon[i, 1]
        r0, r1 = point[0] - polygon[i, 0], point[1] - polygon[i, 1]
        if e0 * r1 - e1 * r0 < -tol:
            return False
    return True


@kernel((F2, F2s, F2, F1, B1, f8, f8, F2, F1), error_model="numpy")
def support_terms(p, local, fc, phi, active, mu, min_normal_force, R_t, origin):
    """The force ZMP (NaN when Σ f_n < ``min_normal_force``), the support polygon (hull of the
    active points with f_n > 0, surface coordinates), whether the ZMP lies in it (−1: no ZMP),
    the cone violation ``max(‖f_t‖ − μ f_n, 0)``, the most negative normal force of the active
    points (0 if none) and the penetration ``max(0, −min φ)``."""
    m = p.shape[0]
    total = 0.0
    z = np.zeros(3)
    cone, fmin, pen = 0.0, np.inf, 0.0
    sel = np.zeros(m, dtype=np.bool_)
    for i in range(m):
        fn = fc[i, 2]
        total += fn
        for r in range(3):
            z[r] += fn * p[i, r]
        cone = max(cone, np.hypot(fc[i, 0], fc[i, 1]) - mu * fn)
        if active[i]:
            fmin = min(fmin, fn)
            sel[i] = fn > 0.0
        pen = max(pen, -phi[i])
    hull = hull_2d(local[sel])
    zmp = np.full(3, np.nan)
    inside = -1
    if total >= min_normal_force:
        for r in range(3):
            zmp[r] = z[r] / total
        zl = np.empty(2)
        for r in range(2):
            zl[r] = (R_t[r, 0] * (zmp[0] - origin[0]) + R_t[r, 1] * (zmp[1] - origin[1])
                     + R_t[r, 2] * (zmp[2] - origin[2]))
        inside = 1 if in_polygon(zl, hull, 1e-6) else 0
    return zmp, hull, inside, max(cone, 0.0), 0.0 if fmin == np.inf else fmin, pen



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
