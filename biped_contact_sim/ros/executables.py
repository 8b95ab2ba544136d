"""Where the node executables are: a venv's console scripts, PATH, or colcon's install."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

PACKAGE = "biped_contact_sim"


def node_executable(name: str) -> str:
    """Path of a node's executable (``simulator_node``, ``controller_node``,
    ``composed_node``): beside this Python (a venv's console scripts), on PATH, or in the ament
    install (``lib/biped_contact_sim``, where colcon puts them).

    Raises:
        FileNotFoundError: it is in none of these places (the message says how to install it).
    """
    here = Path(sys.executable).parent / name
    if here.is_file():
        return str(here)
    found = shutil.which(name)
    if found:
        return found
    try:
        from ament_index_python.packages import get_package_prefix

        path = Path(get_package_prefix(PACKAGE)) / "lib" / PACKAGE / name
        if path.is_file():
            return str(path)
    except (ImportError, LookupError, ValueError):
        pass
    raise FileNotFoundError(f"{name} is not installed: pip install -e . (console scripts), or "
                            "colcon build and source the install")
