"""The user's agent a scenario runs: the builder ``agent.builder`` names, and what a scenario may
change of it.

A scenario runs the user's agent when a builder is given in Python (``run_scenario(scenario,
builder=...)``, which wins) or named by the file (``agent: {builder: "package.module:function"}``);
the pytest plugin's ``agentrig_builder`` fixture gives one to collected files that name none. The
scenario brings the scripted model, and its ``system_prompt`` may not silently replace the
builder's: that needs ``system_prompt_override: true``.
"""

from __future__ import annotations

import re

from agentrig import AgentBuilder, UseContextConfig
from agentrig._text import clipped
from agentrig.errors import ConfigurationError
from agentrig.harness.scenarios.model import BUILDER_REFERENCE_PATTERN, Scenario
from agentrig.harness.scenarios.user_code import (
    describe_failure,
    import_user_module,
    is_missing_itself,
)

__all__ = [
    "builder_prompt",
    "named_builder",
    "prompt_conflict",
    "resolve_builder",
    "resolve_reference",
]


def named_builder(scenario: Scenario) -> AgentBuilder | None:
    """The builder ``scenario``'s ``agent.builder`` names (None when it names none); raises
    ``ConfigurationError`` when it cannot be made."""
    reference = scenario.agent.builder
    return None if reference is None else resolve_builder(reference)


def prompt_conflict(scenario: Scenario, builder: AgentBuilder | None) -> str | None:
    """Why ``scenario`` may not run ``builder``: its ``system_prompt`` would replace the one the
    builder sets, without ``system_prompt_override: true``. None when it may."""
    spec = scenario.agent
    if not spec.prompt_text.strip() or spec.system_prompt_override:
        return None
    if not isinstance(builder, AgentBuilder):  # None, or a mistake that building reports
        return None
    own = builder_prompt(builder)
    if own is None:
        return None
    return (
        f"agent.system_prompt would replace the system prompt the agent's builder sets "
        f"({clipped(own, 60)!r}): remove it to test the agent's own prompt, or add "
        "system_prompt_override: true to replace it on purpose"
    )


def builder_prompt(builder: AgentBuilder) -> str | None:
    """The system prompt ``builder`` sets through ``UseContextConfig`` (the last one wins), or
    None when it sets none."""
    prompts = [
        capability.system_prompt
        for capability in builder.capabilities()
        if isinstance(capability, UseContextConfig) and capability.system_prompt.strip()
    ]
    return prompts[-1] if prompts else None


def resolve_builder(reference: str) -> AgentBuilder:
    """The ``AgentBuilder`` that ``"package.module:function"`` makes (the function is called with
    no arguments) or names (``"package.module:builder"``). The module is imported like a
    ``--plugin`` module: from the Python path, then the current folder. Raises
    ``ConfigurationError`` saying what failed and where."""
    where = f"builder {reference!r}"
    value = resolve_reference(reference, where)
    if isinstance(value, AgentBuilder):
        return value
    if not callable(value):
        raise ConfigurationError(
            f"{where} is {type(value).__name__} {value!r}: name a function that returns an "
            "AgentBuilder, or an AgentBuilder"
        )
    try:
        made = value()
    except Exception as error:  # the user's function failed
        raise ConfigurationError(f"{where} raised {describe_failure(error)}") from error
    if not isinstance(made, AgentBuilder):
        raise ConfigurationError(
            f"{where} returned {type(made).__name__} {made!r}, not an AgentBuilder (return the "
            "builder itself, before build())"
        )
    return made


def resolve_reference(reference: str, where: str) -> object:
    """The object ``"package.module:name"`` names (``name`` may be dotted), the module imported
    like a ``--plugin`` module. Raises ``ConfigurationError`` starting with ``where``."""
    if not isinstance(reference, str) or not re.match(BUILDER_REFERENCE_PATTERN, reference):
        raise ConfigurationError(f"{where} is not a reference{_reference_hint(reference)}")
    module_name, _, attribute = reference.partition(":")
    try:
        module = import_user_module(module_name)
    except ModuleNotFoundError as error:
        if not is_missing_itself(module_name, error):  # found; what it imports is missing
            raise ConfigurationError(
                f"{where}: module {module_name!r} failed to import: {describe_failure(error)}; "
                f"install {error.name!r} where agentrig runs"
            ) from error
        raise ConfigurationError(
            f"{where}: cannot import module {module_name!r}: {error}; run from the folder that "
            "holds it or add that folder to PYTHONPATH"
        ) from error
    except Exception as error:  # the user's module failed: say where, not a traceback
        raise ConfigurationError(
            f"{where}: module {module_name!r} failed to import: {describe_failure(error)}"
        ) from error
    value: object = module
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise ConfigurationError(f"{where}: module {module_name!r} has no {attribute!r}")
        value = getattr(value, part)
    return value


def _reference_hint(reference: object) -> str:
    """What to write instead of a malformed builder reference."""
    hint = ": write 'package.module:function' (the module's dotted name, a colon, the function)"
    if isinstance(reference, str) and ":" not in reference and "." in reference.strip("."):
        module_name, _, attribute = reference.rpartition(".")
        hint += f", e.g. {module_name + ':' + attribute!r}"
    return hint
