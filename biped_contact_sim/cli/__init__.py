"""Command line: `biped-sim` (run, compare, bench, sweep, list) and the plots; simulations
are built and run by the session layer (``biped_contact_sim.session``)."""
