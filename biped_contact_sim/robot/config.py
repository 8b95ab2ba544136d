"""Robot configuration: one YAML file per robot in ``config/``, also a valid ROS 2 params file.

The file layout is ``/**: ros__parameters: robot: {...}`` (ROS parameters cannot hold lists of
lists, so contact offsets are flat arrays, three numbers per point). The same file is read by
``biped-sim`` and, on ROS 2, by the nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


def read_yaml_file(path: Path) -> Any:
    """The content of a YAML file given by the user (a robot config, a world), ``{}`` if empty.

    The file must be UTF-8 text (YAML 1.2 says so; a file saved in Latin-1 or UTF-16 would
    otherwise be read as whatever the locale makes of it).

    Raises:
        ConfigError: naming the file: it cannot be opened, is not UTF-8 (with the offset of the
            first bad byte), or is not valid YAML.
    """
    try:
        with open(path, encoding="utf-8") as f:
            return yaml.safe_load(f) or {}
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at "
                          f"offset {exc.start}); save it as UTF-8") from None
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read it as YAML ({exc})") from exc


def _is_robot_file(path: Path) -> bool:
    """True if ``path`` is a robot config (a parameters file with a ``robot`` mapping)."""
    data = read_yaml_file(path)
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


def _numbers(path: Path, key: str, values, count: int | None = None) -> np.ndarray:
    """``values`` as a 1-D float array, or ConfigError naming the file and the key."""
    if not isinstance(values, (list, tuple)) or any(isinstance(v, (bool, str)) or v is None
                                                    for v in values):
        raise ConfigError(f"{path}: {key} = {values!r} must be a list of numbers")
    array = np.asarray(values, dtype=float)
    if not np.isfinite(array).all():
        raise ConfigError(f"{path}: {key} = {values!r} contains NaN or infinity")
    if count is not None and array.size != count:
        raise ConfigError(f"{path}: {key} has {array.size} numbers, expected {count}")
    return array


def urdf_joint_names(urdf_path: Path) -> list[str]:
    """Names of the movable (non-fixed) joints of a URDF file."""
    import xml.etree.ElementTree as ET

    try:
        root = ET.parse(urdf_path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise ConfigError(f"{urdf_path}: cannot read the URDF ({exc})") from exc
    return [j.get("name") for j in root.iter("joint") if j.get("type") != "fixed"]


def load_robot_config(name_or_path: str | Path) -> RobotConfig:
    """Load and validate a robot config by robot name (``config/<name>.yaml``) or by path.

    Every error names the file and the key (``robot.contacts.left_foot.offsets``, ...).

    Raises:
        ConfigError: unknown robot, missing file or key, bad base type, offsets that are not
            finite numbers (3 per point), standing joints the URDF does not have.
    """
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        path = package_share() / "config" / f"{name_or_path}.yaml"
        if not path.is_file():
            raise unknown_name("robot", str(name_or_path), available_robots())
    if not path.is_file():
        raise ConfigError(f"robot config file {path} does not exist")
    raw = read_yaml_file(path)
    try:
        robot = raw["/**"]["ros__parameters"]["robot"]
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"{path}: expected '/**: ros__parameters: robot:'") from exc

    def need(key, where=robot, ctx="robot"):
        if not isinstance(where, dict) or key not in where:
            raise ConfigError(f"{path}: missing '{ctx}.{key}'")
        return where[key]

    base = need("base")
    if base not in BASE_TYPES:
        raise ConfigError(f"{path}: robot.base = {base!r} must be one of {', '.join(BASE_TYPES)}")
    bodies = []
    for body in need("contact_bodies"):
        spec = need(body, need("contacts"), "robot.contacts")
        key = f"robot.contacts.{body}.offsets"
        offsets = _numbers(path, key, need("offsets", spec, f"robot.contacts.{body}"))
        if offsets.size == 0 or offsets.size % 3:
            raise ConfigError(
                f"{path}: {key} has {offsets.size} numbers; "
                "expected 3 per contact point (x, y, z in the frame)"
            )
        bodies.append(ContactBodyConfig(body, need("frame", spec, f"robot.contacts.{body}"),
                                        offsets.reshape(-1, 3)))
    # the URDF: beside the config file, else in the package's urdf/ (absolute paths as they are)
    urdf_path = path.parent / need("urdf")
    if not urdf_path.is_file():
        urdf_path = package_share() / "urdf" / need("urdf")
    if not urdf_path.is_file():
        raise ConfigError(f"{path}: robot.urdf = {need('urdf')!r}: no such file {urdf_path}")
    standing = {}
    if "standing" in robot:
        names = need("joint_names", robot["standing"], "robot.standing")
        values = _numbers(path, "robot.standing.positions",
                          need("positions", robot["standing"], "robot.standing"))
        if not isinstance(names, list) or len(names) != len(values):
            raise ConfigError(f"{path}: robot.standing has {len(names)} joint_names but "
                              f"{len(values)} positions")
        joints = urdf_joint_names(urdf_path)
        unknown = [n for n in names if n not in joints]
        if unknown:
            raise ConfigError(f"{path}: robot.standing.joint_names: {', '.join(map(str, unknown))}"
                              f" not in {urdf_path.name}; its joints: {', '.join(joints)}")
        standing = dict(zip(names, map(float, values), strict=True))
    return RobotConfig(need("name"), urdf_path, base, tuple(bodies), standing)
