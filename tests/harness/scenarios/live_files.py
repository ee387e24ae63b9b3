"""Live scenario files for the loader's tests: valid live scenarios as plain data (a hypothesis
strategy), defects that each break one rule of the live keys and say which problems the loader
must report, and a YAML writer that records the line of every key and item.

The writer is independent of the loader's own location machinery, so the lines a test expects
are known from how the file was written, not from what the loader computes.
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

Path = tuple[str | int, ...]
Data = dict[str, Any]

# --- writing YAML, with the line of every key ----------------------------------------------------


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        mantissa, _, exponent = repr(value).partition("e")
        if "." not in mantissa:  # YAML 1.1 reads 1e-05 as text: write 1.0e-05
            mantissa += ".0"
        if exponent and exponent[0] not in "+-":
            exponent = "+" + exponent
        return mantissa + (f"e{exponent}" if exponent else "")
    assert isinstance(value, str), value
    return _quoted(value)


def _quoted(text: str) -> str:
    """``text`` as a double-quoted YAML scalar: printable ASCII as it is, the rest escaped."""
    out = []
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif 0x20 <= code < 0x7F:
            out.append(char)
        elif code <= 0xFF:
            out.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return '"' + "".join(out) + '"'


def _flow(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(item) for item in value) + "]"
    return _scalar(value)


def _key(key: str | int) -> str:
    return str(key) if isinstance(key, int) else _quoted(key)


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.where: dict[Path, int] = {(): 1}

    def mapping(self, data: dict[Any, Any], indent: int, path: Path, first: str = "") -> None:
        for index, (key, value) in enumerate(data.items()):
            head = (first if index == 0 and first else " " * indent) + _key(key)
            self.entry(head, value, indent, (*path, key))

    def entry(self, head: str, value: Any, indent: int, path: Path) -> None:
        line = len(self.lines) + 1
        self.where[path] = line
        if isinstance(value, dict) and value:
            self.lines.append(head + ":")
            self.mapping(value, indent + 2, path)
        elif isinstance(value, list) and any(isinstance(item, dict | list) for item in value):
            self.lines.append(head + ":")
            for index, item in enumerate(value):
                self.where[(*path, index)] = len(self.lines) + 1
                dash = " " * (indent + 2) + "- "
                if isinstance(item, dict) and item:
                    self.mapping(item, indent + 4, (*path, index), first=dash)
                else:
                    self.lines.append(dash + _flow(item))
        else:
            self.lines.append(f"{head}: {_flow(value)}")
            for index in range(len(value) if isinstance(value, list) else 0):
                self.where[(*path, index)] = line


def write_yaml(data: Data) -> tuple[str, dict[Path, int]]:
    """``data`` as block-style YAML, and the 1-based line of every key and list item."""
    writer = _Writer()
    writer.mapping(data, 0, ())
    return "\n".join(writer.lines) + "\n", writer.where


def dotted(path: Path) -> str:
    """A field path as the loader names it: ``judge.criteria[1].id``, ``user.knows['a b']``."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part and all(c.isascii() and (c.isalnum() or c in "_-") for c in part):
            text += f".{part}" if text else part
        else:
            text += f"[{part!r}]"
    return text


# --- valid live scenarios ----------------------------------------------------------------------

IDENTIFIERS = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True)
TEXTS = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=12
).filter(str.strip)
PROVIDERS = ("openai", "openai-responses", "anthropic")
UNIT = st.floats(min_value=0.01, max_value=0.99)
MONEY = st.one_of(st.integers(0, 50), st.floats(min_value=0, max_value=50))


@st.composite
def live_models(draw: st.DrawFn) -> Data:
    """A ``model:`` of a simulated user or a judge."""
    model: Data = {"provider": draw(st.sampled_from(PROVIDERS)), "name": draw(TEXTS)}
    if draw(st.booleans()):
        model["temperature"] = draw(st.floats(min_value=0, max_value=2))
    if draw(st.booleans()):
        model["max_tokens"] = draw(st.integers(1, 100_000))
    if draw(st.booleans()):
        model["base_url"] = "http://127.0.0.1:8750/v1"
    if draw(st.booleans()):
        model["api_key_env"] = draw(st.from_regex(r"[A-Z_][A-Z0-9_]{0,12}", fullmatch=True))
    if draw(st.booleans()):
        price = {"input": draw(MONEY), "output": draw(MONEY)}
        for key in ("cache_read", "cache_write"):
            if draw(st.booleans()):
                price[key] = draw(MONEY)
        model["price"] = price
    return model


