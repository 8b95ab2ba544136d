"""Compiled loops of the warm starts (numba kernels with declared signatures,
``biped_contact_sim.jit``): matching stored rows to contact keys, the basic flags of a solution.
"""

from __future__ import annotations

from biped_contact_sim.jit import B1, F1, I1, f8, kernel


@kernel((I1, I1, I1))
def match_keys(stored, keys, pos):
    """``pos[i]`` ← index of ``keys[i]`` in ``stored``, or −1; returns the number found."""
    found = 0
    for i in range(keys.shape[0]):
        pos[i] = -1
        for j in range(stored.shape[0]):
            if stored[j] == keys[i]:
                pos[i] = j
                found += 1
                break
    return found


@kernel((F1, B1, f8))
def basic_flags(z, flags, tol):
    """``flags ← z > max(tol, 1e-9·max(z))``: the variables of an LCP solution taken as basic
    when the solution did not come from pivoting (its basis then guesses the next step's).

    ``tol`` is the tolerance the solution was found to: a variable within it of zero is
    indistinguishable from zero (e.g. the unused facets of a sticking friction pyramid, which
    an iterative solver leaves at ~tol); making it basic would make the basis needlessly large
    or singular.
    """
    zmax = 0.0
    for i in range(z.shape[0]):
        zmax = max(zmax, z[i])
    threshold = max(tol, 1e-9 * zmax)
    for i in range(z.shape[0]):
        flags[i] = z[i] > threshold
