"""Study files: their errors, the design they expand to, and run ids that are stable.

Nothing here simulates: the parser, the design and the hashing are pure.
"""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from biped_contact_sim.cli import main as cli
from biped_contact_sim.cli.sweep import resolve_configs
from biped_contact_sim.study.spec import StudyError, load_study, parse_study, run_id

ROOT = Path(__file__).resolve().parents[1]


def parse(text: str):
    return parse_study(yaml.safe_load(text), source="s.yaml")


@pytest.mark.parametrize("text, names", [
    ("scenario: ramp\nfoo: 1", ["s.yaml: foo", "allowed", "axes", "metrics"]),
    ("axes: {mu: [0.1]}", ["scenario", "scenario name"]),
    ("scenario: ramp\naxes: {mu: 0.5}", ["axes.mu", "a list", "a range", "under set"]),
    ("scenario: ramp\naxes: {mu: []}", ["axes.mu", "empty"]),
    ("scenario: ramp\naxes: {mu: {start: 0, stop: 1}}", ["axes.mu", "num", "step"]),
    ("scenario: ramp\naxes: {mu: {start: 0, stop: 1, num: 3, step: 0.5}}", ["exactly one"]),
    ("scenario: ramp\naxes: {mu: {start: 1, stop: 0, step: 0.5}}", ["axes.mu.step", "lead"]),
    ("scenario: ramp\naxes: {mu: {uniform: [0, 1], n: 3}}", ["axes.mu.seed", "reproducible"]),
    ("scenario: ramp\naxes: {mu: {uniform: [1, 0], n: 3, seed: 1}}", ["axes.mu.uniform",
                                                                      "below"]),
    ("scenario: ramp\naxes: {mu: {gauss: [0, 1], n: 3, seed: 1}}", ["axes.mu", "uniform"]),
    ("scenario: ramp\nset: {mu: 0.5}\naxes: {mu: [0.1, 0.2]}", ["axes.mu", "either fixed"]),
    ("scenario: ramp\ndesign: {type: random, n: 0, seed: 1}", ["design.n", ">= 1"]),
    ("scenario: ramp\ndesign: sobol", ["design", "grid", "random"]),
    ("scenario: ramp\ndesign: {type: random, n: 4, seed: 1}\naxes: {mu: {start: 0, stop: 1, "
     "num: 3}}", ["axes.mu", "random design", "distribution"]),
    ("scenario: ramp\nduration: -1", ["duration", "> 0"]),
    ("scenario: ramp\naxes: {mu: [0.1, 0.2]}\nfigure: {x: slope_deg}", ["figure.x",
                                                                        "not an axis", "mu"]),
    ("scenario: ramp\naxes: {mu: [0.1, 0.2]}\nfigure: {reduce: sum}", ["figure.reduce",
                                                                       "max"]),
])
def test_parser_errors_name_the_key_and_what_is_allowed(text, names):
    with pytest.raises(StudyError) as err:
        parse(text)
    for name in names:
        assert name in str(err.value)


