"""Virtual-linkage grasp/contact matrix (Sentis, Park, Khatib 2010, §II-B, App. C–D).

For n_s contacts anchored at their centres of pressure (CoPs) P_i with surface frames R_i
(columns t1, t2, n in world), the stacked contact wrenches

    F_r = [f_1; m_1; f_2; m_2; ...]        (eq. 84's pairing S_fm F_r of eq. 9)

(world frame, moment m_i about P_i; a point contact contributes f_i only) map to the resultant
on the CoM and the internal forces through the grasp/contact matrix (eqs. 12–17):

    [F_com; F_int] = G F_r,     G = [W_com; W_int]                        (13), (15)
    W_com F_r = [Σ f_i;  Σ (P_i − P_com) × f_i + m_i]                      (12), (16)
    W_int rows:  tensions  t_ij = (f_i − f_j)·e_ij,  e_ij = (P_j − P_i)/‖P_j − P_i‖
                                                                       (10), (86)–(91)
                 tangential CoP moments  t1ᵀ m_i, t2ᵀ m_i  (zero ⇔ the CoP is at P_i)  (8), (85)
                 normal moments  nᵀ m_i                                    (11), (92)

Sign convention. docs/methods.md §1: f is the ground reaction *on the robot* (the simulator's and
the F/T sensors' sign). The paper's F_r in eqs. 20 and 64 is the force of the robot on the ground,
i.e. −f; G is linear so only signs differ: here F_com = [m(c̈ − g); L̇_G] (Newton–Euler of the
centroidal dynamics) and a positive tension means the ground pushes foot i towards foot j
(the legs push outwards).

Models (``grasp_model``):

* n_s = 1: G = W_com (no internal forces);
* two surface contacts, coplanar (App. C, eq. 82): F_int = [t_12; t1ᵀm_1; t2ᵀm_1; aᵀm_2;
  n_1ᵀm_1; n_2ᵀm_2] ∈ R⁶, where a is the sole axis of contact 2 most perpendicular to the line
  P_1P_2 (the paper drops one of the four CoP coordinates because the ZMP lies on that line,
  eq. 74; the dependent one is the moment of contact 2 *about* the line: (m_1 + m_2)·e_12 is
  fixed by F_com). Contact 1 plays the paper's right foot (2-D CoP);
* two surface contacts, non-coplanar: ``noncoplanar="eq83"`` gives the paper's eq. 83
  (4 tangential + 2 normal moments, tension ignored). Its G is singular (rank 11): a tension
  pair ±t e_12 has zero resultant and zero moments, so it is in the null space of G — the
  paper's own alternative ("the tension force and one out of the two normal moments") is the
  default ``noncoplanar="tension"``: [t_12; 4 tangential moments; one normal moment], the
  dropped normal moment being that of the contact whose normal is most aligned with e_12;
* otherwise (eqs. 10–17; ``biped="general"`` forces it for two contacts): all pair tensions,
  then 2 tangential and 1 normal moment per surface contact, kept greedily while they are
  independent of W_com and of the rows already kept, so that W_int has full row rank Σc_i − 6.
  For n_s ≥ 3 surface contacts in general position (no three anchors on a line, not all in
  one plane) every candidate is kept: the 3(n_s − 2) tensions of the linkage edges (3 for a
  triangle, the 6 edges of a tetrahedron), 2 n_s tangential CoP moments and n_s normal moments,
  6(n_s − 1) internal forces (App. D); for two coplanar feet the greedy choice is eq. 82's
  (the dependent moment of contact 2 about the line P_1P_2 is the one rejected). Four anchors
  in one plane (e.g. both feet and both hands of a symmetric stance) leave one internal mode,
  forces normal to that plane, that tensions and moments miss: normal-force candidates
  n_iᵀ f_i come last, the greedy takes what it needs and the row kept is made orthogonal to
  W_com and the other rows (our addition: an out-of-plane squeeze, zero when there is none).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

CONTACT_KINDS = {"6d": 6, "3d": 3}  # surface contact (force + moment), point contact (force)
NONCOPLANAR_MODELS = ("tension", "eq83")
BIPED_MODELS = ("auto", "eq82", "eq83", "tension", "general")


def skew(p: np.ndarray) -> np.ndarray:
    """Cross-product matrix [p]× (``skew(p) @ x == np.cross(p, x)``)."""
    return np.array([[0.0, -p[2], p[1]], [p[2], 0.0, -p[0]], [-p[1], p[0], 0.0]])


@dataclass(frozen=True)
class ContactAnchor:
    """One contact of the virtual-linkage model.

    Attributes:
        position: the CoP anchor P_i (world) [m].
        rotation: R_i, surface frame → world; columns t1, t2 (tangential) and n (normal).
        kind: ``"6d"`` surface contact (transmits f and m) or ``"3d"`` point contact (f only).
        name: label used in the internal-force names.
    """

    position: np.ndarray
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    kind: str = "6d"
    name: str = ""

    def __post_init__(self):
        if self.kind not in CONTACT_KINDS:
            raise ValueError(f"ContactAnchor.kind = {self.kind!r}; valid: "
                             + ", ".join(CONTACT_KINDS))
        object.__setattr__(self, "position", np.asarray(self.position, float).reshape(3))
        object.__setattr__(self, "rotation", np.asarray(self.rotation, float).reshape(3, 3))

    @property
    def size(self) -> int:
        return CONTACT_KINDS[self.kind]


@dataclass
class GraspModel:
    """G = [W_com; W_int] for a set of anchors and a CoM position (eqs. 13–17).

    Attributes:
        contacts: the anchors, in the order of F_r.
        com: P_com (world).
        W_com: (6, N) resultant map (eq. 16), N = Σ c_i.
        W_int: (N − 6, N) internal-force map (eq. 17 or App. C).
        labels: names of the rows of W_int.
        model: ``"single"``, ``"eq82"``, ``"eq83"``, ``"noncoplanar_tension"`` or ``"general"``.
        offsets: start index of each contact's block in F_r.
        spec: the row specs of W_int (``linkage_rows``).
    """

    contacts: tuple[ContactAnchor, ...]
    com: np.ndarray
    W_com: np.ndarray
    W_int: np.ndarray
    labels: tuple[str, ...]
    model: str
    offsets: tuple[int, ...]
    spec: tuple[tuple[int, int, int], ...] = ()
    _G_inv: np.ndarray | None = field(default=None, repr=False)

    @property
    def G(self) -> np.ndarray:
        """The grasp/contact matrix (eq. 15)."""
        return np.vstack([self.W_com, self.W_int])

    @property
    def n_internal(self) -> int:
        return self.W_int.shape[0]

    @property
    def rank(self) -> int:
        return int(np.linalg.matrix_rank(self.G))

    @property
    def G_inv(self) -> np.ndarray:
        """G⁻¹, used in eq. 47 to compose contact wrenches from [F_com; F_int].

        Raises:
            np.linalg.LinAlgError: G is singular (e.g. the paper's eq. 83 model).
        """
        if self._G_inv is None:
            G = self.G
            if np.linalg.matrix_rank(G) < G.shape[0]:
                raise np.linalg.LinAlgError(
                    f"grasp matrix of model {self.model!r} is singular (rank "
                    f"{np.linalg.matrix_rank(G)} < {G.shape[0]}); it cannot compose wrenches")
            self._G_inv = np.linalg.inv(G)
        return self._G_inv

    def resultant(self, F_r: np.ndarray) -> np.ndarray:
        """F_com = W_com F_r: resultant force and moment about the CoM (eq. 12)."""
        return self.W_com @ F_r

    def internal(self, F_r: np.ndarray) -> np.ndarray:
        """F_int = W_int F_r (eq. 37)."""
        return self.W_int @ F_r

    def compose(self, F_com: np.ndarray, F_int: np.ndarray | None = None) -> np.ndarray:
        """F_r = G⁻¹ [F_com; F_int] (eq. 47 without the surface rotation); F_int = 0 if None."""
        F_int = np.zeros(self.n_internal) if F_int is None else np.asarray(F_int, float)
        return self.G_inv @ np.concatenate([np.asarray(F_com, float), F_int])


def wrench_transfer(com: np.ndarray) -> np.ndarray:
    """[[I, 0], [−[P_com]×, I]]: moves a wrench about the origin to one about P_com (eq. 16)."""
    T = np.eye(6)
    T[3:, :3] = -skew(np.asarray(com, float))
    return T


def resultant_map(contacts: tuple[ContactAnchor, ...], com=None) -> np.ndarray:
    """W_com (eq. 16): (6, Σ c_i); about the origin when ``com`` is None."""
    blocks = []
    for c in contacts:
        B = np.zeros((6, c.size))
        B[:3, :3] = np.eye(3)
        B[3:, :3] = skew(c.position)
        if c.size == 6:
            B[3:, 3:] = np.eye(3)
        blocks.append(B)
    W0 = np.hstack(blocks)
    return W0 if com is None else wrench_transfer(com) @ W0


def surface_resultant_map(positions: np.ndarray, com: np.ndarray) -> np.ndarray:
    """W_com (eq. 16) of n_s surface contacts at ``positions`` (n_s, 3), about ``com``: blocks
    [[I, 0], [[P_i − P_com]×, I]] (the controllers' per-step form of ``resultant_map``)."""
    n_s = len(positions)
    W = np.zeros((6, 6 * n_s))
    eye = np.eye(3)
    for i in range(n_s):
        r = positions[i] - com
        W[:3, 6 * i:6 * i + 3] = eye
        W[3:, 6 * i + 3:6 * i + 6] = eye
        W[3, 6 * i + 1], W[3, 6 * i + 2] = -r[2], r[1]
        W[4, 6 * i], W[4, 6 * i + 2] = r[2], -r[0]
        W[5, 6 * i], W[5, 6 * i + 1] = -r[1], r[0]
    return W


def _offsets(contacts) -> tuple[int, ...]:
    out, k = [], 0
    for c in contacts:
        out.append(k)
        k += c.size
    return tuple(out)


# A row of W_int is named by a spec: (TENSION, i, j) is the tension t_ij = (f_i − f_j)·e_ij
# (eqs. 10, 86–91: Δ_t differences, R_t rotation, S_t selection), (MOMENT, i, a) the moment
# component R_i[:, a]ᵀ m_i of surface contact i, a = 0, 1 tangential (S_cop T_s, eq. 8: zero
# ⇔ the CoP is at P_i), a = 2 normal (S_n T_s, eq. 11), (NORMAL_FORCE, i, 2) the out-of-plane
# internal force (our addition: four or more anchors in one plane leave an internal mode of
# forces normal to that plane, which no tension along an edge of the plane measures; the row is
# contact i's normal force n_iᵀ f_i made orthogonal to W_com and to the other rows, so that
# its zero means "no such squeeze", not "no load on contact i": ``orthogonalize``).
TENSION, MOMENT, NORMAL_FORCE = 0, 1, 2
_AXIS_NAMES = ("x", "y")


def linkage_rows(spec, positions, rotations, offsets, N: int) -> np.ndarray:
    """W_int (len(spec), N) of the row specs at the given anchors and surface rotations.

    Raises:
        ValueError: a tension between two contacts that share their CoP.
    """
    W = np.zeros((len(spec), N))
    for row, (kind, i, j) in enumerate(spec):
        if kind == TENSION:
            e = positions[j] - positions[i]
            length = np.sqrt(e @ e)
            if length < 1e-9:
                raise ValueError(f"contacts {i} and {j} share their CoP: no tension line "
                                 "between them")
            e = e / length
            W[row, offsets[i]:offsets[i] + 3] = e
            W[row, offsets[j]:offsets[j] + 3] = -e
        elif kind == MOMENT:
            W[row, offsets[i] + 3:offsets[i] + 6] = rotations[i][:, j]
        else:
            W[row, offsets[i]:offsets[i] + 3] = rotations[i][:, j]
    return W


def orthogonalize(W_com: np.ndarray, W_int: np.ndarray, spec) -> np.ndarray:
    """W_int with its NORMAL_FORCE rows replaced by their unit components orthogonal to the
    rows of W_com and to the other rows of W_int (in place; returned)."""
    special = [k for k, (kind, _, _) in enumerate(spec) if kind == NORMAL_FORCE]
    if special:
        others = [k for k in range(len(spec)) if k not in special]
        basis = np.linalg.qr(np.vstack([W_com, W_int[others]]).T)[0]
        for k in special:
            r = W_int[k] - basis @ (basis.T @ W_int[k])
            W_int[k] = r / np.linalg.norm(r)
            basis = np.column_stack([basis, W_int[k]])
    return W_int


def spec_labels(spec, names) -> tuple[str, ...]:
    """Names of the W_int rows: ``tension_<i>_<j>``, ``m_cop_<i>_x|y``, ``m_n_<i>``,
    ``f_out_of_plane_<i>``."""
    out = []
    for kind, i, j in spec:
        if kind == TENSION:
            out.append(f"tension_{names[i]}_{names[j]}")
        elif kind == NORMAL_FORCE:
            out.append(f"f_out_of_plane_{names[i]}")
        elif j == 2:
            out.append(f"m_n_{names[i]}")
        else:
            out.append(f"m_cop_{names[i]}_{_AXIS_NAMES[j]}")
    return tuple(out)


def eq82_spec(positions, rotations) -> tuple[tuple[int, int, int], ...]:
    """Rows of the coplanar biped model (App. C, eq. 82): [t_12; t1ᵀm_1; t2ᵀm_1; aᵀm_2;
    n_1ᵀm_1; n_2ᵀm_2], a the sole axis of contact 2 most perpendicular to e_12."""
    e = positions[1] - positions[0]
    k = 0 if abs(rotations[1][:, 0] @ e) <= abs(rotations[1][:, 1] @ e) else 1
    return ((TENSION, 0, 1), (MOMENT, 0, 0), (MOMENT, 0, 1), (MOMENT, 1, k), (MOMENT, 0, 2),
            (MOMENT, 1, 2))


def _label(c: ContactAnchor, i: int) -> str:
    return c.name or f"c{i}"


def grasp_model(contacts, com, noncoplanar: str = "tension", biped: str = "auto",
                coplanar_tol: float = 1e-3, rank_tol: float = 1e-9) -> GraspModel:
    """Build the virtual-linkage model for the given anchors and CoM (module docstring).

    Args:
        contacts: sequence of ``ContactAnchor`` (order of F_r).
        com: P_com (world) [m].
        noncoplanar: model for two non-coplanar surface contacts, one of ``NONCOPLANAR_MODELS``.
        biped: two surface contacts: ``"auto"`` (eq. 82 when coplanar, else ``noncoplanar``)
            or force ``"eq82"``, ``"eq83"``, ``"tension"`` or the ``"general"`` construction.
            A controller should force ``"eq82"``: its rows stay independent for any geometry
            where contact 2's dropped axis is not perpendicular to e_12, whereas the
            non-coplanar models become singular as the feet become coplanar ((m_1 + m_2)·e_12
            then depends on F_com).
        coplanar_tol: two surface contacts count as coplanar when the angle between their
            normals [rad] and |n·(P_2 − P_1)| [m] are below this.
        rank_tol: relative threshold of the greedy independence test (general model).

    Returns:
        The ``GraspModel``.

    Raises:
        ValueError: no contacts, an unknown ``noncoplanar`` model, two CoPs at one point, or a
            degenerate geometry whose internal forces the tensions and moments cannot describe
            (e.g. three or more coplanar contacts: out-of-plane internal pressure modes).
    """
    contacts = tuple(contacts)
    if not contacts:
        raise ValueError("grasp_model needs at least one contact")
    if biped not in BIPED_MODELS:
        raise ValueError(f"biped = {biped!r}; valid: " + ", ".join(BIPED_MODELS))
    if noncoplanar not in NONCOPLANAR_MODELS:
        raise ValueError(f"noncoplanar = {noncoplanar!r}; valid: " + ", ".join(NONCOPLANAR_MODELS))
    com = np.asarray(com, float).reshape(3)
    offsets = _offsets(contacts)
    N = sum(c.size for c in contacts)
    W_com = resultant_map(contacts, com)
    positions = [c.position for c in contacts]
    rotations = [c.rotation for c in contacts]
    names = [_label(c, i) for i, c in enumerate(contacts)]
    spec: list[tuple[int, int, int]] = []

    if len(contacts) == 1:
        model = "single"
    elif len(contacts) == 2 and all(c.size == 6 for c in contacts) and biped != "general":
        c1, c2 = contacts
        e = c2.position - c1.position
        e = e / np.linalg.norm(e)
        n1, n2 = c1.rotation[:, 2], c2.rotation[:, 2]
        coplanar = (np.linalg.norm(skew(n1) @ n2) < coplanar_tol and n1 @ n2 > 0
                    and abs(n1 @ (c2.position - c1.position)) < coplanar_tol)
        choice = biped if biped != "auto" else ("eq82" if coplanar else noncoplanar)
        if choice == "eq82":  # eq. 82
            model = "eq82"
            spec = list(eq82_spec(positions, rotations))
        elif choice == "eq83":
            model = "eq83"
            spec = [(MOMENT, 0, 0), (MOMENT, 0, 1), (MOMENT, 1, 0), (MOMENT, 1, 1),
                    (MOMENT, 0, 2), (MOMENT, 1, 2)]
        else:  # the paper's alternative: tension + 4 tangential + one normal moment
            model = "noncoplanar_tension"
            keep = 0 if abs(n2 @ e) >= abs(n1 @ e) else 1  # drop the normal most along e_12
            spec = [(TENSION, 0, 1), (MOMENT, 0, 0), (MOMENT, 0, 1), (MOMENT, 1, 0),
                    (MOMENT, 1, 1), (MOMENT, keep, 2)]
    else:  # general model, eqs. 10–17
        model = "general"
        n = len(contacts)
        groups = [[(TENSION, i, j) for i in range(n) for j in range(i + 1, n)],
                  [(MOMENT, i, a) for i, c in enumerate(contacts) if c.size == 6 for a in (0, 1)],
                  [(MOMENT, i, 2) for i, c in enumerate(contacts) if c.size == 6],
                  [(NORMAL_FORCE, i, 2) for i in range(n)]]
        candidates = [cand for group in groups for cand in group]
        rows = dict(zip(candidates, linkage_rows(candidates, positions, rotations, offsets, N),
                        strict=True))
        # Greedy with pivoting inside each group: take the candidate most independent of W_com
        # and of the rows kept so far (largest relative residual) while one is independent;
        # for two coplanar feet this rejects the tangential moment of contact 2 closest to the
        # dependent one (m_1 + m_2)·e_12, i.e. keeps eq. 82's axis.
        basis = np.linalg.qr(W_com.T)[0]  # orthonormal basis of the kept row space
        kept: set[tuple[int, int, int]] = set()
        for group in groups:
            remaining = list(group)
            while remaining and len(kept) < N - 6:
                res = [rows[c] - basis @ (basis.T @ rows[c]) for c in remaining]
                size = [np.linalg.norm(r) / max(1.0, np.linalg.norm(rows[c]))
                        for r, c in zip(res, remaining, strict=True)]
                best = int(np.argmax(size))
                if size[best] <= rank_tol:
                    break
                kept.add(remaining.pop(best))
                basis = np.column_stack([basis, res[best] / np.linalg.norm(res[best])])
        spec = [c for c in candidates if c in kept]
        if len(spec) < N - 6:
            raise ValueError(
                f"degenerate contact geometry: tensions and CoP moments describe only "
                f"{len(spec)} of the {N - 6} internal forces (e.g. ≥ 3 coplanar contacts have "
                "out-of-plane internal pressure modes the virtual linkage does not model)")

    W_int = orthogonalize(W_com, linkage_rows(spec, positions, rotations, offsets, N), spec)
    return GraspModel(contacts, com, W_com, W_int, spec_labels(spec, names), model, offsets,
                      tuple(spec))


def tension(F_r: np.ndarray, p1: np.ndarray, p2: np.ndarray) -> float:
    """Measured tension between two contacts: (f_1 − f_2)·e_12 for F_r = [f_1; m_1; f_2; m_2]."""
    e = np.asarray(p2, float) - np.asarray(p1, float)
    e /= np.linalg.norm(e)
    return float((F_r[0:3] - F_r[6:9]) @ e)


def sole_wrench_at(wrench_sole: np.ndarray, oMs_rotation: np.ndarray,
                   oMs_translation: np.ndarray, point: np.ndarray) -> np.ndarray:
    """World wrench [f; m_P] about ``point`` from a sole-frame wrench about the sole origin.

    ``f = R f_s``, ``m_P = R τ_s − (P − o) × f`` (the measured ``contact_wrench/<foot>``).
    """
    f = oMs_rotation @ wrench_sole[:3]
    m = oMs_rotation @ wrench_sole[3:] - skew(point - oMs_translation) @ f
    return np.concatenate([f, m])


__all__ = [
    "BIPED_MODELS",
    "CONTACT_KINDS",
    "MOMENT",
    "NONCOPLANAR_MODELS",
    "TENSION",
    "ContactAnchor",
    "GraspModel",
    "eq82_spec",
    "grasp_model",
    "linkage_rows",
    "orthogonalize",
    "resultant_map",
    "skew",
    "sole_wrench_at",
    "spec_labels",
    "surface_resultant_map",
    "tension",
    "wrench_transfer",
]
