"""Record and replay at the inference boundary (docs/record-replay.md).

Record a session with a real provider, replay it strictly in tests, and convert it into an
editable scenario file::

    from agentrig.harness.cassettes import cassette_provider

    provider = cassette_provider("cassettes/weather.yaml", real_provider, mode="once")
    agent = build_agent(provider)          # the provider plugs in like any other
    ...
    provider.assert_complete()             # every recorded interaction was played
"""

from agentrig.harness.cassettes.convert import cassette_to_scenario, scenario_name
from agentrig.harness.cassettes.errors import (
    CassetteConversionError,
    CassetteError,
    CassetteFileError,
    CassetteMismatchError,
    CassetteNotFoundError,
    ReplayedProviderError,
    UnusedInteractionsError,
)
from agentrig.harness.cassettes.files import (
    cassette_from_yaml,
    cassette_to_yaml,
    load_cassette,
    save_cassette,
)
from agentrig.harness.cassettes.model import (
    CASSETTE_VERSION,
    Cassette,
    CassetteMetadata,
    Interaction,
    RecordedError,
    RecordedLlmConfig,
    RecordedMessage,
    RecordedRequest,
    RecordedResponse,
    RecordedTool,
    RecordedToolCall,
    RecordedUsage,
)
from agentrig.harness.cassettes.normalize import (
    normalize_request,
    record_error,
    record_response,
    record_usage,
    to_response,
)
from agentrig.harness.cassettes.providers import (
    CassetteProvider,
    RecordingProvider,
    RecordMode,
    ReplayProvider,
    cassette_provider,
)
from agentrig.harness.cassettes.scrub import DEFAULT_KEYS, DEFAULT_PATTERNS, PLACEHOLDER, Scrubber

__all__ = [
    "CASSETTE_VERSION",
    "DEFAULT_KEYS",
    "DEFAULT_PATTERNS",
    "PLACEHOLDER",
    "Cassette",
    "CassetteConversionError",
    "CassetteError",
    "CassetteFileError",
    "CassetteMetadata",
    "CassetteMismatchError",
    "CassetteNotFoundError",
    "CassetteProvider",
    "Interaction",
    "RecordMode",
    "RecordedError",
    "RecordedLlmConfig",
    "RecordedMessage",
    "RecordedRequest",
    "RecordedResponse",
    "RecordedTool",
    "RecordedToolCall",
    "RecordedUsage",
    "RecordingProvider",
    "ReplayProvider",
    "ReplayedProviderError",
    "Scrubber",
    "UnusedInteractionsError",
    "cassette_from_yaml",
    "cassette_provider",
    "cassette_to_scenario",
    "cassette_to_yaml",
    "load_cassette",
    "normalize_request",
    "record_error",
    "record_response",
    "record_usage",
    "save_cassette",
    "scenario_name",
    "to_response",
]
