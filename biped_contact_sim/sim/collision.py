"""Contact detection: every collision geometry of the robot and of the free objects against the
world's planes and static boxes and against each other (docs/methods.md §5.1).

Geometry comes from pinocchio: ``pin.buildGeomFromUrdf(..., COLLISION)`` reads the URDF's
``<collision>`` tags into coal shapes attached to joints, unless the robot brings its own
``pin.GeometryModel`` (``RobotModel.collision_model``: ``sole_studs``, a sphere at each
configured contact point; ``collision_model`` picks); free objects add one shape each on
their free-flyer joint (``sim.world.build_world_model``). Self-collision of the robot is off.

Each step (after pinocchio's forward kinematics, ``data.oMi``):

1. **Broad phase**: a bounding sphere per geometry (centre in its joint frame, radius);
   a pair goes on only if the spheres (or sphere and plane) are within ``margin``.
2. **Narrow phase** per pair, every contact i with a point p₁ on body 1, p₂ on body 2
   (body 2 is the static world for planes and boxes), the unit normal n from body 2 towards
   body 1 and the gap ``φ = nᵀ(p₁ − p₂)`` (< 0: penetration); kept when ``φ ≤ margin``:

   * box / plane: the box's 8 vertices with their own gaps — a sole flat on the ground is its
     four corners, the paper's rectangular foot (coal returns one deepest point, and its
     contact patch only the corners within a tolerance of the deepest one);
   * box / box: separating-axis test over the 6 face normals (a static box's faces are
     preferred within 1e-4 m, so a foot over a step edge gets the step's normal), then the
     incident face clipped by the reference face (Sutherland–Hodgman): the corners of the
     overlap polygon, each with its gap along the reference normal;
   * sphere / plane, sphere / box, sphere / sphere, cylinder / plane, cylinder / box: closed
     form (a cylinder touches a plane or a box face at its lowest rim points: two, or four
     on a flat cap);
   * every other pair (a cylinder against a sphere or a cylinder, shapes other than these
     primitives): coal's ``distance`` (witness points and normal; signed distance).

3. Per contact: the contact frame ``C = [t₁ t₂ n]`` (``world.frame_from_normal``), the
   relative Jacobian ``J_c = Cᵀ(J₁(p₁) − J₂(p₂))``, drift ``γ_c = Cᵀ(J̇₁v − J̇₂v)`` (at fixed C)
   and a contact id that stays the same while the same feature pair (geometry pair and vertex
   or clip-polygon corner) stays in contact, for the models' per-contact state.
"""

from __future__ import annotations

from dataclasses import dataclass

import coal
import numpy as np
import pinocchio as pin

from biped_contact_sim.errors import ConfigError
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.robot.model import stacked_views
from biped_contact_sim.sim.collision_kernels import (
    F_E,
    F_FRAME,
    F_LOCAL1,
    F_LOCAL2,
    F_MU,
    F_NORMAL,
    F_P1,
    F_P2,
    F_PHI,
    F_PT,
    I_BODY1,
    I_BODY2,
    I_GEOM1,
    I_GROUND,
    I_ID,
    I_OTHER,
    KIND_BOX,
    KIND_CYLINDER,
    KIND_OTHER,
    KIND_SPHERE,
    PAIR_SLOTS,
    detect_finish_kernel,
    detect_kernel,
    finish_kernel,
)
from biped_contact_sim.sim.world import World
from biped_contact_sim.sim.world_kernels import frame_from_normal


@dataclass(frozen=True)
class CollisionSettings:
    """Detection settings.

    Attributes:
        margin: contacts with a gap φ ≤ margin are reported [m] (the constraint models need
            the points that could close within a step; penalty models ignore φ > 0).
    """

    margin: float = 0.01


