#!/usr/bin/env python3
"""Generate the URDF robot descriptions of biped_contact_sim.

The robots (``biped3d``, ``humanoid``, ``planar_biped``, ``ball``, ``brick``, ``box``) are
described below as tables of links (primitive shape, size, centre, mass) and joints (origin,
axis, limits).
Conventions: x forward, y left, z up; cylinders lie along their link's z axis.

Every massive link gets a <visual> and a <collision> with the same geometry, and an <inertial>
placed at the geometry centre whose inertia is computed for a uniform solid:

* box (a, b, c):          Ixx = m (b² + c²) / 12, Iyy = m (a² + c²) / 12, Izz = m (a² + b²) / 12
* cylinder (r, L along z): Izz = m r² / 2,        Ixx = Iyy = m (3 r² + L²) / 12
* sphere (r):             Ixx = Iyy = Izz = 2 m r² / 5

Massless frame links (the soles, and the root link) have no geometry and no <inertial>.

Every robot's root link is the massless ``base_link``, fixed to the first massive link (the
pelvis, the torso, the ball, the brick) with an identity origin. KDL (robot_state_publisher)
does not accept a root link with an inertia; pinocchio attaches the root (base) joint to
``base_link`` and merges the fixed child's inertia into the same body, so the dynamics are
those of the robot without it (``test/test_urdf.py`` checks M, h and the contact frames).

Usage, from the repository root::

    python tools/generate_urdf.py            # rewrite urdf/*.urdf
    python tools/generate_urdf.py OUT_DIR    # write the files into OUT_DIR instead

From Python, ``write_all(out_dir)`` does the same.  The output is deterministic (numbers are
written with ``repr`` precision) and ``test/test_urdf.py`` checks that the committed files
match it, so edit the tables here and regenerate rather than editing the URDFs by hand.
"""

import argparse
import inspect
from dataclasses import dataclass
from pathlib import Path

URDF_DIR = Path(__file__).resolve().parent.parent / "urdf"
AXES = {"x": (1.0, 0.0, 0.0), "y": (0.0, 1.0, 0.0), "z": (0.0, 0.0, 1.0)}
VELOCITY_LIMIT = 10.0  # rad/s, every joint


@dataclass(frozen=True)
class Link:
    name: str
    shape: str = ""  # "box" | "cylinder" | "sphere"; "" for a massless frame link
    size: tuple[float, ...] = ()  # box (x, y, z); cylinder (radius, length); sphere (radius,)
    xyz: tuple[float, float, float] = (0.0, 0.0, 0.0)  # geometry centre = centre of mass
    mass: float = 0.0


@dataclass(frozen=True)
class Joint:
    name: str
    parent: str
    child: str
    xyz: tuple[float, float, float]
    axis: str = ""  # "x" | "y" | "z" for a revolute joint, "" for a fixed joint
    effort: float = 0.0
    lower: float = 0.0
    upper: float = 0.0


def inertia(shape: str, size: tuple[float, ...], mass: float) -> tuple[float, float, float]:
    """Principal moments (Ixx, Iyy, Izz) of a uniform solid about its centre."""
    if shape == "box":
        x, y, z = size
        return mass * (y * y + z * z) / 12, mass * (x * x + z * z) / 12, mass * (x * x + y * y) / 12
    if shape == "cylinder":
        r, length = size
        transverse = mass * (3 * r * r + length * length) / 12
        return transverse, transverse, mass * r * r / 2
    if shape == "sphere":
        (r,) = size
        return (2 * mass * r * r / 5,) * 3
    raise ValueError(f"unknown shape {shape!r}")


def _leg_joints(side: str, base: str, chain: list[tuple]) -> list[Joint]:
    """Joints of one leg from rows of Joint fields; names other than ``base`` get ``side_``."""
    joints = []
    for name, parent, child, *rest in chain:
        parent = parent if parent == base else f"{side}_{parent}"
        joints.append(Joint(f"{side}_{name}", parent, f"{side}_{child}", *rest))
    return joints


