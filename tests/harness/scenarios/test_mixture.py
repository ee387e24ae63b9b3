"""The mixture draw: the documented SHA-256 recipe, the same in every process, and the branch a
scenario's turn plays for a session key and seed."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentrig.harness.scenarios.loader import load_scenario
from agentrig.harness.scenarios.mixture import (
    RUNTIME_SESSION_KEY,
    mixture_draw,
    pick_branch,
)
from agentrig.harness.scenarios.model import Scenario

SCENARIO = """\
name: coin
seed: 7
turns:
  - user: Flip.
    mixture:
      - {weight: 1, label: heads, model: [{say: heads}]}
      - {weight: 1, label: tails, model: [{say: tails}]}
  - user: Again, with a seed of its own.
    seed: 99
    mixture:
      - {weight: 1, model: [{say: heads}]}
      - {weight: 3, model: [{say: tails}]}
  - user: Thanks.
    model: [{say: bye}]
"""


def _scenario(tmp_path: Path, text: str = SCENARIO) -> Scenario:
    path = tmp_path / "coin.scenario.yaml"
    path.write_text(text, encoding="utf-8")
    return load_scenario(path)


def _documented_draw(scenario: str, key: str, turn: int, seed: int | None) -> float:
    """The recipe docs/scenario-format.md gives, written out independently."""
    text = json.dumps(["agentrig-mixture-1", scenario, key, turn, seed], separators=(",", ":"))
    top = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 11
    return top / 2**53


@pytest.mark.parametrize(
    ("scenario", "key", "turn", "seed"),
    [
        ("coin", "agent/trial-1", 1, None),
        ("coin", "agent/trial-2", 1, None),
        ("coin", "", 2, 7),
        ("judge", "clé/ünïcode \n", 3, -5),
        ("judge", "x", 1, 2**70),
    ],
)
def test_the_draw_follows_the_documented_recipe(
    scenario: str, key: str, turn: int, seed: int | None
) -> None:
    draw = mixture_draw(scenario, key, turn, seed)
    assert draw == _documented_draw(scenario, key, turn, seed)
    assert 0.0 <= draw < 1.0


def test_every_input_changes_the_draw() -> None:
    base = mixture_draw("coin", "agent/trial-1", 1, None)
    others = [
        mixture_draw("coins", "agent/trial-1", 1, None),
        mixture_draw("coin", "agent/trial-2", 1, None),
        mixture_draw("coin", "agent/trial-1", 2, None),
        mixture_draw("coin", "agent/trial-1", 1, 0),
    ]
    assert base not in others
    assert len(set(others)) == len(others)


def test_the_draw_is_the_same_in_another_process_with_another_hash_seed() -> None:
    keys = [f"agent/trial-{n}" for n in range(1, 21)]
    here = [mixture_draw("coin", key, 1, 3) for key in keys]
    code = textwrap.dedent(
        f"""
        from agentrig.harness.scenarios.mixture import mixture_draw
        print([mixture_draw("coin", key, 1, 3) for key in {keys!r}])
        """
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert json.loads(out.stdout) == here


def test_pick_branch_lays_the_normalised_weights_end_to_end() -> None:
    weights = [2.0, 1.0, 1.0]
    assert [pick_branch(weights, d) for d in (0.0, 0.4999, 0.5, 0.7499, 0.75, 0.9999)] == [
        0,
        0,
        1,
        1,
        2,
        2,
    ]
    assert pick_branch([5.0], 0.999) == 0
    # rounding never leaves a gap past the last bound
    assert pick_branch([0.1] * 10, 1.0 - 2**-53) == 9


def test_a_turn_plays_the_branch_its_draw_picks_with_its_seed_or_the_scenarios(
    tmp_path: Path,
) -> None:
    scenario = _scenario(tmp_path)
    for key in ("agent/trial-1", "agent/trial-2", RUNTIME_SESSION_KEY):
        first = pick_branch([1, 1], mixture_draw("coin", key, 1, 7))  # the scenario's seed
        second = pick_branch([1, 3], mixture_draw("coin", key, 2, 99))  # the turn's own seed
        assert scenario.branch_for(1, key) == first
        assert scenario.branch_for(2, key) == second
        assert scenario.branch_for(3, key) is None
        turns = scenario.turns
        assert turns[0].mixture is not None
        assert turns[1].mixture is not None
        assert scenario.replies_for(1, key) == turns[0].mixture[first].model
        assert scenario.replies_for(2, key) == turns[1].mixture[second].model
        assert scenario.replies_for(3, key) == turns[2].model
        assert scenario.script_path(1, key) == ("turns", 0, "mixture", first, "model")
        assert scenario.script_path(3, key) == ("turns", 2, "model")
    # a plain turn keeps its model; a mixture turn's model stays empty
    assert scenario.turns[0].model == ()


def test_both_branches_play_over_a_few_keys_and_one_key_always_plays_the_same(
    tmp_path: Path,
) -> None:
    scenario = _scenario(tmp_path)
    chosen = [scenario.branch_for(1, f"agent/trial-{n}") for n in range(1, 41)]
    assert set(chosen) == {0, 1}
    again = _scenario(tmp_path)  # loaded anew: nothing is remembered between the two
    assert [again.branch_for(1, f"agent/trial-{n}") for n in range(1, 41)] == chosen
