"""Semi-implicit Euler that carries a free rigid body's momentum through its rotation
(docs/methods.md §1.1).

Pinocchio's free-flyer velocity ``ν_k = (v, ω)`` is the body's twist in its own (moving) frame.
Advanced as ``ν⁺ = ν + dt ν̇`` it turns with the body by the explicit Coriolis term
``−ω × v`` (and the gyroscopic ``−I⁻¹ ω × Iω``), which lengthens it by ``dt²|ω|²`` per step:
a torque-free spinning box gains kinetic energy and a tumbling body's momentum drifts. For a
free-flyer joint that carries a single rigid body (a free object, the box or ball robot),
the step here keeps the body's momentum in the world, ``h_w = ᵒX_k* h_k`` with
``h_k = (M ν)_k = I_k ν_k`` its spatial momentum in its frame (``ḣ_w`` = the external wrench,
Newton–Euler), and moves the configuration with a step velocity ``ν_s``. With c the centre of
mass in the body frame, ``h_k = (h_l, h_a)``, ``h_c = h_a − c × h_l`` the angular momentum
about the centre:

1. ``ν_s = ν + dt M⁻¹(Sᵀτ − h + ĉ + J_cᵀ f)`` (``momentum_terms`` adds ĉ to τ_free), on the
   body's rows ``ĉ_k = ν_k ×* h_k − d_k``, ``d_k = (0, ½ ω × h_c)``. ``ν_k ×* h_k`` is the rate
   at which the momentum's components change only because the frame turns and moves; taken out
   of the step, the centre's velocity ``v_s + ω_s × c`` is its world velocity over the step
   (a straight line: exact linear momentum) and the angular velocity sees half the
   gyroscopic torque: the velocity at the middle of the step to second order (the implicit
   midpoint rule, ``I_c ω_s ≈ I_c ω − ½ dt ω × I_c ω``). ν_s is affine in the contact forces f
   with the Delassus operator ``J_c M⁻¹ J_cᵀ`` of the step's configuration, so every contact
   model solves for f as before. The drift γ_c becomes ``γ_c − J_c M⁻¹ĉ`` so that the free
   contact acceleration ``b = J_c a_free + γ_c`` of the force-based models is unchanged.
2. ``q⁺ = q ⊕ dt ν_s``, the body turning by ``ΔR = exp(dt ω_s)`` about its centre while the
   centre moves straight: the origin moves by ``Δp = dt(v_s + ω_s × c) + (I − ΔR) c`` (frame of
   q) instead of pinocchio's screw ``exp(dt ν_s)``.
3. ``transport``: the momentum at the end of the step, ``h_k' = I_k ν_s + dt d_k``
   (= ``h_k + dt`` × the external wrench, frame of q), is carried to the new frame,
   ``h_k⁺ = ΔX^{-*} h_k'`` (``ΔX = (ΔR, Δp)``, a force transform:
   ``(ΔRᵀ h_l, ΔRᵀ(h_a − Δp × h_l))``), and ``ν⁺ = ν_s + M⁻¹ E_k (h_k⁺ − I_k ν_s)``, so that
   ``I_k ν⁺ = h_k⁺``.

Without an external force the world linear and angular momenta are then conserved to
round-off, a spin about a principal axis keeps its energy exactly, and an asymmetric body
tumbles with an energy error of second order (bounded, no drift): the explicit Lie–Euler
method in momentum form with the midpoint step velocity (compare the variational integrator of
T. Lee, M. Leok, N. H. McClamroch, "Lie group variational integrators for the full body
problem", CMAME 196, 2007, doi:10.1016/j.cma.2007.01.017).

The floating base of an articulated robot keeps pinocchio's body-frame step: the same
correction, applied to the root of a tree through its M⁻¹, reaches the light limbs with second
order terms ten times the plain step's error on a floating biped (the root's momentum
changes as the joints move), while the tree's momentum stops being conserved anyway once a
foot touches the ground.
"""

from __future__ import annotations

import numpy as np


def free_bodies(model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The free-flyer joints of a pinocchio model that carry a single rigid body (no child
    joint: free objects, single-body robots): their velocity and configuration indices and
    their centres of mass in the joint frame (k, 3)."""
    parents = set(model.parents[1:])
    iv, iq, com = [], [], []
    for j in range(1, model.njoints):
        if model.joints[j].shortname() == "JointModelFreeFlyer" and j not in parents:
            iv.append(model.idx_vs[j])
            iq.append(model.idx_qs[j])
            com.append(np.array(model.inertias[j].lever))
    return (np.array(iv, dtype=np.int64), np.array(iq, dtype=np.int64),
            np.array(com, dtype=float).reshape(-1, 3))


def momentum_size(nv: int, n_free: int) -> int:
    """Length of the buffer ``momentum_terms`` writes and ``transport`` reads:
    ``M⁻¹ĉ`` (nv) then ``d_k`` (6 per free body)."""
    return nv + 6 * n_free


