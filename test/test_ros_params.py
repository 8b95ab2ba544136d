"""Parameter schema of the nodes (biped_contact_sim/ros/params.py) and the robot they load
(robot/source.py): validation messages, descriptors, YAML files against the schema."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import yaml
from ros_logic_helpers import ROOT

from biped_contact_sim.errors import ConfigError
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.robot import source as robot_source
from biped_contact_sim.robot.config import load_robot_config
from biped_contact_sim.ros import param_spec
from biped_contact_sim.ros import params as ros_params
from biped_contact_sim.sim.scenarios import get_scenario


@pytest.fixture(scope="module")
def biped():
    return RobotModel.load("biped3d")


# ------------------------------------------------------------------------------ schema


def test_range_and_choice_messages_name_parameter_value_and_bound():
    specs = {s.name: s for s in ros_params.sim_parameter_specs()}
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
    specs = {s.name: s for s in ros_params.sim_parameter_specs()}
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
    deci = {s.name: s for s in ros_params.controller_parameter_specs()}["diagnostics_decimation"]
    assert deci.descriptor_fields()["integer_range"] == [
        {"from_value": 1, "to_value": 100000, "step": 0}]


def test_descriptions_and_units_come_from_the_dataclass_docstrings():
    from biped_contact_sim.contact.penalty_fl import PenaltyFLSettings
    from biped_contact_sim.sim.simulator import SimSettings

    docs = param_spec.attribute_docs(SimSettings)
    assert docs["dt"] == ("physics step", "s")
    assert docs["max_speed"][1] == "m/s or rad/s"
    pfl = param_spec.attribute_docs(PenaltyFLSettings)
    assert pfl["kp"][1] == "1/s²"
    assert pfl["kv"][0].startswith("k_v, damping of the designed contact dynamics")
    specs = {s.name: s for s in ros_params.sim_parameter_specs("stand")}
    # The scenario's contact defaults replace the dataclass defaults.
    assert specs["contact.penalty_fl.epsilon"].default == pytest.approx(1e-6)
    assert specs["contact.penalty_fl.kp"].unit == "1/s²"
    assert specs["contact.penalty_fl.kp"].read_only is False


def test_every_contact_model_has_parameters_with_its_settings():
    from biped_contact_sim.contact import CONTACT_MODELS

    names = {s.name for s in ros_params.sim_parameter_specs()}
    for model, cls in CONTACT_MODELS.items():
        for f in dataclasses.fields(cls.Settings):
            if param_spec._ros_value(f.default) is not None:
                assert f"contact.{model}.{f.name}" in names


def test_sim_config_reports_every_bad_value_at_once():
    with pytest.raises(ConfigError) as info:
        ros_params.sim_config({"dt": -1.0, "contact_model": "foo", "stale_command_action": "brake"})
    text = str(info.value)
    assert "dt = -1.0 must be in [1e-05, 0.1] s" in text
    assert "contact_model = 'foo' is not one of:" in text
    assert "stale_command_action = 'brake' is not one of: hold, damping, zero" in text


def test_control_period_must_be_a_multiple_of_dt():
    with pytest.raises(ConfigError, match=r"control_period = 0.0015 s must be an integer "
                                          r"multiple of dt = 0.001 s"):
        ros_params.sim_config({"control_period": 0.0015})
    assert ros_params.sim_config({"control_period": 0.002}).substeps == 2


def test_bad_contact_setting_is_named():
    with pytest.raises(ConfigError, match=r"contact.penalty_fl: .*kv"):
        ros_params.sim_config({"contact.penalty_fl.kv": -1.0})


def test_unknown_scenario_lists_the_valid_ones():
    with pytest.raises(ConfigError, match=r"scenario = 'moon' is not one of: .*stand"):
        ros_params.sim_config({"scenario": "moon"})


def test_world_and_contacts_are_validated_naming_the_parameter():
    with pytest.raises(ConfigError, match=r"world = 'moon': Unknown world: 'moon'. Valid names: "
                                          r".*step"):
        ros_params.sim_config({"world": "moon"})
    with pytest.raises(ConfigError, match=r"world 'step' has boxes or objects: it needs "
                                          r"contacts = geometry"):
        ros_params.sim_config({"world": "step", "contacts": "points"})
    with pytest.raises(ConfigError, match=r"contacts = 'mesh' is not one of: '', points, "
                                          r"geometry"):
        ros_params.sim_config({"contacts": "mesh"})
    with pytest.raises(ConfigError, match=r"^contacts = 'mesh': allowed "
                                          r"points, geometry"):
        ros_params.sim_config({"scenario_sets": "contacts=mesh"})


def test_world_and_contacts_parameters_win_over_scenario_sets():
    params, options = ros_params.scenario_options("stand", "world=step contacts=geometry",
                                                  "", "")
    assert params["world"] == "step" and options["contacts"] == "geometry"
    assert [b.name for b in options["world"].boxes] == ["step"]
    params, options = ros_params.scenario_options("stand", "world=step", "box_stack",
                                                  "geometry")
    assert params["world"] == "box_stack" and len(options["world"].objects) == 1
    _, options = ros_params.scenario_options("stand", "", "", "")
    assert options == {"world": None, "contacts": get_scenario("stand").contacts}


def test_run_time_updates_are_checked_and_applied():
    config = ros_params.sim_config({})
    assert "is not one of" in ros_params.check_sim_update(config, {"contact_model": "nope"})
    assert ros_params.check_sim_update(config, {"real_time_factor": -1.0}).startswith(
        "real_time_factor = -1.0 must be in [0, 100]")
    # penalty_fl refuses dt·kv ≥ 2: the reason comes from the model.
    reason = ros_params.check_sim_update(config, {"contact.penalty_fl.kv": 5000.0})
    assert reason.startswith("contact_model = 'penalty_fl': penalty_fl unstable")
    assert ros_params.check_sim_update(config, {"contact_model": "spring_damper"}) is None
    new = ros_params.apply_sim_update(config, {"contact_model": "spring_damper",
                                       "real_time_factor": 0, "contact.spring_damper.damping": 50})
    assert new.contact_model == "spring_damper"
    assert new.real_time_factor == 0.0 and isinstance(new.real_time_factor, float)
    assert new.contact["spring_damper"]["damping"] == 50
    assert config.contact_model == "penalty_fl"  # the old config is unchanged


def test_parse_key_values_reads_yaml_like_biped_sim_set():
    assert param_spec.parse_key_values("mu=0.6 height=1e-2 flag=true name=x", "s") == {
        "mu": 0.6, "height": 0.01, "flag": True, "name": "x"}
    assert param_spec.parse_key_values("", "s") == {}
    with pytest.raises(ConfigError, match="scenario_sets = 'mu': 'mu' is not key=value"):
        param_spec.parse_key_values("mu", "scenario_sets")


def test_node_yaml_files_match_the_schema():
    sim = yaml.safe_load((ROOT / "config/sim_node.yaml").read_text())
    values = sim["/**"]["ros__parameters"]
    names = {s.name for s in ros_params.sim_parameter_specs(values["scenario"])}
    assert set(values) <= names, set(values) - names
    config = ros_params.sim_config(values)
    assert config == ros_params.sim_config({})  # the file states the defaults
    ctrl = yaml.safe_load((ROOT / "config/controller_node.yaml").read_text())
    values = ctrl["/**"]["ros__parameters"]
    assert set(values) <= {s.name for s in ros_params.controller_parameter_specs()}
    assert ros_params.controller_config(values) == ros_params.controller_config({})
    for file in ("sim_node.yaml", "controller_node.yaml"):  # doubles keep their decimal point
        spec_types = {s.name: s.kind for s in ros_params.sim_parameter_specs()
                      + ros_params.controller_parameter_specs()}
        raw = yaml.safe_load((ROOT / "config" / file).read_text())
        for name, value in next(iter(raw.values()))["ros__parameters"].items():
            assert type(value) is spec_types[name] or value == "", (file, name, value)


def test_controller_config_validation():
    with pytest.raises(ConfigError) as info:
        ros_params.controller_config({"controller": "pid", "sync": "sometimes",
                              "controller_settings": "kp"})
    text = str(info.value)
    assert "controller = 'pid' is not one of:" in text
    assert "sync = 'sometimes' is not one of: exact, latest" in text
    assert "controller_settings = 'kp': 'kp' is not key=value" in text
    cfg = ros_params.controller_config({"controller_settings": "kp_com=40 kd_com=12"})
    assert cfg.controller_settings == {"kp_com": 40, "kd_com": 12}


# ------------------------------------------------------------------------------ robot loading


@pytest.mark.parametrize("name", ["biped3d", "planar_biped"])
def test_robot_parameters_round_trip(name):
    config = load_robot_config(name)
    params = robot_source.robot_parameters(config)
    assert params["robot.base"] == config.base
    assert len(params["robot.contacts.left_foot.offsets"]) % 3 == 0
    again = robot_source.robot_config_from_parameters(params, Path(config.urdf_path).parent)
    assert again.urdf_path == config.urdf_path
    assert again.standing == config.standing
    for a, b in zip(again.contact_bodies, config.contact_bodies, strict=True):
        assert a.name == b.name and a.frame == b.frame
        np.testing.assert_array_equal(a.offsets, b.offsets)


def test_robot_file_values_are_the_parameters_a_params_file_gives():
    raw = yaml.safe_load((ROOT / "config/biped3d.yaml").read_text())["/**"]["ros__parameters"]
    params = robot_source.robot_parameters(load_robot_config("biped3d"))
    assert params["robot.contacts.left_foot.offsets"] == raw["robot"]["contacts"]["left_foot"][
        "offsets"]
    assert params["robot.standing.joint_names"] == raw["robot"]["standing"]["joint_names"]


def test_load_robot_from_description_string_and_overrides(biped):
    urdf = Path(biped.config.urdf_path).read_text()
    robot = robot_source.load_robot("biped3d", robot_description=urdf)
    assert robot.actuated_joint_names == biped.actuated_joint_names
    moved = robot_source.load_robot("biped3d", overrides={
        "robot.contacts.left_foot.offsets": [0.1, 0.05, 0.0, 0.1, -0.05, 0.0,
                                             -0.05, -0.05, 0.0, -0.05, 0.05, 0.0]})
    np.testing.assert_allclose(moved.contact_bodies[0].offsets[0], [0.1, 0.05, 0.0])
    with pytest.raises(ConfigError, match=r"urdf_path = '/nonexistent\.urdf' is not a file"):
        robot_source.load_robot("biped3d", urdf_path="/nonexistent.urdf")
    with pytest.raises(ConfigError, match="Unknown robot"):
        robot_source.load_robot("tripod")