# Built once: a strategy built anew for each draw is set up (validated, its branches weighed)
# anew each time, a third of the CPU of drawing a live scenario; the values drawn are the same.
@functools.cache
def _calls() -> st.SearchStrategy[str]:
    order = st.integers(1000, 9999).map(lambda n: f"issue_refund(order_id=A-{n})")
    return st.one_of(order, IDENTIFIERS, IDENTIFIERS.map(lambda name: f"{name}()"))


@functools.cache
def _checks() -> st.SearchStrategy[Data]:
    text_match = st.one_of(
        TEXTS, TEXTS.map(lambda t: {"contains": t}), TEXTS.map(lambda t: {"equals": t})
    )
    return st.one_of(
        _calls().map(lambda call: {"tool_called": call}),
        text_match.map(lambda match: {"final_response": match}),
        text_match.map(lambda match: {"said": match}),
    )


@st.composite
def criteria(draw: st.DrawFn) -> list[Data]:
    """One to four criteria with distinct ids."""
    ids = draw(st.lists(IDENTIFIERS, min_size=1, max_size=4, unique=True))
    out = []
    for name in ids:
        kind = draw(st.sampled_from(["check", "never", "rubric"]))
        criterion: Data = {"id": name}
        if kind == "rubric":
            criterion["rubric"] = draw(TEXTS)
            if draw(st.booleans()):
                criterion["votes"] = draw(st.integers(1, 9))
        else:
            criterion[kind] = draw(_checks())
        out.append(criterion)
    return out


@st.composite
def users(draw: st.DrawFn) -> Data:
    """A ``user:``, with a model unless it is a one-turn conversation with an opening."""
    user: Data = {"persona": draw(TEXTS), "goal": draw(TEXTS)}
    if draw(st.booleans()):
        user["knows"] = draw(st.dictionaries(IDENTIFIERS, TEXTS, max_size=3))
    if draw(st.booleans()):
        user["opening"] = draw(TEXTS)
    stop: Data = {}
    shape = draw(st.sampled_from(["none", "min", "max", "both"]))
    if shape in ("max", "both"):
        stop["max_turns"] = draw(st.integers(1, 12))
    if shape in ("min", "both"):
        stop["min_turns"] = draw(st.integers(1, stop.get("max_turns", 8)))
    if draw(st.booleans()):
        stop["not_before_tool"] = draw(st.lists(IDENTIFIERS, max_size=2))
    if stop or draw(st.booleans()):
        user["stop"] = stop
    scripted_only = "opening" in user and stop.get("max_turns") == 1
    if not scripted_only or draw(st.booleans()):
        user["model"] = draw(live_models())
    return user


@st.composite
def trials(draw: st.DrawFn) -> Data:
    """A ``trials:`` whose metric's k is at most its ``max``."""
    most = draw(st.integers(1, 200))
    k = draw(st.integers(1, min(most, 12)))
    metric = draw(st.sampled_from(["rate", f"pass^{k}", f"pass@{k}"]))
    require: Data = {"at_least": draw(UNIT)}
    if metric != "rate" or draw(st.booleans()):
        require["metric"] = metric
    if draw(st.booleans()):
        require["confidence"] = draw(st.floats(min_value=0.5, max_value=0.999))
    if draw(st.booleans()):
        require["indifference"] = draw(st.floats(min_value=0.001, max_value=0.49))
    out: Data = {"require": require}
    if metric != "rate" or draw(st.booleans()):
        out["max"] = most
    optional = {
        "sequential": st.booleans(),
        "report_k": st.lists(st.integers(1, 20), max_size=3),
        "budget_usd": MONEY,
        "concurrency": st.integers(1, 16),
        "max_set_aside": st.integers(0, 50),
        "seed": st.integers(0, 2**40),
    }
    for key, values in optional.items():
        if draw(st.booleans()):
            out[key] = draw(values)
    return out


