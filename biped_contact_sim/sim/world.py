"""The world a robot moves in: ground, ramps, static boxes, free objects and materials.

A world is declared in YAML (``config/worlds/<name>.yaml``, or inline under a scenario) with
one schema, validated here; every error names the key and what is allowed::

    world:
      ground: {height: 0.0, material: floor}    # or `ground: null` for none
      planes:                                    # more half-spaces (ramps), n·(p − o) ≥ 0 free
        - {name: ramp, normal: [0.34, 0.0, 0.94], point: [0, 0, 0], material: floor}
      boxes:                                     # static boxes: tables, panels, steps
        - {name: table, size: [0.6, 1.0, 0.04], position: [0.5, 0, 0.73], rpy: [0, 0, 0],
           material: wood}
      objects:                                   # free rigid bodies (dynamics and contacts)
        - {name: crate, shape: box, size: [0.2, 0.2, 0.2], mass: 2.0,
           position: [0.5, 0, 0.85], rpy: [0, 0, 0], material: wood}
        - {name: ball, shape: sphere, radius: 0.1, mass: 1.0, position: [1, 0, 0.1]}
        - {name: roller, shape: cylinder, radius: 0.1, length: 0.3, mass: 1.0,
           position: [1, 0.5, 0.1], rpy: [1.5708, 0, 0]}  # axis z of its frame, here along y
      materials:
        default: {mu: 0.8, restitution: 0.0}     # every pair not listed below
        pairs:
          - {between: [floor, wood], mu: 0.4}
      robot_material: robot                      # the material of every robot geometry

``size`` is the full extent (x, y, z) of a box; ``rpy`` roll, pitch, yaw [rad] (world ←
body = R_z(yaw) R_y(pitch) R_x(roll)). An object's inertia is the solid box's or sphere's of
its mass unless ``inertia: [Ixx, Iyy, Izz]`` (principal, about the centre, body axes) is given;
a cylinder's axis is the z axis of its frame (``length`` its full length).
``restitution`` must be 0 (or absent): the contact models apply their own impact laws
(docs/methods.md §2: gauss_seidel and acceleration_lcp take one Newton e as their
``restitution`` setting; time_stepping is plastic; the penalty models rebound by their gains),
so a per-material e would be silently ignored: a non-zero value is refused, naming the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin

from biped_contact_sim.errors import ConfigError
from biped_contact_sim.robot.config import read_yaml_file
from biped_contact_sim.sim.world_kernels import frame_from_normal

#: keys allowed at each level of the schema (the error for another key lists them)
_WORLD_KEYS = ("ground", "planes", "boxes", "objects", "materials", "robot_material")
_GROUND_KEYS = ("height", "material")
_PLANE_KEYS = ("name", "normal", "point", "material")
_BOX_KEYS = ("name", "size", "position", "rpy", "material")
_OBJECT_KEYS = ("name", "shape", "size", "radius", "length", "mass", "inertia", "position",
                "rpy", "velocity", "material")
_MATERIAL_KEYS = ("default", "pairs")
_LAW_KEYS = ("mu", "restitution")
_PAIR_KEYS = ("between", "mu", "restitution")
OBJECT_SHAPES = ("box", "sphere", "cylinder")
DEFAULT_MATERIAL = "default"


@dataclass(frozen=True)
class Plane:
    """The half-space ``n·(p − o) ≥ 0`` is free; contact frame ``R = [t₁ t₂ n]``."""

    name: str
    normal: np.ndarray  # (3,) unit
    point: np.ndarray  # (3,)
    material: str

    @property
    def R(self) -> np.ndarray:
        """Contact frame (columns t₁, t₂, n); t₁ is the steepest descent direction on a ramp
        (the ``PlaneTerrain`` convention) and e_x on flat ground."""
        return plane_frame(self.normal)


@dataclass(frozen=True)
class Box:
    """A static box: full extent ``size``, centre placement ``pose`` (world ← box)."""

    name: str
    size: np.ndarray  # (3,)
    pose: pin.SE3
    material: str


@dataclass(frozen=True)
class FreeObject:
    """A free rigid body (a free-flyer root of the dynamics), its shape and inertia.

    Attributes:
        shape: ``box`` (``size``), ``sphere`` (``radius``) or ``cylinder`` (``radius`` and
            ``length``, axis z of the body frame).
        inertia: pinocchio spatial inertia about the body frame (at the centre).
        pose: initial placement (world ← body); velocity: initial (linear, angular) in the
            world frame at the centre.
    """

    name: str
    shape: str
    size: np.ndarray | None
    radius: float | None
    mass: float
    inertia: pin.Inertia
    pose: pin.SE3
    velocity: np.ndarray
    material: str
    length: float | None = None


@dataclass(frozen=True)
class ContactLaw:
    """Friction coefficient and restitution of a pair of materials."""

    mu: float
    restitution: float = 0.0


@dataclass(frozen=True)
class World:
    """A validated world (see the module docstring); ``law(a, b)`` gives a pair's μ, e."""

    planes: tuple[Plane, ...] = ()
    boxes: tuple[Box, ...] = ()
    objects: tuple[FreeObject, ...] = ()
    default: ContactLaw = ContactLaw(0.8)
    pairs: dict[frozenset, ContactLaw] = field(default_factory=dict)
    robot_material: str = "robot"

    def law(self, a: str, b: str) -> ContactLaw:
        """The contact law of materials a and b (the default if the pair is not listed)."""
        return self.pairs.get(frozenset((a, b)), self.default)

    def with_default_mu(self, mu: float) -> World:
        """The same world with the default μ replaced (a scenario's ``--set mu``)."""
        return World(self.planes, self.boxes, self.objects,
                     ContactLaw(_number("mu", mu, lo=0.0), self.default.restitution),
                     self.pairs, self.robot_material)

    @property
    def ground(self) -> Plane | None:
        return next((p for p in self.planes if p.name == "ground"), None)