def biped3d() -> tuple[list[Link], list[Joint]]:
    """3-D biped, 40 kg, 14 revolute joints; the loader adds a free-flyer root joint at
    `base_link`, the massless root link fixed to `pelvis`.

    At the zero configuration the pelvis origin is 0.05 + 0.05 + 0.35 + 0.35 + 0.07 = 0.87 m
    above the soles.  The legs come before the waist so that the joint order in the file equals
    pinocchio's joint order.
    """
    links = [Link("pelvis", "box", (0.15, 0.25, 0.10), (0.0, 0.0, 0.0), 8.0)]
    joints = []
    for side, y in (("l", 0.10), ("r", -0.10)):
        links += [
            Link(f"{side}_hip_yaw_link", "box", (0.06, 0.06, 0.05), (0.0, 0.0, -0.025), 0.5),
            Link(f"{side}_hip_roll_link", "box", (0.06, 0.06, 0.06), (0.0, 0.0, 0.0), 0.5),
            Link(f"{side}_thigh", "cylinder", (0.05, 0.35), (0.0, 0.0, -0.175), 4.0),
            Link(f"{side}_shank", "cylinder", (0.04, 0.35), (0.0, 0.0, -0.175), 3.0),
            Link(f"{side}_ankle_link", "box", (0.05, 0.05, 0.05), (0.0, 0.0, 0.0), 0.3),
            Link(f"{side}_foot", "box", (0.22, 0.12, 0.04), (0.02, 0.0, -0.05), 1.2),
            Link(f"{side}_sole"),
        ]
        chain = [
            ("hip_yaw", "pelvis", "hip_yaw_link", (0.0, y, -0.05), "z", 150.0, -0.8, 0.8),
            ("hip_roll", "hip_yaw_link", "hip_roll_link", (0.0, 0.0, -0.05), "x", 150.0, -0.6, 0.6),
            ("hip_pitch", "hip_roll_link", "thigh", (0.0, 0.0, 0.0), "y", 150.0, -2.0, 1.0),
            ("knee", "thigh", "shank", (0.0, 0.0, -0.35), "y", 200.0, 0.0, 2.4),
            ("ankle_pitch", "shank", "ankle_link", (0.0, 0.0, -0.35), "y", 100.0, -1.0, 1.0),
            ("ankle_roll", "ankle_link", "foot", (0.0, 0.0, 0.0), "x", 100.0, -0.6, 0.6),
            ("sole_joint", "foot", "sole", (0.0, 0.0, -0.07), ""),
        ]
        joints += _leg_joints(side, "pelvis", chain)
    links += [
        Link("waist_link", "box", (0.08, 0.08, 0.05), (0.0, 0.0, 0.025), 1.0),
        Link("torso", "box", (0.18, 0.30, 0.35), (0.0, 0.0, 0.175), 12.0),
    ]
    joints += [
        Joint("waist_yaw", "pelvis", "waist_link", (0.0, 0.0, 0.05), "z", 100.0, -1.0, 1.0),
        Joint("waist_pitch", "waist_link", "torso", (0.0, 0.0, 0.05), "y", 100.0, -0.5, 1.0),
    ]
    return links, joints