def collision_model(robot: RobotModel) -> pin.GeometryModel:
    """The robot's collision geometry: its own ``robot.collision_model`` when it has one (a
    scenario built it, e.g. ``sole_studs``), else the URDF's ``<collision>`` tags read by
    ``pin.buildGeomFromUrdf``.

    Raises:
        ConfigError: the URDF's collision geometry cannot be read (naming the file).
    """
    if robot.collision_model is not None:
        return robot.collision_model
    try:
        return pin.buildGeomFromUrdf(robot.model, str(robot.config.urdf_path),
                                     pin.GeometryType.COLLISION)
    except (ValueError, RuntimeError, OSError) as exc:
        raise ConfigError(f"Cannot read the collision geometry of {robot.config.urdf_path}: "
                          f"{exc}") from exc


def sole_studs(robot: RobotModel, radius: float) -> pin.GeometryModel:
    """One coal sphere of ``radius`` per configured contact point of the robot (its sole
    vertices, ``robot.point_frame_ids``), each tangent to its sole plane at the point: the
    centre is ``radius`` along the sole frame's +z (the sole's normal into the body) from the
    point. A sole flat on a plane then touches it at exactly its configured points, each
    with its own closed-form sphere–plane contact (``_vs_plane``: the point ``c − r n``), so
    that ``contacts: geometry`` has as many contacts as ``contacts: points`` at the same
    places — a rigid plate on a grid of m studs has m contacts, where the box of the same
    sole would give only its 4 corners (Chardonnet et al. 2006 Fig. 5's m-contact study).

    Raises:
        ConfigError: ``radius`` not a finite number > 0.
    """
    if isinstance(radius, bool) or not isinstance(radius, (int, float)) or not (
            np.isfinite(radius) and radius > 0):
        raise ConfigError(f"stud radius = {radius!r}: expected a number > 0 [m]")
    geom = pin.GeometryModel()
    for name, f in zip(robot.point_names, robot.point_frame_ids, strict=True):
        frame = robot.model.frames[f]  # the point's frame: its z axis is the sole's normal
        placement = frame.placement.copy()
        placement.translation = placement.translation + radius * placement.rotation[:, 2]
        geom.addGeometryObject(pin.GeometryObject(f"{name}_stud", frame.parentJoint, f,
                                                  placement, coal.Sphere(float(radius))))
    return geom


class Geometries:
    """The moving collision geometries (robot and free objects), as arrays for the kernel.

    Attributes:
        names: (G,) geometry names; kind: (G,) KIND_*; joint: (G,) parent joint;
        R, t: (G, 3, 3), (G, 3) placement in the joint frame; half: (G, 3) box half sizes,
        (r, r, r) for a sphere, (r, r, h) for a cylinder (h half-length, axis z);
        radius: (G,) bounding-sphere radius; group: (G,) 0 the robot, k + 1 object k;
        material: (G,) index into the material table; shapes: the coal shapes.
    """

    def __init__(self, model: pin.Model, geom_model: pin.GeometryModel | None,
                 object_joints: tuple[int, ...], world: World, materials: list[str]):
        names, kind, joint, R, t, half, radius, group, mat, shapes = ([] for _ in range(10))

        def add(name, shape, j, placement, grp, material):
            k, h = _shape_params(shape)
            names.append(name)
            kind.append(k)
            joint.append(j)
            R.append(placement.rotation.copy())
            t.append(placement.translation.copy())
            half.append(h)
            radius.append(_bounding_radius(shape, k, h))
            group.append(grp)
            mat.append(materials.index(material))
            shapes.append(shape)

        if geom_model is not None:
            for g in geom_model.geometryObjects:
                add(g.name, g.geometry, g.parentJoint, g.placement, 0, world.robot_material)
        for k, (obj, j) in enumerate(zip(world.objects, object_joints, strict=True)):
            shape = coal.Box(*obj.size) if obj.shape == "box" else \
                coal.Cylinder(obj.radius, obj.length) if obj.shape == "cylinder" else \
                coal.Sphere(obj.radius)
            add(obj.name, shape, j, pin.SE3.Identity(), k + 1, obj.material)
        self.names = tuple(names)
        self.kind = np.array(kind, dtype=np.int64)
        self.joint = np.array(joint, dtype=np.int64)
        self.R = np.array(R).reshape(-1, 3, 3)
        self.t = np.array(t).reshape(-1, 3)
        self.half = np.array(half).reshape(-1, 3)
        self.radius = np.array(radius)
        self.group = np.array(group, dtype=np.int64)
        self.material = np.array(mat, dtype=np.int64)
        self.shapes = tuple(shapes)

    def __len__(self) -> int:
        return len(self.names)


