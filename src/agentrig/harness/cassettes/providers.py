"""Inference providers that record to and replay from cassettes.

``RecordingProvider`` asks a real (or fake) provider and records every interaction;
``ReplayProvider`` answers from a cassette and fails loudly on a request it has no recording
for; :func:`cassette_provider` picks one from a record mode, like vcrpy's.
"""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path
from typing import Any

from agentrig import __version__
from agentrig.clock import IdFactory, current_ids, runtime_context
from agentrig.drivers import InferenceProvider
from agentrig.errors import InvalidInputError, ProviderError
from agentrig.harness.cassettes.errors import (
    CassetteError,
    CassetteMismatchError,
    CassetteNotFoundError,
    UnusedInteractionsError,
)
from agentrig.harness.cassettes.files import load_cassette, refuse_non_file, save_cassette
from agentrig.harness.cassettes.matching import (
    fitted,
    nearest,
    request_diff,
    request_key,
    summarize,
)
from agentrig.harness.cassettes.model import (
    Cassette,
    CassetteMetadata,
    Interaction,
    RecordedRequest,
)
from agentrig.harness.cassettes.normalize import (
    normalize_request,
    record_error,
    record_response,
    replay_error,
    to_response,
)
from agentrig.harness.cassettes.scrub import Scrubber
from agentrig.state import InferenceRequest, InferenceResponse

__all__ = [
    "CassetteProvider",
    "RecordMode",
    "RecordingProvider",
    "ReplayProvider",
    "cassette_provider",
]

StrPath = str | os.PathLike[str]


class RecordMode(StrEnum):
    """When a cassette records, as in vcrpy."""

    NONE = "none"
    """Replay only; the cassette must exist."""
    ONCE = "once"
    """Record when the cassette does not exist, else replay only (the default)."""
    NEW_EPISODES = "new_episodes"
    """Replay what matches; record requests that match nothing and append them."""
    ALL = "all"
    """Record everything again, replacing the cassette."""

    @classmethod
    def parse(cls, value: RecordMode | str | None) -> RecordMode:
        """``value`` as a mode (None is ``once``); an unknown name lists the valid ones."""
        if value is None:
            return cls.ONCE
        try:
            return cls(value)
        except ValueError:
            valid = ", ".join(mode.value for mode in cls)
            reason = f"{value!r} is not a record mode; valid: {valid}"
            raise InvalidInputError("record mode", [("", reason)]) from None


class RecordingProvider:
    """Asks ``inner`` and records each request with its response (or ``ProviderError``).

    With ``path``, the cassette is written after every interaction (atomically). ``cassette``
    holds interactions to keep before the new ones (mode ``new_episodes``).
    """

    def __init__(
        self,
        inner: InferenceProvider,
        *,
        path: StrPath | None = None,
        scrubber: Scrubber | None = None,
        cassette: Cassette | None = None,
    ) -> None:
        self.inner = inner
        self.path = os.fspath(path) if path is not None else None
        if self.path is not None:
            refuse_non_file(self.path)
        self.scrubber = scrubber if scrubber is not None else Scrubber()
        self._cassette = cassette if cassette is not None else _new_cassette(inner)
        self.recorded = 0
        """How many interactions this provider recorded."""

    @property
    def cassette(self) -> Cassette:
        """Everything recorded so far (after any interactions it started with)."""
        return self._cassette

    def infer(self, request: InferenceRequest) -> InferenceResponse:
        """Ask the inner provider and record the outcome."""
        live = self.scrubber.scrub_model(normalize_request(request))
        noting = _NotingIds(current_ids())
        try:
            with runtime_context(ids=noting):
                response = self.inner.infer(request)
        except ProviderError as error:
            self._add(
                Interaction(request=live, error=self.scrubber.scrub_model(record_error(error)))
            )
            raise
        recorded = self.scrubber.scrub_model(record_response(response, made_up=noting.made))
        self._add(Interaction(request=live, response=recorded))
        return response

    def _add(self, interaction: Interaction) -> None:
        self._cassette = _with_metadata(self._cassette.appended(interaction), interaction)
        self.recorded += 1
        if self.path is not None:
            save_cassette(self._cassette, self.path)

    def unused(self) -> list[tuple[int, str]]:
        """Nothing is unused while recording."""
        return []

    def assert_complete(self) -> None:
        """Recording is always complete."""

    def __repr__(self) -> str:
        return f"RecordingProvider({self.inner!r}, path={self.path!r}, recorded={self.recorded})"


