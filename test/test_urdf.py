"""Checks of the robot descriptions in urdf/ and their configs in config/.

The analytic inertia formulas are written out again here on purpose (the generator is only run,
never imported for its formulas), so a mistake in tools/generate_urdf.py cannot hide itself.
"""

import importlib.util
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
URDF_DIR = ROOT / "urdf"
CONFIG_DIR = ROOT / "config"
ROBOTS = ["biped3d", "humanoid", "planar_biped", "ball", "brick", "box"]
BASES = {
    "biped3d": "free_flyer",
    "humanoid": "free_flyer",
    "planar_biped": "planar_xz",
    "ball": "translation",
    "brick": "translation",
    "box": "free_flyer",
}


def root_joint(base: str) -> pin.JointModel:
    if base == "free_flyer":
        return pin.JointModelFreeFlyer()
    if base == "translation":
        return pin.JointModelTranslation()
    assert base == "planar_xz"
    planar = pin.JointModelComposite()
    for joint in (pin.JointModelPX(), pin.JointModelPZ(), pin.JointModelRY()):
        planar.addJoint(joint)
    return planar


def load_model(name: str) -> pin.Model:
    return pin.buildModelFromUrdf(str(URDF_DIR / f"{name}.urdf"), root_joint(BASES[name]))


def load_config(name: str) -> dict:
    with open(CONFIG_DIR / f"{name}.yaml") as f:
        return yaml.safe_load(f)["/**"]["ros__parameters"]["robot"]


def floats(text: str) -> list[float]:
    return [float(v) for v in text.split()]


def shapes(element: ET.Element) -> list[tuple[str, dict]]:
    return [(e.tag, e.attrib) for e in element.find("geometry").iter()]


def expected_inertia(geometry: ET.Element, mass: float) -> tuple[float, float, float]:
    """Principal moments of a uniform solid primitive about its centre."""
    shape = geometry[0]
    if shape.tag == "box":
        a, b, c = floats(shape.get("size"))
        return (mass / 12 * (b**2 + c**2), mass / 12 * (a**2 + c**2), mass / 12 * (a**2 + b**2))
    r = float(shape.get("radius"))
    if shape.tag == "sphere":
        return (0.4 * mass * r**2,) * 3
    assert shape.tag == "cylinder"
    length = float(shape.get("length"))
    side = mass * (3 * r**2 + length**2) / 12
    return (side, side, 0.5 * mass * r**2)


def standing_q(model: pin.Model, standing: dict) -> np.ndarray:
    q = pin.neutral(model)
    for name, value in zip(standing["joint_names"], standing["positions"], strict=True):
        q[model.joints[model.getJointId(name)].idx_q] = value
    return q


@pytest.mark.parametrize("name", ROBOTS)
def test_parses_with_pinocchio(name):
    model = load_model(name)
    assert model.joints[1].shortname() == root_joint(BASES[name]).shortname()
    frame_names = [frame.name for frame in model.frames]
    assert len(frame_names) == len(set(frame_names))  # getFrameId(name) is unambiguous
    assert load_config(name)["base"] == BASES[name]


@pytest.mark.parametrize("name", ROBOTS)
def test_links_have_analytic_inertia(name):
    links = ET.parse(URDF_DIR / f"{name}.urdf").getroot().findall("link")
    massive = [link for link in links if link.find("inertial") is not None]
    assert massive
    for link in links:
        inertial = link.find("inertial")
        if inertial is None:
            assert link.find("visual") is None and link.find("collision") is None
            continue
        visual, collision = link.find("visual"), link.find("collision")
        assert shapes(visual) == shapes(collision)
        centre = collision.find("origin").get("xyz")
        assert visual.find("origin").get("xyz") == centre
        assert floats(inertial.find("origin").get("xyz")) == floats(centre)
        mass = float(inertial.find("mass").get("value"))
        tensor = inertial.find("inertia").attrib
        assert mass > 0
        for key in ("ixy", "ixz", "iyz"):
            assert float(tensor[key]) == 0.0
        moments = [float(tensor[key]) for key in ("ixx", "iyy", "izz")]
        expected = expected_inertia(collision.find("geometry"), mass)
        assert moments == pytest.approx(expected, rel=1e-9), link.get("name")


