"""The report writers: registry, determinism, and each format's structure and escaping."""

from __future__ import annotations

import json
import os
import re
import socket
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, ClassVar

import pytest

from agentrig.errors import AgentrigError, ConfigurationError
from agentrig.harness.reporting import (
    HtmlWriter,
    JsonWriter,
    JUnitWriter,
    MarkdownWriter,
    ReportWriter,
    UnknownWriterError,
    get_writer,
    normalized,
    register_writer,
    unregister_writer,
    write_reports,
    writer_names,
)
from agentrig.harness.reporting.html import format_usage
from agentrig.harness.reporting.junit import classname_for
from agentrig.harness.reporting.markdown import markdown_code, markdown_text
from agentrig.harness.results import Failure, ScenarioResult, SuiteResult, TranscriptEntry

SuiteFactory = Callable[..., SuiteResult]
BUILT_INS = ("html", "json", "junit", "markdown")
# Wall times no other number in the suite could be mistaken for.
SENTINELS = (7301.125, 7302.25, 7303.375, 7304.5)


# --- registry -----------------------------------------------------------------------------


class _TextWriter(ReportWriter):
    name = "text"
    filename = "report.txt"

    def render(self, result: SuiteResult) -> str:
        return f"{result.passed_count}/{result.total}\n"


@pytest.fixture
def text_writer() -> Iterator[type[_TextWriter]]:
    register_writer(_TextWriter)
    yield _TextWriter
    unregister_writer("text")


def test_built_ins_are_registered() -> None:
    assert writer_names() == BUILT_INS
    expected = {
        "junit": (JUnitWriter, "junit.xml"),
        "json": (JsonWriter, "report.json"),
        "markdown": (MarkdownWriter, "report.md"),
        "html": (HtmlWriter, "report.html"),
    }
    for name, (cls, filename) in expected.items():
        writer = get_writer(name)
        assert (type(writer), writer.name, writer.filename) == (cls, name, filename)


def test_unknown_writer_lists_valid_names() -> None:
    with pytest.raises(UnknownWriterError) as caught:
        get_writer("pdf")
    error = caught.value
    assert isinstance(error, LookupError)
    assert isinstance(error, AgentrigError)
    assert (error.name, error.valid) == ("pdf", BUILT_INS)
    assert str(error) == "unknown report writer 'pdf'; valid names: html, json, junit, markdown"


def test_custom_writer_registers_and_writes(
    text_writer: type[_TextWriter], suite: SuiteResult, tmp_path: Path
) -> None:
    assert writer_names() == ("html", "json", "junit", "markdown", "text")
    assert write_reports(suite, tmp_path, ["text"]) == [tmp_path / "report.txt"]
    assert (tmp_path / "report.txt").read_text() == "1/3\n"


def test_duplicate_name_needs_replace(text_writer: type[_TextWriter]) -> None:
    other = type("OtherText", (_TextWriter,), {})
    with pytest.raises(
        ConfigurationError, match=r"already registered by _TextWriter; .*replace=True"
    ):
        register_writer(other)
    assert register_writer(other, replace=True) is other
    assert type(get_writer("text")) is other


def test_registering_the_same_class_twice_is_harmless(text_writer: type[_TextWriter]) -> None:
    assert register_writer(text_writer) is text_writer


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        ({"name": "", "filename": "x.txt"}, "non-empty class attribute 'name'"),
        ({"name": "x", "filename": "../x.txt"}, "bare file name"),
        ({"name": "x", "filename": ""}, "bare file name"),
    ],
)
def test_bad_writer_classes_are_rejected(attributes: dict[str, str], message: str) -> None:
    bad = type("Bad", (_TextWriter,), attributes)
    with pytest.raises(ConfigurationError, match=message):
        register_writer(bad)
    assert writer_names() == BUILT_INS


def test_unregister_unknown_name() -> None:
    with pytest.raises(UnknownWriterError, match="valid names: html, json"):
        unregister_writer("nope")


# --- write_reports ------------------------------------------------------------------------


def test_write_reports_writes_every_built_in(suite: SuiteResult, tmp_path: Path) -> None:
    target = tmp_path / "nested" / "reports"
    paths = write_reports(suite, target)
    assert [p.name for p in paths] == ["report.html", "report.json", "junit.xml", "report.md"]
    for path, name in zip(paths, BUILT_INS, strict=True):
        assert path.read_bytes() == get_writer(name).render(suite).encode("utf-8")


