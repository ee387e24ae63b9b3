"""Without hypothesis (the ``hypothesis`` extra), the property package says what to install."""

from __future__ import annotations

import importlib
import sys

import pytest

from agentrig.errors import MissingDependencyError


def test_importing_the_strategies_without_hypothesis_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in [name for name in sys.modules if name.startswith("agentrig.harness.property")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "hypothesis", None)  # makes ``import hypothesis`` fail
    with pytest.raises(MissingDependencyError) as caught:
        importlib.import_module("agentrig.harness.property.strategies")
    assert str(caught.value) == (
        "hypothesis is not installed: pip install 'hypothesis', or agentrig with its extra: "
        "pip install './agentrig[hypothesis]'"
    )
