"""Live trials: simulated users, judges and verdicts drawn from repeated trials.

``current_trial()`` says which trial is running, inside one (an adapter, a builder, a tool).
"""

from agentrig.harness.live.trial import TrialContext, current_trial

__all__ = ["TrialContext", "current_trial"]
