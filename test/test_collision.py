"""World files and contact detection (sim/world.py, sim/collision.py): analytic gaps and
contact points, coal's signed distance as the reference for box pairs, schema errors."""

from __future__ import annotations

import coal
import numpy as np
import pinocchio as pin
import pytest

from biped_contact_sim.errors import ConfigError
from biped_contact_sim.robot import RobotModel
from biped_contact_sim.sim.collision import (
    CollisionSettings,
    Detector,
    _alloc,
    collision_model,
    finish_reference,
    sole_studs,
)
from biped_contact_sim.sim.collision_kernels import finish_kernel
from biped_contact_sim.sim.world import (
    available_worlds,
    build_world_model,
    load_world,
    object_state,
    parse_world,
    plane_frame,
)


def _objects_only(world_spec, q_objects=None, margin=0.01):
    """A model of the world's free objects alone, its Data at q, and the detector."""
    world = parse_world(world_spec)
    model, joints = build_world_model(pin.Model(), world)
    det = Detector(model, None, world, joints, CollisionSettings(margin))
    data = model.createData()
    q = object_state(world)[0] if q_objects is None else q_objects
    pin.forwardKinematics(model, data, q)
    return det, data, world, model


def _box(name="crate", size=(0.2, 0.1, 0.05), z=0.025, rpy=(0.0, 0.0, 0.0), mass=1.0):
    return {"name": name, "shape": "box", "size": list(size), "mass": mass,
            "position": [0.0, 0.0, z], "rpy": list(rpy)}


def test_box_flat_on_the_ground_touches_at_its_four_bottom_corners():
    det, data, *_ = _objects_only({"objects": [_box(z=0.025 + 0.003)]})
    c = det.detect(data)
    assert len(c) == 4
    np.testing.assert_allclose(c.phi, 0.003, atol=1e-12)
    np.testing.assert_allclose(c.normal, np.tile([0.0, 0.0, 1.0], (4, 1)))
    corners = {(round(x, 9), round(y, 9)) for x, y in c.p1[:, :2]}
    assert corners == {(sx * 0.1, sy * 0.05) for sx in (-1, 1) for sy in (-1, 1)}
    np.testing.assert_allclose(c.p1[:, 2], 0.003, atol=1e-12)
    np.testing.assert_allclose(c.p2[:, 2], 0.0, atol=1e-12)
    assert len(set(c.ids)) == 4 and (c.body2 == 0).all()


def test_tilted_box_reports_each_corner_with_its_own_gap():
    angle = 0.01
    det, data, *_ = _objects_only({"objects": [_box(z=0.03, rpy=(0.0, angle, 0.0))]})
    c = det.detect(data)
    R = pin.rpy.rpyToMatrix(0.0, angle, 0.0)
    expected = sorted(0.03 + (R @ np.array([sx * 0.1, sy * 0.05, -0.025]))[2]
                      for sx in (-1, 1) for sy in (-1, 1))
    assert len(c) == 4  # the top corners are 5 cm up: beyond the margin
    np.testing.assert_allclose(sorted(c.phi), expected, atol=1e-12)


def test_ramp_normal_and_frame():
    alpha = np.radians(20.0)
    n = [np.sin(alpha), 0.0, np.cos(alpha)]
    world = {"ground": None, "planes": [{"name": "ramp", "normal": n}],
             "objects": [{"name": "ball", "shape": "sphere", "radius": 0.1, "mass": 1.0,
                          "position": [0.0, 0.0, 0.1 / np.cos(alpha) - 0.002]}]}
    det, data, *_ = _objects_only(world)
    c = det.detect(data)
    assert len(c) == 1
    np.testing.assert_allclose(c.phi[0], -0.002 * np.cos(alpha), atol=1e-12)
    np.testing.assert_allclose(c.frames[0], plane_frame(np.array(n)), atol=1e-12)
    np.testing.assert_allclose(c.frames[0][:, 0], [np.cos(alpha), 0.0, -np.sin(alpha)])


