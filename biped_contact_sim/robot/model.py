"""Robot model layer: URDF → pinocchio model, actuation map, contact frames, per-step terms.

docs/methods.md §1. The pinocchio ``Model`` is built once and never mutated afterwards; every user
(simulator, controller) owns its own ``Data`` (``RobotModel.create_data``). Per-step terms:

    M(q)        joint-space inertia                    pin.crba (upper triangle; ``M`` symmetrises)
    h(q, v)     Coriolis + centrifugal + gravity       pin.nonLinearEffects
    M⁻¹         from pinocchio's sparse Cholesky       pin.cholesky.decompose / computeMinv
    p_i(q)      world position of contact point i      operational frames at the points
    J_i         point Jacobian, ṗ_i = J_i v            getFrameJacobian(LOCAL_WORLD_ALIGNED)[:3]
    γ_i = J̇_i v point acceleration drift               getFrameClassicalAcceleration with a = 0

so that ``p̈_i = J_i v̇ + γ_i`` and ``M v̇ = Sᵀτ − h + Σ J_iᵀ f_i``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin

from biped_contact_sim.errors import UNKNOWN_FRAME, ConfigError
from biped_contact_sim.robot.config import RobotConfig, load_robot_config

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


def _skew(w: np.ndarray) -> np.ndarray:
    """``[w]×``, the matrix with ``[w]× r = w × r``."""
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def _root_joint(base: str):
    """Pinocchio root joint of a base type (``RobotConfig.base``)."""
    if base == "free_flyer":
        return pin.JointModelFreeFlyer()
    if base == "planar_xz":  # sagittal plane: x, z translations then pitch about y
        root = pin.JointModelComposite(3)
        root.addJoint(pin.JointModelPX())
        root.addJoint(pin.JointModelPZ())
        root.addJoint(pin.JointModelRY())
        return root
    return pin.JointModelTranslation()  # "translation": a point mass (the paper's ball)


@dataclass(frozen=True)
class ContactBody:
    """Contact body k: its sole frame and the indices of its points in the stacked point list."""

    name: str
    frame: str
    frame_id: int
    points: tuple[int, ...]
    offsets: np.ndarray  # (k, 3) in the sole frame


@dataclass
class RobotTerms:
    """Per-step terms at (q, v), all in the world frame (docs/methods.md §1)."""

    M_upper: np.ndarray  # (nv, nv) upper triangle of M, as crba fills it (see ``M``)
    Minv: np.ndarray  # (nv, nv)
    h: np.ndarray  # (nv,)
    p: np.ndarray  # (m, 3) contact point positions
    J: np.ndarray  # (3m, nv) stacked point Jacobians
    gamma: np.ndarray  # (3m,) stacked drifts J̇ v

    @property
    def M(self) -> np.ndarray:
        """The symmetric M (built on demand: the simulator itself only needs M⁻¹)."""
        return np.triu(self.M_upper) + np.triu(self.M_upper, 1).T


class RobotModel:
    """A biped (or test body) as pinocchio sees it, plus its actuation and contact points.

    Args:
        config: the robot's ``RobotConfig``.
        mass_scale: multiplies every link's mass and rotational inertia (the penalty_fl claim
            "trajectories independent of the masses" is tested with it).

    Attributes:
        collision_model: a collision geometry (``pin.GeometryModel`` on this model's joints)
            that replaces the URDF's ``<collision>`` tags for geometry contacts, set by a
            scenario that builds its own (``plate``'s studs); None: the URDF's.

    Raises:
        ConfigError: the URDF cannot be read, or a contact frame does not exist (the message
            names the frame and lists the model's frames).
    """

    def __init__(self, config: RobotConfig, mass_scale: float = 1.0):
        if not (np.isfinite(mass_scale) and mass_scale > 0):
            raise ConfigError(f"mass_scale = {mass_scale!r} must be finite and > 0")
        self.config = config
        self.name = config.name
        try:
            model = pin.buildModelFromUrdf(str(config.urdf_path), _root_joint(config.base))
        except (ValueError, RuntimeError, OSError) as exc:
            raise ConfigError(f"Cannot build a model from URDF {config.urdf_path}: {exc}") from exc

        for j in range(model.njoints):
            inertia = model.inertias[j]
            model.inertias[j] = pin.Inertia(mass_scale * inertia.mass, inertia.lever,
                                            mass_scale * inertia.inertia)

        # Actuated joints: every joint but the universe and the root (base) joint.
        self.actuated_joint_names = [model.names[j] for j in range(2, model.njoints)]
        for j in range(2, model.njoints):
            if model.nvs[j] != 1:
                raise ConfigError(f"Joint {model.names[j]!r} has {model.nvs[j]} DoF; only "
                                  "1-DoF actuated joints are supported")
        self.v_idx = np.array([model.idx_vs[j] for j in range(2, model.njoints)], dtype=int)
        self.q_idx = np.array([model.idx_qs[j] for j in range(2, model.njoints)], dtype=int)
        self.n_base_v = model.nvs[1]
        self.effort_limit = model.effortLimit[self.v_idx].copy()
        self.velocity_limit = model.velocityLimit[self.v_idx].copy()
        self.q_lower = model.lowerPositionLimit[self.q_idx].copy()
        self.q_upper = model.upperPositionLimit[self.q_idx].copy()
        self.S = np.zeros((len(self.v_idx), model.nv))
        self.S[np.arange(len(self.v_idx)), self.v_idx] = 1.0

        # Contact points as operational frames attached to their body's frame.
        bodies, frame_ids, names = [], [], []
        for body in config.contact_bodies:
            if not model.existFrame(body.frame):
                raise ConfigError(UNKNOWN_FRAME.format(
                    name=body.frame, where=f"contacts.{body.name} of {config.name}",
                    valid=", ".join(f.name for f in model.frames)))
            parent_frame = model.getFrameId(body.frame)
            parent = model.frames[parent_frame]
            first = len(frame_ids)
            for k, offset in enumerate(body.offsets):
                name = f"{body.name}_point{k}"
                placement = parent.placement * pin.SE3(np.eye(3), np.asarray(offset, float))
                frame_ids.append(model.addFrame(pin.Frame(
                    name, parent.parentJoint, parent_frame, placement, pin.FrameType.OP_FRAME)))
                names.append(name)
            bodies.append(ContactBody(body.name, body.frame, parent_frame,
                                      tuple(range(first, len(frame_ids))), body.offsets.copy()))
        self.model = model  # complete from here on: never mutated again
        self._zero_v = np.zeros(model.nv)
        # The root link: the body frame carried by the root (base) joint.
        self.base_link = next(f.name for f in model.frames
                              if f.parentJoint == 1 and f.type == pin.FrameType.BODY)
        self.contact_bodies = tuple(bodies)
        self.point_frame_ids = tuple(frame_ids)
        self.point_names = tuple(names)
        self.point_body = np.array([k for k, b in enumerate(bodies) for _ in b.points], dtype=int)
        self.mass = float(sum(inertia.mass for inertia in model.inertias))
        self.collision_model: pin.GeometryModel | None = None

    # ---------------------------------------------------------------- construction helpers
    @classmethod
    def load(cls, name_or_path: str | Path, mass_scale: float = 1.0) -> RobotModel:
        """Build the robot from ``config/<name>.yaml`` (or a config file path)."""
        return cls(load_robot_config(name_or_path), mass_scale)

    @property
    def nq(self) -> int:
        return self.model.nq

    @property
    def nv(self) -> int:
        return self.model.nv

    @property
    def n_joints(self) -> int:
        """Number of actuated joints (length of τ)."""
        return len(self.v_idx)

    @property
    def n_points(self) -> int:
        return len(self.point_frame_ids)

    @property
    def contact_joints(self) -> tuple[int, ...]:
        """The joints carrying contact points, in increasing order (the order of the joint
        placements the simulator reports, ``StepResult.placements``)."""
        return tuple(sorted({self.model.frames[f].parentJoint for f in self.point_frame_ids}))

    def create_data(self) -> pin.Data:
        """A fresh pinocchio ``Data`` for this model (one per user: simulator, controller)."""
        return self.model.createData()

    def configuration(self, base_position=None, joint_positions: dict[str, float] | None = None,
                      base_pitch: float = 0.0) -> np.ndarray:
        """A configuration q: neutral, with the given base position, pitch and joint positions.

        Raises:
            ConfigError: a joint name is not an actuated joint of the model.
        """
        q = pin.neutral(self.model)
        if base_position is not None:
            base_position = np.asarray(base_position, float)
            if self.config.base == "planar_xz":
                q[0], q[1] = base_position[0], base_position[2]
            else:
                q[:3] = base_position
        if base_pitch:
            if self.config.base == "planar_xz":
                q[2] = base_pitch
            elif self.config.base == "free_flyer":
                q[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(0.0, base_pitch, 0.0)).coeffs()
        for name, value in (joint_positions or {}).items():
            if name not in self.actuated_joint_names:
                raise ConfigError(f"Unknown joint {name!r} for {self.name}. Actuated joints: "
                                  + ", ".join(self.actuated_joint_names))
            q[self.q_idx[self.actuated_joint_names.index(name)]] = value
        return q

    def standing_configuration(self) -> np.ndarray:
        """``config.standing`` with the base placed so that the lowest contact point is at z=0."""
        q = self.configuration(joint_positions=self.config.standing)
        data = self.create_data()
        pin.framesForwardKinematics(self.model, data, q)
        lowest = min(data.oMf[f].translation[2] for f in self.point_frame_ids)
        base = np.zeros(3)
        base[2] = -lowest
        return self.configuration(base, self.config.standing)

    # ---------------------------------------------------------------- per-step terms
    def point_positions(self, data: pin.Data, q: np.ndarray) -> np.ndarray:
        """World positions p_i(q) of all contact points, (m, 3)."""
        pin.framesForwardKinematics(self.model, data, q)
        return np.array([data.oMf[f].translation for f in self.point_frame_ids])

    def terms(self, data: pin.Data, q: np.ndarray, v: np.ndarray) -> RobotTerms:
        """Compute M, M⁻¹, h, p_i, J_i, γ_i at (q, v) (docs/methods.md §1).

        The points of contact body k are rigidly attached to its sole frame (o_k, R_k, twist
        (v_k, ω_k), classical acceleration (a_k, α_k) at q̈ = 0, all LOCAL_WORLD_ALIGNED), so
        one frame Jacobian per body gives all of them (r_i = R_k offset_i):

            p_i = o_k + r_i,    J_i = J_k,lin − [r_i]× J_k,ang,
            γ_i = a_k + α_k × r_i + ω_k × (ω_k × r_i)

        which is the rigid-body transport of the point frames' own Jacobians and classical
        accelerations (the model keeps those frames; the tests compare against them and against
        finite differences), at a quarter of the binding calls for four-vertex soles.
        """
        model = self.model
        M_upper = pin.crba(model, data, q).copy()  # crba fills the upper triangle only
        pin.cholesky.decompose(model, data)  # uses data.M from crba
        Minv = pin.cholesky.computeMinv(model, data)
        h = pin.nonLinearEffects(model, data, q, v)
        pin.computeJointJacobians(model, data, q)
        # forwardKinematics with a = 0 makes the classical frame accelerations equal J̇ v.
        pin.forwardKinematics(model, data, q, v, self._zero_v)
        m = self.n_points
        p = np.empty((m, 3))
        J = np.empty((m, 3, model.nv))
        gamma = np.empty((m, 3))
        for body in self.contact_bodies:
            f = body.frame_id
            oMs = pin.updateFramePlacement(model, data, f)
            Jk = pin.getFrameJacobian(model, data, f, LWA)
            acc = pin.getFrameClassicalAcceleration(model, data, f, LWA)
            w = pin.getFrameVelocity(model, data, f, LWA).angular
            r = body.offsets @ oMs.rotation.T  # (k, 3) lever arms in the world frame
            sl = slice(body.points[0], body.points[-1] + 1)
            p[sl] = oMs.translation + r
            # [r]× J_ang, row by row, for all points of the body at once
            Ja = Jk[3:]
            J[sl, 0] = Jk[0] - (r[:, 1, None] * Ja[2] - r[:, 2, None] * Ja[1])
            J[sl, 1] = Jk[1] - (r[:, 2, None] * Ja[0] - r[:, 0, None] * Ja[2])
            J[sl, 2] = Jk[2] - (r[:, 0, None] * Ja[1] - r[:, 1, None] * Ja[0])
            # α × r + ω × (ω × r) = ([α]× + [ω]×²) r; np.cross costs ~20 µs per call here
            W = _skew(w)
            gamma[sl] = acc.linear + r @ (_skew(acc.angular) + W @ W).T
        return RobotTerms(M_upper, Minv, h, p, J.reshape(3 * m, model.nv), gamma.ravel())


def stacked_views(views: list[np.ndarray]) -> tuple[np.ndarray, bool]:
    """One ``(n, *shape)`` array over per-joint arrays and whether it follows their storage.

    eigenpy hands out views of pinocchio's ``std::vector`` storage (``Data.oMi``, ``Data.v``,
    ``Data.a``): equally spaced blocks of one buffer. When every view is one (same shape and
    strides, none owning its data, addresses a constant step apart), the result is a strided
    view over that buffer (no copy, it follows the Data: one array for the kernels instead of
    a tuple of n, whose unboxing at each call cost more than the kernel's work); otherwise a
    stacked copy (``live`` False: take it again after each computation).
    """
    first = views[0]
    if len(views) > 1 and all(v.shape == first.shape and v.strides == first.strides
                              and not v.flags.owndata for v in views):
        step = views[1].ctypes.data - first.ctypes.data
        if step >= first.nbytes and all(v.ctypes.data == first.ctypes.data + k * step
                                        for k, v in enumerate(views)):
            return np.lib.stride_tricks.as_strided(
                first, (len(views), *first.shape), (step, *first.strides),
                writeable=False), True
    return np.array(views), False


class DataViews:
    """Pinocchio's per-step terms of a model, read in place from its ``Data``.

    ``compute(q, v)`` runs two C++ algorithms: ``computeAllTerms`` (FK with the joint spatial
    velocities and q̈ = 0 accelerations, M, h, the WORLD joint Jacobians J, kinetic and
    potential energy) and ``cholesky.decompose`` (the tree-sparse ``M = U D Uᵀ``). The arrays
    they fill are held as views of the Data, taken once, so a step costs two binding calls;
    the compiled kernels then read them (where eigenpy hands out copies instead, they are
    taken again after each computation).

    Attributes:
        J (6, nv), nle (nv,), U (nv, nv), D (nv,): pinocchio's arrays.
        rotations (njoints, 3, 3), translations (njoints, 3): the joint placements;
        velocities, accelerations (njoints, 6): their spatial velocities and (q̈ = 0)
            accelerations in the joint frames (``stacked_views`` of ``Data.oMi/v/a``).
        support: (njoints, nv) bool, the velocity components that move joint j (row 0, the
            universe, is empty: the static world contributes nothing to a contact Jacobian).
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
        # Held once when eigenpy hands out views of the Data's own storage (the same memory
        # after another computation), else fetched again at every step.
        held = (self.J, self.nle, self.U, self.D)
        self.compute(pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq)),
                     np.ones(model.nv))
        fresh = (data.J, data.nle, data.U, data.D)
        self._terms_live = all(not a.flags.owndata and a.ctypes.data == b.ctypes.data
                               and np.array_equal(a, b)
                               for a, b in zip(held, fresh, strict=True))
        self.compute(pin.neutral(model), np.zeros(model.nv))

    @property
    def live(self) -> bool:
        """Whether the held arrays follow the Data (then ``compute`` is the two algorithms)."""
        return self._terms_live and self._live

    def compute(self, q: np.ndarray, v: np.ndarray) -> None:
        """Run pinocchio's algorithms at (q, v); the held arrays then hold the new terms."""
        model, data = self.model, self.data
        pin.computeAllTerms(model, data, q, v)
        pin.cholesky.decompose(model, data)
        if self._terms_live and self._live:
            return
        self.J, self.nle, self.U, self.D = data.J, data.nle, data.U, data.D
        if self._live:
            return
        r = range(model.njoints)
        self.rotations, live_r = stacked_views([data.oMi[j].rotation for j in r])
        self.translations, live_t = stacked_views([data.oMi[j].translation for j in r])
        self.velocities, live_v = stacked_views([data.v[j].vector for j in r])
        self.accelerations, live_a = stacked_views([data.a[j].vector for j in r])
        self._live = live_r and live_t and live_v and live_a

    @property
    def energy(self) -> tuple[float, float]:
        """Kinetic and potential energy at the last (q, v) [J] (computed by computeAllTerms)."""
        return self.data.kinetic_energy, self.data.potential_energy


class TermsWorkspace(DataViews):
    """``DataViews`` of a robot with its contact points (the simulator's points path;
    ``RobotModel.terms`` is the reference it is tested against).

    Attributes:
        joints: the joints that carry points (``RobotModel.contact_joints``); ``joint_ids``
            the same as an int64 array.
        point_body: (m,) the joint carrying point i (an index into the Data's joints).
        local: (m, 3) point i in its joint frame.
    """

    def __init__(self, robot: RobotModel, data: pin.Data):
        model = robot.model
        super().__init__(model, data)
        frames = [model.frames[f] for f in robot.point_frame_ids]
        self.joints = robot.contact_joints
        self.joint_ids = np.array(self.joints, dtype=np.int64)
        self.point_body = np.array([f.parentJoint for f in frames], dtype=np.int64)
        self.local = np.array([f.placement.translation for f in frames]).reshape(-1, 3)
