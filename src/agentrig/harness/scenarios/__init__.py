"""Scenario files: the model, the line-aware YAML reader, the loader and writer, selection, and
the factory that turns a scenario's ``agent:`` section into a real agent."""
