"""The controller protocol (docs/architecture.md layer 5): what it measures, what it commands.

A controller depends on the robot model only, never on the simulator, so the same object runs
in ``biped-sim``, in the controller node against the simulator node, and against a hardware
driver. Its input is what a robot can measure:

    q, v        pinocchio configuration and velocity (base pose/twist from odometry or a state
                estimator, joint positions/velocities from the encoders; free-flyer base twist
                in the base frame, pinocchio's convention, which is also nav_msgs/Odometry's)
    wrenches    per contact body (foot): (f, τ) in its sole frame about the sole origin, as
                published on ``contact_wrench/<foot>`` (F/T sensors on hardware)

and its output is the joint torques τ (length ``robot.n_joints``, within the effort limits)
plus diagnostics. The references come from a ``Behavior`` (``stand``, ``sway``, ``walk``,
...), which says at every time which feet support the robot and what the tasks track.
"""

from __future__ import annotations

import functools
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from biped_contact_sim.errors import ConfigError, InputError, settings_from


def check_range(name: str, value, lo: float, hi: float = np.inf, lo_open: bool = True) -> None:
    """Refuse a setting outside ``(lo, hi]`` (``[lo, hi]`` with ``lo_open=False``).

    Raises:
        ConfigError: naming the setting, its value and the bound.
    """
    ok = np.isfinite(value) and (value > lo if lo_open else value >= lo) and value <= hi
    if not ok:
        bound = f"{'>' if lo_open else '>='} {lo:g}"
        if hi < np.inf:
            bound += f" and <= {hi:g}"
        else:  # one-sided: infinity is refused too, say so
            bound = "finite and " + bound
        raise ConfigError(f"{name} = {value!r} must be {bound}")


def range_checker(prefix: str) -> Callable[..., None]:
    """``check_range`` for the settings of one owner: ``check(field, value, lo, hi=inf,
    lo_open=True)`` names the setting ``{prefix}.{field}`` in its error."""
    def check(field: str, value, lo: float, hi: float = np.inf, lo_open: bool = True) -> None:
        check_range(f"{prefix}.{field}", value, lo, hi, lo_open)
    return check


def behavior_params(behavior: str, params_class, params: Mapping[str, Any]):
    """``params_class(**params)`` after refusing keys that are not its fields.

    Raises:
        ConfigError: naming the unknown keys, the behaviour and the allowed keys (and whatever
            the dataclass's own checks raise).
    """
    return settings_from(params_class, params, "parameter", f"behavior {behavior!r}")


@dataclass
class Measurement:
    """What the controller reads at time ``t`` (module docstring)."""

    t: float
    q: np.ndarray  # (nq,)
    v: np.ndarray  # (nv,)
    wrenches: dict[str, np.ndarray] = field(default_factory=dict)  # foot -> (6,) [f; τ], sole


def check_measurement(t: float, q, v, nq: int, nv: int,
                      wrenches: Mapping[str, Any] | None = None) -> None:
    """Refuse a measurement a controller cannot use: ``q``/``v`` of another length than the
    model's ``nq``/``nv``, or a time, configuration, velocity or sole wrench (6 values) that is
    not finite. A sensor that fails (NaN) or a wrong message must stop at the door: inside, a
    NaN reaches a least-squares solve or a ``max()`` over an empty set and comes out as a
    cryptic error, or as NaN torques.

    Raises:
        InputError: naming the field (``measurement.q[7] = nan``) and the rule.
    """
    if not isinstance(t, (int, float, np.floating, np.integer)) or not math.isfinite(t):
        raise InputError(f"measurement.t = {t!r} must be finite (a time in s)")
    if type(q) is np.ndarray and type(v) is np.ndarray and q.shape == (nq,) \
            and v.shape == (nv,) and math.isfinite(q.dot(q) + v.dot(v) + sum(
                w.dot(w) if type(w) is np.ndarray and w.shape == (6,) else np.nan
                for w in (wrenches or {}).values())):
        # The common case in a few µs: Σ x² is finite only if every x is (an overflow of
        # huge finite values takes the slow path below, which accepts them).
        return
    for name, value, n in (("q", q, nq), ("v", v, nv)):
        _check_vector(f"measurement.{name}", value, n)
    for body, wrench in (wrenches or {}).items():
        _check_vector(f"measurement.wrenches[{body!r}]", wrench, 6)


