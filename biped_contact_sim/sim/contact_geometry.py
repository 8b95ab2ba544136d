"""Geometry contacts in the step (``Simulator(contacts="geometry")``; docs/methods.md §5.2).

The model is the robot's with the world's free objects appended as free-flyer roots
(``world.build_world_model``: the robot's q, v are a prefix of the whole state). Per step:
pinocchio's ``computeAllTerms`` and ``cholesky.decompose`` (``GeometryWorkspace``), the contact
set from ``collision.Detector``, then ``geometry_step_terms``: for contact i between p₁ on body 1
and p₂ on body 2 with frame ``C_i = [t₁ t₂ n]``,

    φ_i = nᵀ(p₁ − p₂),   v_c,i = C_iᵀ(ṗ₁ − ṗ₂),   J_c,i = C_iᵀ(J₁(p₁) − J₂(p₂)),
    γ_c,i = C_iᵀ(J̇₁v − J̇₂v)   (C_i held fixed over the step),

with J_b(p) the point Jacobian of body b (``robot.model_kernels.point_terms``; the static world has
none), the normal drift then made the gap's own on curved surfaces (``curved_drift``), and the
free motion and the factor of M in the buffer the contact models read
(``robot.model_kernels.step_terms``'s layout). The contact models see only contact-frame quantities,
so a changing number of contacts with non-parallel normals needs nothing more from them; their
per-contact state is keyed by ``ContactState.ids`` (the detector's feature ids).
"""

from __future__ import annotations

import time

import numpy as np

from biped_contact_sim.contact import ContactState
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.robot.model import DataViews
from biped_contact_sim.robot.model_kernels import (
    packed_size,
)
from biped_contact_sim.sim.collision import (
    CollisionSettings,
    Contacts,
    Detector,
    collision_model,
)
from biped_contact_sim.sim.collision_kernels import (
    F_COLS,
    F_MU,
    F_PT,
    I_ID,
    KIND_CYLINDER,
    KIND_SPHERE,
)
from biped_contact_sim.sim.contact_geometry_kernels import (
    curved_drift,
    detect_step,
    geometry_step_terms,
)
from biped_contact_sim.sim.terrain import PlaneTerrain
from biped_contact_sim.sim.world import ContactLaw, Plane, World, build_world_model


