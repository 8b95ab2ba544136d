"""Compiled kernels (``biped_contact_sim.jit``): every kernel declares its signatures, compiles
exactly those (never one specialisation per layout or literal of its callers), is compiled by
the warm-up, and is cached where numba's own ``NUMBA_CACHE_DIR`` says."""

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from biped_contact_sim import jit

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "biped_contact_sim"


def decorated_modules() -> dict[str, list[str]]:
    """module → functions decorated with ``kernel`` (or numba's own decorators), by parsing."""
    found: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name == "jit.py":
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef):
                continue
            for dec in node.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                name = getattr(target, "id", getattr(target, "attr", ""))
                if name in ("kernel", "njit", "jit", "vectorize", "generated_jit"):
                    module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
                    found.setdefault(module, []).append(f"{name}:{node.name}")
    return found


def test_every_compiled_function_is_a_declared_kernel_in_a_listed_module():
    found = decorated_modules()
    bare = [f"{m}.{f}" for m, fs in found.items() for f in fs if not f.startswith("kernel:")]
    assert not bare, f"numba decorators outside jit.kernel (no declared signature): {bare}"
    assert set(found) <= set(jit.KERNEL_MODULES), set(found) - set(jit.KERNEL_MODULES)
    for module in jit.KERNEL_MODULES:  # the list names nothing that is not a kernel module
        assert module in found, module


def test_kernel_modules_are_named_by_their_role():
    """docs/architecture.md, "Compiled kernels: naming": kernels live in ``<role>_kernels.py``."""
    for module in jit.KERNEL_MODULES:
        assert module.endswith("_kernels"), module


def test_the_scenarios_compile_nothing_beyond_the_declared_signatures():
    """Runs of every contact model in both contact modes, RK4 and pushes included, leave every
    kernel with exactly its declared overloads (and unable to compile others)."""
    from biped_contact_sim.session.runner import run_scenario

    for model in ("spring_damper", "penalty_fl", "gauss_seidel", "time_stepping",
                  "acceleration_lcp"):
        run_scenario("stand", model, controller="joint_pd", duration=0.003,
                     sets={"contacts": "points"})
        run_scenario("stand", model, controller="joint_pd", duration=0.003)
    run_scenario("push", "penalty_fl", duration=0.003, integrator="rk4", sets={"push_time": 0.0})
    run_scenario("box_stack", "gauss_seidel", duration=0.003)
    loaded = [(m, d) for m, d in jit.iter_kernels() if jit.is_loaded(d)]
    assert len(loaded) >= 20  # the entry kernels (those they call are in their code)
    for module, disp in loaded:
        assert len(disp.overloads) == len(disp._declared), (module, disp.py_func.__name__,
                                                            list(disp.overloads))
        assert not disp._can_compile


def test_a_call_of_another_array_type_is_refused_not_compiled():
    from biped_contact_sim.sim.world_kernels import frame_from_normal

    frame_from_normal(np.array([0.0, 0.0, 1.0]))  # declared: a float64 vector
    with pytest.raises(TypeError, match="No matching definition"):
        frame_from_normal(np.array([0, 0, 1]))  # int64: no new specialisation
    assert len(frame_from_normal.overloads) == 1


def run_python(code: str, cache: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=600)


def test_numba_cache_dir_holds_the_warm_up_and_later_processes_load_from_it(tmp_path):
    """A read-only install points numba at a writable folder with ``NUMBA_CACHE_DIR``: the
    warm-up writes there, a later process compiles nothing."""
    code = """
        from biped_contact_sim import jit
        print(jit.compile_module("biped_contact_sim.sim.world_kernels")["compiled"])
        print(jit.cache_location())
    """
    first = run_python(code, tmp_path)
    assert first.returncode == 0, first.stderr
    compiled, where = first.stdout.split()
    assert int(compiled) >= 1 and where == str(tmp_path)
    assert list(tmp_path.rglob("*.nbc")) and list(tmp_path.rglob("*.nbi"))
    again = run_python(code, tmp_path)
    assert again.returncode == 0 and again.stdout.split()[0] == "0", again.stdout


def test_a_run_time_compile_is_announced_once_per_module(tmp_path):
    code = """
        import numpy as np
        from biped_contact_sim.sim.world import frame_from_normal
        frame_from_normal(np.array([0.0, 0.0, 1.0]))
        frame_from_normal(np.array([1.0, 0.0, 0.0]))
    """
    done = run_python(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("compiling the numba kernels of sim.world") == 1, done.stderr


def test_warm_up_reports_a_kernel_that_does_not_compile_and_goes_on(tmp_path, monkeypatch):
    (tmp_path / "bad_kernels.py").write_text(textwrap.dedent("""
        from biped_contact_sim.jit import F1, kernel

        @kernel((F1,))
        def bad(x):
            return x.no_such_attribute
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    lines: list[str] = []
    done = jit.warm_up(["bad_kernels", "biped_contact_sim.sim.world_kernels"], jobs=1,
                       report=lines.append)
    by_module = {r["module"]: r for r in done}
    assert "error" in by_module["bad_kernels"] and "TypingError" in by_module["bad_kernels"][
        "error"]
    assert "error" not in by_module["biped_contact_sim.sim.world_kernels"]
    assert any("FAILED" in line for line in lines)
