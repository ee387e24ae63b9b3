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


@pytest.mark.parametrize("kind", ["fifo", "symlink", "folder", "char-device"])
@pytest.mark.parametrize(
    "loader",
    ["load_cassette", "load_recording", "cassette_provider", "record", "http", "http-record"],
)
def test_every_cassette_loader_refuses_what_is_not_a_file(
    tmp_path: Path, bounded: Any, kind: str, loader: str
) -> None:
    """Every way a cassette is read or recorded refuses a FIFO (which blocked), a symlink to
    one, a folder, and a device, within the hang bound, and leaves it as it was."""
    import os
    import stat

    from agentrig.fakes import ScriptedLLM
    from agentrig.harness.cassettes import cassette_provider
    from agentrig.harness.cassettes.convert import load_recording

    if kind == "char-device":
        path = Path("/dev/null")
        if not path.exists() or loader in ("record", "http-record"):
            pytest.skip("never record over a real device, even to test that it is refused")
    elif kind == "folder":
        path = tmp_path / "folder.yaml"
        path.mkdir()
    else:
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs on this platform")
        os.mkfifo(tmp_path / "pipe.yaml")
        path = tmp_path / "pipe.yaml"
        if kind == "symlink":
            (tmp_path / "link.yaml").symlink_to(path)
            path = tmp_path / "link.yaml"
    before = os.stat(path).st_mode

    def http(mode: str) -> None:
        from agentrig.harness.cassettes.http import use_http_cassette

        with use_http_cassette(path, record_mode=mode):
            pass

    loads = {
        "load_cassette": lambda: load_cassette(path),
        "load_recording": lambda: load_recording(path),
        "cassette_provider": lambda: cassette_provider(path, mode="none"),
        "record": lambda: cassette_provider(path, ScriptedLLM(["hi"]), mode="once"),
        "http": lambda: http("none"),
        "http-record": lambda: http("once"),
    }
    refused: type[Exception] = CassetteFileError
    if loader.startswith("http"):
        pytest.importorskip("vcr")
        from agentrig.harness.cassettes.http import HttpCassetteFileError

        refused = HttpCassetteFileError
    with pytest.raises(refused, match="not a regular file"):
        bounded(loads[loader])
    assert stat.S_IFMT(os.stat(path).st_mode) == stat.S_IFMT(before)
