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
    """Compile the numba kernels of every contact model and controller once before any node
    starts: numba caches them on disk (``cache=True``, beside the modules), so the nodes load
    them instead of compiling for tens of seconds inside their first step, during which a node
    answers neither services nor signals. It runs in a separate Python started outside the
    source tree, so that it imports the package from where the nodes import it (under colcon,
    the install space, not the checkout). A no-op when the caches are warm."""
    code = (f"import sys; sys.path.append({str(HERE)!r}); "
            "from harness import warm_compiled_kernels; warm_compiled_kernels()")
    with tempfile.TemporaryDirectory() as cwd:
        done = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=dict(os.environ),
                              capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout + done.stderr
