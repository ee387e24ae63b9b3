"""What is checked of a run: the invariants after every step, a turn's ``expect:`` block, and
tool-call trajectories."""
