"""ament_python setup for biped_contact_sim (also installable with pip, see requirements.txt)."""

from glob import glob

from setuptools import find_packages, setup

PACKAGE = "biped_contact_sim"

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
    entry_points={
        "console_scripts": [
            "biped-sim = biped_contact_sim.cli.main:main",
            "simulator_node = biped_contact_sim.ros.entry:simulator",
            "controller_node = biped_contact_sim.ros.entry:controller",
        ],
    },
)