@st.composite
def live_scenarios(draw: st.DrawFn) -> Data:
    """A valid live scenario, its top-level keys in any order."""
    kind = draw(st.sampled_from(["builder", "adapter"]))
    agent: Data = {kind: draw(st.sampled_from(["app.agent:build", "refund_app:adapter"]))}
    if draw(st.booleans()):
        agent["system_prompt"] = draw(TEXTS)
    judge: Data = {"criteria": draw(criteria())}
    if any("rubric" in c for c in judge["criteria"]) or draw(st.booleans()):
        judge["model"] = draw(live_models())
    parts: Data = {
        "name": draw(st.from_regex(r"[a-z0-9][a-z0-9._-]{0,10}", fullmatch=True)),
        "agent": agent,
        "user": draw(users()),
        "judge": judge,
        "trials": draw(trials()),
    }
    if draw(st.booleans()):
        parts["description"] = draw(TEXTS)
    order = draw(st.permutations(list(parts)))
    return {key: parts[key] for key in order}


# --- defects ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Expected:
    """A problem the loader must report: the field it names, and the path whose line it points
    at (the field's own, or its parent's when the field is absent)."""

    field: Path
    line_of: Path


@dataclass(frozen=True)
class Broken:
    """A live scenario with one defect, and every problem the loader must report for it.

    ``schema_tells`` is False for a rule JSON Schema cannot state (two criteria with one id,
    ``min_turns`` above ``max_turns``, a metric's k above ``max``, a number YAML writes that JSON
    has no word for)."""

    kind: str
    data: Data
    expected: tuple[Expected, ...]
    schema_tells: bool = True


def _at(data: Any, path: Path) -> Any:
    for part in path:
        data = data[part]
    return data


def _insert(mapping: Data, key: str, value: Any, position: int) -> None:
    """Put ``key`` at ``position`` in ``mapping`` (in place, the other keys kept in order)."""
    items = [(k, v) for k, v in mapping.items() if k != key]
    items.insert(min(position, len(items)), (key, value))
    mapping.clear()
    mapping.update(items)


def _criterion_paths(data: Data) -> list[Path]:
    return [("judge", "criteria", i) for i in range(len(data["judge"]["criteria"]))]


def _model_paths(data: Data) -> list[Path]:
    return [(role, "model") for role in ("user", "judge") if "model" in data[role]]


def _typed_fields(data: Data) -> list[tuple[Path, str]]:
    """Every field of the live keys present in ``data``, with the kind of value it takes."""
    fields: list[tuple[Path, str]] = [
        (("user",), "mapping"),
        (("judge",), "mapping"),
        (("trials",), "mapping"),
        (("user", "persona"), "text"),
        (("user", "goal"), "text"),
        (("judge", "criteria"), "list"),
        (("trials", "require"), "mapping"),
        (("trials", "require", "at_least"), "number"),
    ]
    user, trials_ = data["user"], data["trials"]
    optional = {
        ("user", "opening"): "text",
        ("user", "knows"): "mapping",
        ("user", "stop"): "mapping",
        ("trials", "require", "metric"): "text",
        ("trials", "require", "confidence"): "number",
        ("trials", "require", "indifference"): "number",
        ("trials", "max"): "int",
        ("trials", "sequential"): "flag",
        ("trials", "report_k"): "list",
        ("trials", "budget_usd"): "number",
        ("trials", "concurrency"): "int",
        ("trials", "max_set_aside"): "int",
        ("trials", "seed"): "int",
    }
    fields += [(path, kind) for path, kind in optional.items() if _has(data, path)]
    fields += [(("user", "knows", name), "text") for name in user.get("knows", {})]
    for key in ("min_turns", "max_turns"):
        if key in user.get("stop", {}):
            fields.append((("user", "stop", key), "int"))
    if "not_before_tool" in user.get("stop", {}):
        fields.append((("user", "stop", "not_before_tool"), "list"))
    fields += [
        ((*path, i), "int")
        for path in [("trials", "report_k")]
        for i in range(len(trials_.get("report_k", [])))
    ]
    for path in _criterion_paths(data):
        criterion = _at(data, path)
        fields += [(path, "mapping"), ((*path, "id"), "text")]
        for key, kind in (("check", "mapping"), ("never", "mapping"), ("rubric", "text")):
            if key in criterion:
                fields.append(((*path, key), kind))
        if "votes" in criterion:
            fields.append(((*path, "votes"), "int"))
    for path in _model_paths(data):
        model = _at(data, path)
        fields += [(path, "mapping"), ((*path, "provider"), "text"), ((*path, "name"), "text")]
        kinds = {
            "temperature": "number",
            "max_tokens": "int",
            "base_url": "text",
            "api_key_env": "text",
            "price": "mapping",
        }
        fields += [((*path, key), kind) for key, kind in kinds.items() if key in model]
        fields += [((*path, "price", key), "number") for key in model.get("price", {})]
    return fields


