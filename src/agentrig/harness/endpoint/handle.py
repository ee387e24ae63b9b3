"""One agent's way into the endpoint: its API key, base URLs and HTTP clients, in-process or
over a live loopback server, and the check that fails a test with the domain diff."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentrig.harness.endpoint.capture import CapturedRequest
from agentrig.harness.endpoint.function import ReplyFunction
from agentrig.harness.endpoint.server import EndpointServer
from agentrig.harness.endpoint.service import ProviderBaseUrls, ScenarioEndpoint
from agentrig.harness.endpoint.session import EndpointSession
from agentrig.harness.endpoint.transports import httpx2_transport, httpx_transport
from agentrig.harness.reporting.terminal import format_scenario_failures
from agentrig.harness.results import ScenarioResult
from agentrig.harness.scenarios.loader import load_scenario
from agentrig.harness.scenarios.model import Scenario

IN_PROCESS_HOST = "agentrig-endpoint.invalid"
"""The host of in-process base URLs: ``.invalid`` never resolves, so a client that was not given
the endpoint's transport fails at once instead of reaching anything."""

PROVIDER_HOSTS = ("api.openai.com", "api.anthropic.com", "generativelanguage.googleapis.com")
"""The hosts ``intercept()`` captures."""


class EndpointCheckFailed(AssertionError):
    """The agent broke an over-the-wire invariant, missed an expectation, or left script unused."""


def _default_key(scenario: Scenario) -> str:
    if any(turn.mixture is not None for turn in scenario.turns):
        return scenario.name
    return f"{scenario.name}/{uuid.uuid4().hex[:12]}"


class EndpointHandle(ProviderBaseUrls):
    """A scenario served to one agent: in-process by default, or on a live server (``live=True``).

    Give the agent ``api_key`` and a base URL; in-process, also one of the clients (or
    transports) below, or wrap the agent in ``intercept()``. ``check()`` raises
    ``EndpointCheckFailed`` with every failure; the pytest fixture calls it when the test's
    body ends, unless the body did. ``requests()`` gives what the agent sent.
    """

    def __init__(
        self,
        scenario: Scenario | str | Path,
        *,
        live: bool = False,
        key: str | None = None,
        replies: ReplyFunction | None = None,
    ) -> None:
        self.scenario = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
        self.endpoint = ScenarioEndpoint([self.scenario], capture=True, replies=replies)
        """The endpoint serving the session (``replies``: a function deciding each reply, in
        place of the turns' ``model:`` scripts, which it then refuses)."""
        self.api_key = key or _default_key(self.scenario)
        """The API key, the session's key: ``key``, else ``NAME/RANDOM``; for a scenario with a
        ``mixture`` turn, ``NAME``, so that a test plays the same branches on every run (give
        ``key=`` to play those of another session, ``NAME/trial-7``)."""
        self.checked = False
        """Whether ``check()`` was called: the pytest fixture then leaves the verdict to it."""
        self._server = EndpointServer(self.endpoint).start() if live else None
        self._base_url = self._server.base_url if self._server else f"http://{IN_PROCESS_HOST}"

    @property
    def base_url(self) -> str:
        """``http://host:port`` of the live server, or the in-process host."""
        return self._base_url

    @property
    def live(self) -> bool:
        """Whether a real server on loopback answers (else only the clients made here reach it)."""
        return self._server is not None

    def play(self, scenario: Scenario) -> EndpointSession:
        """Serve ``scenario`` (built in memory or loaded) as a fresh session with this handle's
        API key, in place of the one before; ``result()`` and ``check()`` then read the new
        session. The clients and the live server stay as they are."""
        self.scenario = scenario
        return self.endpoint.start_session(scenario, self.api_key)

    # --- clients ---------------------------------------------------------------------------

    def httpx2_transport(self) -> Any:
        """An httpx2 transport answering in-process (the SDKs' ``http_client`` library)."""
        return httpx2_transport(self.endpoint)

    def httpx_transport(self) -> Any:
        """An httpx transport answering in-process."""
        return httpx_transport(self.endpoint)

    def httpx2_client(self, **options: Any) -> Any:
        """An ``httpx2.Client`` that reaches this endpoint (pass as ``http_client=``)."""
        import httpx2

        return httpx2.Client(**self._client_options(self.httpx2_transport, options))

    def async_httpx2_client(self, **options: Any) -> Any:
        """An ``httpx2.AsyncClient`` that reaches this endpoint."""
        import httpx2

        return httpx2.AsyncClient(**self._client_options(self.httpx2_transport, options))

    def httpx_client(self, **options: Any) -> Any:
        """An ``httpx.Client`` that reaches this endpoint."""
        import httpx

        return httpx.Client(**self._client_options(self.httpx_transport, options))

    def async_httpx_client(self, **options: Any) -> Any:
        """An ``httpx.AsyncClient`` that reaches this endpoint."""
        import httpx

        return httpx.AsyncClient(**self._client_options(self.httpx_transport, options))

    def _client_options(self, transport: Any, options: dict[str, Any]) -> dict[str, Any]:
        if not self.live:
            options.setdefault("transport", transport())
        options.setdefault("timeout", 30.0)
        return options

    @contextlib.contextmanager
    def intercept(self) -> Iterator[None]:
        """Route every httpx2 and httpx request to ``api.openai.com``, ``api.anthropic.com``
        and ``generativelanguage.googleapis.com`` (Gemini) to this endpoint (through respx), for code that builds its own clients with the
        providers' default hosts. Other hosts pass through. Needs ``respx`` and
        ``pytest-httpx2``."""
        from agentrig.harness.endpoint.intercept import intercepted

        with intercepted(self.endpoint, self.api_key, PROVIDER_HOSTS):
            yield

    # --- results ---------------------------------------------------------------------------

    def requests(self) -> list[CapturedRequest]:
        """Every request the agent sent so far, in order: its JSON body (``.body``), headers
        (names in lower case), path, and the status it was answered with."""
        return self.endpoint.requests(self.api_key)

    def result(self) -> ScenarioResult:
        """The session's result (ends it). A session no request reached fails its script."""
        return self.endpoint.session(self.api_key).result()

    def check(self) -> ScenarioResult:
        """The result; ``EndpointCheckFailed`` with the domain diff when anything failed."""
        self.checked = True
        result = self.result()
        if not result.passed:
            raise EndpointCheckFailed(format_scenario_failures(result))
        return result

    def close(self) -> None:
        """Stop the live server, if any."""
        if self._server is not None:
            self._server.stop()

    def __enter__(self) -> EndpointHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
