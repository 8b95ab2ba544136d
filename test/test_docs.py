"""The documentation: its example runs and tells the truth, its sections exist where the code
cites them, and nothing points outside the repository."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def python_api_examples() -> list[str]:
    """The ``python`` code blocks of docs/python_api.md, as printed."""
    text = (ROOT / "docs" / "python_api.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, re.S)


def run_example(code: str) -> str:
    """Run an example in a fresh interpreter; its stdout (stderr shown if it fails)."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return done.stdout


#: the page's examples in order: a session run, a session built and stepped, the simulator's
#: objects, a controller
RUN, BUILD, OBJECTS, CONTROLLER = range(4)


def test_python_api_session_examples_run_and_tell_the_truth():
    examples = python_api_examples()
    out = run_example(examples[RUN])
    outcome, steps = re.search(r"^(\w+) (\d+) steps,", out, re.M).groups()
    assert outcome == "completed" and int(steps) == 200  # 0.2 s at drop's 1 ms
    assert float(re.search(r"max penetration ([\d.]+) mm", out).group(1)) > 0.0
    t, fn = map(float, re.search(r"t = ([\d.]+) s, normal force ([\d.]+) N",
                                 run_example(examples[BUILD])).groups())
    assert t == pytest.approx(0.1) and fn > 100.0  # standing: the soles carry its weight


def test_python_api_example_runs_and_the_feet_carry_the_weight():
    out = run_example(python_api_examples()[OBJECTS])
    carried, weight = map(float, re.search(r"feet carry ([\d.]+) N of ([\d.]+) N", out).groups())
    # at rest on the ground half a second after a 2 cm drop: Σ f_n = m g
    assert carried == pytest.approx(weight, rel=0.02)
    assert "ZMP [" in out


def test_python_api_controller_example_runs_and_refuses_a_nan():
    examples = python_api_examples()
    assert len(examples) == 4  # the sessions', the simulator's and the controller's, each
    out = run_example(examples[CONTROLLER])  # tested here
    torques = re.search(r"torques \[N·m\]: \[([^\]]*)\]", out).group(1).split()
    assert len(torques) == 14 and any(abs(float(x)) > 1.0 for x in torques)  # it holds a weight
    assert "refused: measurement.v[6] = nan must be finite" in out


def cited_sections():
    """``docs/methods.md §N`` citations in the package, as section numbers."""
    found = set()
    for path in (ROOT / "biped_contact_sim").rglob("*.py"):
        for match in re.finditer(r"docs/methods\.md §([\d.–-]+\d)", path.read_text()):
            first = re.split("[–-]", match.group(1))[0]
            found.add(first)
    return sorted(found)


@pytest.mark.parametrize("section", cited_sections())
def test_every_cited_section_of_methods_exists(section):
    headings = re.findall(r"^#+ ([\d.]+) ", (ROOT / "docs" / "methods.md").read_text(), re.M)
    assert section in headings


def test_architecture_has_the_cited_sections():
    text = (ROOT / "docs" / "architecture.md").read_text()
    for match in set(re.findall(r'docs/architecture\.md "([^"]+)"',
                                "\n".join(p.read_text() for p in
                                          (ROOT / "biped_contact_sim").rglob("*.py")))):
        assert f"## {match}" in text, match


def test_nothing_points_outside_the_repository():
    files = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"),
             *(ROOT / "biped_contact_sim").rglob("*.py")]
    for path in files:
        text = path.read_text()
        assert "../shared" not in text, path
        assert not re.search(r"\b(DESIGN|METHODS|STYLE)\.md\b", text), path


def test_license_is_bsd_3_clause():
    text = (ROOT / "LICENSE").read_text()
    assert "Redistribution and use in source and binary forms" in text
    assert "3. Neither the name of the copyright holder" in text


def test_contact_model_guide_example_is_a_working_model():
    import numpy as np

    from biped_contact_sim.contact.base import ContactState

    text = (ROOT / "docs" / "add_a_contact_model.md").read_text()
    code = re.findall(r"```python\n(.*?)```", text, re.S)[1]
    namespace: dict = {}
    exec(compile(code, "guide", "exec"), namespace)
    model = namespace["SoftFloorContact"](stiffness=2e4)
    model.check(1e-3, "semi_implicit_euler")
    state = ContactState(dt=1e-3, phi=np.array([-1e-3, 2e-3]), vc=np.zeros((2, 3)),
                         Jc=np.zeros((6, 3)), gamma_c=np.zeros(6), Minv=np.eye(3),
                         tau_free=np.zeros(3), p_tangent=np.zeros((2, 2)),
                         mu=np.full(2, 0.5))
    result = model.compute(state)
    np.testing.assert_allclose(result.f, [[0, 0, 20.0], [0, 0, 0]])
    assert list(result.active) == [True, False]
