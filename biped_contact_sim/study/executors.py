"""Where a study's runs execute: a local process pool (default) or a Ray cluster.

Both take a row function ``fn(config) -> row`` (a module-level function, so that it pickles by
reference: every worker imports it from the installed package) and yield
``(index, row | Lost)`` as runs finish, in completion order. The row function turns every
failure of a run into a row itself; ``Lost`` is what is left when the *process* running it
died (killed, out of memory, a crash in compiled code):

* local pool — a dead worker breaks the whole ``ProcessPoolExecutor``; the runs that had
  started and not finished are the suspects and are tried again in a new pool (the others
  are resubmitted without counting an attempt), at most ``MAX_ATTEMPTS`` times each;
* Ray — a task whose worker or node died is retried by Ray (``max_retries``).

Workers get one BLAS thread (``WORKER_ENV``): the per-step linear algebra is small, and one
thread keeps the floating-point reductions, so the results, identical in every process.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import socket
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from biped_contact_sim.errors import ConfigError

EXECUTORS = ("local", "ray")
MAX_ATTEMPTS = 3  # tries of a run whose worker process died (the first one included)
WORKER_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
RAY_IN_FLIGHT_PER_CPU = 2  # tasks queued per cluster CPU: busy workers, bounded driver memory
POLL_S = 0.2  # how often the driver looks for finished runs [s]


@dataclass(frozen=True)
class Lost:
    """A run whose worker process died on every attempt: ``error`` says how."""

    error: str
    attempts: int


RowFn = Callable[[dict[str, Any]], dict[str, Any]]

_started = None  # a local worker's queue of started run indices (set by _init_local)


def _init_local(started, initializer: Callable[[], None] | None) -> None:
    global _started
    _started = started
    os.environ.update(WORKER_ENV)
    if initializer is not None:
        initializer()


def _call_local(fn: RowFn, index: int, config: dict[str, Any]) -> dict[str, Any]:
    """Run ``fn`` in a pool worker, first saying which run this process starts (a
    ``SimpleQueue`` writes to its pipe before ``put`` returns: the word is out even if the
    process dies right after)."""
    if _started is not None:
        _started.put(index)
    return fn(config)


def run_local(fn: RowFn, configs: list[dict[str, Any]], jobs: int | None = None,
              initializer: Callable[[], None] | None = None,
              ) -> Iterator[tuple[int, dict[str, Any] | Lost]]:
    """Run ``fn`` over ``configs`` in ``jobs`` spawned processes (default: every core).

    Yields:
        (index into configs, row or Lost) as each run finishes.
    """
    jobs = jobs or os.cpu_count() or 1
    ctx = mp.get_context("spawn")  # no fork of a process that holds BLAS threads or a pool
    attempts = dict.fromkeys(range(len(configs)), 0)
    todo = list(range(len(configs)))
    for key, value in WORKER_ENV.items():  # spawned children inherit the environment
        os.environ.setdefault(key, value)
    while todo:
        started_q = ctx.SimpleQueue()
        started: set[int] = set()
        pool = ProcessPoolExecutor(max_workers=min(jobs, len(todo)), mp_context=ctx,
                                   initializer=_init_local, initargs=(started_q, initializer))
        futures = {pool.submit(_call_local, fn, i, configs[i]): i for i in todo}
        todo, broken = [], False
        try:
            pending = set(futures)
            while pending:
                done, pending = wait(pending, timeout=POLL_S, return_when=FIRST_COMPLETED)
                _drain(started_q, started)
                for future in done:
                    index = futures[future]
                    try:
                        yield index, future.result()
                    except BrokenProcessPool:
                        broken = True
                        todo.append(index)
                    except Exception as exc:  # fn raised after all, or a config did not pickle
                        yield index, Lost(f"{type(exc).__name__}: {exc}", attempts[index] + 1)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        if broken:
            _drain(started_q, started)
            # The runs that had started are the suspects; if none is known (the word lost),
            # all of them count an attempt, so that the loop ends whatever happened.
            suspects = started & set(todo) or set(todo)
            retry = []
            for index in todo:
                if index in suspects:  # it may have been running when a worker died
                    attempts[index] += 1
                    if attempts[index] >= MAX_ATTEMPTS:
                        yield index, Lost(f"the worker process died on each of "
                                          f"{attempts[index]} attempts", attempts[index])
                        continue
                retry.append(index)
            todo = retry


def _drain(q, into: set[int]) -> None:
    """Move the started run indices of a SimpleQueue into ``into``."""
    try:
        while not q.empty():
            into.add(q.get())
    except (OSError, EOFError):
        return


def _ray_call(fn: RowFn, config: dict[str, Any]) -> dict[str, Any]:
    """Run ``fn`` in a Ray worker; its row's ``worker`` names the Ray node as well."""
    import ray

    row = fn(config)
    node = ray.get_runtime_context().get_node_id()[:8]
    row["worker"] = f"{socket.gethostname()}/{node}:{os.getpid()}"
    return row


def run_ray(fn: RowFn, configs: list[dict[str, Any]], address: str | None = None,
            jobs: int | None = None, max_retries: int = MAX_ATTEMPTS - 1,
            ) -> Iterator[tuple[int, dict[str, Any] | Lost]]:
    """Run ``fn`` over ``configs`` as Ray tasks of one CPU each.

    Args:
        address: ``auto`` (the cluster this machine belongs to), ``HOST:PORT`` of a head
            node, ``ray://HOST:PORT`` (Ray Client), or None: a Ray instance started here
            for this study, with ``jobs`` CPUs (default every core).
        jobs: at most this many runs at once (default: every CPU of the cluster).
        max_retries: how often Ray re-runs a task whose worker died.

    Yields:
        (index into configs, row or Lost) as each run finishes.

    Raises:
        ConfigError: ray is not installed, or the cluster cannot be reached.
    """
    try:
        import ray
    except ImportError as exc:
        raise ConfigError("--executor ray needs Ray: pip install 'ray[client]' "
                          "(or pip install '.[cluster]')") from exc
    options: dict[str, Any] = {"runtime_env": {"env_vars": dict(WORKER_ENV)},
                               "logging_level": "WARNING", "log_to_driver": False}
    if address is None:
        options.update(num_cpus=jobs or os.cpu_count() or 1, include_dashboard=False)
    try:
        ray.init(address=address, **options)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ConfigError(f"cannot connect to the Ray cluster at --address {address}: "
                          f"{exc}") from exc
    try:
        cpus = int(ray.cluster_resources().get("CPU", 1))
        window = jobs or RAY_IN_FLIGHT_PER_CPU * max(1, cpus)
        remote = ray.remote(num_cpus=1, max_retries=max_retries,
                            retry_exceptions=False)(_ray_call)
        todo = list(range(len(configs)))
        refs: dict[Any, int] = {}
        while todo or refs:
            while todo and len(refs) < window:
                index = todo.pop(0)
                refs[remote.remote(fn, configs[index])] = index
            done, _ = ray.wait(list(refs), num_returns=1, timeout=POLL_S * 5)
            for ref in done:
                index = refs.pop(ref)
                try:
                    yield index, ray.get(ref)
                except ray.exceptions.RayError as exc:
                    yield index, Lost(f"{type(exc).__name__}: {str(exc).splitlines()[0]}",
                                      max_retries + 1)
    finally:
        ray.shutdown()


__all__ = ["EXECUTORS", "MAX_ATTEMPTS", "Lost", "run_local", "run_ray"]
