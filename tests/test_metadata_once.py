"""The installed distributions read once (``tests/metadata_once.py``): a pytest run in process
loads the same plugins and marks the same modules for rewriting as with a fresh reading."""

from __future__ import annotations

import importlib.metadata
import sys

import pytest

INNER_TEST = """
def test_plugins(pytestconfig):
    manager = pytestconfig.pluginmanager
    loaded = sorted(f"{dist.project_name}:{name}" for name, dist in (
        (manager.get_name(plugin), dist) for plugin, dist in manager.list_plugin_distinfo()))
    marked = sorted(manager.rewrite_hook._must_rewrite)
    print("LOADED", loaded)
    print("MARKED", marked)
"""


def _plugins_and_marks(pytester: pytest.Pytester) -> tuple[str, str]:
    pytester.makepyfile(test_inner=INNER_TEST)
    result = pytester.runpytest_inprocess("-s", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    text = "\n".join(result.outlines)
    return (
        text[text.index("LOADED") :].splitlines()[0],
        text[text.index("MARKED") :].splitlines()[0],
    )


def test_the_suite_reads_the_installed_distributions_once() -> None:
    metadata_once = sys.modules["metadata_once"]
    assert importlib.metadata.distributions is metadata_once.distributions
    assert importlib.metadata.distributions() is importlib.metadata.distributions()


def test_the_distributions_read_once_are_the_installed_ones() -> None:
    metadata_once = sys.modules["metadata_once"]

    def described(dists: object) -> list[tuple[str, list[str], int]]:
        return sorted(
            (
                dist.metadata["Name"],
                sorted(f"{ep.group}:{ep.name}={ep.value}" for ep in dist.entry_points),
                len(dist.files or []),
            )
            for dist in dists  # type: ignore[attr-defined]
        )

    assert described(metadata_once.installed()) == described(metadata_once.READ())


def test_a_run_loads_and_marks_what_a_fresh_reading_does(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = _plugins_and_marks(pytester)
    monkeypatch.setattr(importlib.metadata, "distributions", sys.modules["metadata_once"].READ)
    fresh = _plugins_and_marks(pytester)
    assert shared == fresh
    assert "hypothesis" in shared[1]  # a plugin's package, marked for rewriting