def test_biped3d_structure():
    model = load_model("biped3d")
    assert model.nv == 20 and model.nq == 21
    assert model.joints[1].shortname() == "JointModelFreeFlyer"
    revolute = [
        j
        for j in ET.parse(URDF_DIR / "biped3d.urdf").getroot().findall("joint")
        if j.get("type") == "revolute"
    ]
    assert len(revolute) == 14
    for joint in revolute:
        limit = joint.find("limit")
        effort, velocity = float(limit.get("effort")), float(limit.get("velocity"))
        lower, upper = float(limit.get("lower")), float(limit.get("upper"))
        assert effort > 0 and velocity > 0 and lower < upper, joint.get("name")
        jmodel = model.joints[model.getJointId(joint.get("name"))]
        assert jmodel.shortname() in ("JointModelRX", "JointModelRY", "JointModelRZ")
        assert model.effortLimit[jmodel.idx_v] == effort
        assert model.velocityLimit[jmodel.idx_v] == velocity
        assert model.lowerPositionLimit[jmodel.idx_q] == lower
        assert model.upperPositionLimit[jmodel.idx_q] == upper
    assert 30.0 <= pin.computeTotalMass(model) <= 60.0


def test_humanoid_structure():
    """biped3d's 14 joints, placed as in biped3d, then two 6-DoF arms whose palms hang
    0.25 + 0.22 + 0.065 m below the shoulders, level, at the zero configuration."""
    model, biped = load_model("humanoid"), load_model("biped3d")
    assert model.nv == 32 and model.nq == 33
    assert list(model.names[:16]) == list(biped.names)
    for j in range(2, 16):
        assert model.jointPlacements[j].isApprox(biped.jointPlacements[j])
    arm = ["shoulder_pitch", "shoulder_roll", "shoulder_yaw", "elbow", "wrist_pitch",
           "wrist_roll"]
    assert list(model.names[16:]) == [f"{s}_{j}" for s in "lr" for j in arm]
    data = model.createData()
    pin.framesForwardKinematics(model, data, pin.neutral(model))
    for side, y in (("l", 0.19), ("r", -0.19)):
        shoulder = data.oMi[model.getJointId(f"{side}_shoulder_pitch")].translation
        palm = data.oMf[model.getFrameId(f"{side}_palm")]
        np.testing.assert_allclose(shoulder[1], y, atol=1e-12)
        np.testing.assert_allclose(palm.translation, shoulder - [0.0, 0.0, 0.535], atol=1e-12)
        np.testing.assert_allclose(palm.rotation, np.eye(3), atol=1e-12)
    assert pin.computeTotalMass(model) == pytest.approx(47.6)


def test_planar_biped_structure():
    model = load_model("planar_biped")
    assert model.nv == 9 and model.nq == 9
    assert model.joints[1].shortname() == "JointModelComposite"
    assert model.joints[1].nv == 3
    assert [j.shortname() for j in model.joints[2:]] == ["JointModelRY"] * 6


