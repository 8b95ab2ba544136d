"""The TF of a robot: which frames ``/tf`` and ``/tf_static`` carry, and their transforms.

Every link (pinocchio ``BODY`` frame) and every operational frame (contact points) is a TF
frame, child of its nearest ancestor link; the world is ``WORLD_FRAME``. An edge separated by a
joint moves (``/tf`` every sample); one behind fixed joints only (soles, contact points) is
static (``/tf_static`` once, latched).
"""

from __future__ import annotations

from typing import Any

import pinocchio as pin

from biped_contact_sim.msgs.stamps import stamp
from biped_contact_sim.msgs.topics import WORLD_FRAME


def tf_tree(model: pin.Model) -> list[tuple[int, int, bool]]:
    """The TF tree of a pinocchio model: one edge per link (BODY frame) and per operational frame
    (contact points), from its nearest ancestor link.

    Returns:
        ``(parent frame id, child frame id, moving)`` per edge; parent 0 (``universe``) is the
        world frame. ``moving`` is False when only fixed joints separate the two frames (those
        go to ``/tf_static``).
    """
    edges = []
    for fid, frame in enumerate(model.frames):
        if fid == 0 or frame.type not in (pin.FrameType.BODY, pin.FrameType.OP_FRAME):
            continue
        parent, moving = frame.parentFrame, False
        while parent != 0 and model.frames[parent].type != pin.FrameType.BODY:
            moving = moving or model.frames[parent].type == pin.FrameType.JOINT
            parent = model.frames[parent].parentFrame
        if parent == 0 and frame.type == pin.FrameType.BODY:
            # the root link: moving if a root joint (free-flyer, planar, ...) carries it
            moving = moving or frame.parentJoint != 0
        edges.append((parent, fid, moving))
    return edges


def frame_transforms(model: pin.Model, data: pin.Data, edges: list[tuple[int, int, bool]],
                     t: float) -> list[dict[str, Any]]:
    """``geometry_msgs/TransformStamped`` fields of ``edges`` from the frame placements in
    ``data.oMf`` (run ``pin.framesForwardKinematics`` first): ``parentMchild = oMparent⁻¹ ·
    oMchild``, stamped ``t`` [s]."""
    # Built here rather than by messages.transform_stamped: the same fields without its
    # per-vector checks, which cost more than the kinematics for 15 links at 1 kHz.
    time = stamp(t)
    frames = model.frames
    out = []
    oMf = data.oMf
    for parent, child, _ in edges:
        oMc = oMf[child]
        # one pinocchio call for translation and quaternion (x, y, z, qx, qy, qz, qw)
        x = pin.SE3ToXYZQUAT(oMc if parent == 0 else oMf[parent].actInv(oMc)).tolist()
        out.append({
            "header": {"stamp": time,
                       "frame_id": WORLD_FRAME if parent == 0 else frames[parent].name},
            "child_frame_id": frames[child].name,
            "transform": {"translation": {"x": x[0], "y": x[1], "z": x[2]},
                          "rotation": {"x": x[3], "y": x[4], "z": x[5], "w": x[6]}},
        })
    return out
