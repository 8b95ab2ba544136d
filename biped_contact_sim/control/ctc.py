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

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pinocchio as pin

from biped_contact_sim.control.base import (
    Behavior,
    Controller,
    ControlOutput,
    LazyDict,
    Measurement,
    Reference,
    check_range,
)
from biped_contact_sim.control.ctc_dynamics import (
    CONSTRAINT_ROWS,
    _stance_bodies,
    constrained_inverse_dynamics,
)
from biped_contact_sim.control.ctc_kernels import ctc_step
from biped_contact_sim.control.linalg import (
    sole_centre_allocation_reference,
)
from biped_contact_sim.control.linalg_kernels import sole_centre_allocation
from biped_contact_sim.control.wbc_kernels import C_G, N_CONSTS, N_SCAL, S_A2, S_AX, S_CX
from biped_contact_sim.errors import ConfigError
from biped_contact_sim.jit import entry_point

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
    else:  # scalar arithmetic: a handful of numpy calls on 2-vectors cost more than this
        (x1, y1, z1), (x2, y2, z2) = centres[0], centres[1]
        cx, cy, cz = ref.com
        ax, ay, az = ref.com_acc
        height = cz - 0.5 * (z1 + z2)
        px = cx - height * ax / (g + az)
        py = cy - height * ay / (g + az)
        dx, dy = x2 - x1, y2 - y1
        dd = dx * dx + dy * dy
        if dd < 1e-12:
            return None
        a2 = float(((px - x1) * dx + (py - y1) * dy) / dd)
    a2 = min(max(a2, MIN_SHARE), 1.0 - MIN_SHARE)
    return np.array([1.0 - a2, a2])


