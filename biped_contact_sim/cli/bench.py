"""``biped-sim bench``: the cost of a physics step and of a closed loop, as ratios to MuJoCo.

Absolute times on a shared machine say little; a ratio to a well-known simulator measured in
the same process, on the same robot and at the same moment does. The peer is MuJoCo
(``mujoco`` Python package, an optional extra: ``pip install .[peer]``) built from the same
URDF:

* a free joint at the root link, a ground plane, the same friction coefficient μ;
* only the bodies that carry our contact points collide (the URDF's foot boxes, whose bottom
  face is the sole of our contact points), with the floor only;
* the actuated joints are held by MuJoCo position actuators with the gains and the static
  gravity feed-forward of ``control.joint_pd.JointPD`` (``τ = τ_g + K_p(q_ref − q) − K_d q̇``
  as the affine bias of each actuator), so the whole hold runs inside ``mj_step``;
* MuJoCo's defaults otherwise (Newton solver, pyramidal cones, Euler integrator), with
  ``timestep`` = the scenario's dt.

Before timing, the peer must stand: ``Σ f_n / (m g) = 1`` (within ``STAND_TOLERANCE``) after
``PEER_SETTLE_S`` seconds.

Timing is **interleaved** and single-threaded: in every round the peer takes ``block`` steps,
then each of our simulators takes ``block`` steps, each block timed on its own; the figures
are medians over the rounds of the per-step time, and a ratio compares two medians of the
same rounds (load from other processes shifts both alike). The clock is the CPU time of the
benchmarking thread (``time.thread_time``): on a shared machine, wall time would also count
the moments the process waits for a core. Rows:

* ``results``: ``sim.step`` of each contact model on the scenario, the robot held like the
  peer (``joint_pd``: the same gains and feed-forward, computed between the timed steps),
  ``ratio_to_peer`` = our median µs per step / the peer's; with geometry contacts also
  ``detect_us`` (the contact detection's CPU time per step) and ``detect_share`` (of the mean
  step), timed over ``steps // DETECT_PASS_DIVISOR`` more steps after the timed ones, so that
  the detection's clock reads do not count in the ratio;
* ``closed_loop``: whole ``biped-sim run`` loops per simulated millisecond, biped and humanoid,
  with their real-time factors and where their time goes (``cli.bench_loops``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin

from biped_contact_sim.cli import plots
from biped_contact_sim.cli.bench_loops import (
    BENCH_WARMUP_STEPS,
    CLOCK,
    CLOSED_LOOP,
    SMOKE_LOOPS,
    Timer,
    closed_loops,
    interleave,
    median_us,
    ratio,
    ratio_and_note,
)
from biped_contact_sim.contact import CONTACT_MODELS
from biped_contact_sim.control.joint_pd import JointPD, JointPDSettings
from biped_contact_sim.errors import BipedSimError, ConfigError
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.session.builder import build
from biped_contact_sim.session.config import SimConfig
from biped_contact_sim.sim.scenarios import get_scenario

PEERS = ("mujoco", "none")
PEER_MISSING = ("the MuJoCo peer needs the 'mujoco' Python package, which is not installed. "
                "Install it with: pip install 'biped_contact_sim[peer]' (from the source tree: "
                "pip install '.[peer]' or pip install -r requirements-bench.txt), or run "
                "'biped-sim bench --peer none' for absolute times only")
PEER_SETTLE_S = 1.0  # [s] simulated before the stand check
STAND_TOLERANCE = 0.02  # |Σ f_n / (m g) − 1| allowed for the peer to count as standing
BLOCK = 20  # steps per timed block
SMOKE_STEPS = 10  # --smoke: a few blocks of this many steps, only to check the outputs
BENCH_SCENARIO = "stand"
BENCH_STEPS = 2000
#: geometry contacts: the detection is timed over steps // DETECT_PASS_DIVISOR more steps after
#: the timed ones (not during them: its clock reads would count in the step)
DETECT_PASS_DIVISOR = 4
SCALING_MODELS = ("gauss_seidel", "time_stepping")
SCALING_GRIDS = (2, 3, 4, 5, 6, 7, 8)  # m = 4 ... 64 contact points
SCALING_STEPS = 300
SCALING_CONTACTS = ("points", "geometry")  # the plate's grid as points, then as studs


def import_mujoco():
    """The ``mujoco`` module, or a ConfigError that says how to install it."""
    try:
        import mujoco
    except ImportError as exc:
        raise ConfigError(PEER_MISSING) from exc
    return mujoco


@dataclass
class PeerInfo:
    """What bench.json reports about the peer model."""

    name: str
    version: str
    solver: str
    cone: str
    integrator: str
    timestep: float
    contacts: int
    normal_force_ratio: float  # Σ f_n / (m g) after settling


class MujocoPeer:
    """The MuJoCo twin of a ``RobotModel`` standing under the ``JointPD`` hold (module doc).

    Args:
        robot: our robot (its URDF, root link, contact bodies, actuated joints).
        q0: initial configuration (pinocchio order; free-flyer quaternion x, y, z, w).
        q_ref: configuration the joints are held at.
        mu: friction coefficient of the feet and the floor.
        dt: time step [s].

    Raises:
        ConfigError: mujoco missing, or the robot is not a free-flyer biped on points.
    """

    def __init__(self, robot: RobotModel, q0: np.ndarray, q_ref: np.ndarray, mu: float,
                 dt: float):
        mj = import_mujoco()
        if robot.config.base != "free_flyer":
            raise ConfigError(f"the MuJoCo peer needs a free-flyer robot; {robot.name!r} has "
                              f"base {robot.config.base!r}")
        self.mj = mj
        hold = JointPD(robot, q_ref, JointPDSettings(), dt)
        spec = mj.MjSpec.from_file(str(robot.config.urdf_path))
        spec.option.timestep = dt
        spec.body(robot.base_link).add_freejoint()
        # Bodies rigidly attached to a contact body's joint: their collision boxes are the feet.
        joints = {robot.model.frames[b.frame_id].parentJoint for b in robot.contact_bodies}
        feet = {f.name for f in robot.model.frames
                if f.type == pin.FrameType.BODY and f.parentJoint in joints}
        for geom in spec.geoms:  # feet collide with the floor only, nothing else collides
            geom.contype = 1 if geom.parent.name in feet else 0
            geom.conaffinity = 0
            geom.friction = [mu, 0.0, 0.0]
        floor = spec.worldbody.add_geom(type=mj.mjtGeom.mjGEOM_PLANE, size=[0.0, 0.0, 1.0])
        floor.contype, floor.conaffinity, floor.friction = 0, 1, [mu, 0.0, 0.0]
        for j, name in enumerate(robot.actuated_joint_names):
            act = spec.add_actuator(target=name, trntype=mj.mjtTrn.mjTRN_JOINT)
            act.gaintype, act.biastype = mj.mjtGain.mjGAIN_FIXED, mj.mjtBias.mjBIAS_AFFINE
            act.gainprm[0] = hold.kp[j]  # τ = kp·ctrl + τ_g − kp·q − kd·q̇, ctrl = q_ref
            act.biasprm[0], act.biasprm[1], act.biasprm[2] = hold.tau_g[j], -hold.kp[j], \
                -hold.kd[j]
            act.forcelimited, act.forcerange = True, [-robot.effort_limit[j],
                                                      robot.effort_limit[j]]
        self.model = spec.compile()
        self.data = mj.MjData(self.model)
        adr = [self.model.jnt_qposadr[mj.mj_name2id(self.model, mj.mjtObj.mjOBJ_JOINT, n)]
               for n in robot.actuated_joint_names]
        self.data.qpos[:3] = q0[:3]
        self.data.qpos[3:7] = (q0[6], q0[3], q0[4], q0[5])  # MuJoCo stores w, x, y, z
        self.data.qpos[adr] = q0[robot.q_idx]
        self.data.ctrl[:] = q_ref[robot.q_idx]
        self.robot_name = robot.name
        self.weight = mj.mj_getTotalmass(self.model) * float(np.linalg.norm(self.model.opt.gravity))
        self._step = mj.mj_step

    def step(self, n: int) -> float:
        """n calls of ``mj_step``; returns their CPU time [s] (``CLOCK``)."""
        model, data, step = self.model, self.data, self._step
        start = CLOCK()
        for _ in range(n):
            step(model, data)
        return CLOCK() - start

    def normal_force_ratio(self) -> float:
        """Σ f_n over the active contacts divided by m g."""
        out = np.zeros(6)
        total = 0.0
        for i in range(self.data.ncon):
            self.mj.mj_contactForce(self.model, self.data, i, out)
            total += out[0]  # normal component first, in the contact frame
        return total / self.weight

    def settle(self, seconds: float) -> PeerInfo:
        """Simulate ``seconds`` and check the robot stands (``Σ f_n/(m g)`` averaged over the last
        0.1 s).

        Raises:
            BipedSimError: the peer does not stand (a misbuilt twin would time nonsense).
        """
        dt = self.model.opt.timestep
        n = max(1, round(seconds / dt))
        tail = max(1, min(n, round(0.1 / dt)))
        self.step(n - tail)
        ratios = []
        for _ in range(tail):
            self.step(1)
            ratios.append(self.normal_force_ratio())
        ratio = float(np.mean(ratios))
        if not abs(ratio - 1.0) <= STAND_TOLERANCE:
            raise BipedSimError(f"the MuJoCo peer does not stand: Σ f_n / (m g) = {ratio:.4f} "
                                f"after {seconds:g} s (expected 1 ± {STAND_TOLERANCE:g})")
        mj, opt = self.mj, self.model.opt
        return PeerInfo("mujoco", mj.__version__, mj.mjtSolver(opt.solver).name,
                        mj.mjtCone(opt.cone).name, mj.mjtIntegrator(opt.integrator).name,
                        float(opt.timestep), int(self.data.ncon), ratio)


def make_peer(scenario: str) -> MujocoPeer:
    """The MuJoCo twin of a scenario's robot in its initial state, held at its standing posture.

    Raises:
        ConfigError: the scenario's robot cannot have a peer, or mujoco is missing.
    """
    sc = get_scenario(scenario)
    params = sc.resolve({})
    robot = sc.make_robot(params)
    q0, _ = sc.initial_state(robot, params)
    q_ref = robot.standing_configuration() if robot.config.standing else q0
    return MujocoPeer(robot, q0, q_ref, params["mu"], sc.dt)


class StepBench:
    """n steps of a simulator under its hold, the ``sim.step`` calls timed (``CLOCK``), the
    hold computed between them untimed; the first error ends it."""

    def __init__(self, sim, control):
        self.sim, self.control = sim, control
        self.zero = np.zeros(sim.robot.n_joints)
        self.error: str | None = None

    def __call__(self, n: int) -> float | None:
        sim, control = self.sim, self.control
        if self.error is not None:
            return None
        elapsed = 0.0
        try:
            for _ in range(n):
                tau = control(sim.t, sim.q, sim.v) if control is not None else self.zero
                start = CLOCK()
                sim.step(tau)
                elapsed += CLOCK() - start
        except BipedSimError as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            return None
        return elapsed


def bench(scenario: str = BENCH_SCENARIO, steps: int = BENCH_STEPS, peer: str = "mujoco",
          loop_steps: int | None = None, block: int = BLOCK, models: tuple[str, ...] | None = None,
          closed_loop: tuple[tuple[str, str, str], ...] = CLOSED_LOOP,
          log: Callable[[str], None] = print, contacts: str | None = None) -> dict[str, Any]:
    """The bench.json content: per-model step cost and closed-loop cost, with peer ratios.

    ``contacts`` (``points`` or ``geometry``; None: each scenario's default) is the
    simulator's contact mode of every step and loop (``--set contacts=``).

    Raises:
        ConfigError: unknown scenario/peer, or mujoco missing for ``peer="mujoco"``.
    """
    if peer not in PEERS:
        raise ConfigError(f"--peer {peer!r}: expected one of {', '.join(PEERS)}")
    loop_steps = steps if loop_steps is None else loop_steps
    if steps < 1 or loop_steps < 0 or block < 1:
        raise ConfigError(f"--steps = {steps} must be >= 1 and --loop-steps = {loop_steps} "
                          ">= 0")
    sc = get_scenario(scenario)
    sets = {"contacts": contacts} if contacts else None
    models = models or tuple(CONTACT_MODELS)
    out: dict[str, Any] = {"scenario": scenario, "dt": sc.dt, "steps": steps, "block": block,
                           "peer": None if peer == "none" else peer, "peer_model": None,
                           "results": [], "closed_loop": [],
                           "contacts": contacts or "scenario default"}
    mj_peer = None
    if peer == "mujoco":
        mj_peer = make_peer(scenario)
        info = mj_peer.settle(PEER_SETTLE_S)
        out["peer_model"] = info.__dict__
        log(f"peer: MuJoCo {info.version} on the same URDF, {info.contacts} contacts, "
            f"{info.solver} solver, {info.cone} cones, {info.integrator}; stands with "
            f"Σf_n/mg = {info.normal_force_ratio:.4f}")

    # 1. sim.step per contact model, under the peer's hold (joint PD with gravity feed-forward,
    #    computed between the timed steps) when the robot has one.
    benches, rows = {}, {}
    hold = "joint_pd" if sc.biped else None
    for model in models:
        row: dict[str, Any] = {"contact_model": model, "scenario": scenario,
                               "controller": hold or sc.controller, "median_step_us": None,
                               "mean_step_us": None, "steps": 0, "error": None,
                               "peer": out["peer"], "peer_step_us": None, "ratio_to_peer": None}
        rows[model] = row
        try:
            built = build(SimConfig.from_sets(scenario, model, hold, sets=sets))
        except ConfigError as exc:
            row["error"] = f"refused: {exc}"
            continue
        benches[model] = StepBench(built.sim, built.control)
        benches[model](BENCH_WARMUP_STEPS)  # warm-up: imports, caches, compiled kernels
    timers: dict[str, Timer] = {"peer": mj_peer.step} if mj_peer is not None else {}
    timers.update(benches)
    log(f"{scenario}, dt = {sc.dt:g} s: sim.step under {hold or sc.controller}, {steps} steps "
        f"per model, interleaved in blocks of {block}")
    times = interleave(timers, steps, block)
    # Geometry contacts: the detection's share from a pass of its own after the timed steps
    # (its two CPU-clock reads per step, ~1.5 µs, stay out of the ratios).
    for step_bench in benches.values():
        geo = step_bench.sim.geometry
        if geo is not None:
            geo.timed = True
            step_bench(1)  # the timed path's own compiled calls loaded before they are timed
            geo.detect_time, geo.detect_calls = 0.0, 0
            step_bench(max(block, steps // DETECT_PASS_DIVISOR))
            geo.timed = False
    peer_us = median_us(times.get("peer", []))
    for model, row in rows.items():
        if model in benches:
            med = median_us(times[model])
            row.update(median_step_us=med, steps=len(times[model]), error=benches[model].error,
                       mean_step_us=1e6 * float(np.mean(times[model])) if times[model] else None,
                       peer_step_us=peer_us, ratio_to_peer=ratio(med, peer_us))
            geo = benches[model].sim.geometry  # geometry contacts: detection timed apart
            if geo is not None and geo.detect_calls and row["mean_step_us"]:  # share of a step
                row["detect_us"] = 1e6 * geo.detect_time / geo.detect_calls
                row["detect_share"] = row["detect_us"] / row["mean_step_us"]
        out["results"].append(row)
        log(_row_text(model, row))
    if peer_us is not None:
        log(f"  {'mujoco mj_step':20s} {peer_us:10.1f} µs/step  (peer)")

    # 2. Closed loops: the whole runner loop per simulated ms against the peer's.
    if loop_steps and closed_loop:
        peer_robot = mj_peer.robot_name if mj_peer is not None else None
        out["closed_loop"] = closed_loops(closed_loop, loop_steps, block, sets,
                                          mj_peer.step if mj_peer is not None else None,
                                          peer_robot, sc.dt, log)
    return out


def _row_text(model: str, row: dict[str, Any]) -> str:
    if row["median_step_us"] is None:
        return f"  {model:20s} {'-':>10s}           ({row['error']})"
    ratio, note = ratio_and_note(row, 5)
    if row.get("detect_us") is not None:
        note += f"  (detection {row['detect_us']:.1f} µs, {100 * row['detect_share']:.0f} %)"
    return f"  {model:20s} {row['median_step_us']:10.1f} µs/step{ratio}{note}"


def bench_command(args, write_summary: Callable[[dict, Path], None]) -> int:
    """``biped-sim bench`` without ``--scaling``: run ``bench`` and write bench.json."""
    smoke = getattr(args, "smoke", False)
    steps = SMOKE_STEPS * 2 if smoke else args.steps
    loop_steps = SMOKE_STEPS * 2 if smoke else args.loop_steps
    if loop_steps is not None and loop_steps < 0:
        raise ConfigError(f"--loop-steps = {loop_steps} must be >= 0")
    block = SMOKE_STEPS if smoke else BLOCK
    try:
        out = bench(args.scenario, steps, args.peer, loop_steps, block,
                    closed_loop=SMOKE_LOOPS if smoke else CLOSED_LOOP,
                    contacts=getattr(args, "contacts", None))
    except ConfigError:
        raise
    except BipedSimError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    out["smoke"] = smoke
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    write_summary(out, folder / "bench.json")
    print(f"results in {folder / 'bench.json'}")
    return 0


def scaling_command(args, write_summary: Callable[[dict, Path], None]) -> int:
    """``biped-sim bench --scaling``: µs per step against the number m of contacts.

    The 1 kg plate resting on grid × grid contacts (scenario ``plate``, m = 4 … 64), for the
    constraint models of SCALING_MODELS, in each contact mode of SCALING_CONTACTS (``--contacts``
    picks one): ``points``, the configured grid points against the plane, and ``geometry``,
    the same grid as studs found by the detector every step (its CPU time per step reported
    apart as ``detect_us``, within ``mean_step_us``). The system size is what the model
    reports (``system_size`` statistic: 3m for Gauss–Seidel's Delassus system, m(2+d) for the
    time-stepping LCP, Chardonnet's 57-versus-378 argument). Fits t ∝ m^k by least squares on
    log t = k log m + c, per model and mode. Times are CPU time of this thread (``CLOCK``).
    """
    steps = args.steps if args.steps != BENCH_STEPS else SCALING_STEPS
    models = [m for m in SCALING_MODELS if m in CONTACT_MODELS]
    if not models:
        raise ConfigError("bench --scaling needs the contact models "
                          + ", ".join(SCALING_MODELS)
                          + f"; registered: {', '.join(CONTACT_MODELS)}")
    modes = (args.contacts,) if getattr(args, "contacts", None) else SCALING_CONTACTS
    rows, fits = [], {}
    print(f"plate, {steps} steps per (model, contacts, m)")
    for contacts in modes:
        for model in models:
            # a pass not kept first: the first steps of a (model, mode) load its compiled
            # kernels (the first row measured 165 µs per step at m = 4 against 16 at m = 9)
            _scaling_row(model, contacts, SCALING_GRIDS[0], steps, show=False)
            mine = [_scaling_row(model, contacts, grid, steps) for grid in SCALING_GRIDS]
            rows.extend(mine)
            ms = np.array([r["m"] for r in mine], float)
            ts = np.array([r["mean_step_us"] for r in mine])
            key = f"{model}/{contacts}"
            fits[key] = float(np.polyfit(np.log(ms), np.log(ts), 1)[0])
            print(f"  {key}: time per step ∝ m^{fits[key]:.2f}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_summary({"results": rows, "exponents": fits, "steps": steps}, out / "scaling.json")
    # one curve per (model, contacts): the plot keys its curves by contact_model
    figure = plots.scaling_plot([{**r, "contact_model": f"{r['contact_model']}/{r['contacts']}"}
                                 for r in rows], fits, out)
    print(f"results in {out}/: scaling.json, {figure.name}")
    return 0


def _scaling_row(model: str, contacts: str, grid: int, steps: int,
                 show: bool = True) -> dict[str, Any]:
    """One point of the scaling study: the plate on grid² contacts settled for
    BENCH_WARMUP_STEPS, then ``steps`` steps timed one by one (``CLOCK``); geometry contacts
    time their detection apart over the same steps. ``show``: print the row."""
    built = build(SimConfig.from_sets("plate", model, sets={"grid": grid, "contacts": contacts}))
    robot, sim = built.robot, built.sim
    tau = np.zeros(robot.n_joints)
    for _ in range(BENCH_WARMUP_STEPS):  # settle: all contacts closed
        step = sim.step(tau)
    if sim.geometry is not None:
        sim.geometry.timed = True
    sizes, elapsed = [], 0.0
    for _ in range(steps):
        start = CLOCK()
        step = sim.step(tau)
        elapsed += CLOCK() - start
        sizes.append(step.stats.get("system_size", float("nan")))
    us = 1e6 * elapsed / steps
    geo = sim.geometry
    detect = 1e6 * geo.detect_time / geo.detect_calls if geo and geo.detect_calls else None
    row = {"contact_model": model, "contacts": contacts, "m": grid * grid,
           "contacts_found": len(step.phi), "mean_step_us": us, "detect_us": detect,
           "system_size": float(np.nanmax(sizes)) if np.isfinite(sizes).any() else None,
           "active_points": int(step.active.sum())}
    note = f"  detection {detect:6.1f} µs" if detect is not None else ""
    if show:
        print(f"  {model:16s} {contacts:8s} m = {row['m']:3d}  {us:9.1f} µs/step{note}  "
              f"system size {_fmt(row['system_size'])}  active {row['active_points']}")
    return row


def _fmt(value: Any) -> str:
    """A number for the terminal: 4 significant digits; anything else as it is."""
    return f"{value:.4g}" if isinstance(value, float) else str(value)
