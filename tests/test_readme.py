"""The README's runnable example works, and its first lines give the two commands."""

from __future__ import annotations

import re
from pathlib import Path

import agentrig as ar

README = Path(__file__).parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.DOTALL)


def test_the_first_lines_give_the_run_and_test_commands() -> None:
    head = README.read_text(encoding="utf-8").splitlines()[:6]
    assert any("agentrig run scenarios/" in line for line in head)
    assert any(line.startswith("bash .ci/install && .venv/bin/pytest") for line in head)


def test_the_agent_example_runs_as_documented() -> None:
    namespace: dict[str, object] = {}
    exec(python_blocks()[0], namespace)
    state = namespace["state"]
    assert isinstance(state, ar.AgentState)
    assert state.status() is ar.ExecutionStatus.COMPLETED
    assert state.final_response().to_text() == "2 + 3 = 5"
    assert state.messages().roles() == (ar.Role.USER, ar.Role.ASSISTANT)
    assert ar.AgentState.from_json(state.to_json()) == state


def test_every_python_block_is_valid_python() -> None:
    blocks = python_blocks()
    assert len(blocks) >= 3
    for block in blocks:
        compile(block, "README.md", "exec")