class ReplayProvider:
    """Answers from a cassette, strictly.

    Requests must come in recorded order (``any_order=True``: each matches the first unused
    equal recording). A request that matches nothing raises :class:`CassetteMismatchError` with
    a diff against the nearest recording, unless ``recorder`` records it instead (mode
    ``new_episodes``). A recorded error is raised again as a :class:`ReplayedProviderError` named after
    the original error's class.
    """

    def __init__(
        self,
        cassette: Cassette,
        *,
        path: StrPath = "<cassette>",
        any_order: bool = False,
        scrubber: Scrubber | None = None,
        recorder: RecordingProvider | None = None,
    ) -> None:
        self.cassette = cassette
        self.path = os.fspath(path)
        self.any_order = any_order
        self.scrubber = scrubber if scrubber is not None else Scrubber()
        self.recorder = recorder
        self._keys = [request_key(i.request) for i in cassette.interactions]
        self._played: list[int] = []
        self._cursor = 0
        self.requests = 0
        """How many requests this provider received."""
        self.misses: list[CassetteMismatchError] = []
        """The mismatch errors raised so far."""

    @property
    def played(self) -> tuple[int, ...]:
        """The numbers (from 1) of the interactions played, in the order played."""
        return tuple(index + 1 for index in self._played)

    def infer(self, request: InferenceRequest) -> InferenceResponse:
        """The recorded answer to ``request``."""
        self.requests += 1
        live = self.scrubber.scrub_model(normalize_request(request))
        index = self._find(live)
        if index is None:
            if self.recorder is not None:
                return self.recorder.infer(request)
            miss = self._miss(live)
            self.misses.append(miss)
            raise miss
        self._played.append(index)
        self._cursor = max(self._cursor, index + 1)
        return _play(self.cassette.interactions[index])

    def _matches(self, index: int, live: RecordedRequest) -> bool:
        """Whether ``live`` equals recorded interaction ``index`` in what the recording has."""
        recorded = self.cassette.interactions[index].request
        return self._keys[index] == request_key(fitted(live, recorded))

    def _find(self, live: RecordedRequest) -> int | None:
        if self.any_order:
            played = set(self._played)
            return next(
                (i for i in range(len(self._keys)) if i not in played and self._matches(i, live)),
                None,
            )
        if self._cursor < len(self._keys) and self._matches(self._cursor, live):
            return self._cursor
        return None

    def _unused_indices(self) -> list[int]:
        played = set(self._played)
        return [index for index in range(len(self._keys)) if index not in played]

    def _miss(self, live: RecordedRequest) -> CassetteMismatchError:
        interactions = self.cassette.interactions
        unused = self._unused_indices()
        later = self._recorded_later(live, unused)
        if later is not None:  # the diff to an equal recording would be empty: show the next one
            index: int | None = self._cursor
        else:
            index = nearest(live, interactions, unused or range(len(interactions)))
        diff = (
            ""
            if index is None
            else request_diff(
                interactions[index].request,
                fitted(live, interactions[index].request),
                index + 1,
            )
        )
        return CassetteMismatchError(
            self.path,
            self.requests,
            None if index is None else index + 1,
            diff,
            self._reason(later),
        )

    def _recorded_later(self, live: RecordedRequest, unused: list[int]) -> int | None:
        """The unplayed recording equal to the request when it comes after the next one."""
        if self.any_order:
            return None
        return next((i for i in unused if i > self._cursor and self._matches(i, live)), None)

    def _reason(self, later: int | None = None) -> str:
        total = len(self._keys)
        if later is not None:
            return (
                f"does not match the next recorded interaction ({self._cursor + 1} of {total}) "
                f"but equals recorded interaction {later + 1}, which comes later; requests are "
                "matched in recorded order: replay with any_order=True if the order may change"
            )
        if not self._unused_indices():
            return f"was not recorded: all {total} recorded interaction(s) were already played"
        if self.any_order:
            return "matches no unused recorded interaction"
        return (
            f"does not match the next recorded interaction ({self._cursor + 1} of {total}); "
            "requests are matched in recorded order"
        )

    def unused(self) -> list[tuple[int, str]]:
        """The recorded interactions never played: ``(number, one-line summary)``."""
        interactions = self.cassette.interactions
        return [(index + 1, summarize(interactions[index])) for index in self._unused_indices()]

    def assert_complete(self) -> None:
        """Raise the first mismatch again, or :class:`UnusedInteractionsError` when recorded
        interactions were never played."""
        if self.misses:
            raise self.misses[0]
        unused = self.unused()
        if unused:
            raise UnusedInteractionsError(self.path, unused)

    def __repr__(self) -> str:
        total = len(self.cassette.interactions)
        return f"ReplayProvider({self.path!r}, played={len(self._played)}/{total})"