def _has(data: Any, path: Path) -> bool:
    try:
        _at(data, path)
    except (KeyError, IndexError, TypeError):
        return False
    return True


WRONG_VALUES: dict[str, tuple[Any, ...]] = {
    "text": (5, 2.5, True, ["x"], {"k": "v"}),
    "int": ("3", 2.5, True, [1], {"k": 1}),
    "number": ("0.5", True, [0.5], {"k": 1}),
    "flag": ("yes", 1, 0.0, [True]),
    "mapping": ("text", 5, ["x"], True),
    "list": ("x", 5, {"k": 1}, True),
}


def _wrong_type(draw: st.DrawFn, data: Data) -> Broken:
    path, kind = draw(st.sampled_from(_typed_fields(data)), label="field")
    _at(data, path[:-1])[path[-1]] = draw(st.sampled_from(WRONG_VALUES[kind]), label="value")
    return Broken("wrong type", data, (Expected(path, path),))


_NAN, _INF = float("nan"), float("inf")
OUT_OF_RANGE: dict[Path, tuple[Any, ...]] = {
    ("trials", "require", "confidence"): (1.0, 1, 0.4999, 1.5, -0.1, 0, _NAN, _INF),
    ("trials", "require", "at_least"): (0, 0.0, 1, 1.0, -0.5, 2, _NAN, -_INF),
    ("trials", "require", "indifference"): (0, 0.5, 0.7, -0.01, _NAN),
    ("trials", "budget_usd"): (-1, -0.01, _INF, _NAN, -_INF),
    ("trials", "max"): (0, -3),
    ("trials", "concurrency"): (0, -1),
    ("trials", "max_set_aside"): (-1,),
    ("trials", "seed"): (-1,),
    ("user", "stop", "min_turns"): (0, -1),
    ("user", "stop", "max_turns"): (0, -2),
}
MODEL_OUT_OF_RANGE: dict[str, tuple[Any, ...]] = {
    "temperature": (-0.1, 2.5, _NAN),
    "max_tokens": (0, -5),
}


def _out_of_range(draw: st.DrawFn, data: Data) -> Broken:
    where = draw(st.sampled_from(["trials", "votes", "model", "price", "report_k"]), label="at")
    if where == "votes":
        path = draw(st.sampled_from(_criterion_paths(data)))
        criterion = _at(data, path)
        criterion.pop("check", None), criterion.pop("never", None)
        criterion["rubric"] = criterion.get("rubric", "the agent is polite")
        _ensure_judge_model(draw, data)
        path, value = (*path, "votes"), draw(st.sampled_from([0, -1]))
    elif where == "model":
        model = draw(st.sampled_from(["user", "judge"]))
        _at(data, (model,))["model"] = _at(data, (model,)).get("model") or draw(live_models())
        key = draw(st.sampled_from(sorted(MODEL_OUT_OF_RANGE)))
        path, value = (model, "model", key), draw(st.sampled_from(MODEL_OUT_OF_RANGE[key]))
    elif where == "price":
        model = draw(st.sampled_from(["user", "judge"]))
        spec = _at(data, (model,)).get("model") or draw(live_models())
        _at(data, (model,))["model"] = spec
        spec["price"] = spec.get("price") or {"input": 1, "output": 2}
        key = draw(st.sampled_from(sorted(spec["price"])))
        path, value = (model, "model", "price", key), draw(st.sampled_from([-1, -0.5, _INF, _NAN]))
    elif where == "report_k":
        ks = data["trials"].setdefault("report_k", [])
        index = draw(st.integers(0, len(ks)))
        ks.insert(index, draw(st.sampled_from([0, -2])))
        path = ("trials", "report_k", index)
        return Broken("out of range", data, (Expected(path, path),))
    else:
        path = draw(st.sampled_from(sorted(OUT_OF_RANGE)))
        value = draw(st.sampled_from(OUT_OF_RANGE[path]))
    parent = data
    for part in path[:-1]:
        parent = parent[part] if isinstance(part, int) else parent.setdefault(part, {})
    parent[path[-1]] = value
    finite = not (isinstance(value, float) and not math.isfinite(value))
    return Broken("out of range", data, (Expected(path, path),), schema_tells=finite)


