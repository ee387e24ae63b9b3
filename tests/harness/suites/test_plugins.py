"""Plugin modules: imported before a run; a broken one is a clear error, not a traceback."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agentrig.harness.errors import PluginError
from agentrig.harness.suites.plugins import load_plugins


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("x = (\n", "broken_plugin.py, line 1"),
        ("import os\nraise ValueError('config missing')\n", "ValueError: config missing"),
    ],
    ids=["syntax", "raises"],
)
def test_a_plugin_that_fails_to_import_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, expected: str
) -> None:
    (tmp_path / "broken_plugin.py").write_text(source, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "broken_plugin", raising=False)
    with pytest.raises(PluginError) as error:
        load_plugins(["broken_plugin"])
    message = str(error.value)
    assert message.startswith("plugin module 'broken_plugin' failed to import: ")
    assert expected in message
    assert "fix the module" in message
