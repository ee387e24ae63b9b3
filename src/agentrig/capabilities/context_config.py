"""``UseContextConfig``: apply a system prompt and response format before every step."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import JsonValue, TypeAdapter, ValidationError

from agentrig._model import JsonObject, problems_of
from agentrig.errors import InvalidInputError
from agentrig.hooks import HookContext, HookTrigger

if TYPE_CHECKING:
    from agentrig.builder import AgentBuilder

CONTEXT_CONFIG_PRIORITY = 100
_JSON_OBJECT: TypeAdapter[dict[str, JsonValue]] = TypeAdapter(JsonObject)


class UseContextConfig:
    """Set the state's system prompt and response format at the start of each step."""

    def __init__(
        self, system_prompt: str = "", response_format: dict[str, JsonValue] | None = None
    ) -> None:
        problems: list[tuple[str, str]] = []
        if not isinstance(system_prompt, str):
            problems.append(("system_prompt", f"expected text, got {type(system_prompt).__name__}"))
        if response_format is not None and not isinstance(response_format, dict):
            got = type(response_format).__name__
            problems.append(
                ("response_format", f"expected a dict (a JSON Schema) or None, got {got}")
            )
        elif response_format is not None:
            try:
                _JSON_OBJECT.validate_python(response_format)
            except ValidationError as error:
                problems.extend(("response_format", why) for _, why in problems_of(error))
        if problems:
            raise InvalidInputError("UseContextConfig", problems)
        self.system_prompt = system_prompt
        self.response_format = response_format

    def install(self, builder: AgentBuilder) -> None:
        """Register the hook (nothing to do for an empty prompt and no format)."""
        if self.system_prompt.strip() or self.response_format:
            builder.add_hook(
                self._apply, HookTrigger.BEFORE_STEP, CONTEXT_CONFIG_PRIORITY, "context:config"
            )

    def _apply(self, context: HookContext) -> HookContext | None:
        state = context.state
        if self.system_prompt.strip() and state.context.system_prompt != self.system_prompt:
            state = state.with_system_prompt(self.system_prompt)
        if self.response_format and state.context.response_format != self.response_format:
            state = state.with_response_format(self.response_format)
        return None if state is context.state else context.with_state(state)

    def __repr__(self) -> str:
        return f"UseContextConfig(system_prompt={self.system_prompt!r})"
