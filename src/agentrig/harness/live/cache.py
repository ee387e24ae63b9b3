"""The trial cache: every finished live trial is kept as cassettes, one per role, so that an
identical run replays it offline with no model call, and any trial converts to a scenario.

Layout, under the cache folder::

    SCENARIO/FINGERPRINT/trial-INDEX.ATTEMPT/
        agent.cassette.yaml      the agent's model calls (agent.builder)
        agent.replies.json       or the adapter's replies (agent.adapter)
        user.cassette.yaml       the simulated user's calls
        judge.cassette.yaml      the judge's calls
        outcome.json             written last: the trial is complete

``FINGERPRINT`` hashes what decides the conversation (the agent reference, the user, the judge
and the seed); how many trials run, the requirement they decide, the budget and the concurrency
do not change it, so raising ``trials.max`` or ``trials.require`` reuses every trial already run. A trial whose requests differ from its recording
(the agent's code or prompt changed) is run live again and recorded anew.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrig.harness.cassettes.files import (
    load_cassette,
    save_cassette,
    write_text_atomically,
)
from agentrig.harness.cassettes.model import Cassette
from agentrig.harness.errors import DataFileError
from agentrig.harness.scenarios.model import Scenario

__all__ = ["CachedTrial", "TrialCache", "scenario_fingerprint"]

_ROLES = ("agent", "user", "judge")
# What sets how many trials run and what they must reach, not what is said in one.
_UNCOUNTED_TRIALS = {
    "require",
    "max",
    "sequential",
    "budget_usd",
    "concurrency",
    "max_set_aside",
    "report_k",
}


def scenario_fingerprint(scenario: Scenario) -> str:
    """A short hash of what decides a trial's conversation."""
    data = scenario.model_dump(
        mode="json",
        exclude={"description": True, "tags": True, "trials": _UNCOUNTED_TRIALS},
    )
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))  # pragma: no mutate (a key:
    # any encoding of the dump serves that gives one scenario one text, as this one does)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class CachedTrial:
    """A trial recorded before: each role's cassette, the adapter's replies, its outcome."""

    cassettes: dict[str, Cassette]
    replies: list[dict[str, Any]] | None
    outcome: dict[str, Any]


_OUTCOME = "outcome.json"
"""Written last: a trial folder that holds it holds a whole recorded trial."""


class TrialCache:
    """Trials of one scenario kept in ``folder`` (see the module docstring)."""

    def __init__(self, folder: str | os.PathLike[str], scenario: Scenario) -> None:
        self.root = Path(folder) / scenario.name / scenario_fingerprint(scenario)

    def trial_folder(self, index: int, attempt: int) -> Path:
        """Where trial ``index`` (its ``attempt``-th run) is kept."""
        return self.root / f"trial-{index}.{attempt}"

    def holds(self, index: int, attempt: int) -> bool:
        """Whether trial ``index`` (its ``attempt``-th run) was recorded whole (its outcome is
        written last); ``load`` may still find it unreadable."""
        return (self.trial_folder(index, attempt) / _OUTCOME).is_file()

    def load(self, index: int, attempt: int) -> CachedTrial | None:
        """The recorded trial, or None when there is none (or it is unreadable: it is then
        run again and recorded anew)."""
        folder = self.trial_folder(index, attempt)
        marker = folder / _OUTCOME
        if not marker.is_file():
            return None
        try:
            outcome = json.loads(marker.read_text(encoding="utf-8"))  # pragma: no mutate (ASCII)
            cassettes = {
                role: load_cassette(folder / f"{role}.cassette.yaml")
                for role in _ROLES
                if (folder / f"{role}.cassette.yaml").is_file()
            }
            replies_file = folder / "agent.replies.json"
            replies = (
                json.loads(replies_file.read_text(encoding="utf-8"))  # pragma: no mutate (ASCII)
                if replies_file.is_file()
                else None
            )
        except (OSError, ValueError, DataFileError):
            return None
        if not isinstance(outcome, dict) or (replies is not None and not isinstance(replies, list)):
            return None
        return CachedTrial(cassettes, replies, outcome)

    def save(
        self,
        index: int,
        attempt: int,
        cassettes: dict[str, Cassette],
        replies: list[dict[str, Any]] | None,
        outcome: dict[str, Any],
    ) -> Path:
        """Keep a finished trial; the outcome is written last, atomically."""
        folder = self.trial_folder(index, attempt)
        folder.mkdir(parents=True, exist_ok=True)
        for role, cassette in cassettes.items():
            save_cassette(cassette, folder / f"{role}.cassette.yaml")
        if replies is not None:
            _write_json(folder / "agent.replies.json", replies)
        _write_json(folder / _OUTCOME, outcome)
        return folder


def _write_json(target: Path, data: Any) -> None:
    """Write ``data`` as ASCII JSON (``json.dumps`` escapes the rest: any encoding reads it)."""
    text = json.dumps(data, indent=1, sort_keys=True)  # pragma: no mutate (layout: read alike)
    write_text_atomically(target, text + "\n")
