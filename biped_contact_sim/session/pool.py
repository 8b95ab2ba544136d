"""Independent runs in a process pool (``biped-sim compare``), with one progress report over
all their steps; results come back without what holds pinocchio data (``SimInfo``,
``BehaviorInfo``), with a robot rebuilt in the parent.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from biped_contact_sim import control as control_layer
from biped_contact_sim.errors import BipedSimError, ConfigError
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.session.config import DEFAULT_DURATION, SimConfig
from biped_contact_sim.session.runner import PROGRESS_CHUNK, ProgressFactory, Run, RunResult, run
from biped_contact_sim.sim.scenarios import get_scenario
from biped_contact_sim.sim.simulator import SimSettings


@dataclass(frozen=True)
class SimInfo:
    """What a ``RunResult`` from another process keeps of its simulator (the readers of
    ``result.sim`` use dt, settings, terrain and the contact mode)."""

    dt: float
    settings: SimSettings
    terrain: Any
    contacts: str


@dataclass(frozen=True)
class BehaviorInfo:
    """What a ``RunResult`` from another process keeps of its behaviour: its name."""

    name: str


def _portable(result: RunResult) -> RunResult:
    """The result without the objects that hold pinocchio data (simulator, robot, behaviour),
    so that it pickles; ``run_parallel`` puts a robot back in the parent."""
    result.sim = SimInfo(result.sim.dt, result.sim.settings, result.sim.terrain,
                         result.sim.contacts)
    result.robot = None
    name = getattr(result.behavior, "name", None)
    result.behavior = None if name is None else BehaviorInfo(name)
    return result


_progress_queue = None  # set in each worker process by _init_worker


def _init_worker(queue, warm_up: bool = False) -> None:
    """A worker's start: its progress queue and, once, the compiled kernels loaded (a few
    steps of the ball under every model), so that runs do not time numba's cache loading."""
    global _progress_queue
    _progress_queue = queue
    if warm_up:
        from biped_contact_sim.contact import CONTACT_MODELS

        for model in CONTACT_MODELS:
            try:
                run(SimConfig.from_sets("ball", model, duration=0.002))
            except BipedSimError:
                pass


def _run_task(task: tuple[int, SimConfig]) -> tuple[int, Any]:
    """One run in a worker: (index, portable RunResult) or (index, the ConfigError text)."""
    index, config = task
    try:
        session = Run(config)
    except ConfigError as exc:
        return index, exc
    queue = _progress_queue
    if queue is not None:
        queue.put(("total", session.n_steps))
    chunk = 5 * PROGRESS_CHUNK
    while True:
        before = session.k
        running = session.advance(chunk)
        if queue is not None:
            queue.put(("done", session.k - before + (session.n_steps - session.k
                                                     if not running else 0)))
        if not running:
            break
    return index, _portable(session.finish())


def run_parallel(configs: list[SimConfig], jobs: int | None = None,
                 progress: ProgressFactory | None = None,
                 cost: Callable[[SimConfig], float] | None = None,
                 ) -> list[RunResult | ConfigError]:
    """Run independent configurations in ``jobs`` processes (default: every core).

    The runs are deterministic, so the results equal sequential ones; each result comes back
    without its simulator (``SimInfo`` instead) and with a robot rebuilt here. ``cost`` orders
    the runs, longest first, to balance the processes; ``progress(total, label)`` makes the
    progress report (tqdm's ``update``, ``close``, ``total``), whose total grows as the
    workers report their runs' lengths.

    Returns:
        Per configuration, in order, its ``RunResult`` or the ``ConfigError`` it raised.
    """
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    jobs = jobs or os.cpu_count() or 1
    if jobs < 1:
        raise ConfigError(f"--jobs = {jobs} must be >= 1")
    order = sorted(range(len(configs)), key=lambda i: -(cost(configs[i]) if cost else 0.0))
    out: list[Any] = [None] * len(configs)
    bar = progress(0, f"{len(configs)} runs, {jobs} processes") if progress else None
    if jobs == 1:
        for i in order:
            _init_worker(None)
            out[i] = _run_task((i, configs[i]))[1]
            if bar is not None and not isinstance(out[i], ConfigError):
                bar.total += out[i].steps
                bar.update(out[i].steps)
    else:
        ctx = mp.get_context("spawn")  # no fork of a process that holds BLAS threads
        queue = ctx.Queue()
        with ProcessPoolExecutor(max_workers=min(jobs, len(configs)), mp_context=ctx,
                                 initializer=_init_worker, initargs=(queue, True)) as pool:
            pending = {pool.submit(_run_task, (i, configs[i])) for i in order}
            while pending:
                done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                for future in done:
                    index, value = future.result()
                    out[index] = value
                _drain(queue, bar)
            _drain(queue, bar)
    if bar is not None:
        bar.close()
    robots: dict[tuple, RobotModel] = {}
    for value in out:
        if isinstance(value, RunResult):
            key = (value.scenario.name, tuple(sorted(value.params.items())))
            if key not in robots:
                robots[key] = value.scenario.make_robot(value.params)
            value.robot = robots[key]
    return out


def _drain(queue, bar) -> None:
    """Move the workers' progress messages to the bar."""
    import queue as queue_module
    while True:
        try:
            kind, n = queue.get_nowait()
        except queue_module.Empty:
            return
        if bar is not None:
            if kind == "total":
                bar.total += n
                getattr(bar, "refresh", lambda: None)()
            else:
                bar.update(n)


def compare_cost(config: SimConfig) -> float:
    """A rough relative cost of a run, to start the longest first (``run_parallel``): simulated
    steps, times ~10 for a whole-body or computed-torque controller and ~8 for a constraint
    model."""
    sc = get_scenario(config.world.scenario)
    steps = (sc.duration or DEFAULT_DURATION) / sc.dt
    controller = 10.0 if sc.controller in control_layer.CONTROLLERS else 1.0
    return steps * controller * (1.0 if config.contact.model in ("spring_damper", "penalty_fl")
                                 else 8.0)


__all__ = ["BehaviorInfo", "SimInfo", "compare_cost", "run_parallel"]
