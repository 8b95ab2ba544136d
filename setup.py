"""ament_python setup for biped_contact_sim (also installable with pip, see requirements.txt).

``colcon build`` (``setup.py install``, or ``develop`` with ``--symlink-install``) ends by
compiling the package's numba kernels for this machine (``biped-sim warm-up`` on the installed
copy, about 1-3 min of CPU on two cores), so that the nodes' first start does not wait on a
compiler. ``BIPED_SIM_SKIP_WARMUP=1`` skips it (the kernels then compile at first use, each
announced in the log). Wheels (pip) cannot run code at install: run ``biped-sim warm-up`` once
after ``pip install``; ``make venv`` does.
"""

import os
import subprocess
import sys
from glob import glob

from setuptools import find_packages, setup
from setuptools.command.develop import develop
from setuptools.command.install import install

PACKAGE = "biped_contact_sim"
# A wheel or egg being built (pip's PEP 517 backend runs "install" into a staging folder):
# no warm-up there, it would compile into the archive's build tree.
PACKAGING = {"bdist_wheel", "editable_wheel", "bdist_egg", "sdist"}


def warm_up(lib_dir: str) -> None:
    """Compile the numba kernels of the copy of the package in ``lib_dir`` (its cache goes
    beside it, or where ``NUMBA_CACHE_DIR`` says). A failure only warns: the kernels then
    compile at first use."""
    if os.environ.get("BIPED_SIM_SKIP_WARMUP") or PACKAGING & set(sys.argv[1:]):
        return
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (lib_dir, os.environ.get("PYTHONPATH")) if p))
    print(f"{PACKAGE}: compiling the numba kernels for this machine (biped-sim warm-up)",
          flush=True)
    code = subprocess.call([sys.executable, "-m", f"{PACKAGE}.cli.main", "warm-up"], env=env,
                           cwd=lib_dir)
    if code:
        print(f"{PACKAGE}: warning: biped-sim warm-up failed (exit {code}); the kernels will "
              "compile at first use", file=sys.stderr, flush=True)


class InstallAndWarmUp(install):
    def run(self):
        super().run()
        warm_up(os.path.abspath(self.install_lib))


class DevelopAndWarmUp(develop):
    def run(self):
        super().run()
        if not getattr(self, "uninstall", False):
            warm_up(os.getcwd())  # develop runs where setup.py is: the package is beside it

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*"]),
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/urdf", glob("urdf/*.urdf")),
        (f"share/{PACKAGE}/config",
         glob("config/*.yaml") + glob("config/*.rviz") + glob("config/*.json")),
        (f"share/{PACKAGE}/config/worlds", glob("config/worlds/*.yaml")),
        (f"share/{PACKAGE}/config/studies", glob("config/studies/*.yaml")),
        (f"share/{PACKAGE}/launch", glob("launch/*.launch.py")),
    ],
    # Only setuptools here: on ROS 2, pinocchio/numpy/scipy come from apt (package.xml), and a
    # pip requirement such as 'pin' would make the generated entry points refuse to start.
    install_requires=["setuptools"],
    # `biped-sim bench --peer mujoco` times MuJoCo on the same URDF (requirements-bench.txt).
    # `biped-sim sweep --executor ray` (and the Parquet table): pip install '.[cluster]'.
    extras_require={"peer": ["mujoco>=3.3"], "cluster": ["ray[client]>=2.9", "pyarrow>=12"]},
    zip_safe=True,
    maintainer="biped_contact_sim developers",
    maintainer_email="biped-contact-sim@example.com",
    description="Biped simulation with selectable contact models and whole-body control.",
    license="BSD-3-Clause",
    tests_require=["pytest"],
    cmdclass={"install": InstallAndWarmUp, "develop": DevelopAndWarmUp},
    entry_points={
        "console_scripts": [
            "biped-sim = biped_contact_sim.cli.main:main",
            "simulator_node = biped_contact_sim.ros.entry:simulator",
            "controller_node = biped_contact_sim.ros.entry:controller",
            "composed_node = biped_contact_sim.ros.entry:composed",
        ],
    },
)
