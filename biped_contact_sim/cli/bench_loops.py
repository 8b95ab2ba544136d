"""``biped-sim bench``'s interleaved timing and its closed loops (``cli.bench``'s docstring).

Interleaving: in every round each timer takes ``block`` steps in turn, each block timed on its
own with the CPU time of the benchmarking thread (``CLOCK``); a figure is the median over the
rounds of the per-step time, and a ratio compares two medians of the same rounds (load from
other processes shifts both alike).

Closed loops: a whole ``biped-sim run`` loop (``session.runner.Run``: controller, step, the closed
loop's measured sole wrenches, the accumulators, observers at ``RUN_RECORD_RATE``) per
simulated millisecond, for the biped (``walk`` with ``ctc``; ``stand``, ``sway``, ``push``,
``walk`` with ``wbc``) and the humanoid (``multicontact``, ``lean_on_table`` with ``wbc``), on
each of ``LOOP_MODELS``. The real-time factor is simulated time over the loop's CPU time; the
ratio to the peer (MuJoCo's ``mj_step`` per simulated millisecond) is given for the loops of the
peer's robot only. ``time_shares``: where the loop's time goes, means over the timed run —
``step`` (``sim.step``), ``control`` (the controller), ``observers`` (the rest: the observers
and samples of the recorded steps, split apart in ``observer_shares`` as ``recording``, and
the closed loop's measured wrenches, the accumulators and the loop itself as ``loop``).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from biped_contact_sim.errors import ConfigError
from biped_contact_sim.session.config import RUN_RECORD_RATE, SimConfig
from biped_contact_sim.session.runner import Run

CLOCK = time.thread_time  # CPU time of this thread
BENCH_WARMUP_STEPS = 50
#: closed loops (scenario, controller) of the real-time targets, on each of LOOP_MODELS:
#: the biped's, then the humanoid's
CLOSED_LOOP_SCENARIOS = (("walk", "ctc"), ("stand", "wbc"), ("sway", "wbc"), ("push", "wbc"),
                         ("walk", "wbc"), ("multicontact", "wbc"), ("lean_on_table", "wbc"))
LOOP_MODELS = ("penalty_fl", "gauss_seidel")
CLOSED_LOOP = tuple((s, c, m) for m in LOOP_MODELS for s, c in CLOSED_LOOP_SCENARIOS)
SMOKE_LOOPS = (("stand", "wbc", "penalty_fl"), ("walk", "ctc", "penalty_fl"))

Timer = Callable[[int], "float | None"]


def interleave(timers: dict[str, Timer], steps: int, block: int) -> dict[str, list[float]]:
    """Time ``block`` steps of each timer in turn, until each has been asked ``steps`` steps
    (the last block takes the remainder).

    Returns:
        Per name, the per-step times [s] of its complete blocks (a run that ended early stops
        contributing).
    """
    per_step: dict[str, list[float]] = {name: [] for name in timers}
    sizes = [block] * (steps // block) + ([steps % block] if steps % block else [])
    for n in sizes:
        for name, timer in timers.items():
            elapsed = timer(n)
            if elapsed is not None:
                per_step[name].extend([elapsed / n] * n)  # weighted: one entry per step
    return per_step


def median_us(values: list[float]) -> float | None:
    return 1e6 * statistics.median(values) if values else None


def ratio(ours: float | None, peer: float | None) -> float | None:
    return ours / peer if ours is not None and peer else None


def _loop_timer(session: Run) -> Timer:
    """Advance a run by n steps; the whole loop's time (None if it ended early)."""
    def timer(n: int) -> float | None:
        before, k = session.wall_time_s, session.k
        session.advance(n)
        return session.wall_time_s - before if session.k - k == n else None
    return timer


