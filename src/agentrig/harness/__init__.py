"""The deterministic testing harness: fakes, scenarios, invariants, runner and reports."""
