"""The line-aware YAML loader: data as yaml.safe_load gives it, locations, and clear errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from agentrig.harness.errors import ScenarioFileError
from agentrig.harness.scenarios.yaml_source import Location, load_yaml_file, load_yaml_text


def _text(source: str) -> str:
    return textwrap.dedent(source).lstrip("\n")


def _syntax_error(source: str) -> ScenarioFileError:
    with pytest.raises(ScenarioFileError) as caught:
        load_yaml_text(_text(source), "f.yaml")
    return caught.value


NESTED = _text(
    """
    name: demo
    turns:
      - user: hi
        model:
          - say: hello
      - {user: bye, n: 3}
    """
)


def test_data_is_what_safe_load_gives() -> None:
    text = _text(
        """
        a: 1
        b: 2.5
        c: [true, null, "x", 'y', 0x10, 1_000]
        d: 2026-01-01T00:05:00Z
        e: {f: [1, {g: h}]}
        s: |
          multi
          line
        """
    )
    assert load_yaml_text(text).data == yaml.safe_load(text)


def test_locations_of_values_are_one_based() -> None:
    source = load_yaml_text(NESTED, "n.yaml")
    assert source.locations[()] == Location(1, 1)
    assert source.locations[("name",)] == Location(1, 7)
    assert source.locations[("turns", 0)] == Location(3, 5)
    assert source.locations[("turns", 0, "model", 0, "say")] == Location(5, 14)
    assert source.locations[("turns", 1, "n")] == Location(6, 20)


def test_key_locations_point_at_keys() -> None:
    source = load_yaml_text(NESTED)
    assert source.key_locations[("turns",)] == Location(2, 1)
    assert source.key_locations[("turns", 0, "model")] == Location(4, 5)
    assert source.key_locations[("turns", 1, "user")] == Location(6, 6)
    assert ("turns", 0) not in source.key_locations


def test_location_prefers_the_key_of_a_collection_and_the_value_of_a_scalar() -> None:
    source = load_yaml_text(NESTED)
    assert source.location(("turns", 0, "model")) == Location(4, 5)
    assert source.location(("turns", 0, "user")) == Location(3, 11)
    assert source.location(("turns", 0)) == Location(3, 5)
    assert source.location(("nowhere",)) is None


def test_value_at_walks_the_data() -> None:
    source = load_yaml_text(NESTED)
    assert source.value_at(("turns", 1, "n")) == 3
    with pytest.raises(KeyError):
        source.value_at(("turns", 5))


def test_mapping_keys_are_their_text() -> None:
    data = load_yaml_text("on: before_step\n1: one\nyes: y\nnull: z\n").data
    assert data == {"on": "before_step", "1": "one", "yes": "y", "null": "z"}


def test_scalar_values_keep_yaml_1_1_types() -> None:
    assert load_yaml_text("a: on\nb: NO\nc: '12:30'\n").data == {
        "a": True,
        "b": False,
        "c": "12:30",
    }


def test_empty_document_has_no_data() -> None:
    source = load_yaml_text("# only a comment\n")
    assert source.data is None
    assert source.locations == {}


def test_duplicate_keys_name_both_lines() -> None:
    error = _syntax_error(
        """
        turns:
          - user: a
            model: []
            user: b
        """
    )
    assert (error.path, error.line, error.column) == ("f.yaml", 4, 5)
    assert error.reason == "duplicate key 'user' (first defined on line 2)"
    assert str(error) == "f.yaml:4:5: duplicate key 'user' (first defined on line 2)"


def test_quoted_and_plain_keys_with_the_same_text_are_duplicates() -> None:
    assert _syntax_error("a: 1\n'a': 2\n").line == 2


def test_syntax_error_has_file_line_and_column() -> None:
    error = _syntax_error(
        """
        name: x
        turns:
          - user: "unclosed
        """
    )
    assert (error.path, error.line, error.field) == ("f.yaml", 4, "")
    assert error.reason.startswith("invalid YAML: ")
    assert error.__cause__ is None
    assert error.__suppress_context__


def test_bad_indentation_points_at_the_offending_line() -> None:
    error = _syntax_error("name: x\n turns: []\n")
    assert (error.line, error.column) == (2, 7)
    assert "mapping values are not allowed here" in error.reason


def test_tabs_get_a_hint() -> None:
    error = _syntax_error("name: x\nturns:\n\t- user: a\n")
    assert (error.line, error.column) == (3, 1)
    assert "use spaces" in error.reason


def test_only_one_document_is_allowed() -> None:
    error = _syntax_error("a: 1\n---\nb: 2\n")
    assert error.line == 2
    assert "expected a single document" in error.reason


def test_unknown_tags_are_errors() -> None:
    error = _syntax_error("a: 1\nb: !python/object x\n")
    assert (error.line, error.column) == (2, 4)
    assert "!python/object" in error.reason


def test_special_characters_are_errors() -> None:
    error = _syntax_error("name: a\x01b\n")
    assert (error.line, error.column) == (1, 8)
    assert "#x0001" in error.reason


def test_collection_keys_are_errors() -> None:
    error = _syntax_error("? [a, b]\n: 1\n")
    assert error.line == 1
    assert "plain scalars" in error.reason


def test_recursive_aliases_are_errors() -> None:
    assert "contains it" in _syntax_error("a: &x [1, *x]\n").reason


def test_alias_bombs_are_cut_short() -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    lines += [
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]" for i in range(6)
    ]
    assert "aliases expand" in _syntax_error("\n".join(lines) + "\n").reason


@pytest.mark.parametrize("tag", ["!!pairs", "!!omap", "!!set"])
def test_alias_bombs_inside_other_collection_tags_are_cut_short(tag: str) -> None:
    # PyYAML's own constructor builds these; their expansion counts all the same.
    lines = [f"a0: &a0 {tag} {{k: v}}" if tag == "!!set" else f"a0: &a0 {tag} [{{k: v}}]"]
    for i in range(1, 30):
        twice = f"[*a{i - 1}, *a{i - 1}]"
        body = f"{{k: {twice}}}" if tag == "!!set" else f"[{{k: {twice}}}]"
        lines.append(f"a{i}: &a{i} {tag} {body}")
    assert "aliases expand" in _syntax_error("\n".join(lines) + "\n").reason


@pytest.mark.parametrize(
    ("source", "where", "words"),
    [
        ("name: 2001-13-45\n", (1, 7), "invalid !!timestamp value '2001-13-45': month"),
        ("user: !!bool maybe\n", (1, 7), "invalid !!bool value 'maybe'"),
        ("n: !!int 0x\n", (1, 4), "invalid !!int value '0x'"),
        ("n: !!float x\n", (1, 4), "invalid !!float value 'x'"),
        ("n: 1" + "0" * 5000 + "\n", (1, 4), "(5001 characters)"),
    ],
)
def test_values_their_tag_cannot_parse_are_errors(
    source: str, where: tuple[int, int], words: str
) -> None:
    error = _syntax_error(source)
    assert (error.line, error.column) == where
    assert words in error.reason


@pytest.mark.parametrize(
    "source",
    [
        "a: " + "[" * 1000 + "]" * 1000 + "\n",  # beyond what libyaml composes
        "a: " + "[" * 150 + "]" * 150 + "\n",
        "a:\n" + "".join("  " * i + "-\n" for i in range(150)),
    ],
)
def test_collections_nested_too_deep_are_errors(source: str) -> None:
    error = _syntax_error(source)
    assert "nested more than 100 levels deep" in error.reason
    assert error.line is not None


def test_nesting_up_to_the_limit_loads() -> None:
    data = load_yaml_text("a: " + "[" * 99 + "]" * 99 + "\n").data
    for _ in range(99):
        data = data["a"] if isinstance(data, dict) else data[0]
    assert data == []


def test_aliases_share_values() -> None:
    data = load_yaml_text("a: &x {k: [1, 2]}\nb: *x\n").data
    assert data == {"a": {"k": [1, 2]}, "b": {"k": [1, 2]}}


def test_merge_keys_bring_defaults_that_own_keys_override() -> None:
    text = _text(
        """
        base: &base {user: hi, cancel: before}
        more: &more {user: ho, extra: 1}
        turn:
          <<: [*base, *more]
          user: mine
        """
    )
    source = load_yaml_text(text)
    assert source.data["turn"] == {"user": "mine", "cancel": "before", "extra": 1}
    assert source.data["turn"] == yaml.safe_load(text)["turn"]
    assert source.locations[("turn", "user")] == Location(5, 9)
    assert source.locations[("turn",)] == Location(4, 3)


def test_merge_needs_mappings() -> None:
    assert "merge key" in _syntax_error("a: {<<: [1]}\n").reason


def test_file_must_be_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin.yaml"
    path.write_bytes(b"name: ok\ncity: M\xfcnchen\n")
    with pytest.raises(ScenarioFileError) as caught:
        load_yaml_file(path)
    error = caught.value
    assert (error.path, error.line, error.column) == (str(path), 2, 8)
    assert error.reason == "the file is not valid UTF-8 (byte 0xfc); save it as UTF-8"


def test_a_byte_order_mark_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbfname: ok\n")
    source = load_yaml_file(path)
    assert source.data == {"name": "ok"}
    assert source.locations[("name",)] == Location(1, 7)


def test_a_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ScenarioFileError, match="cannot read the file") as caught:
        load_yaml_file(tmp_path / "nope.yaml")
    assert caught.value.line is None


def test_an_escaped_lone_surrogate_is_an_error() -> None:
    error = _syntax_error('a: "ok"\nb: "x \\ud83d\\ude00"\n')
    assert (error.line, error.column) == (2, 4)
    assert "lone surrogate" in error.reason
    assert load_yaml_text('a: "\\U0001F600 \\u00e9"\n').data == {"a": "\U0001f600 \u00e9"}
