"""3-D view of a run in the browser: ``replay.html`` (offline, self-contained), ``--view`` (live).

Both are built with pinocchio's ``MeshcatVisualizer`` on meshcat (three.js in the browser): the
robot's URDF visuals placed by pinocchio's forward kinematics, the world's shapes
(:func:`world_shapes`), and per sample the contact force arrows, the feet's CoPs, the ZMP and the
support polygon.

* ``replay.html``: meshcat's own viewer script and the scene's commands (msgpack, base64) in one
  file. The motion is a three.js animation clip per object (position, quaternion, scale tracks
  over simulated time), played by meshcat's animation panel (play, pause, reset, time slider,
  speed). Frames are taken at ``REPLAY_FPS`` of simulated time and kept in a bounded, evenly
  decimated buffer, so a long run gives a file of bounded size.
* :class:`LiveView`: a meshcat server (a subprocess, :mod:`.view_server`: on 127.0.0.1 unless
  asked otherwise, ended with the run) that the browser connects to; each recorded sample
  updates the scene, at most ``LIVE_FPS`` times per second of wall time.

Overlays, as in the ``contact_markers`` of the ROS topics: forces red (length = force / weight ×
``FORCE_LENGTH_PER_WEIGHT``), CoPs orange, ZMP magenta, support polygon green.
"""

from __future__ import annotations

import base64
import html
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from biped_contact_sim.record import view_server
from biped_contact_sim.record.buffer import DecimatingBuffer
from biped_contact_sim.record.inputs import RecordedSample
from biped_contact_sim.robot import RobotModel

if TYPE_CHECKING:
    from biped_contact_sim.sim.terrain import PlaneTerrain
    from biped_contact_sim.sim.world import World

REPLAY_FPS = 30.0  # frames per simulated second in replay.html
REPLAY_MAX_FRAMES = 2048  # beyond, frames are evenly decimated (68 s at full rate)
LIVE_FPS = 30.0  # live updates per wall-clock second
LIVE_TIMEOUT = 5.0  # [s] a live update may wait for the meshcat server
FORCE_LENGTH_PER_WEIGHT = 1.0  # [m] arrow length of a force equal to the robot's weight
GROUND_SIZE = 4.0  # [m] side of the drawn ground square
GROUND_THICKNESS = 0.01  # [m]
MAX_POLYGON_EDGES = 16
HIDDEN_SCALE = 1e-6  # objects not shown in a frame are shrunk to nothing
FORCE_RGB, COP_RGB, ZMP_RGB, POLYGON_RGB = 0xE61A1A, 0xFF9900, 0xCC00CC, 0x1ACC1A
GROUND_RGBA = (0.75, 0.75, 0.72, 1.0)
BOX_RGBA = (0.62, 0.5, 0.38, 1.0)  # static boxes of a world file (tables, steps)
OBJECT_RGBA = (0.85, 0.65, 0.2, 1.0)  # its free objects
ROBOT_RGBA = (0.45, 0.6, 0.85, 0.75)  # translucent: the CoPs under the soles stay visible
ROBOT_ROOT = "robot"
E_Y = np.array([0.0, 1.0, 0.0])  # axis of three.js cylinders


@dataclass(frozen=True)
class WorldShape:
    """A fixed shape of the world, drawn as it is.

    Attributes:
        name: Unique name (scene path ``world/<name>``).
        kind: ``box`` (size = three side lengths), ``sphere`` (radius) or ``cylinder`` (length,
            radius; axis z of the placement).
        size: As ``kind`` says [m].
        placement: 4×4 world placement of the shape's centre.
        rgba: Colour and opacity.
    """

    name: str
    kind: str
    size: tuple[float, ...]
    placement: np.ndarray
    rgba: tuple[float, float, float, float] = GROUND_RGBA


