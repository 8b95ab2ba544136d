"""Simulator layer (DESIGN.md layer 4): fixed-step loop, terrain, scenarios, observables."""
