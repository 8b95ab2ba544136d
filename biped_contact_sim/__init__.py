"""biped_contact_sim: biped simulation with selectable contact models and whole-body control.

Layers (docs/architecture.md; checked by import-linter): ``robot`` (pinocchio model and per-step
terms), ``solvers`` (robot-agnostic numerics), ``contact`` (contact models behind one protocol),
``sim`` (fixed-step simulator, scenarios, observables), ``control`` (controllers), and above
them: ``record`` (recorder, MCAP trace, message fields), ``session`` (a simulation from one
``SimConfig``: build, run, result), ``study`` (parameter studies) and the front ends ``ros``
(the ROS 2 nodes) and ``cli`` (``biped-sim``, plots).
"""

__version__ = "0.1.0"
