"""A robot from the parameters a node or a params file gives (the robot YAML files are ROS
params files): config name or path, ``urdf_path``, ``robot_description`` and ``robot.*``
overrides, validated exactly as ``biped-sim`` validates a robot file.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from biped_contact_sim.errors import ConfigError
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.robot.config import RobotConfig, load_robot_config


def robot_parameters(config: RobotConfig) -> dict[str, Any]:
    """The ``robot.*`` parameters of a robot config, flat, as in ``config/<robot>.yaml``.

    The nodes declare them read-only so that ``ros2 param get`` shows what was loaded.
    """
    params: dict[str, Any] = {
        "robot.name": config.name,
        "robot.urdf": Path(config.urdf_path).name,
        "robot.base": config.base,
        "robot.contact_bodies": [b.name for b in config.contact_bodies],
    }
    for body in config.contact_bodies:
        params[f"robot.contacts.{body.name}.frame"] = body.frame
        params[f"robot.contacts.{body.name}.offsets"] = [float(x) for x in
                                                         np.ravel(body.offsets)]
    if config.standing:
        params["robot.standing.joint_names"] = list(config.standing)
        params["robot.standing.positions"] = [float(x) for x in config.standing.values()]
    return params


def robot_config_from_parameters(params: Mapping[str, Any], urdf_dir: Path | None = None
                                 ) -> RobotConfig:
    """Rebuild a ``RobotConfig`` from ``robot.*`` parameter values (a params-file override).

    The values are written back as a robot YAML file and read by ``load_robot_config``, so the
    node validates them exactly as ``biped-sim`` does.

    Args:
        params: flat ``robot.*`` values (other names are ignored).
        urdf_dir: folder of the URDF named by ``robot.urdf`` (default: the package's urdf/).

    Raises:
        ConfigError: as ``load_robot_config``.
    """
    tree: dict[str, Any] = {}
    for name, value in params.items():
        if not name.startswith("robot."):
            continue
        node = tree
        *parents, leaf = name.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = list(value) if isinstance(value, (list, tuple)) else value
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump({"/**": {"ros__parameters": tree}}, f)
        path = Path(f.name)
    try:
        config = load_robot_config(path)
    finally:
        path.unlink(missing_ok=True)
    if urdf_dir is not None:
        config = dataclasses.replace(config, urdf_path=Path(urdf_dir) / Path(config.urdf_path).name)
    return config


def load_robot(robot_config: str, urdf_path: str = "", robot_description: str = "",
               overrides: Mapping[str, Any] | None = None) -> RobotModel:
    """Load the robot for a node: config by name or path, URDF from a path or an XML string.

    Args:
        robot_config: config name or YAML path (``load_robot_config``).
        urdf_path: URDF file replacing the config's (empty: keep).
        robot_description: URDF XML replacing the config's (used when ``urdf_path`` is empty;
            written to a temporary file for pinocchio).
        overrides: ``robot.*`` parameter values that differ from the file's (params files).

    Returns:
        The robot model.

    Raises:
        ConfigError: unknown robot, bad config, unreadable URDF, missing contact frames.
    """
    config = load_robot_config(robot_config)
    if overrides:
        merged = robot_parameters(config)
        if any(merged.get(k) != v for k, v in overrides.items()):
            merged.update(overrides)
            config = robot_config_from_parameters(merged, Path(config.urdf_path).parent)
    if urdf_path:
        if not Path(urdf_path).is_file():
            raise ConfigError(f"urdf_path = {urdf_path!r} is not a file")
        config = dataclasses.replace(config, urdf_path=Path(urdf_path))
    elif robot_description.strip():
        with tempfile.NamedTemporaryFile("w", suffix=".urdf", delete=False) as f:
            f.write(robot_description)
        config = dataclasses.replace(config, urdf_path=Path(f.name))
    return RobotModel(config)