def _ensure_judge_model(draw: st.DrawFn, data: Data) -> None:
    data["judge"]["model"] = data["judge"].get("model") or draw(live_models())


def _duplicate_id(draw: st.DrawFn, data: Data) -> Broken:
    items = data["judge"]["criteria"]
    if len(items) == 1:
        items.append({"id": "second", "check": {"said": "x"}})
    first = draw(st.integers(0, len(items) - 2), label="first")
    second = draw(st.integers(first + 1, len(items) - 1), label="second")
    items[second]["id"] = items[first]["id"]
    path = ("judge", "criteria", second, "id")
    return Broken("duplicate criterion id", data, (Expected(path, path),), schema_tells=False)


def _rubric_without_model(draw: st.DrawFn, data: Data) -> Broken:
    path = draw(st.sampled_from(_criterion_paths(data)))
    criterion = _at(data, path)
    if "rubric" not in criterion:
        criterion.pop("check", None), criterion.pop("never", None)
        criterion["rubric"] = draw(TEXTS)
    data["judge"].pop("model", None)
    return Broken("rubric without judge model", data, (Expected(("judge", "model"), ("judge",)),))


def _check_keys(draw: st.DrawFn, data: Data) -> Broken:
    path = draw(st.sampled_from(_criterion_paths(data)))
    criterion = _at(data, path)
    key = next((k for k in ("check", "never") if k in criterion), None)
    if key is None:
        key = draw(st.sampled_from(["check", "never"]))
        criterion.pop("rubric"), criterion.pop("votes", None)
        criterion[key] = draw(_checks())
    check = criterion[key]
    if draw(st.booleans(), label="empty"):
        check.clear()
    else:
        other = draw(
            st.sampled_from(
                [k for k in ("tool_called", "final_response", "said") if k not in check]
            )
        )
        _insert(
            check,
            other,
            draw(TEXTS if other != "tool_called" else _calls()),
            draw(st.integers(0, 1)),
        )
    return Broken("check with two keys or none", data, (Expected((*path, key), (*path, key)),))


NOT_CALLS = (
    "issue_refund(order_id=",
    "issue refund()",
    "1abc()",
    "",
    "f(a=1",
    5,
    2.5,
    True,
    ["f()"],
)
BAD_ARGUMENTS = ("f(x)", "f(=1)", "f(a=1))", "f(a=1,,b=2)")
"""Calls whose arguments do not parse: the schema's pattern only sees the parentheses."""


def _not_a_call(draw: st.DrawFn, data: Data) -> Broken:
    path = draw(st.sampled_from(_criterion_paths(data)))
    criterion = _at(data, path)
    key = draw(st.sampled_from(["check", "never"]))
    criterion.pop("check", None), criterion.pop("never", None)
    criterion.pop("rubric", None), criterion.pop("votes", None)
    call = draw(st.sampled_from(NOT_CALLS + BAD_ARGUMENTS), label="call")
    criterion[key] = {"tool_called": call}
    field = (*path, key, "tool_called")
    tells = call not in BAD_ARGUMENTS
    return Broken("tool_called not a call", data, (Expected(field, field),), schema_tells=tells)