def _plane_square(name: str, R: np.ndarray, point: np.ndarray,
                  centre: np.ndarray | None) -> WorldShape:
    """A plane (frame R = [t₁ t₂ n] through ``point``) drawn as a thin square box whose top
    face is the plane, centred under ``centre`` projected onto it."""
    origin = np.asarray(point, float)
    if centre is not None:  # project the centre onto the plane
        origin = origin + R[:, :2] @ (R[:, :2].T @ (np.asarray(centre, float) - origin))
    placement = np.eye(4)
    placement[:3, :3] = R
    placement[:3, 3] = origin - 0.5 * GROUND_THICKNESS * R[:, 2]
    return WorldShape(name, "box", (GROUND_SIZE, GROUND_SIZE, GROUND_THICKNESS), placement)


def world_shapes(terrain: PlaneTerrain, centre: np.ndarray | None = None,
                 world: World | None = None) -> list[WorldShape]:
    """The fixed shapes of the world: its planes (thin boxes whose top face is the plane:
    the ground, tilted with a ramp) and its static boxes (tables, panels, steps), then any
    ``terrain.shapes``. Without a world file: the terrain's ground plane.

    Args:
        terrain: The ground (used when ``world`` is None).
        centre: Point of the plane the ground square is centred under (default the origin).
        world: The geometry contacts' world (``Simulator.world``), or None.
    """
    if world is None:
        shapes = [_plane_square("ground", terrain.R, np.array([0.0, 0.0, terrain.height]),
                                centre)]
    else:
        shapes = [_plane_square(p.name, p.R, p.point, centre) for p in world.planes]
        for box in world.boxes:
            shapes.append(WorldShape(f"box/{box.name}", "box", tuple(float(x) for x in box.size),
                                     box.pose.homogeneous, BOX_RGBA))
    return shapes + list(getattr(terrain, "shapes", ()))


class ObjectPoses:
    """The world's free objects: their shapes (``world/objects/<name>``) and per-sample
    placements from the step's free-object state (``StepResult.q_objects``: position and
    quaternion x y z w per object)."""

    def __init__(self, world: World | None):
        objects = world.objects if world is not None else ()
        self.shapes = [WorldShape(f"objects/{o.name}", o.shape, _object_size(o), np.eye(4),
                                  OBJECT_RGBA) for o in objects]
        self.paths = [f"world/{shape.name}" for shape in self.shapes]

    def create(self, vis) -> None:
        for shape, path in zip(self.shapes, self.paths, strict=True):
            geometry, _ = _meshcat_shape(shape)
            vis[path].set_object(geometry, _material(_rgb(shape.rgba), shape.rgba[3]))

    def poses(self, q_objects: np.ndarray) -> np.ndarray:
        """(objects, 10) position, quaternion (x, y, z, w) and scale (1)."""
        out = np.ones((len(self.paths), 10))
        if len(self.paths):
            q = np.asarray(q_objects, float).reshape(len(self.paths), 7)
            out[:, :7] = q
        return out


def _object_size(obj) -> tuple[float, ...]:
    """A free object's ``WorldShape`` size: box (x, y, z), sphere (r,), cylinder (length, r)."""
    if obj.shape == "box":
        return tuple(float(x) for x in obj.size)
    if obj.shape == "cylinder":
        return float(obj.length), float(obj.radius)
    return (float(obj.radius),)


def _meshcat_shape(shape: WorldShape):
    import meshcat.geometry as mg

    if shape.kind == "box":
        return mg.Box(list(shape.size)), np.eye(4)
    if shape.kind == "sphere":
        return mg.Sphere(shape.size[0]), np.eye(4)
    if shape.kind == "cylinder":  # three.js cylinders lie along y: turn y onto z
        turn = np.eye(4)
        turn[:3, :3] = pin.utils.rotate("x", np.pi / 2)
        return mg.Cylinder(shape.size[0], shape.size[1]), turn
    raise ValueError(f"world shape {shape.name!r}: kind {shape.kind!r} is not box, sphere or "
                     "cylinder")


def _material(rgb: int, opacity: float = 1.0):
    import meshcat.geometry as mg

    material = mg.MeshLambertMaterial(color=rgb)
    if opacity < 1.0:
        material.transparent, material.opacity = True, opacity
    return material


def _rgb(rgba) -> int:
    return int(rgba[0] * 255) << 16 | int(rgba[1] * 255) << 8 | int(rgba[2] * 255)


