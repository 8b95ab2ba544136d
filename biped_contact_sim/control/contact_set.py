"""Contact transitions of the whole-body controller (Sentis et al. §IV-A, the Fig. 6 sequence).

The behaviour's ``Reference.stance`` names the contact bodies that should support the robot.
The controller's support set follows it by three rules that keep the contact wrenches, and so
the torques, continuous across a change of support:

* **adding**: a requested body joins the support when its measured normal force reaches
  ``add_force`` (it has touched and carries load); until then it keeps its pose task;
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
    """

    def __init__(self, order, add_force: float = 0.0, release_force: float = 5.0,
                 unload_time: float = 0.0, transition_time: float = 0.0):
        self.order = {name: k for k, name in enumerate(order)}
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

    def update(self, t: float, requested, wrenches: dict) -> tuple[str, ...]:
        """The support set at time t, from the requested stance and the measured wrenches
        (sole frame, [f; τ], normal force f_z); sets ``changed`` (differs from the last step).
        """
        req = set(requested)
        if self.support is None:
            support = set(req)
        else:
            support = set(self.support)
            for name in req - support:
                w = wrenches.get(name)
                if self.add_force <= 0.0 or (w is not None and w[2] >= self.add_force):
                    support.add(name)
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
                        f_task: np.ndarray, f_int_ref: np.ndarray) -> np.ndarray:
    """Internal-force reference closest to ``f_int_ref`` whose wrenches give each unloading
    contact k its target w_k* (world, about its anchor): with G = [W_com; W_int] and E_k the
    rows of G⁻¹ of contact k, E_k [F_com; F_int] = w_k*, F_com = W_com f_task the resultant the
    tasks command (Sentis et al. eqs. 13, 47); least-norm change of F_int."""
    G = np.vstack([W_com, W_int])
    rows = np.concatenate([np.arange(6 * k, 6 * k + 6) for k in targets])
    E = np.linalg.solve(G.T, np.eye(len(G))[:, rows]).T  # rows of G⁻¹
    E_c, E_i = E[:, :6], E[:, 6:]
    w_star = np.concatenate([targets[k] for k in targets])
    r = w_star - np.dot(E_c, np.dot(W_com, f_task)) - np.dot(E_i, f_int_ref)
    return f_int_ref + np.dot(np.linalg.pinv(E_i), r)


def no_slip_reference(contacts, rotations: np.ndarray, W_com: np.ndarray, W_int: np.ndarray,
                      f_task: np.ndarray, f_int_ref: np.ndarray) -> np.ndarray:
    """Internal-force reference closest to ``f_int_ref`` whose contact forces have no
    tangential part at the contacts k in ``contacts``: t_kᵀ E_k [F_com; F_int] = 0 for the two
    tangent axes t_k of contact k (its frame's x and y, rotations[k]), E_k the force rows of
    G⁻¹, F_com = W_com f_task (Sentis et al. eqs. 13, 47); least-norm change of F_int."""
    G = np.vstack([W_com, W_int])
    rows = np.concatenate([np.arange(6 * k, 6 * k + 3) for k in contacts])
    E = np.linalg.solve(G.T, np.eye(len(G))[:, rows]).T  # force rows of G⁻¹
    P = np.zeros((2 * len(contacts), len(rows)))
    for i, k in enumerate(contacts):
        P[2 * i:2 * i + 2, 3 * i:3 * i + 3] = rotations[k][:, :2].T
    E = np.dot(P, E)
    E_c, E_i = E[:, :6], E[:, 6:]
    r = -np.dot(E_c, np.dot(W_com, f_task)) - np.dot(E_i, f_int_ref)
    return f_int_ref + np.dot(np.linalg.pinv(E_i), r)


__all__ = ["ContactTransitions", "blend_released", "no_slip_reference", "smoothstep",
           "unloading_reference"]
