"""docs/scenario-format.md names every key a scenario file may hold.

The loader refuses unknown keys everywhere, so the reference is the list of what a file can
say: a key the models accept and the reference leaves out is a feature a user cannot find.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from agentrig.harness.scenarios.model import (
    AgentSpec,
    Expectation,
    HookSpec,
    ModelReply,
    Scenario,
    ScenarioTurn,
    ToolSpec,
)

DOC = Path(__file__).resolve().parents[3] / "docs" / "scenario-format.md"


def section(heading: str) -> str:
    """The text of the reference section under ``### heading``, up to the next heading."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"\n### {heading}\n")
    end = re.compile(r"\n#{2,3} ").search(text, start + 1)
    return text[start : end.start() if end else len(text)]


def keys_of(model: type[BaseModel]) -> set[str]:
    return {field.alias or name for name, field in model.model_fields.items()}


def table_keys(text: str) -> set[str]:
    """The keys in the first column of the section's table (a row may name several)."""
    keys: set[str] = set()
    for line in text.splitlines():
        if line.startswith("| `"):
            keys.update(re.findall(r"`([a-z_]+)`", line.split("|")[1]))
    return keys


@pytest.mark.parametrize(
    ("heading", "model"),
    [
        ("Top level", Scenario),
        ("`agent`", AgentSpec),
        ("A tool", ToolSpec),
        ("A hook", HookSpec),
        ("A turn", ScenarioTurn),
        ("`expect`", Expectation),
    ],
)
def test_every_key_has_a_row_in_its_table(heading: str, model: type[BaseModel]) -> None:
    assert keys_of(model) - table_keys(section(heading)) == set()


def test_every_key_of_a_model_reply_is_described() -> None:
    described = set(re.findall(r"`([a-z_]+)(?::[^`]*)?`", section("A turn")))
    assert keys_of(ModelReply) - described == set()
