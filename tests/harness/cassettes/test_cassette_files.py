"""The cassette file: readable YAML, round trips, atomic writes, and clear errors for bad files."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from textwrap import dedent
from typing import Any

import pytest

import agentrig as ar
from agentrig.fakes import ScriptedLLM, calls, fail
from agentrig.harness.cassettes import (
    Cassette,
    CassetteFileError,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    RecordingProvider,
    cassette_from_yaml,
    cassette_to_yaml,
    load_cassette,
    save_cassette,
)
from agentrig.harness.errors import DataFileError


def sample() -> Cassette:
    recorder = RecordingProvider(
        ScriptedLLM([calls(("lookup", {"q": "a\nb"}), ("lookup", {"n": 1})), fail("boom")])
    )
    request = ar.InferenceRequest(
        messages=ar.Messages.of(ar.Message.system("Line one.\nLine two."), ar.Message.user("hi")),
        llm_config=ar.LlmConfig(model="m", temperature=0.5),
    )
    recorder.infer(request)
    with pytest.raises(ar.ProviderError):
        recorder.infer(request)
    return recorder.cassette


VALID = """\
version: 1
interactions:
  - request:
      messages:
        - role: user
          content: hi
    response:
      content: hello
"""


def error_of(text: str, tmp_path: Path) -> CassetteFileError:
    path = tmp_path / "bad.yaml"
    path.write_text(dedent(text), encoding="utf-8")
    with pytest.raises(CassetteFileError) as raised:
        load_cassette(path)
    return raised.value


class TestFormat:
    def test_the_text_is_versioned_ordered_and_uses_block_scalars(self) -> None:
        text = cassette_to_yaml(sample())
        lines = text.splitlines()
        assert lines[0].startswith("# agentrig cassette")
        assert lines[1] == "version: 1"
        assert lines[2] == "metadata:"
        assert "      content: |-\n        Line one.\n        Line two.\n" in text
        assert text.index("- request:") < text.index("  response:") < text.index("  error:")
        assert "tool_choice" not in text  # defaults are left out
        assert "created_at" not in text

    def test_text_round_trips_and_is_byte_stable(self) -> None:
        cassette = sample()
        text = cassette_to_yaml(cassette)
        assert cassette_from_yaml(text) == cassette
        assert cassette_to_yaml(cassette_from_yaml(text)) == text

    def test_a_hand_written_file_loads(self, tmp_path: Path) -> None:
        path = tmp_path / "c.yaml"
        path.write_text(VALID, encoding="utf-8")
        cassette = load_cassette(path)
        assert cassette.interactions[0].response == RecordedResponse(content="hello")

    def test_awkward_text_is_escaped(self) -> None:
        text = "tab\there\r\nnext \u2028 line\x00 end  \n"
        interaction = Interaction(
            request=RecordedRequest(), response=RecordedResponse(content=text)
        )
        dumped = cassette_to_yaml(Cassette(interactions=(interaction,)))
        response = cassette_from_yaml(dumped).interactions[0].response
        assert response is not None
        assert response.content == text


class TestSaving:
    def test_save_creates_folders_and_reads_back(self, tmp_path: Path) -> None:
        cassette = sample()
        path = save_cassette(cassette, tmp_path / "a" / "b" / "c.yaml")
        assert load_cassette(path) == cassette
        assert sorted(p.name for p in path.parent.iterdir()) == ["c.yaml"]

    def test_a_failed_write_keeps_the_old_file_and_no_temporary(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        path = tmp_path / "c.yaml"
        path.write_text(VALID, encoding="utf-8")

        def broken(source: str, target: str) -> None:
            raise OSError("disk full")

        monkeypatch.setattr(os, "replace", broken)
        with pytest.raises(OSError, match="disk full"):
            save_cassette(sample(), path)
        assert path.read_text(encoding="utf-8") == VALID
        assert [p.name for p in tmp_path.iterdir()] == ["c.yaml"]


class TestBadFiles:
    def test_an_unknown_version_names_file_line_and_field(self, tmp_path: Path) -> None:
        error = error_of("# header\nversion: 2\ninteractions: []\n", tmp_path)
        assert (error.line, error.field) == (2, "version")
        assert str(error).startswith(f"{tmp_path / 'bad.yaml'}:2:10: version: cassette version 2")
        assert "reads version 1" in str(error)

    @pytest.mark.parametrize(("value", "kind"), [('"1"', "the string '1'"), ("true", "True")])
    def test_a_version_that_is_not_a_number_says_to_write_the_number(
        self, tmp_path: Path, value: str, kind: str
    ) -> None:
        error = error_of(f"version: {value}\ninteractions: []\n", tmp_path)
        assert error.field == "version"
        assert f"version must be the number 1, got {kind}; write version: 1" in str(error)
        assert "re-record" not in str(error)

    def test_a_missing_version_is_named(self, tmp_path: Path) -> None:
        error = error_of("interactions: []\n", tmp_path)
        assert error.field == "version"
        assert "missing required key 'version'" in str(error)

    def test_an_unknown_key_names_line_field_and_suggests(self, tmp_path: Path) -> None:
        error = error_of(VALID.replace("      content: hello", "      contnet: hello"), tmp_path)
        assert (error.line, error.field) == (8, "interactions[0].response.contnet")
        assert "unknown key 'contnet' (did you mean 'content'?)" in error.reason

    def test_a_wrong_type_names_the_field(self, tmp_path: Path) -> None:
        error = error_of(VALID.replace("content: hi", "content: 42"), tmp_path)
        assert (error.line, error.field) == (6, "interactions[0].request.messages[0].content")
        assert "expected a string" in error.reason

    def test_a_bad_role_lists_the_valid_ones(self, tmp_path: Path) -> None:
        error = error_of(VALID.replace("role: user", "role: usr"), tmp_path)
        assert error.field == "interactions[0].request.messages[0].role"
        assert "did you mean 'user'?" in error.reason

    def test_an_interaction_needs_exactly_one_outcome(self, tmp_path: Path) -> None:
        text = VALID + "    error:\n      message: boom\n"
        error = error_of(text, tmp_path)
        assert error.field == "interactions[0]"
        assert "exactly one of: response, error" in error.reason

    def test_malformed_yaml_names_the_line(self, tmp_path: Path) -> None:
        error = error_of("version: 1\ninteractions: [\n  - oops: {\n", tmp_path)
        assert error.line is not None
        assert "invalid YAML" in error.reason
        assert isinstance(error, DataFileError)

    @pytest.mark.parametrize(
        ("text", "expected"),
        [("", "the file is empty"), ("- 1\n", "a list, not a mapping")],
    )
    def test_the_top_level_must_be_a_mapping(
        self, tmp_path: Path, text: str, expected: str
    ) -> None:
        assert expected in str(error_of(text, tmp_path))

    def test_a_missing_file_is_a_file_error(self, tmp_path: Path) -> None:
        with pytest.raises(CassetteFileError, match="cannot read the file"):
            load_cassette(tmp_path / "absent.yaml")


def test_a_bad_value_deep_in_json_data_is_located_quickly(
    tmp_path: Path, bounded: Callable[..., Any]
) -> None:
    # Locating the problem used to try every reading of pydantic's error location (union tags
    # at each level): 2**depth readings.
    depth = 40
    text = (
        "version: 1\ninteractions:\n- request:\n    options: "
        + "{a: " * depth
        + "2001-01-01"
        + "}" * depth
        + "\n  response: {}\n"
    )
    path = tmp_path / "deep.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CassetteFileError) as raised:
        bounded(lambda: load_cassette(path))
    assert (raised.value.line, raised.value.field) == (
        4,
        "interactions[0].request.options" + ".a" * depth,
    )


HUGE_HEX = "0x" + "f" * 3572


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (f"version: {HUGE_HEX}\ninteractions: []\n", 1),
        (f"{HUGE_HEX}\n", 1),
        (f"version: 1\ninteractions:\n  - {HUGE_HEX}\n", 3),
    ],
    ids=["version", "document", "interaction"],
)
def test_an_integer_too_large_to_show_names_its_line(tmp_path: Path, text: str, line: int) -> None:
    path = tmp_path / "huge.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CassetteFileError, match="an integer of more than 4300 digits") as raised:
        load_cassette(path)
    assert raised.value.line == line