def plane_frame(normal: np.ndarray) -> np.ndarray:
    """``[t₁ t₂ n]`` of a unit normal n (``frame_from_normal``)."""
    return frame_from_normal(np.asarray(normal, float))


# ------------------------------------------------------------------------- parsing
def _number(key: str, value: Any, lo: float | None = None, open_lo: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"world: {key} = {value!r} must be a number")
    value = float(value)
    if not np.isfinite(value) or (lo is not None and (value < lo or (open_lo and value == lo))):
        bound = f" {'>' if open_lo else '>='} {lo:g}" if lo is not None else ""
        raise ConfigError(f"world: {key} = {value!r} must be a finite number{bound}")
    return value


def _vector(key: str, value: Any, n: int = 3, positive: bool = False) -> np.ndarray:
    if not isinstance(value, (list, tuple)) or len(value) != n:
        raise ConfigError(f"world: {key} = {value!r} must be a list of {n} numbers")
    out = np.array([_number(f"{key}[{i}]", x, 0.0 if positive else None, positive)
                    for i, x in enumerate(value)])
    return out


def _mapping(key: str, value: Any, allowed: tuple[str, ...]) -> dict:
    if not isinstance(value, dict):
        raise ConfigError(f"world: {key} must be a mapping with keys {', '.join(allowed)}; "
                          f"got {value!r}")
    unknown = [k for k in value if k not in allowed]
    if unknown:
        raise ConfigError(f"world: unknown key(s) {', '.join(map(repr, unknown))} in {key}. "
                          f"Allowed: {', '.join(allowed)}")
    return value


def _list(key: str, value: Any) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(f"world: {key} must be a list; got {value!r}")
    return value


def _name(key: str, spec: dict, names: set[str]) -> str:
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"world: {key}.name is required (a non-empty string)")
    if name in names:
        raise ConfigError(f"world: {key}.name {name!r} is used twice; names must be unique")
    names.add(name)
    return name


def _material(key: str, spec: dict) -> str:
    value = spec.get("material", DEFAULT_MATERIAL)
    if not isinstance(value, str) or not value:
        raise ConfigError(f"world: {key}.material = {value!r} must be a material name")
    return value


def _pose(key: str, spec: dict) -> pin.SE3:
    if "position" not in spec:
        raise ConfigError(f"world: {key}.position is required ([x, y, z] in m)")
    position = _vector(f"{key}.position", spec["position"])
    rpy = _vector(f"{key}.rpy", spec.get("rpy", [0.0, 0.0, 0.0]))
    return pin.SE3(pin.rpy.rpyToMatrix(*rpy), position)


