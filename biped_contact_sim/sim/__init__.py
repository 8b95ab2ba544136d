"""Simulator layer (docs/architecture.md layer 4): fixed-step loop, terrain, scenarios,
observables."""
