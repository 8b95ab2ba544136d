"""The tables of a ``wbc`` control step (``wbc_kernels``' layout), built from the reference.

``StepTables`` is the part of ``WholeBodyController`` that turns the behaviour's reference into
what ``wbc_kernels.wbc_step`` and the numpy stages (``wbc_stages``) read: constant tables made
once (the frame slots of the contact bodies, base and torso, the joints that move each, sole
centres, gains, pinocchio's arrays as views) and per step the support's slots and commanded
CoPs, the task table in priority order with its targets, the posture references and the
switches of the step. docs/methods.md §4.2; the priorities and targets are ``control.wbc``'s
module docstring, step 3.
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin

from biped_contact_sim.control import wbc_kernels as wk
from biped_contact_sim.control.base import Measurement
from biped_contact_sim.control.body_tasks import target_rotation
from biped_contact_sim.control.ctc import load_share_inputs
from biped_contact_sim.control.grasp import NORMAL_FORCE


def frame_placements_view(model, data) -> np.ndarray | None:
    """A read-only (nframes, 12) view of ``data.oMf`` (each row: R column-major, then the
    translation), or None where pinocchio's layout is not the one checked here.

    pinocchio keeps the frame placements in one aligned vector of SE3 (9 + 3 doubles, 96
    bytes each) and returns each rotation as a view into it; a view of the whole vector saves
    a Python call per frame and step. Checked against ``data.oMf`` after a random placement,
    so that a pinocchio laying them out otherwise gets the numpy path.
    """
    n = model.nframes
    first = data.oMf[0].rotation
    if n < 2 or not first.flags.f_contiguous:
        return None
    base = first.__array_interface__["data"][0]
    stride = data.oMf[1].rotation.__array_interface__["data"][0] - base
    view = np.lib.stride_tricks.as_strided(first, shape=(n, 12), strides=(stride, 8),
                                           writeable=False)
    q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
    pin.framesForwardKinematics(model, data, q)
    for k in range(n):
        oMf = data.oMf[k]
        if oMf.rotation.__array_interface__["data"][0] != base + k * stride \
                or not np.array_equal(view[k, :9], oMf.rotation.ravel(order="F")) \
                or not np.array_equal(view[k, 9:], oMf.translation):
            return None
    return view


#: joints whose motion subspace is constant in the joint frame (no bias acceleration c = Ṡ q̇):
#: for them J̇ v, with J̇ from ``computeAllTerms``, is the drift the compiled steps read
_NO_BIAS = ("JointModelFreeFlyer", "JointModelRX", "JointModelRY", "JointModelRZ",
            "JointModelRUB", "JointModelRevoluteUnaligned", "JointModelRevoluteUnbounded",
            "JointModelPX", "JointModelPY", "JointModelPZ", "JointModelPrismaticUnaligned",
            "JointModelTranslation")


def drift_from_jacobians(model) -> bool:
    """Whether every joint of the model has no bias acceleration, so that a frame's classical
    acceleration at v̇ = 0 follows from J and J̇ alone (``wbc_kernels.frame_rows``); a planar
    base (a composite joint) has one, and its controllers take the numpy path."""
    return all(model.joints[j].shortname().startswith(_NO_BIAS)
               for j in range(1, model.njoints))


class StepTables:
    """The step tables of ``WholeBodyController`` (module docstring); a mixin: it reads the
    controller's robot, settings, data, contact bodies, transitions and start-up blend."""

    def _static_tables(self) -> None:
        """The step's constant tables: frame slots (contact bodies, base, torso), the columns
        that move each slot's frame, sole centres, gains; pinocchio's arrays as views."""
        robot, s, data = self.robot, self.settings, self.data
        model = robot.model
        frames = [b.frame_id for b in robot.contact_bodies] + [self._base_frame]
        if s.kp_torso > 0:
            frames.append(self._torso_frame)
        self._slot = {b.name: k for k, b in enumerate(robot.contact_bodies)}
        self._base_slot = len(robot.contact_bodies)
        self._torso_slot = self._base_slot + 1
        self._fids = np.array(frames, dtype=np.int64)
        self._mask = np.zeros((len(frames), model.nv), dtype=bool)
        for k, fid in enumerate(frames):  # columns of the joints supporting the frame's joint
            for j in model.supports[model.frames[fid].parentJoint]:
                if j > 0:
                    self._mask[k, model.idx_vs[j]:model.idx_vs[j] + model.nvs[j]] = True
        self._centres = np.zeros((len(frames), 3))
        for b in robot.contact_bodies:
            self._centres[self._slot[b.name]] = self._sole_centre[b.name]
        consts = np.zeros(wk.N_CONSTS)
        consts[[wk.C_KP_COM, wk.C_KD_COM, wk.C_KP_POST, wk.C_KD_POST, wk.C_KD_AM, wk.C_RCOND,
                wk.C_DAMP, wk.C_KP_INT, wk.C_KI_DT, wk.C_INT_LIMIT, wk.C_G]] = (
            s.kp_com, s.kd_com, s.kp_posture, s.kd_posture, s.kd_am, s.rcond, s.task_damping,
            s.kp_int, s.ki_int * self.dt, s.int_limit, self._g)
        self._consts = consts
        # the compiled step takes the actuated coordinates as v[j0:], q[qj0:]
        vi, qi = self._vi, self._qi
        contiguous = (isinstance(vi, slice) and vi.stop == robot.nv and isinstance(qi, slice)
                      and qi.stop == robot.nq)
        self._j0 = vi.start if contiguous else None
        self._qj0 = qi.start if contiguous else None
        self._oMf = frame_placements_view(model, data)
        self._com, self._vcom = data.com[0], data.vcom[0]  # views (copied for ``info``)
        self._views = (data.nle, data.J, data.dJ, data.Jcom, data.com[0], data.vcom[0],
                       data.acom[0], data.hg.angular)
        self._empty = np.zeros(0)
        self._no_wrench = np.zeros((0, 6))
        self._no_spec = np.zeros((0, 3), dtype=np.int64)
        self._post = np.zeros((3, robot.n_joints))
        self._sup: dict[tuple, np.ndarray] = {}  # stance → the slots of its bodies
        self._task_tables: dict[tuple, tuple] = {}  # task layout → (tasks, task_par) template
        self._ortho: tuple = (None, 0)  # (n_s ≥ 3 linkage rows, orthogonalize) of _layout
        self._flags0 = np.zeros(wk.N_FLAGS, dtype=np.int64)
        self._flags0[wk.F_HEADING] = int(s.kp_base > 0)

    def _plan(self, ref, t: float, stance, bodies, requested, meas: Measurement) -> tuple:
        """The step's tables (``wbc_kernels`` layout) from the reference: the support slots and
        commanded CoPs (body frames), the task table in priority order — CoM ≻ [angular
        momentum, double support] ≻ bodies outside the support (pose; force/position) ≻ base ≻
        torso — with its targets, the posture references; and the force tasks' figures."""
        s, data = self.settings, self.data
        n_s = len(bodies)
        sup = self._sup.get(stance)
        if sup is None:
            sup = self._sup[stance] = np.array([self._slot[b.name] for b in bodies],
                                               dtype=np.int64)
        sup_local = np.empty((n_s, 3))
        cops, centre = ref.cop, self._sole_centre
        for k in range(n_s):
            name = bodies[k].name
            cop = cops.get(name)
            if cop is None:
                sup_local[k] = centre[name]
            else:
                sup_local[k, 0], sup_local[k, 1], sup_local[k, 2] = cop[0], cop[1], 0.0
        # bodies outside the support with a task: pose targets (swing feet, reaching hands; a
        # requested body not yet loaded keeps its target, or is damped), force/position tasks
        pose_tasks, force_tasks = [], []
        if requested != stance:
            for name in requested:
                if name not in stance:
                    pose_tasks.append((self._bodies[name], ref.feet.get(name)))
        feet = ref.feet
        for name in feet:  # (the targets of support bodies are not read: see LazyValues)
            if name in stance or name in requested:
                continue
            target = feet[name]
            body = self._body(name)
            (force_tasks if target.normal is not None else pose_tasks).append((body, target))
        am = n_s == 2 and s.am_task and not self.startup.active  # ``control.startup``
        has_com = ref.com is not None
        tasks, par = self._task_table(has_com, am, len(pose_tasks), len(force_tasks))
        k = 0
        if has_com:
            par[0, wk.P_P:wk.P_P + 3] = ref.com
            if ref.com_vel is not None:
                par[0, wk.P_V:wk.P_V + 3] = ref.com_vel
            if ref.com_acc is not None:
                par[0, wk.P_A:wk.P_A + 3] = ref.com_acc
            k = 1
        k += am
        for body, target in pose_tasks:
            self._pose_par(tasks[k], par[k], body, self._blend(body.name, target, t))
            k += 1
        force_info = {}
        for body, target in force_tasks:
            self._pose_par(tasks[k], par[k], body, self._blend(body.name, target, t))
            n_hat = np.asarray(target.normal, float)
            n_hat = n_hat / math.sqrt(n_hat @ n_hat)
            par[k, wk.P_N:wk.P_N + 3] = n_hat
            # F: the commanded reaction; the task applies the operational force −F n on the
            # body (``task_torques``), pushing it into its surface
            par[k, wk.P_F], force_info[body.name] = self._normal_force(body, target, n_hat,
                                                                       meas, data)
            w = meas.wrenches.get(body.name)
            if w is not None and w[2] > 0.0:  # a known external force on the robot
                par[k, wk.P_WR:wk.P_WR + 6] = w
                par[k, wk.P_HASW] = 1.0
            k += 1
        post = self._post
        flags = self._flags0.copy()
        if ref.q_joints is not None:
            post[0] = ref.q_joints
            flags[wk.F_POST_Q] = 1
        if ref.v_joints is not None:
            post[1] = ref.v_joints
            flags[wk.F_POST_V] = 1
        if ref.a_joints is not None:
            post[2] = ref.a_joints
            flags[wk.F_POST_A] = 1
        return sup, sup_local, tasks, par, post, flags, force_info

    def _task_table(self, has_com: bool, am: bool, n_pose: int, n_force: int) -> tuple:
        """(tasks, task_par) of a step, fresh copies of the layout's template: the kinds in
        priority order — CoM ≻ [angular momentum, double support] ≻ bodies outside the
        support (pose; force/position) ≻ base ≻ torso — with the base and torso rows' slots
        and gains filled; the other rows' targets are the step's."""
        key = (has_com, am, n_pose, n_force)
        hit = self._task_tables.get(key)
        if hit is None:
            s = self.settings
            kinds = ([wk.COM] if has_com else []) + ([wk.AM] if am else []) \
                + [wk.POSE] * n_pose + [wk.FORCE] * n_force \
                + ([wk.ORIENT] if s.kp_base > 0 else []) \
                + ([wk.ORIENT] if s.kp_torso > 0 else [])
            tasks = np.zeros((len(kinds), 2), dtype=np.int64)
            tasks[:, 0] = kinds
            par = np.zeros((len(kinds), wk.PAR))
            k = int(has_com) + int(am) + n_pose + n_force
            for slot, kp, kd, on in ((self._base_slot, s.kp_base, s.kd_base, s.kp_base > 0),
                                     (self._torso_slot, s.kp_torso, s.kd_torso,
                                      s.kp_torso > 0)):
                if on:  # base: upright with the stance's heading; torso: the same (our addition)
                    tasks[k, 1] = slot
                    par[k, wk.P_KP], par[k, wk.P_KD] = kp, kd
                    k += 1
            hit = self._task_tables[key] = (tasks, par)
        return hit[0].copy(), hit[1].copy()

    def _pose_par(self, task: np.ndarray, par: np.ndarray, body, target) -> None:
        """A pose task's slot, gains and target (``body_tasks``: no target, only damped)."""
        s = self.settings
        task[1] = self._slot[body.name]
        par[wk.P_KP], par[wk.P_KD] = s.kp_foot, s.kd_foot
        if target is None:
            return
        par[wk.P_HAS] = 1.0
        par[wk.P_P:wk.P_P + 3] = target.p
        par[wk.P_V:wk.P_V + 3] = target.v
        par[wk.P_A:wk.P_A + 3] = target.a
        par[wk.P_R:wk.P_R + 9] = target_rotation(target).ravel()
        if target.omega is not None:
            par[wk.P_W:wk.P_W + 3] = target.omega
        if target.alpha is not None:
            par[wk.P_AL:wk.P_AL + 3] = target.alpha

    def _layout(self, stance, bodies, ref) -> tuple:
        """(row specs (n_s ≥ 3; eq. 82's are chosen in the step), model name, orthogonalize,
        m_int) of the virtual linkage, for the compiled step."""
        n_s = len(stance)
        if n_s < 2:
            return self._no_spec, None, 0, 0
        if n_s == 2:
            return self._no_spec, "eq82", 0, 6
        data = self.data
        if self.internal._linkage is None or self.internal._linkage[0] != stance:
            anchors, rotations = [], []
            for b in bodies:  # the anchors, for the layout chosen at a change of support
                cop = ref.cop.get(b.name)
                local = self._sole_centre[b.name] if cop is None else np.array([*cop[:2], 0.0])
                oMs = data.oMf[b.frame_id]
                anchors.append(oMs.translation + oMs.rotation @ local)
                rotations.append(oMs.rotation.copy())
            self.internal.general_rows(stance, np.array(anchors), np.array(rotations),
                                       data.com[0].copy())
        spec = self.internal._spec = self.internal._linkage[1]
        if self._ortho[0] is not spec:  # whether the layout has normal-force rows, per layout
            self._ortho = (spec, int(n_s > 3 and bool((spec[:, 0] == NORMAL_FORCE).any())))
        return spec, "general", self._ortho[1], len(spec)

    def _share_inputs(self, ref, stance, scal: np.ndarray) -> int:
        """Load-share mode of the compiled step (``ctc.reference_load_shares``): 1 planned
        (α_2 in scal), 2 from the reference's cart-table ZMP (its CoM and acceleration in
        scal), 0 none.

        Raises:
            ConfigError: ``Reference.load_share`` lacks a stance foot.
        """
        return load_share_inputs(ref, stance, scal)


__all__ = ["StepTables", "drift_from_jacobians", "frame_placements_view"]
