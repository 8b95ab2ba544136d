"""What the recorder reads of a run: the sample and run interfaces it is handed.

The session layer (for any front end) produces the run and calls the recorder; the recorder sits
below it and names only what it reads, as protocols: a sample is a step and its observables, a
run its robot, simulator, scenario, counters and summary. ``session.runner.Sample`` and
``RunResult`` are such objects; so is anything with these attributes (a test's stand-in).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from biped_contact_sim.robot import RobotModel
    from biped_contact_sim.sim.observables import Observation
    from biped_contact_sim.sim.scenarios import Scenario
    from biped_contact_sim.sim.simulator import Simulator, StepResult


class RecordedSample(Protocol):
    """A recorded step: the simulator's step result and the observer's observables of it."""

    step: StepResult
    obs: Observation


class RecordedRun(Protocol):
    """A run so far (or finished): what its outputs are made of.

    Attributes:
        samples: The samples kept in memory (the non-streaming way,
            :func:`.recorder.write_outputs`).
        step_time_s, control_time_s: Wall time spent in the simulator's steps and in the
            controller [s].
        error: Why the run stopped early (a divergence), or None.
    """

    scenario: Scenario
    contact_model: str
    controller: str
    robot: RobotModel
    sim: Simulator
    samples: Sequence[RecordedSample]
    steps: int
    step_time_s: float
    control_time_s: float
    max_penetration: float
    max_cone_violation: float
    fell: bool
    error: str | None

    @property
    def outcome(self) -> str:
        """How the run ended: ``completed``, ``diverged``, ``fell``, ``interrupted`` or
        ``terminated``."""

    def summary(self) -> dict[str, Any]:
        """The ``summary.json`` content."""