def _law(key: str, spec: Any, base: ContactLaw | None, allowed=_LAW_KEYS) -> ContactLaw:
    spec = _mapping(key, spec, allowed)
    if base is None and "mu" not in spec:
        raise ConfigError(f"world: {key}.mu is required (friction coefficient >= 0)")
    mu = _number(f"{key}.mu", spec["mu"], 0.0) if "mu" in spec else base.mu
    e = spec.get("restitution", base.restitution if base else 0.0)
    e = _number(f"{key}.restitution", e, 0.0)
    if e > 1.0:
        raise ConfigError(f"world: {key}.restitution = {e:g} must be in [0, 1]")
    if e != 0.0:  # refused rather than silently ignored (module docstring)
        raise ConfigError(
            f"world: {key}.restitution = {e:g}: per-material restitution is not applied by "
            "the contact models yet; only 0 is allowed here. For Newton's impact law use the "
            "contact model's own setting, e.g. --set contact.restitution=e with gauss_seidel "
            "or acceleration_lcp (one e for every contact); time_stepping is plastic, and "
            "penalty_fl and spring_damper rebound by their gains")
    return ContactLaw(mu, e)


def parse_world(raw: Any, mu: float | None = None) -> World:
    """A ``World`` from the mapping under ``world:`` (see the module docstring).

    Args:
        raw: the mapping (``None``: the flat ground alone).
        mu: if given, the default friction coefficient (overrides ``materials.default.mu``).

    Raises:
        ConfigError: naming the key and what is allowed.
    """
    raw = {} if raw is None else _mapping("world", raw, _WORLD_KEYS)
    names: set[str] = set()
    planes = []
    ground = raw.get("ground", {})
    if ground is not None and ground is not False:
        ground = _mapping("ground", ground, _GROUND_KEYS)
        height = _number("ground.height", ground.get("height", 0.0))
        planes.append(Plane("ground", np.array([0.0, 0.0, 1.0]), np.array([0.0, 0.0, height]),
                            _material("ground", ground)))
        names.add("ground")
    for i, spec in enumerate(_list("planes", raw.get("planes"))):
        key = f"planes[{i}]"
        spec = _mapping(key, spec, _PLANE_KEYS)
        name = _name(key, spec, names)
        if "normal" not in spec:
            raise ConfigError(f"world: {key}.normal is required ([nx, ny, nz], pointing into "
                              "the free side)")
        normal = _vector(f"{key}.normal", spec["normal"])
        if np.linalg.norm(normal) < 1e-9:
            raise ConfigError(f"world: {key}.normal = {spec['normal']!r} must not be zero")
        point = _vector(f"{key}.point", spec.get("point", [0.0, 0.0, 0.0]))
        planes.append(Plane(name, normal / np.linalg.norm(normal), point,
                            _material(key, spec)))
    boxes = []
    for i, spec in enumerate(_list("boxes", raw.get("boxes"))):
        key = f"boxes[{i}]"
        spec = _mapping(key, spec, _BOX_KEYS)
        name = _name(key, spec, names)
        if "size" not in spec:
            raise ConfigError(f"world: {key}.size is required ([x, y, z] full extent, m > 0)")
        boxes.append(Box(name, _vector(f"{key}.size", spec["size"], positive=True),
                         _pose(key, spec), _material(key, spec)))
    objects = [_object(f"objects[{i}]", spec, names)
               for i, spec in enumerate(_list("objects", raw.get("objects")))]
    materials = _mapping("materials", raw.get("materials", {}), _MATERIAL_KEYS)
    default = _law("materials.default", materials.get("default", {"mu": 0.8}), None)
    if mu is not None:
        default = ContactLaw(_number("mu", mu, 0.0), default.restitution)
    pairs = {}
    for i, spec in enumerate(_list("materials.pairs", materials.get("pairs"))):
        key = f"materials.pairs[{i}]"
        spec = _mapping(key, spec, _PAIR_KEYS)
        between = spec.get("between")
        if not (isinstance(between, list) and len(between) == 2
                and all(isinstance(m, str) and m for m in between)):
            raise ConfigError(f"world: {key}.between = {between!r} must be two material names")
        pairs[frozenset(between)] = _law(key, spec, default, _PAIR_KEYS)
    robot_material = raw.get("robot_material", "robot")
    if not isinstance(robot_material, str) or not robot_material:
        raise ConfigError(f"world: robot_material = {robot_material!r} must be a material name")
    return World(tuple(planes), tuple(boxes), tuple(objects), default, pairs, robot_material)