def test_write_reports_selected_names_deduplicated(suite: SuiteResult, tmp_path: Path) -> None:
    paths = write_reports(suite, str(tmp_path), ["json", "junit", "json"])
    assert [p.name for p in paths] == ["report.json", "junit.xml"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junit.xml", "report.json"]


def test_write_reports_checks_names_before_writing(suite: SuiteResult, tmp_path: Path) -> None:
    target = tmp_path / "out"
    with pytest.raises(UnknownWriterError, match="'xml'"):
        write_reports(suite, target, ["json", "xml"])
    assert not target.exists()


def test_write_reports_rejects_two_writers_for_one_file(
    text_writer: type[_TextWriter], suite: SuiteResult, tmp_path: Path
) -> None:
    clash = type("Clash", (_TextWriter,), {"name": "clash"})
    register_writer(clash)
    try:
        with pytest.raises(ConfigurationError, match=r"both write 'report\.txt'"):
            write_reports(suite, tmp_path, ["text", "clash"])
    finally:
        unregister_writer("clash")


# --- determinism --------------------------------------------------------------------------


@pytest.mark.parametrize("name", BUILT_INS)
def test_rendering_is_byte_identical(name: str, make_suite: SuiteFactory) -> None:
    writer = get_writer(name)
    assert (
        writer.render(make_suite())
        == writer.render(make_suite())
        == get_writer(name).render(make_suite())
    )


@pytest.mark.parametrize("name", BUILT_INS)
def test_only_wall_times_differ_between_runs(name: str, make_suite: SuiteFactory) -> None:
    writer = get_writer(name)
    first, second = make_suite((1.0, 0.1, 0.2, 0.3)), make_suite(SENTINELS)
    assert writer.render(first) != writer.render(second)
    assert writer.render(normalized(first)) == writer.render(normalized(second))


@pytest.mark.parametrize("name", BUILT_INS)
def test_dict_order_does_not_matter(name: str, suite: SuiteResult) -> None:
    reordered = _reorder_dicts(suite)
    assert reordered == suite
    assert get_writer(name).render(reordered) == get_writer(name).render(suite)


@pytest.mark.parametrize("name", BUILT_INS)
def test_no_machine_specific_data(name: str, suite: SuiteResult) -> None:
    text = get_writer(name).render(suite)
    assert socket.gethostname() not in text
    assert os.getcwd() not in text
    assert str(Path.home()) not in text


def _reorder_dicts(suite: SuiteResult) -> SuiteResult:
    weather = suite.scenarios[0]
    call = weather.transcript[2].model_copy(update={"args": {"city": "Paris", "units": "C"}})
    turn = weather.turns[0].model_copy(update={"usage": {"input": 40, "output": 8}})
    transcript = (*weather.transcript[:2], call, *weather.transcript[3:])
    weather = weather.model_copy(update={"transcript": transcript, "turns": (turn,)})
    assert list(weather.transcript[2].args or {}) != list(
        suite.scenarios[0].transcript[2].args or {}
    )
    return suite.model_copy(update={"scenarios": (weather, *suite.scenarios[1:])})


# wall times appear only in their dedicated places


def _sentinel_texts() -> list[str]:
    return [f"{value:.3f}" for value in SENTINELS]


def test_json_wall_times_only_under_wall_time_keys(make_suite: SuiteFactory) -> None:
    data = json.loads(JsonWriter().render(make_suite(SENTINELS)))
    found = sorted(_values_at(data, "wall_time_s"))
    assert found == sorted(SENTINELS)
    assert not any(str(v) in json.dumps(_without(data, "wall_time_s")) for v in SENTINELS)


def test_junit_wall_times_only_in_time_attributes(make_suite: SuiteFactory) -> None:
    root = ET.fromstring(JUnitWriter().render(make_suite(SENTINELS)))
    times = [element.attrib["time"] for element in root.iter() if "time" in element.attrib]
    assert sorted(times) == _sentinel_texts()
    for element in root.iter():
        element.attrib.pop("time", None)
    stripped = ET.tostring(root, "unicode")
    assert not any(text in stripped for text in _sentinel_texts())


def test_markdown_wall_times_only_in_wall_time_places(make_suite: SuiteFactory) -> None:
    text = MarkdownWriter().render(make_suite(SENTINELS))
    assert f"Wall time: {SENTINELS[0]:.3f} s" in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    assert rows[0].split(" | ")[-1] == "Wall time (s) |"
    assert [row.split(" | ")[-1] for row in rows[1:]] == [f"{t} |" for t in _sentinel_texts()[1:]]
    assert text.count("730") == 4


def test_html_wall_times_only_in_labelled_elements(make_suite: SuiteFactory) -> None:
    text = HtmlWriter().render(make_suite(SENTINELS))
    for value in _sentinel_texts():
        assert text.count(value) == 1
        assert f'class="wall-time">Wall time: {value} s<' in text
    assert text.count("730") == 4


def _values_at(data: Any, key: str) -> Iterator[Any]:
    if isinstance(data, dict):
        for k, v in data.items():
            yield from [v] if k == key else _values_at(v, key)
    elif isinstance(data, list):
        for item in data:
            yield from _values_at(item, key)


def _without(data: Any, key: str) -> Any:
    if isinstance(data, dict):
        return {k: _without(v, key) for k, v in data.items() if k != key}
    if isinstance(data, list):
        return [_without(item, key) for item in data]
    return data


# --- JSON ---------------------------------------------------------------------------------


def test_json_report_round_trips(suite: SuiteResult) -> None:
    text = JsonWriter().render(suite)
    assert text.endswith("}\n")
    assert SuiteResult.from_dict(json.loads(text)) == suite


# --- JUnit --------------------------------------------------------------------------------


def test_junit_structure(suite: SuiteResult) -> None:
    text = JUnitWriter().render(suite)
    assert text.startswith('<?xml version="1.0" encoding="utf-8"?>\n')
    root = ET.fromstring(text)
    assert root.tag == "testsuite"
    assert root.attrib == {
        "name": "agentrig",
        "tests": "3",
        "failures": "1",
        "errors": "1",
        "skipped": "0",
        "time": "2.500",
    }
    cases = root.findall("testcase")
    assert [(c.get("classname"), c.get("name")) for c in cases] == [
        ("scenarios.weather", "weather-two-cities"),
        ("scenarios.budget.limits", "budget-exceeded"),
        ("scenarios.xss", "xss-probe"),
    ]
    assert cases[0].attrib == {
        "classname": "scenarios.weather",
        "name": "weather-two-cities",
        "file": "scenarios/weather.scenario.yaml",
        "line": "3",
        "time": "0.500",
    }
    assert list(cases[0]) == []
    assert "line" not in cases[2].attrib


def test_junit_failure_lists_every_failure(suite: SuiteResult) -> None:
    case = ET.fromstring(JUnitWriter().render(suite)).findall("testcase")[1]
    (failure,) = list(case)
    assert failure.tag == "failure"
    assert failure.get("message") == "stop reason differs | see\nturn 2"
    assert failure.get("type") == "expectation"
    text = failure.text or ""
    assert "1. [expectation] turn 2, step 2, at scenarios/budget/limits.scenario.yaml:17:" in text
    assert "2. [invariant] turn 2, step 2: budget exceeded" in text
    assert '   expected: {"max_steps": 2}\n   observed: {"steps": 3}' in text
    assert "invariant: budget_respected" in text


def test_junit_reports_a_crash_as_an_error(suite: SuiteResult) -> None:
    crashed = ET.fromstring(JUnitWriter().render(suite)).findall("testcase")[2]
    (error,) = list(crashed)
    assert error.tag == "error"
    assert error.get("type") == "error"
    assert (error.text or "").startswith("xss-probe (")
    # An error listed after a failed check is one more failure of that scenario.
    mixed = suite.scenarios[1].model_copy(
        update={"failures": (*suite.scenarios[1].failures, Failure(kind="error", message="x"))}
    )
    root = ET.fromstring(JUnitWriter().render(suite.model_copy(update={"scenarios": (mixed,)})))
    case = root.find("testcase")
    assert case is not None
    assert [element.tag for element in case] == ["failure"]
    assert (root.get("failures"), root.get("errors")) == ("1", "0")


def test_junit_survives_characters_xml_cannot_hold(suite: SuiteResult) -> None:
    scenario = suite.scenarios[2].model_copy(
        update={"failures": (Failure(kind="script", message="ansi \x1b[31mred\x00"),)}
    )
    result = suite.model_copy(update={"scenarios": (scenario,)})
    failure = ET.fromstring(JUnitWriter().render(result)).find("testcase/failure")
    assert failure is not None
    assert failure.get("message") == "ansi \\x1b[31mred\\x00"
    assert failure.get("type") == "script"


@pytest.mark.parametrize(
    ("file", "classname"),
    [
        ("scenarios/weather.scenario.yaml", "scenarios.weather"),
        ("./a/b/c.scenario.yml", "a.b.c"),
        ("top.scenario.yaml", "top"),
        ("odd.yaml", "odd.yaml"),
        ("/abs/path/x.scenario.yaml", "abs.path.x"),
        ("../up/./y.scenario.yaml", "up.y"),
        ("C:\\suite\\z.scenario.yaml", "C:.suite.z"),
    ],
)
def test_classname_for(file: str, classname: str) -> None:
    assert classname_for(file) == classname


# --- Markdown -----------------------------------------------------------------------------


def test_markdown_headline_and_table(suite: SuiteResult) -> None:
    text = MarkdownWriter().render(suite)
    assert text.startswith("## agentrig: ❌ 2 of 3 scenarios failed\n\n**1** passed, **2** failed")
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert len(rows) == 5
    cells = [_cells(row) for row in rows]
    assert {len(c) for c in cells} == {7}
    assert cells[0][:6] == [
        "Scenario",
        "Verdict",
        "Tags",
        "Turns",
        "Steps",
        "Agent's last turn (status / stop reason)",
    ]
    assert cells[2][:6] == [
        "weather-two-cities",
        "✅ PASS",
        "tools, buffer",
        "1",
        "3",
        "completed / end\\_turn",
    ]
    assert cells[3][:6] == [
        "budget-exceeded",
        "❌ FAIL",
        "budget",
        "2",
        "4",
        "stopped / max\\_steps",
    ]
    assert cells[4][2] == "security, pipe\\|tag"


def test_markdown_failures_section(suite: SuiteResult) -> None:
    text = MarkdownWriter().render(suite)
    failures = text.split("### Failures\n", 1)[1]
    assert "#### ❌ budget-exceeded (`scenarios/budget/limits.scenario.yaml:1`)" in failures
    assert (
        "1. **expectation** (at `scenarios/budget/limits.scenario.yaml:17`, turn 2, step 2, "
        "field `stop_reason`): stop reason differs \\| see<br>turn 2\n"
        '   - expected: `"end_turn"`\n'
        '   - observed: `"max_steps"`'
    ) in failures
    assert "weather-two-cities" not in failures
    assert "crashed: &lt;script&gt;alert(1)&lt;/script&gt;" in failures


def test_markdown_all_passed_has_no_failures_section(suite: SuiteResult) -> None:
    result = suite.model_copy(update={"scenarios": suite.scenarios[:1]})
    text = MarkdownWriter().render(result)
    assert text.startswith("## agentrig: ✅ all 1 scenarios passed")
    assert "Failures" not in text


def test_markdown_empty_suite() -> None:
    text = MarkdownWriter().render(SuiteResult(scenarios=(), wall_time_s=0.0))
    assert "_No scenarios ran._" in text


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("a|b", "a\\|b"),
        ("line1\nline2\r\nline3", "line1<br>line2<br>line3"),
        ("<b>&", "&lt;b&gt;&amp;"),
        ("*x* _y_ `z` [l](u) ~s~ \\", "\\*x\\* \\_y\\_ \\`z\\` \\[l\\](u) \\~s\\~ \\\\"),
    ],
)
def test_markdown_text_escaping(raw: str, escaped: str) -> None:
    assert markdown_text(raw) == escaped
    assert "\n" not in markdown_text(raw)


