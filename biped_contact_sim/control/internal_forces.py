"""Internal-force control of the whole-body controller (Sentis, Park, Khatib 2010, §IV).

docs/methods.md §4.2, step 4 of ``control.wbc``. For a support of n_s ≥ 2 surface contacts:

* the virtual-linkage model at the commanded CoPs (``model``): W_com of eq. 16 and the rows of
  W_int — App. C eq. 82 for two feet (tension between the foot CoPs, three tangential CoP
  moments, two normal moments), the general linkage of eqs. 10–17 / App. D for more
  (3(n_s − 2) edge tensions, 2 n_s CoP moments, n_s normal moments); the row layout is chosen
  when the support changes and kept while it lasts, the rows are refilled every step;
* the internal-force law (``command``): F_int,cmd = F_int,ref + kp_int e + ki_int ∫ e dt with
  e = F_int,ref − W_int f_meas (§IV-E; integral clamped to ``int_limit``, reset when a support
  body's measured normal force drops below ``min_normal_force`` or the support changes), and
  the torques of eq. 42,
      Γ_int = (J*ᵀ_{i|l})⁺ (F_int,cmd − F_int,{t,p} + μ_i + p_i)
  (the damped solve of ``linalg.internal_force_torques_reference``, compiled in
  ``linalg_kernels.internal_force_law``);
* our additions at a change of support (``control.contact_set``): F_int,ref starts from the
  internal forces the last applied torques make in the new support and reaches the reference
  along σ over ``transition_time``; a body being unloaded gets the F_int,ref closest to the
  reference that gives it the wrench (1 − σ) w₀ (G⁻¹ of eq. 47); with two stance feet the
  load-share tension t_12,ref += (α_1 − α_2) F·e_12 (``wbc`` module docstring); the support
  bodies in ``Reference.no_slip`` get the F_int,ref closest to the reference that leaves them
  no tangential force, changing the tensions only (``contact_set.no_slip_reference``): their
  normal force follows from the other contacts' CoP references, or, where that leaves less
  than ``Reference.preload``, the other contacts' CoPs move away from them until it is met.
"""

from __future__ import annotations

import numpy as np

from biped_contact_sim.control.contact_set import (
    ContactTransitions,
    no_slip_reference,
    unloading_reference,
)
from biped_contact_sim.control.ctc import reference_load_shares
from biped_contact_sim.control.grasp import (
    MOMENT,
    NORMAL_FORCE,
    TENSION,
    ContactAnchor,
    eq82_spec,
    grasp_model,
    orthogonalize,
    spec_labels,
)
from biped_contact_sim.control.internal_forces_kernels import (
    U_COLS,
    U_SIGMA,
    U_W0,
    linkage,
    surface_resultant,
    wrenches_at,
)
from biped_contact_sim.control.internal_forces_kernels import no_slip as no_slip_kernel
from biped_contact_sim.control.linalg import internal_force_torques_reference
from biped_contact_sim.control.linalg_kernels import internal_force_law
from biped_contact_sim.errors import InputError


