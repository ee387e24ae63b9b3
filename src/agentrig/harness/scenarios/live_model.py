"""The live part of the scenario format: ``user:``, ``judge:`` and ``trials:``.

A scenario with these keys (and no ``turns:``) is *live*: a real model behind the agent, a
simulated user that talks to it, a judge that decides whether each trial succeeded, and a verdict
drawn from repeated trials. The models are declarative, like the rest of the format; the code
that plays them is :mod:`agentrig.harness.live`, imported only when a live scenario runs.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, ConfigDict, Field, Strict
from pydantic.config import JsonDict

from agentrig.harness.scenarios.model import (
    IDENTIFIER_PATTERN,
    CallField,
    Flag,
    Identifier,
    Positive,
    RuledModel,
    ScenarioModel,
    Text,
    TextMatchSpec,
    given_schema,
)
from agentrig.harness.scenarios.price import Money, Price, price_problem, price_schema
from agentrig.harness.scenarios.yaml_source import FieldPath

__all__ = [
    "METRIC_PATTERN",
    "CriterionSpec",
    "JudgeSpec",
    "LiveCheck",
    "LiveModelSpec",
    "ProviderName",
    "RequirementSpec",
    "TrialsSpec",
    "UserSpec",
    "UserStopSpec",
]

ProviderName = Literal["openai", "openai-responses", "anthropic"]
METRIC_PATTERN = r"^(rate|pass\^[1-9][0-9]*|pass@[1-9][0-9]*)$"
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"

Probability = Annotated[float, Strict(), Field(gt=0, lt=1, allow_inf_nan=False)]
Temperature = Annotated[float, Strict(), Field(ge=0, le=2, allow_inf_nan=False)]
_NOT_BLANK = r"\S"
"""A JSON Schema pattern for a text that is not all blanks (the models strip it to check)."""


def _facts_schema(schema: JsonDict) -> None:
    """``knows``: names (identifiers) to texts that are not blank."""
    patterns = schema.get("patternProperties")
    assert isinstance(patterns, dict)
    for value in patterns.values():
        assert isinstance(value, dict)
        value["pattern"] = _NOT_BLANK
    schema["additionalProperties"] = False


def _text_option(**extra: Any) -> Any:
    """A field's JSON Schema with ``extra`` added to its text option (``anyOf`` [text, null])."""

    def change(schema: JsonDict) -> None:
        options = schema.get("anyOf")
        assert isinstance(options, list)
        for option in options:
            if isinstance(option, dict) and option.get("type") == "string":
                option.update(extra)

    return change


class LiveModelSpec(RuledModel):
    """A real model a live scenario talks to: the simulated user's or the judge's."""

    provider: ProviderName = Field(
        description="openai (Chat Completions), openai-responses (the Responses API) or "
        "anthropic (Messages)."
    )
    name: Annotated[str, Strict(), Field(min_length=1)] = Field(
        description="The model's name, e.g. gpt-4.1-mini."
    )
    temperature: Temperature | None = Field(default=None, description="Sampling temperature.")
    max_tokens: Positive | None = Field(default=None, description="Most output tokens a call.")
    base_url: Text | None = Field(
        default=None,
        description="The API's base URL (a compatible server, or agentrig serve in tests); "
        "default: the provider's, or OPENAI_BASE_URL / ANTHROPIC_BASE_URL.",
    )
    api_key_env: Annotated[str, Strict(), Field(pattern=ENV_NAME_PATTERN)] | None = Field(
        default=None,
        description="The environment variable holding the API key; default OPENAI_API_KEY or "
        "ANTHROPIC_API_KEY.",
    )
    price: Price | None = Field(
        default=None,
        description="USD per million tokens, e.g. {input: 0.4, output: 1.6}: the cost of this "
        "role's calls in the report (without it they cost 0).",
        json_schema_extra=price_schema,
    )

    def key_variable(self) -> str:
        """The environment variable the API key is read from."""
        if self.api_key_env is not None:
            return self.api_key_env
        return "ANTHROPIC_API_KEY" if self.provider == "anthropic" else "OPENAI_API_KEY"

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        problem = price_problem(self.price)
        if problem is not None:
            yield ("price",), problem


class UserStopSpec(RuledModel):
    """When the simulated user's conversation ends."""

    min_turns: Positive = Field(
        default=1, description="The user may not end the conversation before this many turns."
    )
    max_turns: Positive = Field(
        default=8, description="The conversation ends after this many user turns."
    )
    not_before_tool: tuple[Identifier, ...] = Field(
        default=(),
        description="The user may not end the conversation before the agent called these tools; "
        "a user that does made a mistake (the trial is set aside, not failed).",
    )

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        if self.min_turns > self.max_turns:
            yield ("min_turns",), f"min_turns ({self.min_turns}) exceeds max_turns"


