"""Contact feasibility indices and the CoM static stability cloud (Sentis et al. §III-D, §IV-B).

Contact wrenches in surface frames (eq. 44), F_surf,k = [f; m] of contact k about its CoP
anchor P_k (ground reaction on the robot, docs/methods.md §1). Indices (eqs. 48–49):

    α_k = (atan(f_z/f_x), atan(f_z/f_y))   angles between the surface plane and the force,
                                           reported in [0, π/2] (|f_x|, |f_y|) for f_z > 0
    β_k = m_z / f_z                        rotational index

and their bounds (eqs. 50–52):

    fricCone:  α_k ≥ atan(1/μ) per tangential direction (|f_t,i| ≤ μ f_z: the pyramid the
               per-axis angles of eq. 48 describe), or ‖f_t‖ ≤ μ f_z with ``cone="circular"``;
    rotIndex:  |β_k| ≤ β_max (heuristic; ``torsional_limit`` gives μ times the mean distance of
               a rectangular sole from its centre, the torsional friction of uniform pressure);
    surfArea:  CoP_k = P_k + (−m_y/f_z, m_x/f_z) inside the sole polygon;

plus unilaterality f_z > 0 (α is undefined otherwise); an unloaded contact (zero wrench, within
the tolerance) passes, so that the boundary of the support polygon counts as feasible.

Stability cloud (§IV-B, Fig. 7): scan CoM positions; for each, the static CoM wrench
F_com = [m(c̈ − g) − f_ext; −(p_ext − c) × f_ext] (eq. 55 with c̈ = 0 and no angular
acceleration) and the chosen internal forces give the contact wrenches F_r = G⁻¹[F_com; F_int]
(eq. 47); the point is feasible if every contact passes the bounds. G depends on the CoM only
through the wrench transfer of eq. 16, G(c) = [T(c) W_com,0; W_int], so G⁻¹[F_com; F_int] =
G₀⁻¹[T(c)⁻¹F_com; F_int] and one inverse per anchor set serves the whole grid.

The anchors (CoP positions) define G. With ``anchors="scan"`` the cloud is the union over a grid
of anchors inside each sole — the set of CoM positions for which *some* CoP placement is
feasible. With zero internal forces on flat ground and no external force that union is the
support polygon (App. B: coplanar CoPs enclose the ZMP, which statically is the CoM
projection, eqs. 80–81); with fixed anchors it is smaller (one coordinate of one foot's CoP is
free in the eq. 82 model, so the CoM must lie in the triangle spanned by the other foot's
anchor and that free segment).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from biped_contact_sim.control.grasp import ContactAnchor, grasp_model

GRAVITY = np.array([0.0, 0.0, -9.81])
CONES = ("pyramid", "circular")


@dataclass
class FeasibilityIndices:
    """Indices of eqs. 48–52 for a batch of contact wrenches, shape (..., n_s[, k]).

    Attributes:
        alpha: (..., n_s, 2) friction angles [rad] (NaN where f_z ≤ 0).
        beta: (..., n_s) rotational index m_z/f_z [m] (NaN where f_z ≤ 0).
        cop: (..., n_s, 2) CoP in the surface frame, relative to the sole origin [m].
        unilateral, in_cone, rot_ok, cop_ok: (..., n_s) bools.
        feasible: (...) all contacts pass all bounds.
    """

    alpha: np.ndarray
    beta: np.ndarray
    cop: np.ndarray
    unilateral: np.ndarray
    in_cone: np.ndarray
    rot_ok: np.ndarray
    cop_ok: np.ndarray
    feasible: np.ndarray


def torsional_limit(mu: float, length: float, width: float, n: int = 200) -> float:
    """β_max = μ · mean distance from the centre of a length × width rectangle [m].

    The largest |m_z|/f_z a uniformly pressed rectangular sole resists by Coulomb friction
    about its centre (the "heuristic model for rotational friction" of eq. 51).
    """
    x = (np.arange(n) + 0.5) / n - 0.5
    X, Y = np.meshgrid(x * length, x * width)
    return float(mu * np.hypot(X, Y).mean())


def _inside_rectangles(cop, lo, hi, tol):
    return np.all((cop >= lo - tol) & (cop <= hi + tol), axis=-1)


def feasibility_indices(F_surf: np.ndarray, anchors: np.ndarray, sole_lo: np.ndarray,
                        sole_hi: np.ndarray, mu: float, beta_max: float | np.ndarray,
                        cone: str = "pyramid", tol: float = 1e-9) -> FeasibilityIndices:
    """Feasibility indices (eqs. 48–52) of surface-frame contact wrenches.

    Args:
        F_surf: (..., n_s, 6) wrenches [f; m] in the surface frames, m about the anchors.
        anchors: (..., n_s, 2) anchor (CoP reference) positions in the sole frames [m].
        sole_lo, sole_hi: (n_s, 2) corners of each (rectangular) sole in its frame [m].
        mu: friction coefficient.
        beta_max: bound of |m_z/f_z| (scalar or per contact) [m].
        cone: ``"pyramid"`` (per-axis angles of eq. 48) or ``"circular"``.
        tol: tolerance of the bounds (so boundary points count as feasible).

    Raises:
        ValueError: unknown cone or mismatched shapes.
    """
    if cone not in CONES:
        raise ValueError(f"cone = {cone!r}; valid: " + ", ".join(CONES))
    F = np.asarray(F_surf, float)
    if F.shape[-1] != 6:
        raise ValueError(f"F_surf must end in 6 wrench components; got shape {F.shape}")
    fx, fy, fz, mx, my, mz = np.moveaxis(F, -1, 0)
    positive = fz > tol
    safe = np.where(positive, fz, 1.0)
    alpha = np.stack([np.arctan2(fz, np.abs(fx)), np.arctan2(fz, np.abs(fy))], axis=-1)
    alpha = np.where(positive[..., None], alpha, np.nan)
    beta = np.where(positive, mz / safe, np.nan)
    cop = np.asarray(anchors, float) + np.stack([-my / safe, mx / safe], axis=-1)
    if cone == "pyramid":
        in_cone = (np.abs(fx) <= mu * fz + tol) & (np.abs(fy) <= mu * fz + tol)
    else:
        in_cone = np.hypot(fx, fy) <= mu * fz + tol
    rot_ok = np.abs(mz) <= np.asarray(beta_max) * fz + tol
    cop_ok = _inside_rectangles(cop, np.asarray(sole_lo), np.asarray(sole_hi), 1e-9) & positive
    unilateral = fz >= -tol
    # An unloaded contact (whole wrench within tol) is feasible: it merely carries nothing.
    unloaded = np.all(np.abs(F) <= tol, axis=-1)
    ok = (in_cone & rot_ok & cop_ok & positive) | unloaded
    feasible = np.all(unilateral & ok, axis=-1)
    return FeasibilityIndices(alpha, beta, cop, unilateral, (in_cone & positive) | unloaded,
                              (rot_ok & positive) | unloaded, cop_ok | unloaded, feasible)


@dataclass
class StabilityCloud:
    """Feasible static CoM positions on a grid (§IV-B, Fig. 7).

    Attributes:
        x, y: grid axes (world) [m]; z: CoM height used [m], or the heights of a 3-D cloud.
        feasible: (len(y), len(x)) bool; (len(z), len(y), len(x)) for a 3-D cloud.
        soles: per contact, its 4 sole corners (world, (4, 3)) for plotting.
        anchors: (n_anchor_sets, n_s, 3) anchors scanned (world).
    """

    x: np.ndarray
    y: np.ndarray
    z: float | np.ndarray
    feasible: np.ndarray
    soles: list[np.ndarray]
    anchors: np.ndarray

    def points(self) -> np.ndarray:
        """(k, 2) feasible CoM positions, (k, 3) for a 3-D cloud."""
        if self.feasible.ndim == 3:
            Z, Y, X = np.meshgrid(self.z, self.y, self.x, indexing="ij")
            return np.column_stack([X[self.feasible], Y[self.feasible], Z[self.feasible]])
        X, Y = np.meshgrid(self.x, self.y)
        return np.column_stack([X[self.feasible], Y[self.feasible]])


def stability_cloud(sole_poses, sole_lo, sole_hi, mass: float, x: np.ndarray, y: np.ndarray,
                    z: float | np.ndarray, mu: float = 0.8, beta_max: float | None = None,
                    internal: np.ndarray | None = None, anchors="scan", anchor_grid: int = 5,
                    f_ext: np.ndarray | None = None, p_ext: np.ndarray | None = None,
                    cone: str = "pyramid") -> StabilityCloud:
    """CoM static stability cloud (§IV-B): feasible CoM (x, y) at height z.

    Any number of surface contacts in any placement (feet, hands on a table or a wall: the
    grasp model of ``control.grasp`` for n_s contacts); with an array of heights z the cloud is
    3-D, as the paper's for non-coplanar support.

    Args:
        sole_poses: per contact, (R, o): sole rotation (columns t1, t2, n) and origin (world).
        sole_lo, sole_hi: (n_s, 2) rectangle corners of each sole in its frame [m].
        mass: robot mass [kg].
        x, y: grid axes [m]; z: CoM height [m], or an array of heights (3-D cloud).
        mu: friction coefficient.
        beta_max: rotational-index bound [m]; default ``torsional_limit`` of each sole.
        internal: F_int in the layout of the grasp model (zero if None).
        anchors: ``"scan"`` (union over an ``anchor_grid`` × ``anchor_grid`` grid of anchors
            per sole, corners included: anchor_grid^(2 n_s) anchor sets), ``"centres"`` (each
            sole's centre) or (n_s, 2) fixed anchors in the sole frames.
        f_ext, p_ext: external force on the robot and its application point (world).
        cone: friction cone, as in ``feasibility_indices``.

    Returns:
        The ``StabilityCloud``.
    """
    sole_lo, sole_hi = np.asarray(sole_lo, float), np.asarray(sole_hi, float)
    n_s = len(sole_poses)
    if beta_max is None:
        beta_max = np.array([torsional_limit(mu, *(sole_hi[k] - sole_lo[k]))
                             for k in range(n_s)])
    if isinstance(anchors, str) and anchors == "centres":
        anchors = 0.5 * (sole_lo + sole_hi)
    if isinstance(anchors, str):
        if anchors != "scan":
            raise ValueError(f"anchors = {anchors!r}; use 'scan', 'centres' or an (n_s, 2) "
                             "array")
        per_sole = []
        for k in range(n_s):
            ax = np.linspace(sole_lo[k, 0], sole_hi[k, 0], anchor_grid)
            ay = np.linspace(sole_lo[k, 1], sole_hi[k, 1], anchor_grid)
            per_sole.append(np.array(np.meshgrid(ax, ay)).reshape(2, -1).T)
        mesh = np.meshgrid(*[np.arange(len(a)) for a in per_sole], indexing="ij")
        combos = np.stack([m.ravel() for m in mesh], axis=-1)
        anchor_sets = np.array([[per_sole[k][c[k]] for k in range(n_s)] for c in combos])
    else:
        anchor_sets = np.asarray(anchors, float).reshape(1, n_s, 2)

    heights = np.atleast_1d(np.asarray(z, float))
    Z, Y, X = np.meshgrid(heights, np.asarray(y, float), np.asarray(x, float), indexing="ij")
    coms = np.column_stack([X.ravel(), Y.ravel(), Z.ravel()])
    # Static CoM wrench (ground part): Σf = m(c̈ − g) − f_ext, moment about c.
    f_ext = np.zeros(3) if f_ext is None else np.asarray(f_ext, float)
    force = mass * (-GRAVITY) - f_ext
    F_com = np.tile(np.concatenate([force, np.zeros(3)]), (len(coms), 1))
    if p_ext is not None:
        F_com[:, 3:] = -np.cross(np.asarray(p_ext, float) - coms, f_ext)
    # Wrench about the origin: T(c)⁻¹ F_com = [f; m + c × f].
    F_origin = F_com.copy()
    F_origin[:, 3:] += np.cross(coms, F_com[:, :3])

    feasible = np.zeros(len(coms), bool)
    world_anchors = []
    for aset in anchor_sets:
        contacts = []
        for k, (R, o) in enumerate(sole_poses):
            P = np.asarray(o, float) + np.asarray(R, float) @ np.array([*aset[k], 0.0])
            contacts.append(ContactAnchor(P, R, "6d", f"c{k}"))
        world_anchors.append([c.position for c in contacts])
        g0 = grasp_model(contacts, np.zeros(3))
        F_int = np.zeros(g0.n_internal) if internal is None else np.asarray(internal, float)
        rhs = np.column_stack([F_origin, np.tile(F_int, (len(coms), 1))])
        F_r = rhs @ g0.G_inv.T  # (n_com, 6 n_s), world, about the anchors
        F_surf = np.empty((len(coms), n_s, 6))
        for k, (R, _) in enumerate(sole_poses):
            Rt = np.asarray(R, float).T
            F_surf[:, k, :3] = F_r[:, 6 * k:6 * k + 3] @ Rt.T
            F_surf[:, k, 3:] = F_r[:, 6 * k + 3:6 * k + 6] @ Rt.T
        ind = feasibility_indices(F_surf, np.broadcast_to(aset, (len(coms), n_s, 2)),
                                  sole_lo, sole_hi, mu, beta_max, cone, tol=1e-6)
        feasible |= ind.feasible
    soles = []
    for k, (R, o) in enumerate(sole_poses):
        lo, hi = sole_lo[k], sole_hi[k]
        corners = np.array([[lo[0], lo[1], 0], [hi[0], lo[1], 0], [hi[0], hi[1], 0],
                            [lo[0], hi[1], 0]])
        soles.append(np.asarray(o, float) + corners @ np.asarray(R, float).T)
    if np.ndim(z) == 0:
        return StabilityCloud(np.asarray(x, float), np.asarray(y, float), float(z),
                              feasible.reshape(X.shape[1:]), soles, np.array(world_anchors))
    return StabilityCloud(np.asarray(x, float), np.asarray(y, float), heights,
                          feasible.reshape(X.shape), soles, np.array(world_anchors))


def robot_stability_cloud(robot, q, x: np.ndarray, y: np.ndarray,
                          z: float | np.ndarray | None = None, bodies=None,
                          **kwargs) -> StabilityCloud:
    """``stability_cloud`` for a ``RobotModel`` in configuration q.

    The support is the contact bodies named in ``bodies`` (default: all), each a rectangle,
    the bounding box of its contact points; z defaults to q's CoM height. Extra keyword
    arguments go to ``stability_cloud``.

    Raises:
        ValueError: a name in ``bodies`` is not a contact body of the robot.
    """
    import pinocchio as pin

    by_name = {b.name: b for b in robot.contact_bodies}
    names = list(by_name) if bodies is None else list(bodies)
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ValueError(f"unknown contact bodies {unknown}; {robot.name} has "
                         + ", ".join(by_name))
    support = [by_name[n] for n in names]
    data = robot.create_data()
    pin.framesForwardKinematics(robot.model, data, q)
    poses = [(data.oMf[b.frame_id].rotation.copy(), data.oMf[b.frame_id].translation.copy())
             for b in support]
    lo = np.array([b.offsets.min(axis=0)[:2] for b in support])
    hi = np.array([b.offsets.max(axis=0)[:2] for b in support])
    if z is None:
        z = float(pin.centerOfMass(robot.model, data, q)[2])
    return stability_cloud(poses, lo, hi, robot.mass, x, y, z, **kwargs)


def plot_stability_cloud(cloud: StabilityCloud, path, title: str = "CoM static stability "
                         "cloud (Sentis et al. §IV-B)") -> None:
    """Write a PNG: feasible CoM grid points, the soles and the anchors scanned (Fig. 7 style).

    Uses matplotlib's Agg backend (no display needed).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if cloud.feasible.ndim == 3:  # 3-D cloud: the feasible points in space, with the soles
        fig = plt.figure(figsize=(6, 5))
        ax = fig.add_subplot(projection="3d")
        pts = cloud.points()
        ax.scatter(pts[:, 0], pts[:, 1], pts[:, 2], s=4, c=pts[:, 2], cmap="viridis",
                   label="feasible CoM")
        for k, sole in enumerate(cloud.soles):
            closed = np.vstack([sole, sole[:1]])
            ax.plot(closed[:, 0], closed[:, 1], closed[:, 2], "k-", lw=1.5,
                    label="contact surfaces" if k == 0 else None)
        ax.set_zlabel("z [m]")
        heights = f"CoM heights {cloud.z.min():.3f}–{cloud.z.max():.3f} m"
    else:
        fig, ax = plt.subplots(figsize=(5, 5))
        X, Y = np.meshgrid(cloud.x, cloud.y)
        ax.scatter(X[~cloud.feasible], Y[~cloud.feasible], s=4, c="0.85", label="infeasible")
        ax.scatter(X[cloud.feasible], Y[cloud.feasible], s=6, c="tab:blue",
                   label="feasible CoM")
        for k, sole in enumerate(cloud.soles):
            closed = np.vstack([sole, sole[:1]])
            ax.plot(closed[:, 0], closed[:, 1], "k-", lw=1.5, label="soles" if k == 0 else None)
        if len(cloud.anchors) == 1:
            ax.plot(cloud.anchors[0][:, 0], cloud.anchors[0][:, 1], "r+", ms=10,
                    label="CoP anchors")
        ax.set_aspect("equal")
        heights = f"CoM height {cloud.z:.3f} m"
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_title(f"{title}\n{heights}", fontsize=9)
    ax.legend(loc="upper right", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


__all__ = [
    "CONES",
    "FeasibilityIndices",
    "StabilityCloud",
    "feasibility_indices",
    "plot_stability_cloud",
    "robot_stability_cloud",
    "stability_cloud",
    "torsional_limit",
]
