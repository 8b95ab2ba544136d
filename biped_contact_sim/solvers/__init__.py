"""Solvers (DESIGN.md layer 2): robot-agnostic numerics on numpy/scipy."""

from biped_contact_sim.solvers.linalg import MinNormSolution, min_norm_solve

__all__ = ["MinNormSolution", "min_norm_solve"]