def _shape_params(shape) -> tuple[int, np.ndarray]:
    if isinstance(shape, coal.Box):
        return KIND_BOX, np.asarray(shape.halfSide, float).copy()
    if isinstance(shape, coal.Sphere):
        return KIND_SPHERE, np.full(3, shape.radius)
    if isinstance(shape, coal.Cylinder):
        return KIND_CYLINDER, np.array([shape.radius, shape.radius, shape.halfLength])
    return KIND_OTHER, np.zeros(3)


def _bounding_radius(shape, kind: int, half: np.ndarray) -> float:
    if kind == KIND_BOX:
        return float(np.linalg.norm(half))
    if kind == KIND_SPHERE:
        return float(half[0])
    if kind == KIND_CYLINDER:
        return float(np.hypot(half[0], half[2]))
    shape.computeLocalAABB()
    return float(shape.aabb_radius) + float(np.linalg.norm(shape.aabb_center))




class Contacts:
    """The contact set of one step (m contacts), world quantities (module docstring).

    The detection hands back two arrays, ``floats`` (m, ``F_COLS``) floats and ``ints`` (m,
    ``I_COLS``) ints, fresh at each step (a step's set stays valid after later steps); the
    attributes are views into them, made when read (the step reads few of them; the compiled
    step terms take ``floats`` and ``ints`` whole).

    Attributes:
        body1, body2: (m,) joints (0: the static world); p1, p2: (m, 3) points on each body;
        normal: (m, 3) from body 2 towards body 1; phi: (m,) gaps; ids: (m,) contact ids;
        mu: (m,) friction coefficients; restitution: (m,); frames: (m, 3, 3) ``[t₁ t₂ n]``;
        local1, local2: (m, 3) the points in their joint frames; p_tangent: (m, 2) tangential
        coordinates about a point fixed on body 2; geom1: (m,) index of body 1's geometry;
        other: (m,) the feature of body 2 (plane k, static box P + k, geometry P + S + g).
        on_ground: (m,) bool, body 2 is the world's ground plane; joint_names: the model's
            joint names (a body's name is its joint's; the root of an object is
            ``<object>_root``).
    """

    __slots__ = ("floats", "ints", "joint_names")

    def __init__(self, floats: np.ndarray, ints: np.ndarray, joint_names: tuple[str, ...]):
        self.floats, self.ints, self.joint_names = floats, ints, joint_names

    def __len__(self) -> int:
        return self.floats.shape[0]

    @property
    def body1(self) -> np.ndarray:
        return self.ints[:, I_BODY1]

    @property
    def body2(self) -> np.ndarray:
        return self.ints[:, I_BODY2]

    @property
    def ids(self) -> np.ndarray:
        return self.ints[:, I_ID]

    @property
    def geom1(self) -> np.ndarray:
        return self.ints[:, I_GEOM1]

    @property
    def other(self) -> np.ndarray:
        return self.ints[:, I_OTHER]

    @property
    def on_ground(self) -> np.ndarray:
        return self.ints[:, I_GROUND] != 0

    @property
    def p1(self) -> np.ndarray:
        return self.floats[:, F_P1:F_P1 + 3]

    @property
    def p2(self) -> np.ndarray:
        return self.floats[:, F_P2:F_P2 + 3]

    @property
    def normal(self) -> np.ndarray:
        return self.floats[:, F_NORMAL:F_NORMAL + 3]

    @property
    def phi(self) -> np.ndarray:
        return self.floats[:, F_PHI]

    @property
    def mu(self) -> np.ndarray:
        return self.floats[:, F_MU]

    @property
    def restitution(self) -> np.ndarray:
        return self.floats[:, F_E]

    @property
    def frames(self) -> np.ndarray:
        return self.floats[:, F_FRAME:F_FRAME + 9].reshape(-1, 3, 3)

    @property
    def local1(self) -> np.ndarray:
        return self.floats[:, F_LOCAL1:F_LOCAL1 + 3]

    @property
    def local2(self) -> np.ndarray:
        return self.floats[:, F_LOCAL2:F_LOCAL2 + 3]

    @property
    def p_tangent(self) -> np.ndarray:
        return self.floats[:, F_PT:F_PT + 2]