def _object(key: str, spec: Any, names: set[str]) -> FreeObject:
    spec = _mapping(key, spec, _OBJECT_KEYS)
    name = _name(key, spec, names)
    shape = spec.get("shape")
    if shape not in OBJECT_SHAPES:
        raise ConfigError(f"world: {key}.shape = {shape!r}; allowed: {', '.join(OBJECT_SHAPES)}")
    if "mass" not in spec:
        raise ConfigError(f"world: {key}.mass is required (kg > 0)")
    mass = _number(f"{key}.mass", spec["mass"], 0.0, open_lo=True)
    size = radius = length = None
    if shape == "box":
        if "size" not in spec or "radius" in spec or "length" in spec:
            raise ConfigError(f"world: {key} (a box) needs size: [x, y, z] and no radius or "
                              "length")
        size = _vector(f"{key}.size", spec["size"], positive=True)
        a, b, c = size
        diag = mass / 12.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    elif shape == "sphere":
        if "radius" not in spec or "size" in spec or "length" in spec:
            raise ConfigError(f"world: {key} (a sphere) needs radius: r and no size or length")
        radius = _number(f"{key}.radius", spec["radius"], 0.0, open_lo=True)
        diag = np.full(3, 0.4 * mass * radius * radius)
    else:
        if "radius" not in spec or "length" not in spec or "size" in spec:
            raise ConfigError(f"world: {key} (a cylinder) needs radius: r, length: l and no "
                              "size")
        radius = _number(f"{key}.radius", spec["radius"], 0.0, open_lo=True)
        length = _number(f"{key}.length", spec["length"], 0.0, open_lo=True)
        side = mass * (3.0 * radius * radius + length * length) / 12.0
        diag = np.array([side, side, 0.5 * mass * radius * radius])
    if "inertia" in spec:
        diag = _vector(f"{key}.inertia", spec["inertia"], positive=True)
        if max(diag) > diag.sum() - max(diag) + 1e-12:
            raise ConfigError(f"world: {key}.inertia = {list(diag)} violates the triangle "
                              "inequality of principal moments (each <= sum of the others)")
    velocity = _vector(f"{key}.velocity", spec.get("velocity", [0.0] * 6), 6)
    return FreeObject(name, shape, size, radius, mass,
                      pin.Inertia(mass, np.zeros(3), np.diag(diag)), _pose(key, spec),
                      velocity, _material(key, spec), length)


def worlds_folder() -> Path:
    from biped_contact_sim.robot.config import package_share

    return package_share() / "config" / "worlds"


def available_worlds() -> list[str]:
    return sorted(p.stem for p in worlds_folder().glob("*.yaml"))


def load_world(name_or_path: str | Path, mu: float | None = None) -> World:
    """Load ``config/worlds/<name>.yaml`` (or a file path) holding ``world: {...}``.

    Raises:
        ConfigError: unknown world (listing the available ones), unreadable file, bad schema.
    """
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        path = worlds_folder() / f"{name_or_path}.yaml"
        if not path.is_file():
            raise ConfigError(f"Unknown world: {str(name_or_path)!r}. Valid names: "
                              + ", ".join(available_worlds()))
    raw = read_yaml_file(path)
    if not isinstance(raw, dict) or "world" not in raw:
        raise ConfigError(f"{path}: expected a top-level 'world:' mapping")
    try:
        return parse_world(raw["world"], mu)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def build_world_model(model: pin.Model, world: World) -> tuple[pin.Model, tuple[int, ...]]:
    """The robot's model with each free object appended as a free-flyer root (a copy).

    Design: one pinocchio model for robot and objects, objects after the robot, so the robot's
    q and v are a prefix of the whole state (the controllers and nodes see that slice), one
    ``M`` and one contact solve hold every body, and object–object and object–ground contacts
    are the same code as robot–ground ones. M stays block diagonal between robot and objects
    (pinocchio's sparse factor keeps the blocks apart).

    Returns:
        the model and the joint id of each object.
    """
    full = pin.Model(model)
    joints = []
    for obj in world.objects:
        j = full.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), f"{obj.name}_root")
        full.appendBodyToJoint(j, obj.inertia, pin.SE3.Identity())
        parent = full.addJointFrame(j, 0)
        full.addBodyFrame(obj.name, j, pin.SE3.Identity(), parent)
        joints.append(j)
    return full, tuple(joints)


def object_state(world: World) -> tuple[np.ndarray, np.ndarray]:
    """Initial q (7 per object: position, quaternion x y z w) and v (6 per object: linear and
    angular velocity in the body frame, pinocchio's free-flyer convention)."""
    q, v = [], []
    for obj in world.objects:
        q.append(pin.SE3ToXYZQUAT(obj.pose))
        R = obj.pose.rotation
        v.append(np.concatenate([R.T @ obj.velocity[:3], R.T @ obj.velocity[3:]]))
    return (np.concatenate(q) if q else np.zeros(0)), (np.concatenate(v) if v else np.zeros(0))
