"""Robot configuration: one YAML file per robot in ``config/``, also a valid ROS 2 params file.

The file layout is ``/**: ros__parameters: robot: {...}`` (ROS parameters cannot hold lists of
lists, so contact offsets are flat arrays, three numbers per point). The same file is read by
``biped-sim`` and, on ROS 2, by the nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

from biped_contact_sim.errors import ConfigError, unknown_name

PACKAGE = "biped_contact_sim"
BASE_TYPES = ("free_flyer", "planar_xz", "translation")


def package_share() -> Path:
    """Folder holding ``urdf/`` and ``config/``: the source tree, else the ament share folder."""
    source_root = Path(__file__).resolve().parents[2]
    if (source_root / "urdf").is_dir() and (source_root / "config").is_dir():
        return source_root
    try:
        from ament_index_python.packages import get_package_share_directory
    except ImportError as exc:  # neither a source tree nor a ROS 2 install
        raise ConfigError(
            f"Cannot find the urdf/ and config/ folders: not beside {source_root} and "
            "ament_index_python is not installed"
        ) from exc
    return Path(get_package_share_directory(PACKAGE))


def available_robots() -> list[str]:
    """Names of the robots that have a ``config/<name>.yaml``."""
    return sorted(p.stem for p in (package_share() / "config").glob("*.yaml")
                  if _is_robot_file(p))


def _is_robot_file(path: Path) -> bool:
    with open(path) as f:
        data = yaml.safe_load(f) or {}
    return "robot" in data.get("/**", {}).get("ros__parameters", {})


@dataclass(frozen=True)
class ContactBodyConfig:
    """A contact body (e.g. a foot): the frame its points are attached to and their offsets."""

    name: str
    frame: str
    offsets: np.ndarray  # (k, 3) in ``frame``


@dataclass(frozen=True)
class RobotConfig:
    """What ``config/<robot>.yaml`` says about a robot."""

    name: str
    urdf_path: Path
    base: str
    contact_bodies: tuple[ContactBodyConfig, ...]
    standing: dict[str, float] = field(default_factory=dict)


def load_robot_config(name_or_path: str | Path) -> RobotConfig:
    """Load and validate a robot config by robot name (``config/<name>.yaml``) or by path.

    Raises:
        ConfigError: unknown robot, missing key, bad base type or malformed offsets.
    """
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        path = package_share() / "config" / f"{name_or_path}.yaml"
        if not path.is_file():
            raise unknown_name("robot", str(name_or_path), available_robots())
    with open(path) as f:
        raw = yaml.safe_load(f) or {}
    try:
        robot = raw["/**"]["ros__parameters"]["robot"]
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"{path}: expected '/**: ros__parameters: robot:'") from exc

    def need(key, where=robot, ctx="robot"):
        if key not in where:
            raise ConfigError(f"{path}: missing '{ctx}.{key}'")
        return where[key]

    base = need("base")
    if base not in BASE_TYPES:
        raise ConfigError(f"{path}: robot.base = {base!r} must be one of {', '.join(BASE_TYPES)}")
    bodies = []
    for body in need("contact_bodies"):
        spec = need(body, need("contacts"), "robot.contacts")
        offsets = np.asarray(need("offsets", spec, f"robot.contacts.{body}"), dtype=float)
        if offsets.size == 0 or offsets.size % 3:
            raise ConfigError(
                f"{path}: robot.contacts.{body}.offsets has {offsets.size} numbers; "
                "expected 3 per contact point (x, y, z in the frame)"
            )
        bodies.append(ContactBodyConfig(body, need("frame", spec, f"robot.contacts.{body}"),
                                        offsets.reshape(-1, 3)))
    standing = {}
    if "standing" in robot:
        names, values = robot["standing"]["joint_names"], robot["standing"]["positions"]
        if len(names) != len(values):
            raise ConfigError(f"{path}: robot.standing has {len(names)} joint_names but "
                              f"{len(values)} positions")
        standing = dict(zip(names, map(float, values), strict=True))
    urdf_path = package_share() / "urdf" / need("urdf")
    return RobotConfig(need("name"), urdf_path, base, tuple(bodies), standing)
