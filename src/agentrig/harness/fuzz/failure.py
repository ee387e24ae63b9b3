"""A failing example as a scenario file, and the error that says where it is and how to replay
it."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path

from agentrig.harness.fuzz.target import FunctionTarget, Target
from agentrig.harness.scenarios.model import Scenario
from agentrig.harness.scenarios.writer import scenario_to_yaml, write_scenario

__all__ = ["FuzzFailure", "replay_command", "scenario_name", "write_failure"]

CommandOf = Callable[[Path], str]
"""The replay command for a scenario written at a path."""

_SHOWN_YAML = 3_000
"""The longest scenario text a failure message shows in full."""


class FuzzFailure(AssertionError):
    """A generated script broke a property: ``problems`` says how, ``path`` is the scenario
    file that replays it (None when it could not be written), ``command`` replays it."""

    def __init__(
        self,
        problems: Sequence[str],
        *,
        scenario: Scenario,
        path: Path | None,
        command: str,
        found_at: int | None = None,
        runs: int | None = None,
        replayed: bool = False,
    ) -> None:
        self.problems = tuple(problems)
        self.scenario = scenario
        self.path = path
        self.command = command
        self.found_at = found_at
        """The example that first broke a property (1-based), when fuzzing."""
        self.runs = runs
        """Examples run in all, shrinking included, when fuzzing."""
        self.replayed = replayed
        super().__init__(self._message())

    def _message(self) -> str:
        found = ""
        if self.found_at is not None:
            found = f" (example {self.found_at}, shrunk in {self.runs} runs in all)"
        lines = [f"agentrig fuzz: a generated script breaks the agent{found}:"]
        if self.replayed:
            lines[0] = f"agentrig fuzz: the script of {self.path} breaks the agent:"
        lines += [f"  - {problem}" for problem in self.problems]
        text = scenario_to_yaml(self.scenario)
        if len(text) <= _SHOWN_YAML and not self.replayed:
            lines += ["", "The script:", *("  " + line for line in text.splitlines())]
        if self.path is not None and self.command:
            written = "Replay" if self.replayed else f"Written to {self.path}; replay"
            lines += ["", f"{written} it with:", f"  {self.command}"]
        return "\n".join(lines)


def scenario_name(target: Target, given: str | None = None) -> str:
    """The name of the scenarios written for ``target``: ``given``, else ``fuzz-`` and the
    target's name in the characters a scenario name allows."""
    if given:
        return given
    slug = re.sub(r"[^a-z0-9._-]+", "-", (target.reference or "").lower())
    slug = slug.strip("-._")  # pragma: no mutate (lower case: a mutant's "XX" strips no more)
    return f"fuzz-{slug or 'agent'}"[:80]


def replay_command(target: Target, path: Path, prompt: str, scenario: Scenario) -> str:
    """The one command that replays the scenario at ``path`` against ``target``."""
    words = ["agentrig", "fuzz"]
    if not (isinstance(target, FunctionTarget) and scenario.agent.adapter is not None):
        words.append(target.reference or "MODULE:FUNCTION")
    words += ["--replay", str(path)]
    if prompt != scenario.turns[-1].user:
        words += ["--prompt", prompt]
    return shlex.join(words)


def write_failure(
    scenario: Scenario, problems: Sequence[str], folder: Path, command_of: CommandOf
) -> tuple[Path | None, str]:
    """Write ``scenario`` to ``folder/NAME.scenario.yaml`` with ``problems`` in its header;
    the path (None when it cannot be written) and the command that replays it."""
    path = folder / f"{scenario.name}.scenario.yaml"
    command = command_of(path)
    header = "\n".join(
        [
            "Written by agentrig fuzz: a generated script that breaks the agent.",
            *(f"  - {line}" for problem in problems for line in problem.splitlines()[:3]),
            f"Replay: {command}",
        ]
    )
    try:
        write_scenario(scenario, path=path, header=header)
    except OSError:
        return None, command
    return path, command
