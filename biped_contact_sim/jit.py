"""Compiled kernels: numba functions with declared signatures, compiled once per machine.

Every numba function of the package is declared with :func:`kernel` and the argument types it
takes (numba types; the shorthands below). A kernel compiles exactly those signatures — never
one specialisation per memory layout, literal constant or tuple length of its callers — and
numba's cache (``cache=True``) keeps the machine code, so a process that finds them cached
loads them in milliseconds.

* **When**: at a kernel's first call (or first use by another kernel being compiled), its
  declared signatures are loaded from the cache or compiled; nothing compiles at import.
  ``biped-sim warm-up`` (:func:`warm_up`, run by ``make venv`` and by the ROS package's
  install) compiles every kernel ahead, in parallel, so that no run waits on a compiler.
  A compile that still happens at run time (a kernel file changed since the warm-up, another
  CPU) is announced by one line per kernel module (:func:`set_compile_notice`), not silent.
* **Where**: numba's own mechanism. Beside the source (``__pycache__``) when that is
  writable, else numba's per-user cache directory; ``NUMBA_CACHE_DIR`` puts every entry under
  one directory of the user's choice (a read-only install, a container volume).
* **Calls**: after the first call the dispatcher compiles nothing more; an argument of
  another type is converted if numba can do so safely (a C-contiguous array to a strided
  one, a mutable array to a read-only one, an integer literal to int64) and refused with
  numba's ``TypeError`` otherwise (a float array where an int one is declared).

Type shorthands: ``F1`` contiguous float64 vector, ``F1s`` strided (e.g. a column of a table),
``F2`` C-contiguous matrix, ``F2s`` any layout, ``F2f`` Fortran-ordered (pinocchio's matrices),
``F3``/``F3s`` the same in 3-D; ``I*``, ``B*`` int64 and bool arrays; :func:`ro` makes a type
read-only (pinocchio's placements and motions are read-only views).
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence

from numba import njit
from numba import types as nt
from numba.core import event

f8, i8, b1, c16 = nt.float64, nt.int64, nt.boolean, nt.complex128
F1, F1s = f8[::1], f8[:]
F2, F2s, F2f = f8[:, ::1], f8[:, :], f8[::1, :]
F3, F3s = f8[:, :, ::1], f8[:, :, :]
I1, I1s, I2, I2s, I2f = i8[::1], i8[:], i8[:, ::1], i8[:, :], i8[::1, :]
B1, B2 = b1[::1], b1[:, ::1]
C1 = c16[::1]
Tuple, UniTuple, none = nt.Tuple, nt.UniTuple, nt.none


def ro(array_type: nt.Array) -> nt.Array:
    """The read-only variant of an array type."""
    return array_type.copy(readonly=True)


#: Every module that declares kernels, in the order ``warm_up`` starts them (slowest first,
#: so that two processes finish together). ``test_jit`` checks that the list is complete.
KERNEL_MODULES = (
    "biped_contact_sim.sim.collision_kernels",
    "biped_contact_sim.contact.acceleration_lcp_kernels",
    "biped_contact_sim.contact.time_stepping_kernels",
    "biped_contact_sim.control.wbc_kernels",
    "biped_contact_sim.control.ctc_kernels",
    "biped_contact_sim.control.internal_forces_kernels",
    "biped_contact_sim.control.walking_kernels",
    "biped_contact_sim.control.body_tasks_kernels",
    "biped_contact_sim.control.linalg_kernels",
    "biped_contact_sim.sim.contact_geometry_kernels",
    "biped_contact_sim.contact.gauss_seidel_kernels",
    "biped_contact_sim.contact.penalty_fl_kernels",
    "biped_contact_sim.contact.acceleration_lcp_warm_kernels",
    "biped_contact_sim.robot.model_kernels",
    "biped_contact_sim.sim.observables_kernels",
    "biped_contact_sim.solvers.lemke_kernels",
    "biped_contact_sim.solvers.gauss_seidel_kernels",
    "biped_contact_sim.solvers.fischer_burmeister_kernels",
    "biped_contact_sim.contact.spring_damper_kernels",
    "biped_contact_sim.contact.base_kernels",
    "biped_contact_sim.solvers.linalg_kernels",
    "biped_contact_sim.solvers.warm_start_kernels",
    "biped_contact_sim.sim.world_kernels",
    "biped_contact_sim.sim.integrator_kernels",
    "biped_contact_sim.sim.step_energy_kernels",
    "biped_contact_sim.session.accounting_kernels",
)

#: module name → its kernels (dispatchers), in declaration order
KERNELS: dict[str, list] = {}


def kernel(*signatures, **options) -> Callable:
    """Decorator: ``numba.njit(cache=True, **options)`` with declared signatures.

    Args:
        signatures: one tuple of numba argument types per signature (return types are
            inferred). At least one.
        options: further ``njit`` options (``error_model="numpy"``).
    """
    if not signatures or not all(isinstance(s, tuple) for s in signatures):
        raise TypeError("kernel() takes one or more tuples of numba argument types")

    def decorate(fn):
        disp = njit(cache=True, **options)(fn)
        disp._declared = signatures

        # The first call from Python (``_compile_for_args``, looked up on the instance by
        # numba's C dispatcher) or from a kernel being compiled (``get_call_template``) loads
        # the declared signatures first; both overrides then remove themselves.
        def first_call(*args, **kws):
            load(disp)
            return lambda *a, **k: disp(*a, **k)

        def first_typing(args, kws):
            load(disp)
            return disp.get_call_template(args, kws)

        disp._compile_for_args = first_call
        disp.get_call_template = first_typing
        KERNELS.setdefault(fn.__module__, []).append(disp)
        return disp

    return decorate


def load(disp) -> None:
    """Load (or compile) a kernel's declared signatures, then stop it compiling others."""
    if "_compile_for_args" not in disp.__dict__:
        return
    del disp._compile_for_args, disp.get_call_template
    for sig in disp._declared:
        disp.compile(sig)
    disp.disable_compile()


