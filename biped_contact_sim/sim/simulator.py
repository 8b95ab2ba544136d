"""Fixed-step simulator: one data flow per step.

    state, τ → robot terms → contact model → integrator → StepResult

Dynamics (docs/methods.md §1): ``M v̇ = Sᵀτ − h + J_cᵀ f``. Integrators:

* ``semi_implicit_euler`` (default, symplectic): ``v⁺ = v + dt v̇``, ``q⁺ = integrate(q, dt v⁺)``,
  with the momentum of free rigid bodies carried through the step's rotation (their centre
  moves straight, midpoint gyroscopic term; ``sim.integrator``, docs/methods.md §1.1);
* ``rk4`` (force-based models only): RK4 on the configuration manifold, the contact forces
  re-evaluated at every stage (``sim.rk4``).

One step path (``Simulator.step``); what varies is data: where the step's terms come from (one
compiled call on pinocchio's arrays for points or geometry contacts, or ``contact_state`` with
external forces, free objects or RK4) and which integrator advances the state.

Torques are a zero-order hold over the step, clamped to the URDF effort limits. A state that
becomes NaN/Inf or faster than ``max_speed`` raises ``DivergenceError`` and is not committed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from biped_contact_sim.contact import ContactModel, ContactState
from biped_contact_sim.errors import DIVERGED, ConfigError, DivergenceError, InputError
from biped_contact_sim.robot import RobotModel, TermsWorkspace
from biped_contact_sim.robot.model_kernels import (
    clamp_torques,
    euler_into,
    pack_points,
    packed_size,
    points_out_size,
    points_placements,
    points_positions,
    points_step,
    points_views,
    step_terms,
)
from biped_contact_sim.sim.collision import CollisionSettings, Contacts
from biped_contact_sim.sim.collision_kernels import F_COLS, F_MU, F_PT, I_ID
from biped_contact_sim.sim.contact_geometry import (
    GeometryContacts,
    step_placements,
    step_points,
    world_from_terrain,
)
from biped_contact_sim.sim.contact_geometry_kernels import detect_step
from biped_contact_sim.sim.integrator import free_bodies, momentum_size
from biped_contact_sim.sim.integrator_kernels import contact_energy, momentum_terms, transport
from biped_contact_sim.sim.rk4 import rk4_step
from biped_contact_sim.sim.step_result import _EMPTY, _LAZY, StepResult, StepTerms
from biped_contact_sim.sim.terrain import PlaneTerrain
from biped_contact_sim.sim.world import World, object_state

_F64 = np.dtype(np.float64)  # native float64 (an identity test: cheaper than ==)

#: |‖quaternion‖ − 1| allowed in a configuration given to ``Simulator.reset``
QUATERNION_NORM_TOL = 1e-6
#: pinocchio joints whose configuration holds a unit quaternion (x, y, z, w): its offset in q
_QUATERNION_OFFSET = {"JointModelFreeFlyer": 3, "JointModelSpherical": 0}


def non_unit_quaternion(model: pin.Model, q: np.ndarray) -> str | None:
    """What is wrong with the first quaternion of ``q`` whose norm is not 1 within
    ``QUATERNION_NORM_TOL`` (free-flyer and spherical joints), or None if there is none.

    ``Simulator.reset`` refuses such a configuration rather than normalising it: a zero or
    far-from-unit quaternion is a caller's bug (a half-built state, a wrong index), and a
    silently normalised one would start the run from another pose than the one given.
    """
    for joint, name in zip(model.joints, model.names, strict=True):
        offset = _QUATERNION_OFFSET.get(joint.shortname())
        if offset is None:
            continue
        start = joint.idx_q + offset
        quat = q[start:start + 4]
        norm = float(np.linalg.norm(quat))
        if abs(norm - 1.0) > QUATERNION_NORM_TOL:
            return (f"the quaternion of joint {name!r}, q[{start}:{start + 4}] = "
                    f"{np.array2string(quat, precision=6)}, has norm {norm:.9g}; it must be "
                    f"a unit quaternion (|norm - 1| <= {QUATERNION_NORM_TOL:g}; "
                    "pinocchio.normalize(model, q) makes one)")
    return None


INTEGRATORS = ("semi_implicit_euler", "rk4")
#: ``points``: the configured sole points against the terrain plane (the papers' contacts);
#: ``geometry``: every collision geometry against the world (``sim.contact_geometry``)
CONTACT_MODES = ("points", "geometry")


@dataclass(frozen=True)
class SimSettings:
    """Simulator settings.

    Attributes:
        dt: physics step [s].
        integrator: one of ``INTEGRATORS``.
        max_speed: any |v| component above this [m/s or rad/s] counts as divergence.
    """

    dt: float = 1e-3
    integrator: str = "semi_implicit_euler"
    max_speed: float = 1e3

    def __post_init__(self):
        if not (np.isfinite(self.dt) and 0 < self.dt <= 0.1):
            raise ConfigError(f"dt = {self.dt!r} must be in (0, 0.1] s")
        if self.integrator not in INTEGRATORS:
            raise ConfigError(f"Unknown integrator: {self.integrator!r}. Valid names: "
                              + ", ".join(INTEGRATORS))


@dataclass(frozen=True)
class ExternalForce:
    """A world-frame force applied at the origin of a frame for ``t_start ≤ t < t_end``.

    Enters the dynamics as ``J_frame,linᵀ F`` (a push on the pelvis, a disturbance).
    """

    frame: str
    force: tuple[float, float, float]
    t_start: float = 0.0
    t_end: float = float("inf")


class Simulator:
    """Steps a ``RobotModel`` on a ``PlaneTerrain`` (or in a ``World``) with a contact model.

    Args:
        robot: the robot model (its pinocchio model is shared, never mutated).
        contact: a contact model from ``biped_contact_sim.contact.make_contact_model``.
        terrain: the ground or ramp.
        settings: step size and integrator.
        world: the world of ``contacts="geometry"`` (default: the terrain's plane and μ).
        contacts: one of ``CONTACT_MODES``. With ``geometry`` the free objects of the world
            are bodies of the dynamics after the robot: ``q``, ``v`` stay the robot's,
            ``q_objects``, ``v_objects`` hold the objects' (7 and 6 per object).
        collision: detection settings (``geometry``).

    Raises:
        ConfigError: the contact model refuses dt/integrator (e.g. penalty_fl with dt·k_v ≥ 2)
            or its stiffness for this robot's inertia (spring_damper, ``check_inertia``); an
            unknown contact mode; a world with boxes or objects for ``points`` contacts.
    """

    def __init__(self, robot: RobotModel, contact: ContactModel,
                 terrain: PlaneTerrain | None = None, settings: SimSettings | None = None,
                 world: World | None = None, contacts: str = "points",
                 collision: CollisionSettings | None = None):
        self.robot = robot
        self.contact = contact
        self.terrain = terrain or PlaneTerrain()
        self.settings = settings or SimSettings()
        contact.check(self.settings.dt, self.settings.integrator)
        if contacts not in CONTACT_MODES:
            raise ConfigError(f"Unknown contacts mode {contacts!r}. Valid: "
                              + ", ".join(CONTACT_MODES))
        self.contacts = contacts
        self.geometry: GeometryContacts | None = None
        if contacts == "geometry":
            self.world = world if world is not None else world_from_terrain(self.terrain)
            self.geometry = GeometryContacts(robot, self.world, collision)
            self.model = self.geometry.model
            self.data = self.geometry.data
            self.workspace = self.geometry.workspace
        else:
            if world is not None and (world.boxes or world.objects or len(world.planes) > 1):
                raise ConfigError("a world with boxes, objects or several planes needs "
                                  "contacts: geometry (points contacts touch one plane)")
            self.world = world
            self.model = robot.model
            self.data = robot.create_data()
            self.workspace = TermsWorkspace(robot, self.data)
        self._contact_set: Contacts | None = None
        self._joint_placements: np.ndarray | None = None
        self.q_objects, self.v_objects = object_state(self.world) if self.geometry else \
            (_EMPTY, _EMPTY)
        self._external: list[tuple[ExternalForce, int, np.ndarray]] = []
        self._R = self.terrain.R
        self._frames = self._R[None].copy()  # one contact frame shared by every point
        self._origins = np.array([[0.0, 0.0, self.terrain.height]])
        self._limit = robot.effort_limit
        self._mu = np.full(robot.n_points, self.terrain.mu)
        self._ids = np.arange(robot.n_points)
        self._v_idx = robot.v_idx.astype(np.int64)
        self._zero_nv = np.zeros(self.model.nv)
        self._n_joints = robot.n_joints
        self._nv = self.model.nv
        self._has_objects = self.model.nq != robot.nq
        self._f_ext: np.ndarray | None = None
        self._tau_ext: np.ndarray | None = None
        self._euler = self.settings.integrator == "semi_implicit_euler"
        # semi-implicit Euler carries free bodies' momentum through their rotation
        # (sim.integrator)
        self._ff_v, self._ff_q, self._ff_com = free_bodies(self.model)
        self._transport = self._euler and len(self._ff_v) > 0
        self._mt = np.empty(momentum_size(self._nv, len(self._ff_v)))
        self._R_world = None if self.terrain.flat else self._R  # f_world = f Rᵀ (None: f)
        self._tau_shape = (self._n_joints,)
        self._dt, self._max_speed = self.settings.dt, self.settings.max_speed
        # ``step``'s terms in one compiled call (the common case), when the arrays it reads
        # are views that follow the Data; else (and with external forces) ``contact_state``
        self._fast = None
        self._refresh_geo_args = False
        if self.geometry is not None:
            geo = self.geometry
            self._nb, self._joint_names = self.model.njoints, geo.detector._joint_names
            self._geo_args = geo.step_args(self._limit, self._v_idx, self._zero_nv)
            if self._euler and not self._has_objects and geo.workspace.live \
                    and geo._step_args is not None and type(self).contact_state is \
                    Simulator.contact_state:
                self._fast = self._geometry_terms
        elif self._euler and type(self).contact_state is Simulator.contact_state:
            self._points_setup(robot)
        # Geometry contacts: the neutral configuration buries every link in the ground, so
        # spring_damper's stability check waits for the first configuration a caller sets.
        self._inertia_checked = self.geometry is not None
        self.reset(pin.neutral(robot.model))
        self._inertia_checked = self._inertia_checked and self.geometry is None

    def _points_setup(self, robot: RobotModel) -> None:
        """``_points_terms``' fixed arguments, when pinocchio's arrays are views that follow
        the Data (else ``step`` takes its terms from ``contact_state``)."""
        ws = self.workspace
        if not ws.live:
            return
        static_f, static_i = pack_points(self._limit, self._v_idx, ws.point_body,
                                         ws.joint_ids, ws.support, ws.local, self._frames[0],
                                         self._origins[0])
        self._points_args = (static_f, static_i, self._zero_nv, ws.rotations, ws.translations,
                             ws.velocities, ws.accelerations, ws.J, ws.U, ws.D, ws.nle)
        self._m, self._nb = robot.n_points, len(ws.joint_ids)
        self._W_size = packed_size(self._m, self._nv, self._n_joints)
        self._out_size = points_out_size(self._m, self._n_joints, self._nb)
        self._fast = self._points_terms

    @property
    def dt(self) -> float:
        return self.settings.dt

    def reset(self, q: np.ndarray, v: np.ndarray | None = None, t: float = 0.0,
              q_objects: np.ndarray | None = None, v_objects: np.ndarray | None = None) -> None:
        """Set the robot's state (and forget the contact model's internal state); the free
        objects' state is the world's initial one unless given.

        Raises:
            InputError: wrong lengths, a value that is not finite or a quaternion whose norm is
                not 1 (``non_unit_quaternion``); nothing changes.
        """
        if self.geometry is not None:
            q0, v0 = object_state(self.world)
            q_objects = q0 if q_objects is None else np.asarray(q_objects, float)
            v_objects = v0 if v_objects is None else np.asarray(v_objects, float)
            if q_objects.shape != q0.shape or v_objects.shape != v0.shape or not (
                    np.isfinite(q_objects).all() and np.isfinite(v_objects).all()):
                raise InputError(f"reset: q_objects must have {len(q0)} and v_objects "
                                 f"{len(v0)} finite values")
        q = np.asarray(q, float)
        v = np.zeros(self.robot.nv) if v is None else np.asarray(v, float)
        if q.shape != (self.robot.nq,) or v.shape != (self.robot.nv,):
            raise InputError(f"reset: q must have length {self.robot.nq} and v {self.robot.nv}; "
                             f"got {q.shape} and {v.shape}")
        if not (np.isfinite(q).all() and np.isfinite(v).all() and np.isfinite(t)):
            raise InputError("reset: q, v and t must be finite")
        bad = non_unit_quaternion(self.model, np.concatenate([q, q_objects])
                                  if self._has_objects else q)
        if bad is not None:
            raise InputError(f"reset: {bad}")
        self.q, self.v, self.t = q.copy(), v.copy(), float(t)
        if self.geometry is not None:
            self.q_objects, self.v_objects = q_objects.copy(), v_objects.copy()
        self.contact.reset(self.robot.n_points)
        if not self._inertia_checked and self.robot.n_points:
            # Mass-dependent stability (spring_damper), at the first configuration set.
            _, state = self.contact_state(*self.full_state(), np.zeros(self._n_joints))
            if state.n_points:
                self.contact.check_inertia(self.settings.dt,
                                           state.delassus(np.arange(state.n_points))[0])
                self._inertia_checked = True

    def full_state(self) -> tuple[np.ndarray, np.ndarray]:
        """(q, v) of the whole model: the robot's, then the free objects' (geometry)."""
        if not self._has_objects:
            return self.q, self.v
        return np.concatenate([self.q, self.q_objects]), np.concatenate([self.v, self.v_objects])

    def energy(self) -> float:
        """Kinetic + potential energy of every body (robot and objects) at the state [J]."""
        q, v = self.full_state()
        return float(pin.computeKineticEnergy(self.model, self.data, q, v)
                     + pin.computePotentialEnergy(self.model, self.data, q))

    def add_external_force(self, external: ExternalForce) -> None:
        """Schedule an external force (kept across ``reset``; ``clear_external_forces``).

        Raises:
            ConfigError: unknown frame (listing the model's frames) or a malformed force.
        """
        model = self.model
        if not model.existFrame(external.frame):
            raise ConfigError(f"Unknown frame {external.frame!r} for an external force. "
                              f"Frames: {', '.join(f.name for f in model.frames)}")
        force = np.asarray(external.force, float)
        if force.shape != (3,) or not np.isfinite(force).all():
            raise ConfigError(f"external force {external.force!r} must be 3 finite numbers [N]")
        self._external.append((external, model.getFrameId(external.frame), force))

    def clear_external_forces(self) -> None:
        self._external = []

    def _external_force(self, t: float) -> tuple[np.ndarray, np.ndarray | None]:
        """``Σ J_linᵀ F`` of the forces active at t (after ``workspace.compute``) and their sum
        (None when none is active)."""
        gen, total = self._zero_nv, None
        for ext, frame_id, force in self._external:
            if ext.t_start <= t < ext.t_end:
                J = pin.getFrameJacobian(self.model, self.data, frame_id,
                                         pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)[:3]
                gen = gen + J.T @ force
                total = force if total is None else total + force
        return gen, total

    def clamp_torque(self, tau) -> np.ndarray:
        """Validate τ (length n, finite) and clamp it to the effort limits.

        Raises:
            InputError: wrong length or NaN/Inf; the state is unchanged.
        """
        tau = self._torque(tau)
        out = np.empty(self._n_joints)
        if not clamp_torques(tau, self._limit, out):
            raise InputError("torque command contains NaN or Inf")
        return out

    def contact_state(self, q: np.ndarray, v: np.ndarray, tau: np.ndarray,
                      contacts: Contacts | None = None,
                      momentum: bool = True) -> tuple[StepTerms, ContactState]:
        """The contact model's view of (q, v) under τ: points in contact frames, Jacobians,
        drifts and the factor of M (``TermsWorkspace``, ``robot.model_kernels.step_terms``); also
        sets the external force active at the current time.

        With geometry contacts, q and v are the whole model's (``full_state``; the robot's
        alone when there are no objects) and the contact set is detected at q (kept in
        ``last_contacts``) unless ``contacts`` is given (RK4 stages).

        With semi-implicit Euler and free rigid bodies, the state is the step's: τ_free and the
        drifts carry the momentum terms of ``sim.integrator`` (so a contact model asked here
        answers what the step will ask it); ``momentum=False`` leaves them out (the geometric
        drifts alone).

        Raises:
            InputError: τ has the wrong length or is not finite.
        """
        tau = self._torque(tau)
        ws = self.workspace
        ws.compute(q, v)
        extra = self._zero_nv
        self._f_ext = self._tau_ext = None
        if self._external:
            extra, self._f_ext = self._external_force(self.t)
            if self._f_ext is not None:
                self._tau_ext = extra
        if self.geometry is not None:
            if contacts is None:  # detected here (one compiled call with the terms)
                contacts, W, p, state, finite = self.geometry.detect_state(
                    v, tau, self._limit, self._v_idx, extra, self.settings.dt, self._n_joints)
                self._contact_set = contacts
                self._joint_placements = self.geometry.placements  # the step's start
            else:  # an RK4 stage: the step's contact set
                W, p, state, finite = self.geometry.state(
                    v, tau, self._limit, self._v_idx, extra, self.settings.dt, self._n_joints,
                    contacts)
            if not finite:
                raise InputError("torque command contains NaN or Inf")
            if self._transport and momentum:
                momentum_terms(W, state.n_points, self._nv, self._n_joints, v, self._ff_v,
                               self._ff_com, self._mt)
            return StepTerms(p, None, W, self._n_joints), state
        W, p, phi, pt, vc, placements, finite = step_terms(
            ws.J, ws.U, ws.D, ws.nle, v, tau, self._limit, self._v_idx, extra, ws.rotations,
            ws.translations, ws.velocities, ws.accelerations, ws.support, ws.point_body,
            ws.joint_ids, ws.local, self._frames, self._origins)
        if not finite:
            raise InputError("torque command contains NaN or Inf")
        state = ContactState.from_packed(self.settings.dt, phi, vc, pt, self._mu, self._ids,
                                         (W, len(phi), self._nv, self._n_joints))
        if self._transport and momentum:
            momentum_terms(W, len(phi), self._nv, self._n_joints, v, self._ff_v, self._ff_com,
                           self._mt)
        return StepTerms(p, placements, W, self._n_joints), state

    @property
    def last_contacts(self) -> Contacts | None:
        """The geometry contact set of the last ``contact_state`` (None for points)."""
        return self._contact_set

    # ------------------------------------------------------------------ the step
    def step(self, tau) -> StepResult:
        """Advance one step under the zero-order-hold torque τ (clamped to the effort limits):
        the step's terms (``_fast``: one compiled call that reads pinocchio's arrays, in the
        common case; else ``contact_state``), the contact model, the integrator, the result.

        Raises:
            InputError: malformed τ (nothing changes).
            DivergenceError: the new state is NaN/Inf or too fast (not committed).
        """
        if type(tau) is not np.ndarray or tau.dtype is not _F64 or tau.shape != self._tau_shape:
            tau = self._torque(tau)
        fast = self._fast
        terms = fast(tau) if fast is not None and not self._external else None
        if terms is None:
            terms = self._general_terms(tau)
            if self._refresh_geo_args:  # the detection grew its arrays: the fast path's views
                self._geo_args = self.geometry.step_args(self._limit, self._v_idx,
                                                         self._zero_nv)
                self._refresh_geo_args = False
        q, v, W, m, state, tau_c, energy = terms[:7]
        res = self.contact.compute(state, True)
        f = res.f
        nv, dt = self._nv, self._dt
        t_new = self.t + dt
        if self._euler:
            buf = np.empty(3 * (nv + m))
            speed = euler_into(W, m, nv, self._n_joints, f, v, dt, buf)
            if not speed <= self._max_speed:
                raise self._diverged(t_new, speed)
            a, v_new = buf[:nv], buf[nv:2 * nv]
            q_new = pin.integrate(self.model, q, buf[2 * nv:3 * nv])
            if self._transport:
                v_new = self._transported(W, m, q, q_new, buf)
            vc_next = buf[3 * nv:].reshape(m, 3)
        else:
            q_new, v_new, a, vc_next, f, speed = rk4_step(self, q, v, tau_c, state, res)
            if not speed <= self._max_speed:
                raise self._diverged(t_new, speed)
        return self._commit(terms, t_new, q_new, v_new, a, f, res, vc_next, energy)

    def _commit(self, terms: tuple, t_new: float, q_new: np.ndarray, v_new: np.ndarray,
                a: np.ndarray, f: np.ndarray, res, vc_next: np.ndarray,
                energy: float) -> StepResult:
        """The step's ``StepResult`` from its terms (their ``extra`` says how its views are
        made), the state after it kept."""
        _, _, W, m, state, tau_c, _, extra = terms
        q_prev = self.q
        tau_ext = f_ext = None
        if self._has_objects:  # the robot's prefix for the outside; the objects apart
            nq, nv = self.robot.nq, self.robot.nv
            self.q_objects, self.v_objects = q_new[nq:], v_new[nv:]
            q_new, v_new, a = q_new[:nq], v_new[:nv], a[:nv]
        if extra[0] == "general":
            _, p, placements, f_ext, tau_ext = extra
            if tau_ext is not None:
                tau_ext = tau_ext[:self.robot.nv]
        else:
            p, placements = None, _LAZY if extra[0] == "points" else None
        result = StepResult(t_new, q_new, v_new, a, tau_c, p, state.phi, state.vc, f, None,
                            res.active, res.stats, vc_next, f_ext, state.ids, placements,
                            self._R_world, q_prev, energy, tau_ext)
        if extra[0] != "general":
            result._out = extra[1]
        if self.geometry is not None:
            result.contacts = self._contact_set
            if extra[0] == "general":
                result.frames = self._contact_set.frames
                # the joints at the step's start (contact_state's compute)
                result.joint_placements = self._joint_placements
                result.q_objects, result.v_objects = self.q_objects, self.v_objects
            else:
                result._frames = result._joint_placements = _LAZY
        if m:
            out = np.empty(2)
            contact_energy(W, m, self._nv, self._n_joints, f, vc_next, self._dt, out)
            result.contact_work, result.contact_separation = out[0], out[1]
        self.q, self.v, self.t = q_new, v_new, t_new
        return result

    # Each terms source returns (q, v, W, m, state, τ clamped, energy, extra): the whole
    # model's state, the step buffer of ``robot.model_kernels.step_terms`` and its point count, the
    # contact state, the energy at (q, v); ``extra`` says how the result's views are made.
    def _general_terms(self, tau: np.ndarray) -> tuple:
        """Any case (external forces, free objects, RK4): ``contact_state``."""
        q, v = self.full_state()
        step_terms_, state = self.contact_state(q, v, tau)
        data = self.data
        energy = data.kinetic_energy + data.potential_energy  # at (q, v), by computeAllTerms
        W, m = state.packed[0], state.packed[1]
        extra = ("general", step_terms_.p, step_terms_.placements, self._f_ext, self._tau_ext)
        return q, v, W, m, state, step_terms_.tau, energy, extra

    def _points_terms(self, tau: np.ndarray) -> tuple:
        """Points contacts, semi-implicit Euler: one compiled call (``points_step``) on
        pinocchio's arrays, views of one output buffer (``points_views``)."""
        q, v, model, data = self.q, self.v, self.model, self.data
        pin.computeAllTerms(model, data, q, v)
        pin.cholesky.decompose(model, data)
        energy = data.kinetic_energy + data.potential_energy
        W = np.empty(self._W_size)
        out = np.empty(self._out_size)
        if not points_step(*self._points_args, v, tau, W, out):
            raise InputError("torque command contains NaN or Inf")
        m, nj, nv = self._m, self._n_joints, self._nv
        phi, pt, vc, tau_c = points_views(out, m, nj)
        if self._transport:
            momentum_terms(W, m, nv, nj, v, self._ff_v, self._ff_com, self._mt)
        state = ContactState.from_packed(self._dt, phi, vc, pt, self._mu, self._ids,
                                         (W, m, nv, nj))
        extra = ("points", (points_positions, points_placements, (out, m, nj, self._nb)))
        return q, v, W, m, state, tau_c, energy, extra

    def _geometry_terms(self, tau: np.ndarray) -> tuple | None:
        """Geometry contacts without free objects, semi-implicit Euler: the detection and the
        terms in one compiled call (``contact_geometry.detect_step``); None when the detection
        needs Python (coal, longer work arrays: ``_general_terms`` then)."""
        geo = self.geometry
        if geo.timed:
            return None
        q, v, model, data = self.q, self.v, self.model, self.data
        pin.computeAllTerms(model, data, q, v)
        pin.cholesky.decompose(model, data)
        energy = data.kinetic_energy + data.potential_energy
        n, nf, finite, W, out, ints = detect_step(*self._geo_args, v, tau)
        if n < 0 or nf:
            self._refresh_geo_args = True
            return None
        if not finite:
            raise InputError("torque command contains NaN or Inf")
        nj, nv = self._n_joints, self._nv
        o = n * (F_COLS + 3)  # step_out_views, inlined
        floats, phi, vc = out[:n * F_COLS].reshape(n, F_COLS), out[o:o + n], \
            out[o + n:o + 4 * n].reshape(n, 3)
        tau_c = out[o + 4 * n:o + 4 * n + nj]
        ints_ids = ints[:, I_ID]
        self._contact_set = Contacts(floats, ints, self._joint_names)
        geo.step_out = src = (out, n, nj, self._nb)
        geo.curve(W, n, floats, ints)
        if self._transport:
            momentum_terms(W, n, nv, nj, v, self._ff_v, self._ff_com, self._mt)
        state = ContactState.from_packed(self._dt, phi, vc, floats[:, F_PT:F_PT + 2],
                                         floats[:, F_MU], ints_ids, (W, n, nv, nj))
        return q, v, W, n, state, tau_c, energy, ("geometry", (step_points, step_placements,
                                                               src))

    def _torque(self, tau) -> np.ndarray:
        """τ as a float array of the right length (``contact_state``'s check)."""
        if type(tau) is not np.ndarray or tau.dtype != np.float64:
            tau = np.asarray(tau, dtype=float)
        if tau.shape != (self._n_joints,):
            raise InputError(f"torque command has shape {tau.shape}; expected "
                             f"({self._n_joints},) for joints "
                             + ", ".join(self.robot.actuated_joint_names))
        return tau

    def _diverged(self, t_new: float, speed: float) -> DivergenceError:
        what = "state is NaN or Inf" if np.isnan(speed) else \
            f"|v| = {speed:.3g} exceeds max_speed {self.settings.max_speed:g}"
        exc = DivergenceError(DIVERGED.format(t=t_new, what=what))
        exc.t, exc.cause = t_new, what  # for the outcome of a run (runner)
        return exc

    def _transported(self, W: np.ndarray, m: int, q: np.ndarray, q_new: np.ndarray,
                     buf: np.ndarray) -> np.ndarray:
        """ν⁺ of the free bodies' momentum transport (``sim.integrator.transport``); sets their
        positions in ``q_new`` and makes ``buf[:nv]`` pinocchio's v̇."""
        nv = len(self._mt) - 6 * len(self._ff_v)
        v_new = np.empty(nv)
        transport(W, m, nv, self._n_joints, q, q_new, buf[nv:2 * nv], buf[:nv], self._dt,
                  self._ff_v, self._ff_q, self._ff_com, self._mt, v_new)
        return v_new