def test_box_resting_on_a_static_table_gets_the_tables_normal_and_four_corners():
    world = {"boxes": [{"name": "table", "size": [1.0, 1.0, 0.05], "position": [0, 0, 0.5]}],
             "objects": [_box(z=0.525 + 0.025 - 0.001)]}
    det, data, *_ = _objects_only(world)
    c = det.detect(data)
    assert len(c) == 4
    np.testing.assert_allclose(c.phi, -0.001, atol=1e-12)
    np.testing.assert_allclose(c.normal, np.tile([0.0, 0.0, 1.0], (4, 1)), atol=1e-12)


def test_box_over_a_step_edge_touches_at_its_corners_on_the_step_and_on_the_edge():
    """Half of a 0.2 m box overhangs a step whose edge is at x = 0: two corners on the step,
    two points on the edge, all with the step's normal (+z)."""
    world = {"ground": None,
             "boxes": [{"name": "step", "size": [0.4, 1.0, 0.1], "position": [0.2, 0, 0.05]}],
             "objects": [_box(z=0.1 + 0.025)]}
    det, data, *_ = _objects_only(world)
    c = det.detect(data)
    assert len(c) == 4
    xs = sorted(np.round(c.p1[:, 0], 9))
    assert xs == [0.0, 0.0, 0.1, 0.1]
    np.testing.assert_allclose(c.normal, np.tile([0.0, 0.0, 1.0], (4, 1)), atol=1e-12)
    np.testing.assert_allclose(c.phi, 0.0, atol=1e-12)


@pytest.mark.parametrize("z, rpy", [(0.56, (0.0, 0.0, 0.3)), (0.548, (0.0, 0.0, 0.0)),
                                    (0.6, (0.0, 0.02, 0.0))])
def test_box_pair_gap_equals_coals_signed_distance(z, rpy):
    """Face contacts: the deepest (smallest) gap equals coal.distance between the boxes."""
    world = {"ground": None,
             "boxes": [{"name": "table", "size": [1.0, 1.0, 0.05], "position": [0, 0, 0.5]}],
             "objects": [_box(z=z, rpy=rpy)]}
    det, data, *_ = _objects_only(world, margin=0.1)
    c = det.detect(data)
    T1 = coal.Transform3s(pin.rpy.rpyToMatrix(*rpy), np.array([0.0, 0.0, z]))
    T2 = coal.Transform3s(np.eye(3), np.array([0.0, 0.0, 0.5]))
    ref = coal.distance(coal.Box(0.2, 0.1, 0.05), T1, coal.Box(1.0, 1.0, 0.05), T2,
                        coal.DistanceRequest(), coal.DistanceResult())
    assert c.phi.min() == pytest.approx(ref, abs=1e-7)


def test_sphere_on_box_and_sphere_on_sphere_gaps():
    world = {"ground": None,
             "boxes": [{"name": "table", "size": [1.0, 1.0, 0.1], "position": [0, 0, 0.0]}],
             "objects": [{"name": "a", "shape": "sphere", "radius": 0.1, "mass": 1.0,
                          "position": [0.2, 0.1, 0.05 + 0.1 + 0.004]},
                         {"name": "b", "shape": "sphere", "radius": 0.05, "mass": 1.0,
                          "position": [0.2, 0.1, 0.05 + 0.2 + 0.05 + 0.007]}]}
    det, data, *_ = _objects_only(world)
    c = det.detect(data)
    assert sorted(np.round(c.phi, 9)) == [0.003, 0.004]
    on_table = np.argmin(np.abs(c.phi - 0.004))
    np.testing.assert_allclose(c.p2[on_table], [0.2, 0.1, 0.05], atol=1e-12)
    pair = 1 - on_table
    np.testing.assert_allclose(c.normal[pair], [0.0, 0.0, -1.0], atol=1e-12)  # from b to a


