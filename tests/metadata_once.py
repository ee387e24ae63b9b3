"""The installed distributions read once a process, for the pytest runs the tests start in it.

Each pytest run reads the entry points of every installed distribution twice (to load the
``pytest11`` plugins, and to mark their modules for assertion rewriting) and the file list
(``RECORD``) of each plugin's distribution. In the suite's processes, where dask has imported
``importlib_metadata`` (whose finder then reads each distribution instead of the standard
library's), the 37 in-process runs of the docs' blocks and the 85 of the ``pytester`` tests spent
5.6 CPU s in those two steps, 1.9 with one reading. Nothing is installed while the tests run, so
every run in a process shares one reading: each still loads every plugin a user's run loads, and
marks the same modules for rewriting (``tests/test_metadata_once.py``).
"""

from __future__ import annotations

import functools
import importlib.metadata
from collections.abc import Iterable
from typing import Any

READ = importlib.metadata.distributions
"""The standard library's reader, which the first call of :func:`distributions` uses."""


class ReadOnce:
    """An installed distribution whose entry points and file list are read once."""

    def __init__(self, dist: importlib.metadata.Distribution) -> None:
        self._dist = dist

    @functools.cached_property
    def entry_points(self) -> importlib.metadata.EntryPoints:
        return self._dist.entry_points

    @functools.cached_property
    def files(self) -> list[importlib.metadata.PackagePath] | None:
        return self._dist.files

    def __getattr__(self, name: str) -> Any:
        return getattr(self._dist, name)


@functools.cache
def installed() -> tuple[ReadOnce, ...]:
    """Every installed distribution, as :data:`READ` first found them."""
    return tuple(ReadOnce(dist) for dist in READ())


def distributions(**kwargs: Any) -> Iterable[Any]:
    """``importlib.metadata.distributions``: the ones read once when asked for all of them (as
    pytest and pluggy ask), the reader's own answer to a narrower question."""
    return installed() if not kwargs else READ(**kwargs)


def read_installed_once() -> None:
    """Make every later ``importlib.metadata.distributions()`` of this process share one
    reading (``importlib.metadata.entry_points()`` asks it too)."""
    importlib.metadata.distributions = distributions
