"""The call shorthand: reading ``name(arg=value, ...)`` and writing it back."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrig.errors import InvalidInputError
from agentrig.harness.errors import ScenarioFileError
from agentrig.harness.scenarios.calls import read_call, write_call
from agentrig.harness.scenarios.model import ToolCallSpec, parse_call_shorthand
from agentrig.harness.scenarios.yaml_source import load_yaml_text, not_json_data


@pytest.mark.parametrize(
    ("text", "name", "args"),
    [
        ("get_weather(city=Paris)", "get_weather", {"city": "Paris"}),
        ("now()", "now", {}),
        ("  spaced ( a = 1 ,  b = two words )  ", "spaced", {"a": 1, "b": "two words"}),
        ("f(n=3, x=2.5, ok=true, no=null)", "f", {"n": 3, "x": 2.5, "ok": True, "no": None}),
        ('f(q="a, b")', "f", {"q": "a, b"}),
        ("f(q='it''s (here), ok')", "f", {"q": "it's (here), ok"}),
        ('f(q="say \\"hi\\"")', "f", {"q": 'say "hi"'}),
        ("f(q=it's)", "f", {"q": "it's"}),
        ("f(tags=[a, b], n=1)", "f", {"tags": ["a", "b"], "n": 1}),
        (
            "f(m=[[1, 2], [3]], o={k: [x, y], j: 'a,b'})",
            "f",
            {"m": [[1, 2], [3]], "o": {"k": ["x", "y"], "j": "a,b"}},
        ),
        ("f(expr=g(x))", "f", {"expr": "g(x)"}),
        ("f(url=http://x.org/a?b=c)", "f", {"url": "http://x.org/a?b=c"}),
        ("f(eq=a=b)", "f", {"eq": "a=b"}),
        ("my-tool(x='')", "my-tool", {"x": ""}),
    ],
)
def test_shorthand_parses(text: str, name: str, args: dict[str, Any]) -> None:
    assert read_call(text) == (name, args)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("get_weather", "write name(arg=value, ...) or name()"),
        ("get_weather(city=Paris", "it must end with ')'"),
        ("1tool()", "write name(arg=value, ...)"),
        ("f(Paris)", "argument 'Paris' has no name"),
        ("f(a=1,,b=2)", "empty argument"),
        ("f(a=1,)", "empty argument"),
        ("f(a=1, a=2)", "argument 'a' is given twice"),
        ("f(a=)", "argument 'a' has no value"),
        ("f(my arg=1)", "'my arg' is not a valid argument name"),
        ("f(a=[1, 2)", "a bracket is not closed"),
        ("f(a=1])", "unbalanced ']'"),
        ('f(a="open)', "cannot read the value"),
        ("f(a=x: y: z)", "cannot read the value"),
        ("f(a={k: 1, k: 2})", "duplicate key 'k'"),
        ("f(q=issue #42)", "cannot read the value"),
    ],
)
def test_malformed_shorthand_says_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        read_call(text)
    reason = caught.value.problems[0][1]
    assert reason.startswith(f"malformed call {text!r}: ")
    assert problem in reason
    assert isinstance(caught.value, ValueError)


def test_shorthand_renders_calls() -> None:
    args = {"city": "Paris", "q": "a, b", "n": 3, "on": "yes"}
    assert write_call("f", args) == 'f(city=Paris, q="a, b", n=3, on="yes")'
    assert write_call("now", {}) == "now()"


def test_a_value_that_is_not_json_data_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="the date 2024-01-01 is not JSON data"):
        read_call("f(day=2024-01-01)")


def test_the_model_reads_and_writes_the_shorthand() -> None:
    call = parse_call_shorthand("f(city=Paris, n=3)")
    assert call == ToolCallSpec(name="f", args={"city": "Paris", "n": 3})
    assert call.shorthand() == "f(city=Paris, n=3)"


_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(categories=["L", "N", "P", "S", "Zs"]), max_size=12)
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.text(st.characters(codec="ascii", categories=["L", "N", "P"]), max_size=5),
            inner,
            max_size=3,
        )
    ),
    max_leaves=8,
)
_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)


@settings(database=None, max_examples=300)
@given(name=_names, args=st.dictionaries(_names, _values, max_size=4))
def test_rendered_shorthand_parses_back(name: str, args: dict[str, Any]) -> None:
    assert read_call(write_call(name, args)) == (name, args)


def _as_yaml_reads(word: str) -> tuple[str, Any]:
    """What the full YAML parser makes of ``word`` as a flow value: ("value", it) or ("error",)."""
    try:
        value = load_yaml_text(f"[{word}]").data[0]
    except ScenarioFileError:
        return ("error", None)
    return ("error", None) if not_json_data(value) is not None else ("value", value)


_WORDS = [
    *("yes", "No", "on", "OFF", "true", "null", "Null", "NULL", "n", "y", "_", "k12", "a.b-c"),
    *("3", "017", "0o17", "0x1F", "0b101", "1_000", "190_20", "1.5", "1e3", "1.5e+3", "6.8e-1"),
    *("2001-12-14", "2001-13-45", "2001-12-14t21.59", ".inf", "1.", "0.", "9" * 64),
]


_words = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.+\-]{0,12}", fullmatch=True)


@settings(database=None, max_examples=500)
@given(st.sampled_from(_WORDS) | _words)
def test_a_plain_value_reads_as_the_yaml_parser_reads_it(word: str) -> None:
    expected = _as_yaml_reads(word)
    try:
        got = ("value", read_call(f"f(x={word})")[1]["x"])
    except InvalidInputError:
        got = ("error", None)
    assert got == expected
    assert type(got[1]) is type(expected[1])


def test_a_call_read_again_is_a_fresh_copy() -> None:
    # Calls a file repeats are read once; each reader still gets arguments of its own.
    _, args = read_call("add(a=1, b=two)")
    args["a"] = 99
    assert read_call("add(a=1, b=two)") == ("add", {"a": 1, "b": "two"})
    _, nested = read_call("tag(items=[x, y])")
    nested["items"].append("z")
    assert read_call("tag(items=[x, y])") == ("tag", {"items": ["x", "y"]})