class _NotingIds:
    """The run's id source, noting the ids it hands out while the recorded provider answers:
    a tool call with one of them had no id from the API (the driver made it up), and is
    recorded without one, so that a replay makes its id up at the same point of the run."""

    def __init__(self, inner: IdFactory) -> None:
        self.inner = inner
        self.made: set[str] = set()

    def new_id(self, kind: str) -> str:
        made = self.inner.new_id(kind)
        self.made.add(made)
        return made

    def __getattr__(self, name: str) -> Any:  # issued(), fork(): the source's own
        return getattr(self.inner, name)


CassetteProvider = RecordingProvider | ReplayProvider
"""What :func:`cassette_provider` returns; both have ``unused()`` and ``assert_complete()``."""


def cassette_provider(
    path: StrPath,
    inner: InferenceProvider | None = None,
    *,
    mode: RecordMode | str | None = None,
    any_order: bool = False,
    scrubber: Scrubber | None = None,
) -> CassetteProvider:
    """A provider for the cassette at ``path`` in record ``mode`` (default ``once``).

    ``inner`` is the provider to record from; it is needed only when the mode records.
    """
    chosen = RecordMode.parse(mode)
    target = os.fspath(path)
    refuse_non_file(target)
    exists = Path(target).is_file()
    if chosen is RecordMode.ALL or (not exists and chosen is not RecordMode.NONE):
        return RecordingProvider(_needed(inner, target, chosen), path=target, scrubber=scrubber)
    if not exists:
        raise CassetteNotFoundError(target, chosen.value)
    cassette = load_cassette(target)
    recorder = None
    if chosen is RecordMode.NEW_EPISODES:
        recorder = RecordingProvider(
            _needed(inner, target, chosen), path=target, scrubber=scrubber, cassette=cassette
        )
    return ReplayProvider(
        cassette, path=target, any_order=any_order, scrubber=scrubber, recorder=recorder
    )


def _needed(inner: InferenceProvider | None, path: str, mode: RecordMode) -> InferenceProvider:
    if inner is None:
        raise CassetteError(
            f"record mode {mode.value!r} records cassette {path} and needs a provider to record "
            "from: pass inner=<the real provider>"
        )
    return inner


def _new_cassette(inner: InferenceProvider) -> Cassette:
    return Cassette(
        metadata=CassetteMetadata(agentrig=__version__, recorded_with=type(inner).__name__)
    )


def _with_metadata(cassette: Cassette, interaction: Interaction) -> Cassette:
    """Fill in the provider and model from the first interaction that names them."""
    metadata = cassette.metadata
    config = interaction.request.llm_config
    response_model = interaction.response.model if interaction.response else ""
    provider = metadata.provider or (config.provider if config else "")
    model = metadata.model or (config.model if config else "") or response_model
    if (provider, model) == (metadata.provider, metadata.model):
        return cassette
    updated = metadata.model_copy(update={"provider": provider, "model": model})
    return cassette.model_copy(update={"metadata": updated})


def _play(interaction: Interaction) -> InferenceResponse:
    if interaction.error is not None:
        raise replay_error(interaction.error)
    assert interaction.response is not None
    return to_response(interaction.response)