class Overlays:
    """Object paths of the contact overlays of a robot and their poses per sample."""

    def __init__(self, robot: RobotModel, terrain: PlaneTerrain):
        self.robot, self.terrain = robot, terrain
        self.n_points = robot.n_points
        self.feet = [b.name for b in robot.contact_bodies]
        self.n_edges = min(self.n_points, MAX_POLYGON_EDGES)
        gravity = float(np.linalg.norm(robot.model.gravity.linear))
        self.force_scale = FORCE_LENGTH_PER_WEIGHT / (robot.mass * gravity)
        self.paths = ([f"contact/force/{i}" for i in range(self.n_points)]
                      + [f"contact/cop/{foot}" for foot in self.feet] + ["contact/zmp"]
                      + [f"contact/support_polygon/{i}" for i in range(self.n_edges)])

    def create(self, vis) -> None:
        """Create the overlay objects in a meshcat visualizer (unit sizes, hidden)."""
        import meshcat.geometry as mg

        for i in range(self.n_points):
            vis[f"contact/force/{i}"].set_object(mg.Cylinder(1.0, 0.006), _material(FORCE_RGB))
        for foot in self.feet:
            vis[f"contact/cop/{foot}"].set_object(mg.Sphere(0.015), _material(COP_RGB))
        vis["contact/zmp"].set_object(mg.Sphere(0.02), _material(ZMP_RGB))
        for i in range(self.n_edges):
            vis[f"contact/support_polygon/{i}"].set_object(mg.Cylinder(1.0, 0.004),
                                                          _material(POLYGON_RGB))

    def poses(self, sample: RecordedSample) -> np.ndarray:
        """(objects, 10) position, quaternion (x, y, z, w) and scale of every overlay object
        (order of ``paths``) for one sample."""
        step, obs = sample.step, sample.obs
        out = np.zeros((len(self.paths), 10))
        out[:, 6] = 1.0  # identity quaternion
        out[:, 7:] = HIDDEN_SCALE
        k = 0
        shown: np.ndarray | range = range(self.n_points)
        if step.contacts is not None:  # geometry contacts: the n_points largest forces
            shown = np.argsort(-np.linalg.norm(step.f_world, axis=1))[:self.n_points]
        for i in shown:
            f = step.f_world[i] * self.force_scale
            if step.active[i] and np.linalg.norm(f) > 1e-4:
                out[k] = _segment(step.p[i], step.p[i] + f, 1.0)
            k += 1
        k = self.n_points
        for foot in obs.feet:
            if foot.cop is not None:
                out[k, :3], out[k, 7:] = foot.cop, 1.0
            k += 1
        if obs.zmp is not None:
            out[k, :3], out[k, 7:] = obs.zmp, 1.0
        k += 1
        poly = obs.support_polygon
        if len(poly) >= 2:
            origin = np.array([0.0, 0.0, self.terrain.height])
            world = origin + poly @ self.terrain.R[:, :2].T + 1e-3 * self.terrain.normal
            edges = len(world) if len(world) > 2 else 1
            for e in range(min(edges, self.n_edges)):
                out[k + e] = _segment(world[e], world[(e + 1) % len(world)], 1.0)
        return out


def _segment(a: np.ndarray, b: np.ndarray, width: float) -> np.ndarray:
    """Pose of a unit cylinder (along y) stretched from a to b: position, quaternion, scale."""
    d = b - a
    length = float(np.linalg.norm(d))
    out = np.zeros(10)
    out[:3] = 0.5 * (a + b)
    out[3:7] = pin.Quaternion.FromTwoVectors(E_Y, d / length).coeffs() if length > 0 \
        else (0.0, 0.0, 0.0, 1.0)
    out[7:] = (width, max(length, HIDDEN_SCALE), width)
    return out