def humanoid() -> tuple[list[Link], list[Joint]]:
    """Humanoid, 47.6 kg, 26 revolute joints: biped3d's legs, waist and torso plus two 6-DoF arms
    (shoulder pitch/roll/yaw, elbow, wrist pitch/roll) ending in flat hands; the loader adds a
    free-flyer root joint at `base_link`, the massless root link fixed to `pelvis`.

    The shoulders sit 0.30 m above the torso joint, 0.19 m to each side; at the zero
    configuration the arms hang down and each palm frame (`l_palm`, `r_palm`) lies on the bottom
    face of its 0.10 x 0.08 m hand, z axis along the arm (the palm faces away from the shoulder),
    0.25 + 0.22 + 0.065 = 0.535 m below the shoulder.  Pitch joints turn about y (negative:
    forward), so shoulder, elbow and wrist pitches summing to zero keep the palm level.
    """
    links, joints = biped3d()
    for side, y in (("l", 0.19), ("r", -0.19)):
        out = 1.0 if side == "l" else -1.0  # roll that moves the arm away from the body
        links += [
            Link(f"{side}_shoulder_pitch_link", "box", (0.06, 0.06, 0.06), (0.0, 0.0, 0.0), 0.4),
            Link(f"{side}_shoulder_roll_link", "box", (0.05, 0.05, 0.05), (0.0, 0.0, 0.0), 0.3),
            Link(f"{side}_upper_arm", "cylinder", (0.035, 0.25), (0.0, 0.0, -0.125), 1.5),
            Link(f"{side}_forearm", "cylinder", (0.03, 0.22), (0.0, 0.0, -0.11), 1.0),
            Link(f"{side}_wrist_link", "box", (0.04, 0.04, 0.04), (0.0, 0.0, 0.0), 0.2),
            Link(f"{side}_hand", "box", (0.10, 0.08, 0.03), (0.0, 0.0, -0.05), 0.4),
            Link(f"{side}_palm"),
        ]
        chain = [
            ("shoulder_pitch", "torso", "shoulder_pitch_link", (0.0, y, 0.30), "y", 80.0,
             -3.0, 1.0),
            ("shoulder_roll", "shoulder_pitch_link", "shoulder_roll_link", (0.0, 0.0, 0.0), "x",
             80.0, *sorted((-0.3 * out, 1.6 * out))),
            ("shoulder_yaw", "shoulder_roll_link", "upper_arm", (0.0, 0.0, 0.0), "z", 60.0,
             -1.6, 1.6),
            ("elbow", "upper_arm", "forearm", (0.0, 0.0, -0.25), "y", 60.0, -2.5, 0.0),
            ("wrist_pitch", "forearm", "wrist_link", (0.0, 0.0, -0.22), "y", 30.0, -1.6, 1.6),
            ("wrist_roll", "wrist_link", "hand", (0.0, 0.0, 0.0), "x", 30.0, -1.0, 1.0),
            ("palm_joint", "hand", "palm", (0.0, 0.0, -0.065), ""),
        ]
        joints += _leg_joints(side, "torso", chain)
    return links, joints


def planar_biped() -> tuple[list[Link], list[Joint]]:
    """Sagittal biped, 21.2 kg, 6 revolute joints; the loader adds an (x, z, pitch) root joint
    at `base_link`, the massless root link fixed to `torso`.

    At the zero configuration the torso origin (hip axis) is 0.30 + 0.30 + 0.05 = 0.65 m above
    the soles.
    """
    links = [Link("torso", "box", (0.12, 0.20, 0.40), (0.0, 0.0, 0.20), 10.0)]
    joints = []
    for side, y in (("l", 0.08), ("r", -0.08)):
        links += [
            Link(f"{side}_thigh", "cylinder", (0.04, 0.30), (0.0, 0.0, -0.15), 3.0),
            Link(f"{side}_shank", "cylinder", (0.035, 0.30), (0.0, 0.0, -0.15), 2.0),
            Link(f"{side}_foot", "box", (0.20, 0.08, 0.03), (0.03, 0.0, -0.035), 0.6),
            Link(f"{side}_sole"),
        ]
        chain = [
            ("hip", "torso", "thigh", (0.0, y, 0.0), "y", 100.0, -1.5, 1.5),
            ("knee", "thigh", "shank", (0.0, 0.0, -0.30), "y", 100.0, 0.0, 2.4),
            ("ankle", "shank", "foot", (0.0, 0.0, -0.30), "y", 60.0, -1.0, 1.0),
            ("sole_joint", "foot", "sole", (0.0, 0.0, -0.05), ""),
        ]
        joints += _leg_joints(side, "torso", chain)
    return links, joints


def ball() -> tuple[list[Link], list[Joint]]:
    """Ball of radius 0.1 m, 1 kg; the loader adds a 3-D translation root joint (no rotation)."""
    return [Link("ball", "sphere", (0.1,), (0.0, 0.0, 0.0), 1.0)], []


def brick() -> tuple[list[Link], list[Joint]]:
    """Brick 0.20 x 0.10 x 0.05 m, 1 kg; the loader adds a free-flyer root joint."""
    return [Link("brick", "box", (0.20, 0.10, 0.05), (0.0, 0.0, 0.0), 1.0)], []


