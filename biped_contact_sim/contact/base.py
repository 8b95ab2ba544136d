"""The contact-model protocol: what every model receives and returns (docs/methods.md §2).

A model sees the contact points in their *contact frames* ``[t₁, t₂, n]`` (the terrain's
tangents and normal at each point), so it knows nothing about terrain shapes or robots:

    φ_i        signed gap (< 0: penetration)
    v_c,i      contact-point velocity (ṗ_t1, ṗ_t2, φ̇)
    J_c        (3m, nv) contact-frame point Jacobians, rows (t₁ᵀ J_i, t₂ᵀ J_i, nᵀ J_i)
    γ_c        (3m,) contact-frame drifts
    M⁻¹, Sᵀτ − h

and returns per-point forces ``f_i = (f_t1, f_t2, f_n)`` in the same frames (zero for inactive
points) plus its active set and solver statistics. The simulator integrates
``M v̇ = Sᵀτ − h + J_cᵀ f``. Velocity-level models report the impulse over the step divided by dt.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from biped_contact_sim.contact.base_kernels import packed_delassus
from biped_contact_sim.errors import ConfigError, settings_from
from biped_contact_sim.robot.model_kernels import (
    inverse_udut,
    packed_acceleration,
    refresh_free_motion,
    unpack_views,
)
from biped_contact_sim.solvers.warm_start import KeyedRows

_XYZ = np.arange(3)


class ContactState:
    """The contact points at (q, v), in contact frames (see the module docstring).

    Built either from a dense ``Minv`` (tests, small examples) or, by the simulator, from one
    per-step buffer ``packed = (W, m, nv, nj)`` (``robot.model_kernels.step_terms``/``unpack``) that
    holds J_c, γ_c, τ_free, a_free and pinocchio's factor ``M = U D Uᵀ`` with
    ``X = D^{-1/2} U⁻¹ J_cᵀ``: then ``G = XᵀX`` without forming M⁻¹, the compiled kernels read
    W directly, and the arrays (and ``Minv``) are made only if Python code reads them.
    ``a_free`` follows ``tau_free`` (assigning ``tau_free`` recomputes it).

    Attributes:
        dt: time step [s].
        phi: (m,) gaps; vc: (m, 3) contact-frame velocities; Jc: (3m, nv) contact-frame
            Jacobians; gamma_c: (3m,) drifts; tau_free: (nv,) ``Sᵀτ − h`` (+ external forces);
            p_tangent: (m, 2); mu: (m,) friction coefficients.
        ids: (m,) int contact ids: a point keeps its id while it stays in the contact set, so
            per-point state (stiction anchors, warm starts) is keyed by id, not by position in
            the arrays (the set changes size from step to step once bodies collide).
    """

    __slots__ = ("_Jc", "_Minv", "_a_free", "_gamma_c", "_packed", "_tau_free", "_views", "dt",
                 "ids", "mu", "p_tangent", "phi", "vc")

    def __init__(self, dt: float, phi: np.ndarray, vc: np.ndarray, Jc: np.ndarray | None = None,
                 gamma_c: np.ndarray | None = None, Minv: np.ndarray | None = None,
                 tau_free: np.ndarray | None = None, p_tangent: np.ndarray | None = None,
                 mu: np.ndarray | None = None, ids: np.ndarray | None = None, *,
                 packed: tuple[np.ndarray, int, int, int] | None = None):
        if packed is None and (Minv is None or Jc is None or gamma_c is None
                               or tau_free is None):
            raise ValueError("ContactState needs Jc, gamma_c, Minv and tau_free, or packed")
        self.dt, self.phi, self.vc = dt, phi, vc
        m = len(phi)
        self.p_tangent = np.zeros((m, 2)) if p_tangent is None else p_tangent
        self.mu = mu
        self.ids = np.arange(m) if ids is None else ids
        self._Jc, self._gamma_c, self._Minv, self._tau_free = Jc, gamma_c, Minv, tau_free
        self._a_free = None
        self._packed = packed
        self._views = None

    @classmethod
    def from_packed(cls, dt: float, phi: np.ndarray, vc: np.ndarray, p_tangent: np.ndarray,
                    mu: np.ndarray, ids: np.ndarray,
                    packed: tuple[np.ndarray, int, int, int]) -> ContactState:
        """The simulator's constructor (``packed`` from ``robot.model_kernels.step_terms``), without
        the argument checks of ``__init__`` (once per step)."""
        state = object.__new__(cls)
        state.dt, state.phi, state.vc, state.p_tangent, state.mu, state.ids = \
            dt, phi, vc, p_tangent, mu, ids
        state._Jc = state._gamma_c = state._Minv = state._tau_free = state._a_free = None
        state._views = None
        state._packed = packed
        return state

    def _unpacked(self) -> tuple[np.ndarray, ...]:
        if self._views is None:
            self._views = unpack_views(*self._packed)
        return self._views

    @property
    def packed(self) -> tuple[np.ndarray, int, int, int] | None:
        """``(W, m, nv, nj)`` for the compiled kernels (``robot.model_kernels.unpack``), or None."""
        return self._packed

    @property
    def n_points(self) -> int:
        return len(self.phi)

    @property
    def Jc(self) -> np.ndarray:
        return self._Jc if self._packed is None else self._unpacked()[0]

    @property
    def gamma_c(self) -> np.ndarray:
        return self._gamma_c if self._packed is None else self._unpacked()[1]

    @property
    def tau_free(self) -> np.ndarray:
        return self._tau_free if self._packed is None else self._unpacked()[5]

    @tau_free.setter
    def tau_free(self, value: np.ndarray) -> None:
        if self._packed is None:
            self._tau_free = value
            self._a_free = None
        else:  # in the buffer, so the kernels see it; a_free follows
            self._unpacked()[5][:] = value
            refresh_free_motion(*self._packed)

    @property
    def factor(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """``(U, D, X)`` with ``M = U D Uᵀ`` and ``X = D^{-1/2} U⁻¹ J_cᵀ``, or None."""
        if self._packed is None:
            return None
        views = self._unpacked()
        return views[3], views[4], views[2]

    @property
    def Minv(self) -> np.ndarray:
        """M⁻¹ (nv, nv), from the factor on first use when the state was built from it."""
        if self._Minv is None:
            views = self._unpacked()
            self._Minv = inverse_udut(views[3], views[4])
        return self._Minv

    @property
    def a_free(self) -> np.ndarray:
        """``M⁻¹(Sᵀτ − h)``, the acceleration without contact forces (computed once)."""
        if self._packed is not None:
            return self._unpacked()[6]
        if self._a_free is None:
            self._a_free = self._Minv @ self._tau_free
        return self._a_free

    def delassus(self, idx: np.ndarray, drift: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """``G = J_c M⁻¹ J_cᵀ`` and ``b = J_c M⁻¹(Sᵀτ − h) + γ_c`` over points ``idx``.

        Rows are ordered (t₁, t₂, n) per point, so ``p̈_c = G f + b`` (docs/methods.md §1).
        ``drift=False``: ``b − γ_c`` instead (the velocity-level models' ``b_v``; the same
        floating-point operations as subtracting γ_c from b).
        """
        if self._packed is not None:
            return packed_delassus(*self._packed, np.asarray(idx, dtype=np.int64), drift)
        if len(idx) == self.n_points:  # all points: no copies
            Jc, gamma = self.Jc, self.gamma_c
        else:
            rows = (3 * idx[:, None] + _XYZ).ravel()
            Jc, gamma = self.Jc[rows], self.gamma_c[rows]
        b = Jc @ self.a_free + gamma
        return Jc @ (self.Minv @ Jc.T), b if drift else b - gamma

    def contact_acceleration(self, f: np.ndarray) -> np.ndarray:
        """``v̇ = a_free + M⁻¹ J_cᵀ f`` for contact-frame forces f (m, 3)."""
        if self._packed is not None:
            return packed_acceleration(*self._packed, f.reshape(-1))
        return self.a_free + self.Minv @ (self.Jc.T @ f.reshape(-1))


class Stats(Mapping):
    """Per-step solver statistics: names and a float array (a read-only mapping).

    Models that declare ``stat_names`` fill one array per step instead of a dictionary; the
    runner stacks the arrays, readers index by name as before.
    """

    __slots__ = ("names", "values")

    def __init__(self, names: tuple[str, ...], values: np.ndarray):
        self.names, self.values = names, values

    def __getitem__(self, key: str) -> float:
        try:
            return float(self.values[self.names.index(key)])
        except ValueError:
            raise KeyError(key) from None

    def __iter__(self):
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)


class ContactResult:
    """Per-point forces (m, 3) in contact frames, the active set, and solver statistics
    (a ``Stats`` or a dict)."""

    __slots__ = ("active", "f", "stats")

    def __init__(self, f: np.ndarray, active: np.ndarray, stats: Mapping | None = None):
        self.f, self.active = f, active
        self.stats = {} if stats is None else stats


class ContactModel(ABC):
    """Base of every contact model; subclasses set ``name`` and a ``Settings`` dataclass.

    Args:
        **settings: values for the fields of ``Settings`` (unknown keys are refused).
    """

    name: ClassVar[str]
    Settings: ClassVar[type]
    #: names of the statistics when ``compute`` returns them as a ``Stats`` array (else a dict)
    stat_names: ClassVar[tuple[str, ...]] = ()
    #: integrators the model supports ("rk4" only for force-based models).
    integrators: ClassVar[tuple[str, ...]] = ("semi_implicit_euler", "rk4")
    #: whether the model's law stores energy it gives back later (stiction springs): then
    #: its contact work may exceed its restitution in a step (``sim.step_energy``)
    stores_energy: ClassVar[bool] = False

    def __init__(self, **settings: Any):
        self.settings = settings_from(self.Settings, settings, "setting",
                                      f"contact model {self.name!r}")

    def check(self, dt: float, integrator: str) -> None:
        """Refuse a step size or integrator this model cannot run stably.

        Raises:
            ConfigError: naming the setting, its value and the bound.
        """
        if integrator not in self.integrators:
            raise ConfigError(f"Contact model {self.name!r} does not support integrator "
                              f"{integrator!r}. Supported: {', '.join(self.integrators)}")

    def check_inertia(self, dt: float, G: np.ndarray) -> None:  # noqa: B027 - most need nothing
        """Refuse settings that explicit integration cannot run stably on this robot, given its
        Delassus operator ``G = J_c M⁻¹ J_cᵀ`` over all points (the simulator calls it at
        ``reset``; models whose contact dynamics are mass-independent need nothing).

        Raises:
            ConfigError: naming the setting, its value and the bound.
        """

    def reset(self, n_points: int) -> None:  # noqa: B027 - stateless models need nothing
        """Forget any internal state (e.g. stiction anchors)."""

    @abstractmethod
    def compute(self, state: ContactState, commit: bool = True) -> ContactResult:
        """Contact forces at ``state``; ``commit`` is False for the extra RK4 stages."""


class WarmStarted:
    """Warm start per contact id of a model whose compiled step writes the rows of the next
    one (``gauss_seidel``, ``time_stepping``): the stored rows (``_warm``), the buffers the next
    step writes into (``_spare``, swapped with the stored ones at each commit: no allocation
    per step) and every point's index (``_all``)."""

    def _reset_warm(self, n_points: int, width: int) -> None:
        self._warm = KeyedRows(width)
        self._spare = (np.empty(n_points, dtype=np.int64), np.empty((n_points, width)))
        self._all = np.arange(n_points)

    def _step_buffers(self, state: ContactState, n_stats: int) -> tuple:
        """(phi, vc, ids, f, active, stats, keys, rows) of a step: contiguous φ and v_c (one
        compiled signature: a view is strided), the contact ids (every point's index without
        them), and its outputs, new every step (the caller keeps the forces, the warm start
        keeps keys and rows); ``reset`` first when the number of points changed."""
        phi = np.ascontiguousarray(state.phi)
        m_all = phi.shape[0]
        if getattr(self, "_warm", None) is None or len(self._all) != m_all:
            self.reset(m_all)
        keys, rows = self._spare  # this step's warm-start rows: the buffers not in use
        ids = getattr(state, "ids", None)
        return (phi, np.ascontiguousarray(state.vc), self._all if ids is None else ids,
                np.zeros((m_all, 3)), np.empty(m_all, dtype=np.bool_), np.empty(n_stats),
                keys, rows)

    def _commit_warm(self, keys: np.ndarray, rows: np.ndarray) -> None:
        """Store the step's rows (``KeyedRows.store`` without its conversions); the rows it
        held become the spare (the model's own arrays: nothing else keeps them)."""
        warm, m_all = self._warm, len(keys)
        if len(warm.keys) == m_all:
            self._spare = warm.keys, warm.rows
        else:
            self._spare = np.empty(m_all, dtype=np.int64), np.empty_like(rows)
        warm.keys, warm.rows = keys, rows


def positive(name: str, value: float, allow_zero: bool = False) -> float:
    """Validate a positive (or non-negative) setting, naming it in the error."""
    try:
        value = float(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{name} = {value!r} must be a number") from exc
    if not np.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ConfigError(f"{name} = {value!r} must be finite and {bound}")
    return value