class RobotPoses:
    """World placements of the robot's URDF visuals (pinocchio geometry placements)."""

    def __init__(self, robot: RobotModel):
        self.model = robot.model
        self.data = robot.create_data()
        self.visual_model = pin.buildGeomFromUrdf(self.model, str(robot.config.urdf_path),
                                                  pin.GeometryType.VISUAL)
        self.visual_data = pin.GeometryData(self.visual_model)
        self.paths = [f"{ROBOT_ROOT}/visuals/{g.name}" for g in
                      self.visual_model.geometryObjects]

    def poses(self, q: np.ndarray) -> np.ndarray:
        """(visuals, 10) position, quaternion (x, y, z, w) and scale (the mesh scale)."""
        pin.forwardKinematics(self.model, self.data, q)
        pin.updateGeometryPlacements(self.model, self.data, self.visual_model, self.visual_data)
        out = np.empty((len(self.paths), 10))
        for i, (g, M) in enumerate(zip(self.visual_model.geometryObjects,
                                       self.visual_data.oMg, strict=True)):
            out[i, :3] = M.translation
            out[i, 3:7] = pin.Quaternion(M.rotation).coeffs()
            out[i, 7:] = g.meshScale
        return out


def build_scene(vis, robot: RobotModel, terrain: PlaneTerrain, poses: RobotPoses,
                overlays: Overlays, centre: np.ndarray | None = None,
                world: World | None = None, objects: ObjectPoses | None = None) -> None:
    """Put the robot, the world shapes, the free objects and the overlay objects into a
    meshcat visualizer."""
    from pinocchio.visualize import MeshcatVisualizer

    viz = MeshcatVisualizer(robot.model, None, poses.visual_model)
    viz.initViewer(viewer=vis)
    viz.loadViewerModel(rootNodeName=ROBOT_ROOT, visual_color=list(ROBOT_RGBA))
    vis["/Grid"].set_property("visible", False)  # the world's own ground replaces them
    vis["/Axes"].set_property("visible", False)
    vis["/Background"].set_property("top_color", [1.0, 1.0, 1.0])  # plain: the overlays read
    vis["/Background"].set_property("bottom_color", [0.85, 0.86, 0.88])
    for shape in world_shapes(terrain, centre, world):
        geometry, local = _meshcat_shape(shape)
        node = vis[f"world/{shape.name}"]
        node.set_object(geometry, _material(_rgb(shape.rgba), shape.rgba[3]))
        node.set_transform(shape.placement @ local)
    if objects is not None:
        objects.create(vis)
    overlays.create(vis)
    # The camera orbits the scene origin; it stands in front of the robot, to its left and
    # above (the camera node's axes are three.js's: y up), 2 m away: a 1 m robot fills the view.
    vis["/Cameras/default"].set_transform(pin.SE3(np.eye(3), np.array(
        [0.0 if centre is None else centre[0], 0.0, 0.45])).homogeneous)
    vis["/Cameras/default/rotated/<object>"].set_property("position", [1.7, 0.5, 1.2])


def _pose_matrix(pose: np.ndarray) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = pin.Quaternion(pose[6], *pose[3:6]).toRotationMatrix() * pose[7:]
    T[:3, 3] = pose[:3]
    return T