def box() -> tuple[list[Link], list[Joint]]:
    """Rigid box 0.20 x 0.10 x 0.10 m, 2 kg, with a massless sole frame ``box_sole`` at the centre
    of its bottom face; the loader adds a free-flyer root joint (the stick/slip tests on a ramp
    put contact points at the four corners of the sole)."""
    return ([Link("box", "box", (0.20, 0.10, 0.10), (0.0, 0.0, 0.0), 2.0), Link("box_sole")],
            [Joint("box_sole_joint", "box", "box_sole", (0.0, 0.0, -0.05))])


ROOT_LINK = "base_link"


def with_root_link(links: list[Link], joints: list[Joint]) -> tuple[list[Link], list[Joint]]:
    """Prepend the massless root link ``base_link``, fixed to ``links[0]`` at its origin."""
    body = links[0].name
    return [Link(ROOT_LINK), *links], [Joint(f"{body}_joint", ROOT_LINK, body, (0.0, 0.0, 0.0)),
                                       *joints]


ROBOTS = {"biped3d": biped3d, "humanoid": humanoid, "planar_biped": planar_biped, "ball": ball,
          "brick": brick, "box": box}


def _num(*values: float) -> str:
    return " ".join(repr(float(v)) for v in values)


def _link_xml(link: Link) -> list[str]:
    if not link.shape:
        return [f'  <link name="{link.name}"/>']
    origin = f'<origin xyz="{_num(*link.xyz)}" rpy="{_num(0, 0, 0)}"/>'
    if link.shape == "box":
        geometry = f'<box size="{_num(*link.size)}"/>'
    elif link.shape == "cylinder":
        geometry = f'<cylinder radius="{_num(link.size[0])}" length="{_num(link.size[1])}"/>'
    else:
        geometry = f'<sphere radius="{_num(link.size[0])}"/>'
    ixx, iyy, izz = (_num(i) for i in inertia(link.shape, link.size, link.mass))
    lines = [
        f'  <link name="{link.name}">',
        "    <inertial>",
        f"      {origin}",
        f'      <mass value="{_num(link.mass)}"/>',
        f'      <inertia ixx="{ixx}" ixy="0.0" ixz="0.0" iyy="{iyy}" iyz="0.0" izz="{izz}"/>',
        "    </inertial>",
    ]
    for tag in ("visual", "collision"):
        lines += [
            f"    <{tag}>",
            f"      {origin}",
            f"      <geometry>{geometry}</geometry>",
            f"    </{tag}>",
        ]
    return [*lines, "  </link>"]


def _joint_xml(joint: Joint) -> list[str]:
    kind = "revolute" if joint.axis else "fixed"
    lines = [
        f'  <joint name="{joint.name}" type="{kind}">',
        f'    <parent link="{joint.parent}"/>',
        f'    <child link="{joint.child}"/>',
        f'    <origin xyz="{_num(*joint.xyz)}" rpy="{_num(0, 0, 0)}"/>',
    ]
    if joint.axis:
        lines += [
            f'    <axis xyz="{_num(*AXES[joint.axis])}"/>',
            (
                f'    <limit effort="{_num(joint.effort)}" velocity="{_num(VELOCITY_LIMIT)}"'
                f' lower="{_num(joint.lower)}" upper="{_num(joint.upper)}"/>'
            ),
        ]
    return [*lines, "  </joint>"]


def urdf(name: str) -> str:
    """The URDF text of robot ``name`` (a key of ROBOTS)."""
    links, joints = with_root_link(*ROBOTS[name]())
    lines = [
        '<?xml version="1.0"?>',
        "<!-- Generated by tools/generate_urdf.py: edit the generator, not this file.",
        "",
        f"{inspect.getdoc(ROBOTS[name])} -->",
        f'<robot name="{name}">',
    ]
    for link in links:
        lines += _link_xml(link)
    for joint in joints:
        lines += _joint_xml(joint)
    return "\n".join([*lines, "</robot>", ""])


def write_all(out_dir: str | Path = URDF_DIR) -> list[Path]:
    """Write ``<name>.urdf`` for every robot into ``out_dir``; return the written paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in ROBOTS:
        path = out / f"{name}.urdf"
        path.write_text(urdf(name))
        paths.append(path)
    return paths


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", nargs="?", default=URDF_DIR, help="default: urdf/")
    for written in write_all(parser.parse_args().out_dir):
        print(f"wrote {written}")