@pytest.mark.parametrize(
    ("raw", "code"),
    [("plain", "`plain`"), ("a`b", "``a`b``"), ("`x", "`` `x ``"), ("two\nlines", "`two lines`")],
)
def test_markdown_code_spans(raw: str, code: str) -> None:
    assert markdown_code(raw) == code


def _cells(row: str) -> list[str]:
    """Split a table row on unescaped pipes, as GitHub does."""
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]]


# --- HTML ---------------------------------------------------------------------------------


class _Elements(HTMLParser):
    """Every start tag with its attributes, and all text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(text: str) -> _Elements:
    parser = _Elements()
    parser.feed(text)
    parser.close()
    return parser


def test_html_scenario_elements(suite: SuiteResult) -> None:
    page = _parse(HtmlWriter().render(suite))
    scenarios = [a for tag, a in page.tags if tag == "details" and a.get("class") == "scenario"]
    assert [(a["id"], a["data-status"]) for a in scenarios] == [
        ("scenario-weather-two-cities", "passed"),
        ("scenario-budget-exceeded", "failed"),
        ("scenario-xss-probe", "failed"),
    ]
    assert [a.get("data-tags") for a in scenarios] == [
        "tools buffer",
        "budget",
        "security pipe|tag",
    ]
    assert ["open" in a for a in scenarios] == [False, True, True]


def test_html_escapes_everything(suite: SuiteResult, payloads: tuple[str, ...]) -> None:
    text = HtmlWriter().render(suite)
    page = _parse(text)
    assert [tag for tag, _ in page.tags].count("script") == 1
    assert "img" not in [tag for tag, _ in page.tags]
    assert not [name for _, attrs in page.tags for name in attrs if name.startswith("on")]
    assert text.count("<script") == 1
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    joined = "".join(page.text)
    assert all(payload in joined for payload in payloads)


def test_html_escapes_attribute_values(suite: SuiteResult) -> None:
    scenario = suite.scenarios[0].model_copy(
        update={"name": 'q"><script>alert(1)</script>', "tags": ("a\"'<>",)}
    )
    result = suite.model_copy(update={"scenarios": (scenario,)})
    page = _parse(HtmlWriter().render(result))
    (details,) = [a for tag, a in page.tags if tag == "details" and a.get("class") == "scenario"]
    assert details["id"] == 'scenario-q"><script>alert(1)</script>'
    assert details["data-tags"] == "a\"'<>"
    assert [tag for tag, _ in page.tags].count("script") == 1


def test_html_is_self_contained(suite: SuiteResult) -> None:
    text = HtmlWriter().render(suite)
    page = _parse(text)
    assert not [a for _, attrs in page.tags for a in attrs if a in ("src", "action")]
    links = [attrs["href"] for tag, attrs in page.tags if "href" in attrs]
    assert links, "the failure summary links each failed scenario's card"
    assert all(link.startswith("#scenario-") for link in links)
    assert "http:" not in text
    assert "https:" not in text
    assert "@import" not in text
    assert "url(" not in text
    assert "default-src 'none'" in text


def test_html_shows_transcript_invariants_and_failures(suite: SuiteResult) -> None:
    text = HtmlWriter().render(suite)
    page = _parse(text)
    kinds = [
        attrs.get("data-kind") for tag, attrs in page.tags if tag == "li" and "data-kind" in attrs
    ]
    assert kinds[:7] == [
        "system",
        "user",
        "tool_call",
        "tool_result",
        "tool_result",
        "assistant",
        "stop",
    ]
    assert '<li class="entry kind-tool_result is-error" data-kind="tool_result">' in text
    call = "get_weather(city=&quot;Paris&quot;, units=&quot;C&quot;)"
    assert text.count(call) == 1  # one rendering of the call, not its arguments twice
    assert text.count("&quot;Paris&quot;") == 1
    assert "<td>budget_respected</td><td>5</td><td>1</td>" in text
    assert '<pre class="expected">&quot;end_turn&quot;</pre>' in text
    assert '<pre class="observed">&quot;max_steps&quot;</pre>' in text
    assert "File: <code>scenarios/budget/limits.scenario.yaml:1</code>" in text


def test_html_orders_args_keys(suite: SuiteResult) -> None:
    entry = TranscriptEntry(
        turn=1, step=1, kind="tool_call", role=None, text="", name="f", args={"b": 1, "a": 2}
    )
    scenario = suite.scenarios[0].model_copy(update={"transcript": (entry,)})
    text = HtmlWriter().render(suite.model_copy(update={"scenarios": (scenario,)}))
    assert "f(a=2, b=1)" in text


class _CustomWriter(ReportWriter):
    """Only here to show that a subclass without ``render`` cannot be built."""

    name: ClassVar[str] = "custom"
    filename: ClassVar[str] = "custom.txt"


def test_writer_role_is_abstract() -> None:
    with pytest.raises(TypeError, match="abstract"):
        _CustomWriter()  # type: ignore[abstract]


def test_markdown_cuts_long_values_and_json_keeps_them(suite: SuiteResult) -> None:
    long = {"text": "y" * 50_000}
    scenario = suite.scenarios[1].model_copy(
        update={"failures": (Failure(kind="expectation", message="m", observed=long),)}
    )
    result = suite.model_copy(update={"scenarios": (scenario,)})
    markdown = MarkdownWriter().render(result)
    assert "more characters)" in markdown
    assert len(markdown) < 10_000
    restored = SuiteResult.from_dict(json.loads(JsonWriter().render(result)))
    assert restored.scenarios[0].failures[0].observed == long


def test_html_opens_on_a_failure_summary_linked_to_each_failed_card(suite: SuiteResult) -> None:
    text = HtmlWriter().render(suite)
    summary = text[text.index('<nav class="failure-summary"') : text.index("</nav>")]
    assert text.index("</nav>") < text.index('<details class="scenario"')
    assert '<a href="#scenario-budget-exceeded">budget-exceeded</a>' in summary
    assert "and 1 more" in summary  # budget-exceeded has two failures
    assert "[expectation] stop reason differs | see\nturn 2 (turn 2, step 2, at " in summary
    assert '<a href="#scenario-xss-probe">' in summary
    assert "weather-two-cities" not in summary


def test_html_has_no_failure_summary_when_everything_passed(suite: SuiteResult) -> None:
    passed = suite.model_copy(update={"scenarios": suite.scenarios[:1]})
    assert "failure-summary" not in HtmlWriter().render(passed).split("<style>")[0]
    assert "<nav" not in HtmlWriter().render(passed)


def test_html_card_shows_the_failure_first_and_folds_passing_invariants(
    suite: SuiteResult,
) -> None:
    text = HtmlWriter().render(suite)
    card = text[text.index('id="scenario-budget-exceeded"') : text.index('id="scenario-xss-probe"')]
    assert card.index("Why it failed") < card.index("<h3>Turns</h3>")
    assert "<h3>Failed invariants</h3>" in card
    weather = text[text.index('id="scenario-weather-two-cities"') : text.index(card[:40])]
    assert '<details class="invariants"><summary>1 invariant passed (4 checks)</summary>' in weather
    assert weather.index("<h3>Transcript</h3>") < weather.index('<details class="invariants">')


def test_html_usage_is_compact_and_a_failed_status_says_why(suite: SuiteResult) -> None:
    text = HtmlWriter().render(suite)
    assert "tokens: 40 in, 8 out" in text
    assert "cost 0.00012" in text
    assert "cache_read_tokens=" not in text
    recovered = suite.scenarios[0].model_copy(
        update={"turns": (suite.scenarios[0].turns[0].model_copy(update={"status": "failed"}),)}
    )
    page = HtmlWriter().render(suite.model_copy(update={"scenarios": (recovered,)}))
    assert 'agent status: <span class="bad">failed (1 tool error)</span>' in page
    # the verdict and the agent's end state are labelled apart in the card's summary
    assert '<span class="badge" title="verdict">PASS</span>' in page
    assert '<span class="muted">agent status: failed (1 tool error)</span>' in page


@pytest.mark.parametrize(
    ("usage", "text"),
    [
        ({}, "no tokens"),
        ({"input_tokens": 0, "output_tokens": 0, "total": 0}, "no tokens"),
        (
            {"input_tokens": 1200, "output_tokens": 28, "cache_read_tokens": 5, "total": 1233},
            "tokens: 1,200 in, 28 out, 5 cache read",
        ),
    ],
)
def test_format_usage(usage: dict[str, int], text: str) -> None:
    assert format_usage(usage) == text


def test_markdown_says_why_a_status_is_failed(suite: SuiteResult) -> None:
    """The status rule stays (a recorded tool error fails the run); the report says which."""
    weather = suite.scenarios[0]
    recovered = weather.model_copy(
        update={"turns": (weather.turns[0].model_copy(update={"status": "failed"}),)}
    )
    text = MarkdownWriter().render(suite.model_copy(update={"scenarios": (recovered,)}))
    assert "| ✅ PASS |" in text
    assert "| failed (1 tool error) / end\\_turn |" in text


def test_a_lone_surrogate_in_a_result_is_written_as_its_escape(tmp_path: Path) -> None:
    # Text a run produced (a Python tool's output) may hold what UTF-8 cannot encode.
    odd = ScenarioResult(
        name="surrogate",
        file="s.scenario.yaml",
        line=None,
        tags=("a\ud800",),
        description="bad \ud800 text",
        passed=False,
        turns=(),
        transcript=(TranscriptEntry(turn=1, step=None, kind="user", role="user", text="\udcff"),),
        invariants=(),
        wall_time_s=0.1,
        failures=(Failure(kind="error", message="saw \ud800", observed="\ud800"),),
    )
    written = write_reports(SuiteResult(scenarios=(odd,), wall_time_s=0.1), tmp_path)
    assert len(written) == len(writer_names())
    for path in written:  # each as an escape of its own kind: \ud800, or \xd800 in XML
        assert re.search(r"\\[ux]d800", path.read_text(encoding="utf-8")), path.name