BAD_METRICS = (
    "pass^0", "pass^x", "pass@", "rate2", "pass^-1", "Rate", " rate", "pass^01", "pass^1.5",
    "pass ^2", "pass@0", "", "pass^", "pass@x", "pass^2 ", "pass_2", "pass**2",
)  # fmt: skip


def _bad_metric(draw: st.DrawFn, data: Data) -> Broken:
    require = data["trials"]["require"]
    path = ("trials", "require", "metric")
    if draw(st.booleans(), label="k above max"):
        most = data["trials"].get("max", 30)
        k = draw(st.integers(most + 1, most + 1000))
        _insert(require, "metric", draw(st.sampled_from([f"pass^{k}", f"pass@{k}"])), 0)
        return Broken("metric's k above max", data, (Expected(path, path),), schema_tells=False)
    _insert(require, "metric", draw(st.sampled_from(BAD_METRICS)), draw(st.integers(0, 3)))
    return Broken("bad metric", data, (Expected(path, path),))


def _bad_knows(draw: st.DrawFn, data: Data) -> Broken:
    knows = data["user"].setdefault("knows", {})
    name = draw(st.sampled_from([*knows, "order_id"]) if knows else st.just("order_id"))
    value = draw(st.sampled_from([5, 2.5, True, None, ["x"], {"k": "v"}, " ", ""]))
    knows[name] = value
    path = ("user", "knows", name)
    return Broken("knows not text", data, (Expected(path, path),))


def _min_above_max(draw: st.DrawFn, data: Data) -> Broken:
    stop = data["user"].setdefault("stop", {})
    if draw(st.booleans(), label="default max"):
        stop.pop("max_turns", None)
        stop["min_turns"] = draw(st.integers(9, 100))
    else:
        stop["max_turns"] = draw(st.integers(1, 20))
        stop["min_turns"] = draw(st.integers(stop["max_turns"] + 1, 50))
    path = ("user", "stop", "min_turns")
    return Broken("min_turns above max_turns", data, (Expected(path, path),), schema_tells=False)


def _turns_and_user(draw: st.DrawFn, data: Data) -> Broken:
    turns = draw(st.sampled_from([[{"user": "hi"}], [{"user": "hi", "model": [{"say": "x"}]}]]))
    _insert(data, "turns", turns, draw(st.integers(0, len(data))))
    return Broken("turns and user", data, (Expected(("turns",), ("turns",)),))


def _some_live_keys(draw: st.DrawFn, data: Data) -> Broken:
    live = ["user", "judge", "trials"]
    gone = draw(st.lists(st.sampled_from(live), min_size=1, max_size=2, unique=True))
    for key in gone:
        del data[key]
    expected = tuple(Expected((key,), ()) for key in live if key in gone)
    return Broken("some of user, judge, trials", data, expected)


def _builder_and_adapter(draw: st.DrawFn, data: Data) -> Broken:
    agent = data["agent"]
    agent.setdefault("builder", "app.agent:build")
    _insert(agent, "adapter", "app.agent:reply", draw(st.integers(0, len(agent))))
    path = ("agent", "adapter")
    return Broken("builder and adapter", data, (Expected(path, path),))


def _no_agent(draw: st.DrawFn, data: Data) -> Broken:
    if draw(st.booleans(), label="key left out"):
        del data["agent"]
        return Broken("no agent", data, (Expected(("agent",), ()),))
    data["agent"] = draw(st.sampled_from([{}, {"system_prompt": "hi"}]))
    return Broken("no agent", data, (Expected(("agent",), ("agent",)),))


def _mappings(data: Data) -> list[Path]:
    """The paths of every mapping of the live keys whose keys are field names."""
    paths: list[Path] = [(), ("agent",), ("user",), ("judge",), ("trials",), ("trials", "require")]
    if "stop" in data["user"]:
        paths.append(("user", "stop"))
    for path in _criterion_paths(data):
        paths.append(path)
        paths += [(*path, key) for key in ("check", "never") if key in _at(data, path)]
    for path in _model_paths(data):
        paths.append(path)
        if "price" in _at(data, path):
            paths.append((*path, "price"))
    return paths