def _check_vector(name: str, value, n: int) -> None:
    """``value`` is n finite numbers, or InputError naming ``name``, the entry and the rule."""
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be {n} numbers; got {value!r}") from None
    if array.shape != (n,):
        raise InputError(f"{name} must have {n} values; got shape {array.shape}")
    finite = np.isfinite(array)
    if not finite.all():
        i = int(np.argmin(finite))
        raise InputError(f"{name}[{i}] = {array[i]} must be finite (no NaN or infinity)")


@dataclass
class FootTarget:
    """Pose target of a contact body not in support (a swing foot, a reaching hand): position,
    velocity and acceleration of its sole/palm frame origin (world); orientation level with the
    given yaw, or ``rotation`` (world ← frame) with angular velocity/acceleration ``omega``,
    ``alpha`` (zero if None).

    With ``normal`` set (a unit vector, world: the contact surface's normal, pointing out of
    the surface towards the body) the target is the unified force/position task of Sentis et
    al. §V-A: motion along the surface and orientation as above, and a normal force instead of
    a position along ``normal`` — the surface's reaction on the body ``normal·f`` tracks
    ``force`` [N] (the body pushes with ``force`` into the surface).
    """

    p: np.ndarray  # (3,)
    v: np.ndarray  # (3,)
    a: np.ndarray  # (3,)
    yaw: float = 0.0
    rotation: np.ndarray | None = None  # (3, 3)
    omega: np.ndarray | None = None  # (3,)
    alpha: np.ndarray | None = None  # (3,)
    normal: np.ndarray | None = None  # (3,)
    force: float = 0.0


@dataclass
class Reference:
    """What the tasks track at time t. ``None`` fields mean "no such task now".

    Attributes:
        stance: names of the contact bodies (feet, hands) in support, in
            ``robot.contact_bodies`` order (a controller may hold a body a little longer or
            add it a little later than asked, see its contact transitions).
        com, com_vel, com_acc: CoM task reference (world) [m, m/s, m/s²].
        feet: targets of contact bodies not in ``stance`` (swing feet, hands; ``FootTarget``).
        q_joints, v_joints, a_joints: actuated-joint references (posture task for ``wbc``,
            the tracked trajectory for ``ctc``), length ``robot.n_joints``.
        internal: internal-force reference in the layout of the grasp model in use (double
            support, Sentis et al. App. C eq. 82: [tension, 3 tangential CoP moments, 2 normal
            moments]; n_s ≥ 3: ``control.grasp``'s general model, whose row names the
            controller reports) [N, N·m]. None: zero.
        cop: per stance foot, desired CoP in its sole frame (x, y) [m].
        load_share: per stance foot, the fraction α_k of the net contact force it should carry
            (double support; Σ α_k = 1). ``ctc`` uses it instead of the shares it derives from
            ``com``/``com_acc`` (a behaviour that plans its load transfer says so here).
        no_slip: support bodies whose tangential contact force ``wbc``'s internal-force
            reference cancels (the least change of F_int,ref that makes it zero, e.g. a hand
            on a slippery table, Chardonnet et al.): the other contacts then carry the
            horizontal forces. Only the tensions change, so its normal force is what the other
            contacts' CoP references (``cop``) leave to it, but at least ``preload``.
        preload: least normal force of each ``no_slip`` body in the support [N]: where the
            other contacts' CoP references would leave it less (a hand on a table while the
            CoM is still over the feet carries nothing), their CoPs move away from it until it
            carries ``preload``, so that it stays in contact.
    """

    stance: tuple[str, ...]
    com: np.ndarray | None = None
    com_vel: np.ndarray | None = None
    com_acc: np.ndarray | None = None
    feet: dict[str, FootTarget] = field(default_factory=dict)
    q_joints: np.ndarray | None = None
    v_joints: np.ndarray | None = None
    a_joints: np.ndarray | None = None
    internal: np.ndarray | None = None
    cop: dict[str, np.ndarray] = field(default_factory=dict)
    load_share: dict[str, float] | None = None
    no_slip: tuple[str, ...] = ()
    preload: float = 0.0


class Behavior(ABC):
    """A reference generator: ``reference(t)`` for ``0 ≤ t ≤ duration``.

    Built from the robot and the initial configuration q0 (its feet placements define the
    footholds). ``duration`` is how long the behaviour needs (a scenario's default length).
    ``controller_defaults``: per controller name, the settings this behaviour needs of it
    (``make_controller`` puts the user's settings over them: ``biped-sim --set controller.*``,
    the controller node's ``controller_settings``).
    """

    name: ClassVar[str]
    duration: float = 5.0
    controller_defaults: ClassVar[dict[str, dict[str, Any]]] = {}

    @abstractmethod
    def reference(self, t: float) -> Reference:
        """The task references at time t."""

    def stance_at(self, t: float) -> tuple[str, ...]:
        """The contact bodies in support at t, ``reference(t).stance`` (behaviours whose full
        reference costs more than their contact schedule override it)."""
        return self.reference(t).stance