def closed_loops(loops: tuple[tuple[str, str, str], ...], loop_steps: int, block: int,
                 sets: dict | None, peer: Timer | None, peer_robot: str | None, dt: float,
                 log: Callable[[str], None]) -> list[dict[str, Any]]:
    """The ``closed_loop`` rows of bench.json (module docstring): each loop of ``loops``
    (scenario, controller, contact model) for ``loop_steps`` steps, interleaved with the peer
    (``peer``: its step timer, ``peer_robot`` its robot's name, ``dt`` its time step)."""
    log(f"closed loops: whole run loop, {loop_steps} steps each, interleaved; observers at "
        f"{RUN_RECORD_RATE:g} Hz (biped-sim run's record rate)")
    sessions, rows = {}, []
    timers: dict[str, Timer] = {"peer": peer} if peer is not None else {}
    for scen, controller, model in loops:
        key = f"{scen}/{controller}/{model}"
        row = {"scenario": scen, "controller": controller, "contact_model": model,
               "us_per_sim_ms": None, "real_time_factor": None, "steps": 0, "error": None,
               "peer": "mujoco" if peer is not None else None, "peer_us_per_sim_ms": None,
               "ratio_to_peer": None}
        rows.append((key, row))
        try:
            # Observers at biped-sim run's default record rate (the files' writing is not
            # timed: it is disk and message encoding, not the loop a controller sees).
            config = SimConfig.from_sets(scen, model, controller, sets=sets)
            sessions[key] = session = Run(config, clock=CLOCK,
                                          default_record_rate=RUN_RECORD_RATE)
        except ConfigError as exc:
            row["error"] = f"refused: {exc}"
            continue
        # Warm-up on a twin run (compiled kernels, caches), so that the timed run's
        # time_shares, means over its whole loop, hold no compilation; the timed run itself
        # still starts at t = 0.
        Run(config, clock=CLOCK, default_record_rate=RUN_RECORD_RATE).advance(BENCH_WARMUP_STEPS)
        timers[key] = _loop_timer(session)
    times = interleave(timers, loop_steps, block)
    peer_ms = median_us(times.get("peer", []))
    peer_ms = peer_ms / (1e3 * dt) if peer_ms is not None else None
    out = []
    for key, row in rows:
        if key in sessions:
            session = sessions[key]
            per_step = median_us(times[key])
            us_ms = per_step / (1e3 * session.sim.dt) if per_step is not None else None
            res, wall = session.result, session.wall_time_s
            # Where the loop's time goes (means over the run): the profile of a missed target.
            shares = {"step": res.step_time_s / wall, "control": res.control_time_s / wall}
            shares["observers"] = 1.0 - shares["step"] - shares["control"]
            recording = res.record_time_s / wall
            same_robot = session.robot.name == peer_robot
            row.update(us_per_sim_ms=us_ms, steps=len(times[key]), error=res.error,
                       time_shares=shares, record_rate_hz=RUN_RECORD_RATE,
                       observer_shares={"recording": recording,
                                        "loop": shares["observers"] - recording},
                       real_time_factor=1e3 / us_ms if us_ms else None,
                       peer_us_per_sim_ms=peer_ms if same_robot else None,
                       ratio_to_peer=ratio(us_ms, peer_ms) if same_robot else None)
            if not same_robot:
                row["peer"] = None
        out.append(row)
        log(_loop_text(key, row))
    return out


def ratio_and_note(row: dict[str, Any], width: int) -> tuple[str, str]:
    """A bench row's ratio to MuJoCo (``width`` characters; empty without a peer) and its error
    note (empty without an error), as its text line shows them."""
    ratio_text = f"  {row['ratio_to_peer']:{width}.1f}× MuJoCo" if row["ratio_to_peer"] else ""
    note = f"  ({row['error']})" if row["error"] else ""
    return ratio_text, note


def _loop_text(key: str, row: dict[str, Any]) -> str:
    if row["us_per_sim_ms"] is None:
        return f"  {key:36s} -  ({row['error']})"
    ratio_text, note = ratio_and_note(row, 6)
    shares, split = row.get("time_shares") or {}, row.get("observer_shares") or {}
    text = ""
    if shares:
        text = (f" (step {100 * shares['step']:.0f} %, control {100 * shares['control']:.0f} %"
                f", observers {100 * shares['observers']:.0f} %: recording "
                f"{100 * split.get('recording', 0.0):.0f} %, loop "
                f"{100 * split.get('loop', 0.0):.0f} %)")
    return (f"  {key:36s} {row['us_per_sim_ms']:9.1f} µs per simulated ms{ratio_text}, "
            f"{row['real_time_factor']:.2f}× real time{text}{note}")
