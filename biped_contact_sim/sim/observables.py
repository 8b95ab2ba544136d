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
    controllers' ``Measurement.wrenches``.
    """
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

    def observe(self, step: StepResult, q_prev: np.ndarray, v_prev: np.ndarray) -> Observation:
        """Observables of ``step``, taken at the state the forces acted on (q_prev, v_prev)."""
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