@pytest.mark.parametrize("text, names", [
    ("scenario: rampp\naxes: {mu: [0.1, 0.2]}", ["rampp", "Valid names", "ramp"]),
    ("scenario: ramp\naxes: {muu: [0.1, 0.2]}", ["muu", "Accepted", "slope_deg"]),
    ("scenario: ramp\naxes: {mu: [0.1, -1.0]}", ["mu=-1.0", "out of range", ">= 0"]),
    ("scenario: ramp\naxes: {contact_model: [penalty_fl, nope]}", ["nope", "gauss_seidel"]),
    ("scenario: ramp\naxes: {mu: [0.1, 0.2]}\nmetrics: [max_penetration, fell]",
     ["max_penetration", "max_penetration_m", "final_speed_m_s"]),
])
def test_cli_refuses_a_bad_study_with_exit_2_and_no_run(tmp_path, capsys, text, names):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    code = cli.main(["sweep", str(path), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: ") and "Traceback" not in err
    assert str(path) in err
    for name in names:
        assert name in err
    assert not (tmp_path / "out").exists()  # refused before anything ran or was written


def test_grid_is_the_product_of_the_axes_with_inclusive_ranges():
    study = parse("scenario: ramp\nset: {speed: 0.0}\naxes:\n"
                  "  mu: {start: 0.1, stop: 0.3, step: 0.1}\n"
                  "  slope_deg: {start: 10, stop: 30, num: 3}\n"
                  "  contact_model: [penalty_fl, gauss_seidel]\n")
    configs = study.configs()
    assert len(configs) == 3 * 3 * 2
    assert [c["sets"]["mu"] for c in configs[::6]] == [0.1, 0.2, 0.3]  # not 0.30000000000000004
    assert sorted({c["sets"]["slope_deg"] for c in configs}) == [10.0, 20.0, 30.0]
    assert {c["sets"]["speed"] for c in configs} == {0.0}
    assert len({run_id(c) for c in configs}) == len(configs)


def test_several_scenarios_are_an_axis_of_their_own():
    study = parse("scenario: [ball, ramp]\naxes: {contact_model: [penalty_fl, spring_damper]}")
    assert study.axis_keys == ("scenario", "contact_model")
    assert [(c["scenario"], c["contact_model"]) for c in study.configs()] == [
        ("ball", "penalty_fl"), ("ball", "spring_damper"),
        ("ramp", "penalty_fl"), ("ramp", "spring_damper")]


def test_random_axes_are_reproducible_and_inside_their_bounds():
    text = ("scenario: ramp\naxes:\n  mu: {uniform: [0.2, 0.6], n: 20, seed: 3}\n"
            "  slope_deg: [10, 20]\n")
    a, b = parse(text).configs(), parse(text).configs()
    assert a == b and len(a) == 40
    mus = [c["sets"]["mu"] for c in a]
    assert all(0.2 <= m < 0.6 for m in mus) and len(set(mus)) == 20
    other = parse(text.replace("seed: 3", "seed: 4")).configs()
    assert [c["sets"]["mu"] for c in other] != mus


def test_random_design_draws_n_points_and_drops_repeats():
    text = ("scenario: ramp\ndesign: {type: random, n: 30, seed: 7}\naxes:\n"
            "  mu: {loguniform: [0.1, 1.0]}\n  contact_model: [penalty_fl, spring_damper]\n")
    configs = parse(text).configs()
    assert len(configs) == 30  # continuous mu: no two points alike
    assert {c["contact_model"] for c in configs} == {"penalty_fl", "spring_damper"}
    assert all(0.1 <= c["sets"]["mu"] <= 1.0 for c in configs)
    few = parse(text.replace("mu: {loguniform: [0.1, 1.0]}", "mu: [0.1, 0.2]")).configs()
    assert len(few) <= 4  # 2 × 2 distinct points drawn 30 times: repeats run once


def test_run_id_is_sha256_of_sorted_json_with_numbers_as_floats():
    config = {"scenario": "ramp", "contact_model": "penalty_fl", "controller": None,
              "duration": 1, "dt": 0.001, "integrator": None, "record_rate": None,
              "sets": {"slope_deg": 20, "mu": 0.5, "contacts": "points", "flag": True}}
    by_hand = json.dumps({"contact_model": "penalty_fl", "controller": None, "dt": 0.001,
                          "duration": 1.0, "integrator": None, "record_rate": None,
                          "scenario": "ramp", "sets": {"contacts": "points", "flag": True,
                                                       "mu": 0.5, "slope_deg": 20.0}},
                         separators=(",", ":"), sort_keys=True)
    assert run_id(config) == hashlib.sha256(by_hand.encode()).hexdigest()[:16]
    reordered = dict(reversed(list(config.items())))
    reordered["sets"] = dict(reversed(list(config["sets"].items())))
    assert run_id(reordered) == run_id(config)
    assert run_id({**config, "sets": {**config["sets"], "mu": 0.5000001}}) != run_id(config)


def test_run_ids_are_the_same_in_another_process():
    study_file = ROOT / "config" / "studies" / "ramp_friction_slope.yaml"
    here = [run_id(c) for c in resolve_configs(load_study(study_file))]
    code = ("import json, sys; from biped_contact_sim.cli.sweep import resolve_configs; "
            "from biped_contact_sim.study.spec import load_study, run_id; "
            f"study = load_study({str(study_file)!r}); "
            "print(json.dumps([run_id(c) for c in resolve_configs(study)]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT, env={**os.environ, "PYTHONHASHSEED": "123"})
    assert json.loads(out.stdout) == here
    assert len(set(here)) == len(here) > 100


def test_resolution_makes_defaults_explicit_and_types_the_scenario_keys():
    study = parse("scenario: ramp\naxes: {mu: [1, 1.0]}")  # the same run written twice
    configs = resolve_configs(study)
    assert len({run_id(c) for c in configs}) == 1
    config = configs[0]
    assert config["contact_model"] == "penalty_fl" and config["controller"] == "none"
    assert config["dt"] == 1e-3 and config["duration"] == 3.0
    assert isinstance(config["sets"]["mu"], float)


def test_shipped_studies_parse_and_resolve():
    for path in sorted((ROOT / "config" / "studies").glob("*.yaml")):
        study = load_study(path)
        assert resolve_configs(study), path


def test_push_direction_turns_the_push_the_push_study_varies():
    from biped_contact_sim.sim.scenarios import get_scenario

    push = get_scenario("push")
    force = {a: push.external(push.resolve({"push_direction_deg": a, "push_force": 10.0}))[0]
             .force for a in (0.0, 90.0, 180.0, 135.0)}
    assert force[90.0] == (0.0, 10.0, 0.0)  # the default: the lateral push, exactly as before
    assert force[0.0] == (10.0, 0.0, 0.0) and force[180.0] == (-10.0, 0.0, 0.0)
    assert force[135.0] == pytest.approx((-10.0 / 2**0.5, 10.0 / 2**0.5, 0.0))
