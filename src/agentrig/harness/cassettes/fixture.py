"""What the ``agentrig_cassette`` pytest fixture hands out: a factory of cassette providers
that remembers what it made, so the fixture can check each at teardown."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentrig.drivers import InferenceProvider
from agentrig.errors import AgentrigError, InvalidInputError
from agentrig.harness.cassettes.errors import CassetteError, CassetteFileError
from agentrig.harness.cassettes.providers import CassetteProvider, RecordMode, cassette_provider
from agentrig.harness.cassettes.scrub import Scrubber

__all__ = ["CassetteFactory", "default_cassette_path"]

StrPath = str | os.PathLike[str]
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


_DEFAULT_OWNERS: dict[Path, str] = {}
"""Which test (file and id) each default cassette path was handed to in this process: two ids
that differ only in characters ``_UNSAFE`` replaces would otherwise share a cassette."""


def default_cassette_path(test_file: Path, test_id: str) -> Path:
    """``cassettes/<module>/<test>.yaml`` next to the test file; ``test_id`` is the node id
    after the file (``TestClass::test_name[param]``)."""
    name = _UNSAFE.sub("_", test_id.replace("::", ".")).strip("_")
    return test_file.parent / "cassettes" / test_file.stem / f"{name}.yaml"


class CassetteFactory:
    """Makes cassette providers for the test ``test_id`` (the node id after the file) in
    ``test_file``; a relative ``path`` is relative to the test file's folder.

    Precedence of the record mode: the command line (``forced_mode``), then the call's
    ``mode``, then the marker's, then ``none``: a test records only when asked to.
    """

    def __init__(
        self,
        test_file: Path,
        test_id: str,
        *,
        forced_mode: str | None = None,
        marker: Mapping[str, Any] | None = None,
    ) -> None:
        self.base_dir = test_file.parent
        self.default_path = default_cassette_path(test_file, test_id)
        self.test_key = f"{test_file.name}::{test_id}"
        self.forced_mode = RecordMode.parse(forced_mode) if forced_mode else None
        self.marker = dict(marker or {})
        self.made: list[CassetteProvider] = []

    def __call__(
        self,
        inner: InferenceProvider | None = None,
        *,
        path: StrPath | None = None,
        mode: RecordMode | str | None = None,
        any_order: bool | None = None,
        scrubber: Scrubber | None = None,
    ) -> CassetteProvider:
        """A provider for the cassette at ``path`` (default: the marker's, else the test's)."""
        target = self._path(path)
        if any(os.fspath(made_path) == os.fspath(target) for made_path in self._paths()):
            reason = f"{target} is already used by this test; pass path= for a second cassette"
            raise InvalidInputError("cassette path", [("", reason)])
        chosen = self.forced_mode or RecordMode.parse(
            mode or self.marker.get("mode") or RecordMode.NONE
        )
        try:
            provider = cassette_provider(
                target,
                inner,
                mode=chosen,
                any_order=bool(
                    self.marker.get("any_order", False) if any_order is None else any_order
                ),
                scrubber=scrubber,
            )
        except (CassetteError, CassetteFileError) as error:
            # The message says what to do; agentrig's frames below would only hide it.
            __tracebackhide__ = True
            raise error.with_traceback(None) from None
        self.made.append(provider)
        return provider

    def _path(self, path: StrPath | None) -> Path:
        given = path if path is not None else self.marker.get("path")
        if given is None:
            self._claim_default()
            return self.default_path
        candidate = Path(given)
        return candidate if candidate.is_absolute() else self.base_dir / candidate

    def _claim_default(self) -> None:
        owner = _DEFAULT_OWNERS.setdefault(self.default_path, self.test_key)
        if owner != self.test_key:
            reason = (
                f"tests {owner!r} and {self.test_key!r} both get the default cassette "
                f"{self.default_path} (their ids differ only in characters a file name cannot "
                "hold): give one of them its own with @pytest.mark.agentrig_cassette(path=...)"
            )
            raise InvalidInputError("cassette path", [("", reason)])

    def _paths(self) -> list[str]:
        return [p.path for p in self.made if p.path is not None]

    def problems(self) -> list[str]:
        """Why each replayed cassette is incomplete: request misses and unused interactions."""
        found = []
        for provider in self.made:
            try:
                provider.assert_complete()
            except AgentrigError as error:
                found.append(str(error))
        return found
