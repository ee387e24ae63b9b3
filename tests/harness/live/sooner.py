"""The live example (examples/live/) rewritten to reach its verdict in fewer trials, for the
tests whose point is not the example's own figures (docs/live.md quotes those)."""

from __future__ import annotations

from pathlib import Path

EDITS = {
    "models/agent.scenario.yaml": (("weight: 0.8", "weight: 0.6"), ("weight: 0.2", "weight: 0.4")),
    "refund.scenario.yaml": (("at_least: 0.6", "at_least: 0.3"), ("votes: 3", "votes: 1")),
}


def decide_sooner(project: Path) -> None:
    """Rewrite the copy of the example in ``project``: the agent's model refunds in 60% of the
    sessions (not 80%), and the scenario requires a rate of 0.3 (not 0.6), judged with one vote
    (not 3). So far from the true rate, the sequential test passes after about 11 trials, not
    about 35 (measured). Which sessions refund is a seeded hash of the trial's key: a run with
    a fixed ``--run-id`` draws the same outcomes every time (those tests need a failure too)."""
    for name, edits in EDITS.items():
        path = project / name
        text = path.read_text()
        for old, new in edits:
            assert old in text, f"{name} no longer says {old!r}"
            text = text.replace(old, new, 1)
        path.write_text(text)
