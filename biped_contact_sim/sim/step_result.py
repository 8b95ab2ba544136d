"""What a simulator step produces: ``StepResult`` (the state after the step, the forces over it,
the observers' inputs) and ``StepTerms`` (what ``Simulator.contact_state`` returns besides the
contact state). Arrays the step's compiled calls leave in one output buffer are views made when
first read: most readers need few of them.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

_LAZY = object()  # StepResult: made from the step's output buffer when first read
_EMPTY = np.zeros(0)


class StepResult:
    """Everything one step produced (state after the step, forces over the step).

    Attributes:
        t, q, v: time and state after the step.
        a: mean v̇ over the step, (v⁺ − v)/dt.
        tau: applied (clamped) torques.
        p: (m, 3) point positions at the start of the step (world).
        phi: (m,) gaps, vc: (m, 3) contact-frame point velocities, at the start of the step.
        f_contact: (m, 3) forces in contact frames; f_world: the same in the world frame.
        active: (m,) bool.
        stats: the contact model's statistics (a mapping).
        vc_next: (m, 3) contact-frame velocities J_c v⁺ after the step.
        f_external: (3,) external force applied over the step (world) or None.
        ids: (m,) contact ids of the points (``ContactState.ids``).
        placements: (nb, 3, 4) ``[R | t]`` at the start of the step of the joints carrying
            points (``RobotModel.contact_joints``), for the observers.
        q_prev: the configuration at the start of the step (the forces acted there).
        energy_prev: kinetic + potential energy at the start of the step [J].
        tau_external: (nv,) generalized force of the external forces over the step, or None.
        frames: (m, 3, 3) per-contact frames ``[t₁ t₂ n]`` (geometry contacts) or None (one
            frame for every point: the terrain's).
        contacts: the geometry contact set (``collision.Contacts``: bodies, points, ids) or
            None; q_objects, v_objects: the free objects' state after the step (geometry
            contacts with a world that has objects; else empty).
        contact_work: the kinetic energy the contact impulse gave over the step [J] (≤ 0:
            dissipated), ``contact_separation`` its part pushing points off their surfaces
            (restitution, penetration recovery; ``sim.integrator.contact_energy``).
    """

    __slots__ = ("_R", "_f_world", "_frames", "_joint_placements", "_out", "_p", "_placements",
                 "a", "active", "contact_separation", "contact_work", "contacts", "energy_prev",
                 "f_contact", "f_external", "ids", "phi", "q", "q_objects", "q_prev", "stats",
                 "t", "tau", "tau_external", "v", "v_objects", "vc", "vc_next")

    def __init__(self, t: float, q: np.ndarray, v: np.ndarray, a: np.ndarray, tau: np.ndarray,
                 p: np.ndarray, phi: np.ndarray, vc: np.ndarray, f_contact: np.ndarray,
                 f_world: np.ndarray | None, active: np.ndarray, stats: Mapping | None = None,
                 vc_next: np.ndarray | None = None, f_external: np.ndarray | None = None,
                 ids: np.ndarray | None = None, placements: np.ndarray | None = None,
                 R: np.ndarray | None = None, q_prev: np.ndarray | None = None,
                 energy_prev: float = float("nan"), tau_external: np.ndarray | None = None):
        self.t, self.q, self.v, self.a, self.tau = t, q, v, a, tau
        self._p, self.phi, self.vc, self.f_contact, self._f_world = p, phi, vc, f_contact, f_world
        self.active, self.stats = active, {} if stats is None else stats
        self.vc_next, self.f_external, self.ids, self._placements = vc_next, f_external, ids, \
            placements
        self._R = R
        self.q_prev, self.energy_prev, self.tau_external = q_prev, energy_prev, tau_external
        self._frames = self.contacts = self._joint_placements = self._out = None
        self.q_objects = self.v_objects = _EMPTY
        self.contact_work = self.contact_separation = 0.0

    # p, placements, frames and joint_placements of ``step``'s lean path are views of the
    # step's output buffer, made when first read (most readers need none): ``_out`` holds
    # (p's view, the placements' view, the buffer and its sizes).
    @property
    def p(self) -> np.ndarray:
        if self._p is None and self._out is not None:
            self._p = self._out[0](*self._out[2])
        return self._p

    @p.setter
    def p(self, value: np.ndarray) -> None:
        self._p = value

    @property
    def frames(self) -> np.ndarray | None:
        if self._frames is _LAZY:
            self._frames = self.contacts.frames
        return self._frames

    @frames.setter
    def frames(self, value: np.ndarray | None) -> None:
        self._frames = value

    def _placements_view(self, slot: str) -> np.ndarray | None:
        value = getattr(self, slot)
        if value is _LAZY:
            value = self._out[1](*self._out[2])
            setattr(self, slot, value)
        return value

    placements = property(lambda self: self._placements_view("_placements"),
                          lambda self, value: setattr(self, "_placements", value))
    joint_placements = property(lambda self: self._placements_view("_joint_placements"),
                                lambda self, value: setattr(self, "_joint_placements", value))

    def __getstate__(self):
        """The slots with the lazy views made (a pickled result holds plain arrays)."""
        _ = self.p, self.frames, self.placements, self.joint_placements
        state = {k: getattr(self, k) for k in self.__slots__ if hasattr(self, k)}
        state["_out"] = None
        return None, state

    @property
    def f_world(self) -> np.ndarray:
        """(m, 3) contact forces in the world frame (rotated on first use)."""
        if self._f_world is None:
            frames = self.frames
            if frames is not None:
                self._f_world = np.einsum("mij,mj->mi", frames, self.f_contact)
            else:
                self._f_world = self.f_contact if self._R is None else \
                    self.f_contact @ self._R.T
        return self._f_world


class StepTerms:
    """What ``Simulator.contact_state`` returns besides the state: the world positions p (m, 3)
    of the points, the joint placements (nb, 3, 4) at (q, v) and the clamped τ."""

    __slots__ = ("_W", "_nj", "p", "placements")

    def __init__(self, p: np.ndarray, placements: np.ndarray, W: np.ndarray, nj: int):
        self.p, self.placements, self._W, self._nj = p, placements, W, nj

    @property
    def tau(self) -> np.ndarray:
        """The clamped τ (a copy of the last entries of the step buffer, so that a kept
        ``StepResult`` does not keep the whole buffer alive)."""
        return self._W[len(self._W) - self._nj:].copy()
