"""The ROS 2 nodes' logic without ROS (biped_contact_sim/ros/node_core.py).

Stated behaviour checked here: parameter schema and validation messages, torque-command
validation, watchdog timing, the lockstep gating sequence and its determinism, real-time pacing,
contact-model switch keeping the state, reset/pause/divergence, odometry ↔ pinocchio base state
for every base type, measurement assembly, the controller session and the diagnostics layout,
and that the nodes' YAML files, launch files and RViz config agree with the schema.
"""

import dataclasses
import py_compile
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import yaml

from biped_contact_sim.control.base import Behavior, Controller, ControlOutput, Reference
from biped_contact_sim.errors import ConfigError, DivergenceError
from biped_contact_sim.record import messages
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.robot.config import load_robot_config
from biped_contact_sim.ros import node_core as nc

ROOT = Path(__file__).resolve().parents[1]
MS = 1_000_000  # ns


class FakeClock:
    """A wall clock the test advances by hand."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


@pytest.fixture(scope="module")
def biped():
    return RobotModel.load("biped3d")


@pytest.fixture(scope="module")
def planar():
    return RobotModel.load("planar_biped")


def make_session(config=None, clock=None, **changes):
    config = dataclasses.replace(config or nc.sim_config({}), **changes)
    return nc.SimSession(nc.build_world(config), config, clock or FakeClock())


# ------------------------------------------------------------------------------ schema


def test_range_and_choice_messages_name_parameter_value_and_bound():
    specs = {s.name: s for s in nc.sim_parameter_specs()}
    assert specs["dt"].check(-1.0) == "dt = -1.0 must be in [1e-05, 0.1] s"
    assert specs["real_time_factor"].check(250.0) == "real_time_factor = 250.0 must be in [0, 100]"
    assert specs["contact_model"].check("bogus").startswith(
        "contact_model = 'bogus' is not one of: ")
    assert "penalty_fl" in specs["contact_model"].check("bogus")
    assert specs["lockstep"].check("yes") == "lockstep = 'yes' must be a bool"
    assert specs["dt"].check(float("nan")) == "dt = nan must be finite"
    assert specs["dt"].check(0.002) is None
    assert specs["max_speed"].check(10) is None  # an int for a float parameter is fine here


def test_descriptor_fields_carry_description_units_and_ranges():
    specs = {s.name: s for s in nc.sim_parameter_specs()}
    dt = specs["dt"].descriptor_fields()
    assert dt["description"] == "physics step [s]"
    assert dt["read_only"] is True
    assert dt["floating_point_range"] == [{"from_value": 1e-5, "to_value": 0.1, "step": 0.0}]
    assert "integer_range" not in dt
    rtf = specs["real_time_factor"].descriptor_fields()
    assert rtf["read_only"] is False
    model = specs["contact_model"].descriptor_fields()
    assert model["additional_constraints"].startswith("one of: ")
    assert "floating_point_range" not in model
    deci = {s.name: s for s in nc.controller_parameter_specs()}["diagnostics_decimation"]
    assert deci.descriptor_fields()["integer_range"] == [
        {"from_value": 1, "to_value": 100000, "step": 0}]


def test_descriptions_and_units_come_from_the_dataclass_docstrings():
    from biped_contact_sim.contact.penalty_fl import PenaltyFLSettings
    from biped_contact_sim.sim.simulator import SimSettings

    docs = nc.attribute_docs(SimSettings)
    assert docs["dt"] == ("physics step", "s")
    assert docs["max_speed"][1] == "m/s or rad/s"
    pfl = nc.attribute_docs(PenaltyFLSettings)
    assert pfl["kp"][1] == "1/s²"
    assert pfl["kv"][0].startswith("k_v, damping of the designed contact dynamics")
    specs = {s.name: s for s in nc.sim_parameter_specs("stand")}
    # The scenario's contact defaults replace the dataclass defaults.
    assert specs["contact.penalty_fl.epsilon"].default == pytest.approx(1e-6)
    assert specs["contact.penalty_fl.kp"].unit == "1/s²"
    assert specs["contact.penalty_fl.kp"].read_only is False


def test_every_contact_model_has_parameters_with_its_settings():
    from biped_contact_sim.contact import CONTACT_MODELS

    names = {s.name for s in nc.sim_parameter_specs()}
    for model, cls in CONTACT_MODELS.items():
        for f in dataclasses.fields(cls.Settings):
            if nc._ros_value(f.default) is not None:
                assert f"contact.{model}.{f.name}" in names


def test_sim_config_reports_every_bad_value_at_once():
    with pytest.raises(ConfigError) as info:
        nc.sim_config({"dt": -1.0, "contact_model": "foo", "stale_command_action": "brake"})
    text = str(info.value)
    assert "dt = -1.0 must be in [1e-05, 0.1] s" in text
    assert "contact_model = 'foo' is not one of:" in text
    assert "stale_command_action = 'brake' is not one of: zero, damping" in text


def test_control_period_must_be_a_multiple_of_dt():
    with pytest.raises(ConfigError, match=r"control_period = 0.0015 s must be an integer "
                                          r"multiple of dt = 0.001 s"):
        nc.sim_config({"control_period": 0.0015})
    assert nc.sim_config({"control_period": 0.002}).substeps == 2


def test_bad_contact_setting_is_named():
    with pytest.raises(ConfigError, match=r"contact.penalty_fl: .*kv"):
        nc.sim_config({"contact.penalty_fl.kv": -1.0})


def test_unknown_scenario_lists_the_valid_ones():
    with pytest.raises(ConfigError, match=r"scenario = 'moon' is not one of: .*stand"):
        nc.sim_config({"scenario": "moon"})


def test_run_time_updates_are_checked_and_applied():
    config = nc.sim_config({})
    assert "is not one of" in nc.check_sim_update(config, {"contact_model": "nope"})
    assert nc.check_sim_update(config, {"real_time_factor": -1.0}).startswith(
        "real_time_factor = -1.0 must be in [0, 100]")
    # penalty_fl refuses dt·kv ≥ 2: the reason comes from the model.
    reason = nc.check_sim_update(config, {"contact.penalty_fl.kv": 5000.0})
    assert reason.startswith("contact_model = 'penalty_fl': penalty_fl unstable")
    assert nc.check_sim_update(config, {"contact_model": "spring_damper"}) is None
    new = nc.apply_sim_update(config, {"contact_model": "spring_damper",
                                       "real_time_factor": 0, "contact.spring_damper.damping": 50})
    assert new.contact_model == "spring_damper"
    assert new.real_time_factor == 0.0 and isinstance(new.real_time_factor, float)
    assert new.contact["spring_damper"]["damping"] == 50
    assert config.contact_model == "penalty_fl"  # the old config is unchanged


def test_parse_key_values_reads_yaml_like_biped_sim_set():
    assert nc.parse_key_values("mu=0.6 height=1e-2 flag=true name=x", "s") == {
        "mu": 0.6, "height": 0.01, "flag": True, "name": "x"}
    assert nc.parse_key_values("", "s") == {}
    with pytest.raises(ConfigError, match="scenario_sets = 'mu': 'mu' is not key=value"):
        nc.parse_key_values("mu", "scenario_sets")


def test_node_yaml_files_match_the_schema():
    sim = yaml.safe_load((ROOT / "config/sim_node.yaml").read_text())
    values = sim["/**/simulator"]["ros__parameters"]
    names = {s.name for s in nc.sim_parameter_specs(values["scenario"])}
    assert set(values) <= names, set(values) - names
    config = nc.sim_config(values)
    assert config == nc.sim_config({})  # the file states the defaults
    ctrl = yaml.safe_load((ROOT / "config/controller_node.yaml").read_text())
    values = ctrl["/**/controller"]["ros__parameters"]
    assert set(values) <= {s.name for s in nc.controller_parameter_specs()}
    assert nc.controller_config(values) == nc.controller_config({})
    for file in ("sim_node.yaml", "controller_node.yaml"):  # doubles keep their decimal point
        spec_types = {s.name: s.kind for s in nc.sim_parameter_specs()
                      + nc.controller_parameter_specs()}
        raw = yaml.safe_load((ROOT / "config" / file).read_text())
        for name, value in next(iter(raw.values()))["ros__parameters"].items():
            assert type(value) is spec_types[name] or value == "", (file, name, value)


def test_controller_config_validation():
    with pytest.raises(ConfigError) as info:
        nc.controller_config({"controller": "pid", "sync": "sometimes",
                              "controller_settings": "kp"})
    text = str(info.value)
    assert "controller = 'pid' is not one of:" in text
    assert "sync = 'sometimes' is not one of: exact, latest" in text
    assert "controller_settings = 'kp': 'kp' is not key=value" in text
    cfg = nc.controller_config({"controller_settings": "kp_com=40 kd_com=12"})
    assert cfg.controller_settings == {"kp_com": 40, "kd_com": 12}


# ------------------------------------------------------------------------------ robot loading


@pytest.mark.parametrize("name", ["biped3d", "planar_biped"])
def test_robot_parameters_round_trip(name):
    config = load_robot_config(name)
    params = nc.robot_parameters(config)
    assert params["robot.base"] == config.base
    assert len(params["robot.contacts.left_foot.offsets"]) % 3 == 0
    again = nc.robot_config_from_parameters(params, Path(config.urdf_path).parent)
    assert again.urdf_path == config.urdf_path
    assert again.standing == config.standing
    for a, b in zip(again.contact_bodies, config.contact_bodies, strict=True):
        assert a.name == b.name and a.frame == b.frame
        np.testing.assert_array_equal(a.offsets, b.offsets)


def test_robot_file_values_are_the_parameters_a_params_file_gives():
    raw = yaml.safe_load((ROOT / "config/biped3d.yaml").read_text())["/**"]["ros__parameters"]
    params = nc.robot_parameters(load_robot_config("biped3d"))
    assert params["robot.contacts.left_foot.offsets"] == raw["robot"]["contacts"]["left_foot"][
        "offsets"]
    assert params["robot.standing.joint_names"] == raw["robot"]["standing"]["joint_names"]


def test_load_robot_from_description_string_and_overrides(biped):
    urdf = Path(biped.config.urdf_path).read_text()
    robot = nc.load_robot("biped3d", robot_description=urdf)
    assert robot.actuated_joint_names == biped.actuated_joint_names
    moved = nc.load_robot("biped3d", overrides={
        "robot.contacts.left_foot.offsets": [0.1, 0.05, 0.0, 0.1, -0.05, 0.0,
                                             -0.05, -0.05, 0.0, -0.05, 0.05, 0.0]})
    np.testing.assert_allclose(moved.contact_bodies[0].offsets[0], [0.1, 0.05, 0.0])
    with pytest.raises(ConfigError, match=r"urdf_path = '/nonexistent\.urdf' is not a file"):
        nc.load_robot("biped3d", urdf_path="/nonexistent.urdf")
    with pytest.raises(ConfigError, match="Unknown robot"):
        nc.load_robot("tripod")


def test_build_world_matches_the_cli_factory():
    from biped_contact_sim.cli.runner import build

    config = nc.sim_config({"scenario_sets": "mu=0.6"})
    world = nc.build_world(config)
    scenario, params, robot, sim, *_rest, q0, v0 = build("stand", "penalty_fl", "none",
                                                          sets={"mu": 0.6})
    assert world.robot.actuated_joint_names == robot.actuated_joint_names
    assert world.robot.mass == robot.mass
    np.testing.assert_array_equal(world.q0, q0)
    np.testing.assert_array_equal(world.v0, v0)
    assert world.sim.dt == sim.dt
    assert world.sim.terrain == sim.terrain
    assert world.sim.contact.settings == sim.contact.settings


def test_build_world_loads_an_overridden_robot():
    config = nc.sim_config({"robot_config": "planar_biped"})  # not the stand scenario's robot
    world = nc.build_world(config)
    assert world.robot.name == "planar_biped"
    assert world.q0.shape == (world.robot.nq,)
    moved = nc.build_world(nc.sim_config({}), {"robot.contacts.left_foot.offsets": [
        0.1, 0.05, 0.0, 0.1, -0.05, 0.0, -0.05, -0.05, 0.0, -0.05, 0.05, 0.0]})
    np.testing.assert_allclose(moved.robot.contact_bodies[0].offsets[-1], [-0.05, 0.05, 0.0])


# ------------------------------------------------------------------------------ commands


def test_command_validator(biped):
    v = nc.CommandValidator(biped.actuated_joint_names)
    names = list(biped.actuated_joint_names)
    tau = np.arange(len(names), dtype=float)
    ok, reason = v.check(names[::-1], tau[::-1])
    assert reason is None
    np.testing.assert_array_equal(ok, tau)  # reordered to the robot's joint order
    assert v.check(names, tau[:-1])[1] == (f"joint_torque_cmd has {len(names)} names but "
                                          f"{len(names) - 1} efforts")
    assert v.check(["elbow", *names[1:]], tau)[1].startswith(
        "joint_torque_cmd names unknown joint(s) 'elbow'; actuated joints: ")
    assert v.check([names[0], *names[:-1]], tau)[1] == (
        f"joint_torque_cmd names joint(s) twice: {names[0]}")
    assert v.check(names[:-1], tau[:-1])[1].endswith(f"missing: {names[-1]}")
    bad = tau.copy()
    bad[2] = np.nan
    bad[3] = np.inf
    assert v.check(names, bad)[1] == (f"joint_torque_cmd effort is NaN or Inf for {names[2]}, "
                                      f"{names[3]}")
    assert v.check([], [])[1].startswith("joint_torque_cmd has 0 joints")


def test_watchdog_timing_and_transitions_reported_once():
    w = nc.CommandWatchdog(0.05)
    assert w.update(0.0) == "none" and w.update(0.01) is None
    w.feed(0.1)
    assert w.update(0.1) == "fresh"
    assert w.update(0.15) is None and w.state == "fresh"  # exactly the timeout: still fresh
    assert w.update(0.1501) == "stale"
    assert w.update(0.3) is None and w.state == "stale"
    w.feed(0.3)
    assert w.update(0.3) == "fresh"
    off = nc.CommandWatchdog(0.0)
    off.feed(0.0)
    off.update(0.0)
    assert off.update(1e6) is None and off.state == "fresh"


def test_fallback_torque():
    v = np.array([1.0, -2.0])
    np.testing.assert_array_equal(nc.fallback_torque("zero", v, 5.0), [0.0, 0.0])
    np.testing.assert_array_equal(nc.fallback_torque("damping", v, 5.0), [-5.0, 10.0])
    with pytest.raises(ConfigError):
        nc.fallback_torque("brake", v, 1.0)


def test_lockstep_gate_sequence():
    g = nc.LockstepGate()
    assert g.offer(0, [1.0]) == "lockstep: no state awaits a command"
    g.expect(1 * MS)
    assert not g.ready
    assert g.offer(0, [1.0]).startswith("lockstep: command stamped 0 ns ignored, waiting for "
                                        "the state stamped 1000000 ns")
    assert g.offer(1 * MS, [2.0]) is None and g.ready
    assert g.offer(1 * MS, [3.0]) == "lockstep: second command for stamp 1000000 ns ignored"
    np.testing.assert_array_equal(g.take(), [2.0])
    assert not g.ready and g.expected is None
    with pytest.raises(RuntimeError):
        g.take()


def test_stamps_are_exact_nanoseconds():
    assert nc.stamp_ns(0.001) == 1 * MS
    assert nc.stamp_ns(sum([0.001] * 1000)) == 1_000_000_000
    assert nc.stamp_fields(1_700_000_000_123_456_789) == {"sec": 1_700_000_000,
                                                          "nanosec": 123_456_789}
    assert nc.ns_from_stamp(3, 5) == 3_000_000_005


# ------------------------------------------------------------------------------ pacing


def test_pacer_real_time_and_slower_factors():
    p = nc.Pacer(0.001, 1.0)
    p.hold(10.0, 0.0)
    assert p.due(10.0, 0.0) == 0
    assert p.due(10.0035, 0.0) == 3
    assert p.due(10.0035, 0.003) == 0
    half = nc.Pacer(0.001, 0.5)
    half.hold(0.0, 0.0)
    assert half.due(0.004, 0.0) == 2  # 4 ms of wall time = 2 ms of simulated time
    fast = nc.Pacer(0.001, 0.0, max_batch=7)
    assert fast.due(0.0, 0.0) == 7


def test_pacer_resyncs_instead_of_bursting_and_counts_overruns():
    p = nc.Pacer(0.001, 1.0, max_lag=0.1)
    p.hold(0.0, 0.0)
    assert p.due(0.5, 0.0) == 1 and p.resyncs == 1  # 0.5 s behind: drop the schedule
    assert p.due(0.5, 0.001) == 0
    assert p.due(0.501, 0.001) == 1
    assert not p.record(0.0009)
    assert p.record(0.0011) and p.overruns == 1
    assert not nc.Pacer(0.001, 0.0).record(10.0)  # no budget when running as fast as possible


def test_real_time_meter():
    m = nc.RealTimeMeter(window=1.0)
    assert m.value is None
    for k in range(50):
        m.add(0.1 * k, 0.05 * k)
    assert m.value == pytest.approx(0.5)


# ------------------------------------------------------------------------------ sim session


def test_free_running_session_follows_the_wall_clock_and_publishes():
    clock = FakeClock()
    s = make_session(clock=clock)
    assert s.state_due  # the initial state
    topics = [t for t, _ in s.measurement_fields()]
    assert topics == ["/clock", "joint_states", "odom", "contact_wrench/left_foot",
                      "contact_wrench/right_foot"]
    assert s.tick() == 0
    clock.now += 0.0105
    assert s.tick() == 10
    assert s.sim.t == pytest.approx(0.010)
    assert s.state_due
    fields = dict(s.measurement_fields())
    assert fields["joint_states"]["header"]["stamp"] == messages.stamp(s.sim.t)
    assert fields["odom"]["child_frame_id"] == s.robot.base_link
    assert fields["contact_wrench/left_foot"]["header"]["frame_id"] == "l_sole"
    assert fields["contact_wrench/left_foot"]["wrench"]["force"]["z"] > 50.0  # standing
    visual = [t for t, _ in s.visual_fields()]
    assert visual == ["cop/left_foot", "cop/right_foot", "zmp", "contact_markers"]
    assert s.tf_fields()["child_frame_id"] == s.robot.base_link


def test_watchdog_falls_back_and_says_so_once():
    clock = FakeClock()
    s = make_session(clock=clock, real_time_factor=0.0, stale_command_action="damping",
                     stale_damping=2.0)
    s.pacer.max_batch = 1  # one period per tick
    names = s.robot.actuated_joint_names
    assert s.command(0, names, np.ones(len(names))) is None
    while s.sim.t < 0.04:  # t ≤ 0.05 s: the command is applied
        assert s.tick() == 1
    np.testing.assert_allclose(s.tau_applied, np.clip(1.0, -s.robot.effort_limit,
                                                      s.robot.effort_limit))
    while s.sim.t < 0.2:
        s.tick()
    texts = [e.text for e in s.events]
    stale = [t for t in texts if "No valid joint_torque_cmd for more than 0.05 s" in t]
    assert len(stale) == 1 and "joint damping 2 N m s/rad" in stale[0]
    np.testing.assert_allclose(s.tau_applied, -2.0 * s.v_prev[s.robot.v_idx], atol=1e-9)
    assert s.status()["level"] == bytes([nc.DIAG_WARN])


def test_bad_command_is_rejected_and_the_simulation_keeps_running():
    clock = FakeClock()
    s = make_session(clock=clock)
    names = s.robot.actuated_joint_names
    reason = s.command(0, names, [np.nan] * len(names))
    assert "NaN or Inf" in reason and s.rejected == 1 and s.last_rejection == reason
    assert s.command(0, ["bogus"], [1.0]) is not None
    clock.now += 0.0051
    assert s.tick() == 5
    values = {kv["key"]: kv["value"] for kv in s.status()["values"]}
    assert values["commands_rejected"] == "2"
    assert values["commands_accepted"] == "0"


def pd_command(session, stamp, kp=50.0, kd=2.0):
    """A deterministic 'controller' answering a published state."""
    q, v = session.sim.q, session.sim.v
    robot = session.robot
    tau = kp * (session.world.q0[robot.q_idx] - q[robot.q_idx]) - kd * v[robot.v_idx]
    return session.command(stamp, robot.actuated_joint_names, tau)


def run_lockstep(periods, answer_late=False):
    clock = FakeClock()
    s = make_session(clock=clock, lockstep=True, real_time_factor=0.0, control_period=0.002)
    states = []
    for _ in range(periods):
        fields = dict(s.measurement_fields())
        stamp = nc.ns_from_stamp(**fields["joint_states"]["header"]["stamp"])
        assert s.tick() == 0  # no command yet: the simulator waits
        if answer_late:
            clock.now += 0.5  # a slow controller changes nothing
            assert s.tick() == 0
        assert pd_command(s, stamp + 1, kp=0.0) is not None  # a wrong stamp does not count
        assert pd_command(s, stamp) is None
        assert s.tick() == 1
        assert s.tick() == 0  # one period per command
        states.append((s.sim.t, s.sim.q.copy(), s.sim.v.copy()))
    return states


def test_lockstep_advances_one_period_per_command_and_is_deterministic():
    a = run_lockstep(30)
    b = run_lockstep(30, answer_late=True)
    assert a[-1][0] == pytest.approx(0.060)
    for (ta, qa, va), (tb, qb, vb) in zip(a, b, strict=True):
        assert ta == tb
        np.testing.assert_array_equal(qa, qb)
        np.testing.assert_array_equal(va, vb)


def test_lockstep_with_real_time_factor_waits_for_the_wall_clock():
    clock = FakeClock()
    s = make_session(clock=clock, lockstep=True, real_time_factor=1.0)
    stamp = nc.ns_from_stamp(**dict(s.measurement_fields())["/clock"]["clock"])
    assert pd_command(s, stamp) is None
    assert s.tick() == 0  # the command is here, the period is not due yet
    clock.now += 0.0011
    assert s.tick() == 1


def test_contact_model_switch_keeps_the_state():
    clock = FakeClock()
    s = make_session(clock=clock, real_time_factor=0.0)
    s.pacer.max_batch = 1
    for _ in range(20):
        s.tick()
    q, v, t = s.sim.q.copy(), s.sim.v.copy(), s.sim.t
    assert t == pytest.approx(0.020)
    new = nc.apply_sim_update(s.config, {"contact_model": "spring_damper"})
    s.update_config(new)
    assert s.sim.contact.name == "spring_damper"
    assert s.sim.t == t
    np.testing.assert_array_equal(s.sim.q, q)
    np.testing.assert_array_equal(s.sim.v, v)
    assert any("Contact model is now 'spring_damper'" in e.text for e in s.events)
    assert s.tick() == 1 and s.error is None
    assert s.sim.t > t
    with pytest.raises(ConfigError):
        s.switch_contact_model("nope", {})
    assert s.sim.contact.name == "spring_damper"


def test_pause_reset_and_divergence():
    clock = FakeClock()
    s = make_session(clock=clock, real_time_factor=0.0)
    s.tick()
    s.set_paused(True)
    t = s.sim.t
    assert s.tick() == 0 and s.sim.t == t
    assert s.status()["message"] == "paused"
    s.set_paused(False)
    assert s.tick() > 0

    def diverge(tau):
        raise DivergenceError("Simulation diverged at t = 1.000000 s: state is NaN or Inf")

    s.sim.step = diverge
    assert s.tick() == 0
    assert s.error.startswith("Simulation diverged")
    assert s.status()["level"] == bytes([nc.DIAG_ERROR])
    assert "call ~/reset" in s.events[-1].text
    assert s.tick() == 0  # stays stopped, node stays up
    del s.sim.step  # back to the class method
    s.reset()
    assert s.error is None and s.sim.t == 0.0 and s.steps == 0
    np.testing.assert_array_equal(s.sim.q, s.world.q0)
    assert s.tick() > 0


def test_status_layout():
    s = make_session()
    status = s.status()
    assert status["name"] == nc.SIM_STATUS_NAME
    assert status["hardware_id"] == "biped3d"
    keys = [kv["key"] for kv in status["values"]]
    assert keys == ["sim_time_s", "steps", "contact_model", "dt_s", "control_period_s",
                    "real_time_factor_target", "real_time_factor_measured", "overruns",
                    "resyncs", "mean_step_us", "lockstep", "paused", "command_state",
                    "commands_accepted", "commands_rejected", "last_rejection", "diverged"]
    array = nc.diagnostic_array(1.5, [status])
    assert array["header"]["stamp"] == {"sec": 1, "nanosec": 500_000_000}


def test_diagnostic_and_multiarray_fields():
    status = nc.diagnostic_status(nc.DIAG_WARN, "n", "m", "hw", {
        "f": 0.123456789, "i": 3, "b": True, "arr": np.array([1.0, 2.5]), "none": None,
        "names": ("left_foot", "right_foot")})
    assert status["level"] == b"\x01"
    assert status["values"] == [
        {"key": "f", "value": "0.123457"}, {"key": "i", "value": "3"},
        {"key": "b", "value": "true"}, {"key": "arr", "value": "1, 2.5"},
        {"key": "none", "value": ""}, {"key": "names", "value": "left_foot, right_foot"}]
    with pytest.raises(ValueError):
        nc.diagnostic_status(7, "n", "m", "hw", {})
    arr = nc.float64_multi_array(np.arange(6), "internal")
    assert arr == {"layout": {"dim": [{"label": "internal", "size": 6, "stride": 6}],
                              "data_offset": 0},
                   "data": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]}


def test_topic_names_agree_with_the_recorded_trace():
    recorder = pytest.importorskip("biped_contact_sim.record.recorder")
    assert recorder.JOINT_STATES[0] == nc.JOINT_STATES
    assert recorder.ODOM[0] == nc.ODOM
    assert recorder.CONTACT_WRENCH[0] == nc.CONTACT_WRENCH
    assert recorder.COP[0] == nc.COP
    assert recorder.ZMP[0] == nc.ZMP
    assert recorder.CONTACT_MARKERS[0] == nc.CONTACT_MARKERS
    assert recorder.CLOCK[0] == nc.CLOCK
    assert recorder.TF[0] == nc.TF
    assert recorder.WEIGHT_ARROW_LENGTH == nc.WEIGHT_ARROW_LENGTH
    assert recorder.WORLD_FRAME == nc.WORLD_FRAME


# ------------------------------------------------------------------------------ odometry


def random_state(robot, seed):
    rng = np.random.default_rng(seed)
    q = pin.randomConfiguration(robot.model, -np.ones(robot.nq), np.ones(robot.nq))
    return q, rng.normal(size=robot.nv)


@pytest.mark.parametrize("name", ["biped3d", "planar_biped", "ball"])
def test_base_state_from_odometry_inverts_pinocchio(name):
    robot = RobotModel.load(name)
    data = robot.create_data()
    root = robot.model.joints[1]
    for seed in range(5):
        q, v = random_state(robot, seed)
        pos, quat, lin, ang = nc.base_pose_twist(robot.model, data, q, v)
        # The published twist is pinocchio's local velocity of the root joint.
        np.testing.assert_allclose(np.concatenate([lin, ang]), data.v[1].vector)
        qb, vb = nc.base_state_from_odometry(robot.config.base, pos, quat, lin, ang)
        q_root = q[root.idx_q:root.idx_q + root.nq]
        if robot.config.base == "free_flyer" and np.dot(qb[3:], q_root[3:]) < 0:
            qb[3:] *= -1  # q and -q are the same rotation
        np.testing.assert_allclose(qb, q_root, atol=1e-12)
        np.testing.assert_allclose(vb, v[root.idx_v:root.idx_v + root.nv], atol=1e-12)


def test_free_flyer_twist_is_the_body_frame_one(biped):
    """A base yawed by 90° moving along world x has body-frame linear velocity along −y."""
    q = biped.standing_configuration()
    q[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(0.0, 0.0, np.pi / 2)).coeffs()
    v = np.zeros(biped.nv)
    v[:3] = [0.0, -1.0, 0.0]  # body frame
    pos, quat, lin, ang = nc.base_pose_twist(biped.model, biped.create_data(), q, v)
    data = biped.create_data()
    pin.forwardKinematics(biped.model, data, q, v)
    world = pin.getVelocity(biped.model, data, 1, pin.LOCAL_WORLD_ALIGNED).linear
    np.testing.assert_allclose(world, [1.0, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(lin, [0.0, -1.0, 0.0], atol=1e-12)


def test_odometry_rejects_bad_quaternions_and_nan():
    with pytest.raises(ValueError, match="not a unit quaternion"):
        nc.base_state_from_odometry("free_flyer", [0, 0, 0], [0, 0, 0, 2], [0] * 3, [0] * 3)
    with pytest.raises(ValueError, match="NaN or Inf"):
        nc.base_state_from_odometry("free_flyer", [0, 0, np.nan], [0, 0, 0, 1], [0] * 3,
                                    [0] * 3)


# ------------------------------------------------------------------------------ assembly


def feed(assembler, session):
    """Give the assembler the measurement messages the simulator session publishes."""
    fields = dict(session.measurement_fields())
    js, od = fields["joint_states"], fields["odom"]
    stamp = nc.ns_from_stamp(**js["header"]["stamp"])
    assert assembler.joint_state(stamp, js["name"], js["position"], js["velocity"]) is None
    pose, twist = od["pose"]["pose"], od["twist"]["twist"]
    xyz = ("x", "y", "z")
    assert assembler.odometry(stamp, [pose["position"][k] for k in xyz],
                              [pose["orientation"][k] for k in (*xyz, "w")],
                              [twist["linear"][k] for k in xyz],
                              [twist["angular"][k] for k in xyz]) is None
    for body in session.robot.contact_bodies:
        w = fields[f"contact_wrench/{body.name}"]["wrench"]
        assert assembler.wrench(body.name, stamp, [w["force"][k] for k in xyz],
                                [w["torque"][k] for k in xyz]) is None
    return stamp


def test_measurement_from_the_simulators_messages_is_its_state():
    clock = FakeClock()
    s = make_session(clock=clock, real_time_factor=0.0)
    for _ in range(5):
        s.tick()
    a = nc.MeasurementAssembler(s.robot)
    stamp = feed(a, s)
    m = a.pop()
    assert m.stamp == stamp
    np.testing.assert_allclose(m.q, s.sim.q, atol=1e-12)
    np.testing.assert_allclose(m.v, s.sim.v, atol=1e-12)
    from biped_contact_sim.sim.observables import foot_wrenches
    expected = foot_wrenches(s.robot, s.robot.create_data(), s.q_prev, s.last_step)
    for foot, w in expected.items():
        np.testing.assert_allclose(m.wrenches[foot], w, atol=1e-9)
    assert a.pop() is None  # each stamp once


def test_exact_sync_waits_for_every_part_with_the_same_stamp(biped):
    a = nc.MeasurementAssembler(biped)
    names = biped.actuated_joint_names
    zeros = np.zeros(len(names))
    quat = [0.0, 0.0, 0.0, 1.0]
    a.joint_state(2 * MS, names, zeros, zeros)
    a.odometry(2 * MS, [0, 0, 0.8], quat, [0] * 3, [0] * 3)
    a.wrench("left_foot", 2 * MS, [0, 0, 200], [0] * 3)
    assert a.pop() is None and a.missing() == ["contact_wrench/right_foot"]
    a.wrench("right_foot", 1 * MS, [0, 0, 200], [0] * 3)  # another stamp
    assert a.pop() is None
    a.wrench("right_foot", 2 * MS, [0, 0, 190], [0] * 3)
    m = a.pop()
    assert m.stamp == 2 * MS and m.wrenches["right_foot"][2] == 190
    # an older stamp completing later is not handed out
    a.joint_state(1 * MS, names, zeros, zeros)
    a.odometry(1 * MS, [0, 0, 0.8], quat, [0] * 3, [0] * 3)
    a.wrench("left_foot", 1 * MS, [0, 0, 200], [0] * 3)
    assert a.pop() is None


def test_joint_states_are_matched_by_name(biped):
    a = nc.MeasurementAssembler(biped, sync="latest")
    names = list(biped.actuated_joint_names)
    pos = np.arange(len(names), dtype=float)
    # reversed order plus an extra joint: fine
    assert a.joint_state(0, ["gripper", *names[::-1]], [9.0, *pos[::-1]],
                         [0.0] * (len(names) + 1)) is None
    assert a.joint_state(0, names[1:], pos[1:], pos[1:]).startswith(
        f"joint_states lacks actuated joint(s): {names[0]}")
    assert a.joint_state(0, names, pos, []).startswith(f"joint_states has {len(names)} names")
    assert a.wrench("hand", 0, [0] * 3, [0] * 3).startswith("unknown foot 'hand'")
    a.odometry(0, [0, 0, 1], [0, 0, 0, 1], [0] * 3, [0] * 3)
    a.wrench("left_foot", 0, [0] * 3, [0] * 3)
    a.wrench("right_foot", 0, [0] * 3, [0] * 3)
    m = a.pop()
    np.testing.assert_array_equal(m.q[biped.q_idx], pos)


def test_latest_sync_skips_old_inputs_and_repeated_joint_states(biped):
    a = nc.MeasurementAssembler(biped, sync="latest", max_age=0.01)
    names = biped.actuated_joint_names
    zeros = np.zeros(len(names))
    a.odometry(0, [0, 0, 1], [0, 0, 0, 1], [0] * 3, [0] * 3)
    a.wrench("left_foot", 0, [0] * 3, [0] * 3)
    a.wrench("right_foot", 5 * MS, [0] * 3, [0] * 3)
    a.joint_state(20 * MS, names, zeros, zeros)
    assert a.pop() is None  # odom is 20 ms older than the joint states
    a.odometry(18 * MS, [0, 0, 1], [0, 0, 0, 1], [0] * 3, [0] * 3)
    a.wrench("left_foot", 19 * MS, [0] * 3, [0] * 3)
    a.wrench("right_foot", 19 * MS, [0] * 3, [0] * 3)
    assert a.pop().stamp == 20 * MS
    assert a.pop() is None  # no new joint states


# ------------------------------------------------------------------------------ controller


class HoldBehavior(Behavior):
    name = "hold"

    def __init__(self, robot, q0, **params):
        self.q0 = np.asarray(q0)
        self.robot = robot

    def reference(self, t):
        return Reference(stance=("left_foot", "right_foot"), com=np.array([0.0, 0.0, 0.7 + t]),
                         q_joints=self.q0[self.robot.q_idx], internal=np.zeros(6))


@dataclasses.dataclass(frozen=True)
class HoldSettings:
    """Settings of the test controller.

    Attributes:
        kp: stiffness [N m/rad].
    """

    kp: float = 10.0


class HoldController(Controller):
    name = "hold"
    Settings = HoldSettings

    def compute(self, meas):
        ref = self.behavior.reference(meas.t)
        if meas.t > 0.5:
            raise ConfigError("test failure")
        tau = self.settings.kp * (ref.q_joints - meas.q[self.robot.q_idx])
        return ControlOutput(tau, {"internal": np.ones(6), "t_seen": meas.t})


@pytest.fixture
def hold(monkeypatch):
    monkeypatch.setattr(nc, "make_behavior", lambda name, robot, q0, **p: HoldBehavior(robot, q0))
    monkeypatch.setattr(nc, "make_controller", lambda name, robot, behavior, dt, **s:
                        HoldController(robot, behavior, dt, **s))


def measurement(robot, stamp, q=None):
    q = robot.standing_configuration() if q is None else q
    return nc.AssembledMeasurement(stamp, q, np.zeros(robot.nv),
                                   {b.name: np.zeros(6) for b in robot.contact_bodies})


def test_controller_session_commands_and_diagnostics(biped, hold):
    cfg = nc.controller_config({"diagnostics_decimation": 2, "controller_settings": "kp=3.0"})
    s = nc.ControllerSession(biped, cfg)
    t0 = 1_700_000_000_123_456_789  # hardware time: the behaviour still starts at t = 0
    cycle = s.step(measurement(biped, t0))
    assert cycle.command["header"]["stamp"] == nc.stamp_fields(t0)  # exact echo
    assert cycle.command["name"] == list(biped.actuated_joint_names)
    assert cycle.command["position"] == [] and len(cycle.command["effort"]) == biped.n_joints
    assert s.last_output.info["t_seen"] == 0.0
    topics = [t for t, _ in cycle.diagnostics]
    assert topics == ["~/com", "~/com_ref", "~/internal_forces", "~/internal_forces_ref",
                      "/diagnostics"]
    d = dict(cycle.diagnostics)
    com = pin.centerOfMass(biped.model, biped.create_data(), biped.standing_configuration())
    assert d["~/com"]["point"] == pytest.approx(dict(zip("xyz", com, strict=True)))
    assert d["~/com_ref"]["point"]["z"] == pytest.approx(0.7)
    assert d["~/internal_forces"]["layout"]["dim"][0]["label"] == "internal"
    status = d["/diagnostics"]["status"][0]
    assert status["level"] == b"\x00" and status["name"] == nc.CONTROLLER_STATUS_NAME
    keys = [kv["key"] for kv in status["values"]]
    assert keys[:10] == ["t_s", "controller", "behavior", "stance", "cycles", "failures",
                         "mean_compute_us", "com", "com_ref", "tau"]
    assert "info.internal" in keys and "info.t_seen" in keys
    second = s.step(measurement(biped, t0 + 100 * MS))
    assert second.diagnostics == []  # decimation 2
    assert s.last_output.info["t_seen"] == pytest.approx(0.1)


def test_controller_session_restarts_when_time_jumps_back(biped, hold):
    s = nc.ControllerSession(biped, nc.controller_config({}))
    s.step(measurement(biped, 300 * MS))
    first = s.controller
    s.step(measurement(biped, 0))
    assert s.controller is not first
    assert any("Time jumped back" in e.text for e in s.events)
    assert s.last_output.info["t_seen"] == 0.0


def test_controller_failure_publishes_nothing_and_is_reported(biped, hold):
    s = nc.ControllerSession(biped, nc.controller_config({}))
    assert s.step(measurement(biped, 0)) is not None
    assert s.step(measurement(biped, 600 * MS)) is None
    assert s.failures == 1 and "ConfigError: test failure" in s.last_error
    assert s.events[-1].severity == "error"
    waiting = s.waiting_status(0.0, ["odom"])
    assert waiting["status"][0]["message"] == "waiting for odom"


def test_check_controller_refuses_unknown_names(biped, monkeypatch):
    monkeypatch.setattr(nc, "make_behavior", lambda name, robot, q0, **p: HoldBehavior(robot, q0))
    with pytest.raises(ConfigError, match="Unknown controller: 'pid'"):
        nc.check_controller(biped, dataclasses.replace(nc.controller_config({}),
                                                       controller="pid"))


# ------------------------------------------------------------------------------ ROS files


@pytest.mark.parametrize("path", [
    "biped_contact_sim/ros/sim_node.py", "biped_contact_sim/ros/controller_node.py",
    "launch/sim.launch.py", "launch/hardware.launch.py",
    *(str(p.relative_to(ROOT)) for p in sorted((ROOT / "test/ros").glob("*.py")))])
def test_ros_files_byte_compile(path, tmp_path):
    py_compile.compile(str(ROOT / path), cfile=str(tmp_path / "out.pyc"), doraise=True)


def test_launch_arguments_are_described():
    for name in ("sim.launch.py", "hardware.launch.py"):
        text = (ROOT / "launch" / name).read_text()
        assert "DeclareLaunchArgument(name, default_value=default, description=description)" \
            in text
    sim = (ROOT / "launch/sim.launch.py").read_text()
    for arg in ("robot", "contact_model", "controller", "behavior", "rviz", "lockstep",
                "use_sim_time"):
        assert f'("{arg}", ' in sim


def test_rviz_config_shows_the_contact_topics():
    config = yaml.safe_load((ROOT / "config/biped.rviz").read_text())
    manager = config["Visualization Manager"]
    assert manager["Global Options"]["Fixed Frame"] == "world"
    by_class = {}
    for display in manager["Displays"]:
        by_class.setdefault(display["Class"], []).append(display.get("Topic", {}).get("Value"))
    assert "rviz_default_plugins/RobotModel" in by_class
    assert "rviz_default_plugins/TF" in by_class
    assert by_class["rviz_default_plugins/MarkerArray"] == ["/contact_markers"]
    assert sorted(by_class["rviz_default_plugins/Wrench"]) == [
        "/contact_wrench/left_foot", "/contact_wrench/right_foot"]
    assert sorted(by_class["rviz_default_plugins/PointStamped"]) == [
        "/cop/left_foot", "/cop/right_foot", "/zmp"]


def test_setup_installs_the_ros_files_and_entry_points():
    text = (ROOT / "setup.py").read_text()
    assert 'glob("launch/*.launch.py")' in text and 'glob("config/*.rviz")' in text
    assert "simulator_node = biped_contact_sim.ros.sim_node:main" in text
    assert "controller_node = biped_contact_sim.ros.controller_node:main" in text
    assert 'install_requires=["setuptools"]' in text
    xml = (ROOT / "package.xml").read_text()
    for key in ("rclpy", "sensor_msgs", "geometry_msgs", "nav_msgs", "visualization_msgs",
                "rosgraph_msgs", "std_msgs", "std_srvs", "tf2_ros", "rcl_interfaces",
                "diagnostic_msgs", "launch", "launch_ros", "robot_state_publisher", "rviz2",
                "pinocchio", "python3-numpy", "python3-scipy"):
        assert f"depend>{key}</" in xml, key
    for key in ("launch_testing", "launch_testing_ros"):
        assert f"<test_depend>{key}</test_depend>" in xml


def test_closed_loop_through_message_fields_keeps_the_biped_standing():
    """Simulator session → fields → assembler → ctc → command fields → lockstep gate."""
    config = nc.sim_config({"lockstep": True, "real_time_factor": 0.0})
    sim = nc.SimSession(nc.build_world(config), config)
    robot = sim.robot
    ctrl = nc.ControllerSession(robot, nc.controller_config({"controller": "ctc"}))
    assembler = nc.MeasurementAssembler(robot)
    z0 = sim.sim.q[2]
    while sim.sim.t < 0.2 - 1e-9:
        feed(assembler, sim)
        cycle = ctrl.step(assembler.pop())
        assert cycle is not None, ctrl.last_error
        cmd = cycle.command
        assert sim.command(nc.ns_from_stamp(**cmd["header"]["stamp"]), cmd["name"],
                           cmd["effort"]) is None
        assert sim.tick() == 1
        assert sim.sim.q[2] > z0 - 0.01
    assert sim.error is None and ctrl.cycles == 200
