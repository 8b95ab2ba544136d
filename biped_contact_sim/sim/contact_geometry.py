"""Geometry contacts in the step (``Simulator(contacts="geometry")``; docs/methods.md §5.2).

The model is the robot's with the world's free objects appended as free-flyer roots
(``world.build_world_model``: the robot's q, v are a prefix of the whole state). Per step:
pinocchio's ``computeAllTerms`` and ``cholesky.decompose`` (``GeometryWorkspace``), the contact
set from ``collision.Detector``, then ``geometry_step_terms``: for contact i between p₁ on body 1
and p₂ on body 2 with frame ``C_i = [t₁ t₂ n]``,

    φ_i = nᵀ(p₁ − p₂),   v_c,i = C_iᵀ(ṗ₁ − ṗ₂),   J_c,i = C_iᵀ(J₁(p₁) − J₂(p₂)),
    γ_c,i = C_iᵀ(J̇₁v − J̇₂v)   (C_i held fixed over the step),

with J_b(p) the point Jacobian of body b (``robot.kernels.point_terms``; the static world has
none), and the free motion and the factor of M in the buffer the contact models read
(``robot.kernels.step_terms``'s layout). The contact models see only contact-frame quantities,
so a changing number of contacts with non-parallel normals needs nothing more from them; their
per-contact state is keyed by ``ContactState.ids`` (the detector's feature ids).
"""

from __future__ import annotations

import time

import numpy as np
import pinocchio as pin
from numba import njit

from biped_contact_sim.contact import ContactState
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.robot.kernels import (
    clamp_torques,
    free_motion,
    packed_size,
    point_terms,
    unpack,
)
from biped_contact_sim.sim.collision import (
    F_FRAME,
    F_LOCAL1,
    F_LOCAL2,
    I_BODY1,
    I_BODY2,
    CollisionSettings,
    Contacts,
    Detector,
    collision_model,
    detect_finish_kernel,
    stacked_views,
)
from biped_contact_sim.sim.terrain import PlaneTerrain
from biped_contact_sim.sim.world import ContactLaw, Plane, World, build_world_model


# --------------------------------------------------------------------- per-step terms
@njit(cache=True, error_model="numpy")
def geometry_step_terms(J, U, D, nle, v, tau, limit, v_idx, extra, rotations, translations,
                        velocities, accelerations, support, floats, ints):
    """``robot.kernels.step_terms`` for contacts between two bodies: the point terms of p₁ on
    body 1 minus those of p₂ on body 2 (``J_c = Cᵀ(J₁ − J₂)``, ``γ_c``, ``v_c`` likewise;
    body 0, the world, contributes nothing), then ``free_motion``. The gap is ``nᵀ(p₁ − p₂)``
    with both points moved with their bodies from where they were detected (``local1``,
    ``local2`` in the joint frames). ``floats``, ``ints``: the contact set's two arrays
    (``collision.Contacts``).

    Returns:
        W, p₁ (m, 3), phi, vc, the joint placements ``[R_b | t_b]`` (njoints, 3, 4), finite
        (``step_terms``'s buffer layout).
    """
    nv = v.shape[0]
    nj = tau.shape[0]
    m = floats.shape[0]
    body1 = ints[:, I_BODY1]
    body2 = ints[:, I_BODY2]
    local1 = floats[:, F_LOCAL1:F_LOCAL1 + 3]
    local2 = floats[:, F_LOCAL2:F_LOCAL2 + 3]
    frames = np.empty((m, 3, 3))
    for i in range(m):
        for r in range(3):
            for c in range(3):
                frames[i, r, c] = floats[i, F_FRAME + 3 * r + c]
    W = np.empty(packed_size(m, nv, nj))
    Jc_o, gc_o, X_o, U_o, D_o, tf_o, af_o, tc_o = unpack(W, m, nv, nj)
    finite = clamp_torques(tau, limit, tc_o)
    origin = np.zeros((m, 3))  # point_terms reads origins[i] (its phi is not used)
    p, phi, pt, vc, placements = point_terms(J, v, rotations, translations, velocities,
                                             accelerations, support, body1, local1, frames,
                                             origin, Jc_o, gc_o)
    moving2 = False
    for i in range(m):
        moving2 = moving2 or body2[i] != 0
    if moving2:  # some body 2 moves: its point terms come off body 1's
        Jc2 = np.empty((3 * m, nv))
        gc2 = np.empty(3 * m)
        p2, _, _, vc2, _ = point_terms(J, v, rotations, translations, velocities,
                                       accelerations, support, body2, local2, frames, origin,
                                       Jc2, gc2)
        for r in range(3 * m):
            gc_o[r] -= gc2[r]
            for k in range(nv):
                Jc_o[r, k] -= Jc2[r, k]
        for i in range(m):
            for c in range(3):
                vc[i, c] -= vc2[i, c]
    else:  # every body 2 is the static world: p₂ = local2, no motion (the same numbers)
        p2 = local2
    for i in range(m):
        C = frames[i]
        phi[i] = C[0, 2] * (p[i, 0] - p2[i, 0]) + C[1, 2] * (p[i, 1] - p2[i, 1]) \
            + C[2, 2] * (p[i, 2] - p2[i, 2])
    free_motion(U, D, nle, tc_o, v_idx, extra, Jc_o, tf_o, af_o, X_o, U_o, D_o)
    return W, p, phi, vc, placements, finite


