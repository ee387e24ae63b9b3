"""Fuzz tests of the cassette loader: only ``CassetteFileError`` escapes ``load_cassette`` and
``cassette_from_yaml``, within the hang bound (random YAML text, structural mutants and damaged
bytes of a recorded cassette, random bytes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

import agentrig as ar
from agentrig.harness.cassettes import (
    CassetteFileError,
    RecordingProvider,
    cassette_from_yaml,
    cassette_to_yaml,
    load_cassette,
)
from agentrig.harness.property.profiles import agentrig_settings
from agentrig.harness.scenarios.yaml_source import load_yaml_text

from .conftest import weather_brain


@pytest.fixture(scope="module")
def recorded() -> str:
    """A real cassette: the weather agent's two turns, recorded."""
    from agentrig.fakes import FunctionLLM

    recorder = RecordingProvider(FunctionLLM(weather_brain))
    loop = ar.AgentBuilder.base().with_capability(ar.UseLlmConfig(recorder)).build()
    state = loop.execute(ar.AgentState().with_user_message("Weather?"))
    loop.execute(state.with_user_message("Thanks"))
    return cassette_to_yaml(recorder.cassette)


def _load(tmp: Path, raw: bytes, hostile: Any) -> None:
    path = tmp / "fuzz.yaml"
    path.write_bytes(raw)
    error = hostile.check(lambda: load_cassette(path), (CassetteFileError,))
    if error is not None:
        assert str(error).startswith(str(path))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return
    hostile.check(lambda: cassette_from_yaml(text, "c.yaml"), (CassetteFileError,))


@agentrig_settings(max_examples=30)
@given(data=st.data())
def test_random_yaml_text(tmp_path_factory: Any, hostile: Any, data: st.DataObject) -> None:
    text = data.draw(hostile.yaml_texts(), label="text")
    _load(tmp_path_factory.mktemp("fuzz"), text.encode("utf-8", "surrogatepass"), hostile)


@agentrig_settings(max_examples=30)
@given(data=st.data())
def test_structural_mutants(
    tmp_path_factory: Any, hostile: Any, recorded: str, data: st.DataObject
) -> None:
    mutant = hostile.mutant(data, load_yaml_text(recorded).data)
    try:
        raw = yaml.safe_dump(mutant, allow_unicode=True).encode("utf-8", "surrogatepass")
    except (yaml.YAMLError, RecursionError, ValueError):
        return
    _load(tmp_path_factory.mktemp("fuzz"), raw, hostile)


@agentrig_settings(max_examples=30)
@given(data=st.data())
def test_damaged_bytes(
    tmp_path_factory: Any, hostile: Any, recorded: str, data: st.DataObject
) -> None:
    _load(tmp_path_factory.mktemp("fuzz"), hostile.damaged(data, recorded.encode()), hostile)


@agentrig_settings(max_examples=20)
@given(raw=st.binary(max_size=300))
def test_random_bytes(tmp_path_factory: Any, hostile: Any, raw: bytes) -> None:
    _load(tmp_path_factory.mktemp("fuzz"), raw, hostile)
