"""The line-aware YAML loader: data as yaml.safe_load gives it, locations, and clear errors."""

from __future__ import annotations

import os
import pickle
import textwrap
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrig.harness.data_files import MAX_FILE_BYTES
from agentrig.harness.errors import ScenarioFileError
from agentrig.harness.scenarios import yaml_source
from agentrig.harness.scenarios.yaml_source import (
    MAX_VALUES,
    Location,
    load_yaml_file,
    load_yaml_text,
)


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


def test_a_source_that_lets_go_of_its_data_reads_it_again() -> None:
    # A loaded scenario keeps its source for locations only; asked again, the data and every
    # location are those of a full parse, and a source without its text keeps its data.
    full = load_yaml_text(NESTED, "f.yaml")
    lazy = load_yaml_text(NESTED, "f.yaml", depth=1)
    lazy.drop_data()
    assert lazy.location(("turns",)) == full.location(("turns",))
    assert lazy.data == full.data
    again = load_yaml_text(NESTED, "f.yaml", depth=1)
    again.drop_data()
    assert pickle.loads(pickle.dumps(again)).data == full.data
    assert again.location(("turns", 1, "n")) == Location(6, 20)
    assert again.data == full.data
    full.drop_data()
    assert full.data["name"] == "demo"


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


@pytest.mark.parametrize(
    ("source", "line"), [("? [a, b]\n: 1\n", 1), ("a:\n  b: 1\n  ? {c: d}\n  : 2\n", 3)]
)
def test_collection_keys_are_errors(source: str, line: int) -> None:
    error = _syntax_error(source)
    assert error.line == line
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


# --- hostile input: huge integers, files that are not files, sizes -------------------------------

HUGE_HEX = "0x" + "f" * 3572
"""An integer YAML reads (hexadecimal has no digit limit) that Python cannot show in decimal."""


@pytest.mark.parametrize(
    ("source", "where"),
    [
        (f"name: {HUGE_HEX}\n", (1, 7)),
        (f"{HUGE_HEX}\n", (1, 1)),
        (f"a:\n  - 1\n  - 0{'7' * 4800}\n", (3, 5)),
        (f"a: [1, 0b{'1' * 14300}]\n", (1, 8)),
    ],
    ids=["value", "document", "octal-in-a-list", "binary"],
)
def test_an_integer_too_large_to_show_is_an_error_naming_its_line(
    source: str, where: tuple[int, int]
) -> None:
    error = _syntax_error(source)
    assert (error.line, error.column) == where
    assert "an integer of more than 4300 digits" in error.reason


def test_an_integer_of_4300_digits_loads() -> None:
    assert load_yaml_text(f"n: {'9' * 4300}\n").data == {"n": int("9" * 4300)}


NOT_FILES = ["fifo", "symlink-to-fifo", "folder", "dev-zero"]


@pytest.fixture
def not_a_file(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A path that is not a regular file: a FIFO (reading it waits for a writer forever), a
    symlink to one, a folder, or /dev/zero (endless)."""
    kind = request.param
    if kind == "dev-zero":
        if not Path("/dev/zero").exists():
            pytest.skip("no /dev/zero")
        return Path("/dev/zero")
    if kind == "folder":
        folder = tmp_path / "a.scenario.yaml"
        folder.mkdir()
        return folder
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    if kind == "fifo":
        return fifo
    link = tmp_path / "link.yaml"
    link.symlink_to(fifo)
    return link


@pytest.mark.parametrize("not_a_file", NOT_FILES, indirect=True)
def test_a_path_that_is_not_a_regular_file_is_refused_at_once(
    not_a_file: Path, bounded: Any
) -> None:
    with pytest.raises(ScenarioFileError) as caught:
        bounded(lambda: load_yaml_file(not_a_file))
    assert caught.value.path == str(not_a_file)
    assert "not a regular file" in caught.value.reason


def test_a_file_larger_than_the_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    with path.open("wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)  # sparse: nothing is written
    with pytest.raises(ScenarioFileError) as caught:
        load_yaml_file(path)
    assert f"larger than {MAX_FILE_BYTES} bytes" in caught.value.reason


@pytest.mark.slow
def test_a_file_of_the_limit_is_read(tmp_path: Path) -> None:
    path = tmp_path / "full.yaml"
    path.write_bytes(b"a: 1\n" + b" " * (MAX_FILE_BYTES - 6) + b"\n")
    assert load_yaml_file(path).data == {"a": 1}


def test_the_value_limit_names_the_line_where_it_is_crossed() -> None:
    text = "a:\n" + "- 1\n" * (MAX_VALUES + 10)
    error = _syntax_error(text)
    assert f"more than {MAX_VALUES} values" in error.reason
    assert error.line == MAX_VALUES  # the root and the list are values 1 and 2


@pytest.fixture
def limit(monkeypatch: pytest.MonkeyPatch) -> int:
    """A value limit of 20, for documents around it."""
    monkeypatch.setattr(yaml_source, "MAX_VALUES", 20)
    return 20


def test_mapping_keys_and_merged_sources_do_not_count_as_values(limit: int) -> None:
    keys = "".join(f"k{index}: {index}\n" for index in range(limit - 1))
    assert len(load_yaml_text(keys).data) == limit - 1
    merged = "a: &a {x: 1}\nb: &b {y: 2}\nc:\n  <<: [*a, *b]\n"  # 10 values, merges built
    merged += "".join(f"k{index}: {index}\n" for index in range(limit - 10))
    assert load_yaml_text(merged).data["c"] == {"x": 1, "y": 2}
    assert "more than 20 values" in _syntax_error(keys + "one: more\n").reason


@pytest.mark.parametrize(
    "source",
    [
        "[" + ", ".join(["1"] * 20) + "]",
        "a: &a [1, 2, 3, 4, 5, 6]\nb: [*a, *a, *a]\n",
        "- !!set {" + ", ".join(f"? {index}" for index in range(20)) + "}\n",
    ],
    ids=["values", "aliases", "set"],
)
def test_the_limit_counts_what_the_document_expands_to(limit: int, source: str) -> None:
    assert f"more than {limit} values" in _syntax_error(source).reason


@pytest.mark.slow
def test_a_file_over_the_value_limit_is_refused_in_memory_of_the_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Refusing a file over the limit costs memory for the text and for the limit, not for the
    rest of the file: four times the values past the limit take less than 100 bytes each more
    than twice (a built node graph takes several hundred per value). The limit is lowered to a
    tenth of MAX_VALUES (the claim is per value; each parse under tracemalloc takes seconds)."""
    import gc
    import tracemalloc

    limit = MAX_VALUES // 10
    monkeypatch.setattr(yaml_source, "MAX_VALUES", limit)

    def peak(values: int) -> int:
        text = "a:\n" + "- 1\n" * values
        gc.collect()
        tracemalloc.start()
        try:
            with pytest.raises(ScenarioFileError, match="values"):
                load_yaml_text(text)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    twice, four_times = peak(2 * limit), peak(4 * limit)
    assert four_times - twice < 100 * 2 * limit, (twice, four_times)


def test_text_holding_a_lone_surrogate_is_an_error_naming_its_place() -> None:
    error = _syntax_error("a: 1\nb: x\ud800\n")
    assert (error.line, error.column) == (2, 5)
    assert "lone surrogate (#xd800)" in error.reason


# --- the fast path from libyaml's events gives what the node graph gives -----------------------

_WORDS = st.sampled_from(
    ["a", "on", "yes", "no", "~", "", "1", "0x1F", "1_000", "2.5", ".nan", "2001-02-03", "<<", "=",
     "x y", "a: b", "- c", "#d", "é", "line\nbreak", "\U0001f600", "\x07"]
)  # fmt: skip
_SCALARS = st.one_of(
    _WORDS,
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
    st.dates(),
)


def _trees() -> st.SearchStrategy[Any]:
    return st.recursive(
        _SCALARS,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_WORDS, inner, max_size=4),
        max_leaves=25,
    )