def test_far_objects_are_culled_by_the_broad_phase():
    world = {"boxes": [{"name": "table", "size": [1.0, 1.0, 0.05], "position": [5, 0, 0.5]}],
             "objects": [_box(z=1.0), {"name": "ball", "shape": "sphere", "radius": 0.1,
                                       "mass": 1.0, "position": [2.0, 0.0, 1.0]}]}
    det, data, *_ = _objects_only(world)
    assert len(det.detect(data)) == 0


def test_biped_standing_touches_the_ground_at_its_eight_sole_corners():
    robot = RobotModel.load("biped3d")
    world = parse_world(None)
    gm = pin.buildGeomFromUrdf(robot.model, str(robot.config.urdf_path),
                               pin.GeometryType.COLLISION)
    det = Detector(robot.model, gm, world)
    data = robot.create_data()
    q = robot.standing_configuration()
    pin.framesForwardKinematics(robot.model, data, q)
    c = det.detect(data)
    soles = robot.point_positions(data, q)
    assert len(c) == 8
    np.testing.assert_allclose(np.sort(c.p1, axis=0), np.sort(soles, axis=0), atol=1e-9)
    np.testing.assert_allclose(c.phi, 0.0, atol=1e-9)


def test_sole_studs_are_tangent_to_the_soles_at_the_configured_points():
    """One sphere per configured point, its lowest point along the sole's normal at the point:
    on the standing biped (sole frames on the ankles) the studs touch the ground at the eight
    sole corners with zero gap, as the sole boxes do."""
    robot = RobotModel.load("biped3d")
    studs = sole_studs(robot, 0.003)
    assert collision_model(robot).ngeoms == 15  # the URDF's <collision> tags, none set
    robot.collision_model = studs
    assert collision_model(robot) is studs and studs.ngeoms == robot.n_points == 8
    data = robot.create_data()
    q = robot.standing_configuration()
    pin.framesForwardKinematics(robot.model, data, q)
    gdata = studs.createData()
    pin.updateGeometryPlacements(robot.model, data, studs, gdata)
    soles = robot.point_positions(data, q)
    for k, g in enumerate(studs.geometryObjects):
        assert isinstance(g.geometry, coal.Sphere) and g.geometry.radius == 0.003
        sole_normal = data.oMf[robot.point_frame_ids[k]].rotation[:, 2]
        np.testing.assert_allclose(gdata.oMg[k].translation - 0.003 * sole_normal, soles[k],
                                   atol=1e-12)
    c = Detector(robot.model, studs, parse_world(None)).detect(data)
    assert len(c) == 8
    np.testing.assert_allclose(np.sort(c.p1, axis=0), np.sort(soles, axis=0), atol=1e-9)
    np.testing.assert_allclose(c.phi, 0.0, atol=1e-9)


def test_tilted_plate_studs_each_report_the_gap_of_their_lowest_point():
    """The plate's studs (grid 3) tilted by 0.1 rad about y, 1 mm up: each stud's gap is its
    centre's height minus r and its point on the plate is straight below the centre."""
    from biped_contact_sim.sim.scenarios import PLATE_STUD_RADIUS, get_scenario

    scenario = get_scenario("plate")
    robot = scenario.make_robot(scenario.resolve({"grid": 3}))
    r = PLATE_STUD_RADIUS
    q = robot.configuration([0.0, 0.0, 0.025 + 0.001])
    q[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(0.0, 0.1, 0.0)).coeffs()
    data = robot.create_data()
    pin.framesForwardKinematics(robot.model, data, q)
    c = Detector(robot.model, collision_model(robot), parse_world(None),
                 settings=CollisionSettings(margin=0.05)).detect(data)
    R, t = data.oMi[1].rotation, data.oMi[1].translation
    centres = (robot.contact_bodies[0].offsets + np.array([0.0, 0.0, r])) @ R.T + t
    assert len(c) == 9
    order = np.argsort(c.geom1)
    np.testing.assert_allclose(c.phi[order], centres[:, 2] - r, atol=1e-12)
    np.testing.assert_allclose(c.p1[order], centres - [0.0, 0.0, r], atol=1e-12)


