"""Scenarios: robot, terrain, initial state and per-model contact defaults.

Each scenario declares the ``--set`` keys it accepts (with defaults and units); the runner
applies them. Contact-model settings are set with ``contact.<setting>=value``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pinocchio as pin

from biped_contact_sim.errors import ConfigError, unknown_name
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.robot.config import ContactBodyConfig, load_robot_config
from biped_contact_sim.sim.collision import sole_studs
from biped_contact_sim.sim.simulator import CONTACT_MODES, ExternalForce
from biped_contact_sim.sim.terrain import PlaneTerrain
from biped_contact_sim.sim.world import load_world


@dataclass(frozen=True)
class Param:
    """A ``--set`` key of a scenario: its default (whose type is the key's type), meaning and
    allowed range ``[lo, hi]`` (None: unbounded; ``lo_open``: ``lo`` itself is excluded)."""

    default: Any
    help: str
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False

    def check(self, key: str, value: Any) -> Any:
        """``value`` converted to the key's type, or ConfigError naming the key and what is
        allowed (a bool is not a number; an int key refuses 2.5; NaN and infinities are
        refused)."""
        kind = type(self.default)
        allowed = self.allowed()
        number = f"an {kind.__name__}" if kind is int else f"a {kind.__name__}"
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (
                kind is int and np.isfinite(value) and float(value) != int(value)):
            expected = f"{number} {allowed}" if allowed.startswith("in ") else \
                f"{number}, {allowed}"
            raise ConfigError(f"--set {key}={value!r}: expected {expected} ({self.help})")
        if not np.isfinite(value) or (self.lo is not None and (
                value < self.lo or (self.lo_open and value == self.lo))) or (
                self.hi is not None and value > self.hi):
            raise ConfigError(f"--set {key}={value!r} is out of range: it must be {allowed} "
                              f"({self.help})")
        return kind(value)

    def allowed(self) -> str:
        """The rule in words, e.g. ``in [0, 10]`` or ``finite and > 0`` (NaN and infinities
        are refused whatever the bounds)."""
        if self.lo is not None and self.hi is not None:
            return f"in {'(' if self.lo_open else '['}{self.lo:g}, {self.hi:g}]"
        if self.lo is not None:
            return f"finite and {'>' if self.lo_open else '>='} {self.lo:g}"
        if self.hi is not None:
            return f"finite and <= {self.hi:g}"
        return "finite"


#: ``--set robot=NAME|FILE`` (``biped-sim run --robot``): another robot than the scenario's
ROBOT_KEY = "robot"
#: ``--set contacts=points|geometry``: the configured sole points or every collision geometry
CONTACTS_KEY = "contacts"
#: ``--set world=NAME|FILE``: a world file (``config/worlds``; implies geometry contacts)
WORLD_KEY = "world"


@dataclass(frozen=True)
class Scenario:
    """What to simulate; ``initial_state(robot, params) -> (q, v)``."""

    name: str
    description: str
    robot: str
    duration: float | None  # None: the behaviour's own duration
    dt: float
    params: dict[str, Param]
    initial_state: Callable[[RobotModel, dict[str, Any]], tuple[np.ndarray, np.ndarray]]
    contact_defaults: dict[str, dict[str, Any]] = field(default_factory=dict)
    controller: str = "none"  # default controller name
    biped: bool = False
    behavior: str | None = None  # reference generator for ctc / wbc (control.BEHAVIORS)
    external: Callable[[dict[str, Any]], list[ExternalForce]] | None = None
    robot_factory: Callable[[dict[str, Any]], RobotModel] | None = None
    world: str | None = None  # world file (config/worlds/<name>.yaml); None: the terrain
    contacts: str = "points"  # default contact mode (simulator.CONTACT_MODES)

    def simulator_options(self, params: dict[str, Any]) -> dict[str, Any]:
        """``Simulator`` keyword arguments ``world`` and ``contacts`` of the scenario (a world
        file implies geometry contacts; ``mu`` sets the world's default friction).

        Raises:
            ConfigError: unknown world, invalid world file, points contacts with a world.
        """
        contacts = params.get(CONTACTS_KEY) or self.contacts
        name = params.get(WORLD_KEY) or self.world
        world = None
        if name is not None:
            world = load_world(name, mu=params.get("mu"))
            if params.get(CONTACTS_KEY) == "points" and (world.boxes or world.objects):
                raise ConfigError(f"world {name!r} has boxes or objects: it needs "
                                  "--set contacts=geometry")
            if not params.get(CONTACTS_KEY):
                contacts = "geometry"
        return {"world": world, "contacts": contacts}

    def make_robot(self, params: dict[str, Any]) -> RobotModel:
        """The scenario's robot (``robot_factory`` or ``config/<robot>.yaml``, mass-scaled), or
        the one ``params["robot"]`` names (a robot name or a config file)."""
        if self.robot_factory is not None:
            return self.robot_factory(params)
        return RobotModel.load(params.get(ROBOT_KEY) or self.robot,
                               params.get("mass_scale", 1.0))

    def external_forces(self, params: dict[str, Any]) -> list[ExternalForce]:
        """Scheduled external forces (pushes) of the scenario."""
        return self.external(params) if self.external is not None else []

    def resolve(self, sets: dict[str, Any]) -> dict[str, Any]:
        """Scenario parameters with ``sets`` applied (``contact.*`` keys are left out).

        Raises:
            ConfigError: a key the scenario does not accept (listing the accepted keys), a
                value of the wrong type or out of its range (naming the key and the range).
        """
        params = {k: p.default for k, p in self.params.items()}
        for key, value in sets.items():
            if key.startswith(("contact.", "controller.", "behavior.")):
                continue
            if key == ROBOT_KEY:
                if self.robot_factory is not None:
                    raise ConfigError(f"scenario {self.name!r} builds its own robot; --robot "
                                      "does not apply")
                if not isinstance(value, str) or not value:
                    raise ConfigError(f"--robot {value!r}: expected a robot name or a config "
                                      "file")
                params[key] = value
                continue
            if key in (CONTACTS_KEY, WORLD_KEY):
                if key == CONTACTS_KEY and value not in CONTACT_MODES:
                    raise ConfigError(f"--set contacts={value!r}: allowed "
                                      + ", ".join(CONTACT_MODES))
                if not isinstance(value, str) or not value:
                    raise ConfigError(f"--set {key}={value!r}: expected a name")
                params[key] = value
                continue
            if key not in params:
                raise ConfigError(
                    f"Unknown --set key {key!r} for scenario {self.name!r}. Accepted: "
                    + ", ".join([*sorted(params), "contacts", "world", "contact.<setting>",
                                 "controller.<gain>", "behavior.<param>"]))
            params[key] = self.params[key].check(key, value)
        return params

    def terrain(self, params: dict[str, Any]) -> PlaneTerrain:
        return PlaneTerrain(slope=np.radians(params.get("slope_deg", 0.0)), mu=params["mu"])


def _ball_state(robot, params):
    return robot.configuration([0.0, 0.0, params["height"] + 0.1]), np.zeros(robot.nv)


def _brick_state(robot, params):
    """Brick on the ramp, its contact point on the surface, moving downhill along t₁."""
    terrain = PlaneTerrain(slope=np.radians(params["slope_deg"]), mu=params["mu"])
    below = robot.contact_bodies[0].offsets[0]  # the point under the centre
    q = robot.configuration(-below)  # puts that point at the origin, on the plane
    v = params["speed"] * terrain.R[:, 0]  # translation-joint velocity is in the world frame
    return q, v


def _standing_state(robot, params):
    q = robot.standing_configuration()
    q[1 if robot.config.base == "planar_xz" else 2] += params.get("height", 0.0)
    return q, np.zeros(robot.nv)


def _push(params):
    """A horizontal push on the pelvis, ``push_force`` N for ``push_duration`` s, towards
    ``push_direction_deg`` (from +x, forward, to +y, left; the default 90° is the lateral
    push). Multiples of 90° give exact components (cos 90° is 0, not 6e-17)."""
    start = params["push_time"]
    angle = params["push_direction_deg"]
    quarter = angle / 90.0
    if quarter == round(quarter):
        c, s = ((1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0))[round(quarter) % 4]
    else:
        c, s = float(np.cos(np.radians(angle))), float(np.sin(np.radians(angle)))
    force = params["push_force"]
    return [ExternalForce("pelvis", (force * c, force * s, 0.0), start,
                          start + params["push_duration"])]


#: radius of the plate's studs [m]: under half the closest stud spacing (0.1 m / 11 at
#: grid = 12), so that studs never overlap, and small, so that a tilt θ moves a stud's contact
#: point on the plate by only r θ from its configured point
PLATE_STUD_RADIUS = 0.002


def _plate(params):
    """The brick (1 kg, 0.20 × 0.10 × 0.05 m) as a free rigid body on an n × n grid of sole
    points spanning its bottom face (Chardonnet et al. 2006 Fig. 5: cost against the number
    m = n² of contacts). Its collision geometry is one stud per point (``sole_studs``: a
    sphere tangent to the bottom face there), so geometry contacts find the same m contacts
    as the configured points (the URDF's box would give only its 4 corners)."""
    n = params["grid"]  # range-checked by its Param
    config = load_robot_config("brick")
    xs, ys = np.linspace(-0.1, 0.1, n), np.linspace(-0.05, 0.05, n)
    offsets = np.array([(x, y, -0.025) for x in xs for y in ys])
    body = ContactBodyConfig("brick", "brick", offsets)
    robot = RobotModel(dataclasses.replace(config, base="free_flyer", contact_bodies=(body,)))
    robot.collision_model = sole_studs(robot, PLATE_STUD_RADIUS)
    return robot


def _plate_state(robot, params):
    q = robot.configuration([0.0, 0.0, 0.025 + params["height"]])
    return q, np.zeros(robot.nv)


def _fall_state(robot, params):
    """The biped on its side (rolled 90° about x), its lowest geometry ``height`` above the
    ground, limp (controller none)."""
    q = robot.standing_configuration()
    q[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(np.pi / 2, 0.0, 0.0)).coeffs()
    q[2] = 0.0
    data = robot.create_data()
    pin.forwardKinematics(robot.model, data, q)
    geom = pin.buildGeomFromUrdf(robot.model, str(robot.config.urdf_path),
                                 pin.GeometryType.COLLISION)
    gdata = geom.createData()
    pin.updateGeometryPlacements(robot.model, data, geom, gdata)
    lowest = min(_lowest_z(g.geometry, gdata.oMg[k]) for k, g in
                 enumerate(geom.geometryObjects))
    q[2] = params["height"] - lowest
    return q, np.zeros(robot.nv)


def _lowest_z(shape, oMg) -> float:
    """Lowest world z of a box, sphere or cylinder (axis z) placed at oMg."""
    R, c = oMg.rotation, oMg.translation
    if hasattr(shape, "halfSide"):
        return float(c[2] - np.abs(R[2]) @ np.asarray(shape.halfSide))
    if hasattr(shape, "halfLength"):
        a = R[2, 2]
        return float(c[2] - shape.halfLength * abs(a) - shape.radius * np.sqrt(1 - a * a))
    return float(c[2] - shape.radius)


def _box_state(robot, params):
    """The box robot resting on the ground (bottom face at z = 0)."""
    return robot.configuration([0.0, 0.0, 0.05]), np.zeros(robot.nv)


def _box_push(params):
    """A horizontal push (+x) on the box's centre, ``push_force`` N from ``push_time`` on."""
    return [ExternalForce("box", (params["push_force"], 0.0, 0.0), params["push_time"])]


# penalty_fl with separation damping (our documented extension, contact/penalty_fl.py) on every
# biped: with eq. 17's approach-only damping a sole vertex rising on a micrometre rebound leaves
# the active set (a walk's stance sole, a PD hold that never comes to rest), and after a
# transient (a driver's hold before the controller's first command) the rocking sole's designed
# accelerations are no rigid motion: the least-squares forces let the soles creep back and sink
# (0.4 mm/s) until a standing robot diverges after ~40 s.
_BIPED_CONTACT = {
    "penalty_fl": {"kp": 500.0, "kv": 250.0, "epsilon": 1e-6, "separation_damping": True},
    # Damping per point is bounded by the light feet: the foot's rocking mode on four
    # dampers needs dt·4 c r²/I_foot < 2 with explicit integration.
    "spring_damper": {"stiffness": 1e5, "damping": 100.0, "tangential_stiffness": 1e4,
                      "tangential_damping": 30.0, "clamp": True},
}
# Hands in the support (``lean_on_table``, ``multicontact``): penalty_fl's allowed depth ε of
# 10 µm instead of 1 µm. A palm's four corners sit within a few micrometres of each other in
# depth; at ε = 1 µm a slow tilt of the palm (the torso task moving the arm) lifted one corner
# past φ = 0, then a second, and for one step the panel force fell from 60 N to 19 N on the two
# corners left (multicontact, t = 9.686 s) before the palm rotated flat again (68 N).
_HAND_CONTACT = {**_BIPED_CONTACT,
                 "penalty_fl": {**_BIPED_CONTACT["penalty_fl"], "epsilon": 1e-5}}
_PD = "joint_pd"
# The robot scenarios collide every collision geometry of the URDF (collision issue), plate its
# studs; the papers' figure scenarios (ball, ramp) keep the configured points:
# ``--set contacts=points`` reproduces the papers' figures of the bipeds and the plate exactly.
GEOMETRY = "geometry"
_BOX_CONTACT = {"penalty_fl": {"separation_damping": True},
                "spring_damper": {"stiffness": 2e4, "damping": 50.0,
                                  "tangential_stiffness": 2e4, "tangential_damping": 50.0}}

SCENARIOS: dict[str, Scenario] = {s.name: s for s in (
    Scenario(
        "ball", "Bouncing ball (Rengifo et al. §II-A, Fig. 4-5): a 1 kg point mass dropped on "
        "flat ground.", "ball", duration=2.5, dt=2e-4,
        params={"height": Param(0.5, "initial height of the ball's bottom above the ground [m]",
                                lo=0.0),
                "mu": Param(0.8, "friction coefficient", lo=0.0),
                "mass_scale": Param(1.0, "scale every mass and inertia of the robot",
                                     lo=0.0, lo_open=True)},
        initial_state=_ball_state,
        contact_defaults={"penalty_fl": {"kp": 1.0, "kv": 5000.0},
                          "spring_damper": {"stiffness": 1e4, "damping": 20.0}}),
    Scenario(
        "ramp", "Brick on a frictional ramp (Rengifo et al. §II-B): sticks if mu > tan(slope), "
        "else slides at g (sin a - mu cos a).", "brick", duration=3.0, dt=1e-3,
        params={"slope_deg": Param(20.0, "ramp slope [deg]", lo=0.0, hi=80.0),
                "mu": Param(0.5, "friction coefficient", lo=0.0),
                "speed": Param(0.5, "initial downhill speed [m/s]"),
                "mass_scale": Param(1.0, "scale every mass and inertia of the robot",
                                     lo=0.0, lo_open=True)},
        initial_state=_brick_state,
        contact_defaults={"penalty_fl": {"kp": 500.0, "kv": 250.0, "epsilon": 1e-6},
                          "spring_damper": {"stiffness": 2e4, "damping": 50.0,
                                            "tangential_stiffness": 2e4,
                                            "tangential_damping": 50.0}}),
    Scenario(
        "drop", "3-D biped dropped from 5 cm in its standing posture, joints held by a PD.",
        "biped3d", duration=2.0, dt=1e-3,
        params={"height": Param(0.05, "drop height of the soles [m]", lo=0.0),
                "mu": Param(0.8, "friction coefficient", lo=0.0),
                "mass_scale": Param(1.0, "scale every mass and inertia of the robot",
                                     lo=0.0, lo_open=True)},
        initial_state=_standing_state, contact_defaults=_BIPED_CONTACT, controller=_PD,
        biped=True, contacts=GEOMETRY),
    Scenario(
        "stand", "3-D biped standing on flat ground under whole-body control (Rengifo et al. "
        "Fig. 12-14: vertex heights and normal forces; --controller joint_pd for the PD hold).",
        "biped3d", duration=3.0, dt=1e-3,
        params={"height": Param(0.0, "initial height of the soles [m]", lo=0.0),
                "mu": Param(0.8, "friction coefficient", lo=0.0),
                "mass_scale": Param(1.0, "scale every mass and inertia of the robot",
                                     lo=0.0, lo_open=True)},
        initial_state=_standing_state, contact_defaults=_BIPED_CONTACT, controller="wbc",
        biped=True, behavior="stand", contacts=GEOMETRY),
    Scenario(
        "sway", "3-D biped in double support, whole-body control: CoM vertical sinusoid and a "
        "sinusoidal internal tension between the feet, CoPs held at the sole centres (Sentis et "
        "al. Fig. 8 on our biped).", "biped3d", duration=None, dt=1e-3,
        params={"mu": Param(0.8, "friction coefficient", lo=0.0)},
        initial_state=_standing_state, contact_defaults=_BIPED_CONTACT, controller="wbc",
        biped=True, behavior="sway", contacts=GEOMETRY),
    Scenario(
        "push", "3-D biped standing under whole-body control, pushed on the pelvis (sideways by "
        "default); must recover without a step or a lifting foot.", "biped3d", duration=4.0,
        dt=1e-3,
        params={"mu": Param(0.8, "friction coefficient", lo=0.0),
                "push_force": Param(50.0, "horizontal push on the pelvis [N]"),
                "push_direction_deg": Param(90.0, "direction of the push from +x (forward) "
                                            "towards +y (left) [deg]; 90: lateral"),
                "push_time": Param(1.0, "start of the push [s]", lo=0.0),
                "push_duration": Param(0.1, "length of the push [s]", lo=0.0)},
        initial_state=_standing_state, contact_defaults=_BIPED_CONTACT, controller="wbc",
        biped=True, behavior="stand", external=_push, contacts=GEOMETRY),
    Scenario(
        "walk", "3-D biped walking five steps: footsteps, ZMP preview CoM, swing splines, IK "
        "joint references tracked by computed-torque control (Rengifo et al. §V).", "biped3d",
        duration=None, dt=1e-3, params={"mu": Param(0.8, "friction coefficient", lo=0.0)},
        initial_state=_standing_state, contact_defaults=_BIPED_CONTACT, controller="ctc",
        biped=True, behavior="walk", contacts=GEOMETRY),
    Scenario(
        "planar_walk", "Planar 7-link biped walking with computed-torque control on optimal "
        "cubic joint references (Bravo & Rengifo §4).", "planar_biped", duration=None,
        dt=1e-3, params={"mu": Param(0.8, "friction coefficient", lo=0.0)},
        initial_state=_standing_state, contact_defaults=_BIPED_CONTACT, controller="ctc",
        biped=True, behavior="planar_walk", contacts=GEOMETRY),
    Scenario(
        "plate", "A 1 kg box resting on grid x grid studs, one contact each (the contact-count "
        "scaling study, Chardonnet et al. Fig. 5; geometry contacts, --set contacts=points for "
        "the configured points).", "brick", duration=0.5, dt=1e-3,
        params={"grid": Param(4, "points per side; m = grid² contact points", lo=2, hi=12),
                "height": Param(0.0, "initial height of the bottom face [m]", lo=0.0),
                "mu": Param(0.8, "friction coefficient", lo=0.0)},
        initial_state=_plate_state, robot_factory=_plate,
        contact_defaults={"penalty_fl": {"kp": 500.0, "kv": 250.0, "epsilon": 1e-6}},
        contacts=GEOMETRY),
    Scenario(
        "fall", "Limp 3-D biped dropped on its side from 0.5 m: every collision box and "
        "cylinder of the URDF lands on the ground (geometry contacts).", "biped3d",
        duration=2.0, dt=1e-3,
        params={"height": Param(0.5, "height of the lowest geometry above the ground [m]",
                                lo=0.0),
                "mu": Param(0.8, "friction coefficient", lo=0.0)},
        initial_state=_fall_state, contact_defaults=_BIPED_CONTACT, contacts="geometry"),
    Scenario(
        "step", "3-D biped standing with its heels (5 cm) over the edge of a 5 cm step, "
        "joints held by a PD (world step: the soles touch the step and its edge).", "biped3d",
        duration=2.0, dt=1e-3, params={"mu": Param(0.8, "friction coefficient", lo=0.0)},
        initial_state=_standing_state, contact_defaults=_BIPED_CONTACT, controller=_PD,
        biped=True, world="step"),
    Scenario(
        "box_push", "A 2 kg box pushed along the ground by a horizontal force on its centre: "
        "sticks below mu m g, slides above at (F - mu m g)/m (geometry contacts).", "box",
        duration=1.0, dt=1e-3,
        params={"mu": Param(0.5, "friction coefficient", lo=0.0),
                "push_force": Param(15.0, "horizontal (+x) push on the box [N]"),
                "push_time": Param(0.1, "start of the push [s]", lo=0.0)},
        initial_state=_box_state, external=_box_push, contact_defaults=_BOX_CONTACT,
        contacts="geometry"),
    Scenario(
        "box_stack", "A 1 kg box resting on the 2 kg box robot on the ground: both at rest "
        "without creep (world box_stack, geometry contacts).", "box", duration=1.0,
        dt=1e-3, params={"mu": Param(0.5, "friction coefficient", lo=0.0)},
        initial_state=_box_state, contact_defaults=_BOX_CONTACT, world="box_stack"),
    Scenario(
        "lean_on_table", "Humanoid leaning forward past its toes on a table with its left hand "
        "(mu = 0.4) and pushing a 0.5 kg box off the table with its right (Chardonnet et al. "
        "Figs. 3 and 6; world lean_on_table).", "humanoid", duration=None, dt=1e-3,
        params={"mu": Param(0.8, "friction coefficient of the unlisted pairs (feet on the "
                                 "floor)", lo=0.0)},
        initial_state=_standing_state, contact_defaults=_HAND_CONTACT, controller="wbc",
        biped=True, behavior="lean_on_table", world="lean_on_table"),
    Scenario(
        "multicontact", "Humanoid from two to four to three contacts: both palms on a table, "
        "then the right palm pressing 60 N on a side panel while sliding, CoM vertical "
        "sinusoid (Sentis et al. Fig. 6; world multicontact).", "humanoid", duration=None,
        dt=1e-3, params={"mu": Param(0.8, "friction coefficient", lo=0.0)},
        initial_state=_standing_state, contact_defaults=_HAND_CONTACT, controller="wbc",
        biped=True, behavior="multicontact", world="multicontact"),
)}


def get_scenario(name: str) -> Scenario:
    """Look up a scenario by name.

    Raises:
        ConfigError: unknown name, listing the valid ones.
    """
    if name not in SCENARIOS:
        raise unknown_name("scenario", name, SCENARIOS)
    return SCENARIOS[name]
