"""Fuzz tests of the scenario loader: whatever the file holds, only ``ScenarioFileError`` escapes
and no load runs past the hang bound (random YAML text, structural mutants of the bundled
scenarios and of live scenarios, damaged bytes); and each defect of a live scenario's keys is
reported at its own line and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import live_files
import pytest
import yaml
from hypothesis import event, given
from hypothesis import strategies as st

from agentrig.harness.errors import ScenarioFileError
from agentrig.harness.property.profiles import agentrig_settings
from agentrig.harness.scenarios.loader import load_scenario
from agentrig.harness.scenarios.yaml_source import load_yaml_file

ROOT = Path(__file__).resolve().parents[3]
BUNDLED = sorted((ROOT / "scenarios").rglob("*.scenario.yaml"))
DATA = sorted((Path(__file__).parent / "data").glob("*.yaml"))
LIVE = sorted((ROOT / "examples" / "live").glob("*.scenario.yaml"))
REAL = BUNDLED + DATA + LIVE


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
    assert [load_scenario(path).is_live for path in LIVE] == [True]


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


# --- the simulation fields: each bad value is reported at its own line and field -----------------

_BAD_WEIGHTS = st.sampled_from(["0", "-1", "-0.5", ".nan", ".inf", "-.inf", "yes", "'0.5'", "null"])
_GOOD_WEIGHTS = st.sampled_from(["1", "0.25", "3", "1.0e-6"])


@st.composite
def _bad_simulation_file(draw: st.DrawFn) -> tuple[str, str, int]:
    """A scenario text with one bad simulation field, that field's path and its 1-based line."""
    kind = draw(st.sampled_from(["weight", "empty", "repeat", "logprob", "top"]), label="kind")
    lines = ["name: fuzz", "turns:", "  - user: hi"]
    if kind == "empty":
        lines.append("    mixture: []")
        return "\n".join(lines) + "\n", "turns[0].mixture", 4
    if kind == "weight":
        count = draw(st.integers(1, 4), label="branches")
        bad = draw(st.integers(0, count - 1), label="bad branch")
        lines.append("    mixture:")
        for index in range(count):
            weight = draw(_BAD_WEIGHTS if index == bad else _GOOD_WEIGHTS)
            lines.append(f"      - {{weight: {weight}, model: [{{say: b{index}}}]}}")
        return "\n".join(lines) + "\n", f"turns[0].mixture[{bad}].weight", 5 + bad
    if kind == "repeat":
        count = draw(st.integers(2, 5), label="replies")
        bad = draw(st.integers(0, count - 2), label="repeating reply")
        lines.append("    model:")
        for index in range(count):
            repeat = ", repeat: true" if index in (bad, count - 1) else ""
            lines.append(f"      - {{say: r{index}{repeat}}}")
        return "\n".join(lines) + "\n", f"turns[0].model[{bad}].repeat", 5 + bad
    value = draw(st.floats(min_value=1e-9, max_value=1e9, allow_nan=False), label="logprob")
    tokens = draw(st.lists(st.sampled_from(["Ye", "s", " it", " is"]), min_size=1, max_size=4))
    bad = draw(st.integers(0, len(tokens) - 1), label="bad token")
    lines += ["    model:", f"      - say: {json.dumps(''.join(tokens))}", "        logprobs:"]
    for index, token in enumerate(tokens):
        logprob = f"{value!r}" if index == bad and kind == "logprob" else "-0.5"
        top = f", top: {{x: {value!r}}}" if index == bad and kind == "top" else ""
        lines.append(f"          - {{token: {json.dumps(token)}, logprob: {logprob}{top}}}")
    suffix = "logprob" if kind == "logprob" else "top.x"
    return "\n".join(lines) + "\n", f"turns[0].model[0].logprobs[{bad}].{suffix}", 7 + bad


@agentrig_settings(max_examples=60)
@given(case=_bad_simulation_file())
def test_bad_simulation_fields_name_their_line_and_field(
    tmp_path_factory: Any, case: tuple[str, str, int]
) -> None:
    text, field, line = case
    path = tmp_path_factory.mktemp("fuzz") / "fuzz.scenario.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ScenarioFileError) as caught:
        load_scenario(path)
    error = caught.value
    assert [(p.field, p.line, p.path) for p in error.errors] == [(field, line, str(path))]
    assert str(error).startswith(f"{path}:{line}:")


# --- the live keys: each defect is reported at its own line and field ------------------------


@agentrig_settings(max_examples=40)
@given(data=st.data())
def test_structural_mutants_of_live_scenarios(
    tmp_path_factory: Any, hostile: Any, data: st.DataObject
) -> None:
    base = data.draw(live_files.live_scenarios(), label="live scenario")
    raw = _dumped(hostile.mutant(data, base))
    if raw is not None:
        _load_text(tmp_path_factory.mktemp("fuzz"), raw, hostile)


@agentrig_settings(max_examples=30)
@given(data=live_files.live_scenarios())
def test_generated_live_scenarios_load(tmp_path_factory: Any, data: dict[str, Any]) -> None:
    text, _ = live_files.write_yaml(data)
    path = tmp_path_factory.mktemp("fuzz") / "live.scenario.yaml"
    path.write_text(text, encoding="utf-8")
    scenario = load_scenario(path)
    assert scenario.is_live
    assert scenario.user is not None
    assert scenario.user.persona == data["user"]["persona"]
    assert scenario.trials is not None
    assert scenario.trials.require.at_least == data["trials"]["require"]["at_least"]


