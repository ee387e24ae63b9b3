"""Fuzz tests of the HTTP cassette serializer and file loading: ``deserialize`` raises only
``ValueError`` and ``use_http_cassette`` only ``HttpCassetteFileError``, within the hang bound
(random YAML text, structural mutants and damaged bytes of a cassette, random bytes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from agentrig.harness.property.profiles import agentrig_settings

pytest.importorskip("vcr")

from agentrig.harness.cassettes import http as http_cassettes
from agentrig.harness.cassettes.http import HttpCassetteFileError, use_http_cassette

_CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": []}
_ANSWER = {"choices": [{"message": {"role": "assistant", "content": "hello"}}]}
SAMPLE = {
    "interactions": [
        {
            "request": {
                "body": json.dumps(_CHAT),
                "headers": {"Content-Type": ["application/json"], "Accept": ["*/*"]},
                "method": "POST",
                "uri": "https://api.openai.com/v1/chat/completions",
            },
            "response": {
                "body": {"string": json.dumps(_ANSWER)},
                "headers": {"Content-Type": ["application/json"]},
                "status": {"code": 200, "message": "OK"},
            },
        },
        {
            "request": {
                "parsed_body": _CHAT,
                "headers": {},
                "method": "POST",
                "uri": "https://api.anthropic.com/v1/messages?beta=true",
            },
            "response": {
                "parsed_body": _ANSWER,
                "headers": {"content-length": ["1"]},
                "status": {"code": 200, "message": "OK"},
            },
        },
    ],
    "version": 1,
}
SAMPLE_TEXT = yaml.safe_dump(SAMPLE)


def _load(tmp: Path, raw: bytes, hostile: Any) -> None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        hostile.check(lambda: http_cassettes.deserialize(text), (ValueError,))
    path = tmp / "fuzz.yaml"
    path.write_bytes(raw)

    def replay() -> None:
        with use_http_cassette(path, check_all_played=False):
            pass

    error = hostile.check(replay, (HttpCassetteFileError,))
    if error is not None:
        assert str(error).startswith(f"HTTP cassette {path}: ")


def test_the_sample_loads() -> None:
    assert len(http_cassettes.deserialize(SAMPLE_TEXT)["interactions"]) == 2


@agentrig_settings(max_examples=30)
@given(data=st.data())
def test_random_yaml_text(tmp_path_factory: Any, hostile: Any, data: st.DataObject) -> None:
    text = data.draw(hostile.yaml_texts(), label="text")
    _load(tmp_path_factory.mktemp("fuzz"), text.encode("utf-8", "surrogatepass"), hostile)


@agentrig_settings(max_examples=40)
@given(data=st.data())
def test_structural_mutants(tmp_path_factory: Any, hostile: Any, data: st.DataObject) -> None:
    mutant = hostile.mutant(data, SAMPLE)
    try:
        raw = yaml.safe_dump(mutant, allow_unicode=True).encode("utf-8", "surrogatepass")
    except (yaml.YAMLError, RecursionError, ValueError):
        return
    _load(tmp_path_factory.mktemp("fuzz"), raw, hostile)


@agentrig_settings(max_examples=30)
@given(data=st.data())
def test_damaged_bytes(tmp_path_factory: Any, hostile: Any, data: st.DataObject) -> None:
    raw = hostile.damaged(data, SAMPLE_TEXT.encode())
    _load(tmp_path_factory.mktemp("fuzz"), raw, hostile)


@agentrig_settings(max_examples=20)
@given(raw=st.binary(max_size=300))
def test_random_bytes(tmp_path_factory: Any, hostile: Any, raw: bytes) -> None:
    _load(tmp_path_factory.mktemp("fuzz"), raw, hostile)
