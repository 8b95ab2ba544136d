"""The 3-D replay in a real browser: headless Chromium loads ``replay.html`` (no network), a
screenshot is taken into the run folder, and the robot must be drawn where it stands."""

import shutil
import subprocess

import numpy as np
import pytest

from biped_contact_sim.cli import main as cli

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(n)), None)
WIDTH, HEIGHT = 1000, 700


def screenshot(html, png):
    """Render ``html`` with headless Chromium (software WebGL) into ``png``."""
    argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
            "--enable-unsafe-swiftshader", "--use-angle=swiftshader", "--hide-scrollbars",
            f"--window-size={WIDTH},{HEIGHT}", "--virtual-time-budget=3000",
            f"--screenshot={png}", html.as_uri()]
    try:
        subprocess.run(argv, check=True, capture_output=True, timeout=120)
    except subprocess.TimeoutExpired:  # a loaded machine can stall Chromium's start: once more
        subprocess.run(argv, check=True, capture_output=True, timeout=240)
    from matplotlib.image import imread

    return imread(png)[:, :, :3]


@pytest.fixture(scope="module")
def stand_replay(tmp_path_factory):
    out = tmp_path_factory.mktemp("replay")
    code = cli.main(["-q", "run", "stand", "--duration", "0.2", "--no-plots", "--out", str(out)])
    assert code == 0
    return out


def test_replay_is_self_contained(stand_replay):
    html = (stand_replay / "replay.html").read_text()
    assert "MeshCat.Viewer" in html
    for remote in ("http://", "https://", "src=\"//"):
        # the page loads nothing: the viewer script and the scene are inline
        assert f"<script src=\"{remote}" not in html
    assert "stand / penalty_fl / wbc" in html


def test_replay_draws_the_robot_in_chromium(stand_replay):
    if CHROMIUM is None:
        print("SKIPPED: no Chromium on this machine (Debian: apt-get install chromium); "
              "the replay was written but not rendered")
        pytest.skip("Chromium is not installed")
    image = screenshot(stand_replay / "replay.html", stand_replay / "replay.png")
    assert image.shape[:2] == (HEIGHT, WIDTH)
    # The robot (translucent blue, replay.ROBOT_RGBA) stands at the centre of the view, on the
    # grey ground, in front of a white-to-grey background: robot pixels are the blue ones.
    r, b = image[..., 0], image[..., 2]
    robot = b - r > 0.15
    centre = robot[HEIGHT // 8: 3 * HEIGHT // 4, 2 * WIDTH // 5: 3 * WIDTH // 5]
    assert centre.mean() > 0.05, "no robot-coloured pixels at the centre of the view"
    # and not everywhere: the background is not robot-coloured
    border = np.concatenate([robot[:, :WIDTH // 5].ravel(), robot[:, -WIDTH // 5:].ravel()])
    assert border.mean() < 0.2 * centre.mean()


def test_live_view_serves_the_scene_and_follows_the_run():
    """--view: a local meshcat server that a browser can load; every sample reaches it."""
    import urllib.request

    from biped_contact_sim.record.replay import LiveView
    from biped_contact_sim.session.runner import run_scenario

    result = run_scenario("ball", duration=0.01)
    view = LiveView(result.robot, result.sim.terrain, result.samples[0].step.q)
    try:
        with urllib.request.urlopen(view.url, timeout=30) as page:
            assert page.status == 200 and b"meshcat" in page.read().lower()
        for sample in result.samples:
            view._last = -1e9  # no frame skipped: every sample is sent
            view.frame(sample)
    finally:
        view.close()
    assert view.server.poll() is not None  # the server is gone