def load_share_inputs(ref: Reference, stance, share_in: np.ndarray) -> int:
    """The load-share inputs of the compiled steps (``ctc_kernels.ctc_step``, ``wbc_kernels``;
    layout ``wbc_kernels.S_*``) for two stance feet: 1 the reference's planned α_2, 2 its
    cart-table ZMP (CoM and acceleration), 0 neither; written into ``share_in``.

    Raises:
        ConfigError: ``Reference.load_share`` lacks a stance foot.
    """
    if ref.load_share is not None:
        try:
            share_in[S_A2] = float(ref.load_share[stance[1]])
        except KeyError:
            raise ConfigError(f"Reference.load_share names {sorted(ref.load_share)}; "
                              f"it needs the stance foot {stance[1]!r}") from None
        return 1
    if ref.com is None or ref.com_acc is None:
        return 0
    share_in[S_CX:S_CX + 3] = ref.com
    share_in[S_AX:S_AX + 3] = ref.com_acc
    return 2


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
        self._g = float(np.linalg.norm(robot.model.gravity.linear))
        self._qi, self._vi = _index_of(robot.q_idx), _index_of(robot.v_idx)
        rows = CONSTRAINT_ROWS[robot.config.base]
        self._rows = list(rows)
        self._force_rows = [i for i, r in enumerate(rows) if r < 3]
        self._rows_arr = np.array(self._rows, dtype=np.int64)
        self._force_rows_arr = np.array(self._force_rows, dtype=np.int64)
        self._no_shares = np.zeros(0)
        self._centre = {b.name: b.offsets.mean(axis=0) for b in robot.contact_bodies}
        self._compiled_tables()

    def _compiled_tables(self) -> None:
        """Constant tables of ``ctc_kernels.ctc_step`` (frame slots of the contact bodies, the
        columns that move each, sole centres) and pinocchio's arrays as views; ``compiled``
        False where the step cannot run compiled (the actuated coordinates not v[n_b:], a
        frame layout ``frame_placements_view`` does not know, ``internal_forces``
        overridden, a joint with a bias acceleration: the planar base)."""
        from biped_contact_sim.control.wbc_plan import (
            drift_from_jacobians,
            frame_placements_view,
        )

        robot, model, data = self.robot, self.robot.model, self.data
        bodies = robot.contact_bodies
        self._slot = {b.name: k for k, b in enumerate(bodies)}
        self._fids = np.array([b.frame_id for b in bodies], dtype=np.int64)
        self._mask = np.zeros((len(bodies), model.nv), dtype=bool)
        for k, b in enumerate(bodies):
            for j in model.supports[model.frames[b.frame_id].parentJoint]:
                if j > 0:
                    self._mask[k, model.idx_vs[j]:model.idx_vs[j] + model.nvs[j]] = True
        self._centres = np.array([self._centre[b.name] for b in bodies]).reshape(-1, 3)
        self._oMf = frame_placements_view(model, data)
        self._views = (data.M, data.nle, data.J, data.dJ)
        nb = robot.n_base_v
        vi = self._vi
        self.compiled = (self._oMf is not None and isinstance(vi, slice) and vi.start == nb
                         and vi.stop == robot.nv and drift_from_jacobians(model)
                         and type(self).internal_forces
                         is ComputedTorqueController.internal_forces)
        self._slots: dict[tuple, np.ndarray] = {}
        self._ordered: dict[frozenset, tuple] = {}  # stance set → names in body order
        #: load-share inputs of ``ctc_step`` (``wbc_kernels`` layout: S_* figures, g at C_G)
        self._share_in = np.zeros(N_SCAL)
        self._share_consts = np.zeros(N_CONSTS)
        self._share_consts[C_G] = self._g
        self._step_entry = None  # ``ctc_step``'s entry (``jit.entry_point``), at the first step

    def contact_set(self, meas: Measurement, ref: Reference) -> tuple[str, ...]:
        """The feet held as stance constraints at ``meas.t`` (our addition to eq. 30).

        The reference's stance, except that in double support a foot the reference lifts
        within ``lookahead`` (absent from ``behavior.stance_at(t + lookahead)``) whose
        measured normal force is already below ``unload_force`` is released: holding an
        unloaded foot as a rigid constraint commands motions the unilateral ground cannot
        enforce. Only feet about to be lifted are released — a foot that has just landed
        carries little load too (its load share starts at 0) and must stay a constraint.
        Without measured wrenches the reference decides.
        """
        s = self.settings
        if len(ref.stance) < 2 or not meas.wrenches or s.unload_force <= 0.0:
            return tuple(ref.stance)
        # the unloaded feet first: the future stance (a search of the behaviour's schedule)
        # only matters for them, and on most steps there are none
        wrenches = meas.wrenches
        unloaded = [name for name in ref.stance
                    if name in wrenches and wrenches[name][2] < s.unload_force]
        stance = set(ref.stance)
        if unloaded:
            future = set(self.behavior.stance_at(meas.t + s.lookahead))
            lifting = {name for name in unloaded if name not in future}
            if lifting and lifting != stance:
                stance -= lifting
        key = frozenset(stance)
        ordered = self._ordered.get(key)
        if ordered is None:
            ordered = self._ordered[key] = tuple(b.name for b in self.robot.contact_bodies
                                                 if b.name in stance)
        return ordered

    def load_shares(self, ref: Reference, stance: tuple[str, ...]) -> np.ndarray | None:
        """Load shares α_k of the stance feet (``reference_load_shares``), or None (not two
        feet or ``load_share`` off). Reads the sole placements of ``self.data`` (set by
        ``constrained_inverse_dynamics``)."""
        if not self.settings.load_share or len(stance) != 2:
            return None
        centres = [self.data.oMf[b.frame_id].act(self._centre[b.name])
                   for b in _stance_bodies(self.robot, stance)]
        return reference_load_shares(ref, stance, centres, self._g)

    def internal_forces(self, meas: Measurement, stance: tuple[str, ...], lam0: np.ndarray,
                        null_basis: np.ndarray,
                        shares: np.ndarray | None = None) -> np.ndarray | None:
        """Coefficients c of the internal wrenches added to the minimum-norm λ₀ (double support).

        Default: the sole-centre weighted allocation of the module docstring (step 4),
        λ = argmin ‖W T λ − t‖ subject to J_bᵀ λ = J_bᵀ λ₀, with T moving each wrench to its
        sole centre, W weighing moments by 1/ρ and each foot by 1/α_k (``shares``; 1 when
        None) and t the shares' target (α_k F on the forces, zero otherwise). With
        μ = W T λ the problem is a minimum-distance one under B μ = J_bᵀ λ₀,
        B = J_bᵀ (W T)⁻¹, so μ = t + Bᵀ (B Bᵀ)⁻¹ (J_bᵀ λ₀ − B t) (a Cholesky solve; B Bᵀ is
        positive definite, the most loaded foot's J_b block alone being invertible) and
        (W T)⁻¹ is block-diagonal and explicit, α_k [[I, 0], [[d_k]×, ρ I]] (d_k the sole
        origin → centre offset). Returns c = null_basisᵀ (λ − λ₀) (null_basis orthonormal, so
        λ₀ + null_basis c = λ). Override to impose another law; ``None`` keeps λ₀. Compiled
        (``linalg_kernels.sole_centre_allocation``; its numpy reference
        ``linalg.sole_centre_allocation_reference`` where B Bᵀ is not positive definite).
        """
        rho = self.settings.cop_length
        if rho == 0.0 and shares is None:
            return None
        bodies = _stance_bodies(self.robot, stance)
        data = self.data  # sole placements set by constrained_inverse_dynamics
        rotations = np.array([data.oMf[b.frame_id].rotation for b in bodies])
        centres = np.array([self._centre[b.name] for b in bodies])
        ok, c = sole_centre_allocation(lam0, self._Jb, null_basis, rotations, centres, rho,
                                       self._no_shares if shares is None else shares,
                                       self._rows_arr, self._force_rows_arr)
        if ok:
            return c
        return sole_centre_allocation_reference(lam0, self._Jb, null_basis, rotations, centres,
                                                rho, shares, self._rows, self._force_rows)

    def compute(self, meas: Measurement) -> ControlOutput:
        """Torques for ``meas`` tracking ``behavior.reference(meas.t)`` (eqs. 34–39)."""
        robot, s = self.robot, self.settings
        ref = self.behavior.reference(meas.t)
        if ref.q_joints is None:
            raise ConfigError(f"ctc needs Reference.q_joints; behaviour "
                              f"{getattr(self.behavior, 'name', self.behavior)!r} gives none")
        q_a, v_a = meas.q[self._qi], meas.v[self._vi]
        q_err = ref.q_joints - q_a
        a_des = s.kp * q_err - s.kd * v_a
        if ref.v_joints is not None:
            a_des += s.kd * ref.v_joints
        if ref.a_joints is not None:
            a_des += ref.a_joints
        stance = self.contact_set(meas, ref)
        if self.compiled and stance:
            out = self._compiled_step(meas, ref, stance, a_des, q_err)
            if out is not None:
                return out

        shares: dict[str, np.ndarray | None] = {"value": None}

        def law(lam0, null_basis):
            shares["value"] = self.load_shares(ref, stance)
            c = self.internal_forces(meas, stance, lam0, null_basis, shares["value"])
            return np.zeros(null_basis.shape[1]) if c is None else c

        self._Jb = None
        dyn = constrained_inverse_dynamics(robot, self.data, meas.q, meas.v, a_des, stance,
                                           s.rcond, law, s.kd_stance, self)
        tau = dyn.tau
        limit = robot.effort_limit
        clamped = np.minimum(np.maximum(tau, -limit), limit)
        saturated = int(np.count_nonzero(clamped != tau))
        if s.clamp:
            tau = clamped
        return ControlOutput(tau, _info(dyn.lam, stance, a_des, q_err, dyn.constraint_residual,
                                        saturated, shares["value"]))

    def _compiled_step(self, meas: Measurement, ref: Reference, stance, a_des: np.ndarray,
                       q_err: np.ndarray) -> ControlOutput | None:
        """Steps 1, 3, 4, the load shares and the clamp as one compiled call
        (``ctc_kernels.ctc_step``) after pinocchio's ``computeAllTerms``; None where the numpy
        path must take the step (a singular chain)."""
        s, robot, model, data = self.settings, self.robot, self.robot.model, self.data
        q = np.ascontiguousarray(meas.q, float)
        v = np.ascontiguousarray(meas.v, float)
        pin.computeAllTerms(model, data, q, v)
        pin.updateFramePlacements(model, data)
        slots = self._slots.get(stance)
        if slots is None:
            slots = self._slots[stance] = np.array([self._slot[n] for n in stance],
                                                   dtype=np.int64)
        share_in = self._share_in
        mode = self._share_mode(ref, stance, share_in)
        step = self._step_entry
        if step is None:
            step = self._step_entry = entry_point(ctc_step)
        M, h, J, dJ = self._views
        code, out = step(M, h, J, dJ, self._oMf, self._mask, self._fids, v, slots,
                         self._rows_arr, np.ascontiguousarray(a_des, float), robot.n_base_v,
                         s.rcond, s.kd_stance, s.cop_length, self._centres,
                         self._force_rows_arr, mode, share_in, self._share_consts,
                         robot.effort_limit, s.clamp)
        if code != 0:
            return None
        nv, nj = model.nv, len(a_des)
        tau = out[nv:nv + nj]
        rows, nr = self._rows, len(self._rows)

        def info() -> dict:  # built when first read, from this step's arrays
            i = nv + nj + nr * len(stance)
            lam = out[nv + nj:i]
            wrenches = {}
            for k, name in enumerate(stance):
                w = np.zeros(6)
                w[rows] = lam[nr * k:nr * (k + 1)]
                wrenches[name] = w
            alpha = out[i + 2:]
            return _info(wrenches, stance, a_des, q_err, float(out[i]), int(out[i + 1]),
                         alpha.copy() if alpha.size else None)

        return ControlOutput(tau, LazyDict(info))

    def _share_mode(self, ref: Reference, stance, share_in: np.ndarray) -> int:
        """The load-share input of ``ctc_step`` (``reference_load_shares``): 0 none (not two
        feet, ``load_share`` off, no reference for them), 1 the reference's planned α_2, 2 its
        cart-table ZMP (CoM and acceleration), written into ``share_in``.

        Raises:
            ConfigError: ``Reference.load_share`` lacks a stance foot.
        """
        if not self.settings.load_share or len(stance) != 2:
            return 0
        return load_share_inputs(ref, stance, share_in)


def _info(lam, stance, a_des, q_err, residual, saturated, shares) -> dict:
    """``ComputedTorqueController.compute``'s diagnostics (its docstring)."""
    return {
        "lam": lam,
        "stance": stance,
        "a_des": a_des,
        "q_err": q_err,
        "tracking_error": math.sqrt(np.dot(q_err, q_err) / len(q_err)),
        "constraint_residual": residual,
        "saturated": saturated,
        "load_share": shares,
    }


def _index_of(idx: np.ndarray) -> slice | np.ndarray:
    """A slice for a contiguous ascending index array (a view, no copy), else the array."""
    idx = np.asarray(idx, dtype=int)
    if idx.size and np.array_equal(idx, np.arange(idx[0], idx[0] + idx.size)):
        return slice(int(idx[0]), int(idx[0]) + idx.size)
    return idx
