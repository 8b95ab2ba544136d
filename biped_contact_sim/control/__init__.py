"""Control layer (DESIGN.md layer 5): depends on the robot model only, never on the simulator."""
