"""Property tests of the loop: hypothesis strategies, the reference model and state machine, and
the hypothesis profiles the pytest plugin registers."""