def entry_point(disp) -> Callable:
    """The machine-code entry of a kernel with one declared signature, loaded (or compiled):
    a call without the dispatcher's typing of every argument (~0.1 µs each; a control step's
    kernel takes 35). Its arguments are not checked: the caller passes exactly the declared
    types (wrong ones are read as the declared ones), so it serves a hot call whose
    arguments the caller builds itself; everything else calls the dispatcher.

    Raises:
        TypeError: the kernel declares more than one signature.
    """
    if len(disp._declared) != 1:
        raise TypeError(f"{disp.py_func.__name__} declares {len(disp._declared)} signatures; "
                        "entry_point needs exactly one")
    load(disp)
    return next(iter(disp.overloads.values())).entry_point


def is_loaded(disp) -> bool:
    return "_compile_for_args" not in disp.__dict__


# ---------------------------------------------------------------- compile notices
_notice: list[Callable[[str], None] | None] = [None]
_announced: set[str] = set()


def set_compile_notice(callback: Callable[[str], None] | None) -> None:
    """Call ``callback(message)`` once per kernel module when one of its kernels compiles at
    run time (a cache miss: ``warm_up`` did not run on this machine or a source changed).
    ``None`` silences the notices."""
    _notice[0] = callback


def _stderr_notice(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class _CompileListener(event.Listener):
    """numba fires ``numba:compile`` only when a signature is not in its cache."""

    def on_start(self, ev):
        callback = _notice[0]
        if callback is None:
            return
        module = getattr(ev.data["dispatcher"].py_func, "__module__", "")
        if module in KERNELS and module not in _announced:
            _announced.add(module)
            short = module.removeprefix("biped_contact_sim.")
            callback(f"compiling the numba kernels of {short} (first use on this machine; "
                     "`biped-sim warm-up` compiles them all ahead, once)")

    def on_end(self, ev):
        pass


_notice[0] = _stderr_notice
event.register("numba:compile", _CompileListener())


# ---------------------------------------------------------------- warm-up
def compile_module(name: str) -> dict:
    """Import a kernel module and load or compile every declared signature of its kernels.

    Returns:
        {"module", "kernels", "signatures", "compiled" (cache misses), "seconds" (CPU)}.
    """
    t0 = time.process_time()
    importlib.import_module(name)
    kernels = KERNELS.get(name, [])
    misses = 0
    for disp in kernels:
        before = sum(disp.stats.cache_misses.values())
        load(disp)
        misses += sum(disp.stats.cache_misses.values()) - before
    return {"module": name, "kernels": len(kernels),
            "signatures": sum(len(d._declared) for d in kernels), "compiled": misses,
            "seconds": time.process_time() - t0}


def _worker(name: str) -> dict:
    _notice[0] = None
    return _compile_or_fail(name)


def _compile_or_fail(name: str) -> dict:
    """``compile_module``, or its failure as a record (``error``: the message's first line)."""
    t0 = time.process_time()
    try:
        return compile_module(name)
    except Exception as exc:  # a kernel that does not type: reported, the others go on
        first = next((line for line in str(exc).splitlines() if line.strip()), repr(exc))
        return {"module": name, "kernels": 0, "signatures": 0, "compiled": 0,
                "seconds": time.process_time() - t0, "error": f"{type(exc).__name__}: {first}"}


def cache_location() -> str:
    """Where numba keeps the compiled kernels: ``NUMBA_CACHE_DIR`` if set, else the
    ``__pycache__`` folders beside the package's modules, or numba's per-user folder when
    those are not writable."""
    explicit = os.environ.get("NUMBA_CACHE_DIR")
    if explicit:
        return explicit
    name = "biped_contact_sim.sim.world_kernels"  # any kernel module: they share one locator rule
    module = importlib.import_module(name)
    package = os.path.dirname(os.path.dirname(os.path.abspath(module.__file__)))
    for disp in KERNELS.get(name, []):
        path = disp.stats.cache_path
        if path.startswith(package):
            return f"__pycache__ folders under {package}"
        return path
    return "numba's cache"


def warm_up(modules: Sequence[str] = KERNEL_MODULES, jobs: int | None = None,
            report: Callable[[str], None] | None = print) -> list[dict]:
    """Compile (or find in numba's cache) every kernel of ``modules``, in ``jobs`` processes
    (default: every core), reporting one line per module as it finishes.

    Returns:
        ``compile_module``'s record of each module, in the order they finished (with an
        ``error`` entry for a module whose kernels failed to compile).
    """
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(modules)))
    say = report or (lambda message: None)
    t0 = time.perf_counter()
    done: list[dict] = []

    def line(rec: dict) -> None:
        done.append(rec)
        what = f"compiled {rec['compiled']}" if rec["compiled"] else "cached"
        if "error" in rec:
            what = f"FAILED: {rec['error']}"
        short = rec["module"].removeprefix("biped_contact_sim.")
        say(f"  [{len(done):2d}/{len(modules)}] {short:36s} "
            f"{rec['kernels']:3d} kernels  {rec['seconds']:6.1f} s CPU  ({what})")

    if jobs == 1:
        previous = _notice[0]
        _notice[0] = None
        try:
            for name in modules:
                line(_compile_or_fail(name))
        finally:
            _notice[0] = previous
    else:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor, as_completed

        ctx = mp.get_context("spawn")
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
            futures = [pool.submit(_worker, name) for name in modules]
            for future in as_completed(futures):
                line(future.result())
    cpu = sum(r["seconds"] for r in done)
    say(f"  {len(modules)} modules in {time.perf_counter() - t0:.1f} s "
        f"({cpu:.1f} s CPU in {jobs} process{'es' if jobs > 1 else ''})")
    return done


def load_imported(prefixes: tuple[str, ...] = ("",)) -> tuple[int, int]:
    """Load every kernel of the kernel modules imported so far whose name starts with one of
    ``prefixes`` (a process that will run them pays the cache loading up front, not in its
    first control period).

    Returns:
        (kernels, signatures compiled because they were not in the cache).
    """
    kernels = misses = 0
    for module, disps in list(KERNELS.items()):
        if not module.startswith(prefixes):
            continue
        for disp in disps:
            before = sum(disp.stats.cache_misses.values())
            load(disp)
            misses += sum(disp.stats.cache_misses.values()) - before
            kernels += 1
    return kernels, misses


def iter_kernels(modules: Iterable[str] = KERNEL_MODULES):
    """(module, dispatcher) of every kernel of the modules (imported here)."""
    for name in modules:
        importlib.import_module(name)
        for disp in KERNELS.get(name, []):
            yield name, disp