class InternalForces:
    """Virtual-linkage model and internal-force law of ``WholeBodyController`` (module
    docstring). State: the PI integral, the transition ramp's start, the wrenches of bodies
    being unloaded, the linkage layout of the current support.

    Args:
        settings: the controller's ``WBCSettings``.
        dt: control period [s].
        transitions: the controller's ``ContactTransitions``.
        sole_centre: contact body name → centre of its contact points (body frame).
        g: gravity [m/s²].
    """

    def __init__(self, settings, dt: float, transitions: ContactTransitions,
                 sole_centre: dict[str, np.ndarray], g: float):
        self.settings, self.dt, self.transitions = settings, dt, transitions
        self._sole_centre, self._g = sole_centre, g
        self._layouts: dict[tuple, tuple] = {}
        self._no_measurement = np.zeros(0)
        self._no_unload = np.zeros((0, U_COLS))
        #: the no-slip reference and the end of the law (tension, PI, Γ_int) compiled
        #: (``internal_forces_kernels.no_slip``, ``linalg_kernels.internal_force_law``); False:
        #: their numpy forms ``no_slip_reference``, ``internal_force_law_reference`` (the tests)
        self.compiled = True
        self.reset()

    def reset(self) -> None:
        self.integral: np.ndarray | None = None
        self._stance: tuple[str, ...] | None = None
        self._f_int_start: np.ndarray | None = None
        self._unload_w0: dict[str, np.ndarray] = {}
        self._linkage: tuple | None = None  # (support, spec array, labels) of n_s ≥ 3
        self._spec = np.zeros((0, 3), dtype=np.int64)  # the current model's row specs

    # ------------------------------------------------------------------ model
    def model(self, stance, anchors: np.ndarray, rotations: np.ndarray,
              com: np.ndarray) -> tuple:
        """(W_com, W_int, row labels, model name "eq82" | "general") at the anchors P_k
        (world) with sole rotations R_k; all None for n_s < 2.

        Raises:
            InputError: two anchors coincide (no tension line between them).
        """
        n_s = len(stance)
        if n_s < 2:
            return None, None, None, None
        W_com = np.empty((6, 6 * n_s))
        surface_resultant(anchors, com, W_com)
        if n_s == 2:
            spec_arr, labels = self._eq82_layout(stance, anchors, rotations)
            name = "eq82"
        else:
            spec_arr, labels = self._general_layout(stance, anchors, rotations, com)
            name = "general"
        W_int = np.empty((len(spec_arr), 6 * n_s))
        if not linkage(spec_arr, anchors, rotations, np.arange(n_s, dtype=np.int64) * 6,
                       W_int):
            raise InputError("two commanded CoPs coincide: no tension line between them")
        if n_s > 3 and (spec_arr[:, 0] == NORMAL_FORCE).any():
            orthogonalize(W_com, W_int, spec_arr.tolist())
        self._spec = spec_arr  # the rows' (kind, contact, axis), for ``command``
        return W_com, W_int, labels, name

    def _eq82_layout(self, stance, anchors, rotations) -> tuple[np.ndarray, tuple[str, ...]]:
        """(eq. 82 row specs as an int array for ``internal_forces_kernels.linkage``, row
        labels), cached per stance and retained axis (``grasp.eq82_spec``)."""
        e = anchors[1] - anchors[0]
        R2 = rotations[1]
        k = 0 if abs(R2[0, 0] * e[0] + R2[1, 0] * e[1] + R2[2, 0] * e[2]) \
            <= abs(R2[0, 1] * e[0] + R2[1, 1] * e[1] + R2[2, 1] * e[2]) else 1
        key = (stance, k)
        hit = self._layouts.get(key)
        if hit is None:
            spec = eq82_spec(anchors, rotations)
            hit = self._layouts[key] = (np.array(spec, dtype=np.int64).reshape(-1, 3),
                                        spec_labels(spec, stance))
        return hit

    def _general_layout(self, stance, anchors, rotations, com) -> tuple[np.ndarray, tuple]:
        """Row specs and labels of the n_s ≥ 3 virtual linkage (``grasp.grasp_model``'s
        general model), chosen when the support changes and kept while it lasts."""
        if self._linkage is None or self._linkage[0] != stance:
            grasp = grasp_model([ContactAnchor(P, R, "6d", name) for P, R, name
                                 in zip(anchors, rotations, stance, strict=True)], com)
            self._linkage = (stance, np.array(grasp.spec, dtype=np.int64).reshape(-1, 3),
                             grasp.labels)
        return self._linkage[1], self._linkage[2]

    # ------------------------------------------------------------------ law
    def no_linkage(self, stance) -> None:
        """A step without internal forces (n_s < 2): forget the integral."""
        self.integral = None
        self._stance = stance

    def command(self, t: float, ref, stance, bodies, measured: np.ndarray | None,
                origins: np.ndarray, rotations: np.ndarray, anchors: np.ndarray, W_com, W_int,
                labels, name: str, f0: np.ndarray, D: np.ndarray, G: np.ndarray,
                T: np.ndarray, tau: np.ndarray, tau_prev: np.ndarray | None) -> tuple:
        """Γ_int of eq. 42 for the task torques ``tau`` (None when ``internal_forces`` is off)
        and the figures of the law.

        Returns:
            (Γ_int or None, fallbacks, f_int_ref, f_int_cmd, f_int_meas or None, load shares
            or None).

        Raises:
            InputError: the reference's internal forces do not match the model's rows.
        """
        s = self.settings
        n_s = len(stance)
        m_int = W_int.shape[0]
        f_int_user = self.user_reference(ref, m_int, name, labels)
        contact_ok = measured is not None
        F_meas = self._no_measurement
        if contact_ok:
            F_meas = np.empty(6 * n_s)
            wrenches_at(measured, rotations, origins, anchors, F_meas)
        self._begin(stance, m_int, contact_ok)
        if self.transitions.changed:
            # The ramp starts from the internal forces the last applied torques make in the
            # new support (eq. 20): the torques' internal part stays continuous, and a
            # contact's impact impulse, measured at the step it lands, is not commanded.
            self._f_int_start = (None if tau_prev is None
                                 else np.dot(W_int, f0 - np.dot(D, tau_prev)))
        f_task = f0 - np.dot(D, tau)  # contact wrenches the tasks command (eq. 20)
        no_slip = [k for k, body in enumerate(stance) if body in ref.no_slip]
        spec = self._spec
        if no_slip:
            tensions = np.flatnonzero(spec[:, 0] == TENSION).astype(np.int64)
            preload_free = np.concatenate([tensions, self._cop_rows_towards(
                no_slip, anchors, rotations)])
            if self.compiled:
                out = np.empty(m_int)
                no_slip_kernel(np.array(no_slip, dtype=np.int64), rotations, W_com, W_int,
                               f_task, f_int_user, tensions if len(tensions)
                               else np.arange(m_int, dtype=np.int64), float(ref.preload),
                               preload_free, out)
                f_int_user = out
            else:
                f_int_user = no_slip_reference(
                    no_slip, rotations, W_com, W_int, f_task, f_int_user,
                    free=tensions if len(tensions) else None, preload=ref.preload,
                    preload_free=preload_free)
        ramp = self.transitions.ramp(t)
        start = self._f_int_start
        if ramp < 1.0 and start is not None and start.shape == (m_int,):
            f_int_ref = start + ramp * (f_int_user - start)
        else:
            f_int_ref = f_int_user
        unloading = self._unloading_targets(t, stance, f_task, f0, D, tau_prev)
        alpha = None
        if unloading:
            # free: every tension and out-of-plane force, and the unloading bodies' own
            # moments; the other contacts' CoPs and normal moments stay at their references
            own = np.flatnonzero((spec[:, 0] != MOMENT) | np.isin(spec[:, 1], list(unloading)))
            f_int_ref = unloading_reference(unloading, W_com, W_int, f_task, f_int_ref,
                                            free=own)
        elif s.load_share and n_s == 2:
            centres = [origins[k] + np.dot(rotations[k], self._sole_centre[b.name])
                       for k, b in enumerate(bodies)]
            alpha = reference_load_shares(ref, stance, centres, self._g)
            if alpha is not None and name == "eq82":  # the load-share moment
                # (``internal_forces_kernels.moment_share``)
                e = W_int[0, :3]
                M = e @ (f_task[3:6] + f_task[9:12])
                u = rotations[0].T @ e
                uu = u[0] ** 2 + u[1] ** 2
                if uu >= 1e-12:
                    f_int_ref = f_int_ref.copy()
                    f_int_ref[1:3] += alpha[0] * M * u[:2] / uu
        pi_on = contact_ok and (s.kp_int > 0 or s.ki_int > 0)
        tension = 0.0 if alpha is None else float(alpha[0] - alpha[1])
        # the rest (tension, measured forces, PI, Γ_int): one compiled call, on C-ordered
        # arrays (the numpy stages, the path of a singular support, can give others)
        law, order = ((internal_force_law, np.ascontiguousarray) if self.compiled
                      else (internal_force_law_reference, np.asarray))
        d_tau, damped, f_int_ref, f_int_cmd, f_int_meas = law(
            *(order(x, dtype=float) for x in (W_int, D, G, T, f_task)), F_meas, contact_ok,
            order(f_int_ref, dtype=float), tension, self.integral, s.kp_int,
            s.ki_int * self.dt, s.int_limit, pi_on, s.internal_forces, s.task_damping)
        if not contact_ok:
            f_int_meas = None
        if not s.internal_forces:
            d_tau = None
        fallbacks = int(damped)
        return d_tau, fallbacks, f_int_ref, f_int_cmd, f_int_meas, alpha

    def user_reference(self, ref, m_int: int, name: str, labels) -> np.ndarray:
        """F_int of the reference (zeros if None), checked against the model's rows.

        Raises:
            InputError: the reference's internal forces do not match the model's rows.
        """
        if ref.internal is None:
            return np.zeros(m_int)
        f_int_user = np.array(ref.internal, float)
        if f_int_user.shape != (m_int,):
            raise InputError(f"internal-force reference has shape {f_int_user.shape}; "
                             f"the {name} model has {m_int} rows: " + ", ".join(labels))
        return f_int_user

    def _begin(self, stance, m_int: int, contact_ok: bool) -> None:
        """The integral: reset at a change of support, of size, or when a contact is lost
        (anti-windup, §IV-E)."""
        if self._stance != stance or self.integral is None \
                or self.integral.shape != (m_int,) or not contact_ok:
            self.integral = np.zeros(m_int)
        self._stance = stance

    def compiled_plan(self, t: float, ref, stance, m_int: int, name: str, labels,
                      contact_ok: bool, tau_prev: np.ndarray | None) -> tuple:
        """What the compiled step needs to run the whole law (``wbc_kernels.wbc_step``, stage 4,
        the no-slip and unloading references included), with ``command``'s bookkeeping.

        Returns:
            (F_int of the reference, the ramp's start (empty if none), whether the start is to
            be recomputed from the last applied torques (a change of support)).

        Raises:
            InputError: the reference's internal forces do not match the model's rows.
        """
        f_int_user = self.user_reference(ref, m_int, name, labels)
        self._begin(stance, m_int, contact_ok)
        recompute = self.transitions.changed and tau_prev is not None
        if self.transitions.changed and tau_prev is None:
            self._f_int_start = None
        start = self._f_int_start
        return f_int_user, (self._no_measurement if start is None else start), recompute

    def compiled_unloading(self, t: float, stance) -> tuple[int, int, np.ndarray]:
        """``_unloading_targets``' inputs for the compiled step (``unloading_rows``):
        (the stance contacts being unloaded as bits, those whose w₀ is known as bits, the
        table (n_s, ``U_COLS``) of w₀ and σ); w₀ of the other stance bodies is forgotten."""
        if not self.transitions.unloading:
            for body in stance:
                self._unload_w0.pop(body, None)
            return 0, 0, self._no_unload
        mask = known = 0
        table = np.zeros((len(stance), U_COLS))
        for k, name in enumerate(stance):
            sigma = self.transitions.unload_fraction(name, t)
            if sigma is None:
                self._unload_w0.pop(name, None)
                continue
            mask |= 1 << k
            table[k, U_SIGMA] = sigma
            w0 = self._unload_w0.get(name)
            if w0 is not None:
                known |= 1 << k
                table[k, U_W0:U_W0 + 6] = w0
        return mask, known, table

    def keep_unloading(self, stance, mask: int, known: int, table: np.ndarray) -> None:
        """Keep the w₀ the compiled step took (``compiled_unloading``'s table) of the bodies
        whose unloading started at this step."""
        for k, name in enumerate(stance):
            if (mask >> k) & 1 and not (known >> k) & 1:
                self._unload_w0[name] = table[k, U_W0:U_W0 + 6].copy()

    def eq82_rows(self, stance, k: int) -> tuple[np.ndarray, tuple[str, ...]]:
        """(eq. 82 row specs, labels) with the retained axis k of contact 2, cached; sets them
        as the current model's rows."""
        key = (stance, k)
        hit = self._layouts.get(key)
        if hit is None:
            spec = ((TENSION, 0, 1), (MOMENT, 0, 0), (MOMENT, 0, 1), (MOMENT, 1, k),
                    (MOMENT, 0, 2), (MOMENT, 1, 2))
            hit = self._layouts[key] = (np.array(spec, dtype=np.int64).reshape(-1, 3),
                                        spec_labels(spec, stance))
        self._spec = hit[0]
        return hit

    def general_rows(self, stance, anchors, rotations, com) -> tuple[np.ndarray, tuple]:
        """Row specs and labels of the n_s ≥ 3 linkage for the compiled step (``model``'s);
        sets them as the current model's rows."""
        spec, labels = self._general_layout(stance, anchors, rotations, com)
        self._spec = spec
        return spec, labels

    def _cop_rows_towards(self, no_slip, anchors: np.ndarray,
                          rotations: np.ndarray) -> np.ndarray:
        """Rows of W_int that move the CoP of each contact not in ``no_slip`` along the
        direction to the (first) no-slip contact: its tangential moment about the frame's y
        axis (which shifts the CoP along x) if that direction is closer to its frame's x axis,
        else about x."""
        spec, out = self._spec, []
        for k in range(len(anchors)):
            if k in no_slip:
                continue
            d = np.dot(rotations[k].T, anchors[no_slip[0]] - anchors[k])
            axis = 1 if abs(d[0]) >= abs(d[1]) else 0
            out += np.flatnonzero((spec[:, 0] == MOMENT) & (spec[:, 1] == k)
                                  & (spec[:, 2] == axis)).tolist()
        return np.array(out, dtype=np.int64)

    def _unloading_targets(self, t: float, stance, f_task: np.ndarray, f0: np.ndarray,
                           D: np.ndarray, tau_prev: np.ndarray | None) -> dict[int, np.ndarray]:
        """Target wrenches (world, about the anchor) of the stance bodies being unloaded:
        (1 − σ) w₀, w₀ their wrench under the last applied torques when the unloading started
        (``control.contact_set``)."""
        out = {}
        for k, name in enumerate(stance):
            sigma = self.transitions.unload_fraction(name, t)
            if sigma is None:
                self._unload_w0.pop(name, None)
                continue
            if name not in self._unload_w0:  # the wrench the last torques make (eq. 20)
                source = f_task if tau_prev is None else f0 - np.dot(D, tau_prev)
                self._unload_w0[name] = source[6 * k:6 * k + 6].copy()
            out[k] = (1.0 - sigma) * self._unload_w0[name]
        return out


