"""Live trials: simulated users, judges and verdicts drawn from repeated trials."""
