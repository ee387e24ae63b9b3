"""The README's first lines give the two commands (its examples are run by test_docs.py)."""

from __future__ import annotations

from pathlib import Path

README = Path(__file__).parents[1] / "README.md"


def test_the_first_lines_give_the_run_and_test_commands() -> None:
    head = README.read_text(encoding="utf-8").splitlines()[:6]
    assert any("agentrig run scenarios/" in line for line in head)
    assert any(line.startswith("bash .ci/install && .venv/bin/pytest") for line in head)
