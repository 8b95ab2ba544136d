"""Robot model layer (docs/architecture.md layer 1): URDF → pinocchio, actuation, contacts."""

from biped_contact_sim.robot.config import RobotConfig, load_robot_config, package_share
from biped_contact_sim.robot.model import ContactBody, RobotModel, RobotTerms, TermsWorkspace

__all__ = [
    "ContactBody",
    "RobotConfig",
    "RobotModel",
    "RobotTerms",
    "TermsWorkspace",
    "load_robot_config",
    "package_share",
]
