"""The agent under test: a Python function given the endpoint and the user's message, or a
command run once per example with the endpoint in its environment."""

from __future__ import annotations

import asyncio
import inspect
import os
import re
import shlex
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agentrig.errors import ConfigurationError
from agentrig.harness.endpoint.handle import EndpointHandle
from agentrig.harness.scenarios.model import BUILDER_REFERENCE_PATTERN
from agentrig.harness.scenarios.user_agent import resolve_reference

__all__ = [
    "AgentFunction",
    "CommandFailed",
    "CommandTarget",
    "FunctionTarget",
    "Target",
    "reference_of",
    "target_of",
]

AgentFunction = Callable[[EndpointHandle, str], Any]
"""``agent(ep, prompt)``, sync or async: build the agent's model client from ``ep`` (API key,
base URL, an in-process HTTP client), run the agent on ``prompt`` and return its answer."""

PROMPT_VARIABLE = "AGENTRIG_PROMPT"
"""The environment variable a command target reads the user's message from (also on stdin)."""


class Target(Protocol):
    """Something that runs the agent under test once against an endpoint handle."""

    @property
    def reference(self) -> str | None:
        """How ``agentrig fuzz`` names it (None: it cannot be named, e.g. a local function)."""
        ...

    @property
    def needs_live(self) -> bool:
        """Whether it reaches the endpoint only over a real socket."""
        ...

    def run(self, ep: EndpointHandle, prompt: str) -> tuple[object, Exception | None]:
        """Run the agent on ``prompt``: what it returned, or what it raised."""
        ...


@dataclass(frozen=True)
class FunctionTarget:
    """An :data:`AgentFunction` run in this process (async ones on a fresh event loop)."""

    function: AgentFunction
    reference: str | None = None
    needs_live: bool = False

    def run(self, ep: EndpointHandle, prompt: str) -> tuple[object, Exception | None]:
        """Call the function; an exception it raises is returned, not raised."""
        try:
            value = self.function(ep, prompt)
            if inspect.isawaitable(value):
                value = asyncio.run(_awaited(value))
        except Exception as error:
            return None, error
        return value, None


async def _awaited(value: Any) -> Any:
    return await value


class CommandFailed(Exception):
    """A command target exited with a status other than 0."""

    def __init__(self, command: str, status: int, stderr: str) -> None:
        tail = "\n".join(stderr.strip().splitlines()[-8:])
        super().__init__(f"{command} exited with status {status}" + (f":\n{tail}" if tail else ""))
        self.status = status
        self.stderr = stderr


@dataclass(frozen=True)
class CommandTarget:
    """A command run once per example, on a live endpoint: it finds the endpoint in
    ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` (and ``ANTHROPIC_…``), the user's message on
    stdin and in ``AGENTRIG_PROMPT``; an exit status other than 0 is a crash."""

    argv: tuple[str, ...]
    timeout: float = 120.0
    needs_live: bool = True

    @property
    def reference(self) -> str:
        """The command line."""
        return shlex.join(self.argv)

    def run(self, ep: EndpointHandle, prompt: str) -> tuple[object, Exception | None]:
        """Run the command; its stdout is what it returned."""
        env = {
            **os.environ,
            "OPENAI_BASE_URL": ep.openai_base_url,
            "OPENAI_API_KEY": ep.api_key,
            "ANTHROPIC_BASE_URL": ep.anthropic_base_url,
            "ANTHROPIC_API_KEY": ep.api_key,
            PROMPT_VARIABLE: prompt,
        }
        try:
            done = subprocess.run(
                self.argv,
                input=prompt,
                capture_output=True,
                text=True,
                env=env,
                timeout=self.timeout,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            return None, error
        if done.returncode != 0:
            return done.stdout, CommandFailed(self.reference, done.returncode, done.stderr)
        return done.stdout, None


def reference_of(function: Callable[..., Any]) -> str | None:
    """``module:qualified.name`` of ``function`` when an import can find it again, else None."""
    module = getattr(function, "__module__", None)
    name = getattr(function, "__qualname__", None)
    if not module or not name or module == "__main__":  # the pattern refuses <locals>, <lambda>
        return None
    reference = f"{module}:{name}"
    return reference if re.match(BUILDER_REFERENCE_PATTERN, reference) else None


def target_of(agent: AgentFunction | str | Sequence[str] | Target) -> Target:
    """The target ``agent`` names: a function, ``'package.module:function'``, a command line
    (a string that is not such a reference, or a list of arguments), or a target as it is."""
    if isinstance(agent, FunctionTarget | CommandTarget):
        return agent
    if isinstance(agent, str):
        if re.match(BUILDER_REFERENCE_PATTERN, agent):
            function = resolve_reference(agent, f"fuzz target {agent!r}")
            if not callable(function):
                raise ConfigurationError(
                    f"fuzz target {agent!r} is {type(function).__name__}: name a function "
                    "taking the endpoint and the user's message"
                )
            return FunctionTarget(function, agent)
        return CommandTarget(tuple(shlex.split(agent)))
    if isinstance(agent, list | tuple):
        return CommandTarget(tuple(str(part) for part in agent))
    if callable(agent):
        return FunctionTarget(agent, reference_of(agent))
    raise ConfigurationError(
        f"fuzz target: expected a function, 'package.module:function' or a command, "
        f"got {type(agent).__name__}"
    )