class ReplayRecorder:
    """Collects frames during a run and writes ``replay.html`` at the end.

    Frames are taken every 1/``REPLAY_FPS`` s of simulated time (and the last sample); at most
    ``REPLAY_MAX_FRAMES`` are kept (evenly decimated beyond). A frame is the time, q and the
    overlay poses: ~1.5 kB for the biped.
    """

    def __init__(self, robot: RobotModel, terrain: PlaneTerrain, world: World | None = None):
        self.robot, self.terrain, self.world = robot, terrain, world
        self.overlays = Overlays(robot, terrain)
        self.objects = ObjectPoses(world)
        self.frames = DecimatingBuffer(REPLAY_MAX_FRAMES)
        self._next_t = -np.inf
        self._last: tuple | None = None

    def add(self, sample: RecordedSample) -> None:
        """Offer a recorded sample (kept at the replay rate)."""
        t = sample.step.t
        if t >= self._next_t:
            self._next_t = t + 1.0 / REPLAY_FPS - 1e-9
            self.frames.append(self._frame(sample))
            self._last = None
        else:
            self._last = sample  # so that the replay ends where the run ended (one sample)

    def _frame(self, sample: RecordedSample) -> tuple:
        overlays = self.overlays.poses(sample)
        if self.objects.paths:  # the free objects' placements ride with the overlays
            overlays = np.vstack([self.objects.poses(sample.step.q_objects), overlays])
        return (sample.step.t, sample.step.q.astype(np.float32), overlays.astype(np.float32))

    def write(self, path: Path, title: str = "") -> Path:
        """Write the self-contained ``replay.html``.

        Returns:
            ``path``.
        """
        frames = list(self.frames) + ([self._frame(self._last)] if self._last is not None
                                      else [])
        poses = RobotPoses(self.robot)
        centre = None
        if frames:
            centre = poses.poses(frames[0][1].astype(float))[0, :3]
        window = _RecordingWindow()
        vis = _recording_visualizer(window)
        build_scene(vis, self.robot, self.terrain, poses, self.overlays, centre, self.world,
                    self.objects)
        if frames:
            times = np.array([f[0] for f in frames], np.float32)
            robot_poses = np.array([poses.poses(f[1].astype(float)) for f in frames])
            overlay_poses = np.array([f[2] for f in frames])
            overlay_paths = self.objects.paths + self.overlays.paths
            for paths, values in ((poses.paths, robot_poses),
                                  (overlay_paths, overlay_poses)):
                for i, p in enumerate(paths):  # initial pose, for viewers that do not animate
                    vis[p].set_transform(_pose_matrix(values[0, i].astype(float)))
            animations = [_clip(p, times, robot_poses[:, i]) for i, p in enumerate(poses.paths)]
            animations += [_clip(p, times, overlay_poses[:, i])
                           for i, p in enumerate(overlay_paths)]
            window.add({"type": "set_animation", "path": "",
                        "animations": animations,
                        "options": {"play": True, "repetitions": 1,
                                    "clampWhenFinished": True}})
        Path(path).write_text(_html(window.commands, title, len(frames),
                                    float(frames[-1][0]) if frames else 0.0))
        return Path(path)


def _clip(path: str, times: np.ndarray, values: np.ndarray) -> dict[str, Any]:
    """A three.js animation clip (times in seconds: fps 1) of an object's pose tracks."""
    from meshcat.geometry import pack_numpy_array

    def track(name: str, kind: str, v: np.ndarray) -> dict[str, Any]:
        return {"name": name, "type": kind,
                "times": pack_numpy_array(times)["array"],
                "values": pack_numpy_array(np.ascontiguousarray(v, np.float32).ravel())["array"]}

    return {"path": "/meshcat/" + path, "clip": {"fps": 1.0, "name": "default", "tracks": [
        track(".position", "vector3", values[:, :3]),
        track(".quaternion", "quaternion", values[:, 3:7]),
        track(".scale", "vector3", values[:, 7:])]}}


class _RecordingWindow:
    """Stands in for meshcat's connection to its server: keeps the commands, in order, for a
    static page (a later ``set_transform`` of a path replaces the earlier one)."""

    def __init__(self) -> None:
        self.commands: dict[tuple[str, str, int], bytes] = {}
        self._count = 0

    def send(self, command) -> None:
        self.add(command.lower())

    def add(self, data: dict[str, Any]) -> None:
        import umsgpack

        key = (data["type"], data.get("path", ""),
               self._count if data["type"] in ("set_property", "set_animation") else 0)
        self._count += 1
        self.commands.pop(key, None)  # re-insert: a replaced command moves to the end
        self.commands[key] = umsgpack.packb(data)


def _recording_visualizer(window: _RecordingWindow):
    from meshcat import Visualizer

    return Visualizer(window=window)


