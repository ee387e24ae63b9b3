"""``UseLlmConfig``: the inference provider, default LLM config and retries."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentrig.drivers.provider import AsyncInferenceProvider, InferenceProvider
from agentrig.drivers.tool_calling import ToolCallingDriver
from agentrig.errors import ConfigurationError, InvalidInputError
from agentrig.state import LlmConfig

if TYPE_CHECKING:
    from agentrig.builder import AgentBuilder


class UseLlmConfig:
    """Use ``provider`` (or keep the builder's driver) with ``llm_config`` and up to
    ``max_retries`` inference attempts per step. Exhausted retries stop with ``retry_limit``."""

    def __init__(
        self,
        provider: InferenceProvider | AsyncInferenceProvider | None = None,
        *,
        llm_config: LlmConfig | dict[str, Any] | None = None,
        max_retries: int = 1,
    ) -> None:
        if provider is not None and not isinstance(
            provider, InferenceProvider | AsyncInferenceProvider
        ):
            raise ConfigurationError(
                "UseLlmConfig needs an InferenceProvider (an object with infer(request) or "
                f"async ainfer(request)), got "
                f"{provider!r}: to use a model by name, pass e.g. OpenAIProvider(model=...)"
            )
        if type(max_retries) is not int or max_retries < 1:
            raise ConfigurationError(
                f"UseLlmConfig max_retries must be a whole number >= 1, got {max_retries!r}: "
                "the inference attempts per step (1 = no retry)"
            )
        self.provider = provider
        self.llm_config = _llm_config(llm_config)
        self.max_retries = max_retries

    def install(self, builder: AgentBuilder) -> None:
        """Set or reconfigure the builder's ``ToolCallingDriver``."""
        driver = builder.driver()
        if self.provider is not None:
            driver = (
                driver.with_provider(self.provider)
                if isinstance(driver, ToolCallingDriver)
                else ToolCallingDriver(self.provider)
            )
        if not isinstance(driver, ToolCallingDriver):
            raise ConfigurationError(
                "UseLlmConfig needs a provider, or a ToolCallingDriver set earlier with with_driver()"
            )
        if self.llm_config is not None:
            driver = driver.with_llm_config(self.llm_config)
        builder.with_driver(driver.with_max_attempts(self.max_retries))

    def __repr__(self) -> str:
        return f"UseLlmConfig(max_retries={self.max_retries})"


def _llm_config(config: object) -> LlmConfig | None:
    """``config`` as an ``LlmConfig`` (a dict of its fields is accepted), checked now rather than
    when the first state is built."""
    if config is None or isinstance(config, LlmConfig):
        return config
    if not isinstance(config, dict):
        reason = f"expected an LlmConfig (or a dict of its fields), got {type(config).__name__}"
        raise InvalidInputError("UseLlmConfig", [("llm_config", reason)])
    try:
        return LlmConfig(**config)
    except InvalidInputError as error:
        problems = [(f"llm_config.{field}".rstrip("."), why) for field, why in error.problems]
        raise InvalidInputError("UseLlmConfig", problems) from None
    except TypeError as error:  # a key that is not text
        raise InvalidInputError("UseLlmConfig", [("llm_config", str(error))]) from None