def test_generated_urdfs_are_committed(tmp_path):
    spec = importlib.util.spec_from_file_location("generate_urdf", ROOT / "tools/generate_urdf.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    written = generator.write_all(tmp_path)
    assert sorted(p.name for p in written) == sorted(f"{name}.urdf" for name in ROBOTS)
    for path in written:
        assert path.read_text() == (URDF_DIR / path.name).read_text(), path.name


@pytest.mark.parametrize("name", ROBOTS)
def test_config_matches_model(name):
    config = load_config(name)
    model = load_model(name)
    assert config["name"] == name and config["urdf"] == f"{name}.urdf"
    assert sorted(config["contacts"]) == sorted(config["contact_bodies"])
    for contact in config["contacts"].values():
        assert model.existFrame(contact["frame"]), contact["frame"]
        offsets = contact["offsets"]
        assert offsets and len(offsets) % 3 == 0
        assert all(isinstance(v, float) for v in offsets)  # ROS double arrays
    if "standing" in config:
        standing = config["standing"]
        assert standing["joint_names"] == list(model.names[2:])  # every actuated joint, in order
        assert all(isinstance(v, float) for v in standing["positions"])


# (robot, base link, height of the base origin above the soles at zero / at `standing`)
HEIGHTS = [
    ("biped3d", "pelvis", 0.87, 0.17 + 0.70 * math.cos(0.3)),
    ("planar_biped", "torso", 0.65, 0.05 + 0.60 * math.cos(0.3)),
]


@pytest.mark.parametrize(("name", "base", "zero_height", "standing_height"), HEIGHTS)
def test_soles_flat_when_standing(name, base, zero_height, standing_height):
    model = load_model(name)
    data = model.createData()
    config = load_config(name)
    soles = [config["contacts"][body]["frame"] for body in config["contact_bodies"]]
    for q, height in (
        (pin.neutral(model), zero_height),
        (standing_q(model, config["standing"]), standing_height),
    ):
        pin.framesForwardKinematics(model, data, q)
        base_z = data.oMf[model.getFrameId(base)].translation[2]
        for sole in soles:
            placement = data.oMf[model.getFrameId(sole)]
            np.testing.assert_allclose(placement.rotation, np.eye(3), atol=1e-9)
            assert base_z - placement.translation[2] == pytest.approx(height, abs=1e-9)


def without_root_link(name: str) -> str:
    """The URDF text with its massless root link and that link's fixed joint removed."""
    tree = ET.parse(URDF_DIR / f"{name}.urdf")
    robot = tree.getroot()
    root_link = robot.find("link[@name='base_link']")
    (fixed,) = [j for j in robot.findall("joint") if j.find("parent").get("link") == "base_link"]
    robot.remove(root_link)
    robot.remove(fixed)
    return ET.tostring(robot, encoding="unicode")


@pytest.mark.parametrize("name", ROBOTS)
def test_root_link_is_massless_for_kdl(name):
    """KDL (robot_state_publisher) refuses a root link with an inertia: the root is base_link,
    without <inertial>, fixed at the identity to the first massive link."""
    robot = ET.parse(URDF_DIR / f"{name}.urdf").getroot()
    children = {j.find("child").get("link") for j in robot.findall("joint")}
    roots = [link for link in robot.findall("link") if link.get("name") not in children]
    assert [link.get("name") for link in roots] == ["base_link"]
    assert roots[0].find("inertial") is None
    (fixed,) = [j for j in robot.findall("joint") if j.find("parent").get("link") == "base_link"]
    assert fixed.get("type") == "fixed"
    assert floats(fixed.find("origin").get("xyz")) == [0.0, 0.0, 0.0]
    assert floats(fixed.find("origin").get("rpy")) == [0.0, 0.0, 0.0]
    assert robot.find(f"link[@name='{fixed.find('child').get('link')}']/inertial") is not None


@pytest.mark.parametrize("name", ROBOTS)
def test_root_link_leaves_the_dynamics_unchanged(name):
    """The model with base_link and the one without it (the massive link as root) have the same
    joints, mass matrix M(q), bias h(q, v) and frame placements at random states."""
    model = load_model(name)
    bare = pin.buildModelFromXML(without_root_link(name), root_joint(BASES[name]))
    assert list(model.names) == list(bare.names)
    assert (model.nq, model.nv) == (bare.nq, bare.nv)
    data, bare_data = model.createData(), bare.createData()
    rng = np.random.default_rng(7)
    for _ in range(5):
        q = pin.randomConfiguration(bare, -np.ones(bare.nq), np.ones(bare.nq))
        v = rng.standard_normal(bare.nv)
        np.testing.assert_allclose(pin.crba(model, data, q), pin.crba(bare, bare_data, q),
                                   rtol=0, atol=1e-12)
        np.testing.assert_allclose(pin.nonLinearEffects(model, data, q, v),
                                   pin.nonLinearEffects(bare, bare_data, q, v), rtol=0, atol=1e-10)
        pin.framesForwardKinematics(model, data, q)
        pin.framesForwardKinematics(bare, bare_data, q)
        for frame_id, frame in enumerate(bare.frames):
            if frame.name == "root_joint" or frame.type != pin.FrameType.BODY:
                continue
            placement = data.oMf[model.getFrameId(frame.name)]
            np.testing.assert_allclose(placement.homogeneous,
                                       bare_data.oMf[frame_id].homogeneous, atol=1e-12)
    assert pin.computeTotalMass(model) == pytest.approx(pin.computeTotalMass(bare), rel=1e-15)