def test_sole_studs_refuse_a_radius_that_is_not_positive():
    robot = RobotModel.load("biped3d")
    for bad in (0.0, -0.01, float("nan"), True, "2mm"):
        with pytest.raises(ConfigError, match=r"stud radius = .*: expected a number > 0 \[m\]"):
            sole_studs(robot, bad)


def test_cylinder_lying_on_the_ground_touches_at_the_two_ends_of_its_lowest_line():
    robot = RobotModel.load("biped3d")
    gm = pin.buildGeomFromUrdf(robot.model, str(robot.config.urdf_path),
                               pin.GeometryType.COLLISION)
    det = Detector(robot.model, gm, parse_world(None))
    data = robot.create_data()
    q = robot.configuration([0.0, 0.0, 0.2])
    q[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(np.pi / 2, 0.0, 0.0)).coeffs()  # on its side
    pin.framesForwardKinematics(robot.model, data, q)
    c = det.detect(data)
    # every body's lowest points with their own gaps, checked against the geometry itself
    for i in range(len(c)):
        g = det.geoms
        a = c.geom1[i]
        if g.kind[a] != 2:
            continue
        oMg = data.oMi[g.joint[a]] * pin.SE3(g.R[a], g.t[a])
        r, h = g.half[a, 0], g.half[a, 2]
        axis = oMg.rotation[:, 2]
        lowest = oMg.translation[2] - r * np.sqrt(1 - axis[2] ** 2) - h * abs(axis[2])
        assert c.phi[i] >= lowest - 1e-9


def test_world_files_load_and_schema_errors_name_the_key():
    for name in available_worlds():
        load_world(name)
    with pytest.raises(ConfigError, match=r"unknown key\(s\) 'colour' in boxes\[0\]"):
        parse_world({"boxes": [{"name": "t", "size": [1, 1, 1], "position": [0, 0, 0],
                                "colour": "red"}]})
    with pytest.raises(ConfigError, match=r"objects\[0\].shape = 'cone'; allowed: box, sphere"):
        parse_world({"objects": [{"name": "c", "shape": "cone", "mass": 1,
                                  "position": [0, 0, 0]}]})
    with pytest.raises(ConfigError, match=r"objects\[0\] \(a cylinder\) needs radius: r, length"):
        parse_world({"objects": [{"name": "c", "shape": "cylinder", "radius": 0.1, "mass": 1,
                                  "position": [0, 0, 0]}]})
    roller = parse_world({"objects": [{"name": "c", "shape": "cylinder", "radius": 0.1,
                                       "length": 0.4, "mass": 2.0, "position": [0, 0, 0]}]})
    # a solid cylinder about its centre: m(3r² + l²)/12 across, m r²/2 along its axis (z)
    np.testing.assert_allclose(np.diag(roller.objects[0].inertia.inertia),
                               [2.0 * (0.03 + 0.16) / 12, 2.0 * (0.03 + 0.16) / 12, 0.01])
    with pytest.raises(ConfigError, match=r"objects\[0\].mass = -1.0 must be a finite number > 0"):
        parse_world({"objects": [_box(mass=-1)]})
    with pytest.raises(ConfigError, match=r"boxes\[0\].size\[1\] = 0.0"):
        parse_world({"boxes": [{"name": "t", "size": [1, 0, 1], "position": [0, 0, 0]}]})
    with pytest.raises(ConfigError, match=r"planes\[0\].normal .* must not be zero"):
        parse_world({"planes": [{"name": "p", "normal": [0, 0, 0]}]})
    with pytest.raises(ConfigError, match=r"name 'ground' is used twice"):
        parse_world({"planes": [{"name": "ground", "normal": [0, 0, 1]}]})
    with pytest.raises(ConfigError, match=r"restitution = 2 must be in \[0, 1\]"):
        parse_world({"materials": {"default": {"mu": 0.5, "restitution": 2}}})
    # a per-material e that no model would apply is refused, naming the models that have one
    with pytest.raises(ConfigError, match=r"pairs\[0\].restitution = 0.5: .*gauss_seidel or "
                                          r"acceleration_lcp"):
        parse_world({"materials": {"pairs": [{"between": ["a", "b"], "mu": 0.5,
                                              "restitution": 0.5}]}})
    assert parse_world({"materials": {"default": {"mu": 0.5, "restitution": 0}}}) is not None
    with pytest.raises(ConfigError, match=r"Unknown world: 'nowhere'. Valid names: "):
        load_world("nowhere")


