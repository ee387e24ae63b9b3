"""What is checked of a run: the invariants after every step, a turn's ``expect:`` block, and
tool-call trajectories.

Importing this package registers the built-in invariants
(:mod:`~agentrig.harness.checks.builtin_invariants`) with the registry in
:mod:`~agentrig.harness.checks.invariant`.
"""

from agentrig.harness.checks import builtin_invariants as _builtin_invariants  # registers them

del _builtin_invariants