def internal_force_law_reference(W_int, D, G, T, f_task, F_meas, has_meas, f_int_ref, tension,
                                 integral, kp_int, ki_dt, int_limit, pi_on, torques_on, damping):
    """The end of ``InternalForces.command`` in numpy: the reference of the compiled
    ``linalg_kernels.internal_force_law`` (same arguments and returns)."""
    if tension != 0.0:
        # F·e_12 with F = Σ f_k: the tension row W_int[0] is e_12 on f_1, −e_12 on f_2
        F_e12 = np.dot(W_int[0, :3], f_task[:3] + f_task[6:9])
        f_int_ref = f_int_ref.copy()
        f_int_ref[0] += tension * F_e12
    f_int_meas = np.dot(W_int, F_meas) if has_meas else np.zeros(0)
    f_int_cmd = f_int_ref.copy()
    if has_meas and pi_on:
        e = f_int_ref - f_int_meas
        integral += ki_dt * e
        np.minimum(np.maximum(integral, -int_limit, out=integral), int_limit, out=integral)
        f_int_cmd += kp_int * e + integral
    if not torques_on:
        return np.zeros(0), False, f_int_ref, f_int_cmd, f_int_meas
    # Γ_int = (J*ᵀ_{i|l})⁺ (F_int,cmd − F_int,{t,p}) (eq. 42)
    d_tau, damped = internal_force_torques_reference(W_int, D, G, T, f_int_cmd, f_task, damping)
    return d_tau, damped, f_int_ref, f_int_cmd, f_int_meas


__all__ = ["InternalForces"]
