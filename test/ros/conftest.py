"""Fixtures of test/ros (the node test suite and the launch tests)."""

import pytest


@pytest.fixture(scope="session", autouse=True)
def warm_compiled_kernels():
    """Compile the numba kernels of every contact model and controller once, in this process,
    before any node starts: numba caches them on disk (``cache=True``), so the nodes load them
    instead of compiling for tens of seconds inside their first step — during which a node
    answers neither services nor signals. A no-op when the cache is warm."""
    from harness import warm_compiled_kernels

    warm_compiled_kernels()