def test_material_pairs_and_default():
    world = parse_world({"materials": {"default": {"mu": 0.7},
                                       "pairs": [{"between": ["ice", "robot"], "mu": 0.05}]}})
    assert world.law("robot", "ice").mu == 0.05 and world.law("ice", "robot").mu == 0.05
    assert world.law("robot", "wood").mu == 0.7
    assert parse_world({}, mu=0.3).law("a", "b").mu == 0.3


def test_compiled_box_plane_contacts_equal_a_numpy_reference_on_pinocchio_placements():
    """Every box geometry of the biped against the ground, at random configurations near it:
    the compiled detector's points and gaps equal the numpy reference on pinocchio's own
    geometry placements (``updateGeometryPlacements``: the 8 vertices, gap = z, kept when
    ≤ margin) to 1e-10, and the placements it reads follow the Data after each computation."""
    robot = RobotModel.load("biped3d")
    model, margin = robot.model, 0.01
    gm = pin.buildGeomFromUrdf(model, str(robot.config.urdf_path), pin.GeometryType.COLLISION)
    gdata = gm.createData()
    det = Detector(model, gm, parse_world(None), (), CollisionSettings(margin))
    data = robot.create_data()
    rng = np.random.default_rng(3)
    signs = np.array([(sx, sy, sz) for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
    checked = 0
    for _ in range(8):
        q = robot.standing_configuration()
        q[7:] += rng.uniform(-0.4, 0.4, model.nq - 7)
        q[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(*rng.uniform(-0.6, 0.6, 3))).coeffs()
        pin.forwardKinematics(model, data, q)
        pin.updateGeometryPlacements(model, data, gm, gdata)
        lowest = min((gdata.oMg[k].act(s * g.geometry.halfSide)[2] for k, g in
                      enumerate(gm.geometryObjects) if isinstance(g.geometry, coal.Box)
                      for s in signs))
        q[2] += 0.003 - lowest  # the lowest vertex 3 mm into the ground
        pin.forwardKinematics(model, data, q)
        pin.updateGeometryPlacements(model, data, gm, gdata)
        R, t = det.placements(data)
        for j in range(model.njoints):
            np.testing.assert_array_equal(R[j], data.oMi[j].rotation)
            np.testing.assert_array_equal(t[j], data.oMi[j].translation)
        ref = sorted((k, *p) for k, g in enumerate(gm.geometryObjects)
                     if isinstance(g.geometry, coal.Box)
                     for p in (gdata.oMg[k].act(s * g.geometry.halfSide) for s in signs)
                     if p[2] <= margin)
        c = det.detect(data)
        box = np.array([isinstance(gm.geometryObjects[int(k)].geometry, coal.Box) for k in c.geom1],
                       dtype=bool)
        got = sorted((k, *p) for k, p in zip(c.geom1[box], c.p1[box], strict=True))
        assert len(got) == len(ref) > 0
        np.testing.assert_allclose(np.array(got), np.array(ref), atol=1e-10, rtol=0)
        np.testing.assert_allclose(c.phi[box], c.p1[box, 2], atol=1e-10, rtol=0)
        checked += len(ref)
    assert checked >= 8


FIELDS = ("body1", "body2", "ids", "geom1", "other", "on_ground", "p1", "p2", "normal", "phi",
          "mu", "restitution", "frames", "local1", "local2", "p_tangent")


def _check_finish(c, ref):
    for name in FIELDS:
        got, want = getattr(c, name), ref[name]
        assert got.shape == want.shape and got.dtype == want.dtype, name
        np.testing.assert_allclose(got, want, atol=1e-10, rtol=0, err_msg=name)


def test_finish_kernel_equals_the_numpy_reference_on_random_rows():
    """The contact set's two arrays (``Contacts.floats``, ``Contacts.ints``) from random work rows
    (bodies, points, unit normals, anchors, materials) at random joint placements: every field
    equals ``finish_reference`` to 1e-10."""
    robot = RobotModel.load("biped3d")
    model = robot.model
    data = robot.create_data()
    det = Detector(model, collision_model(robot), parse_world(None))
    rng = np.random.default_rng(11)
    for n in (0, 1, 13):
        q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
        pin.forwardKinematics(model, data, q)
        R, t = det.placements(data)
        work = _alloc(16)
        work[0][:n] = rng.integers(0, model.njoints, n)
        work[1][:n] = rng.integers(0, model.njoints, n)
        for k in (2, 3, 8):
            work[k][:n] = rng.standard_normal((n, 3))
        normal = rng.standard_normal((n, 3))
        normal[: n // 3, :2] = 0.0  # some along ±z, and one along x
        if n:
            normal[-1] = (-1.0, 0.0, 0.0)
        work[4][:n] = normal / np.linalg.norm(normal, axis=1)[:, None]
        work[5][:n] = rng.uniform(-0.01, 0.01, n)
        work[6][:n] = rng.integers(0, 10**6, n)
        work[7][:n] = rng.uniform(0.1, 1.0, n)
        e_table = rng.uniform(0.0, 1.0, (3, 3))
        geom_mat = rng.integers(0, 3, 5)
        feature_mat = rng.integers(0, 3, 7)
        work[9][:n] = rng.integers(0, 5, n)
        work[10][:n] = rng.integers(0, 7, n)
        floats, ints = finish_kernel(n, *work[:-1], R, t, e_table, geom_mat, feature_mat, 2)
        c = type(det.detect(data))(floats, ints, tuple(model.names))
        assert len(c) == n
        _check_finish(c, finish_reference(n, work, R, t, e_table, geom_mat, feature_mat, 2))


@pytest.mark.parametrize("case", ["biped", "stack"])
def test_detection_equals_the_numpy_reference_on_captured_sets(case):
    """Captured contact sets (the biped standing tilted on the ground; a box on a box on a
    table, with moving body 2): the compiled set equals ``finish_reference`` of the detector's
    own work rows to 1e-10, and a set stays as it was after later detections (fresh arrays)."""
    if case == "biped":
        robot = RobotModel.load("biped3d")
        model, world, joints = robot.model, parse_world(None), ()
        det = Detector(model, collision_model(robot), world, joints)
        data = robot.create_data()
        q = robot.standing_configuration()
        q[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(0.02, -0.03, 0.3)).coeffs()
        moved = q.copy()
        moved[2] += 0.2
    else:
        spec = {"boxes": [{"name": "table", "size": [0.5, 0.5, 0.1], "position": [0, 0, 0.05]}],
                "objects": [_box("low", z=0.1249, rpy=(0.0, 0.0, 0.2)),
                            _box("top", z=0.1748, rpy=(0.01, -0.01, 0.5))]}
        det, data, world, model = _objects_only(spec)
        q = object_state(world)[0]
        moved = q.copy()
        moved[2] += 0.05
    pin.forwardKinematics(model, data, q)
    c = det.detect(data)
    assert len(c) >= 4
    if case == "stack":
        assert (c.body2 != 0).any() and (c.body2 == 0).any()
    R, t = det.placements(data)
    ref = finish_reference(len(c), det._out, R, t, det.e_table, det.geoms.material,
                           det._feature_mat, det._ground)
    _check_finish(c, ref)
    kept = {name: np.array(getattr(c, name)) for name in FIELDS}
    pin.forwardKinematics(model, data, moved)
    assert len(det.detect(data)) < len(c)
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(c, name), kept[name])