def step_out_views(out: np.ndarray, m: int,
                   nj: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Views of ``detect_step``'s output: the contact set's floats (m, ``F_COLS``), phi (m,),
    vc (m, 3) and the clamped τ (nj,) (``step_points``: p₁; ``step_placements``: the joint
    placements)."""
    o1 = m * (F_COLS + 3)
    o2 = o1 + m
    o3 = o2 + 3 * m
    return out[:m * F_COLS].reshape(m, F_COLS), out[o1:o2], out[o2:o3].reshape(m, 3), \
        out[o3:o3 + nj]


def step_points(out: np.ndarray, m: int, nj: int, nb: int) -> np.ndarray:
    """p₁ (m, 3) in ``detect_step``'s output."""
    return out[m * F_COLS:m * (F_COLS + 3)].reshape(m, 3)


def step_placements(out: np.ndarray, m: int, nj: int, nb: int) -> np.ndarray:
    """The joint placements (nb, 3, 4) in ``detect_step``'s output."""
    o = m * (F_COLS + 7) + nj
    return out[o:o + 12 * nb].reshape(nb, 3, 4)


class GeometryWorkspace(DataViews):
    """Pinocchio's per-step terms of a model with geometry contacts (``robot.model.DataViews``
    of every joint: a contact can involve any link)."""


def world_from_terrain(terrain: PlaneTerrain) -> World:
    """The world of a scenario without a world file: its ground or ramp plane and μ."""
    return World((Plane("ground", terrain.normal, np.array([0.0, 0.0, terrain.height]),
                        "default"),), default=ContactLaw(terrain.mu))


class GeometryContacts:
    """The simulator's geometry-contact path: the whole model, its Data, the detector.

    Args:
        robot: the robot (its collision geometry: ``collision.collision_model``, the URDF's
            ``<collision>`` tags unless the robot brings its own).
        world: the world (``world_from_terrain`` for a plain ground).
        settings: detection settings.

    Attributes:
        model, data: robot + free objects (pinocchio); object_joints: each object's joint.
        nq_robot, nv_robot: the robot's prefix of q and v.
        timed: time each detection (``biped-sim bench`` sets it; off by default: the two
            CPU-clock reads cost about 3 µs, a sixth of a detection).
        placements: (njoints, 3, 4) the joint placements ``[R_b | t_b]`` of the last ``state``
            (a copy: the observers read them after the Data moved on).
        detect_time: CPU seconds (this thread) spent in timed detections; detect_calls: how
            many were timed.
    """

    def __init__(self, robot: RobotModel, world: World, settings: CollisionSettings | None):
        self.robot, self.world = robot, world
        self.model, self.object_joints = build_world_model(robot.model, world)
        self.detector = Detector(self.model, collision_model(robot), world, self.object_joints,
                                 settings)
        self.data = self.model.createData()
        self.workspace = GeometryWorkspace(self.model, self.data)
        self.nq_robot, self.nv_robot = robot.nq, robot.nv
        self.timed = False
        self.detect_time, self.detect_calls = 0.0, 0
        self._placements: np.ndarray | None = None
        #: ``(out, m, nj, nb)`` of the last ``detect_step`` (``placements`` read from it)
        self.step_out: tuple | None = None
        self._placements_of: tuple | None = None
        self._step_args: tuple | None = None
        self._nb, self._nv = self.model.njoints, self.model.nv
        self._joint_names = self.detector._joint_names
        g, det = self.detector.geoms, self.detector
        #: ``curved_drift``'s fixed arguments, or None when no geometry is a sphere or cylinder
        self._curved = (g.kind, g.half, g.R, g.t, g.joint,
                        len(det.plane_n) + len(det.box_R)) \
            if np.isin(g.kind, (KIND_SPHERE, KIND_CYLINDER)).any() else None

    def curve(self, W: np.ndarray, m: int, floats: np.ndarray, ints: np.ndarray) -> None:
        """The normal drifts of the contacts on spheres and cylinders in W made the gaps'
        (``curved_drift``), from the placements and velocities of the last ``compute``."""
        if self._curved is not None and m:
            ws = self.workspace
            curved_drift(W, m, self._nv, len(W) - packed_size(m, self._nv, 0), floats, ints,
                         *self._curved, ws.rotations, ws.velocities)

    def detect(self) -> Contacts:
        """The contacts at the configuration of the last ``workspace.compute``."""
        if not self.timed:
            return self.detector.detect(self.data)
        t0 = time.thread_time()  # CPU time, as biped-sim bench times the steps
        contacts = self.detector.detect(self.data)
        self.detect_time += time.thread_time() - t0
        self.detect_calls += 1
        return contacts

    def step_args(self, limit: np.ndarray, v_idx: np.ndarray, extra: np.ndarray) -> tuple:
        """``detect_step``'s arguments but v and τ (one tuple, kept while the arrays in it are
        the ones the Data and the detector hold)."""
        det = self.detector.kernel_args(self.data)
        cached = self._step_args
        if cached is not None and cached[0] is det and cached[1] is extra \
                and cached[2] is limit and cached[3] is v_idx:
            return cached[4]
        ws = self.workspace
        args = (*det, ws.velocities, ws.accelerations, ws.J, ws.U, ws.D, ws.nle, limit, v_idx,
                extra, ws.support)
        live = ws.live and self.detector._args is not None
        self._step_args = (det, extra, limit, v_idx, args) if live else None
        return args

    def detect_state(self, v: np.ndarray, tau: np.ndarray, limit: np.ndarray,
                     v_idx: np.ndarray, extra: np.ndarray, dt: float,
                     nj: int) -> tuple[Contacts, np.ndarray, np.ndarray, ContactState, bool]:
        """``detect`` then ``state`` (one compiled call, ``detect_step``, unless the detection
        is timed or needs Python): ``(contacts, W, p₁, ContactState, finite)``."""
        if self.timed:
            contacts = self.detect()
            return (contacts, *self.state(v, tau, limit, v_idx, extra, dt, nj, contacts))
        n, nf, finite, W, out, ints = detect_step(*self.step_args(limit, v_idx, extra), v, tau)
        if n < 0 or nf:
            contacts = self.detector.finish(self.data, n, nf)
            return (contacts, *self.state(v, tau, limit, v_idx, extra, dt, nj, contacts))
        floats, phi, vc, _ = step_out_views(out, n, nj)
        self.curve(W, n, floats, ints)
        contacts = Contacts(floats, ints, self._joint_names)
        self.step_out = (out, n, nj, self._nb)
        p = step_points(out, n, nj, self._nb)
        state = ContactState.from_packed(dt, phi, vc, floats[:, F_PT:F_PT + 2], floats[:, F_MU],
                                         ints[:, I_ID], (W, n, self._nv, nj))
        return contacts, W, p, state, finite

    @property
    def placements(self) -> np.ndarray | None:
        """(njoints, 3, 4) the joint placements ``[R_b | t_b]`` of the last ``state`` or
        ``detect_state`` (a copy: the observers read them after the Data moved on)."""
        src = self.step_out
        if src is not None and self._placements_of is not src:
            self._placements, self._placements_of = step_placements(*src), src
        return self._placements

    @placements.setter
    def placements(self, value: np.ndarray | None) -> None:
        self._placements, self.step_out = value, None

    def state(self, v: np.ndarray, tau: np.ndarray, limit: np.ndarray, v_idx: np.ndarray,
              extra: np.ndarray, dt: float, nj: int,
              contacts: Contacts) -> tuple[np.ndarray, np.ndarray, ContactState, bool]:
        """``(W, p₁, ContactState, finite)`` at the last ``workspace.compute`` for ``contacts``
        (detected there, or at the step's start for the RK4 stages: the same feature points,
        their gaps and Jacobians at the stage's configuration)."""
        ws = self.workspace
        W, p, phi, vc, placements, finite = geometry_step_terms(
            ws.J, ws.U, ws.D, ws.nle, v, tau, limit, v_idx, extra, ws.rotations,
            ws.translations, ws.velocities, ws.accelerations, ws.support, contacts.floats,
            contacts.ints)
        self.curve(W, len(phi), contacts.floats, contacts.ints)
        state = ContactState.from_packed(dt, phi, vc, contacts.p_tangent, contacts.mu,
                                         contacts.ids, (W, len(phi), self.model.nv, nj))
        self.placements = placements
        return W, p, state, finite
