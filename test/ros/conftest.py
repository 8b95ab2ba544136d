"""Fixtures of test/ros (the node test suite and the launch tests)."""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="session", autouse=True)
def warm_compiled_kernels():
    """Every numba kernel compiled once before any node starts (``biped-sim warm-up``, which
    ``make venv`` and ``colcon build`` already ran: then this only finds them in the cache), so
    that the timing of the tests is not the compiler's. It runs in a separate Python started
    outside the source tree, so that it imports the package from where the nodes import it
    (under colcon, the install space, not the checkout)."""
    code = (f"import sys; sys.path.append({str(HERE)!r}); "
            "from harness import warm_compiled_kernels; warm_compiled_kernels()")
    with tempfile.TemporaryDirectory() as cwd:
        done = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=dict(os.environ),
                              capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout + done.stderr