class Detector:
    """Finds the contacts of a model's geometries with a world (module docstring).

    Args:
        model: the pinocchio model (robot, then free objects as free-flyer roots).
        geom_model: the robot's collision geometry (``collision_model(robot)``) or None.
        world: the world; object_joints: the free-flyer joint of each of its objects.
        settings: ``CollisionSettings``.
    """

    def __init__(self, model: pin.Model, geom_model: pin.GeometryModel | None, world: World,
                 object_joints: tuple[int, ...] = (), settings: CollisionSettings | None = None):
        self.model, self.world = model, world
        self.settings = settings or CollisionSettings()
        materials = sorted({world.robot_material, *(p.material for p in world.planes),
                            *(b.material for b in world.boxes),
                            *(o.material for o in world.objects)})
        self.materials = materials
        k = len(materials)
        self.mu_table = np.empty((k, k))
        self.e_table = np.empty((k, k))
        for a in range(k):
            for b in range(k):
                law = world.law(materials[a], materials[b])
                self.mu_table[a, b], self.e_table[a, b] = law.mu, law.restitution
        self.geoms = Geometries(model, geom_model, object_joints, world, materials)
        self.plane_n = np.array([p.normal for p in world.planes]).reshape(-1, 3)
        self.plane_o = np.array([p.point for p in world.planes]).reshape(-1, 3)
        self.plane_mat = np.array([materials.index(p.material) for p in world.planes],
                                  dtype=np.int64)
        self.box_R = np.array([b.pose.rotation for b in world.boxes]).reshape(-1, 3, 3)
        self.box_t = np.array([b.pose.translation for b in world.boxes]).reshape(-1, 3)
        self.box_half = np.array([0.5 * b.size for b in world.boxes]).reshape(-1, 3)
        self.box_mat = np.array([materials.index(b.material) for b in world.boxes],
                                dtype=np.int64)
        self._box_shapes = tuple(coal.Box(*b.size) for b in world.boxes)
        self._capacity = 64
        self._out = _alloc(self._capacity)  # the kernel's work arrays, reused every step
        self._views = None
        self._args = None  # kernel_args's cache
        self._feature_mat = np.concatenate([self.plane_mat, self.box_mat, self.geoms.material])
        self._ground = next((k for k, p in enumerate(world.planes) if p.name == "ground"), -1)
        self._pack_static()
        self._joint_names = tuple(model.names)
        self._request = coal.DistanceRequest()
        self.fallback_calls = 0  # coal.distance calls so far (pairs without a closed form)

    def _pack_static(self) -> None:
        """The detection's fixed arrays in four buffers grouped by shape (``static_views``'s
        layout), the attributes becoming views of them: the compiled step takes four
        arguments instead of nineteen (numba checks and unboxes each argument at every call),
        and takes its views by slicing (a numba reshape costs a runtime call). The bounding
        radii and the margin are the first column of rows of the (·, 3) buffer."""
        g = self.geoms
        sizes = np.array([len(g), len(self.plane_n), len(self.box_t), len(self.materials),
                          self._ground], dtype=np.int64)
        scalars = np.zeros((len(g) + 1, 3))
        scalars[:len(g), 0], scalars[len(g), 0] = g.radius, self.settings.margin
        self.static = []
        for arrays, dtype, shape in (
                ([sizes, g.kind, g.joint, g.group, g.material, self.plane_mat, self.box_mat,
                  self._feature_mat], np.int64, (-1,)),
                ([g.t, g.half, self.plane_n, self.plane_o, self.box_t, self.box_half, scalars],
                 np.float64, (-1, 3)),
                ([g.R, self.box_R], np.float64, (-1, 3, 3)),
                ([self.mu_table, self.e_table], np.float64, (2, *self.mu_table.shape))):
            buf, views = _pack(arrays, dtype, shape)
            self.static.append(buf)
            if dtype is np.int64:
                (_, g.kind, g.joint, g.group, g.material, self.plane_mat, self.box_mat,
                 self._feature_mat) = views
            elif shape == (-1, 3):
                g.t, g.half, self.plane_n, self.plane_o, self.box_t, self.box_half, sc = views
                g.radius = sc[:len(g), 0]
            elif shape == (-1, 3, 3):
                g.R, self.box_R = views
            else:
                self.mu_table, self.e_table = buf[0], buf[1]
        self.static = tuple(self.static)

    def placements(self, data: pin.Data) -> tuple[np.ndarray, np.ndarray]:
        """The joint rotations (njoints, 3, 3) and translations (njoints, 3) of ``data.oMi``:
        one strided view of pinocchio's storage, taken once per Data (``stacked_views``), or
        copies taken at each call where eigenpy hands out copies."""
        if self._views is not None and self._views[0] is data:
            return self._views[1], self._views[2]
        r = range(self.model.njoints)
        rotations, live_r = stacked_views([data.oMi[j].rotation for j in r])
        translations, live_t = stacked_views([data.oMi[j].translation for j in r])
        self._views = (data, rotations, translations) if live_r and live_t else None
        return rotations, translations

    def kernel_args(self, data: pin.Data) -> tuple:
        """The arguments of ``detect_finish_kernel`` at the placements in ``data.oMi``: the
        static and work buffers, the rotations and translations (one tuple, kept while the
        placements are views of ``data`` and the work arrays stay)."""
        cached = self._args
        if cached is not None and cached[0] is data and cached[1] is self._out:
            return cached[2]
        rotations, translations = self.placements(data)
        args = (*self.static, *work_buffers(self._out), rotations, translations)
        self._args = (data, self._out, args) if self._views is not None else None
        return args

    def contacts(self, floats: np.ndarray, ints: np.ndarray) -> Contacts:
        """The contact set of ``detect_finish_kernel``'s two arrays."""
        return Contacts(floats, ints, self._joint_names)

    def detect(self, data: pin.Data) -> Contacts:
        """The contacts at the placements in ``data.oMi`` (forward kinematics done)."""
        n, nf, floats, ints = detect_finish_kernel(*self.kernel_args(data))
        if n < 0 or nf:
            return self.finish(data, n, nf)
        return Contacts(floats, ints, self._joint_names)

    def finish(self, data: pin.Data, n: int, nf: int) -> Contacts:
        """The contacts after ``detect_finish_kernel`` returned n < 0 (work arrays too short:
        grown until they hold every contact) or nf > 0 pairs without a closed form (coal)."""
        while n < 0:
            self._capacity *= 2
            self._out = _alloc(self._capacity)
            n, nf, floats, ints = detect_finish_kernel(*self.kernel_args(data))
        if not nf:
            return Contacts(floats, ints, self._joint_names)
        g, s, out = self.geoms, self.settings, self._out
        rotations, translations = self.placements(data)
        _, _, Rw, cw = detect_kernel(
            g.kind, g.joint, g.R, g.t, g.half, g.radius, g.group, g.material, rotations,
            translations, self.plane_n, self.plane_o, self.plane_mat, self.box_R,
            self.box_t, self.box_half, self.box_mat, self.mu_table, s.margin, *out)
        n = self._fallback(out, n, nf, Rw, cw, rotations, translations)
        floats, ints = finish_kernel(n, *self._out[:-1], rotations, translations,
                                     self.e_table, g.material, self._feature_mat, self._ground)
        return Contacts(floats, ints, self._joint_names)

    def _fallback(self, out, n, nf, Rw, cw, rotations, translations) -> int:
        """coal.distance for the pairs the kernel has no closed form for (``out[-1]``)."""
        g = self.geoms
        P, S = len(self.plane_n), len(self.box_t)
        pairs = out[-1][:nf]
        rows = []
        for a, other in pairs:
            T1 = coal.Transform3s(Rw[a], cw[a])
            if other < P + S:  # a static box (planes always have a closed form)
                b = other - P
                shape2, T2 = self._box_shapes[b], coal.Transform3s(self.box_R[b], self.box_t[b])
                body2, mat2, anchor = 0, self.box_mat[b], self.box_t[b]
            else:
                h = other - P - S
                shape2, T2 = g.shapes[h], coal.Transform3s(Rw[h], cw[h])
                body2, mat2, anchor = g.joint[h], g.material[h], translations[g.joint[h]]
            result = coal.DistanceResult()
            self.fallback_calls += 1
            gap = coal.distance(g.shapes[a], T1, shape2, T2, self._request, result)
            if gap > self.settings.margin:
                continue
            normal = -np.asarray(result.normal)  # coal: from shape 1 to shape 2
            rows.append((g.joint[a], body2, result.getNearestPoint1(),
                         result.getNearestPoint2(), normal, gap,
                         (a * (P + S + len(g)) + other) * PAIR_SLOTS,
                         self.mu_table[g.material[a], mat2], anchor, a, other))
        need = n + len(rows)
        if need > self._capacity:
            self._capacity = 2 * need
            grown = _alloc(self._capacity)
            for x, y in zip(grown[:-1], out[:-1], strict=True):
                x[:n] = y[:n]
            out = self._out = grown
        for i, row in enumerate(rows):
            for arr, value in zip(out[:-1], row, strict=True):
                arr[n + i] = value
        return need


