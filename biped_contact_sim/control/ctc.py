"""``ctc``: computed torque under stance constraints (Bravo & Rengifo §4.1; docs/methods.md §4.1).

The paper writes it for the planar biped in single support (eqs. 27–39); here it is written
for any base (free flyer, planar x–z–pitch) and any number of flat stance feet:

1. Stance constraints (eqs. 28–30): every stance foot's sole frame neither moves nor rotates,

       J_s v̇ + J̇_s v = 0,    J_s = [J_b  J_a],

   with the sole-frame Jacobians in LOCAL_WORLD_ALIGNED and the drift ``J̇_s v`` the frame's
   classical acceleration at ``v̇ = 0``. Rows per foot: all 6 for a free-flyer base; for the
   planar biped (base ``planar_xz``) only x, z and pitch (rows 0, 2, 4 of the 6-D Jacobian —
   y, roll and yaw are identically zero in the sagittal plane).
2. Desired actuated accelerations (eq. 39, the classical CTC law):

       q̈_aᵈ = q̈_ref + K_d (q̇_ref − q̇_a) + K_p (q_ref − q_a).

3. Base accelerations from the constraints (eqs. 32–34): ``J_b v̇_b = −J_a q̈_aᵈ − J̇_s v``.
   Single support (3-D: 6 × 6, planar: 3 × 3) is square: q̈_a = q̈_aᵈ and v̇_b is unique. In
   double support the feet close a kinematic chain and q̈_aᵈ (reference plus feedback) is in
   general not compatible with it; the redundant system is solved in the least-squares sense
   *on the joints*: v̇ = argmin ‖q̈_a − q̈_aᵈ‖ subject to J_s v̇ + J̇_s v = 0 exactly (the
   constraint-consistent joint acceleration closest to the desired one; equal to it when the
   reference respects the chain and the errors are zero). Solving ``J_b v̇_b = …`` alone in
   the least-squares sense would command motions the ground forbids, which the contact then
   resists with internal forces (it drove the planar biped's legs into ±τ_max squeezing).
   With no stance foot (flight) the base rows of the dynamics give ``v̇_b`` instead.
4. Torques and contact wrenches from ``M v̇ + h = Sᵀτ + J_sᵀ λ`` (eqs. 35–38): the base rows
   ``J_bᵀ λ = (M v̇ + h)_b`` give λ (unique in single support), then
   ``τ = (M v̇ + h)_a − J_aᵀ λ``. ``M v̇ + h`` is pinocchio's RNEA at (q, v, v̇).

   In double support ``J_bᵀ`` (6 × 12) leaves λ six free *internal* components (the null space
   of ``J_bᵀ``: they change τ, not v̇). They are chosen to minimise

       Σ_k ‖f_k‖² + ‖m_k^c‖² / ρ²,   m_k^c = m_k − (c_k − o_k) × f_k

   with m_k^c the moment about the sole *centre* c_k and ρ = ``cop_length``: with ρ small the
   internal wrenches keep both CoPs near the sole centres and the yaw moments small, i.e.
   Sentis et al.'s zero internal forces of App. C eq. 82 (no tension beyond the minimum, CoPs
   at the centres), and the resultant moment is made by shifting weight between the feet. The
   plain Euclidean minimum norm (ρ = 0 selects it) mixes N and N·m and instead rolls both
   feet onto their edges when the CoM moves sideways (seen: both soles lost contact at the
   first weight shift of ``walk``). A subclass may override ``internal_forces`` to impose
   another internal-force law (docs/methods.md §4.2).

   Load shares (our addition, ``load_share``): with two stance feet and a reference that has
   a CoM trajectory or planned shares (``Reference.load_share``, used as given), the
   allocation instead minimises

       Σ_k (‖f_k − α_k F‖² + ‖m_k^c‖² / ρ²) / α_k²,
       α_2 = clip((p − c_1)·(c_2 − c_1) / ‖c_2 − c_1‖², α_min, 1 − α_min),  α_1 = 1 − α_2,
       p = c_xy − (c_z − z_s) c̈_xy / (g + c̈_z),

   with F = Σ_k f_k (fixed by the base rows, internal wrenches do not change it), p the
   reference's cart-table ZMP (Kajita et al. 2003; z_s the soles' mean height) projected on the
   segment between the sole centres c_k, α_min = ``MIN_SHARE``. When the commanded motion's ZMP
   is p the minimiser is f_k = α_k F with zero centre moments: both feet see the same friction
   ratio, and the foot the reference unloads sees its whole wrench go to zero continuously by
   the end of double support (and a landing foot starts from zero), so the switches between
   single and double support are smooth. A mismatch between the commanded ZMP and p is taken
   by the more loaded foot's CoP when α_small/α_large < ρ/‖c_2 − c_1‖ (the 1/α_k² weights)
   rather than by shifting weight onto the unloading foot. Seen without it on ``walk``: the
   plain allocation split the tangential force evenly, the unloading foot kept half of it on
   a few newtons of normal load and rocked at the second lift-off; with weights 1/α_k only,
   residual moments were made by weight shifts that left a landing foot unloaded or loaded a
   foot that did not touch yet.

Torques are clamped to ``robot.effort_limit``. The law reads ``Measurement.q``/``v``; the measured
sole wrenches only decide an early release of a foot the reference is lifting (``contact_set``),
so the same object runs against the simulator or hardware.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pinocchio as pin

from biped_contact_sim.control.base import (
    Behavior,
    Controller,
    ControlOutput,
    Measurement,
    Reference,
    check_range,
)
from biped_contact_sim.errors import ConfigError

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED

#: Rows of a 6-D sole-frame Jacobian [vx, vy, vz, ωx, ωy, ωz] that constrain a flat foot.
CONSTRAINT_ROWS: dict[str, tuple[int, ...]] = {
    "free_flyer": (0, 1, 2, 3, 4, 5),
    "planar_xz": (0, 2, 4),  # x, z, pitch: the sagittal plane
    "translation": (0, 1, 2),
}

#: Smallest load share α_k of a stance foot in the double-support allocation (weights 1/α_k).
MIN_SHARE = 1e-3


def _check_positive(field: str, value: float, allow_zero: bool = False) -> None:
    check_range(field, value, 0.0, lo_open=not allow_zero)


@dataclass(frozen=True)
class CTCSettings:
    """Settings of ``ctc`` (Bravo & Rengifo eq. 39).

    Attributes:
        kp: K_p, joint position gain [1/s²] (scalar, all joints).
        kd: K_d, joint velocity gain [1/s] (2√kp is critical damping).
        kd_stance: k_s, stance-sole velocity damping [1/s]: the constraint becomes
            J_s v̇ + J̇_s v = −k_s J_s v (Baumgarte stabilisation; 0 = the paper's eq. 30). A
            measured sole velocity (contact compliance, a heel starting to lift) is then
            driven to zero instead of being ignored.
        cop_length: ρ [m], the length that weighs sole-centre moments against forces in the
            double-support allocation (module docstring, step 4); 0: plain minimum norm.
        unload_force: [N] in double support, a stance foot the reference lifts within
            ``lookahead`` whose measured normal force (Measurement.wrenches) is below this is
            released early (``contact_set``; 0 disables).
        lookahead: [s] how far ahead ``contact_set`` reads the reference's stance (> 0).
        load_share: in double support, allocate the wrenches in proportion to the load
            share taken from the reference's cart-table ZMP (module docstring, step 4; our
            addition). Needs ``Reference.com``/``com_acc``; without them it has no effect.
        rcond: relative singular-value cut-off of the least-squares solves (steps 3 and 4).
        clamp: clamp τ to the URDF effort limits (the simulator clamps anyway; reported in info).
    """

    kp: float = 400.0
    kd: float = 40.0
    kd_stance: float = 0.0
    cop_length: float = 0.02
    unload_force: float = 5.0
    lookahead: float = 0.02
    load_share: bool = True
    rcond: float = 1e-10
    clamp: bool = True

    def __post_init__(self):
        _check_positive("ctc.kp", self.kp, allow_zero=True)
        _check_positive("ctc.kd", self.kd, allow_zero=True)
        _check_positive("ctc.kd_stance", self.kd_stance, allow_zero=True)
        _check_positive("ctc.cop_length", self.cop_length, allow_zero=True)
        _check_positive("ctc.unload_force", self.unload_force, allow_zero=True)
        _check_positive("ctc.lookahead", self.lookahead)
        _check_positive("ctc.rcond", self.rcond)
        if not isinstance(self.load_share, bool):
            raise ConfigError(f"ctc.load_share = {self.load_share!r} must be true or false")


@dataclass
class ConstrainedDynamics:
    """Result of ``constrained_inverse_dynamics``.

    Attributes:
        a: generalized acceleration v̇ (nv,).
        tau: joint torques (n_joints,), not clamped.
        lam: per stance foot, the 6-D wrench [f; τ] on the foot about its sole origin, world
            axes (rows not constrained, e.g. y/roll/yaw of the planar biped, are 0) [N, N·m].
        constraint_residual: ‖q̈_a − q̈_aᵈ‖, the part of the desired joint acceleration the
            closed chain cannot realise (0 in single support).
        null_basis: orthonormal basis (columns) of the internal-force space, in the stacked
            constrained-row layout of λ (empty in single support).
    """

    a: np.ndarray
    tau: np.ndarray
    lam: dict[str, np.ndarray]
    constraint_residual: float
    null_basis: np.ndarray


def _stance_bodies(robot, stance) -> list:
    by_name = {b.name: b for b in robot.contact_bodies}
    try:
        return [by_name[name] for name in stance]
    except KeyError as exc:
        raise ConfigError(f"Unknown stance foot {exc.args[0]!r}; contact bodies of "
                          f"{robot.name}: {', '.join(by_name)}") from None


def constrained_inverse_dynamics(robot, data: pin.Data, q: np.ndarray, v: np.ndarray,
                                 a_joints: np.ndarray, stance, rcond: float = 1e-10,
                                 internal=None, kd_stance: float = 0.0) -> ConstrainedDynamics:
    """Steps 3–4 of the module docstring: v̇_b, λ and τ for given joint accelerations.

    Bravo & Rengifo eqs. 30–38 for any number of flat stance feet.

    Args:
        robot: the ``RobotModel``.
        data: a pinocchio Data of ``robot.model`` (overwritten).
        q, v: state.
        a_joints: actuated-joint accelerations q̈_a (n_joints,).
        stance: names of the stance feet (contact bodies).
        rcond: singular-value cut-off of the least-squares solves.
        internal: optional callable ``(λ₀, null_basis) -> c`` adding ``null_basis @ c`` to the
            minimum-norm λ₀ (double support internal forces).
        kd_stance: k_s of ``J_s v̇ + J̇_s v = −k_s J_s v`` (0: the rigid constraint, eq. 30).

    Returns:
        The ``ConstrainedDynamics``.

    Raises:
        ConfigError: a stance name is not a contact body.
    """
    model = robot.model
    nb = robot.n_base_v
    bodies = _stance_bodies(robot, stance)
    rows = CONSTRAINT_ROWS[robot.config.base]
    nr = len(rows)
    a = np.zeros(model.nv)
    a[robot.v_idx] = a_joints
    if bodies:
        pin.computeJointJacobians(model, data, q)
        pin.forwardKinematics(model, data, q, v, np.zeros(model.nv))  # drift = J̇ v (a = 0)
        Js = np.empty((nr * len(bodies), model.nv))
        gamma = np.empty(nr * len(bodies))
        for k, body in enumerate(bodies):
            pin.updateFramePlacement(model, data, body.frame_id)
            Js[nr * k:nr * (k + 1)] = pin.getFrameJacobian(model, data, body.frame_id,
                                                           LWA)[rows, :]
            acc = pin.getFrameClassicalAcceleration(model, data, body.frame_id, LWA)
            gamma[nr * k:nr * (k + 1)] = acc.vector[list(rows)]
        if kd_stance:
            gamma = gamma + kd_stance * (Js @ v)
        Jb, Ja = Js[:, :nb], Js[:, robot.v_idx]
        if Js.shape[0] <= nb:  # single support: J_b square, q̈_a = q̈_aᵈ exactly (eq. 34)
            a[:nb] = np.linalg.lstsq(Jb, -Ja @ a_joints - gamma, rcond=rcond)[0]
        else:  # closed chain: min ‖q̈_a − q̈_aᵈ‖ subject to J_s v̇ + J̇_s v = 0
            U, s, Vt = np.linalg.svd(Js)
            rank = int(np.sum(s > rcond * s[0]))
            a_p = Vt[:rank].T @ ((U[:, :rank].T @ -gamma) / s[:rank])
            N = Vt[rank:].T
            SN = N[robot.v_idx]
            z = np.linalg.lstsq(SN, a_joints - a_p[robot.v_idx], rcond=rcond)[0]
            a = a_p + N @ z
        residual = float(np.linalg.norm(a[robot.v_idx] - a_joints))
        tau_full = pin.rnea(model, data, q, v, a)
        U, s, Vt = np.linalg.svd(Jb.T)  # J_bᵀ λ = (M v̇ + h)_b, minimum-norm λ
        rank = int(np.sum(s > rcond * s[0])) if s.size else 0
        lam = Vt[:rank].T @ ((U[:, :rank].T @ tau_full[:nb]) / s[:rank])
        null_basis = Vt[rank:].T
        if internal is not None and null_basis.shape[1]:
            lam = lam + null_basis @ np.asarray(internal(lam, null_basis), float)
        tau = tau_full[robot.v_idx] - Ja.T @ lam
    else:  # flight: the base rows of M v̇ + h = Sᵀτ give v̇_b
        M = pin.crba(model, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        tau0 = pin.rnea(model, data, q, v, a)  # M[:, a] q̈_a + h
        a[:nb] = np.linalg.solve(M[:nb, :nb], -tau0[:nb])
        tau = pin.rnea(model, data, q, v, a)[robot.v_idx]
        lam, residual, null_basis = np.zeros(0), 0.0, np.zeros((0, 0))
    wrenches = {}
    for k, body in enumerate(bodies):
        w = np.zeros(6)
        w[list(rows)] = lam[nr * k:nr * (k + 1)]
        wrenches[body.name] = w
    return ConstrainedDynamics(a, tau, wrenches, residual, null_basis)


def reference_load_shares(ref: Reference, stance, centres, g: float) -> np.ndarray | None:
    """Load shares α = (α_1, α_2) of two stance feet (module docstring, step 4; our addition).

    ``Reference.load_share`` when the behaviour plans its load transfer, else from the
    reference's cart-table ZMP p = c_xy − (c_z − z_s) c̈_xy / (g + c̈_z) projected on the segment
    between the sole centres, α_2 = (p − c_1)·(c_2 − c_1) / ‖c_2 − c_1‖²; clipped to
    [α_min, 1 − α_min], α_min = ``MIN_SHARE``. None without either (or with coincident centres).

    Args:
        ref: the reference (``load_share`` or ``com``/``com_acc`` read).
        stance: the two stance foot names, in the order of ``centres``.
        centres: world positions of the two sole centres (3,).
        g: gravity magnitude [m/s²].

    Raises:
        ConfigError: ``Reference.load_share`` lacks a stance foot.
    """
    if ref.load_share is not None:
        try:
            a2 = float(ref.load_share[stance[1]])
        except KeyError:
            raise ConfigError(f"Reference.load_share names {sorted(ref.load_share)}; "
                              f"it needs the stance foot {stance[1]!r}") from None
    elif ref.com is None or ref.com_acc is None:
        return None
    else:
        c1, c2 = (np.asarray(c, float) for c in centres)
        com, acc = np.asarray(ref.com, float), np.asarray(ref.com_acc, float)
        height = com[2] - 0.5 * (c1[2] + c2[2])
        p = com[:2] - height * acc[:2] / (g + acc[2])
        d = (c2 - c1)[:2]
        if float(d @ d) < 1e-12:
            return None
        a2 = float((p - c1[:2]) @ d / (d @ d))
    a2 = float(np.clip(a2, MIN_SHARE, 1.0 - MIN_SHARE))
    return np.array([1.0 - a2, a2])


class ComputedTorqueController(Controller):
    """Computed-torque control under stance constraints (module docstring, Bravo & Rengifo
    eqs. 27–39 generalised to a floating base and double support).

    Args:
        robot: the ``RobotModel``.
        behavior: a behaviour providing ``stance`` and ``q_joints`` (``v_joints``/``a_joints``
            default to zero).
        dt: control period [s] (unused: the law has no internal state).
        **settings: fields of ``CTCSettings``.

    ``compute`` returns ``ControlOutput(tau, info)`` with info keys ``lam`` (per stance foot
    wrench, world axes, about the sole origin), ``stance``, ``a_des``, ``q_err`` [rad],
    ``tracking_error`` (RMS of q_err) [rad], ``constraint_residual`` (‖q̈_a − q̈_aᵈ‖),
    ``saturated`` (number of clamped joints), ``load_share`` (α_k of the stance feet or None).
    """

    name = "ctc"
    Settings = CTCSettings

    def __init__(self, robot, behavior: Behavior, dt: float, **settings: Any):
        super().__init__(robot, behavior, dt, **settings)
        self.data = robot.create_data()

    def contact_set(self, meas: Measurement, ref: Reference) -> tuple[str, ...]:
        """The feet held as stance constraints at ``meas.t`` (our addition to eq. 30).

        The reference's stance, except that in double support a foot the reference lifts
        within ``lookahead`` (absent from ``behavior.reference(t + lookahead).stance``) whose
        measured normal force is already below ``unload_force`` is released: holding an
        unloaded foot as a rigid constraint commands motions the unilateral ground cannot
        enforce. Only feet about to be lifted are released — a foot that has just landed
        carries little load too (its load share starts at 0) and must stay a constraint.
        Without measured wrenches the reference decides.
        """
        s = self.settings
        stance = set(ref.stance)
        if len(stance) < 2 or not meas.wrenches or s.unload_force <= 0.0:
            return tuple(ref.stance)
        future = set(self.behavior.reference(meas.t + s.lookahead).stance)
        lifting = {name for name in stance - future
                   if name in meas.wrenches and meas.wrenches[name][2] < s.unload_force}
        if lifting and lifting != stance:
            stance -= lifting
        return tuple(b.name for b in self.robot.contact_bodies if b.name in stance)

    def load_shares(self, ref: Reference, stance: tuple[str, ...]) -> np.ndarray | None:
        """Load shares α_k of the stance feet (``reference_load_shares``), or None (not two
        feet or ``load_share`` off). Reads the sole placements of ``self.data`` (set by
        ``constrained_inverse_dynamics``)."""
        if not self.settings.load_share or len(stance) != 2:
            return None
        centres = [self.data.oMf[b.frame_id].act(b.offsets.mean(axis=0))
                   for b in _stance_bodies(self.robot, stance)]
        g = float(np.linalg.norm(self.robot.model.gravity.linear))
        return reference_load_shares(ref, stance, centres, g)

    def internal_forces(self, meas: Measurement, stance: tuple[str, ...], lam0: np.ndarray,
                        null_basis: np.ndarray,
                        shares: np.ndarray | None = None) -> np.ndarray | None:
        """Coefficients c of the internal wrenches added to the minimum-norm λ₀ (double support).

        Default: the sole-centre weighted allocation of the module docstring (step 4),
        ``c = −(W T N)⁺ W T λ₀`` with T moving each wrench to its sole centre and W weighing
        moments by 1/ρ and each foot by 1/√α_k (``shares``; equal weights when None).
        Override to impose another law; ``None`` keeps λ₀.
        """
        rho = self.settings.cop_length
        if rho == 0.0 and shares is None:
            return None
        rows = list(CONSTRAINT_ROWS[self.robot.config.base])
        nr = len(rows)
        bodies = _stance_bodies(self.robot, stance)
        WT = np.zeros((nr * len(bodies),) * 2)
        target = np.zeros(nr * len(bodies))
        force_rows = [i for i, r in enumerate(rows) if r < 3]
        total = sum(lam0[nr * k:nr * (k + 1)][force_rows] for k in range(len(bodies)))
        for k, body in enumerate(bodies):
            T = np.eye(6)
            if rho > 0.0:
                oMs = self.data.oMf[body.frame_id]  # placed by constrained_inverse_dynamics
                d = oMs.rotation @ body.offsets.mean(axis=0)  # sole origin → sole centre
                T[3:, :3] = -pin.skew(d)  # m^c = m − d × f
                T[3:] /= rho
            block = T[np.ix_(rows, rows)]
            if shares is not None:  # (w_k − [α_k F; 0]) / α_k, at the sole centre
                block = block / shares[k]
                target[nr * k + np.array(force_rows)] = total
            WT[nr * k:nr * (k + 1), nr * k:nr * (k + 1)] = block
        return -np.linalg.lstsq(WT @ null_basis, WT @ lam0 - target, rcond=None)[0]

    def compute(self, meas: Measurement) -> ControlOutput:
        """Torques for ``meas`` tracking ``behavior.reference(meas.t)`` (eqs. 34–39)."""
        robot, s = self.robot, self.settings
        ref = self.behavior.reference(meas.t)
        if ref.q_joints is None:
            raise ConfigError(f"ctc needs Reference.q_joints; behaviour "
                              f"{getattr(self.behavior, 'name', self.behavior)!r} gives none")
        n = robot.n_joints
        q_a, v_a = meas.q[robot.q_idx], meas.v[robot.v_idx]
        v_ref = np.zeros(n) if ref.v_joints is None else ref.v_joints
        a_ref = np.zeros(n) if ref.a_joints is None else ref.a_joints
        q_err = ref.q_joints - q_a
        a_des = a_ref + s.kd * (v_ref - v_a) + s.kp * q_err

        shares: dict[str, np.ndarray | None] = {"value": None}

        def law(lam0, null_basis):
            shares["value"] = self.load_shares(ref, stance)
            c = self.internal_forces(meas, stance, lam0, null_basis, shares["value"])
            return np.zeros(null_basis.shape[1]) if c is None else c

        stance = self.contact_set(meas, ref)
        dyn = constrained_inverse_dynamics(robot, self.data, meas.q, meas.v, a_des, stance,
                                           s.rcond, law, s.kd_stance)
        tau = dyn.tau
        limit = robot.effort_limit
        saturated = int(np.sum(np.abs(tau) > limit))
        if s.clamp:
            tau = np.clip(tau, -limit, limit)
        info = {
            "lam": dyn.lam,
            "stance": stance,
            "a_des": a_des,
            "q_err": q_err,
            "tracking_error": float(np.sqrt(np.mean(q_err ** 2))),
            "constraint_residual": dyn.constraint_residual,
            "saturated": saturated,
            "load_share": shares["value"],
        }
        return ControlOutput(tau, info)
