"""Property tests of the loop: hypothesis strategies, the reference model and state machine, and
the hypothesis profiles the pytest plugin registers."""

from agentrig.errors import MissingDependencyError

try:
    import hypothesis  # noqa: F401  (every module of the package is built on it)
except ImportError:
    raise MissingDependencyError("hypothesis", "hypothesis") from None