class UserSpec(RuledModel):
    """The simulated user: an LLM with a persona and a goal that talks to the agent."""

    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                given_schema("model"),
                {  # one scripted turn needs no model
                    "required": ["opening", "stop"],
                    "properties": {
                        "opening": {"type": "string"},
                        "stop": {
                            "required": ["max_turns"],
                            "properties": {"max_turns": {"const": 1}},
                        },
                    },
                },
            ]
        }
    )

    persona: Annotated[str, Strict(), Field(min_length=1)] = Field(
        description="Who the user is and how they talk."
    )
    goal: Annotated[str, Strict(), Field(min_length=1)] = Field(
        description="What the user wants from the agent."
    )
    knows: dict[Identifier, Text] = Field(
        default_factory=dict,
        description="The only facts the user may disclose, by name. A user message carrying a "
        "value shaped like one of them but not among them (another order id, another e-mail) "
        "is the simulated user's mistake.",
        json_schema_extra=_facts_schema,
    )
    opening: Text | None = Field(
        default=None,
        description="The user's first message, fixed (else the model writes it).",
        json_schema_extra=_text_option(minLength=1),
    )
    stop: UserStopSpec = Field(
        default_factory=UserStopSpec, description="When the conversation ends."
    )
    model: LiveModelSpec | None = Field(default=None, description="The model that plays the user.")

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        scripted_only = self.opening is not None and self.stop.max_turns == 1
        if self.model is None and not scripted_only:
            yield (
                ("model",),
                "a simulated user needs a model, e.g. {provider: openai, name: gpt-4.1-mini} "
                "(only a one-turn conversation with an opening needs none)",
            )
        if self.opening == "":
            yield ("opening",), "an opening needs a text (or leave it out)"
        for name, value in self.knows.items():
            if not value.strip():
                yield ("knows", name), "a fact needs a value"


def _bare_name_schema(schema: JsonDict) -> None:
    """``tool_called`` also takes a bare tool name."""
    options = schema.get("anyOf")
    assert isinstance(options, list)
    bare: JsonDict = {
        "type": "string",
        "pattern": r"^\s*" + IDENTIFIER_PATTERN.strip("^$") + r"\s*$",
        "description": "A tool's name: any call of it.",
    }
    options.insert(0, bare)


def _bare_name_as_call(value: object) -> object:
    """``name`` (no parentheses) as the call ``name()``, which matches any arguments."""
    if isinstance(value, str) and re.fullmatch(IDENTIFIER_PATTERN, value.strip()):
        return {"name": value.strip()}
    return value


_CHECKS = ("tool_called", "final_response", "said")


class LiveCheck(RuledModel):
    """A deterministic check on a trial's transcript: exactly one of ``tool_called``,
    ``final_response`` or ``said``."""

    model_config = ConfigDict(json_schema_extra={"oneOf": [given_schema(k) for k in _CHECKS]})

    tool_called: Annotated[CallField, BeforeValidator(_bare_name_as_call)] | None = Field(
        default=None,
        description="The agent called this tool with at least these arguments, e.g. "
        "issue_refund(order_id=A-1029); a bare name (delete_account) matches any call of it.",
        json_schema_extra=_bare_name_schema,
    )
    final_response: TextMatchSpec | None = Field(
        default=None, description="The agent's last reply in the conversation."
    )
    said: TextMatchSpec | None = Field(
        default=None, description="Some reply of the agent in the conversation."
    )

    def describe(self) -> str:
        """The check in words, for reports."""
        if self.tool_called is not None:
            return f"tool_called {self.tool_called.shorthand()}"
        key = "final_response" if self.final_response is not None else "said"
        match = self.final_response or self.said
        assert match is not None
        shown = match.model_dump(exclude_none=True)
        return f"{key} {shown}"

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        given = [k for k in ("tool_called", "final_response", "said") if getattr(self, k)]
        if len(given) != 1:
            yield (), "use exactly one of: tool_called, final_response, said"


class CriterionSpec(RuledModel):
    """One thing the judge decides: a deterministic ``check``, a ``never`` rule (checked after
    every agent reply; broken, it ends the trial as a failure), or an LLM-judged ``rubric``."""

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {**given_schema("check"), "not": {"required": ["votes"]}},
                {**given_schema("never"), "not": {"required": ["votes"]}},
                given_schema("rubric"),
            ]
        }
    )

    id: Identifier = Field(description="The criterion's name in reports.")
    check: LiveCheck | None = Field(default=None, description="Must hold at the end.")
    never: LiveCheck | None = Field(
        default=None, description="Must never hold; checked after each agent reply."
    )
    rubric: Text | None = Field(
        default=None,
        description="A statement the judge model decides from the transcript.",
        json_schema_extra=_text_option(pattern=_NOT_BLANK),
    )
    votes: Positive = Field(
        default=1,
        description="With rubric: how many times the judge is asked; the majority of passed / "
        "failed decides, a tie (or a majority of inconclusive) is inconclusive.",
    )

    @property
    def kind(self) -> Literal["check", "never", "rubric"]:
        """Which of ``check``, ``never`` or ``rubric`` this criterion is."""
        if self.check is not None:
            return "check"
        return "never" if self.never is not None else "rubric"

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        given = [k for k in ("check", "never", "rubric") if getattr(self, k) is not None]
        if len(given) != 1:
            yield (), "use exactly one of: check, never, rubric"
        if self.rubric is not None and not self.rubric.strip():
            yield ("rubric",), "a rubric needs a statement to judge"
        if self.rubric is None and "votes" in self.model_fields_set:
            yield ("votes",), "votes only applies to a rubric"


