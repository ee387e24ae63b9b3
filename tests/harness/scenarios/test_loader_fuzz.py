"""Fuzz tests of the scenario loader: whatever the file holds, only ``ScenarioFileError`` escapes
and no load runs past the hang bound (random YAML text, structural mutants of the bundled
scenarios, damaged bytes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from agentrig.harness.errors import ScenarioFileError
from agentrig.harness.property.profiles import agentrig_settings
from agentrig.harness.scenarios.loader import load_scenario
from agentrig.harness.scenarios.yaml_source import load_yaml_file

ROOT = Path(__file__).resolve().parents[3]
BUNDLED = sorted((ROOT / "scenarios").rglob("*.scenario.yaml"))
DATA = sorted((Path(__file__).parent / "data").glob("*.yaml"))
REAL = BUNDLED + DATA


def _load_text(tmp_path: Path, raw: bytes, hostile: Any) -> ScenarioFileError | None:
    path = tmp_path / "fuzz.scenario.yaml"
    path.write_bytes(raw)
    error = hostile.check(lambda: load_scenario(path), (ScenarioFileError,))
    if error is not None:
        assert isinstance(error, ScenarioFileError)
        assert str(error).startswith(str(path))  # every problem names the file
    return error


def _dumped(value: Any) -> bytes | None:
    try:
        return yaml.safe_dump(value, allow_unicode=True, sort_keys=False).encode(
            "utf-8", "surrogatepass"
        )
    except (yaml.YAMLError, RecursionError, ValueError):  # ValueError: ints of 4300+ digits
        return None


def test_the_real_files_are_there() -> None:
    assert len(BUNDLED) > 50


@agentrig_settings(max_examples=40)
@given(data=st.data())
def test_random_yaml_text(tmp_path_factory: Any, hostile: Any, data: st.DataObject) -> None:
    text = data.draw(hostile.yaml_texts(), label="text")
    tmp = tmp_path_factory.mktemp("fuzz")
    _load_text(tmp, text.encode("utf-8", "surrogatepass"), hostile)


@agentrig_settings(max_examples=40)
@given(data=st.data())
def test_structural_mutants_of_real_files(
    tmp_path_factory: Any, hostile: Any, data: st.DataObject
) -> None:
    source = data.draw(st.sampled_from(REAL), label="file")
    mutant = hostile.mutant(data, load_yaml_file(source).data)
    raw = _dumped(mutant)
    if raw is not None:
        _load_text(tmp_path_factory.mktemp("fuzz"), raw, hostile)


@agentrig_settings(max_examples=40)
@given(data=st.data())
def test_damaged_bytes_of_real_files(
    tmp_path_factory: Any, hostile: Any, data: st.DataObject
) -> None:
    source = data.draw(st.sampled_from(REAL), label="file")
    raw = hostile.damaged(data, source.read_bytes())
    _load_text(tmp_path_factory.mktemp("fuzz"), raw, hostile)


@agentrig_settings(max_examples=20)
@given(raw=st.binary(max_size=300))
def test_random_bytes(tmp_path_factory: Any, hostile: Any, raw: bytes) -> None:
    _load_text(tmp_path_factory.mktemp("fuzz"), raw, hostile)