class LazyDict(MutableMapping):
    """A dict built on first use: ``build()`` returns it.

    A controller's ``info``: the torques of a step need none of its figures, and most steps'
    figures are never read (``biped-sim`` records them at its record rate); the controller
    captures what they are made of (arrays of that step, never buffers the next step
    overwrites) and the dict is built once, when it is first read. It behaves as the dict in
    every other respect.
    """

    __slots__ = ("_build", "_data")

    def __init__(self, build: Callable[[], dict[str, Any]]):
        self._build: Callable[[], dict[str, Any]] | None = build
        self._data: dict[str, Any] | None = None

    def _dict(self) -> dict[str, Any]:
        data = self._data
        if data is None:
            data = self._data = self._build()
            self._build = None
        return data

    def __getitem__(self, key: str) -> Any:
        return self._dict()[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._dict()[key] = value

    def __delitem__(self, key: str) -> None:
        del self._dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._dict())

    def __len__(self) -> int:
        return len(self._dict())

    def __contains__(self, key: object) -> bool:
        return key in self._dict()

    def get(self, key: str, default: Any = None) -> Any:
        return self._dict().get(key, default)

    def __repr__(self) -> str:
        return f"LazyDict({self._dict()!r})"


class LazyValues(Mapping):
    """A mapping of known keys whose values are built on first use, one at a time:
    ``value(key)``. ``Reference.feet`` of a behaviour whose targets cost more than the
    controller reads (a whole-body controller uses none of the targets of the bodies in its
    support, ``ctc`` none at all)."""

    __slots__ = ("_done", "_keys", "_value")

    def __init__(self, keys, value: Callable[[str], Any]):
        self._keys = tuple(keys)
        self._value = value
        self._done: dict[str, Any] = {}

    def __getitem__(self, key: str) -> Any:
        done = self._done
        if key not in done:
            if key not in self._keys:
                raise KeyError(key)
            done[key] = self._value(key)
        return done[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __repr__(self) -> str:
        return f"LazyValues({dict(self)!r})"


@dataclass
class ControlOutput:
    """Joint torques (clamped to the effort limits) and diagnostics (floats or arrays; a dict
    or a ``LazyDict``)."""

    tau: np.ndarray
    info: MutableMapping[str, Any] = field(default_factory=dict)


class Controller(ABC):
    """Base of every controller; subclasses set ``name`` and a frozen ``Settings`` dataclass.

    Args:
        robot: the ``RobotModel`` (the controller owns its own pinocchio Data).
        behavior: where the references come from.
        dt: control period [s] (for integral terms and discrete-time gain bounds).
        **settings: values for the fields of ``Settings`` (unknown keys are refused).
    """

    name: ClassVar[str]
    Settings: ClassVar[type]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every subclass's ``compute`` checks its measurement first (``check_measurement``):
        a bad one raises InputError before the controller's state (contact transitions,
        integrators) changes."""
        super().__init_subclass__(**kwargs)
        compute = cls.__dict__.get("compute")
        if compute is None or getattr(compute, "checks_measurement", False):
            return

        @functools.wraps(compute)
        def checked_compute(self, meas: Measurement) -> ControlOutput:
            check_measurement(meas.t, meas.q, meas.v, self.robot.nq, self.robot.nv,
                              meas.wrenches)
            return compute(self, meas)

        checked_compute.checks_measurement = True
        cls.compute = checked_compute

    def __init__(self, robot, behavior: Behavior, dt: float, **settings: Any):
        self.settings = settings_from(self.Settings, settings, "setting",
                                      f"controller {self.name!r}")
        self.robot = robot
        self.behavior = behavior
        self.dt = float(dt)

    def reset(self) -> None:  # noqa: B027 - stateless controllers need nothing
        """Forget internal state (integrators, previous contact states)."""

    @abstractmethod
    def compute(self, meas: Measurement) -> ControlOutput:
        """Torques for the measurement ``meas`` (references from ``self.behavior``).

        Raises:
            InputError: ``meas`` has wrong lengths or values that are not finite (checked
                before anything changes, ``__init_subclass__``).
        """