def _shared(tree: Any, again: bool) -> Any:
    """``tree``, holding itself's first collection twice when ``again`` (the dump anchors it)."""
    if again and isinstance(tree, dict | list) and tree:
        first = next(iter(tree.values())) if isinstance(tree, dict) else tree[0]
        if isinstance(first, dict | list):
            return [tree, first]
    return tree


def _expected_locations(text: str) -> tuple[dict[Any, Location], dict[Any, Location]]:
    """Where libyaml's node graph puts each value and key (the oracle)."""
    values: dict[Any, Location] = {}
    keys: dict[Any, Location] = {}

    def walk(node: Any, path: tuple[Any, ...]) -> None:
        values[path] = Location(node.start_mark.line + 1, node.start_mark.column + 1)
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                keys[(*path, key.value)] = Location(
                    key.start_mark.line + 1, key.start_mark.column + 1
                )
                walk(value, (*path, key.value))
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                walk(item, (*path, index))

    root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    if root is not None:
        walk(root, ())
    return values, keys


@settings(max_examples=80, deadline=None)
@given(tree=_trees(), flow=st.sampled_from([None, True, False]), again=st.booleans())
def test_every_plain_document_loads_to_the_data_and_locations_of_the_node_graph(
    tree: Any, flow: bool | None, again: bool
) -> None:
    text = yaml.safe_dump(_shared(tree, again), default_flow_style=flow, allow_unicode=True)
    values, keys = _expected_locations(text)
    whole = load_yaml_text(text)
    assert whole.data == yaml.safe_load(text)
    assert (dict(whole.locations), dict(whole.key_locations)) == (values, keys)
    shallow = load_yaml_text(text, depth=1)  # the top level now, the rest when asked
    for path in [path for path in values if len(path) <= 1]:
        assert shallow.location(path) == whole.location(path)
        assert shallow.key_location(path) == whole.key_location(path)
    assert shallow.data == whole.data


# --- dumping -----------------------------------------------------------------------------------

_PIECES = st.sampled_from(
    [
        *"ab z\n\t'\"#:-?é中",
        ": ",
        " #",
        "- ",
        "null",
        "1.5",
        "~",
        "  ",
        "\n\n",
        "\U0001f600",
        "\x85",
    ]
)
_TEXT = st.lists(_PIECES, max_size=60).map("".join) | st.sampled_from(["", "a" * 120])
_DATA = st.dictionaries(
    _TEXT,
    st.recursive(
        _TEXT | st.integers() | st.floats(allow_nan=False) | st.booleans() | st.none(),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
        max_leaves=8,
    ),
    max_size=4,
)


@given(data=_DATA, blocks=st.booleans())
@settings(max_examples=150, deadline=None)
def test_dumped_text_is_pyyamls_own_whichever_emitter_writes_it(
    data: dict[str, Any], blocks: bool
) -> None:
    # libyaml's emitter writes what PyYAML's does but for a few forms (double-quoted text, an
    # empty key, a "..." end), which dump_yaml leaves to PyYAML's: the text is the same either
    # way (cassettes written before stay byte for byte what they were)
    with mock.patch.object(yaml_source, "_CDumpers", None):  # as where PyYAML has no libyaml
        expected = yaml_source.dump_yaml(data, blocks=blocks)
    assert yaml_source.dump_yaml(data, blocks=blocks) == expected
    assert yaml.safe_load(expected) == data