def _html(commands: dict[Any, bytes], title: str, n_frames: int, end: float) -> str:
    """The page: meshcat's viewer script, the commands decoded in order, a legend."""
    import meshcat

    script = (Path(meshcat.__file__).parent / "viewer" / "dist" / "main.min.js").read_text()
    calls = "\n".join(f'run("{base64.b64encode(c).decode()}");' for c in commands.values())
    legend = (f"<b>{html.escape(title)}</b><br>{n_frames} frames, 0 – {end:.3f} s simulated; "
              "Open Controls → Animations for play / pause / time.<br>"
              "<span style='color:#e61a1a'>■</span> contact forces "
              "<span style='color:#ff9900'>●</span> CoP "
              "<span style='color:#cc00cc'>●</span> ZMP "
              "<span style='color:#1acc1a'>■</span> support polygon")
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{html.escape(title)} – biped_contact_sim replay</title>
<style>body {{margin: 0;}} #meshcat-pane {{width: 100vw; height: 100vh; overflow: hidden;}}
#legend {{position: absolute; left: 8px; bottom: 8px; font: 13px sans-serif; color: #222;
background: rgba(255,255,255,0.8); padding: 6px 8px; border-radius: 4px;}}</style>
</head><body><div id="meshcat-pane"></div><div id="legend">{legend}</div>
<script>{script}</script>
<script>
var viewer = new MeshCat.Viewer(document.getElementById("meshcat-pane"));
function run(b64) {{
  var s = atob(b64), a = new Uint8Array(s.length);
  for (var i = 0; i < s.length; i++) a[i] = s.charCodeAt(i);
  viewer.handle_command_bytearray(a);
}}
{calls}
</script></body></html>
"""


class LiveView:
    """``--view``: a meshcat server showing the run as it goes, on this machine only unless
    ``address`` says otherwise, and ended with the run (:mod:`.view_server`).

    Starts the server, prints its address (opened in a browser only with ``open_browser``: a
    headless machine has none to open) and updates the scene with every recorded sample, at
    most ``LIVE_FPS`` times per wall second. A server that stops answering (killed, hung) turns
    the view off with a warning instead of blocking the run.
    """

    def __init__(self, robot: RobotModel, terrain: PlaneTerrain, q0: np.ndarray,
                 open_browser: bool = False, world: World | None = None,
                 address: str = view_server.DEFAULT_ADDRESS):
        import zmq
        from meshcat import Visualizer

        self.server, zmq_url, _ = view_server.start_server(address)
        try:
            self.vis = Visualizer(zmq_url=zmq_url)  # connects and prints the web address
            sys.stdout.flush()  # now, also when stdout is a pipe or a file
            socket = self.vis.window.zmq_socket
            socket.setsockopt(zmq.RCVTIMEO, int(1000 * LIVE_TIMEOUT))
            socket.setsockopt(zmq.SNDTIMEO, int(1000 * LIVE_TIMEOUT))
            socket.setsockopt(zmq.LINGER, 0)
            self.poses = RobotPoses(robot)
            self.overlays = Overlays(robot, terrain)
            self.objects = ObjectPoses(world)
            build_scene(self.vis, robot, terrain, self.poses, self.overlays,
                        self.poses.poses(q0)[0, :3], world, self.objects)
        except BaseException:
            view_server.stop_server(self.server)
            raise
        self._paths = self.poses.paths + self.objects.paths + self.overlays.paths
        self._last = -np.inf
        self._no_answer = zmq.ZMQError  # zmq.Again: no answer within LIVE_TIMEOUT
        self.warning: str | None = None  # why the view stopped early
        if open_browser:
            self.vis.open()

    @property
    def url(self) -> str:
        return self.vis.url()

    def frame(self, sample: RecordedSample) -> None:
        """Show a sample, unless the last update was less than 1/``LIVE_FPS`` s ago."""
        now = time.perf_counter()
        if self.vis is None or now - self._last < 1.0 / LIVE_FPS:
            return
        self._last = now
        poses = np.vstack([self.poses.poses(sample.step.q),
                           self.objects.poses(sample.step.q_objects),
                           self.overlays.poses(sample)])
        try:
            for p, pose in zip(self._paths, poses, strict=True):
                self.vis[p].set_transform(_pose_matrix(pose))
        except self._no_answer as exc:
            self.warning = (f"--view stopped at t = {sample.step.t:.3f} s: the meshcat "
                            f"server did not answer ({exc})")
            self.close()

    def close(self) -> None:
        """Stop the server and drop the connection; idempotent."""
        if self.vis is not None:
            self.vis.window.zmq_socket.close(linger=0)
            self.vis = None
        view_server.stop_server(self.server)
