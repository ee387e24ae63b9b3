"""Which branch of a turn's ``mixture:`` a session plays: a seeded draw in [0, 1), the same in
every process and on every Python version.

The draw is the SHA-256 of the JSON text ``["agentrig-mixture-1", SCENARIO, SESSION_KEY, TURN,
SEED]`` (compact, ASCII-escaped; ``TURN`` 1-based, ``SEED`` ``null`` when none is given), its
first 53 bits read as a fraction. A branch is chosen by where the draw falls among the weights
laid end to end, normalised to 1. Over many session keys the share of sessions that play a
branch converges to its weight; one key always plays the same branch.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence

MIXTURE_HASH = "agentrig-mixture-1"
"""The first item of the hashed text: changes only if the draw ever has to change."""

RUNTIME_SESSION_KEY = ""
"""The session key agentrig's own runtime draws with (``agentrig run``, ``run_scenario``): a
run has no API key, so every run of a scenario plays the same branches (change them with
``seed:``)."""

_BITS = 53  # a double holds 53 bits exactly: the fraction is never rounded up to 1.0


def mixture_draw(scenario: str, session_key: str, turn: int, seed: int | None = None) -> float:
    """The draw in [0, 1) of turn ``turn`` (1-based) of ``scenario`` in the session of
    ``session_key``, with ``seed`` (see the module docstring)."""
    return seeded_draw([MIXTURE_HASH, scenario, session_key, turn, seed])


def seeded_draw(items: Sequence[str | int | None]) -> float:
    """A draw in [0, 1) that only ``items`` decide: the SHA-256 of their compact, ASCII-escaped
    JSON text, its first 53 bits read as a fraction (the same in every process)."""
    text = json.dumps(list(items), ensure_ascii=True, separators=(",", ":"))
    digest = hashlib.sha256(text.encode("ascii")).digest()
    return (int.from_bytes(digest[:8], "big") >> (64 - _BITS)) / (1 << _BITS)


def pick_branch(weights: Sequence[float], draw: float) -> int:
    """The index of the branch ``draw`` (in [0, 1)) falls in, the ``weights`` (each > 0) laid end
    to end and normalised to 1; the last branch takes what rounding leaves over."""
    total = math.fsum(weights)  # finite: the scenario format refuses weights that overflow
    bound = 0.0
    for index, weight in enumerate(weights[:-1]):
        bound += weight / total
        if draw < bound:
            return index
    return len(weights) - 1
