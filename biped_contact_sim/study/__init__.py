"""Studies: many runs over a design of conditions, on one machine or a cluster.

``spec`` reads a study file and expands its design into run configurations named by a hash;
``executors`` run a row function over them on a local process pool or on Ray; ``table``
keeps the rows durably and writes the results table; ``figure`` draws the summary figure.
Nothing here knows the simulator: ``biped_contact_sim.cli.sweep`` supplies the row function
and the checks of names and keys (docs/studies.md).
"""