@njit(cache=True, error_model="numpy")
def detect_step_terms(kind, joint, gR, gt, half, radius, group, gmat, rotations, translations,
                      plane_n, plane_o, plane_mat, box_R, box_t, box_half, box_mat, mu_table,
                      margin, B1, B2, P1, P2, N, GAP, KEY, MU, ANC, G1, OTH, FALLBACK, e_table,
                      feature_mat, ground, J, U, D, nle, v, tau, limit, v_idx, extra, velocities,
                      accelerations, support):
    """The step's detection and its terms in one call: ``collision.detect_finish_kernel``
    (its arguments first, as ``Detector.kernel_args``), then ``geometry_step_terms`` on the
    set it found. When the detection needs Python (n < 0: work arrays too short; nf > 0:
    pairs for coal) the terms are left out (empty) and the caller finishes both apart.

    Returns:
        n, nf, the set's (floats, ints), then ``geometry_step_terms``'s W, p₁, phi, vc, joint
        placements, finite.
    """
    n, nf, floats, ints = detect_finish_kernel(
        kind, joint, gR, gt, half, radius, group, gmat, rotations, translations, plane_n,
        plane_o, plane_mat, box_R, box_t, box_half, box_mat, mu_table, margin, B1, B2, P1, P2,
        N, GAP, KEY, MU, ANC, G1, OTH, FALLBACK, e_table, feature_mat, ground)
    if n < 0 or nf > 0:
        floats = np.empty((0, floats.shape[1]))
        ints = np.empty((0, ints.shape[1]), dtype=np.int64)
    W, p, phi, vc, placements, finite = geometry_step_terms(
        J, U, D, nle, v, tau, limit, v_idx, extra, rotations, translations, velocities,
        accelerations, support, floats, ints)
    return n, nf, floats, ints, W, p, phi, vc, placements, finite


