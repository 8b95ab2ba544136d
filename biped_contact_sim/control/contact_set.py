"""Contact transitions of the whole-body controller (Sentis et al. §IV-A, the Fig. 6 sequence).

The behaviour's ``Reference.stance`` names the contact bodies that should support the robot.
The controller's support set follows it by three rules that keep the contact wrenches, and so
the torques, continuous across a change of support:

* **adding**: a requested body joins the support when its measured normal force reaches
  ``add_force`` (it has touched and carries load) with its centre of pressure within
  ``add_cop_fraction`` of its surface's half-extents (it lies flat, not on an edge), both for
  ``add_hold`` seconds in a row; until then it keeps its pose task. A surface on one edge is a
  hinge, not the 6-D constraint the support assumes: loaded as one, it tips;
* **removing**: a body the reference drops is first unloaded — the controller drives its wrench
  along w(s) = (1 − σ(s)) w₀, σ the quintic 10s³ − 15s⁴ + 6s⁵, s = (t − t₀)/``unload_time``,
  through its internal-force command — and leaves the support once s ≥ 1 and its measured
  normal force is below ``release_force``; a body that cannot be unloaded stays in support
  (reported in ``stuck``) rather than being lifted loaded;
* **internal forces**: at every change the virtual linkage is rebuilt for the new support and
  the internal-force reference starts from the internal forces that the last applied torques
  produce in the new support, reaching the behaviour's reference along σ over
  ``transition_time`` (the controller's part, ``wbc``).

With ``add_force = 0`` and ``unload_time = 0`` the support is the reference's stance at every
step (the biped behaviours plan their load transfer themselves, ``Reference.load_share``).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin


def smoothstep(s: float) -> float:
    """σ(s) = 10s³ − 15s⁴ + 6s⁵ on [0, 1] (zero slope and curvature at both ends), clipped."""
    s = min(max(s, 0.0), 1.0)
    return s * s * s * (10.0 - 15.0 * s + 6.0 * s * s)


class ContactTransitions:
    """The support set and its transition ramps (module docstring).

    Args:
        order: contact body names in ``robot.contact_bodies`` order (the support's order).
        add_force: normal force that adds a requested body [N] (0: added at once).
        release_force: normal force below which an unloaded body leaves [N].
        unload_time: duration of the unloading ramp [s] (0: removed at once).
        transition_time: duration of the internal-force ramp after a change [s] (0: none).
        surfaces: centre (c_x, c_y) and half-extents (a_x, a_y) of each body's contact surface
            in its frame [m], ``{name: (c, a)}`` (the CoP rule of adding; a body not listed is
            added on its force alone).
        add_cop_fraction: largest |CoP_x − c_x|/a_x and |CoP_y − c_y|/a_y that adds a body
            (1: any).
        add_hold: time both conditions must hold before the body is added [s].
    """

    def __init__(self, order, add_force: float = 0.0, release_force: float = 5.0,
                 unload_time: float = 0.0, transition_time: float = 0.0,
                 surfaces: dict | None = None, add_cop_fraction: float = 1.0,
                 add_hold: float = 0.0):
        self.order = {name: k for k, name in enumerate(order)}
        self.surfaces = dict(surfaces or {})
        self.add_cop_fraction = float(add_cop_fraction)
        self.add_hold = float(add_hold)
        self.add_force = float(add_force)
        self.release_force = float(release_force)
        self.unload_time = float(unload_time)
        self.transition_time = float(transition_time)
        self.reset()

    def reset(self) -> None:
        """Forget the support set and the ramps."""
        self.support: tuple[str, ...] | None = None
        self.unloading: dict[str, float] = {}  # name → t₀ of its unloading ramp
        self.changed_at = -np.inf
        self.changed = False
        self.stuck: tuple[str, ...] = ()
        self.touching: dict[str, float] = {}  # name → first t of the add conditions in a row

    def _ready(self, name: str, t: float, w) -> bool:
        """The adding rule for a requested body (module docstring) at t."""
        if self.add_force <= 0.0:
            return True
        ok = w is not None and w[2] >= self.add_force
        surface = self.surfaces.get(name)
        if ok and surface is not None:  # CoP (−τ_y/f_z, τ_x/f_z) in the body frame
            (cx, cy), (ax, ay) = surface
            lim = self.add_cop_fraction * w[2]
            ok = abs(w[4] + cx * w[2]) <= lim * ax and abs(w[3] - cy * w[2]) <= lim * ay
        if not ok:
            self.touching.pop(name, None)
            return False
        return t - self.touching.setdefault(name, t) >= self.add_hold

    def update(self, t: float, requested, wrenches: dict) -> tuple[str, ...]:
        """The support set at time t, from the requested stance and the measured wrenches
        (sole frame, [f; τ], normal force f_z); sets ``changed`` (differs from the last step).
        """
        if requested == self.support:
            # The common step: the support is the requested stance. Nothing joins or leaves,
            # no ramp of unloading runs on (every body is requested), none is stuck: what the
            # general path below gives, without its sets.
            self.unloading.clear()
            self.stuck = ()
            self.changed = False
            return self.support
        req = set(requested)
        if self.support is None:
            support = set(req)
        else:
            support = set(self.support)
            for name in req - support:
                if self._ready(name, t, wrenches.get(name)):
                    support.add(name)
                    self.touching.pop(name, None)
            for name in list(self.unloading):
                if name in req or name not in support:
                    del self.unloading[name]  # asked back, or gone
            stuck = []
            for name in support - req:
                if self.unload_time <= 0.0 or len(support) < 2:
                    support.discard(name)
                    continue
                t0 = self.unloading.setdefault(name, t)
                w = wrenches.get(name)
                if t - t0 >= self.unload_time:
                    if w is None or w[2] < self.release_force:
                        support.discard(name)
                        del self.unloading[name]
                    else:
                        stuck.append(name)
            self.stuck = tuple(stuck)
        out = tuple(sorted(support, key=lambda n: self.order.get(n, len(self.order))))
        self.changed = out != self.support
        if self.changed and self.support is not None:
            self.changed_at = t
        self.support = out
        return out

    def unload_fraction(self, name: str, t: float) -> float | None:
        """σ of the unloading ramp of ``name`` at t (None if it is not being unloaded)."""
        t0 = self.unloading.get(name)
        if t0 is None:
            return None
        return smoothstep((t - t0) / self.unload_time)

    def ramp(self, t: float) -> float:
        """σ of the internal-force ramp since the last change (1: no ramp running)."""
        if self.transition_time <= 0.0:
            return 1.0
        return smoothstep((t - self.changed_at) / self.transition_time)


def blend_released(released: tuple, target, t: float, duration: float):
    """Pose target of a body released from the support at t₀ = released[0] with pose
    (p₀, R₀) = released[1:]: from that pose to the reference's along σ over ``duration``,
    p = p₀ + σ (p_ref − p₀), R = R₀ exp(σ log(R₀ᵀ R_ref)), velocities and accelerations
    scaled by σ — so that its task starts where the body is. None once the blend is over."""
    from biped_contact_sim.control.base import FootTarget
    from biped_contact_sim.control.body_tasks import target_rotation

    t0, p0, R0 = released
    if t - t0 >= duration:
        return None
    sigma = smoothstep((t - t0) / duration)
    R = np.dot(R0, pin.exp3(sigma * pin.log3(np.dot(R0.T, target_rotation(target)))))
    scaled = (None if x is None else sigma * np.asarray(x, float)
              for x in (target.omega, target.alpha))
    return FootTarget(p0 + sigma * (np.asarray(target.p, float) - p0),
                      sigma * np.asarray(target.v, float), sigma * np.asarray(target.a, float),
                      rotation=R, omega=next(scaled), alpha=next(scaled), normal=target.normal,
                      force=target.force)


def unloading_reference(targets: dict[int, np.ndarray], W_com: np.ndarray, W_int: np.ndarray,
                        f_task: np.ndarray, f_int_ref: np.ndarray,
                        free: np.ndarray | None = None) -> np.ndarray:
    """Internal-force reference closest to ``f_int_ref`` whose wrenches give each unloading
    contact k its target w_k* (world, about its anchor): with G = [W_com; W_int] and E_k the
    rows of G⁻¹ of contact k, E_k [F_com; F_int] = w_k*, F_com = W_com f_task the resultant the
    tasks command (Sentis et al. eqs. 13, 47); least-norm change of the rows ``free`` of F_int
    (all if None; the controller: the tensions, out-of-plane forces and the unloading bodies'
    own moments, so that the other contacts' CoPs stay at their references — a least-norm
    change of every row moves a palm's CoP to its edge as the other hand lets go). Where those
    rows cannot meet the targets (to 1 % of their norm: statics needs the other CoPs to move,
    a hand leaving two feet that stand off the CoM), every row is freed."""
    G = np.vstack([W_com, W_int])
    rows = np.concatenate([np.arange(6 * k, 6 * k + 6) for k in targets])
    E = np.linalg.solve(G.T, np.eye(len(G))[:, rows]).T  # rows of G⁻¹
    E_c, E_i = E[:, :6], E[:, 6:]
    w_star = np.concatenate([targets[k] for k in targets])
    r = w_star - np.dot(E_c, np.dot(W_com, f_task)) - np.dot(E_i, f_int_ref)
    if free is not None:
        out = np.array(f_int_ref, float)
        out[free] += np.dot(np.linalg.pinv(E_i[:, free]), r)
        residual = r - np.dot(E_i[:, free], out[free] - f_int_ref[free])
        if np.dot(residual, residual) <= 1e-4 * max(np.dot(w_star, w_star), 1.0):
            return out
    return f_int_ref + np.dot(np.linalg.pinv(E_i), r)


def no_slip_reference(contacts, rotations: np.ndarray, W_com: np.ndarray, W_int: np.ndarray,
                      f_task: np.ndarray, f_int_ref: np.ndarray,
                      free: np.ndarray | None = None, preload: float = 0.0,
                      preload_free: np.ndarray | None = None) -> np.ndarray:
    """Internal-force reference closest to ``f_int_ref`` whose contact forces have no
    tangential part at the contacts k in ``contacts``: t_kᵀ E_k [F_com; F_int] = 0 for the two
    tangent axes t_k of contact k (its frame's x and y, rotations[k]), E_k the force rows of
    G⁻¹, F_com = W_com f_task (Sentis et al. eqs. 13, 47); least-norm change of the rows
    ``free`` of F_int (all rows if None).

    The controller frees the tensions only: every CoP and normal moment then stays at its
    reference, and the normal force n_kᵀ f_k follows from the other contacts' CoPs (a hand on a
    table carries what the feet's CoPs leave to it); freeing every row instead moves a hand's
    CoP off its palm to cancel a force. Where that normal force is below ``preload``, the
    equation n_kᵀ f_k = ``preload`` joins, solved over the rows ``preload_free`` (the
    controller: the tensions and the other contacts' CoP rows along the direction to k, i.e.
    their CoPs move away from k just enough)."""
    G = np.vstack([W_com, W_int])
    rows = np.concatenate([np.arange(6 * k, 6 * k + 3) for k in contacts])
    E = np.linalg.solve(G.T, np.eye(len(G))[:, rows]).T  # force rows of G⁻¹, (3c, 6 n_s)
    F_com = np.dot(W_com, f_task)

    def solve(loaded, cols) -> np.ndarray:
        """F_int,ref with the tangential rows of every contact, the normal row = preload of
        the contacts ``loaded`` (indices into ``contacts``), over the rows ``cols``."""
        A, target = [], []
        for i, k in enumerate(contacts):
            for axis in (0, 1, 2) if i in loaded else (0, 1):
                row = np.zeros(len(rows))
                row[3 * i:3 * i + 3] = rotations[k][:, axis]
                A.append(row)
                target.append(preload if axis == 2 else 0.0)
        A = np.dot(np.array(A), E)
        r = np.array(target) - np.dot(A[:, :6], F_com) - np.dot(A[:, 6:], f_int_ref)
        cols = np.arange(W_int.shape[0]) if cols is None else cols
        out = np.array(f_int_ref, float)
        out[cols] += np.dot(np.linalg.pinv(A[:, 6:][:, cols]), r)
        return out

    out = solve((), free)
    if preload > 0.0:
        f = np.dot(E, np.concatenate([F_com, out]))
        low = [i for i, k in enumerate(contacts)
               if np.dot(rotations[k][:, 2], f[3 * i:3 * i + 3]) < preload]
        if low:
            out = solve(low, preload_free)
    return out


__all__ = ["ContactTransitions", "blend_released", "no_slip_reference", "smoothstep",
           "unloading_reference"]
