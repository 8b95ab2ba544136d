"""biped_contact_sim: biped simulation with selectable contact models and whole-body control.

Layers (DESIGN.md; checked by import-linter): ``robot`` (pinocchio model and per-step terms),
``solvers`` (robot-agnostic numerics), ``contact`` (contact models behind one protocol),
``sim`` (fixed-step simulator, scenarios, observables), ``control`` (controllers) and
``adapters`` (command line, recorder, ROS 2 nodes).
"""

__version__ = "0.1.0"