class GeometryWorkspace:
    """Pinocchio's per-step terms of a model with geometry contacts (``TermsWorkspace`` for
    every joint): ``computeAllTerms`` and ``cholesky.decompose``, the arrays held as views.

    Attributes:
        support: (njoints, nv) bool, the velocity components that move joint j (row 0, the
            universe, is empty: the static world contributes nothing to ``J_c``).
    """

    def __init__(self, model: pin.Model, data: pin.Data):
        self.model, self.data = model, data
        self.support = np.zeros((model.njoints, model.nv), dtype=bool)
        for j in range(1, model.njoints):
            for k in model.supports[j]:
                if k > 0:
                    self.support[j, model.idx_vs[k]:model.idx_vs[k] + model.nvs[k]] = True
        self._live = self._terms_live = False
        self.compute(pin.neutral(model), np.zeros(model.nv))
        # eigenpy hands out views of Data's J, nle, U, D: held once when the held arrays follow
        # a new computation (as ``TermsWorkspace``), else fetched again at every step
        held = (self.J, self.nle, self.U, self.D)
        before = [x.copy() for x in held]
        self.compute(pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq)),
                     np.ones(model.nv))
        fresh = (data.J, data.nle, data.U, data.D)
        self._terms_live = all(np.array_equal(a, b) for a, b in zip(held, fresh, strict=True)) \
            and any(np.any(a != b) for a, b in zip(held, before, strict=True))
        self.compute(pin.neutral(model), np.zeros(model.nv))

    def compute(self, q: np.ndarray, v: np.ndarray) -> None:
        """Run pinocchio's algorithms at (q, v) and take the views of the results."""
        model, data = self.model, self.data
        pin.computeAllTerms(model, data, q, v)
        pin.cholesky.decompose(model, data)
        if self._terms_live and self._live:
            return
        self.J, self.nle, self.U, self.D = data.J, data.nle, data.U, data.D
        if self._live:
            return
        # per-joint placements and motions as one strided view each (collision.stacked_views),
        # taken once; copies re-taken at each step where eigenpy hands out copies
        r = range(model.njoints)
        self.rotations, live_r = stacked_views([data.oMi[j].rotation for j in r])
        self.translations, live_t = stacked_views([data.oMi[j].translation for j in r])
        self.velocities, live_v = stacked_views([data.v[j].vector for j in r])
        self.accelerations, live_a = stacked_views([data.a[j].vector for j in r])
        self._live = live_r and live_t and live_v and live_a


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
        self.placements: np.ndarray | None = None

    def detect(self) -> Contacts:
        """The contacts at the configuration of the last ``workspace.compute``."""
        if not self.timed:
            return self.detector.detect(self.data)
        t0 = time.thread_time()  # CPU time, as biped-sim bench times the steps
        contacts = self.detector.detect(self.data)
        self.detect_time += time.thread_time() - t0
        self.detect_calls += 1
        return contacts

    def detect_state(self, v: np.ndarray, tau: np.ndarray, limit: np.ndarray,
                     v_idx: np.ndarray, extra: np.ndarray, dt: float,
                     nj: int) -> tuple[Contacts, np.ndarray, np.ndarray, ContactState, bool]:
        """``detect`` then ``state`` (one compiled call, ``detect_step_terms``, unless the
        detection is timed or needs Python): ``(contacts, W, p₁, ContactState, finite)``."""
        if self.timed:
            contacts = self.detect()
            return (contacts, *self.state(v, tau, limit, v_idx, extra, dt, nj, contacts))
        ws = self.workspace
        n, nf, floats, ints, W, p, phi, vc, placements, finite = detect_step_terms(
            *self.detector.kernel_args(self.data), ws.J, ws.U, ws.D, ws.nle, v, tau, limit,
            v_idx, extra, ws.velocities, ws.accelerations, ws.support)
        if n < 0 or nf:
            contacts = self.detector.finish(self.data, n, nf)
            return (contacts, *self.state(v, tau, limit, v_idx, extra, dt, nj, contacts))
        contacts = self.detector.contacts(floats, ints)
        self.placements = placements
        state = ContactState.from_packed(dt, phi, vc, contacts.p_tangent, contacts.mu,
                                         contacts.ids, (W, n, self.model.nv, nj))
        return contacts, W, p, state, finite

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
        state = ContactState.from_packed(dt, phi, vc, contacts.p_tangent, contacts.mu,
                                         contacts.ids, (W, len(phi), self.model.nv, nj))
        self.placements = placements
        return W, p, state, finite