@agentrig_settings(max_examples=50)  # 15 kinds of defect: --agentrig-deep tries 1000
@given(case=live_files.broken_live_scenarios())
def test_each_live_defect_is_named_at_its_line_and_field(
    tmp_path_factory: Any, hostile: Any, case: live_files.Broken
) -> None:
    event(case.kind)
    text, lines = live_files.write_yaml(case.data)
    path = tmp_path_factory.mktemp("fuzz") / "live.scenario.yaml"
    path.write_text(text, encoding="utf-8")
    error = hostile.check(lambda: load_scenario(path), (ScenarioFileError,))
    assert isinstance(error, ScenarioFileError), f"{case.kind}: loaded\n{text}"
    expected = sorted(
        (live_files.dotted(problem.field), lines[problem.line_of]) for problem in case.expected
    )
    found = sorted((problem.field, problem.line) for problem in error.errors)
    assert found == expected, f"{case.kind}: {error}\n{text}"
    for problem in error.errors:
        assert str(problem).startswith(f"{path}:{problem.line}:")
        assert f": {problem.field}: " in str(problem)
        assert "Input should" not in problem.reason  # pydantic's words, not the loader's
        assert "String should" not in problem.reason


# --- the value limit, counted while parsing: it refuses exactly the documents over it ---------

_SMALL_LIMIT = 25
_MAP, _SEQ, _MERGE = (f"tag:yaml.org,2002:{kind}" for kind in ("map", "seq", "merge"))


def _values(node: Any, budget: list[int]) -> None:
    """Count the values ``node`` expands to (aliases expanded, mapping keys and a merge key's
    list of sources not counted; other tagged collections count every node) into ``budget``,
    stopping once it is spent: an oracle of the limit, from the composed node graph."""
    budget[0] -= 1
    if budget[0] < 0:
        return
    if isinstance(node, yaml.MappingNode) and node.tag == _MAP:
        for key, value in node.value:
            sources = value.value if key.tag == _MERGE and value.tag == _SEQ else [value]
            for source in sources:
                _values(source, budget)
    elif isinstance(node, yaml.SequenceNode) and node.tag == _SEQ:
        for item in node.value:
            _values(item, budget)
    elif isinstance(node, yaml.MappingNode | yaml.SequenceNode):
        for child in (
            [part for pair in node.value for part in pair]
            if isinstance(node, yaml.MappingNode)
            else node.value
        ):
            _every_node(child, budget)


def _every_node(node: Any, budget: list[int]) -> None:
    budget[0] -= 1
    if budget[0] >= 0 and isinstance(node, yaml.MappingNode | yaml.SequenceNode):
        for child in (
            [part for pair in node.value for part in pair]
            if isinstance(node, yaml.MappingNode)
            else node.value
        ):
            _every_node(child, budget)


def _over_the_limit(text: str) -> bool | None:
    """Whether the document holds more than ``_SMALL_LIMIT`` values; None if PyYAML cannot
    compose it (nor can the loader)."""
    root = None
    for loader in (getattr(yaml, "CSafeLoader", yaml.SafeLoader), yaml.SafeLoader):
        try:  # libyaml first, as the loader: the two differ on a few texts ('0\t')
            root = yaml.compose(text, Loader=loader)
            break
        except (yaml.YAMLError, RecursionError, UnicodeEncodeError):
            continue
    else:
        return None
    budget = [_SMALL_LIMIT]
    if root is not None:
        _values(root, budget)
    return budget[0] < 0


_ANCHORED = st.lists(
    st.sampled_from(
        [
            "a: &a [1, 2, 3]\n",
            "b: &b {x: 1, y: [2, 3]}\n",
            "c: [*a, *a, *a]\n",
            "d:\n  <<: [*b, {z: 4}]\n  w: 5\n",
            "e: !!set {? p, ? q, ? r}\n",
            "f: !!omap [{k: 1}, {l: [1, 2]}]\n",
            "g:\n" + "".join(f"  k{index}: {index}\n" for index in range(8)),
            "h: [" + ", ".join(["*b"] * 4) + "]\n",
            "'<<': quoted, not a merge\n",
        ]
    ),
    min_size=1,
    max_size=8,
)


@agentrig_settings(max_examples=60)
@given(data=st.data())
def test_the_value_limit_refuses_exactly_the_documents_over_it(
    hostile: Any, data: st.DataObject
) -> None:
    """Counted on the parser's events before the document is built, the limit must agree with
    the values the document expands to: never refuse one within it, never let one over it
    through (alias, merge and tagged-collection documents, real files, damaged ones). A
    document PyYAML cannot compose may be refused for the limit when it crosses it before its
    syntax error."""
    from unittest import mock

    from agentrig.harness.scenarios import yaml_source

    kind = data.draw(st.sampled_from(["anchored", "real", "damaged", "tokens"]), label="kind")
    if kind == "anchored":
        lines = data.draw(_ANCHORED, label="lines")
        text = "".join(dict.fromkeys(lines))  # each key once
    elif kind == "tokens":
        text = data.draw(hostile.yaml_texts(), label="text")
    else:
        raw = data.draw(st.sampled_from(REAL), label="file").read_bytes()
        if kind == "damaged":
            raw = hostile.damaged(data, raw)
        text = raw.decode("utf-8", "replace")
    over = _over_the_limit(text)
    with mock.patch.object(yaml_source, "MAX_VALUES", _SMALL_LIMIT):
        try:
            yaml_source.load_yaml_text(text)
        except ScenarioFileError as error:
            refused = f"more than {_SMALL_LIMIT} values" in error.reason
            event(f"refused: {'the limit' if refused else 'other'}")
            # A document broken past the point where it crosses the limit is refused there,
            # for the limit: the rest of it is never parsed.
            if refused:
                assert over is not False, text
            return
    event("accepted")
    assert over is False, text