ALLOWED = {
    (): {"name", "description", "tags", "agent", "turns", "invariants", "seed", "user", "judge",
         "trials"},
    ("agent",): {"builder", "adapter", "system_prompt", "system_prompt_override", "model",
                 "trace_mode", "budget", "finish_reasons", "max_retries", "tools", "subagents",
                 "subagent_policy", "hooks", "stream", "wire_chunking"},
    ("user",): {"persona", "goal", "knows", "opening", "stop", "model"},
    ("user", "stop"): {"min_turns", "max_turns", "not_before_tool"},
    ("criterion",): {"id", "check", "never", "rubric", "votes"},
    ("check",): {"tool_called", "final_response", "said"},
    ("model",): {"provider", "name", "temperature", "max_tokens", "base_url", "api_key_env",
                 "price"},
    ("price",): {"input", "output", "cache_read", "cache_write"},
    ("judge",): {"criteria", "model"},
    ("trials",): {"require", "max", "sequential", "report_k", "budget_usd", "concurrency",
                  "max_set_aside", "seed"},
    ("trials", "require"): {"metric", "at_least", "confidence", "indifference"},
}  # fmt: skip


def _allowed(path: Path) -> set[str]:
    if path and path[-1] in ("check", "never"):
        return ALLOWED[("check",)]
    if path and isinstance(path[-1], int):
        return ALLOWED[("criterion",)]
    if path and path[-1] in ("model", "price"):
        return ALLOWED[(str(path[-1]),)]
    return ALLOWED[path]


UNKNOWN_KEYS = st.one_of(
    st.sampled_from(["colour", "rubrik", "min_turn", "at_most", "inptu", "1", "on", "<<", "x y"]),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8),
)


def _unknown_key(draw: st.DrawFn, data: Data) -> Broken:
    path = draw(st.sampled_from(_mappings(data)), label="mapping")
    key = draw(UNKNOWN_KEYS.filter(lambda k: k not in _allowed(path)), label="key")
    mapping = _at(data, path)
    _insert(
        mapping,
        key,
        draw(st.sampled_from([1, "x", None, [1], {"k": 1}])),
        draw(st.integers(0, len(mapping))),
    )
    field = (*path, key)
    return Broken("unknown key", data, (Expected(field, field),))


REQUIRED = [
    ("user", "persona"),
    ("user", "goal"),
    ("judge", "criteria"),
    ("trials", "require"),
    ("trials", "require", "at_least"),
]


def _missing_key(draw: st.DrawFn, data: Data) -> Broken:
    choices: list[Path] = [*REQUIRED]
    choices += [(*path, "id") for path in _criterion_paths(data)]
    choices += [(*path, key) for path in _model_paths(data) for key in ("provider", "name")]
    path = draw(st.sampled_from(choices), label="key")
    del _at(data, path[:-1])[path[-1]]
    return Broken("missing key", data, (Expected(path, path[:-1]),))


DEFECTS: dict[str, Callable[[st.DrawFn, Data], Broken]] = {
    "wrong type": _wrong_type,
    "out of range": _out_of_range,
    "duplicate criterion id": _duplicate_id,
    "rubric without judge model": _rubric_without_model,
    "check with two keys or none": _check_keys,
    "tool_called not a call": _not_a_call,
    "bad metric": _bad_metric,
    "knows not text": _bad_knows,
    "min_turns above max_turns": _min_above_max,
    "turns and user": _turns_and_user,
    "some of user, judge, trials": _some_live_keys,
    "builder and adapter": _builder_and_adapter,
    "no agent": _no_agent,
    "unknown key": _unknown_key,
    "missing key": _missing_key,
}


@st.composite
def broken_live_scenarios(draw: st.DrawFn, kinds: tuple[str, ...] = tuple(DEFECTS)) -> Broken:
    """A valid live scenario with one defect of one of ``kinds``."""
    data = copy.deepcopy(draw(live_scenarios(), label="valid"))
    kind = draw(st.sampled_from(kinds), label="defect")
    return DEFECTS[kind](draw, data)
