"""``agentrig fuzz``: the options of the command line as a fuzzing run or a replay."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from hypothesis import settings as Settings
from hypothesis.database import DirectoryBasedExampleDatabase

from agentrig.errors import ConfigurationError
from agentrig.harness.fuzz.behaviours import (
    ALL_REPLIES,
    DEFAULT_ARGUMENTS,
    Behaviours,
    default_faults,
)
from agentrig.harness.fuzz.engine import DEFAULT_EXAMPLES, DEFAULT_FOLDER, fuzz, replay
from agentrig.harness.fuzz.failure import FuzzFailure
from agentrig.harness.fuzz.properties import Property, answers_every_tool_call, raises_only
from agentrig.harness.fuzz.target import target_of
from agentrig.harness.scenarios.user_agent import resolve_reference

__all__ = ["DEFAULT_DATABASE", "FuzzOptions", "run_command"]

DEFAULT_DATABASE = Path(".hypothesis/examples")
"""The hypothesis database ``agentrig fuzz`` keeps failures in (tried first on the next run)."""


@dataclass(frozen=True)
class FuzzOptions:
    """What ``agentrig fuzz`` was asked to do."""

    target: str | None
    prompt: str | None = None
    replay: Path | None = None
    max_examples: int = DEFAULT_EXAMPLES
    tools: Sequence[str] = ()
    replies: Sequence[str] = ()
    arguments: Sequence[str] = ()
    faults: Sequence[str] = ()
    max_steps: int = 4
    max_model_calls: int = 30
    raises: Sequence[str] = ()
    answers_every_call: bool = False
    folder: Path = DEFAULT_FOLDER
    database: Path | None = DEFAULT_DATABASE
    seed: int | None = None
    live: bool = False


def run_command(options: FuzzOptions, say: Callable[[str], object]) -> int:
    """Fuzz (or replay) as ``options`` say; the exit status: 0 when no property broke, 1 when
    one did. ``ConfigurationError`` (and ``InvalidInputError``) for a usage problem."""
    properties = _properties(options)
    try:
        if options.replay is not None:
            replay(
                options.replay,
                options.target,
                prompt=options.prompt,
                properties=properties,
                max_model_calls=options.max_model_calls,
                live=options.live,
            )
            say(f"replayed {options.replay}: no property broke")
            return 0
        if options.target is None or options.prompt is None:
            raise ConfigurationError(
                "agentrig fuzz: give the agent (TARGET) and --prompt, or --replay FILE"
            )
        report = fuzz(
            options.target,
            options.prompt,
            behaviours=_behaviours(options, options.target),
            properties=properties,
            max_examples=options.max_examples,
            settings=_settings(options.database),
            seed=options.seed,
            folder=options.folder,
            live=options.live,
        )
    except FuzzFailure as failure:
        say(str(failure))
        return 1
    tools = ", ".join(tool.name for tool in report.offer.tools) or "no tools"
    say(f"fuzzed {report.examples} examples (the agent offers {tools}): no property broke")
    return 0


def _behaviours(options: FuzzOptions, target: str) -> Behaviours:
    """The behaviours the options narrow to; unnarrowed faults are the defaults for where the
    agent runs (checked before the target is imported, so a bad kind is named first)."""
    faults = [] if list(options.faults) == ["none"] else options.faults  # unnarrowed: below
    behaviours = Behaviours(
        tools=tuple(options.tools) or None,
        replies=frozenset(options.replies or ALL_REPLIES),  # type: ignore[arg-type]
        arguments=frozenset(options.arguments or DEFAULT_ARGUMENTS),  # type: ignore[arg-type]
        faults=frozenset(faults),  # type: ignore[arg-type]
        max_steps=options.max_steps,
        max_model_calls=options.max_model_calls,
    )
    if options.faults:
        return behaviours
    live = options.live or target_of(target).needs_live
    return replace(behaviours, faults=default_faults(live))


def _properties(options: FuzzOptions) -> list[Property]:
    errors: list[type[BaseException]] = []
    for reference in options.raises:
        error = resolve_reference(reference, f"--raises {reference!r}")
        if not (isinstance(error, type) and issubclass(error, BaseException)):
            raise ConfigurationError(f"--raises {reference!r} names no exception class")
        errors.append(error)
    chosen: list[Property] = [raises_only(*errors)]
    if options.answers_every_call:
        chosen.append(answers_every_tool_call())
    return chosen


def _settings(database: Path | None) -> Settings:
    found = DirectoryBasedExampleDatabase(database) if database is not None else None
    return Settings(database=found, derandomize=False)
