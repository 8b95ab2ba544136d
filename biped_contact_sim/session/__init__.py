"""The session layer: a simulation from one ``SimConfig`` to its ``RunResult``, for every front
end (``biped-sim``, the study runner, the ROS nodes).

* ``config``: ``SimConfig`` and its parts, every default once, with units and meanings;
* ``builder``: ``build(config) -> Built`` (robot, contact model, simulator, control);
* ``runner``: ``run(config) -> RunResult``, ``Run`` (the chunked loop), ``Sample``;
* ``accounting``: the per-step accounting kernels (maxima, residuals, energy balance);
* ``metrics``: the whole-run figures of ``summary.json``'s ``metrics``;
* ``pool``: independent runs in a process pool (``biped-sim compare``).

(The modules are not named after ``build`` and ``run``: a submodule of that name would shadow
the function of the same name on this package once imported.) The names below are imported
when first used (PEP 562), so that importing
``biped_contact_sim.session.config`` (``biped-sim --help`` does) loads no numerical library.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from biped_contact_sim.session.builder import Built, build
    from biped_contact_sim.session.config import (
        DEFAULT_CONTACT_MODEL,
        ContactConfig,
        ControlConfig,
        RobotSource,
        SimConfig,
        WorldConfig,
        config_fields,
    )
    from biped_contact_sim.session.runner import Run, RunResult, Sample, run, run_scenario

_EXPORTS = {
    "DEFAULT_CONTACT_MODEL": "config", "SimConfig": "config", "RobotSource": "config",
    "WorldConfig": "config", "ContactConfig": "config", "ControlConfig": "config",
    "config_fields": "config", "Built": "builder", "build": "builder", "Run": "runner",
    "RunResult": "runner", "Sample": "runner", "run": "runner", "run_scenario": "runner",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = ["DEFAULT_CONTACT_MODEL", "Built", "ContactConfig", "ControlConfig", "RobotSource", "Run",
           "RunResult", "Sample", "SimConfig", "WorldConfig", "build", "config_fields", "run",
           "run_scenario"]