class JudgeSpec(RuledModel):
    """How a trial is judged: every criterion must pass for the trial to succeed."""

    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [  # no rubric, or a model to judge it
                {"properties": {"criteria": {"items": {"not": given_schema("rubric")}}}},
                given_schema("model"),
            ]
        }
    )

    criteria: Annotated[tuple[CriterionSpec, ...], Field(min_length=1)] = Field(
        description="The criteria, deterministic ones decided first."
    )
    model: LiveModelSpec | None = Field(
        default=None, description="The model that judges rubric criteria."
    )

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        seen: set[str] = set()
        for index, criterion in enumerate(self.criteria):
            if criterion.id in seen:
                yield ("criteria", index, "id"), f"criterion id {criterion.id!r} is used twice"
            seen.add(criterion.id)
        rubric = next((i for i, c in enumerate(self.criteria) if c.rubric is not None), None)
        if rubric is not None and self.model is None:
            yield (
                ("model",),
                f"criterion {self.criteria[rubric].id!r} is a rubric: the judge needs a model, "
                "e.g. {provider: anthropic, name: claude-sonnet-4-5}",
            )


class RequirementSpec(ScenarioModel):
    """What the agent must achieve: a metric at least a value, decided at a confidence."""

    metric: Annotated[str, Strict(), Field(pattern=METRIC_PATTERN)] = Field(
        default="rate",
        description="rate (the success rate), pass^K (all of K trials succeed: tau-bench's "
        "C(c,K)/C(n,K)) or pass@K (at least one of K succeeds).",
    )
    at_least: Probability = Field(description="The metric's required value, in (0, 1).")
    confidence: Annotated[float, Strict(), Field(ge=0.5, lt=1, allow_inf_nan=False)] = Field(
        default=0.95, description="The confidence of the verdict, in [0.5, 1)."
    )
    indifference: Annotated[float, Strict(), Field(gt=0, lt=0.5, allow_inf_nan=False)] = Field(
        default=0.05,
        description="With sequential stopping: success rates this close to the threshold may "
        "be decided either way.",
    )


class TrialsSpec(RuledModel):
    """How many trials run, and what they must show."""

    require: RequirementSpec = Field(description="The requirement the verdict decides.")
    max: Positive = Field(default=30, description="The most trials counted toward the verdict.")
    sequential: Flag = Field(
        default=True,
        description="Stop as soon as the verdict is decided (false: always run max trials).",
    )
    report_k: tuple[Positive, ...] = Field(
        default=(),
        description="Extra k for which pass^k and pass@k are reported (the metric's k always is).",
    )
    budget_usd: Money | None = Field(
        default=None, description="The most this scenario's trials may spend, in USD."
    )
    concurrency: Positive = Field(default=4, description="Trials of this scenario run at once.")
    max_set_aside: Annotated[int, Strict(), Field(ge=0)] | None = Field(
        default=None,
        description="The most trials set aside (the simulated user's mistakes, infrastructure "
        "errors) before the scenario stops INCONCLUSIVE; default: max.",
    )
    seed: Annotated[int, Strict(), Field(ge=0)] = Field(
        default=0, description="Seeds each trial (trial i gets a seed derived from it and i)."
    )

    def _problems(self) -> Iterator[tuple[FieldPath, str]]:
        match = re.match(r"^pass[\^@]([0-9]+)$", self.require.metric)
        if match is not None and int(match.group(1)) > self.max:
            yield (
                ("require", "metric"),
                f"{self.require.metric} needs at least {match.group(1)} trials; max is {self.max}",
            )


def _complete_the_scenario_model() -> None:
    """Give the scenario model its live keys and complete ``Scenario`` with them, when this
    module was imported first: the model, importing it back as it defined ``Scenario``, found it
    half-built (see the end of :mod:`~agentrig.harness.scenarios.model`)."""
    model = sys.modules["agentrig.harness.scenarios.model"]
    if getattr(model, "UserSpec", None) is UserSpec:  # the model was first: it has them
        return
    for key in (JudgeSpec, TrialsSpec, UserSpec):
        setattr(model, key.__name__, key)
    scenario = getattr(model, "Scenario", None)
    if scenario is not None:  # None: the model is first and still on its way to Scenario
        scenario.model_rebuild()


_complete_the_scenario_model()
