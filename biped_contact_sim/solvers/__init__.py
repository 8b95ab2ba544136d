"""Solvers (docs/architecture.md layer 2): robot-agnostic numerics on numpy/scipy.

Lemke, Gauss–Seidel with exact Coulomb cones and Fischer–Burmeister Newton run as compiled
numba kernels (``*_kernel`` modules, ``@njit(cache=True)``: compiled once, then loaded from the
cache); each public function takes ``reference=True`` to run its numpy reference instead, the
same steps in numpy, which the tests compare the kernels with.
"""

from biped_contact_sim.solvers.fischer_burmeister import fb, fischer_burmeister_lcp
from biped_contact_sim.solvers.gauss_seidel import (
    coulomb_residual,
    gauss_seidel_coulomb,
    project_cone,
)
from biped_contact_sim.solvers.lemke import lemke
from biped_contact_sim.solvers.linalg import MinNormSolution, min_norm_solve
from biped_contact_sim.solvers.result import (
    STATUS_CONVERGED,
    STATUS_INACCURATE,
    STATUS_LINE_SEARCH,
    STATUS_MAX_ITER,
    STATUS_MAX_PIVOTS,
    STATUS_RAY,
    SolverResult,
)

__all__ = [
    "STATUS_CONVERGED",
    "STATUS_INACCURATE",
    "STATUS_LINE_SEARCH",
    "STATUS_MAX_ITER",
    "STATUS_MAX_PIVOTS",
    "STATUS_RAY",
    "MinNormSolution",
    "SolverResult",
    "coulomb_residual",
    "fb",
    "fischer_burmeister_lcp",
    "gauss_seidel_coulomb",
    "lemke",
    "min_norm_solve",
    "project_cone",
]