def _pack(arrays: list[np.ndarray], dtype,
          shape: tuple[int, ...]) -> tuple[np.ndarray, list[np.ndarray]]:
    """One buffer of ``shape`` (-1: the arrays' total along the first axis) holding the arrays
    one after another along its first axis, and views of it shaped as they were."""
    flat = np.concatenate([np.asarray(a, dtype).ravel() for a in arrays])
    buf = flat.reshape(shape)
    row = int(np.prod(buf.shape[1:]))
    views, o = [], 0
    for a in arrays:
        views.append(buf[o:o + a.size // row].reshape(a.shape))
        o += a.size // row
    return buf, views


def _alloc(capacity: int) -> list[np.ndarray]:
    """The detection's work arrays B1, B2, P1, P2, N, GAP, KEY, MU, ANC, G1, OTH, FALLBACK for
    ``capacity`` contacts: views of two buffers (``work_views``'s layout; ``work_buffers``
    gives them back): ints (7, c) (B1, B2, KEY, G1, OTH, then FALLBACK's two columns as
    rows) and floats (5, c, 3) (P1, P2, N, ANC, then GAP and MU as columns of the last)."""
    c = capacity
    ints = np.empty((7, c), np.int64)
    floats = np.empty((5, c, 3))
    return [ints[0], ints[1], floats[0], floats[1], floats[2], floats[4, :, 0], ints[2],
            floats[4, :, 1], floats[3], ints[3], ints[4], ints[5:7].T]


def work_buffers(out: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The two buffers under ``_alloc``'s views."""
    return out[0].base, out[2].base


def finish_reference(n, work, rotations, translations, e_table, geom_mat, feature_mat,
                     ground) -> dict[str, np.ndarray]:
    """numpy reference of ``finish_kernel``: the ``Contacts`` fields by name from the first n
    rows of the work arrays (``_alloc``'s order)."""
    B1, B2, P1, P2, N, GAP, KEY, MU, ANC, G1, OTH = (a[:n] for a in work[:11])
    frames = np.array([frame_from_normal(x) for x in N]).reshape(n, 3, 3)
    R1, t1 = np.asarray(rotations)[B1], np.asarray(translations)[B1]
    R2, t2 = np.asarray(rotations)[B2], np.asarray(translations)[B2]
    return {"body1": B1, "body2": B2, "ids": KEY, "geom1": G1, "other": OTH,
            "on_ground": OTH == ground, "p1": P1, "p2": P2, "normal": N, "phi": GAP, "mu": MU,
            "restitution": e_table[geom_mat[G1], feature_mat[OTH]], "frames": frames,
            "local1": np.einsum("mji,mj->mi", R1, P1 - t1),
            "local2": np.einsum("mji,mj->mi", R2, P2 - t2),
            "p_tangent": np.einsum("mji,mj->mi", frames[:, :, :2], P1 - ANC)}
